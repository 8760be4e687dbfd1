/**
 * The durations an `IdempotentConsumer` derives from its props before it creates anything: the
 * function timeout, the redelivery window and record TTL, the two-phase lease, and what the
 * queue's visibility timeout and redrive policy are known to be. Pure over the props, so the
 * validation can check the rules between them (lease < record TTL, visibility >= 6 × timeout)
 * together with every other prop.
 */
import { Duration } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { DEFAULT_PRODUCER_RETRY_HORIZON, DEFAULT_TIMEOUT, LAMBDA_MAX_TIMEOUT } from '../consumer-defaults';
import {
  DEFAULT_REDRIVE_ALLOWANCE,
  deriveRedeliveryWindow,
  knownMaxReceiveCount,
  knownQueueRetention,
  knownVisibilityTimeout,
  type RedeliveryWindow,
  SQS_DEFAULT_RETENTION,
  SQS_MAX_RETENTION,
} from '../record-ttl';
import {
  DEFAULT_DEAD_LETTER_RETENTION,
  DEFAULT_MAX_RECEIVE_COUNT,
  LAMBDA_DEFAULT_TIMEOUT,
  VISIBILITY_FACTOR,
} from './defaults';
import type { IdempotentConsumerProps } from './props';

/** What the construct plans with; a duration that cannot be known at synth time is `undefined`. */
export interface ConsumerTiming {
  /** The function timeout: `timeout`, or the given `handler`'s when it is a `lambda.Function` of this app. */
  readonly functionTimeout?: Duration;
  /** The redelivery window and the default record TTL derived from it. */
  readonly redelivery: RedeliveryWindow;
  /** `recordTtl`, or the derived default. */
  readonly recordTtl: Duration;
  /** `lease`, or the function timeout (15 minutes when that is unknown). */
  readonly lease: Duration;
  /**
   * The visibility timeout of the queue: the created queue's (`visibilityTimeout`, or
   * 6 × timeout + batching window), or the given `queue`'s when it is defined in this app.
   */
  readonly visibilityTimeout?: Duration;
  /** Receives before the dead-letter queue: `maxReceiveCount` (default 5), or the given `queue`'s redrive policy's. */
  readonly maxReceiveCount?: number;
}

/** The durations the construct derives from `props` (see {@link ConsumerTiming}). */
export function resolveTiming(props: IdempotentConsumerProps): ConsumerTiming {
  const functionTimeout = props.handler ? timeoutOf(props.handler) : (props.timeout ?? DEFAULT_TIMEOUT);
  const redelivery = deriveRedeliveryWindow({
    queueRetention: queueRetention(props),
    deadLetterQueueRetention: deadLetterQueueRetention(props),
    redriveAllowance: props.redriveAllowance ?? DEFAULT_REDRIVE_ALLOWANCE,
    producerRetryHorizon: props.producerRetryHorizon ?? DEFAULT_PRODUCER_RETRY_HORIZON,
  });
  return {
    functionTimeout,
    redelivery,
    recordTtl: props.recordTtl ?? redelivery.defaultRecordTtl,
    lease: props.lease ?? functionTimeout ?? LAMBDA_MAX_TIMEOUT,
    visibilityTimeout: props.queue
      ? knownVisibilityTimeout(props.queue)
      : (props.visibilityTimeout ?? requiredVisibility(functionTimeout, props.maxBatchingWindow)),
    maxReceiveCount: props.queue
      ? knownMaxReceiveCount(props.queue)
      : (props.maxReceiveCount ?? DEFAULT_MAX_RECEIVE_COUNT),
  };
}

/**
 * The dead-letter queue of a given `queue` as far as this app knows it: `deadLetterQueue`, else
 * the queue's own when it is a `sqs.Queue` of this app with a redrive policy.
 */
export function knownDeadLetterQueue(props: IdempotentConsumerProps): sqs.IQueue | undefined {
  return props.deadLetterQueue ?? ownDeadLetterQueue(props.queue);
}

/** The dead-letter queue of the redrive policy of `queue`, when it is a `sqs.Queue` of this app. */
export function ownDeadLetterQueue(queue: sqs.IQueue | undefined): sqs.IQueue | undefined {
  return queue instanceof sqs.Queue ? queue.deadLetterQueue?.queue : undefined;
}

/** `VISIBILITY_FACTOR × timeout + maxBatchingWindow`, the least visibility timeout allowed. */
export function requiredVisibility(
  timeout: Duration | undefined,
  maxBatchingWindow: Duration | undefined,
): Duration {
  const base = timeout ?? LAMBDA_MAX_TIMEOUT;
  const seconds = base.toSeconds() * VISIBILITY_FACTOR + (maxBatchingWindow?.toSeconds() ?? 0);
  return Duration.seconds(seconds);
}

/** The timeout of a given function when it is known at synth time. */
function timeoutOf(handler: lambda.IFunction): Duration | undefined {
  if (!(handler instanceof lambda.Function)) return undefined;
  return handler.timeout ?? LAMBDA_DEFAULT_TIMEOUT;
}

/** How long the source queue keeps a message, the SQS maximum when that is unknown. */
function queueRetention(props: IdempotentConsumerProps): Duration {
  const retention = props.queue
    ? knownQueueRetention(props.queue)
    : (props.retentionPeriod ?? SQS_DEFAULT_RETENTION);
  return retention === undefined ? SQS_MAX_RETENTION : concreteOr(retention, SQS_MAX_RETENTION);
}

/**
 * How long the dead-letter queue keeps a message, the SQS maximum when that is unknown;
 * `undefined` only when the queue is known to have no dead-letter queue. An imported queue's
 * redrive policy cannot be read at synth time, so it is assumed to have a DLQ.
 */
function deadLetterQueueRetention(props: IdempotentConsumerProps): Duration | undefined {
  if (!props.queue && !props.deadLetterQueue) {
    // The construct creates the dead-letter queue with this retention (in whole seconds, as
    // the queue's template holds it).
    const retention = props.deadLetterRetentionPeriod ?? DEFAULT_DEAD_LETTER_RETENTION;
    return retention.isUnresolved() ? SQS_MAX_RETENTION : Duration.seconds(retention.toSeconds());
  }
  const deadLetterQueue = props.queue ? knownDeadLetterQueue(props) : props.deadLetterQueue;
  if (!deadLetterQueue) {
    const knownWithoutDeadLetterQueue = props.queue instanceof sqs.Queue;
    return knownWithoutDeadLetterQueue ? undefined : SQS_MAX_RETENTION;
  }
  return concreteOr(knownQueueRetention(deadLetterQueue) ?? SQS_MAX_RETENTION, SQS_MAX_RETENTION);
}

function concreteOr(duration: Duration, fallback: Duration): Duration {
  return duration.isUnresolved() ? fallback : duration;
}
