/**
 * The defaults both consumer constructs (`IdempotentConsumer`, `IdempotentStreamConsumer`) share,
 * and the Lambda limits they plan with, in one place: the props' TSDoc `@default`s name these
 * values. Each transport's own defaults stay in its folder (`defaults.ts`).
 */
import { Duration } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';

/** `timeout` when not set. */
export const DEFAULT_TIMEOUT = Duration.seconds(30);

/** `memorySize` when not set, MiB. */
export const DEFAULT_MEMORY_SIZE = 256;

/** `architecture` when not set. */
export const DEFAULT_ARCHITECTURE = lambda.Architecture.ARM_64;

/** `producerRetryHorizon` when not set. */
export const DEFAULT_PRODUCER_RETRY_HORIZON = Duration.hours(1);

/** Lambda's longest timeout: assumed when a given function's timeout is unknown. */
export const LAMBDA_MAX_TIMEOUT = Duration.minutes(15);

/**
 * The largest message the dead-letter queue a consumer construct creates accepts, in bytes, set
 * explicitly (`MaximumMessageSize`) and passed to the function (`EO_DEAD_LETTER_MAX_MESSAGE_BYTES`)
 * so the runtime can fit what it sends. It is SQS's largest: "Valid values: An integer from 1,024
 * bytes (1 KiB) to 1,048,576 bytes (1 MiB). Default: 1,048,576 bytes (1 MiB)" (SQS API Reference,
 * CreateQueue, `MaximumMessageSize`). Set explicitly, since the default was 262,144 bytes
 * (256 KiB) before SQS raised its limit, and older tools and documents still say so.
 */
export const DEAD_LETTER_MAX_MESSAGE_BYTES = 1_048_576;

/** The prefix of every synth-time warning id (`effectively-once:leaseOutlivesRedelivery`, ...). */
export const WARNING_PREFIX = 'effectively-once';
