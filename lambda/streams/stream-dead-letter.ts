/**
 * The dead letter of a stream record: what an operator needs to act on it, without loss. Its
 * body is a JSON envelope (`StreamDeadLetterBody`) with the record's coordinates (stream ARN,
 * shard, sequence number, event id, arrival time) and its data, as UTF-8 text where SQS can hold
 * it, else base64; a record whose envelope would not fit the dead-letter queue's message size is
 * sent with its coordinates, size and SHA-256 and marked truncated, so it can be read again from
 * the stream while the stream retains it. The reason, code and coordinates also travel as message
 * attributes (`DEAD_LETTER_ATTRIBUTES`, `STREAM_RECORD_ATTRIBUTES`). The envelope is never empty
 * and holds only characters SQS accepts (`toSqsJson` escapes the others), so no
 * record a stream may carry (empty, binary, the largest Kinesis record, a DynamoDB change with two
 * large images) makes a dead letter SQS refuses.
 */
import { createHash } from 'node:crypto';
import { STREAM_RECORD_ATTRIBUTES } from '../core/contract';
import type { DeadLetterWriter, MessageAttribute } from '../core/inbound-message';
import type { DeadLetterMessage, DeadLetterSender } from '../dead-letter/dead-letter-message';
import {
  cutText,
  MAX_REASON_LENGTH,
  SHORT_REASON_LENGTH,
  toAttributeText,
  toDeadLetterAttributes,
} from '../dead-letter/sqs-dead-letter-sender';
import { sqsMessageBytes, toSqsJson } from '../dead-letter/sqs-limits';

/** The `format` of a stream dead letter's body, version 1. */
export const STREAM_DEAD_LETTER_FORMAT = 'effectively-once/stream-dead-letter@1';

/** Where a stream record sits: enough to read it again from its stream. */
export interface StreamCoordinates {
  /** `aws:kinesis`, `aws:dynamodb`, `aws:kafka` or `SelfManagedKafka`. */
  readonly eventSource?: string;
  /** The stream (or table stream) ARN; the MSK cluster's ARN. */
  readonly eventSourceArn?: string;
  /**
   * The shard (Kinesis: from the event id; Kafka: the `<topic>-<partition>`). A DynamoDB Streams
   * record does not name its shard: `DescribeStream` lists the shards with their sequence number
   * ranges.
   */
  readonly shardId?: string;
  /**
   * The record's sequence number (`GetShardIterator` with `AT_SEQUENCE_NUMBER`); a Kafka
   * record's offset, as text.
   */
  readonly sequenceNumber: string;
  /** A Kafka record's topic. */
  readonly topic?: string;
  /** A Kafka record's partition. */
  readonly partition?: number;
  /** A Kafka record's offset in its partition. */
  readonly offset?: number;
  /** A Kafka record's timestamp, epoch milliseconds. */
  readonly timestamp?: number;
  /** What a Kafka record's timestamp is: `CREATE_TIME` or `LOG_APPEND_TIME`. */
  readonly timestampType?: string;
  /** A Kafka record's key, base64, as delivered. */
  readonly recordKey?: string;
  /** A Kafka record's headers in order. */
  readonly headers?: readonly {
    /** The header's name. */
    readonly name: string;
    /** The header value's bytes, base64. */
    readonly value: string;
  }[];
  /** The record's event id. */
  readonly eventId?: string;
  /** The Kinesis partition key. */
  readonly partitionKey?: string;
  /**
   * When the record reached the stream: a Kinesis record's `approximateArrivalTimestamp` (epoch
   * seconds), a DynamoDB change's `ApproximateCreationDateTime` (epoch seconds).
   */
  readonly arrivalTime?: number;
  /** A DynamoDB change's event name: `INSERT`, `MODIFY` or `REMOVE`. */
  readonly eventName?: string;
  /** A DynamoDB change's item key, as delivered (typed attribute values): the item to read again. */
  readonly keys?: unknown;
}

/** The record's data in a dead letter: whole, or marked truncated. */
export type StreamDeadLetterData =
  | {
      /** `utf-8`: `value` is the data as text; `base64`: the data's bytes in base64. */
      readonly encoding: 'utf-8' | 'base64';
      /** The data. */
      readonly value: string;
      /** The data's size in bytes. */
      readonly bytes: number;
      /** SHA-256 of the data's bytes, hex. */
      readonly sha256: string;
    }
  | {
      /** The data did not fit the dead-letter queue's message size: read it again from the stream. */
      readonly truncated: true;
      /** The data's size in bytes. */
      readonly bytes: number;
      /** SHA-256 of the data's bytes, hex, to check the record read again. */
      readonly sha256: string;
    };

/** The body of a stream dead letter (JSON). */
export interface StreamDeadLetterBody {
  /** The envelope's format and version: {@link STREAM_DEAD_LETTER_FORMAT}. */
  readonly format: typeof STREAM_DEAD_LETTER_FORMAT;
  /** Where the record sits in its stream. */
  readonly source: StreamCoordinates;
  /** Why the record can never succeed (as in `eo-reason`, not cut). */
  readonly reason: string;
  /** The error code (as in `eo-code`). */
  readonly code: string;
  /**
   * The record's data: a Kinesis record's data; a DynamoDB Streams record's `dynamodb` field as
   * delivered (keys, images, sequence number and size, typed attribute values), as JSON text.
   */
  readonly data: StreamDeadLetterData;
}

/** What a stream adapter tells the writer of one record. */
export interface StreamDeadLetterRecord {
  /** Where it sits. */
  readonly coordinates: StreamCoordinates;
  /** Its data's exact bytes. */
  readonly data: Uint8Array;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The data as text when it is well-formed UTF-8, else `undefined`. */
export function utf8TextOf(data: Uint8Array): string | undefined {
  try {
    return strictUtf8.decode(data);
  } catch {
    return undefined;
  }
}

/** The whole data: as text when it is well-formed UTF-8, else base64. */
export function streamDeadLetterData(data: Uint8Array): StreamDeadLetterData {
  const sha256 = createHash('sha256').update(data).digest('hex');
  const text = utf8TextOf(data);
  return text === undefined
    ? { encoding: 'base64', value: Buffer.from(data).toString('base64'), bytes: data.byteLength, sha256 }
    : { encoding: 'utf-8', value: text, bytes: data.byteLength, sha256 };
}

/** The record's coordinates as message attributes (`STREAM_RECORD_ATTRIBUTES`). */
export function streamRecordAttributes(coordinates: StreamCoordinates): Record<string, MessageAttribute> {
  const text = (stringValue: string): MessageAttribute => ({ stringValue, dataType: 'String' });
  const attributes: Record<string, MessageAttribute> = {};
  if (coordinates.eventSourceArn !== undefined)
    attributes[STREAM_RECORD_ATTRIBUTES.eventSourceArn] = text(coordinates.eventSourceArn);
  if (coordinates.shardId !== undefined)
    attributes[STREAM_RECORD_ATTRIBUTES.shardId] = text(coordinates.shardId);
  attributes[STREAM_RECORD_ATTRIBUTES.sequenceNumber] = text(coordinates.sequenceNumber);
  if (coordinates.partitionKey !== undefined && coordinates.partitionKey !== '')
    attributes[STREAM_RECORD_ATTRIBUTES.partitionKey] = text(coordinates.partitionKey);
  return attributes;
}

/**
 * The dead-letter message of a stream record, the first of three that fits `maxMessageBytes`
 * (body and attributes, counted as SQS counts them):
 * 1. the whole envelope: coordinates, reason and the record's data;
 * 2. the data marked truncated (size and SHA-256), the reason cut to 1,024 code points;
 * 3. the smallest: the coordinates needed to read the record again (stream ARN, shard, sequence
 *    number, event id) in the body only, the reason cut to 128 code points, no dedup key.
 * When even the third does not fit (a queue limit near SQS's 1,024-byte minimum and a very long
 * stream ARN), it is returned anyway: SQS refuses it, the send fails and the record is retried,
 * as for any failed send. The group is left unset (a FIFO dead-letter queue groups by consumer: a
 * stream ARN may be longer than a message group id may be).
 */
export function streamDeadLetterMessage(
  record: StreamDeadLetterRecord,
  letter: {
    readonly reason: string;
    readonly code: string;
    readonly consumer: string;
    readonly dedupKey?: string;
  },
  sourceMessageId: string,
  maxMessageBytes: number,
): DeadLetterMessage {
  const { coordinates } = record;
  const body = (source: StreamCoordinates, reason: string, data: StreamDeadLetterData): string =>
    toSqsJson({
      format: STREAM_DEAD_LETTER_FORMAT,
      source,
      reason,
      code: letter.code,
      data,
    } satisfies StreamDeadLetterBody);
  // A partition key may hold characters SQS refuses in an attribute value: the envelope keeps it
  // whole (escaped), the attribute shows it with `?` in their place.
  const attributes = Object.fromEntries(
    Object.entries(streamRecordAttributes(coordinates)).map(([name, value]) => [
      name,
      { ...value, stringValue: toAttributeText(value.stringValue ?? '') },
    ]),
  );
  const base = {
    reason: letter.reason,
    code: letter.code as DeadLetterMessage['code'],
    consumer: letter.consumer,
    sourceMessageId,
    attributes,
    ...(letter.dedupKey === undefined ? {} : { dedupKey: letter.dedupKey }),
  };
  const fits = (message: DeadLetterMessage): boolean =>
    sqsMessageBytes(message.body, toDeadLetterAttributes(message)) <= maxMessageBytes;

  const data = streamDeadLetterData(record.data);
  const whole: DeadLetterMessage = { ...base, body: body(coordinates, letter.reason, data) };
  if (fits(whole)) return whole;
  const truncatedData: StreamDeadLetterData = { truncated: true, bytes: data.bytes, sha256: data.sha256 };
  const truncated: DeadLetterMessage = {
    ...base,
    body: body(coordinates, cutText(letter.reason, MAX_REASON_LENGTH), truncatedData),
  };
  if (fits(truncated)) return truncated;
  const reason = cutText(letter.reason, SHORT_REASON_LENGTH);
  const pointer: StreamCoordinates = {
    ...(coordinates.eventSourceArn === undefined ? {} : { eventSourceArn: coordinates.eventSourceArn }),
    ...(coordinates.shardId === undefined ? {} : { shardId: coordinates.shardId }),
    sequenceNumber: coordinates.sequenceNumber,
    ...(coordinates.eventId === undefined ? {} : { eventId: coordinates.eventId }),
  };
  return {
    reason,
    code: base.code,
    consumer: letter.consumer,
    sourceMessageId,
    attributes: {},
    body: body(pointer, reason, truncatedData),
  };
}

/**
 * The dead-letter writer of a stream entry point: each permanent failure is sent with
 * `sender` as a {@link StreamDeadLetterBody}, within `maxMessageBytes`.
 */
export function streamDeadLetterWriter<TRecord>(
  sender: DeadLetterSender,
  describe: (record: TRecord) => StreamDeadLetterRecord,
  maxMessageBytes: number,
): DeadLetterWriter<TRecord> {
  return async ({ message, reason, code, consumer, dedupKey }) => {
    await sender.send(
      streamDeadLetterMessage(
        describe(message.record),
        { reason, code, consumer, ...(dedupKey === undefined ? {} : { dedupKey }) },
        message.id,
        maxMessageBytes,
      ),
    );
  };
}
