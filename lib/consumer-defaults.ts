/**
 * The defaults both consumer constructs (`IdempotentConsumer`, `IdempotentStreamConsumer`) share,
 * and the Lambda limits they plan with, in one place: the props' TSDoc `@default`s name these
 * values. Each transport's own defaults stay in its folder (`defaults.ts`).
 */
import { Duration } from 'aws-cdk-lib';

/** `timeout` when not set. */
export const DEFAULT_TIMEOUT = Duration.seconds(30);

/** `memorySize` when not set, MiB. */
export const DEFAULT_MEMORY_SIZE = 256;

/** `producerRetryHorizon` when not set. */
export const DEFAULT_PRODUCER_RETRY_HORIZON = Duration.hours(1);

/** Lambda's longest timeout: assumed when a given function's timeout is unknown. */
export const LAMBDA_MAX_TIMEOUT = Duration.minutes(15);

/** The prefix of every synth-time warning id (`effectively-once:leaseOutlivesRedelivery`, ...). */
export const WARNING_PREFIX = 'effectively-once';
