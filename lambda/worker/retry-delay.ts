/**
 * How long a message reported for retry stays hidden before it comes back: the visibility
 * timeout the worker sets on it with `ChangeMessageVisibility`. Transport-free.
 */
import { invalidOption } from '../core/errors';
import type { SqsRecord } from '../sqs/sqs-event';

/** Seconds a message to retry stays hidden, chosen per message (for example from its receive count). */
export type RetryDelay = (record: SqsRecord) => number;

/** SQS's largest visibility timeout: 12 hours. */
export const MAX_VISIBILITY_TIMEOUT_SECONDS = 43_200;

/** Upper bound of {@link defaultRetryDelay}: 5 minutes. */
export const DEFAULT_MAX_RETRY_DELAY_SECONDS = 300;

/** The receive count of a record (`ApproximateReceiveCount`), at least 1. */
export function receiveCountOf(record: SqsRecord): number {
  const count = Number.parseInt(record.attributes?.ApproximateReceiveCount ?? '', 10);
  return Number.isSafeInteger(count) && count > 0 ? count : 1;
}

/**
 * The default retry delay: exponential in the receive count, 1, 2, 4, ... seconds, at most
 * {@link DEFAULT_MAX_RETRY_DELAY_SECONDS}. Throttling and in-flight duplicates get room to clear
 * while a first failure comes back at once.
 *
 * @example
 * defaultRetryDelay(recordReceivedTwice); // 2
 */
export const defaultRetryDelay: RetryDelay = (record) =>
  Math.min(2 ** (receiveCountOf(record) - 1), DEFAULT_MAX_RETRY_DELAY_SECONDS);

/**
 * Validates the `retryDelaySeconds` option and returns the delay function; a number is a fixed
 * delay (`0`: back at once). Throws `INVALID_OPTIONS` for anything else.
 */
export function resolveRetryDelay(value: number | RetryDelay | undefined): RetryDelay {
  if (value === undefined) return defaultRetryDelay;
  if (typeof value === 'function') return value;
  if (Number.isSafeInteger(value) && value >= 0 && value <= MAX_VISIBILITY_TIMEOUT_SECONDS) {
    return () => value;
  }
  return invalidOption(
    'retryDelaySeconds',
    `an integer from 0 to ${MAX_VISIBILITY_TIMEOUT_SECONDS} or a function`,
    value,
  );
}

/** A delay as SQS accepts it: an integer from 0 to 43200; anything unusable becomes 0. */
export function clampVisibilityTimeout(seconds: number): number {
  if (!Number.isFinite(seconds) || seconds <= 0) return 0;
  return Math.min(Math.ceil(seconds), MAX_VISIBILITY_TIMEOUT_SECONDS);
}
