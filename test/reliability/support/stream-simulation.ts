/**
 * One seed of the stream simulation: a seeded plan of records written to a simulated stream
 * (`simulated-stream.ts`: shards, sequence numbers, checkpoints, bisects, retries, the on-failure
 * destination), read by simulated Lambda instances that run the real `createKinesisHandler`,
 * `createDynamoDbStreamHandler` or `createKafkaHandler` over the real DynamoDB store on the local
 * emulator, with faults injected at every step (`fault-injection.ts`).
 *
 * A Kafka seed is the same stream read as a Kafka event source mapping reads a topic: each shard
 * is a topic-partition (`orders-0`, `orders-1`), each record sits at its offset in it (from 0 in
 * write order), keyed by the producer's partition key and carrying the order's id in an
 * `idempotency-key` header; the handler's answer (a partition and an offset per partition to
 * retry) is translated back to that record's sequence number (`streamCheckpointOf`), so the
 * stream's retries, bisects, `MaximumRetryAttempts`, on-failure destination, lost checkpoints and
 * replay apply unchanged. Kafka has no `ParallelizationFactor`: one lane per partition.
 *
 * What is simulated and what is real:
 * - real: the toolkit (options, stream handler, batch processor, store, the SQS dead-letter
 *   sender), the SDK clients and their middleware stacks, DynamoDB (the emulator, the only
 *   arbiter of races), and the dead-letter queue: a standard queue on the emulator per seed with
 *   a `MaximumMessageSize` of `DEAD_LETTER_MAX_MESSAGE_BYTES` (2,048, also the handlers'
 *   `deadLetterMaxMessageBytes`), reached through the SQS conformance layer
 *   (`test/support/aws-limits/sqs.ts`), which refuses what SQS refuses and the emulator takes;
 * - simulated: the stream and its event source mapping (the emulator's mappings ignore
 *   `batchItemFailures`, docs/local-aws-streams.md), the Lambda runtime (one batch per lane at a
 *   time, a crashed invocation a function error), each instance's clock (skewed by up to 5 s),
 *   and the producer: a `PutRecords` retried after a lost answer writes the same data again under
 *   a new sequence number (and, for a producer that picks a partition key per attempt, under
 *   another partition key, so the copy may run concurrently on another shard or lane). A
 *   DynamoDB table stream emits the same change twice with a new event id.
 *
 * Faults (each a pure function of the seed and of what is decided: a record's event id and how
 * often it was delivered): per delivered record throttling, a transaction conflict, a lost
 * response, a claim applied whose response is lost and sent again at once by the SDK, a crash
 * before or after the claim, a crash after the record's outcome is decided, in marker mode a
 * crash during the effect, a dependency failing (the handler throws: a retry); per update of an
 * inbox record (marker mode's release) its response lost and the SDK's retry sent at once; per
 * invocation a crash while the batch response is built; per dead-letter send a failure, or the
 * message sent and its response lost (the record is retried, so dead-lettered again); per answered
 * invocation its checkpoint lost (`LOST_CHECKPOINT_CHANCE`: the function succeeded, the mapping did
 * not store where the lane is, so the same batch comes again, and a record it processed must then
 * meet its own inbox record). Throttled and conflicted claims, lost checkpoints and batches run
 * while another lane of their shard runs one (a parallelization factor of 2: two instances on one
 * shard, never one partition key in both) are counted. A table stream's changes are partly written
 * in transactions whose changes land apart, with another transaction's between them
 * (`inTransactions`). A batch
 * retried `FAULT_FREE_FROM_RETRY` times or more runs without faults, so no record but an outage
 * one can use up `MAX_RETRY_ATTEMPTS`.
 *
 * Plan: valid records, poison records (malformed data, no key, a key reused with another payload),
 * bad data a stream may legally carry and SQS cannot hold as it is (`BAD_KINDS`: empty data;
 * binary data: gzip, bytes that are not UTF-8, text with characters SQS refuses; data larger than
 * the dead-letter queue's message size, up to the largest record of the source; and data sized
 * so that its whole dead letter is within two bytes of that size, either side, measured through
 * the real handler), producer duplicates, and records whose downstream dependency is down for
 * the whole first pass (an outage): the event source retries them until `MAX_RETRY_ATTEMPTS`,
 * then discards their batch and reports it to the on-failure destination (its shard and sequence
 * range); once the stream drained, the outage is over and the operator replays every shard from
 * `TRIM_HORIZON`, which brings the discarded records back and every other record again as a
 * duplicate. At the end the dead-letter queue is read back for the oracle.
 */

import { AsyncLocalStorage } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';
import { gzipSync } from 'node:zlib';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  type MessageAttributeValue,
  ReceiveMessageCommand,
  type SendMessageCommand,
  type SendMessageCommandInput,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { DEAD_LETTER_ATTRIBUTES } from '../../../lambda/core/contract';
import { scopeKey, toDedupKey } from '../../../lambda/core/dedup-key';
import type { LogEntry, Logger } from '../../../lambda/core/logger';
import type { MetricsSink } from '../../../lambda/core/metrics';
import type { DeadLetterMessage, DeadLetterSender } from '../../../lambda/dead-letter/dead-letter-message';
import { createSqsDeadLetterSender } from '../../../lambda/dead-letter/sqs-dead-letter-sender';
import {
  createKafkaHandler,
  type KafkaBatchResponse,
  type KafkaHandlerOptions,
  type KafkaRecord,
} from '../../../lambda/kafka';
import { atomic } from '../../../lambda/modes/atomic';
import { entity } from '../../../lambda/modes/entity';
import { marker } from '../../../lambda/modes/marker';
import {
  createDynamoDbStreamHandler,
  createKinesisHandler,
  type DynamoDbChange,
  type DynamoDbStreamHandlerOptions,
  type DynamoDbStreamRecord,
  fromData,
  fromKeysAndVersion,
  type KinesisHandlerOptions,
  type KinesisStreamRecord,
  type StreamBatchResponse,
} from '../../../lambda/streams';
import { awsConfig, uniqueName } from '../../support/aws';
import {
  createConformingSqsClient,
  SQS_MAX_MESSAGE_BYTES,
  sqsMessageBytes,
} from '../../support/aws-limits/sqs';
import {
  attachFaultInjection,
  type DynamoRequest,
  type FaultController,
  type RequestFault,
  roleOf,
  SimulatedCrash,
  writesOn,
} from './fault-injection';
import { createHistory, type HistoryEntry } from './history';
import { chanceOf, createRandom, type Random } from './prng';
import { claimRequestFault, createCrashingMetrics, drawFault, losesResponse } from './simulated-lambda';
import {
  type BatchResult,
  createSimulatedStream,
  type EntryFate,
  type SimulatedStream,
  type StreamBatch,
  type StreamEntry,
} from './simulated-stream';
import { addOwner, recordActions, unfollowedMarkers } from './simulation';
import { createLocalClient, type LocalClient } from './tables';

/** Which stream and mode a seed runs. */
export type StreamSource = 'kinesis' | 'dynamodb' | 'kafka';
/** The modes whose effect lives in DynamoDB (two-phase is covered by the SQS simulation). */
export type StreamMode = 'atomic' | 'marker' | 'entity';

/** The event source mapping's `MaximumRetryAttempts`. */
export const MAX_RETRY_ATTEMPTS = 4;
/** From this retry of a batch on, it runs without injected faults. */
export const FAULT_FREE_FROM_RETRY = 3;
/** The event source mapping's `BatchSize`. */
export const BATCH_SIZE = 10;
/** Inbox record lifetime: far longer than the run, so every duplicate meets a live record. */
export const TTL_SECONDS = 86_400;
/** The largest clock skew of an instance, either way. */
export const MAX_SKEW_MILLIS = 5000;
/** The version attribute a table stream's changes are keyed by. */
const VERSION = 'version';

/**
 * The dead-letter queue's `MaximumMessageSize` in the simulation, and the handlers'
 * `deadLetterMaxMessageBytes` (default 262,144): small, so an oversize record is a few KiB and a
 * seed stays fast. SQS allows a queue "from 1,024 bytes (1 KiB) up to 1,048,576 bytes (1 MiB)".
 */
export const DEAD_LETTER_MAX_MESSAGE_BYTES = 2048;

/**
 * The largest Kinesis record: "Each record in the request can be as large as 1 MiB ... The record
 * size limit applies to the total size of the partition key and data blob."
 * https://docs.aws.amazon.com/kinesis/latest/APIReference/API_PutRecords.html
 */
export const KINESIS_MAX_RECORD_BYTES = 1_048_576;

/**
 * The largest Kafka record a broker with its default settings takes: `message.max.bytes`, "The
 * largest record batch size allowed by Kafka (after compression if compression is enabled)",
 * default 1,048,588 (https://kafka.apache.org/documentation/#brokerconfigs_message.max.bytes). A
 * batch of one record holds its value, key and headers besides a header of its own.
 */
export const KAFKA_MAX_RECORD_BATCH_BYTES = 1_048_588;

/** The topic of a Kafka seed: its shards are the partitions `orders-0` and `orders-1`. */
export const KAFKA_TOPIC = 'orders';

/** The header a Kafka seed's producer puts the order's id in (the dedup key stays the value's `id`). */
export const KAFKA_KEY_HEADER = 'idempotency-key';

/**
 * The largest DynamoDB item, so the largest image of a change: "The maximum item size in DynamoDB
 * is 400 KB, which includes both attribute name binary length (UTF-8 length) and attribute value
 * lengths (again binary length)."
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html
 */
export const DYNAMODB_MAX_ITEM_BYTES = 400 * 1024;

/**
 * The kinds of planned record: valid ones, poison with a key problem (malformed JSON, no key, a
 * key reused with another payload), and bad data ({@link BAD_KINDS}).
 */
export type StreamRecordKind = 'valid' | 'conflict' | 'malformed' | 'missing-key' | BadKind;

/**
 * Records a stream may legally carry that SQS cannot hold as they are: empty data, binary data,
 * data larger than the dead-letter queue's message size, and data whose whole dead letter is
 * within a byte or two of that size. Each is a permanent failure, dead-lettered losslessly.
 */
export const BAD_KINDS = ['empty', 'binary', 'oversize', 'boundary'] as const;

/** A kind of bad data. */
export type BadKind = (typeof BAD_KINDS)[number];

/** How a bad record's data is made. */
export type BadVariant =
  /** Kinesis, Kafka: no data at all (Kinesis accepts it, Kafka an empty value; an SQS body needs a character). */
  | 'empty'
  /** Kafka: a tombstone, a record without a value (`null`), as a compacted topic deletes a key with. */
  | 'tombstone'
  /** Kinesis, Kafka: a gzip of a JSON order (a CloudWatch Logs subscription, any compressing producer). */
  | 'gzip'
  /** Kinesis, Kafka: bytes that are not UTF-8. */
  | 'random-bytes'
  /** Kinesis, Kafka: UTF-8 text with characters an SQS body may not hold (NUL, U+0008, U+001F, U+FFFE, U+FFFF). */
  | 'control-text'
  /** Kinesis, Kafka: an order cut off in the middle (oversize, or sized to the boundary). */
  | 'truncated-json'
  /** Kinesis, Kafka, oversize: a JSON order without its `id`. */
  | 'no-key'
  /** Kinesis, Kafka, oversize: bytes that are not UTF-8. */
  | 'large-binary'
  /** The largest record of the source: 1 MiB of Kinesis data and partition key, a Kafka value of nearly `message.max.bytes`, or a change with two images of the largest item. */
  | 'largest'
  /** Table stream: a `MODIFY` change without its version, with two large images (oversize, or sized to the boundary). */
  | 'two-images';

/** What a seed runs. */
export interface StreamSeedOptions {
  readonly seed: number;
  readonly messages: number;
  readonly source: StreamSource;
  readonly mode: StreamMode;
  readonly bisectOnError: boolean;
  readonly parallelization: number;
  readonly instances: number;
  readonly inboxTable: string;
  readonly businessTable: string;
  readonly startMillis: number;
  /** Test hook: lets a test break the store's protocol on purpose to prove the oracle sees it. */
  readonly tamper?: (client: LocalClient) => void;
  /** Test hook: lets a test break the checkpoint on purpose (rewrites each batch response). */
  readonly tamperResponse?: (response: StreamBatchResponse) => StreamBatchResponse;
  /**
   * Test hook: lets a test break a Kafka handler's answer on purpose (rewrites each Kafka batch
   * response before it is translated to the stream's checkpoint).
   */
  readonly tamperKafkaResponse?: (response: KafkaBatchResponse) => KafkaBatchResponse;
  /**
   * Test hook: lets a test break the dead-letter writer on purpose. Rewrites each dead letter
   * before it is sent (the record's data at hand), or drops it (`undefined`) while the handler is
   * told it was sent.
   */
  readonly tamperDeadLetter?: (message: DeadLetterMessage, data: Uint8Array) => DeadLetterMessage | undefined;
  /**
   * The chance that an answered invocation's checkpoint is not stored (its batch comes again).
   * @default LOST_CHECKPOINT_CHANCE
   */
  readonly lostCheckpointChance?: number;
  /**
   * Test hook: the lane (0 to `parallelization` - 1) of the `position`th record written, in place
   * of its partition key's hash, so a test can spread one partition key over lanes on purpose.
   */
  readonly tamperLane?: (partitionKey: string, position: number) => number;
  /**
   * Test hook: the records of a batch the handler is given (the event source still checkpoints
   * the whole batch by its answer), so a test can lose records on purpose.
   */
  readonly tamperBatch?: (batch: StreamBatch<StreamMeta>) => readonly StreamEntry<StreamMeta>[];
}

/** The chance, per answered invocation with faults, that its checkpoint is not stored. */
export const LOST_CHECKPOINT_CHANCE = 0.04;

/** The modes of Kafka seeds, one after the other (seeds 5, 10, 15, ...). */
const KAFKA_MODES = ['atomic', 'entity', 'marker'] as const;

/**
 * The source, mode and mapping of a seed: Kinesis atomic, marker and entity, a DynamoDB table
 * stream in atomic mode (a projection), then a Kafka topic (atomic, entity, marker in turn);
 * bisect on two seeds of three; a parallelization factor of 2 on even seeds but Kafka's (Kafka has
 * no `ParallelizationFactor`).
 */
export function streamSeedProfile(
  seed: number,
): Pick<StreamSeedOptions, 'source' | 'mode' | 'bisectOnError' | 'parallelization'> {
  const profiles = [
    { source: 'kafka', mode: KAFKA_MODES[(Math.floor(seed / 5) + 2) % KAFKA_MODES.length]! },
    { source: 'kinesis', mode: 'atomic' },
    { source: 'kinesis', mode: 'marker' },
    { source: 'kinesis', mode: 'entity' },
    { source: 'dynamodb', mode: 'atomic' },
  ] as const;
  const profile = profiles[seed % profiles.length]!;
  return {
    ...profile,
    bisectOnError: seed % 3 !== 0,
    parallelization: seed % 2 === 0 && profile.source !== 'kafka' ? 2 : 1,
  };
}

/** The consumer name of a seed: every key of a seed is scoped by it, so seeds share tables. */
export function streamConsumerOf(seed: number, source: StreamSource, mode: StreamMode): string {
  return `rel-stream-s${seed}-${source}-${mode}`;
}

/** One write of a planned record to the stream (a producer's retry writes another). */
export interface PlannedWrite {
  /** Position in write order. */
  readonly position: number;
  readonly partitionKey: string;
  /**
   * The Kinesis data's (or Kafka value's) bytes as produced, or the JSON of the change as the table stream emits it
   * (`eventName`, `Keys`, `NewImage`, `OldImage`). Set once: a boundary record's data is sized
   * when its coordinates are known (`fill`).
   */
  data: Uint8Array;
}

/** The code every dead letter of a record must carry. */
export type ExpectedCode = 'MALFORMED_BODY' | 'MISSING_KEY' | 'PAYLOAD_MISMATCH';

/** One logical record: what the producer meant to write once. */
export interface PlannedStreamRecord {
  readonly index: number;
  readonly kind: StreamRecordKind;
  /** How a bad record's data is made. */
  readonly variant?: BadVariant;
  /**
   * A boundary record: how many bytes its whole dead letter (body and attributes, as SQS counts
   * them) is past the dead-letter queue's message size; at most 0, it must be sent whole.
   */
  readonly boundaryOffset?: number;
  /** A boundary record: its data with a filler of `length` characters, to size its dead letter. */
  readonly fill?: (length: number) => Uint8Array;
  /** The business key (`id`), absent for poison input without one. */
  readonly key?: string;
  /** The inbox record's (and the business item's) key, for keyed records. */
  readonly scopedKey?: string;
  readonly amount: number;
  /** Every delivery fails with a retry while the first pass lasts (a dependency is down). */
  readonly outage: boolean;
  /** The code every dead letter of the record must carry: always for poison, for a keyed record only when another payload won its key. */
  readonly expectedCode?: ExpectedCode;
  readonly writes: readonly PlannedWrite[];
  /** Table stream: the DynamoDB transaction the change was written in, with others (`t<n>`). */
  readonly transaction?: string;
}

/** True for a Kinesis or Kafka record whose data a producer serialises from an object (again on a retry). */
function isJsonOrder(kind: StreamRecordKind): boolean {
  return kind === 'valid' || kind === 'conflict' || kind === 'missing-key';
}

/** True for a record the oracle expects on the dead-letter queue whatever happens (not a keyed one). */
export function isPoison(plan: PlannedStreamRecord): boolean {
  return plan.kind !== 'valid' && plan.kind !== 'conflict';
}

/** The attribute values of a change image. */
type Image = Record<string, { S: string } | { N: string }>;

/** The change a table stream record carries, as planned (the JSON of a write's data). */
interface PlannedChange {
  readonly eventName?: 'INSERT' | 'MODIFY';
  readonly Keys: Image;
  readonly NewImage: Image;
  readonly OldImage?: Image;
}

/** The bad data of a source whose records are bytes (Kinesis data, a Kafka value). */
const PLANTED_BYTES: readonly (readonly [BadKind, BadVariant, number?])[] = [
  ['empty', 'empty'],
  ['binary', 'gzip'],
  ['binary', 'random-bytes'],
  ['binary', 'control-text'],
  ['oversize', 'truncated-json'],
  ['oversize', 'no-key'],
  ['oversize', 'large-binary'],
  ['oversize', 'largest'],
  ['boundary', 'truncated-json', 0],
  ['boundary', 'truncated-json', 1],
];

/** The bad records every seed carries at least once (when it has room), besides its share. */
const PLANTED: Readonly<Record<StreamSource, readonly (readonly [BadKind, BadVariant, number?])[]>> = {
  kinesis: PLANTED_BYTES,
  kafka: [...PLANTED_BYTES, ['empty', 'tombstone']],
  dynamodb: [
    ['oversize', 'two-images'],
    ['oversize', 'largest'],
    ['boundary', 'two-images', 0],
    ['boundary', 'two-images', 1],
  ],
};

/** ASCII filler of `length` characters. */
function filler(length: number): string {
  return 'an oversize note '.repeat(Math.ceil(length / 17)).slice(0, length);
}

/** `length` random bytes that are not UTF-8 (one of them is 0xFF, which UTF-8 never uses). */
function bytesNotUtf8(random: Random, length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let index = 0; index < length; index += 1) bytes[index] = random.int(256);
  bytes[random.int(length)] = 0xff;
  return bytes;
}

const utf8 = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'utf8'));

/**
 * The plan of a seed: about 82% valid records, 2% malformed data (Kinesis, Kafka; a table stream
 * cannot carry it, so there a change without its version instead), 2% without a key (no `id`, or
 * no version), 5% reusing an earlier key with another payload, 9% bad data (Kinesis, Kafka: 1.5% empty,
 * for Kafka an empty value or a tombstone, 4% binary, 2.5% oversize, 1% at the boundary; a table stream carries neither empty nor binary
 * data, so there 8% oversize changes and 1% at the boundary), and 2% of valid records behind an
 * outage; and one bad record of each variant (`PLANTED`) when the seed has room. 20% of records
 * are written twice by a producer retry, a few batches later; a third of those copies under
 * another partition key (the largest and the boundary records once: their size is their point).
 */
export function planStreamRecords(
  seed: number,
  count: number,
  consumer: string,
  source: StreamSource,
): PlannedStreamRecord[] {
  const random = createRandom(seed);
  const plans: PlannedStreamRecord[] = [];
  const partnerable: number[] = [];
  const limit = DEAD_LETTER_MAX_MESSAGE_BYTES;
  const planted = new Map<number, readonly [BadKind, BadVariant, number?]>();
  if (count >= 4 * PLANTED[source].length) {
    const slots = random.shuffle(Array.from({ length: count }, (_, index) => index));
    PLANTED[source].forEach((bad, index) => {
      planted.set(slots[index]!, bad);
    });
  }
  for (let index = 0; index < count; index += 1) {
    const roll = random.next();
    const amount = random.between(1, 1_000_000);
    let kind: StreamRecordKind =
      roll < 0.02
        ? 'malformed'
        : roll < 0.04
          ? 'missing-key'
          : roll < 0.09
            ? 'conflict'
            : roll < 0.105
              ? 'empty'
              : roll < 0.145
                ? 'binary'
                : roll < 0.17
                  ? 'oversize'
                  : roll < 0.18
                    ? 'boundary'
                    : 'valid';
    if (kind === 'malformed' && source === 'dynamodb') kind = 'missing-key';
    if ((kind === 'empty' || kind === 'binary') && source === 'dynamodb') kind = 'oversize';
    let variant: BadVariant | undefined =
      kind === 'empty'
        ? source === 'kafka'
          ? random.pick(['empty', 'tombstone'] as const)
          : 'empty'
        : kind === 'binary'
          ? random.pick(['gzip', 'random-bytes', 'control-text'] as const)
          : kind === 'oversize'
            ? source === 'dynamodb'
              ? 'two-images'
              : random.pick(['truncated-json', 'no-key', 'large-binary'] as const)
            : kind === 'boundary'
              ? source === 'dynamodb'
                ? 'two-images'
                : 'truncated-json'
              : undefined;
    let boundaryOffset = kind === 'boundary' ? random.between(-2, 2) : undefined;
    const plant = planted.get(index);
    if (plant !== undefined) [kind, variant, boundaryOffset] = plant;
    let partner: PlannedStreamRecord | undefined;
    if (kind === 'conflict') {
      const pick =
        partnerable.length > 0 ? partnerable.splice(random.int(partnerable.length), 1)[0] : undefined;
      partner = pick === undefined ? undefined : plans[pick];
      if (partner === undefined) kind = 'valid';
    }
    const key = partner?.key ?? `k${index}`;
    const outage = kind === 'valid' && random.chance(0.02);
    const note = `order ${index} of seed ${seed}`;
    const partitionKey = `customer-${random.int(24)}`;
    const change = (image: Image, oldImage?: Image): Uint8Array =>
      utf8(
        JSON.stringify({
          ...(oldImage === undefined ? {} : { eventName: 'MODIFY' }),
          Keys: { pk: { S: key } },
          NewImage: image,
          ...(oldImage === undefined ? {} : { OldImage: oldImage }),
        } satisfies PlannedChange),
      );
    /** A change without its version (so `MISSING_KEY`) whose images carry `length` filler characters between them. */
    const twoImages = (length: number): Uint8Array => {
      const image = (part: number): Image => ({
        pk: { S: key },
        amount: { N: String(amount) },
        note: { S: filler(part) },
      });
      return change(image(length - Math.floor(length / 2)), image(Math.floor(length / 2)));
    };
    const truncatedJson = (length: number): Uint8Array =>
      utf8(`{"id":"${key}","amount":${amount},"note":"${filler(length)}`);
    const fill = kind === 'boundary' ? (variant === 'two-images' ? twoImages : truncatedJson) : undefined;
    const dataOf = (): Uint8Array => {
      switch (variant) {
        case 'empty':
        case 'tombstone':
          return new Uint8Array(0);
        case 'gzip':
          return new Uint8Array(gzipSync(JSON.stringify({ id: key, amount, note })));
        case 'random-bytes':
          return bytesNotUtf8(random, random.between(1, 200));
        case 'control-text':
          // Raw control characters inside a JSON string: not JSON, but UTF-8 text.
          return utf8(`{"id":"${key}","note":"\u0000\u0008\u001f \ufffe\uffff ${note} \u{1f600}"}`);
        case 'truncated-json':
          return truncatedJson(kind === 'boundary' ? limit / 2 : random.between(limit, 4 * limit));
        case 'no-key':
          return utf8(JSON.stringify({ amount, note: filler(random.between(limit, 4 * limit)) }));
        case 'large-binary':
          return bytesNotUtf8(random, random.between(limit + 1, 4 * limit));
        case 'largest':
          return source === 'kinesis'
            ? bytesNotUtf8(random, KINESIS_MAX_RECORD_BYTES - Buffer.byteLength(partitionKey))
            : source === 'kafka'
              ? // The batch's own header (61 bytes) and the record's fields and key take the rest.
                bytesNotUtf8(random, KAFKA_MAX_RECORD_BATCH_BYTES - 256)
              : // Each image one item of the largest size: the note, less the other names and values.
                twoImages(2 * (DYNAMODB_MAX_ITEM_BYTES - 64));
        case 'two-images':
          return twoImages(kind === 'boundary' ? limit / 2 : random.between(limit, 4 * limit));
      }
      if (source === 'dynamodb') {
        const image: Image = { pk: { S: key }, amount: { N: String(amount) }, note: { S: note } };
        if (kind !== 'missing-key') image[VERSION] = { N: '1' };
        return change(image);
      }
      if (kind === 'malformed') return utf8(`{"id":"${key}","amount":${amount},"note":"truncated`);
      const payload = kind === 'missing-key' ? { amount, note } : { id: key, amount, note };
      return utf8(serialise(payload, random));
    };
    const writes: PlannedWrite[] = [{ position: index, partitionKey, data: dataOf() }];
    if (kind !== 'boundary' && variant !== 'largest' && random.chance(0.2)) {
      writes.push({
        position: index + random.between(1, 3 * BATCH_SIZE) + 0.5,
        partitionKey: random.chance(1 / 3) ? `customer-${random.int(24)}` : partitionKey,
        // A Kinesis or Kafka producer serialises again; a table stream emits the same change.
        data: source !== 'dynamodb' && isJsonOrder(kind) ? dataOf() : writes[0]!.data,
      });
    }
    const keyed = kind === 'valid' || kind === 'conflict';
    const dedupKey = source === 'dynamodb' ? toDedupKey([key, 'INSERT', '1']) : key;
    plans.push({
      index,
      kind,
      ...(variant === undefined ? {} : { variant }),
      ...(boundaryOffset === undefined ? {} : { boundaryOffset }),
      ...(fill === undefined ? {} : { fill }),
      ...(keyed ? { key, scopedKey: scopeKey(consumer, dedupKey) } : {}),
      amount,
      outage,
      expectedCode: expectedCodeOf(source, kind, variant),
      writes,
    });
    if (kind === 'valid' && !outage) partnerable.push(index);
  }
  return source === 'dynamodb' ? inTransactions(seed, plans) : plans;
}

/** The share of a table stream's keyed changes that start a transaction, and its size. */
const TRANSACTION_CHANCE = 0.12;
const TRANSACTION_MIN_ITEMS = 2;
const TRANSACTION_MAX_ITEMS = 4;

/**
 * A table stream's changes written in DynamoDB transactions of two to four items, each spread over
 * the stream with others in between: "stream records from the same transaction may appear at
 * different times and can be interleaved with the records of other transactions; stream consumers
 * should not assume transactional atomicity or ordering" (paraphrased from
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html). A
 * transaction's k-th change moves `k * stride` positions on (a stride of 2 to 7), so the changes
 * of one transaction fall into batches of their own and those of the next one land between them.
 * Drawn from the seed and the index alone (`chanceOf`), so the rest of the plan is unchanged.
 */
function inTransactions(seed: number, plans: readonly PlannedStreamRecord[]): PlannedStreamRecord[] {
  const grouped = [...plans];
  let count = 0;
  for (let index = 0; index < grouped.length; index += 1) {
    const start = grouped[index]!;
    if (
      start.scopedKey === undefined ||
      start.transaction !== undefined ||
      chanceOf(seed, 'transaction', index) >= TRANSACTION_CHANCE
    ) {
      continue;
    }
    const size =
      TRANSACTION_MIN_ITEMS +
      Math.floor(
        chanceOf(seed, 'transaction size', index) * (TRANSACTION_MAX_ITEMS - TRANSACTION_MIN_ITEMS + 1),
      );
    const stride = 2 + Math.floor(chanceOf(seed, 'transaction stride', index) * 6);
    const members: number[] = [];
    for (let next = index; next < grouped.length && members.length < size; next += 1) {
      const plan = grouped[next]!;
      if (plan.scopedKey !== undefined && plan.transaction === undefined) members.push(next);
    }
    if (members.length < TRANSACTION_MIN_ITEMS) break;
    const transaction = `t${++count}`;
    members.forEach((member, k) => {
      const plan = grouped[member]!;
      const shift = index + k * stride + 0.125 - plan.writes[0]!.position;
      grouped[member] = {
        ...plan,
        transaction,
        writes: plan.writes.map((write) => ({ ...write, position: write.position + shift })),
      };
    });
  }
  return grouped;
}

/**
 * The code of a record's dead letters: a change without its version, an order without its key,
 * data that is not a JSON order, or (a keyed record, when another payload won its key) a mismatch.
 */
function expectedCodeOf(
  source: StreamSource,
  kind: StreamRecordKind,
  variant: BadVariant | undefined,
): ExpectedCode {
  if (kind === 'valid' || kind === 'conflict') return 'PAYLOAD_MISMATCH';
  if (source === 'dynamodb' || kind === 'missing-key' || variant === 'no-key') return 'MISSING_KEY';
  return 'MALFORMED_BODY';
}

function serialise(payload: Record<string, unknown>, random: Random): string {
  // Keys in any order, as a producer's retry may serialise them: the fingerprint is canonical.
  return JSON.stringify(Object.fromEntries(random.shuffle(Object.entries(payload))));
}

/** Faults of one delivered record. */
type RecordFault =
  | 'throttle'
  | 'conflict'
  | 'lost-response'
  | 'lost-response-retried'
  | 'crash-before-claim'
  | 'crash-after-claim'
  | 'crash-after-outcome'
  | 'crash-during-effect'
  | 'dependency-fails';

const RECORD_FAULTS: readonly (readonly [RecordFault, number])[] = [
  ['throttle', 0.04],
  ['conflict', 0.03],
  ['lost-response', 0.02],
  ['lost-response-retried', 0.03],
  ['crash-before-claim', 0.008],
  ['crash-after-claim', 0.008],
  ['crash-after-outcome', 0.008],
  // Marker mode: the effect reached DynamoDB, then the process died.
  ['crash-during-effect', 0.01],
  ['dependency-fails', 0.03],
];

/** Crash points, as counted in the report. */
export const STREAM_CRASH_POINTS = [
  'before the claim',
  'after the claim',
  'after the outcome, before the checkpoint',
  'during the effect',
  'while building the batch response',
] as const;

/** A crash point. */
export type StreamCrashPoint = (typeof STREAM_CRASH_POINTS)[number];

/** What the stream carries next to each record. */
export interface StreamMeta {
  readonly plan: PlannedStreamRecord;
  /** 0 for the producer's first write, 1 for its retry. */
  readonly write: number;
  /**
   * The record's event id (`<shard id>:<sequence number>` for Kinesis, `<topic>-<partition>:<offset>`
   * for Kafka, as its handler names a message; a fresh id per emission for a table stream).
   */
  readonly eventId: string;
}

/** One invocation's record of a delivered record: what it logged, and whether it ran. */
interface DeliveryLog {
  readonly eventId: string;
  readonly sequenceNumber: string;
  outcome?: string;
  code?: string;
  /** For a mismatch or permanent failure: whether the dead letter was sent. */
  deadLetter?: string;
}

/** True when the logged outcome lets the event source move past the record. */
function isAcknowledged(log: DeliveryLog): boolean {
  if (log.outcome === 'processed' || log.outcome === 'duplicate' || log.outcome === 'stale') return true;
  return (log.outcome === 'mismatch' || log.outcome === 'permanent') && log.deadLetter === 'sent';
}

/** One delivery of a keyed record, timed in real time to find concurrent deliveries of a key. */
export interface DeliveryTime {
  readonly invocation: number;
  readonly startedAt: number;
  endedAt: number;
}

/** Everything a seed observed, for the oracle. */
export interface StreamSimulationResult {
  readonly options: StreamSeedOptions;
  readonly plans: readonly PlannedStreamRecord[];
  readonly stream: SimulatedStream<StreamMeta>;
  /** The fate of every record in the first pass (before the replay from `TRIM_HORIZON`). */
  readonly firstPass: ReadonlyMap<string, EntryFate>;
  /** The last outcome logged for each event id in the first pass, by an invocation that did not crash. */
  readonly firstPassOutcomes: ReadonlyMap<string, string>;
  /** The on-failure destination's records of the first pass. */
  readonly firstPassOnFailure: number;
  /** The stream's ARN, as every delivered record names it. */
  readonly streamArn: string;
  /** What the dead-letter queue held at the end, in the order it gave the messages back. */
  readonly deadLetters: readonly ReceivedDeadLetter[];
  /** Messages sent to the dead-letter queue (its `SendMessage` answered), to compare with what it held. */
  readonly deadLettersSent: number;
  /** Every `SendMessage` to the dead-letter queue that failed, injected failures aside (a refusal of the conformance layer, or of the emulator). */
  readonly deadLetterSendErrors: readonly string[];
  /** Dead letters sent whose `SendMessage` response was lost (the record is retried, so sent again). */
  readonly deadLetterLostResponses: number;
  /**
   * Deliveries of a bad record that were dead-lettered while a later record of the same batch
   * still ran in that invocation (the shard moved on past it at once).
   */
  readonly movedOnPastBadRecord: number;
  /** Deliveries per event id. */
  readonly deliveries: ReadonlyMap<string, number>;
  /** Every delivery of a keyed record: its invocation and when it ran (real time), by scoped key. */
  readonly deliveryTimes: ReadonlyMap<string, readonly DeliveryTime[]>;
  /** Successful entity puts seen on the wire, by key (entity mode's effect). */
  readonly entityWrites: ReadonlyMap<string, number>;
  /** Marker mode: keys left with a marker and no effect by one invocation (at-most-once by design). */
  readonly markerGaps: ReadonlySet<string>;
  readonly crashes: Readonly<Record<StreamCrashPoint, number>>;
  readonly lostResponses: number;
  /** Claims answered with an injected `ThrottlingException`, and with a transaction conflict. */
  readonly throttles: number;
  readonly conflicts: number;
  /** Invocations that started while another invocation ran a batch of the same shard (another lane). */
  readonly concurrentShardBatches: number;
  /** Answered invocations whose checkpoint was not stored, and the records they brought again. */
  readonly lostCheckpoints: number;
  readonly redeliveredAfterLostCheckpoint: number;
  readonly invocations: number;
  /** The IAM actions the requests sent need, by table, to compare with the construct's grants. */
  readonly actions: ReadonlyMap<string, ReadonlySet<string>>;
  readonly runtimeViolations: readonly string[];
  /**
   * What happened, in order (`history.ts`): every record's input, deliveries, the effects
   * DynamoDB applied (with the partition key and sequence number of the record that applied
   * them), dead letters, records discarded after `MaximumRetryAttempts` and marker-mode gaps.
   */
  readonly history: readonly HistoryEntry[];
}

/** A message of the dead-letter queue, as `ReceiveMessage` returned it. */
export interface ReceivedDeadLetter {
  readonly body: string;
  readonly attributes: Readonly<Record<string, MessageAttributeValue>>;
}

interface Instance {
  readonly index: number;
  readonly skewMillis: number;
  readonly client: LocalClient;
  handler: (entries: readonly StreamEntry<StreamMeta>[]) => Promise<StreamBatchResponse>;
}

interface Invocation {
  readonly id: number;
  readonly instance: Instance;
  readonly batch: StreamBatch<StreamMeta>;
  readonly startVirtual: number;
  readonly startReal: number;
  readonly faults: boolean;
  readonly faultsByKey: Map<string, (RecordFault | undefined)[]>;
  readonly claims: Map<string, number>;
  /** The delivery each record key of the batch belongs to (its event id and delivery count), to draw its update faults. */
  readonly deliveryByKey: Map<string, { readonly eventId: string; readonly delivery: number }>;
  /** How often each event id of the batch had been delivered before, this delivery included. */
  readonly deliveryOf: Map<string, number>;
  readonly outcomeCrash: Set<string>;
  readonly responseCrash: boolean;
  readonly logs: Map<string, DeliveryLog>;
  readonly markerWritten: Map<string, Set<string>>;
  readonly effectWritten: Set<string>;
  readonly markerReleased: Map<string, Set<string>>;
  /** The event id of the record whose effect each record key's next business write carries. */
  readonly effectOf: Map<string, string>;
  crashed: boolean;
}

const invocationContext = new AsyncLocalStorage<Invocation>();

/** A Lambda record of any source of the simulation. */
export type SourceRecord = KinesisStreamRecord | DynamoDbStreamRecord | KafkaRecord;

/** The partition number of a Kafka seed's shard (`orders-1` is partition 1). */
export function kafkaPartitionOf(shardId: string): number {
  return Number(shardId.slice(shardId.lastIndexOf('-') + 1));
}

/** The header list of a Kafka record as Lambda delivers it: each value's bytes as numbers. */
function kafkaHeaderOf(name: string, value: string): KafkaRecord['headers'] {
  return [{ [name]: [...Buffer.from(value, 'utf8')] }];
}

/** The Lambda record of a stream entry, as the event source mapping delivers it (with `data`, when given, instead of the planned data). */
export function lambdaRecordOf(
  source: StreamSource,
  entry: StreamEntry<StreamMeta>,
  streamArn: string,
  data: Uint8Array = entry.meta.plan.writes[entry.meta.write]!.data,
): SourceRecord {
  if (source === 'kafka') {
    // The producer keys a record by its partition key (which picked the partition) and puts the
    // order's id, where it has one, in a header.
    const { key } = entry.meta.plan;
    return {
      topic: KAFKA_TOPIC,
      partition: kafkaPartitionOf(entry.shardId),
      offset: entry.offset,
      timestamp: 1767225600500,
      timestampType: 'CREATE_TIME',
      key: Buffer.from(entry.partitionKey, 'utf8').toString('base64'),
      value: entry.meta.plan.variant === 'tombstone' ? null : Buffer.from(data).toString('base64'),
      headers: key === undefined ? [] : kafkaHeaderOf(KAFKA_KEY_HEADER, key),
    };
  }
  if (source === 'kinesis') {
    return {
      kinesis: {
        kinesisSchemaVersion: '1.0',
        partitionKey: entry.partitionKey,
        sequenceNumber: entry.sequenceNumber,
        data: Buffer.from(data).toString('base64'),
        approximateArrivalTimestamp: 1767225600.5,
      },
      eventSource: 'aws:kinesis',
      eventVersion: '1.0',
      eventID: entry.meta.eventId,
      eventName: 'aws:kinesis:record',
      awsRegion: 'us-east-1',
      eventSourceARN: streamArn,
    };
  }
  const change = JSON.parse(Buffer.from(data).toString('utf8')) as PlannedChange;
  return {
    eventID: entry.meta.eventId,
    eventName: change.eventName ?? 'INSERT',
    eventVersion: '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: 'us-east-1',
    dynamodb: {
      ApproximateCreationDateTime: 1767225600,
      Keys: change.Keys,
      NewImage: change.NewImage,
      ...(change.OldImage === undefined ? {} : { OldImage: change.OldImage }),
      SequenceNumber: entry.sequenceNumber,
      SizeBytes: data.byteLength,
      StreamViewType: 'NEW_AND_OLD_IMAGES',
    },
    eventSourceARN: streamArn,
  };
}

/** Runs one seed to the end (both passes drained) and returns what it saw. */
export async function runStreamSimulation(options: StreamSeedOptions): Promise<StreamSimulationResult> {
  const { seed, source, mode, inboxTable, businessTable } = options;
  const consumer = streamConsumerOf(seed, source, mode);
  const plans = planStreamRecords(seed, options.messages, consumer, source);
  if (source === 'kafka' && options.parallelization !== 1) {
    throw new Error('A Kafka event source mapping has no ParallelizationFactor: run a Kafka seed with 1');
  }
  const streamArn = streamArnOf(source, seed);
  const stream = createSimulatedStream<StreamMeta>({
    // A table stream on the emulator has one shard; a Kinesis stream and a Kafka topic here two.
    shardCount: source === 'dynamodb' ? 1 : 2,
    ...(source === 'kafka' ? { shardIdOf: (index: number) => `${KAFKA_TOPIC}-${index}` } : {}),
    batchSize: BATCH_SIZE,
    maxRetryAttempts: MAX_RETRY_ATTEMPTS,
    bisectOnError: options.bisectOnError,
    parallelization: options.parallelization,
    ...(options.tamperLane === undefined ? {} : { laneOf: options.tamperLane }),
  });
  const writes = plans
    .flatMap((plan) => plan.writes.map((write, index) => ({ plan, write, index })))
    .sort((a, b) => a.write.position - b.write.position);
  let emission = 0;
  for (const { plan, write, index } of writes) {
    // The sequence number is known once the record landed; a table stream's event id is fresh per emission.
    const eventIdOf = (entry: Pick<StreamEntry<unknown>, 'shardId' | 'sequenceNumber' | 'offset'>) =>
      source === 'kinesis'
        ? `${entry.shardId}:${entry.sequenceNumber}`
        : source === 'kafka'
          ? `${entry.shardId}:${entry.offset}`
          : `s${seed}-event-${++emission}`;
    const placeholder = { plan, write: index, eventId: '' };
    const entry = stream.put(write.partitionKey, placeholder);
    (entry.meta as { eventId: string }).eventId = eventIdOf(entry);
  }

  const history = createHistory();
  const messageOf = (plan: PlannedStreamRecord) => `m${plan.index}`;
  for (const plan of plans) {
    history.append({
      kind: 'input',
      message: messageOf(plan),
      keys: plan.scopedKey === undefined ? [] : [plan.scopedKey],
      amount: plan.amount,
    });
  }

  let phase: 1 | 2 = 1;
  const random = createRandom(seed ^ 0x57ea);
  let movedOnPastBadRecord = 0;
  const deliveries = new Map<string, number>();
  const deliveryTimes = new Map<string, DeliveryTime[]>();
  const lastOutcome = new Map<string, string>();
  const entityWrites = new Map<string, number>();
  const markerGaps = new Set<string>();
  const crashes = Object.fromEntries(STREAM_CRASH_POINTS.map((point) => [point, 0])) as Record<
    StreamCrashPoint,
    number
  >;
  let lostResponses = 0;
  let throttles = 0;
  let conflicts = 0;
  let concurrentShardBatches = 0;
  let redeliveredAfterLostCheckpoint = 0;
  /** Records a lost checkpoint brings again after they were processed, by event id: the invocation that processed them. */
  const processedBeforeLostCheckpoint = new Map<string, number>();
  /** Invocations running now, by shard. */
  const runningByShard = new Map<string, Set<Invocation>>();
  const actions = new Map<string, Set<string>>();
  const runtimeViolations: string[] = [];
  let invocationCount = 0;

  const current = (instance: Instance): Invocation | undefined => {
    const invocation = invocationContext.getStore();
    return invocation?.instance === instance ? invocation : undefined;
  };
  const crash = (invocation: Invocation, point: StreamCrashPoint): void => {
    if (invocation.crashed) return;
    invocation.crashed = true;
    crashes[point] += 1;
  };

  const controllerOf = (instance: Instance): FaultController => ({
    isCrashed: () => current(instance)?.crashed ?? false,
    decide(request: DynamoRequest): RequestFault | undefined {
      recordActions(actions, request);
      const invocation = current(instance);
      const role = roleOf(request);
      if (invocation === undefined || !invocation.faults || role.role === 'other') return undefined;
      const claim = invocation.claims.get(role.pk) ?? 0;
      if (role.role === 'claim') invocation.claims.set(role.pk, claim + 1);
      const fault = invocation.faultsByKey.get(role.pk)?.[role.role === 'claim' ? claim : claim - 1];
      if (role.role === 'claim') {
        if (losesResponse(fault)) lostResponses += 1;
        if (fault === 'throttle') throttles += 1;
        if (fault === 'conflict') conflicts += 1;
        return claimRequestFault(fault, { before: 'before the claim', after: 'after the claim' });
      }
      if (role.tableName === businessTable && fault === 'crash-during-effect') {
        return { kind: 'crash-after', label: 'during the effect' };
      }
      // An inbox update (a marker's release) applied, its response lost, the SDK's retry sent at once.
      const delivery = invocation.deliveryByKey.get(role.pk);
      const roll =
        delivery === undefined
          ? 1
          : chanceOf(seed, 'update', role.update ?? '', delivery.eventId, delivery.delivery);
      if (role.update !== undefined && roll < 0.2) {
        lostResponses += 1;
        return { kind: 'lost-response-retried' };
      }
      return undefined;
    },
    crash(label) {
      const invocation = current(instance);
      if (invocation !== undefined) crash(invocation, label as StreamCrashPoint);
    },
    onServerResponse(request, statusCode, repeated, sent) {
      const invocation = current(instance);
      const role = roleOf(request);
      if (statusCode !== 200 || repeated || role.role === 'other') return;
      for (const write of writesOn(request.operation, sent, businessTable)) {
        const eventId = invocation?.effectOf.get(write.pk);
        const entry = eventId === undefined ? undefined : entryOf.get(eventId);
        history.append({
          kind: 'applied',
          key: write.pk,
          amount: Number(write.values.amount ?? write.values[':amount']),
          ...(entry === undefined
            ? {}
            : {
                group: entry.partitionKey,
                sequence: entry.sequenceNumber,
                message: messageOf(entry.meta.plan),
              }),
        });
      }
      if (role.role === 'claim' && mode === 'entity' && role.tableName === businessTable) {
        entityWrites.set(role.pk, (entityWrites.get(role.pk) ?? 0) + 1);
      }
      if (invocation === undefined || mode !== 'marker') return;
      if (role.role === 'claim') {
        addOwner(invocation.markerWritten, role.pk, (request.input.Item as { owner?: unknown }).owner);
      } else if (role.tableName === businessTable) {
        invocation.effectWritten.add(role.pk);
      } else if (role.update === 'release') {
        const values = request.input.ExpressionAttributeValues as Record<string, unknown> | undefined;
        addOwner(invocation.markerReleased, role.pk, values?.[':owner']);
      }
    },
  });

  const loggerOf = (instance: Instance): Logger => ({
    log(entry: LogEntry) {
      const invocation = current(instance);
      if (invocation === undefined || invocation.crashed) return;
      const { messageId } = entry;
      if (typeof messageId !== 'string' || typeof entry.outcome !== 'string') return;
      const log = invocation.logs.get(messageId);
      if (log === undefined) {
        runtimeViolations.push(
          `invocation ${invocation.id}: an outcome logged for ${messageId}, not in its batch`,
        );
        return;
      }
      log.outcome = entry.outcome;
      lastOutcome.set(messageId, entry.outcome);
      if (typeof entry.code === 'string') log.code = entry.code;
      if (typeof entry.deadLetter === 'string') log.deadLetter = entry.deadLetter;
      if (invocation.outcomeCrash.has(messageId)) {
        crash(invocation, 'after the outcome, before the checkpoint');
        throw new SimulatedCrash('crashed after the outcome was decided');
      }
    },
  });

  const metricsOf = (instance: Instance): MetricsSink =>
    createCrashingMetrics({
      current: () => current(instance),
      crash: (invocation) => crash(invocation, 'while building the batch response'),
    });

  // The dead-letter queue: a real queue on the emulator, reached through the product's SQS sender
  // and the SQS conformance layer, which refuses what SQS refuses (the emulator takes any size).
  const sqs = new SQSClient({ ...awsConfig(), maxAttempts: 1 });
  const queueUrl = await createDeadLetterQueue(sqs, seed);
  const conforming = createConformingSqsClient(sqs, {
    queues: { [queueUrl]: { maximumMessageSize: DEAD_LETTER_MAX_MESSAGE_BYTES } },
  });
  const deadLetterSendErrors: string[] = [];
  const queueSender = createSqsDeadLetterSender({
    queueUrl,
    client: {
      async send(command: SendMessageCommand) {
        try {
          return await conforming.send(command);
        } catch (error) {
          const record = command.input.MessageAttributes?.[DEAD_LETTER_ATTRIBUTES.sourceMessageId];
          deadLetterSendErrors.push(
            `${record?.StringValue}: ${(error as Error).name}: ${(error as Error).message}`,
          );
          throw error;
        }
      },
    } as unknown as SQSClient,
  });
  const entryOf = new Map(stream.entries.map((entry) => [entry.meta.eventId, entry]));
  let deadLettersSent = 0;
  let deadLetterLostResponses = 0;

  /**
   * The dead-letter sender of an instance: a crashed invocation's send is refused; in an
   * invocation with faults a send fails one time in ten (drawn per record and delivery), and one
   * in thirty reaches the queue but its response is lost (the record is retried, so sent again).
   */
  const senderOf = (instance: Instance): DeadLetterSender => ({
    async send(message) {
      const invocation = current(instance);
      if (invocation?.crashed) throw new SimulatedCrash('dead-letter send refused: the invocation crashed');
      const delivery = invocation?.deliveryOf.get(message.sourceMessageId) ?? 0;
      const roll = invocation?.faults ? chanceOf(seed, 'dead-letter', message.sourceMessageId, delivery) : 1;
      if (roll < 0.1) throw new Error('SendMessage to the dead-letter queue failed (injected)');
      const entry = entryOf.get(message.sourceMessageId);
      const data = entry === undefined ? new Uint8Array() : entry.meta.plan.writes[entry.meta.write]!.data;
      const sent = options.tamperDeadLetter === undefined ? message : options.tamperDeadLetter(message, data);
      if (sent === undefined) return;
      await queueSender.send(sent);
      deadLettersSent += 1;
      if (entry !== undefined) {
        history.append({
          kind: 'dead-lettered',
          message: messageOf(entry.meta.plan),
          code: sent.code,
          reason: sent.reason,
        });
      }
      if (roll < 0.133) {
        deadLetterLostResponses += 1;
        throw new Error('The response of SendMessage to the dead-letter queue was lost (injected)');
      }
    },
  });

  const clockOf = (instance: Instance) => (): number => {
    const invocation = current(instance);
    const base = invocation?.startVirtual ?? options.startMillis + invocationCount * 1000;
    const elapsed = invocation === undefined ? 0 : performance.now() - invocation.startReal;
    return Math.floor(base + elapsed) + instance.skewMillis;
  };

  const planOf = (eventId: string, instance: Instance): PlannedStreamRecord | undefined =>
    current(instance)?.batch.entries.find((entry) => entry.meta.eventId === eventId)?.meta.plan;
  /** The dependency of an outage record is down while the first pass lasts. */
  const failInOutage = (instance: Instance, eventId: string): void => {
    if (phase === 1 && planOf(eventId, instance)?.outage === true) {
      throw new Error('A downstream dependency is down (injected outage)');
    }
    const invocation = current(instance);
    const entry = invocation?.batch.entries.find((candidate) => candidate.meta.eventId === eventId);
    const pk = entry?.meta.plan.scopedKey;
    if (invocation === undefined || pk === undefined) return;
    const claim = (invocation.claims.get(pk) ?? 1) - 1;
    if (invocation.faults && invocation.faultsByKey.get(pk)?.[claim] === 'dependency-fails') {
      throw new Error('A downstream dependency failed (injected)');
    }
  };
  const effectUpdate = (scopedKey: string, amount: number) => ({
    TableName: businessTable,
    Key: { pk: scopedKey },
    UpdateExpression: 'ADD #effects :one SET #amount = :amount',
    ExpressionAttributeNames: { '#effects': 'effects', '#amount': 'amount' },
    ExpressionAttributeValues: { ':one': 1, ':amount': amount },
  });

  const amountOf = (body: Body | DynamoDbChange): number =>
    'newImage' in body ? Number(body.newImage?.amount) : (body as Body).amount;

  const instances: Instance[] = Array.from({ length: options.instances }, (_, index) => {
    // Half the instances let the SDK retry once (a lost response then meets its own claim).
    const client = createLocalClient({ maxAttempts: index % 2 === 0 ? 1 : 2 });
    options.tamper?.(client);
    return {
      index,
      skewMillis: random.between(-MAX_SKEW_MILLIS, MAX_SKEW_MILLIS),
      client,
      handler: undefined as never,
    };
  });
  for (const instance of instances) {
    attachFaultInjection(instance.client.document, controllerOf(instance));
    const common = {
      consumer,
      client: instance.client.document,
      tableName: inboxTable,
      clock: clockOf(instance),
      ttlSeconds: TTL_SECONDS,
      logger: loggerOf(instance),
      logLevel: 'debug' as const,
      metrics: metricsOf(instance),
      deadLetterSender: senderOf(instance),
      deadLetterMaxMessageBytes: DEAD_LETTER_MAX_MESSAGE_BYTES,
    } satisfies Partial<CommonHandlerOptions>;
    const modeOf = () =>
      mode === 'atomic'
        ? atomic<Body & DynamoDbChange>((message, unitOfWork) => {
            failInOutage(instance, message.messageId);
            current(instance)?.effectOf.set(message.scopedKey, message.messageId);
            unitOfWork.update(effectUpdate(message.scopedKey, amountOf(message.body)));
          })
        : mode === 'marker'
          ? marker<Body & DynamoDbChange>(async (message) => {
              failInOutage(instance, message.messageId);
              current(instance)?.effectOf.set(message.scopedKey, message.messageId);
              await instance.client.document.send(
                new UpdateCommand(effectUpdate(message.scopedKey, amountOf(message.body))),
              );
            })
          : entity<Body & DynamoDbChange>((message) => {
              failInOutage(instance, message.messageId);
              current(instance)?.effectOf.set(message.scopedKey, message.messageId);
              return {
                tableName: businessTable,
                keyAttribute: 'pk',
                item: { pk: message.scopedKey, amount: amountOf(message.body) },
              };
            });
    const handler = createSourceHandler(source, streamArn, { ...common, mode: modeOf() });
    instance.handler = async (entries) => {
      const response = await handler(entries.map((entry) => lambdaRecordOf(source, entry, streamArn)));
      if (!isKafkaResponse(source, response)) return response;
      return streamCheckpointOf(options.tamperKafkaResponse?.(response) ?? response, entries);
    };
  }

  // A boundary record's data is sized once its coordinates are known: its whole dead letter must
  // be `boundaryOffset` bytes past the queue's message size, as SQS counts it.
  const boundaries = stream.entries.filter((entry) => entry.meta.plan.kind === 'boundary');
  if (boundaries.length > 0) {
    const probe = createLocalClient();
    try {
      const measure = createDeadLetterProbe(source, streamArn, {
        consumer,
        client: probe.document,
        tableName: inboxTable,
        ttlSeconds: TTL_SECONDS,
        clock: () => options.startMillis,
        logger: { log() {} },
        metrics: { publish() {} },
      });
      for (const entry of boundaries) {
        entry.meta.plan.writes[entry.meta.write]!.data = await sizedToBoundary(entry.meta.plan, (data) =>
          measure(lambdaRecordOf(source, entry, streamArn, data)),
        );
      }
    } finally {
      probe.raw.destroy();
    }
  }

  const recordFaultOf = (eventId: string, delivery: number): RecordFault | undefined => {
    const fault = drawFault(RECORD_FAULTS, chanceOf(seed, 'record', eventId, delivery));
    return fault === 'crash-during-effect' && mode !== 'marker' ? undefined : fault;
  };

  /** Tells the stream how a batch ended; the records of a batch it discards lose their order. */
  const complete = (batch: StreamBatch<StreamMeta>, result: BatchResult): void => {
    const before = stream.onFailure.length;
    stream.complete(batch, result);
    for (const report of stream.onFailure.slice(before)) {
      for (const entry of stream.entries) {
        if (
          entry.shardId === report.shardId &&
          entry.sequenceNumber >= report.startSequenceNumber &&
          entry.sequenceNumber <= report.endSequenceNumber
        ) {
          history.append({
            kind: 'discarded',
            message: messageOf(entry.meta.plan),
            why: `${entry.meta.eventId} discarded after MaximumRetryAttempts`,
          });
        }
      }
    }
  };

  /** Runs one batch on `instance` and tells the stream how it ended. */
  const invoke = async (instance: Instance, batch: StreamBatch<StreamMeta>): Promise<void> => {
    const faults = batch.retry < FAULT_FREE_FROM_RETRY;
    const first = batch.entries[0]!;
    const invocationRoll = chanceOf(
      seed,
      'invocation',
      first.meta.eventId,
      deliveries.get(first.meta.eventId) ?? 0,
    );
    const invocation: Invocation = {
      id: ++invocationCount,
      instance,
      batch,
      startVirtual: options.startMillis + invocationCount * 1000,
      startReal: performance.now(),
      faults,
      faultsByKey: new Map(),
      claims: new Map(),
      deliveryByKey: new Map(),
      deliveryOf: new Map(),
      outcomeCrash: new Set(),
      responseCrash: faults && invocationRoll < 0.03,
      logs: new Map(),
      markerWritten: new Map(),
      effectWritten: new Set(),
      markerReleased: new Map(),
      effectOf: new Map(),
      crashed: false,
    };
    // Another lane of the shard runs a batch now (a parallelization factor above 1): two
    // instances on one shard. Order is kept per partition key, so none may be in both.
    const shardRuns = runningByShard.get(batch.shardId) ?? new Set<Invocation>();
    runningByShard.set(batch.shardId, shardRuns);
    if (shardRuns.size > 0) concurrentShardBatches += 1;
    const partitionKeys = new Set(batch.entries.map((entry) => entry.partitionKey));
    for (const other of shardRuns) {
      const shared = other.batch.entries.find((entry) => partitionKeys.has(entry.partitionKey));
      if (shared !== undefined) {
        runtimeViolations.push(
          `${batch.shardId}: partition key ${shared.partitionKey} in two batches at once (invocation ${other.id} on ${other.batch.lane}, ${invocation.id} on ${batch.lane}): its order is lost`,
        );
      }
    }
    shardRuns.add(invocation);
    const delivered = options.tamperBatch?.(batch) ?? batch.entries;
    const timed: DeliveryTime[] = [];
    for (const entry of delivered) {
      const { eventId } = entry.meta;
      const delivery = (deliveries.get(eventId) ?? 0) + 1;
      deliveries.set(eventId, delivery);
      invocation.deliveryOf.set(eventId, delivery);
      history.append({
        kind: 'delivered',
        message: messageOf(entry.meta.plan),
        attempt: `${eventId} delivery ${delivery}`,
      });
      invocation.logs.set(eventId, { eventId, sequenceNumber: entry.sequenceNumber });
      const fault = faults ? recordFaultOf(eventId, delivery) : undefined;
      const pk = entry.meta.plan.scopedKey;
      if (pk !== undefined) {
        invocation.deliveryByKey.set(pk, { eventId, delivery });
        const time = {
          invocation: invocation.id,
          startedAt: invocation.startReal,
          endedAt: invocation.startReal,
        };
        timed.push(time);
        deliveryTimes.set(pk, [...(deliveryTimes.get(pk) ?? []), time]);
        const list = invocation.faultsByKey.get(pk) ?? [];
        list.push(fault);
        invocation.faultsByKey.set(pk, list);
      }
      if (fault === 'crash-after-outcome') invocation.outcomeCrash.add(eventId);
    }

    let response: StreamBatchResponse | undefined;
    let thrown: unknown;
    await invocationContext.run(invocation, async () => {
      try {
        response = await instance.handler(delivered);
      } catch (error) {
        thrown = error;
      }
    });
    shardRuns.delete(invocation);
    const ended = performance.now();
    for (const time of timed) time.endedAt = ended;
    if (mode === 'marker') for (const key of unfollowedMarkers(invocation)) markerGaps.add(key);
    // A record processed before a checkpoint was lost must meet its own inbox record when it comes again.
    for (const log of invocation.logs.values()) {
      const processedBy = processedBeforeLostCheckpoint.get(log.eventId);
      if (processedBy === undefined || log.outcome === undefined) continue;
      processedBeforeLostCheckpoint.delete(log.eventId);
      redeliveredAfterLostCheckpoint += 1;
      if (log.outcome === 'processed') {
        runtimeViolations.push(
          `${log.eventId}: processed again by invocation ${invocation.id} after its checkpoint was lost (invocation ${processedBy} processed it)`,
        );
      }
    }
    // A crashed invocation is a function error: the whole batch comes again (bisected, maybe).
    if (invocation.crashed) {
      complete(batch, { kind: 'error' });
      return;
    }
    if (thrown !== undefined || response === undefined) {
      runtimeViolations.push(`invocation ${invocation.id}: the handler threw ${String(thrown)}`);
      complete(batch, { kind: 'error' });
      return;
    }
    checkResponse(invocation, response);
    const logs = [...invocation.logs.values()];
    logs.forEach((log, index) => {
      const bad = (BAD_KINDS as readonly string[]).includes(delivered[index]!.meta.plan.kind);
      const ranAfter = logs
        .slice(index + 1)
        .some((later) => later.outcome !== undefined && later.code !== 'GROUP_BLOCKED');
      if (bad && log.deadLetter === 'sent' && ranAfter) movedOnPastBadRecord += 1;
    });
    const returned = options.tamperResponse?.(response) ?? response;
    // The function answered; the mapping's checkpoint of it may not persist (the batch comes again).
    const checkpointRoll = chanceOf(
      seed,
      'checkpoint lost',
      first.meta.eventId,
      deliveries.get(first.meta.eventId) ?? 0,
    );
    const checkpointLost =
      faults && checkpointRoll < (options.lostCheckpointChance ?? LOST_CHECKPOINT_CHANCE);
    if (checkpointLost) {
      for (const log of logs) {
        if (log.outcome === 'processed') processedBeforeLostCheckpoint.set(log.eventId, invocation.id);
      }
    }
    complete(batch, {
      kind: 'response',
      itemIdentifiers: returned.batchItemFailures.map((failure) => failure.itemIdentifier),
      checkpointLost,
    });
  };

  /**
   * The checkpoint contract: at most one sequence number (a batch is one shard), a record of the
   * batch; every record before it was acknowledged (processed, a duplicate, or dead-lettered), it
   * ran and was not, and none after it ran (each waited for it: `GROUP_BLOCKED`). With no
   * failure, every record was acknowledged.
   */
  const checkResponse = (invocation: Invocation, response: StreamBatchResponse): void => {
    const named = response.batchItemFailures.map((failure) => failure.itemIdentifier);
    const where = `invocation ${invocation.id} (${invocation.batch.lane})`;
    if (named.length > 1) runtimeViolations.push(`${where}: ${named.length} checkpoints for one shard`);
    const logs = [...invocation.logs.values()];
    const at = named.length === 0 ? logs.length : logs.findIndex((log) => log.sequenceNumber === named[0]);
    if (at < 0) {
      runtimeViolations.push(`${where}: checkpoint ${named[0]} is not a record of the batch`);
      return;
    }
    logs.forEach((log, index) => {
      const ended = `${log.outcome}${log.code === undefined ? '' : ` ${log.code}`}`;
      if (index < at && !isAcknowledged(log)) {
        runtimeViolations.push(`${where}: ${log.eventId} before the checkpoint ended ${ended}, acknowledged`);
      } else if (
        index === at &&
        (isAcknowledged(log) || log.outcome === undefined || log.code === 'GROUP_BLOCKED')
      ) {
        runtimeViolations.push(
          `${where}: the checkpoint ${log.eventId} ended ${ended}, not a retry of its own`,
        );
      } else if (index > at && log.code !== 'GROUP_BLOCKED') {
        runtimeViolations.push(`${where}: ${log.eventId} after the checkpoint ran (${ended})`);
      }
    });
  };

  /** Runs batches, each lane on one instance at a time, until the stream has no work. */
  const drain = async (): Promise<void> => {
    const idle = [...instances];
    const running = new Set<Promise<void>>();
    for (;;) {
      for (const batch of stream.nextBatches(idle.length)) {
        const instance = idle.splice(random.int(idle.length), 1)[0]!;
        const run: Promise<void> = invoke(instance, batch).finally(() => {
          running.delete(run);
          idle.push(instance);
        });
        running.add(run);
      }
      if (running.size === 0) {
        if (stream.hasWork()) throw new Error('The stream has work but no batch runs');
        return;
      }
      await Promise.race(running);
    }
  };

  let firstPass: ReadonlyMap<string, EntryFate>;
  let firstPassOnFailure: number;
  let firstPassOutcomes: ReadonlyMap<string, string>;
  let deadLetters: ReceivedDeadLetter[];
  try {
    await drain();
    firstPass = new Map(stream.fates());
    firstPassOnFailure = stream.onFailure.length;
    firstPassOutcomes = new Map(lastOutcome);
    // The outage is over: the operator replays the stream from TRIM_HORIZON (the records the
    // on-failure destination named come again, and every other record as a duplicate).
    phase = 2;
    stream.replayFromTrimHorizon();
    await drain();
    deadLetters = await receiveDeadLetters(sqs, queueUrl, deadLettersSent);
    for (const key of markerGaps) {
      history.append({
        kind: 'excused',
        key,
        why: 'marker left without its effect (at-most-once by design)',
      });
    }
  } finally {
    for (const instance of instances) instance.client.raw.destroy();
    await sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl })).catch(() => undefined);
    sqs.destroy();
  }
  return {
    options,
    plans,
    stream,
    firstPass,
    firstPassOnFailure,
    firstPassOutcomes,
    streamArn,
    deadLetters,
    deadLettersSent,
    deadLetterSendErrors,
    deadLetterLostResponses,
    movedOnPastBadRecord,
    deliveries,
    deliveryTimes,
    entityWrites,
    markerGaps,
    crashes,
    lostResponses,
    throttles,
    conflicts,
    concurrentShardBatches,
    lostCheckpoints: stream.stats.checkpointsLost,
    redeliveredAfterLostCheckpoint,
    invocations: invocationCount,
    actions,
    runtimeViolations,
    history: history.entries,
  };
}

/** The options a seed's handlers share, whatever the source: everything but the key source. */
type CommonHandlerOptions = Omit<KinesisHandlerOptions<Body & DynamoDbChange>, 'dedupKey'> &
  Omit<DynamoDbStreamHandlerOptions<Body & DynamoDbChange>, 'dedupKey'> &
  Omit<KafkaHandlerOptions<Body & DynamoDbChange>, 'dedupKey'>;

/** A Kinesis record's data, as the seed's producer writes a valid order. */
type Body = { id: string; amount: number };

/** The ARN of a seed's stream, table stream, or MSK cluster. */
function streamArnOf(source: StreamSource, seed: number): string {
  switch (source) {
    case 'kinesis':
      return `arn:aws:kinesis:us-east-1:000000000000:stream/reliability-${seed}`;
    case 'kafka':
      return `arn:aws:kafka:us-east-1:000000000000:cluster/reliability-${seed}/7c0ffee1-0d1e-4b6a-9c2d-5e4f3a2b1c0d-1`;
    case 'dynamodb':
      return `arn:aws:dynamodb:us-east-1:000000000000:table/reliability-${seed}/stream/2026-01-01T00:00:00.000`;
  }
}

/** True when `response` is a Kafka handler's (it names partitions and offsets, not sequence numbers). */
function isKafkaResponse(
  source: StreamSource,
  response: StreamBatchResponse | KafkaBatchResponse,
): response is KafkaBatchResponse {
  return source === 'kafka';
}

/**
 * The stream's checkpoint of a Kafka handler's answer: each partition and offset it names as the
 * sequence number of that record of the batch. A name that is no record of the batch is passed on
 * as it is (`<partition>:<offset>`), which fails the whole batch, as a stream's unknown sequence
 * number does.
 */
export function streamCheckpointOf(
  response: KafkaBatchResponse,
  entries: readonly Pick<StreamEntry<unknown>, 'shardId' | 'offset' | 'sequenceNumber'>[],
): StreamBatchResponse {
  return {
    batchItemFailures: response.batchItemFailures.map(({ itemIdentifier: { partition, offset } }) => {
      const named = entries.find((entry) => entry.shardId === partition && entry.offset === offset);
      return { itemIdentifier: named?.sequenceNumber ?? `${partition}:${offset}` };
    }),
  };
}

/** The real handler of `source` (keyed by the order's `id`, or by the change's keys and version), taking Lambda records. */
function createSourceHandler(
  source: StreamSource,
  streamArn: string,
  common: CommonHandlerOptions,
): (records: readonly SourceRecord[]) => Promise<StreamBatchResponse | KafkaBatchResponse> {
  if (source === 'kafka') {
    const handler = createKafkaHandler<Body & DynamoDbChange>({ ...common, dedupKey: fromData('id') });
    return (records) => {
      // An event groups its records by topic-partition, each list in offset order.
      const grouped: Record<string, KafkaRecord[]> = {};
      for (const record of records as KafkaRecord[]) {
        const topicPartition = `${record.topic}-${record.partition}`;
        grouped[topicPartition] = [...(grouped[topicPartition] ?? []), record];
      }
      return handler({
        eventSource: 'aws:kafka',
        eventSourceArn: streamArn,
        bootstrapServers: 'b-1.reliability.kafka.us-east-1.amazonaws.com:9098',
        records: grouped,
      });
    };
  }
  if (source === 'kinesis') {
    const handler = createKinesisHandler<Body & DynamoDbChange>({ ...common, dedupKey: fromData('id') });
    return (records) => handler({ Records: records as KinesisStreamRecord[] });
  }
  const handler = createDynamoDbStreamHandler<Body & DynamoDbChange>({
    ...common,
    dedupKey: fromKeysAndVersion(VERSION),
  });
  return (records) => handler({ Records: records as DynamoDbStreamRecord[] });
}

/**
 * Measures the whole dead letter of a poison record: the real handler of `source` (never
 * truncating) sends it with the product's SQS sender to a client that only keeps the
 * `SendMessage` input, and the conformance layer counts its size as SQS does (body and
 * attributes). No request reaches DynamoDB: a poison record fails before its claim.
 */
function createDeadLetterProbe(
  source: StreamSource,
  streamArn: string,
  common: Omit<CommonHandlerOptions, 'mode' | 'deadLetterSender' | 'deadLetterMaxMessageBytes'>,
): (record: SourceRecord) => Promise<number> {
  let sent: SendMessageCommandInput | undefined;
  const handler = createSourceHandler(source, streamArn, {
    ...common,
    mode: atomic<Body & DynamoDbChange>(() => {
      throw new Error('A probed record must be poison: it reached its effect');
    }),
    deadLetterMaxMessageBytes: SQS_MAX_MESSAGE_BYTES,
    deadLetterSender: createSqsDeadLetterSender({
      queueUrl: 'https://sqs.us-east-1.amazonaws.com/000000000000/probe',
      client: {
        async send(command: SendMessageCommand) {
          sent = command.input;
          return {};
        },
      } as unknown as SQSClient,
    }),
  });
  return async (record) => {
    sent = undefined;
    const response = await handler([record]);
    if (sent === undefined || response.batchItemFailures.length > 0) {
      throw new Error('The probed record was not dead-lettered');
    }
    return sqsMessageBytes(sent);
  };
}

/**
 * The data of a boundary record whose whole dead letter, as `measure` counts it, is
 * `boundaryOffset` bytes past the dead-letter queue's message size: the filler's length is
 * moved by what is missing until it fits (the size grows by one byte a filler character, and
 * by one more when the data's byte count gains a digit).
 */
async function sizedToBoundary(
  plan: PlannedStreamRecord,
  measure: (data: Uint8Array) => Promise<number>,
): Promise<Uint8Array> {
  const target = DEAD_LETTER_MAX_MESSAGE_BYTES + plan.boundaryOffset!;
  let length = DEAD_LETTER_MAX_MESSAGE_BYTES / 2;
  let size = 0;
  for (let attempt = 0; attempt < 6; attempt += 1) {
    size = await measure(plan.fill!(length));
    if (size === target) break;
    length = Math.max(0, length + target - size);
  }
  // A byte count gaining a digit may skip the target: a byte off on the same side of the limit will do.
  if (size !== target && size > DEAD_LETTER_MAX_MESSAGE_BYTES !== target > DEAD_LETTER_MAX_MESSAGE_BYTES) {
    throw new Error(`r${plan.index}: no data makes its dead letter ${target} bytes (got ${size})`);
  }
  return plan.fill!(length);
}

/**
 * A standard queue for a seed's dead letters, with the simulation's `MaximumMessageSize` (the
 * emulator does not enforce it: the conformance layer does). Received messages stay invisible for
 * the rest of the run, so each is read once.
 */
async function createDeadLetterQueue(sqs: SQSClient, seed: number): Promise<string> {
  const { QueueUrl } = await sqs.send(
    new CreateQueueCommand({
      QueueName: uniqueName(`eo-rel-stream-dlq-s${seed}`),
      Attributes: {
        MaximumMessageSize: String(DEAD_LETTER_MAX_MESSAGE_BYTES),
        VisibilityTimeout: '43200',
      },
    }),
  );
  return QueueUrl!;
}

/** Every message of the dead-letter queue: at least `count` (what was sent), and whatever else it holds. */
async function receiveDeadLetters(
  sqs: SQSClient,
  queueUrl: string,
  count: number,
): Promise<ReceivedDeadLetter[]> {
  const received: ReceivedDeadLetter[] = [];
  // Receives until `count` came and one more receive came back empty (or ten did in a row).
  for (let empty = 0; empty < (received.length < count ? 10 : 1); ) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 0,
        MessageAttributeNames: ['All'],
      }),
    );
    empty = Messages.length === 0 ? empty + 1 : 0;
    for (const message of Messages) {
      received.push({ body: message.Body ?? '', attributes: message.MessageAttributes ?? {} });
    }
  }
  return received;
}
