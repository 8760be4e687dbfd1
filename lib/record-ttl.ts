import { Duration, Token } from 'aws-cdk-lib';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import * as sqs from 'aws-cdk-lib/aws-sqs';

/** SQS keeps a message at most 14 days: the retention assumed when a queue's retention is unknown. */
export const SQS_MAX_RETENTION = Duration.days(14);

/** SQS keeps a message 4 days when `MessageRetentionPeriod` is not set. */
export const SQS_DEFAULT_RETENTION = Duration.days(4);

/** SQS hides a received message 30 seconds when `VisibilityTimeout` is not set. */
export const SQS_DEFAULT_VISIBILITY_TIMEOUT = Duration.seconds(30);

/** How many producer retry horizons the default record TTL covers. */
export const PRODUCER_RETRY_FACTOR = 3;

/** Added on top of the redelivery window so a message that arrives at the very end of its path still finds its record. */
export const RECORD_TTL_MARGIN = Duration.days(1);

/**
 * How long a message can still arrive after it leaves the dead-letter queue, when
 * `redriveAllowance` is not set: a redrive creates a new message in the queue it moves to, and
 * SQS keeps that one up to 14 days, its maximum retention.
 */
export const DEFAULT_REDRIVE_ALLOWANCE = SQS_MAX_RETENTION;

/** What the redelivery window is made of; every duration given is concrete (no tokens). */
export interface RedeliveryWindowInputs {
  /** How long the source queue keeps a message. */
  readonly queueRetention: Duration;
  /**
   * How long the dead-letter queue keeps a message; `undefined` when the queue has no
   * dead-letter queue (then nothing is redriven either).
   */
  readonly deadLetterQueueRetention?: Duration;
  /**
   * How long a message can still arrive after it leaves the dead-letter queue (a redrive makes
   * it a new message, kept again for the retention of the queue it moves to). Only counted with
   * a dead-letter queue.
   *
   * @default DEFAULT_REDRIVE_ALLOWANCE (14 days)
   */
  readonly redriveAllowance?: Duration;
  /** How long a producer keeps resending the same message. */
  readonly producerRetryHorizon: Duration;
}

/** The longest time after a first delivery at which the same message can still arrive again. */
export interface RedeliveryWindow {
  /**
   * `max(queueRetention + deadLetterQueueRetention + redriveAllowance, 3 × producerRetryHorizon)`,
   * or `max(queueRetention, 3 × producerRetryHorizon)` without a dead-letter queue.
   */
  readonly window: Duration;
  /** `window + RECORD_TTL_MARGIN`: the default record TTL. */
  readonly defaultRecordTtl: Duration;
  /** One line naming each term, for warnings and docs. */
  readonly explanation: string;
}

/**
 * Derives the redelivery window and the default record TTL from the queue settings.
 *
 * A duplicate can arrive as long as a copy of the message still exists somewhere. The longest
 * path a copy takes runs through the dead-letter queue: it waits in the source queue up to the
 * queue retention, then in the dead-letter queue up to the DLQ retention (a FIFO queue resets
 * the enqueue time on the move, so the two add up; a standard queue keeps the first enqueue
 * time, and the sum is then an upper bound), then an operator redrives it, which creates a new
 * message that can arrive up to the redrive allowance later. A producer that keeps resending
 * makes another path (its retry horizon, tripled because producers back off and restart). The
 * record must outlive the longer of the two, so the default TTL is that plus a one-day margin.
 */
export function deriveRedeliveryWindow(inputs: RedeliveryWindowInputs): RedeliveryWindow {
  const producerSeconds = inputs.producerRetryHorizon.toSeconds() * PRODUCER_RETRY_FACTOR;
  const deadLetter = inputs.deadLetterQueueRetention;
  const redriveAllowance = inputs.redriveAllowance ?? DEFAULT_REDRIVE_ALLOWANCE;
  const pathSeconds =
    inputs.queueRetention.toSeconds() +
    (deadLetter ? deadLetter.toSeconds() + redriveAllowance.toSeconds() : 0);
  const windowSeconds = Math.max(pathSeconds, producerSeconds);
  const pathTerms = [
    `queue retention ${inputs.queueRetention.toHumanString()}`,
    ...(deadLetter
      ? [
          `dead-letter queue retention ${deadLetter.toHumanString()}`,
          `redriveAllowance ${redriveAllowance.toHumanString()}`,
        ]
      : []),
  ];
  const path =
    pathTerms.length > 1
      ? `${pathTerms.join(' + ')} = ${Duration.seconds(pathSeconds).toHumanString()}`
      : pathTerms[0];
  return {
    window: Duration.seconds(windowSeconds),
    defaultRecordTtl: Duration.seconds(windowSeconds + RECORD_TTL_MARGIN.toSeconds()),
    explanation: `the longer of ${path} and ${PRODUCER_RETRY_FACTOR} × producerRetryHorizon ${Duration.seconds(producerSeconds).toHumanString()}`,
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

/**
 * How many receives the redrive policy of a queue allows before the dead-letter queue, when the
 * app defines the queue with one; `undefined` when it cannot be known at synth time (an imported
 * queue, no redrive policy, or a token).
 */
export function knownMaxReceiveCount(queue: sqs.IQueue): number | undefined {
  if (!(queue instanceof sqs.Queue)) return undefined;
  const count = queue.deadLetterQueue?.maxReceiveCount;
  return count === undefined || Token.isUnresolved(count) ? undefined : count;
}

// Streams: Kinesis Data Streams and DynamoDB Streams keep every record for the stream's
// retention, and the event source mapping re-reads from a checkpoint, so the replay window is
// bounded by how long a record stays readable, not by queue and dead-letter retentions.

/** Kinesis Data Streams keeps a record 24 hours when the stream's retention is not raised. */
export const KINESIS_DEFAULT_RETENTION = Duration.hours(24);

/** The longest retention of a Kinesis data stream: assumed when a stream's retention is unknown. */
export const KINESIS_MAX_RETENTION = Duration.days(365);

/** DynamoDB Streams keeps a stream record 24 hours, always. */
export const DYNAMODB_STREAMS_RETENTION = Duration.hours(24);

/** The oldest record a stream event source mapping can be told to deliver (`MaximumRecordAgeInSeconds` 604,800). */
export const STREAM_MAX_RECORD_AGE_LIMIT = Duration.days(7);

/** What the replay window of a stream consumer is made of; every duration is concrete (no tokens). */
export interface StreamReplayWindowInputs {
  /** How long the stream keeps a record. */
  readonly streamRetention: Duration;
  /** The oldest record the event source delivers (`MaximumRecordAgeInSeconds`). */
  readonly maxRecordAge: Duration;
  /**
   * How long after the event source gives up on a record (it aged past `maxRecordAge`, or its
   * retries ran out and its batch went to the on-failure destination) the record can still be
   * replayed: an operator re-reading the range the on-failure record names, or a replay from an
   * archive.
   *
   * @default - until the record leaves the stream: `streamRetention` - min(`streamRetention`, `maxRecordAge`)
   */
  readonly replayAllowance?: Duration;
  /** How long a producer keeps writing the same record again (a retried `PutRecords`). */
  readonly producerRetryHorizon: Duration;
}

/**
 * Derives the replay window of a stream consumer and the default record TTL from the stream
 * and event source settings.
 *
 * The event source delivers a record (first, on a retry from its checkpoint, after a bisect,
 * from a restarted shard iterator) for at most min(stream retention, `maxRecordAge`) after it
 * was written. After that, a copy can still arrive in two ways: an operator replays it (up to
 * `replayAllowance` later; by default until it leaves the stream, so re-reading the range an
 * on-failure record names finds every processed record as a duplicate), or a producer's
 * retry writes the same data as a new record (up to 3 × `producerRetryHorizon` later, as for
 * queues). The record must outlive the delivery and the longer of the two, so the default TTL
 * is that plus a one-day margin.
 */
export function deriveStreamReplayWindow(inputs: StreamReplayWindowInputs): RedeliveryWindow {
  const retentionSeconds = inputs.streamRetention.toSeconds();
  const deliverySeconds = Math.min(retentionSeconds, inputs.maxRecordAge.toSeconds());
  const replaySeconds = inputs.replayAllowance?.toSeconds() ?? retentionSeconds - deliverySeconds;
  const producerSeconds = inputs.producerRetryHorizon.toSeconds() * PRODUCER_RETRY_FACTOR;
  const windowSeconds = deliverySeconds + Math.max(replaySeconds, producerSeconds);
  const human = (seconds: number) => Duration.seconds(seconds).toHumanString();
  const replay = inputs.replayAllowance
    ? `replayAllowance ${human(replaySeconds)}`
    : `replayAllowance (until the record leaves the stream) ${human(replaySeconds)}`;
  return {
    window: Duration.seconds(windowSeconds),
    defaultRecordTtl: Duration.seconds(windowSeconds + RECORD_TTL_MARGIN.toSeconds()),
    explanation: `min(stream retention ${inputs.streamRetention.toHumanString()}, maxRecordAge ${inputs.maxRecordAge.toHumanString()}) = ${human(deliverySeconds)}, plus the longer of ${replay} and ${PRODUCER_RETRY_FACTOR} × producerRetryHorizon ${human(producerSeconds)}`,
  };
}

/**
 * The retention of a Kinesis stream when the app defines it, `undefined` when it cannot be
 * known at synth time (an imported stream, or a token).
 */
export function knownKinesisRetention(stream: kinesis.IStream): Duration | undefined {
  const resource = stream.node.defaultChild;
  if (!(resource instanceof kinesis.CfnStream)) return undefined;
  const hours = resource.retentionPeriodHours;
  if (hours === undefined) return KINESIS_DEFAULT_RETENTION;
  return Token.isUnresolved(hours) ? undefined : Duration.hours(hours);
}
