/**
 * `createKinesisHandler`: the Lambda handler of a Kinesis Data Streams event source mapping.
 * Each record's data (base64) is decoded as UTF-8 and parsed like an SQS body; a failure
 * checkpoints its shard at that record.
 */
import type { KinesisStreamEvent, KinesisStreamRecord } from './stream-event';
import {
  createStreamHandler,
  invalidRecord,
  type StreamHandler,
  type StreamHandlerOptions,
  type StreamRecordView,
  streamMessage,
} from './stream-handler';

/** Options of {@link createKinesisHandler}. */
export type KinesisHandlerOptions<TBody = unknown, TStore = unknown> = StreamHandlerOptions<
  KinesisStreamRecord,
  TBody,
  TStore
>;

/**
 * The engine's view of a Kinesis record: the decoded data as the body, the shard (from the
 * event id, `<shard id>:<sequence number>`) as its ordering group, the event id as its message
 * id. A record without a sequence number or data is not a Kinesis record (`INVALID_EVENT`).
 */
export function kinesisRecordView(record: KinesisStreamRecord): StreamRecordView {
  const kinesis = record?.kinesis;
  if (typeof kinesis?.sequenceNumber !== 'string' || kinesis.sequenceNumber === '') {
    invalidRecord('Kinesis', '`kinesis.sequenceNumber`');
  }
  if (typeof kinesis.data !== 'string') invalidRecord('Kinesis', '`kinesis.data`');
  const { sequenceNumber } = kinesis;
  const eventId = record.eventID;
  const separator = typeof eventId === 'string' ? eventId.indexOf(':') : -1;
  const shardId = separator > 0 ? eventId!.slice(0, separator) : undefined;
  // Without a shard id the batch is one shard, as every batch Lambda delivers is.
  const shard = shardId ?? record.eventSourceARN ?? 'kinesis';
  return {
    message: streamMessage({
      messageId: eventId ?? `${shard}:${sequenceNumber}`,
      body: Buffer.from(kinesis.data, 'base64').toString('utf8'),
      shard,
      shardId,
      sequenceNumber,
      partitionKey: kinesis.partitionKey,
      eventSource: record.eventSource,
      eventSourceArn: record.eventSourceARN,
      awsRegion: record.awsRegion,
    }),
    shard,
    sequenceNumber,
  };
}

/**
 * Creates the Lambda handler of a Kinesis event source mapping (enable
 * `ReportBatchItemFailures` on it). Call it once, at module scope: options are validated here.
 *
 * Each record's data is decoded (base64, then UTF-8) and is the message body: `fromData('id')`
 * picks a field of it. Records of one shard run in order, shards in parallel. On the first
 * record of a shard that must be retried (throttling, a lease held elsewhere, a failed
 * dead-letter send, ...) the shard's later records do not run, and the response names that
 * record's sequence number: the event source resumes the shard from it, and the records already
 * processed come again as duplicates. A permanent failure (a different payload under a known
 * key, a missing key, malformed data) is sent to the dead-letter queue with its reason and
 * acknowledged, so the shard moves on.
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
    view: kinesisRecordView,
  });
}
