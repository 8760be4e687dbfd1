import { Duration, Token } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';

/** SQS keeps a message at most 14 days: the retention assumed when a queue's retention is unknown. */
export const SQS_MAX_RETENTION = Duration.days(14);

/** SQS keeps a message 4 days when `MessageRetentionPeriod` is not set. */
export const SQS_DEFAULT_RETENTION = Duration.days(4);

/** SQS hides a received message 30 seconds when `VisibilityTimeout` is not set. */
export const SQS_DEFAULT_VISIBILITY_TIMEOUT = Duration.seconds(30);

/** How many producer retry horizons the default record TTL covers. */
export const PRODUCER_RETRY_FACTOR = 3;

/** Added on top of the redelivery window so a message redriven on its last day still finds its record. */
export const RECORD_TTL_MARGIN = Duration.days(1);

/** What the redelivery window is made of; every duration is concrete (no tokens). */
export interface RedeliveryWindowInputs {
  /** How long the source queue keeps a message. */
  readonly queueRetention: Duration;
  /** How long the dead-letter queue keeps a message; `undefined` when the consumer has no known DLQ. */
  readonly deadLetterQueueRetention?: Duration;
  /** How long a producer keeps resending the same message. */
  readonly producerRetryHorizon: Duration;
}

/** The longest time after a first delivery at which the same message can still arrive again. */
export interface RedeliveryWindow {
  /** `max(queueRetention, deadLetterQueueRetention, 3 × producerRetryHorizon)`. */
  readonly window: Duration;
  /** `window + RECORD_TTL_MARGIN`: the default record TTL. */
  readonly defaultRecordTtl: Duration;
  /** One line naming each term, for warnings and docs. */
  readonly explanation: string;
}

/**
 * Derives the redelivery window and the default record TTL from the queue settings.
 *
 * A duplicate can arrive as long as a copy of the message still exists somewhere: in the
 * source queue (its retention), in the dead-letter queue waiting for an operator to redrive
 * it (the DLQ retention), or in a producer that keeps resending (its retry horizon, tripled
 * because producers back off and restart). The record must outlive all of them, so the
 * default TTL is the longest of the three plus a one-day margin.
 */
export function deriveRedeliveryWindow(inputs: RedeliveryWindowInputs): RedeliveryWindow {
  const producerSeconds = inputs.producerRetryHorizon.toSeconds() * PRODUCER_RETRY_FACTOR;
  const windowSeconds = Math.max(
    inputs.queueRetention.toSeconds(),
    inputs.deadLetterQueueRetention?.toSeconds() ?? 0,
    producerSeconds,
  );
  const window = Duration.seconds(windowSeconds);
  const terms = [
    `queue retention ${inputs.queueRetention.toHumanString()}`,
    inputs.deadLetterQueueRetention
      ? `dead-letter queue retention ${inputs.deadLetterQueueRetention.toHumanString()}`
      : undefined,
    `${PRODUCER_RETRY_FACTOR} × producerRetryHorizon ${Duration.seconds(producerSeconds).toHumanString()}`,
  ].filter((term): term is string => term !== undefined);
  return {
    window,
    defaultRecordTtl: Duration.seconds(windowSeconds + RECORD_TTL_MARGIN.toSeconds()),
    explanation: `the longest of ${terms.join(', ')}`,
  };
}

/**
 * The retention of a queue when the app defines it, `undefined` when it cannot be known at
 * synth time (an imported queue, or a token).
 */
export function knownQueueRetention(queue: sqs.IQueue): Duration | undefined {
  const resource = queue.node.defaultChild;
  if (!(resource instanceof sqs.CfnQueue)) return undefined;
  const seconds = resource.messageRetentionPeriod;
  if (seconds === undefined) return SQS_DEFAULT_RETENTION;
  return Token.isUnresolved(seconds) ? undefined : Duration.seconds(seconds);
}

/**
 * The visibility timeout of a queue when the app defines it, `undefined` when it cannot be
 * known at synth time (an imported queue, or a token).
 */
export function knownVisibilityTimeout(queue: sqs.IQueue): Duration | undefined {
  const resource = queue.node.defaultChild;
  if (!(resource instanceof sqs.CfnQueue)) return undefined;
  const seconds = resource.visibilityTimeout;
  if (seconds === undefined) return SQS_DEFAULT_VISIBILITY_TIMEOUT;
  return Token.isUnresolved(seconds) ? undefined : Duration.seconds(seconds);
}
