/**
 * The SQS consumer's own defaults and the AWS limits it plans with, in one place: the props'
 * TSDoc `@default`s name these values, and validation, timing and construction read them from
 * here. The defaults both consumer constructs share are in `../consumer-defaults.ts`.
 */
import { Duration } from 'aws-cdk-lib';

/** `maxReceiveCount` when not set. */
export const DEFAULT_MAX_RECEIVE_COUNT = 5;

/** Fewer receives than this draws the `lowMaxReceiveCount` warning. */
export const MIN_RECOMMENDED_MAX_RECEIVE_COUNT = 3;

/** `batchSize` when not set. */
export const DEFAULT_BATCH_SIZE = 10;

/** `deadLetterRetentionPeriod` when not set. */
export const DEFAULT_DEAD_LETTER_RETENTION = Duration.days(14);

/** `ageOfOldestMessageThreshold` when not set. */
export const DEFAULT_AGE_THRESHOLD = Duration.minutes(15);

/** `duplicateRateThreshold` when not set. */
export const DEFAULT_DUPLICATE_RATE_THRESHOLD = 0.25;

/** Lambda's timeout for a function created without one. */
export const LAMBDA_DEFAULT_TIMEOUT = Duration.seconds(3);

/** AWS's guidance for Lambda event sources: visibility timeout >= 6 × function timeout (+ batching window). */
export const VISIBILITY_FACTOR = 6;

/**
 * Provisioned pollers of an SQS event source: AWS's ranges and defaults. "For Amazon SQS:
 * Minimum value of 2. Maximum value of 200. Default: 2." (`MinimumPollers`) and "For Amazon SQS:
 * Minimum value of 2. Maximum value of 2000. Default: 200." (`MaximumPollers`)
 * (`lambda.ProvisionedPollerConfig`, after the Lambda API Reference's `ProvisionedPollerConfig`).
 */
export const SQS_POLLERS = Object.freeze({
  minimum: { low: 2, high: 200, default: 2 },
  maximum: { low: 2, high: 2000, default: 200 },
});
