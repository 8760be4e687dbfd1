/**
 * The stream consumer's defaults and the AWS limits it plans with, in one place: the props'
 * TSDoc `@default`s name these values, and validation, timing and construction read them here.
 */
import { Duration } from 'aws-cdk-lib';

/** `batchSize` when not set (the event source's own default for streams). */
export const DEFAULT_STREAM_BATCH_SIZE = 100;

/** The largest `batchSize` of a Kinesis or DynamoDB Streams event source. */
export const MAX_STREAM_BATCH_SIZE = 10_000;

/** `parallelizationFactor` when not set. */
export const DEFAULT_PARALLELIZATION_FACTOR = 1;

/** `retryAttempts` when not set: as many as the event source allows, so `maxRecordAge` is the bound. */
export const DEFAULT_RETRY_ATTEMPTS = 10_000;

/** The largest finite `MaximumRetryAttempts` of a stream event source. */
export const MAX_RETRY_ATTEMPTS = 10_000;

/** The least `MaximumRecordAgeInSeconds` of a stream event source. */
export const MIN_RECORD_AGE = Duration.seconds(60);

/** The default `maxRecordAge` is this share of the stream's retention (at most 7 days). */
export const RECORD_AGE_SHARE_OF_RETENTION = 0.5;

/** How long the queues the construct creates (on-failure and dead-letter) keep a message. */
export const STREAM_QUEUE_RETENTION = Duration.days(14);

/** `iteratorAgeThreshold` when not set. */
export const DEFAULT_ITERATOR_AGE_THRESHOLD = Duration.minutes(15);

/** `offsetLagThreshold` when not set, in records. */
export const DEFAULT_OFFSET_LAG_THRESHOLD = 10_000;

/** A Kafka topic's retention when not given: Kafka's default `log.retention.hours` (168). */
export const KAFKA_DEFAULT_RETENTION = Duration.days(7);

/** Provisioned pollers of a Kafka event source: AWS's range and defaults. */
export const KAFKA_POLLERS = Object.freeze({ min: 1, max: 2000, defaultMinimum: 1, defaultMaximum: 200 });
