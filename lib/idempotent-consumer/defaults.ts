/**
 * The construct's defaults and the AWS limits it plans with, in one place: the props' TSDoc
 * `@default`s name these values, and validation, timing and construction read them from here.
 */
import { Duration } from 'aws-cdk-lib';

/** `timeout` when not set. */
export const DEFAULT_TIMEOUT = Duration.seconds(30);

/** `memorySize` when not set, MiB. */
export const DEFAULT_MEMORY_SIZE = 256;

/** `maxReceiveCount` when not set. */
export const DEFAULT_MAX_RECEIVE_COUNT = 5;

/** Fewer receives than this draws the `lowMaxReceiveCount` warning. */
export const MIN_RECOMMENDED_MAX_RECEIVE_COUNT = 3;

/** `batchSize` when not set. */
export const DEFAULT_BATCH_SIZE = 10;

/** `deadLetterRetentionPeriod` when not set. */
export const DEFAULT_DEAD_LETTER_RETENTION = Duration.days(14);

/** `producerRetryHorizon` when not set. */
export const DEFAULT_PRODUCER_RETRY_HORIZON = Duration.hours(1);

/** `ageOfOldestMessageThreshold` when not set. */
export const DEFAULT_AGE_THRESHOLD = Duration.minutes(15);

/** `duplicateRateThreshold` when not set. */
export const DEFAULT_DUPLICATE_RATE_THRESHOLD = 0.25;

/** Lambda's timeout for a function created without one. */
export const LAMBDA_DEFAULT_TIMEOUT = Duration.seconds(3);

/** Lambda's longest timeout: assumed when a given function's timeout is unknown. */
export const LAMBDA_MAX_TIMEOUT = Duration.minutes(15);

/** AWS's guidance for Lambda event sources: visibility timeout >= 6 × function timeout (+ batching window). */
export const VISIBILITY_FACTOR = 6;

/** The prefix of every synth-time warning id (`effectively-once:leaseOutlivesRedelivery`, ...). */
export const WARNING_PREFIX = 'effectively-once';
