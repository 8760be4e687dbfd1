/**
 * What the Kinesis and DynamoDB Streams transports share: each record becomes a message of the
 * engine (its data as the body, bytes and text where it is text, its shard as the ordering
 * group, the record itself as `message.record`), the engine runs every shard in order and the
 * shards in parallel, its results become a stream's checkpoint (the sequence number of the first
 * record of each shard to retry), and a permanent failure becomes a lossless stream dead letter
 * (`stream-dead-letter.ts`).
 */

import { type ConsumerEntryOptions, createEntryEngine, directDeadLetterSender } from '../consumer-entry';
import type { BatchProcessor } from '../core/batch-processor';
import type { KeySource } from '../core/dedup-key';
import { EffectivelyOnceError, expectOption } from '../core/errors';
import type { InboundMessage, LambdaContext, MessageResult } from '../core/inbound-message';
import { DEFAULT_DEAD_LETTER_MAX_MESSAGE_BYTES, SQS_MAX_MESSAGE_BYTES } from '../dead-letter/sqs-limits';
import { type StreamDeadLetterRecord, streamDeadLetterWriter } from './stream-dead-letter';
import type { StreamBatchResponse } from './stream-event';

/**
 * Picks the dedup key of a stream record from the record and its parsed body (a Kinesis
 * record's decoded data, a DynamoDB change). Return a producer or business key: a record's
 * sequence number or event id changes when the producer writes the same event again.
 */
export type StreamKeySource<TRecord, TBody = unknown> = KeySource<TBody, TRecord>;

/**
 * Options of a stream entry point: those of `createSqsHandler` (the modes, the store, the
 * construct's `EO_*` settings, logs and metrics), with the dedup key, the correlation id and
 * `message.record` of the stream record. Permanent failures are always sent to a dead-letter
 * queue (`deadLetter: 'direct'`): a stream has no redrive.
 */
export type StreamHandlerOptions<TRecord, TBody = unknown, TStore = unknown> = Omit<
  ConsumerEntryOptions<TBody, TStore, TRecord>,
  'deadLetter'
> & {
  /**
   * Always `direct`: a permanent failure is sent to the dead-letter queue and acknowledged, so
   * its shard moves on (a stream has no redrive).
   * @default 'direct'
   */
  readonly deadLetter?: 'direct';
  /**
   * The dead-letter queue's `MaximumMessageSize`, in bytes (1,024 to 1,048,576): a record whose
   * dead letter would be larger is sent marked truncated, with its coordinates, size and SHA-256.
   * @default `EO_DEAD_LETTER_MAX_MESSAGE_BYTES` (the construct's queue), else 262,144
   */
  readonly deadLetterMaxMessageBytes?: number;
};

/** A stream entry point's Lambda handler: a stream event in, the checkpoint out. */
export type StreamHandler<TEvent> = (event: TEvent, context?: LambdaContext) => Promise<StreamBatchResponse>;

/** One record as the engine sees it, and where it sits in its stream. */
export interface StreamMessage<TRecord> extends InboundMessage<TRecord> {
  /** The ordering group: the shard, or the stream when the record does not name its shard. */
  readonly orderingGroup: string;
  /** The record's sequence number: the checkpoint when it must be retried. */
  readonly sequenceNumber: string;
}

/** What an entry point knows of its source. */
export interface StreamSource<TRecord> {
  /** The source's name in errors: `Kinesis`, `DynamoDB Streams`. */
  readonly name: string;
  /** The engine's message of one record; throws `INVALID_EVENT` when it is not a record of this source. */
  message(record: TRecord): StreamMessage<TRecord>;
  /** The record's coordinates and exact data, for its dead letter. */
  deadLetterRecord(record: TRecord): StreamDeadLetterRecord;
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
  messages: readonly StreamMessage<unknown>[],
  results: readonly MessageResult[],
): StreamBatchResponse {
  const heldShards = new Set<string>();
  const batchItemFailures: { itemIdentifier: string }[] = [];
  messages.forEach((message, index) => {
    if (results[index]?.acknowledged || heldShards.has(message.orderingGroup)) return;
    heldShards.add(message.orderingGroup);
    batchItemFailures.push({ itemIdentifier: message.sequenceNumber });
  });
  return { batchItemFailures };
}

/** The dead-letter queue's size limit: the option, else the construct's variable, else the default. */
function deadLetterMaxBytes(
  options: { readonly deadLetterMaxMessageBytes?: number },
  fromEnvironment?: number,
): number {
  const value = options.deadLetterMaxMessageBytes ?? fromEnvironment ?? DEFAULT_DEAD_LETTER_MAX_MESSAGE_BYTES;
  expectOption(
    Number.isSafeInteger(value) && value >= 1024 && value <= SQS_MAX_MESSAGE_BYTES,
    'deadLetterMaxMessageBytes',
    `an integer from 1024 to ${SQS_MAX_MESSAGE_BYTES}`,
    value,
  );
  return value;
}

/**
 * The engine of a stream entry point over `source`: its messages in, their results out.
 * Options are validated here, at cold start; a bad option throws `INVALID_OPTIONS`. A permanent
 * failure (mismatch, missing or invalid key, malformed data) is sent to the dead-letter queue
 * with its reason, its coordinates and its data, and acknowledged, so its shard moves on;
 * `deadLetter: 'redrive'` is rejected (a stream has no redrive), and so is a missing
 * `deadLetterSender` (the construct's `EO_DEAD_LETTER_QUEUE_URL` gives one).
 */
export function createStreamEngine<TRecord, TBody, TStore>(
  options: StreamHandlerOptions<TRecord, TBody, TStore>,
  source: StreamSource<TRecord>,
): BatchProcessor<TRecord> {
  expectOption(typeof options === 'object' && options !== null, 'options', 'an object', options);
  expectOption(
    typeof options.dedupKey === 'function',
    'dedupKey',
    'a key source such as `fromData(...)`',
    options.dedupKey,
  );
  expectOption(
    options.deadLetter === undefined || options.deadLetter === 'direct',
    'deadLetter',
    "'direct' (a stream has no redrive: a permanent failure is sent to the dead-letter queue and acknowledged, so its shard moves on)",
    options.deadLetter,
  );
  const { deadLetterMaxMessageBytes: _max, ...entryOptions } = options;
  return createEntryEngine<TBody, TStore, TRecord>(
    { ...entryOptions, deadLetter: 'direct' },
    {},
    (resolved, settings) => {
      expectOption(
        typeof resolved.deadLetterSender?.send === 'function',
        'deadLetterSender',
        "an object with `send` (a stream handler sends permanent failures to a dead-letter queue: set the construct's `EO_DEAD_LETTER_QUEUE_URL`, or pass `createSqsDeadLetterSender(...)`)",
        resolved.deadLetterSender,
      );
      const sender = directDeadLetterSender(resolved)!;
      return streamDeadLetterWriter(
        sender,
        (record: TRecord) => source.deadLetterRecord(record),
        deadLetterMaxBytes(options, settings.deadLetterMaxMessageBytes),
      );
    },
  );
}

/**
 * Creates the handler of a stream whose event lists its records in `Records` (Kinesis, DynamoDB
 * Streams) over `source` ({@link createStreamEngine}), answering with the checkpoint.
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
  const processBatch = createStreamEngine(options, source);
  return async (event, context) => {
    if (typeof event !== 'object' || event === null || !Array.isArray(event.Records)) {
      throw new EffectivelyOnceError(
        'INVALID_EVENT',
        `Expected a ${source.name} event with a \`Records\` list`,
      );
    }
    const messages = event.Records.map((record) => source.message(record));
    const results = await processBatch(messages, context);
    return checkpointOf(messages, results);
  };
}
