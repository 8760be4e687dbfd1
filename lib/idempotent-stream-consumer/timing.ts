/**
 * The durations an `IdempotentStreamConsumer` derives from its props before it creates
 * anything: the stream's retention, the event source's `maxRecordAge`, the replay window and
 * record TTL, and the two-phase lease. Pure over the props, so the validation can check the
 * rules between them together with every other prop.
 */
import { Duration } from 'aws-cdk-lib';
import { DEFAULT_PRODUCER_RETRY_HORIZON, DEFAULT_TIMEOUT } from '../consumer-defaults';
import {
  DYNAMODB_STREAMS_RETENTION,
  deriveStreamReplayWindow,
  KINESIS_DEFAULT_RETENTION,
  KINESIS_MAX_RETENTION,
  knownKinesisRetention,
  type RedeliveryWindow,
  STREAM_MAX_RECORD_AGE_LIMIT,
} from '../record-ttl';
import { KAFKA_DEFAULT_RETENTION, RECORD_AGE_SHARE_OF_RETENTION } from './defaults';
import type { IdempotentStreamConsumerProps } from './props';

/** What the construct plans with. */
export interface StreamConsumerTiming {
  /** The function timeout: `timeout`, or the default. */
  readonly functionTimeout: Duration;
  /**
   * How long the stream keeps a record: 24 hours for DynamoDB Streams, a Kinesis stream's
   * retention when it is defined in this app, a Kafka topic's `retention` (7 days unless given);
   * `undefined` when that cannot be known.
   */
  readonly knownRetention?: Duration;
  /** `maxRecordAge`, or the derived default (half the retention, at most 7 days). */
  readonly maxRecordAge: Duration;
  /** The replay window and the default record TTL derived from it. */
  readonly replay: RedeliveryWindow;
  /** `recordTtl`, or the derived default. */
  readonly recordTtl: Duration;
  /** `lease`, or the function timeout. */
  readonly lease: Duration;
}

/** The durations the construct derives from `props` (see {@link StreamConsumerTiming}). */
export function resolveStreamTiming(props: IdempotentStreamConsumerProps): StreamConsumerTiming {
  const functionTimeout = props.timeout ?? DEFAULT_TIMEOUT;
  const knownRetention = streamRetention(props);
  const maxRecordAge = props.maxRecordAge ?? defaultMaxRecordAge(knownRetention);
  const replay = deriveStreamReplayWindow({
    // An unknown retention counts as the Kinesis maximum, and a token age as the event
    // source's limit: the TTL errs long, never short.
    streamRetention: knownRetention ?? KINESIS_MAX_RETENTION,
    maxRecordAge: maxRecordAge.isUnresolved() ? STREAM_MAX_RECORD_AGE_LIMIT : maxRecordAge,
    replayAllowance: props.replayAllowance?.isUnresolved() ? undefined : props.replayAllowance,
    producerRetryHorizon: concreteOr(props.producerRetryHorizon, DEFAULT_PRODUCER_RETRY_HORIZON),
  });
  return {
    functionTimeout,
    knownRetention,
    maxRecordAge,
    replay,
    recordTtl: props.recordTtl ?? replay.defaultRecordTtl,
    lease: props.lease ?? functionTimeout,
  };
}

/**
 * Half the stream's retention, at most the event source's limit of 7 days, in whole seconds;
 * for an unknown retention, half of 24 hours, the least retention a stream can have, so the
 * age is below any stream's retention.
 */
export function defaultMaxRecordAge(retention: Duration | undefined): Duration {
  const seconds = (retention ?? KINESIS_DEFAULT_RETENTION).toSeconds() * RECORD_AGE_SHARE_OF_RETENTION;
  return Duration.seconds(Math.floor(Math.min(seconds, STREAM_MAX_RECORD_AGE_LIMIT.toSeconds())));
}

function streamRetention(props: IdempotentStreamConsumerProps): Duration | undefined {
  if (props.sourceTable) return DYNAMODB_STREAMS_RETENTION;
  if (props.kafka) return props.kafka.retention ?? KAFKA_DEFAULT_RETENTION;
  return props.stream ? knownKinesisRetention(props.stream) : undefined;
}

function concreteOr(duration: Duration | undefined, fallback: Duration): Duration {
  return duration === undefined || duration.isUnresolved() ? fallback : duration;
}
