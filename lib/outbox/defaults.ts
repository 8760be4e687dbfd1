/**
 * The outbox's defaults and the limits it plans with, in one place: the props' TSDoc
 * `@default`s name these values, and validation, timing and construction read them here.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Duration } from 'aws-cdk-lib';
import { DYNAMODB_STREAMS_RETENTION, SQS_DEFAULT_RETENTION, SQS_MAX_RETENTION } from '../record-ttl';

/** `relayTimeout` when not set. */
export const DEFAULT_RELAY_TIMEOUT = Duration.seconds(30);

/** `relayMemorySize` when not set, MiB. */
export const DEFAULT_RELAY_MEMORY_SIZE = 256;

/** `batchSize` when not set: the relay publishes at most this many events per invocation. */
export const DEFAULT_RELAY_BATCH_SIZE = 100;

/**
 * The largest `batchSize`: a DynamoDB stream event source delivers at most 10,000 records, but
 * the relay publishes one request per event, so a batch must fit the function timeout.
 */
export const MAX_RELAY_BATCH_SIZE = 1000;

/** `maxRecordAge` when not set: half the 24 hours DynamoDB Streams keeps a record. */
export const DEFAULT_RELAY_MAX_RECORD_AGE = Duration.hours(12);

/**
 * `retryAttempts` when not set: as many as the event source allows, so `maxRecordAge` is the
 * bound. A publish that fails transiently (throttling, a destination briefly unavailable) is
 * retried from its checkpoint instead of given up on.
 */
export const DEFAULT_RELAY_RETRY_ATTEMPTS = 10_000;

/**
 * Added to the relay's give-up horizon in the derived retention: the time an operator has to
 * republish an event from the table once the stream no longer holds it.
 */
export const OPERATOR_ALLOWANCE = Duration.days(1);

/** The stream the relay reads keeps a record this long (DynamoDB Streams' fixed retention). */
export const OUTBOX_STREAM_RETENTION = DYNAMODB_STREAMS_RETENTION;

/**
 * `onFailureRetention` when not set: SQS's default of 4 days. The on-failure alarm fires within
 * a minute of a give-up, and 4 days outlast a long weekend; every outbox item is kept for the
 * give-up horizon plus this long (the on-failure record names a sequence range, not the events),
 * so a longer default would keep every event, not only the given-up ones, that much longer.
 */
export const DEFAULT_ON_FAILURE_RETENTION = SQS_DEFAULT_RETENTION;

/** The longest `onFailureRetention`, and what an unresolved one counts as: SQS's 14 days. */
export const MAX_ON_FAILURE_RETENTION = SQS_MAX_RETENTION;

/**
 * How long the dead-letter queue the outbox creates keeps a message: SQS's most. A dead letter
 * carries the whole event (or, truncated, its key), so it does not depend on the table.
 */
export const OUTBOX_DEAD_LETTER_RETENTION = SQS_MAX_RETENTION;

/** `eventAgeThreshold` when not set. */
export const DEFAULT_RELAY_EVENT_AGE_THRESHOLD = Duration.minutes(5);

/** `iteratorAgeThreshold` when not set. */
export const DEFAULT_RELAY_ITERATOR_AGE_THRESHOLD = Duration.minutes(5);

/** Failed publishes (the relay's `Retry` and `Permanent` outcomes) in 5 minutes that fire the alarm. */
export const FAILED_PUBLISH_THRESHOLD = 1;

/**
 * The relay handler the package ships, next to the construct: the TypeScript source in this
 * repository, the compiled file in the published package.
 */
export function defaultRelayEntry(): string {
  const base = path.join(__dirname, '..', '..', 'lambda', 'outbox', 'relay-handler');
  return fs.existsSync(`${base}.ts`) ? `${base}.ts` : `${base}.js`;
}
