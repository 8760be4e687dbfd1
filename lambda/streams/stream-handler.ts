/**
 * What the Kinesis and DynamoDB Streams entry points share: each record becomes a message of the
 * engine (an SQS-shaped view: the decoded data as the body, the shard as the ordering group), the
 * engine runs every shard in order and the shards in parallel, and its answer becomes a stream's
 * checkpoint: the sequence number of the first record of each shard to retry.
 */
import { STREAM_RECORD_ATTRIBUTES } from '../core/contract';
import { bodyPathOf, type KeySource, type KeyValue } from '../core/dedup-key';
import { EffectivelyOnceError, expectOption } from '../core/errors';
import type { Message } from '../core/message';
import type { LambdaContext, SqsMessageAttribute, SqsRecord } from '../core/sqs-event';
import {
  createSqsHandlerWithDefaults,
  resolveSqsHandlerOptions,
  type SqsHandlerOptions,
} from '../sqs-handler';
import type { StreamBatchResponse } from './stream-event';

/**
 * Picks the dedup key of a stream record from the record and its parsed body (a Kinesis
 * record's decoded data, a DynamoDB change). Return a producer or business key: a record's
 * sequence number or event id changes when the producer writes the same event again.
 */
export type StreamKeySource<TRecord, TBody = unknown> = (record: TRecord, body: TBody) => KeyValue;

/**
 * Options of a stream entry point: those of `createSqsHandler` (the modes, the store, the
 * construct's `EO_*` settings, logs and metrics), with the dedup key and the correlation id
 * picked from the stream record. Permanent failures are always sent to a dead-letter queue
 * (`deadLetter: 'direct'`): a stream has no redrive.
 */
export type StreamHandlerOptions<TRecord, TBody = unknown, TStore = unknown> = Omit<
  SqsHandlerOptions<TBody, TStore>,
  'dedupKey' | 'correlationId'
> & {
  /** Where the dedup key comes from: `fromData(...)`, a source of the entry point, or a function. */
  readonly dedupKey: StreamKeySource<TRecord, TBody>;
  /**
   * Picks the correlation id of a record.
   * @default the record's event id (a Kinesis record's is `<shard id>:<sequence number>`)
   */
  readonly correlationId?: (record: TRecord) => string | undefined;
};

/** A stream entry point's Lambda handler: a stream event in, the checkpoint out. */
export type StreamHandler<TEvent> = (event: TEvent, context?: LambdaContext) => Promise<StreamBatchResponse>;

/** One record as the engine sees it, and where it sits in its stream. */
export interface StreamRecordView {
  /** The SQS-shaped message of the engine. */
  readonly message: SqsRecord;
  /** The ordering group: the shard, or the stream when the record does not name its shard. */
  readonly shard: string;
  readonly sequenceNumber: string;
}

/** What an entry point knows of its source. */
export interface StreamSource<TRecord> {
  /** The source's name in errors: `Kinesis`, `DynamoDB Streams`. */
  readonly name: string;
  /** The view of one record; throws `INVALID_EVENT` when it is not a record of this source. */
  view(record: TRecord): StreamRecordView;
}

/** The stream record behind each view, for key sources and `streamRecordOf`. */
const STREAM_RECORDS = new WeakMap<SqsRecord, unknown>();

/**
 * The stream record a message came from, in a handler of `createKinesisHandler` or
 * `createDynamoDbStreamHandler` (`message.record` is the engine's SQS-shaped view of it);
 * `undefined` for a message of another entry point.
 *
 * @example
 * const record = streamRecordOf<KinesisStreamRecord>(message);
 * console.log(record?.kinesis.partitionKey);
 */
export function streamRecordOf<TRecord>(message: Pick<Message, 'record'>): TRecord | undefined {
  return STREAM_RECORDS.get(message.record) as TRecord | undefined;
}

/**
 * The SQS-shaped view of a stream record: `messageId` its event id, `body` its decoded data, the
 * shard as the message group, and where it came from as message attributes
 * (`STREAM_RECORD_ATTRIBUTES`), which a dead letter carries.
 */
export function streamMessage(fields: {
  readonly messageId: string;
  readonly body: string;
  readonly shard: string;
  readonly shardId?: string;
  readonly sequenceNumber: string;
  readonly partitionKey?: string;
  readonly eventSource?: string;
  readonly eventSourceArn?: string;
  readonly awsRegion?: string;
}): SqsRecord {
  const text = (stringValue: string): SqsMessageAttribute => ({ stringValue, dataType: 'String' });
  const messageAttributes: Record<string, SqsMessageAttribute> = {};
  if (fields.eventSourceArn !== undefined)
    messageAttributes[STREAM_RECORD_ATTRIBUTES.eventSourceArn] = text(fields.eventSourceArn);
  if (fields.shardId !== undefined)
    messageAttributes[STREAM_RECORD_ATTRIBUTES.shardId] = text(fields.shardId);
  messageAttributes[STREAM_RECORD_ATTRIBUTES.sequenceNumber] = text(fields.sequenceNumber);
  if (fields.partitionKey !== undefined)
    messageAttributes[STREAM_RECORD_ATTRIBUTES.partitionKey] = text(fields.partitionKey);
  return {
    messageId: fields.messageId,
    body: fields.body,
    attributes: { MessageGroupId: fields.shard, SequenceNumber: fields.sequenceNumber },
    messageAttributes,
    eventSource: fields.eventSource,
    eventSourceARN: fields.eventSourceArn,
    awsRegion: fields.awsRegion,
  };
}

/** Throws `INVALID_EVENT` naming the source and what is missing from a record. */
export function invalidRecord(source: string, missing: string): never {
  throw new EffectivelyOnceError('INVALID_EVENT', `Expected a ${source} record with ${missing}`);
}

/**
 * The checkpoint of a batch: for each shard, the sequence number of its first record the engine
 * did not acknowledge. The engine ran none of the shard's later records (they wait for it), and
 * the event source resumes the shard there: the records acknowledged before it come again and
 * are duplicates. Lambda uses only the lowest sequence number of a shard, so one is reported.
 */
export function checkpointOf(
  views: readonly StreamRecordView[],
  failedMessageIds: ReadonlySet<string>,
): StreamBatchResponse {
  const heldShards = new Set<string>();
  const batchItemFailures: { itemIdentifier: string }[] = [];
  for (const view of views) {
    if (!failedMessageIds.has(view.message.messageId) || heldShards.has(view.shard)) continue;
    heldShards.add(view.shard);
    batchItemFailures.push({ itemIdentifier: view.sequenceNumber });
  }
  return { batchItemFailures };
}

/**
 * Creates a stream entry point's handler over `source`. Options are validated here, at cold
 * start; a bad option throws `INVALID_OPTIONS`. A permanent failure (mismatch, missing or
 * invalid key, malformed data) is sent to the dead-letter queue with its reason and
 * acknowledged, so its shard moves on; `deadLetter: 'redrive'` is rejected (a stream has no
 * redrive), and so is a missing `deadLetterSender` (the construct's `EO_DEAD_LETTER_QUEUE_URL`
 * gives one).
 */
export function createStreamHandler<
  TEvent extends { readonly Records: readonly TRecord[] },
  TRecord,
  TBody,
  TStore,
>(
  options: StreamHandlerOptions<TRecord, TBody, TStore>,
  source: StreamSource<TRecord>,
): StreamHandler<TEvent> {
  expectOption(typeof options === 'object' && options !== null, 'options', 'an object', options);
  const { dedupKey, correlationId, ...rest } = options;
  expectOption(typeof dedupKey === 'function', 'dedupKey', 'a key source such as `fromData(...)`', dedupKey);
  const recordOf = (message: SqsRecord) => STREAM_RECORDS.get(message) as TRecord;
  // A `fromData(path)` source reads only the body; kept as it is, the engine checks a number
  // key against its literal in the data.
  const engineKey: KeySource<TBody> =
    bodyPathOf(dedupKey as never) === undefined
      ? (message, body) => dedupKey(recordOf(message), body)
      : (dedupKey as unknown as KeySource<TBody>);
  const resolved = resolveSqsHandlerOptions<TBody, TStore>({
    ...rest,
    dedupKey: engineKey,
    ...(correlationId === undefined ? {} : { correlationId: (message) => correlationId(recordOf(message)) }),
  });
  expectOption(
    resolved.deadLetter === undefined || resolved.deadLetter === 'direct',
    'deadLetter',
    "'direct' (a stream has no redrive: a permanent failure is sent to the dead-letter queue and acknowledged, so its shard moves on)",
    resolved.deadLetter,
  );
  const withDeadLetters = resolveSqsHandlerOptions({ ...resolved, deadLetter: 'direct' });
  expectOption(
    typeof withDeadLetters.deadLetterSender?.send === 'function',
    'deadLetterSender',
    "an object with `send` (a stream handler sends permanent failures to a dead-letter queue: set the construct's `EO_DEAD_LETTER_QUEUE_URL`, or pass `createSqsDeadLetterSender(...)`)",
    withDeadLetters.deadLetterSender,
  );
  const processBatch = createSqsHandlerWithDefaults(
    withDeadLetters,
    {},
    { groupOf: (message) => message.attributes.MessageGroupId },
  );

  return async (event, context) => {
    if (typeof event !== 'object' || event === null || !Array.isArray(event.Records)) {
      throw new EffectivelyOnceError(
        'INVALID_EVENT',
        `Expected a ${source.name} event with a \`Records\` list`,
      );
    }
    const views = event.Records.map((record) => {
      const view = source.view(record);
      STREAM_RECORDS.set(view.message, record);
      return view;
    });
    const response = await processBatch({ Records: views.map((view) => view.message) }, context);
    return checkpointOf(views, new Set(response.batchItemFailures.map((failure) => failure.itemIdentifier)));
  };
}
