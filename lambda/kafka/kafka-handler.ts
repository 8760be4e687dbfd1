/**
 * `createKafkaHandler`: the Lambda handler of an Amazon MSK or self-managed Apache Kafka event
 * source mapping. Each record's value (base64) is the message body: its exact bytes, and its text
 * where it is UTF-8; a topic-partition is an ordering group, a failure resumes its partition at
 * that record's offset, and a permanent failure is a lossless stream dead letter.
 */

import { EffectivelyOnceError } from '../core/errors';
import type { LambdaContext, MessageResult } from '../core/inbound-message';
import type { Message } from '../core/message';
import { type StreamCoordinates, streamRecordAttributes, utf8TextOf } from '../streams/stream-dead-letter';
import {
  createStreamEngine,
  invalidRecord,
  type StreamHandlerOptions,
  type StreamMessage,
} from '../streams/stream-handler';
import type { KafkaBatchResponse, KafkaEvent, KafkaRecord } from './kafka-event';

/**
 * A Kafka record as the handler's messages carry it (`message.record`): the record as Lambda
 * delivered it, with its topic-partition as the event names it and the event's source fields.
 */
export interface KafkaSourceRecord extends KafkaRecord {
  /** The record's `<topic>-<partition>`, as the event's `records` names it. */
  readonly topicPartition: string;
  /** `aws:kafka` (Amazon MSK) or `SelfManagedKafka`, from the event. */
  readonly eventSource?: string;
  /** The MSK cluster's ARN (Amazon MSK only), from the event. */
  readonly eventSourceArn?: string;
}

/** The message a Kafka handler receives: `message.record` is the Kafka record. */
export type KafkaMessage<TBody = unknown> = Message<TBody, KafkaSourceRecord>;

/** Options of {@link createKafkaHandler}. */
export type KafkaHandlerOptions<TBody = unknown, TStore = unknown> = StreamHandlerOptions<
  KafkaSourceRecord,
  TBody,
  TStore
>;

/** A Kafka entry point's Lambda handler: a Kafka event in, where each partition resumes out. */
export type KafkaHandler = (event: KafkaEvent, context?: LambdaContext) => Promise<KafkaBatchResponse>;

const isOffset = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

/** Checks a Kafka record's coordinates and value: a record without them is `INVALID_EVENT`. */
function checkedKafka(record: KafkaSourceRecord): KafkaSourceRecord {
  if (typeof record?.topic !== 'string' || record.topic === '') invalidRecord('Kafka', 'a `topic`');
  if (!isOffset(record.partition)) invalidRecord('Kafka', 'a `partition` (a non-negative integer)');
  if (!isOffset(record.offset)) invalidRecord('Kafka', 'an `offset` (a non-negative integer)');
  if (record.value !== undefined && record.value !== null && typeof record.value !== 'string') {
    invalidRecord('Kafka', 'a `value` in base64 (or none)');
  }
  return record;
}

/** The bytes of a header value as Lambda lists them (numbers from -128 to 255: Java's signed bytes too). */
function headerValueBytes(values: unknown): Uint8Array {
  if (!Array.isArray(values) || !values.every((v) => Number.isInteger(v) && v >= -128 && v <= 255)) {
    invalidRecord('Kafka', 'headers whose values are lists of bytes');
  }
  return Uint8Array.from(values as number[], (value) => value & 0xff);
}

/**
 * The record's headers in order, each name with its value's bytes; a header list that is not
 * one is `INVALID_EVENT`.
 */
export function kafkaHeaders(record: KafkaRecord): { readonly name: string; readonly value: Uint8Array }[] {
  const headers = record.headers ?? [];
  if (!Array.isArray(headers)) invalidRecord('Kafka', 'a `headers` list');
  return headers.flatMap((header) => {
    if (typeof header !== 'object' || header === null) invalidRecord('Kafka', 'headers that are objects');
    return Object.entries(header).map(([name, values]) => ({ name, value: headerValueBytes(values) }));
  });
}

/** Where a Kafka record sits: enough to read it again from its partition. */
export function kafkaCoordinates(record: KafkaSourceRecord): StreamCoordinates {
  const kafka = checkedKafka(record);
  return {
    ...(kafka.eventSource === undefined ? {} : { eventSource: kafka.eventSource }),
    ...(kafka.eventSourceArn === undefined ? {} : { eventSourceArn: kafka.eventSourceArn }),
    shardId: kafka.topicPartition,
    sequenceNumber: String(kafka.offset),
    topic: kafka.topic,
    partition: kafka.partition,
    offset: kafka.offset,
    ...(kafka.timestamp === undefined ? {} : { timestamp: kafka.timestamp }),
    ...(kafka.timestampType === undefined ? {} : { timestampType: kafka.timestampType }),
    ...(typeof kafka.key === 'string' ? { recordKey: kafka.key } : {}),
    ...(kafka.headers === undefined || kafka.headers.length === 0
      ? {}
      : {
          headers: kafkaHeaders(kafka).map(({ name, value }) => ({
            name,
            value: Buffer.from(value).toString('base64'),
          })),
        }),
  };
}

/** The bytes of the record's value: none (a tombstone) reads as empty. */
function valueBytes(record: KafkaRecord): Uint8Array {
  return new Uint8Array(Buffer.from(record.value ?? '', 'base64'));
}

/**
 * The engine's message of a Kafka record: its value's bytes and, where they are UTF-8, text as
 * the body; its topic-partition as its ordering group; `<topic>-<partition>:<offset>` as its
 * message id; its coordinates as attributes (`STREAM_RECORD_ATTRIBUTES`: the topic-partition as
 * the shard, the offset as the sequence number).
 */
export function kafkaMessage(record: KafkaSourceRecord): StreamMessage<KafkaSourceRecord> {
  const kafka = checkedKafka(record);
  const bytes = valueBytes(kafka);
  return {
    id: `${kafka.topicPartition}:${kafka.offset}`,
    text: utf8TextOf(bytes),
    bytes,
    attributes: streamRecordAttributes(kafkaCoordinates(kafka)),
    groupId: kafka.topicPartition,
    orderingGroup: kafka.topicPartition,
    sequenceNumber: String(kafka.offset),
    record: kafka,
  };
}

/** The event's records in delivery order (partition by partition), each with the event's source fields. */
function recordsOf(event: KafkaEvent): KafkaSourceRecord[] {
  if (
    typeof event !== 'object' ||
    event === null ||
    typeof event.records !== 'object' ||
    event.records === null
  ) {
    throw new EffectivelyOnceError('INVALID_EVENT', 'Expected a Kafka event with a `records` map');
  }
  const { eventSource, eventSourceArn } = event;
  return Object.entries(event.records).flatMap(([topicPartition, records]) => {
    if (!Array.isArray(records)) {
      throw new EffectivelyOnceError('INVALID_EVENT', 'Expected a list of Kafka records per topic-partition');
    }
    return records.map((record: KafkaRecord) => ({
      ...record,
      topicPartition,
      ...(eventSource === undefined ? {} : { eventSource }),
      ...(eventSourceArn === undefined ? {} : { eventSourceArn }),
    }));
  });
}

/**
 * Where each partition resumes: for each topic-partition, the offset of its first record the
 * engine did not acknowledge (it ran none of the partition's later records, which wait for it).
 * The records acknowledged before it come again and are duplicates.
 */
export function kafkaCheckpointOf(
  messages: readonly StreamMessage<KafkaSourceRecord>[],
  results: readonly MessageResult[],
): KafkaBatchResponse {
  const held = new Set<string>();
  const batchItemFailures: KafkaBatchResponse['batchItemFailures'] = [];
  messages.forEach((message, index) => {
    if (results[index]?.acknowledged || held.has(message.orderingGroup)) return;
    held.add(message.orderingGroup);
    batchItemFailures.push({
      itemIdentifier: { partition: message.orderingGroup, offset: message.record.offset },
    });
  });
  return { batchItemFailures };
}

/**
 * Creates the Lambda handler of an Amazon MSK or self-managed Apache Kafka event source mapping
 * (enable `ReportBatchItemFailures` on it, in provisioned mode). Call it once, at module scope:
 * options are validated here.
 *
 * Each record's value is decoded (base64, then UTF-8) and is the message body: `fromData('id')`
 * picks a field of it, `fromKafkaKey()` takes the record's key and `fromHeader(name)` a header.
 * A value that is not UTF-8 (Avro, Protobuf) is `MALFORMED_BODY` with the default `parse`; a
 * `parse` function gets its exact bytes as its second argument (`message.rawBytes` has them too).
 * Records of one topic-partition run in order, partitions in parallel. On the first record of a
 * partition that must be retried (throttling, a lease held elsewhere, a failed dead-letter send,
 * ...) the partition's later records do not run, and the response names that record's
 * topic-partition and offset: the event source resumes the partition there, and the records
 * already processed come again as duplicates. A permanent failure (a different payload under a
 * known key, a missing key, a malformed or empty value, a tombstone) is sent to the dead-letter
 * queue with its reason, its coordinates (topic, partition, offset, key, headers) and its value
 * (`StreamDeadLetterBody`), and acknowledged, so the partition moves on. `message.record` is the
 * Kafka record.
 *
 * A record retried until the mapping's `MaximumRetryAttempts` (or `MaximumRecordAgeInSeconds`)
 * is discarded by the event source with the rest of its batch, to its on-failure destination.
 *
 * @example
 * export const handler = createKafkaHandler<OrderEvent>({
 *   dedupKey: fromHeader('idempotency-key'),
 *   mode: atomic((message, unitOfWork) => {
 *     unitOfWork.put({ TableName: 'Orders', Item: { pk: message.body.orderId, status: message.body.status } });
 *   }),
 * });
 */
export function createKafkaHandler<TBody = unknown, TStore = unknown>(
  options: KafkaHandlerOptions<TBody, TStore>,
): KafkaHandler {
  const processBatch = createStreamEngine<KafkaSourceRecord, TBody, TStore>(options, {
    name: 'Kafka',
    message: kafkaMessage,
    deadLetterRecord: (record) => ({ coordinates: kafkaCoordinates(record), data: valueBytes(record) }),
  });
  return async (event, context) => {
    const messages = recordsOf(event).map(kafkaMessage);
    const results = await processBatch(messages, context);
    return kafkaCheckpointOf(messages, results);
  };
}
