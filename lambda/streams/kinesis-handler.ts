/**
 * `createKinesisHandler`: the Lambda handler of a Kinesis Data Streams event source mapping.
 * Each record's data (base64) is the message body: its exact bytes, and its text where it is
 * UTF-8; a failure checkpoints its shard at that record, and a permanent failure is a lossless
 * stream dead letter.
 */
import type { Message } from '../core/message';
import { type StreamCoordinates, streamRecordAttributes, utf8TextOf } from './stream-dead-letter';
import type { KinesisStreamEvent, KinesisStreamRecord } from './stream-event';
import {
  createStreamHandler,
  invalidRecord,
  type StreamHandler,
  type StreamHandlerOptions,
  type StreamMessage,
} from './stream-handler';

/** The message a Kinesis handler receives: `message.record` is the Kinesis record. */
export type KinesisMessage<TBody = unknown> = Message<TBody, KinesisStreamRecord>;

/** Options of {@link createKinesisHandler}. */
export type KinesisHandlerOptions<TBody = unknown, TStore = unknown> = StreamHandlerOptions<
  KinesisStreamRecord,
  TBody,
  TStore
>;

/** Checks a Kinesis record's sequence number and data: a record without them is `INVALID_EVENT`. */
function checkedKinesis(record: KinesisStreamRecord) {
  const kinesis = record?.kinesis;
  if (typeof kinesis?.sequenceNumber !== 'string' || kinesis.sequenceNumber === '') {
    invalidRecord('Kinesis', '`kinesis.sequenceNumber`');
  }
  if (typeof kinesis.data !== 'string') invalidRecord('Kinesis', '`kinesis.data`');
  return kinesis;
}

/** The shard id of a record, from its event id (`<shard id>:<sequence number>`). */
function shardIdOf(record: KinesisStreamRecord): string | undefined {
  const eventId = record.eventID;
  const separator = typeof eventId === 'string' ? eventId.indexOf(':') : -1;
  return separator > 0 ? eventId!.slice(0, separator) : undefined;
}

/** Where a Kinesis record sits in its stream. */
export function kinesisCoordinates(record: KinesisStreamRecord): StreamCoordinates {
  const kinesis = checkedKinesis(record);
  const shardId = shardIdOf(record);
  return {
    ...(record.eventSource === undefined ? {} : { eventSource: record.eventSource }),
    ...(record.eventSourceARN === undefined ? {} : { eventSourceArn: record.eventSourceARN }),
    ...(shardId === undefined ? {} : { shardId }),
    sequenceNumber: kinesis.sequenceNumber,
    ...(record.eventID === undefined ? {} : { eventId: record.eventID }),
    ...(kinesis.partitionKey === undefined ? {} : { partitionKey: kinesis.partitionKey }),
    ...(kinesis.approximateArrivalTimestamp === undefined
      ? {}
      : { arrivalTime: kinesis.approximateArrivalTimestamp }),
  };
}

/**
 * The engine's message of a Kinesis record: its data's bytes and, where they are UTF-8, text as
 * the body; the shard (from the event id) as its ordering group; the event id as its message
 * id; the record's coordinates as attributes (`STREAM_RECORD_ATTRIBUTES`). A record without a
 * sequence number or data is not a Kinesis record (`INVALID_EVENT`).
 */
export function kinesisMessage(record: KinesisStreamRecord): StreamMessage<KinesisStreamRecord> {
  const kinesis = checkedKinesis(record);
  const { sequenceNumber } = kinesis;
  const shardId = shardIdOf(record);
  // Without a shard id the batch is one shard, as every batch Lambda delivers is.
  const shard = shardId ?? record.eventSourceARN ?? 'kinesis';
  const bytes = new Uint8Array(Buffer.from(kinesis.data, 'base64'));
  return {
    id: record.eventID ?? `${shard}:${sequenceNumber}`,
    text: utf8TextOf(bytes),
    bytes,
    attributes: streamRecordAttributes(kinesisCoordinates(record)),
    groupId: shard,
    orderingGroup: shard,
    sequenceNumber,
    record,
  };
}

/**
 * Creates the Lambda handler of a Kinesis event source mapping (enable
 * `ReportBatchItemFailures` on it). Call it once, at module scope: options are validated here.
 *
 * Each record's data is decoded (base64, then UTF-8) and is the message body: `fromData('id')`
 * picks a field of it. Data that is not UTF-8 (gzip from a CloudWatch Logs subscription, a KPL
 * aggregate) is `MALFORMED_BODY` with the default `parse`; a `parse` function gets its exact
 * bytes as its second argument (`message.rawBytes` has them too). Records of one shard run in order, shards in parallel. On the first
 * record of a shard that must be retried (throttling, a lease held elsewhere, a failed
 * dead-letter send, ...) the shard's later records do not run, and the response names that
 * record's sequence number: the event source resumes the shard from it, and the records already
 * processed come again as duplicates. A permanent failure (a different payload under a known
 * key, a missing key, malformed or empty data) is sent to the dead-letter queue with its reason,
 * its coordinates and its data (`StreamDeadLetterBody`), and acknowledged, so the shard moves on.
 * `message.record` is the Kinesis record.
 *
 * A record retried until the mapping's `MaximumRetryAttempts` (or `MaximumRecordAgeInSeconds`)
 * is discarded by the event source with the rest of its batch; its on-failure destination gets
 * the shard and the first and last sequence numbers, not the data. Keep the retention long
 * enough to read them again from there.
 *
 * @example
 * export const handler = createKinesisHandler<OrderEvent>({
 *   dedupKey: fromData('eventId'),
 *   mode: atomic((message, unitOfWork) => {
 *     unitOfWork.put({ TableName: 'Orders', Item: { pk: message.body.orderId, status: message.body.status } });
 *   }),
 * });
 */
export function createKinesisHandler<TBody = unknown, TStore = unknown>(
  options: KinesisHandlerOptions<TBody, TStore>,
): StreamHandler<KinesisStreamEvent> {
  return createStreamHandler<KinesisStreamEvent, KinesisStreamRecord, TBody, TStore>(options, {
    name: 'Kinesis',
    message: kinesisMessage,
    deadLetterRecord: (record) => ({
      coordinates: kinesisCoordinates(record),
      data: new Uint8Array(Buffer.from(record.kinesis.data, 'base64')),
    }),
  });
}
