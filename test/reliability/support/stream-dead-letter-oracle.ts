/**
 * The dead-letter half of the stream oracle: what the seed's dead-letter queue (a real queue on
 * the emulator, sent to through the SQS conformance layer) held at the end, read back and
 * checked message by message against the stream record its coordinates point at.
 *
 * A dead letter is right when:
 * - its body is the stream dead-letter envelope (`StreamDeadLetterBody`), its code the one the
 *   record must fail with, its reason the one that code gives for that data (`REASONS`), and its
 *   attributes say the same (`eo-code`, `eo-reason`, the coordinates, `eo-source-message-id`);
 * - its coordinates are the record's, as Lambda delivered it (stream ARN, shard, sequence number,
 *   event id, partition key, arrival time; for a table stream the event name and the item keys;
 *   for Kafka the cluster ARN, topic-partition, topic, partition and offset, timestamp, record key
 *   and headers), and name it: a Kafka dead letter by its topic-partition and offset;
 * - its data is the record's data byte for byte (a Kinesis record's data, a Kafka record's value;
 *   a table stream record's `dynamodb` field as delivered, as JSON), as UTF-8 text when it is UTF-8 and base64 when it is
 *   not, with its size and SHA-256; or marked truncated, with the data's size and SHA-256, and
 *   then only when the whole envelope would not fit the queue's message size (counted here, as
 *   SQS counts it, with the attributes the message came with).
 */
import { isUtf8 } from 'node:buffer';
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { DEAD_LETTER_ATTRIBUTES, STREAM_RECORD_ATTRIBUTES } from '../../../lambda/core/contract';
import type { KafkaRecord } from '../../../lambda/kafka';
import type { DynamoDbStreamRecord, KinesisStreamRecord } from '../../../lambda/streams';
import {
  STREAM_DEAD_LETTER_FORMAT,
  type StreamCoordinates,
  type StreamDeadLetterBody,
} from '../../../lambda/streams/stream-dead-letter';
import { sqsMessageBytes } from '../../support/aws-limits/sqs';
import { recoveredData } from '../../support/stream-fixtures';
import type { StreamEntry } from './simulated-stream';
import {
  DEAD_LETTER_MAX_MESSAGE_BYTES,
  type ExpectedCode,
  lambdaRecordOf,
  type ReceivedDeadLetter,
  type StreamMeta,
  type StreamSimulationResult,
} from './stream-simulation';

/** A message of the dead-letter queue with its body parsed. */
export interface ParsedDeadLetter {
  readonly received: ReceivedDeadLetter;
  readonly envelope: StreamDeadLetterBody;
}

/**
 * The stream record a dead letter names, by its event id: a Kafka record by its topic-partition
 * and offset (the smallest dead letter keeps only the topic-partition, as `shardId`, and the offset,
 * as `sequenceNumber`), any other by its event id.
 */
function namedEventId(
  result: StreamSimulationResult,
  source: StreamCoordinates | undefined,
): string | undefined {
  if (source === undefined || result.options.source !== 'kafka') return source?.eventId;
  const { topic, partition, offset, shardId, sequenceNumber } = source;
  if (topic !== undefined && partition !== undefined && offset !== undefined) {
    return `${topic}-${partition}:${offset}`;
  }
  return shardId === undefined ? undefined : `${shardId}:${sequenceNumber}`;
}

/** The reason each code gives, by whether the record's data is UTF-8 text. */
const REASONS: Readonly<Record<ExpectedCode, { readonly text: RegExp; readonly binary: RegExp }>> = {
  MALFORMED_BODY: { text: /not valid JSON/, binary: /not UTF-8/ },
  MISSING_KEY: { text: /missing or empty/, binary: /missing or empty/ },
  PAYLOAD_MISMATCH: { text: /different payload/, binary: /different payload/ },
};

/**
 * The dead letters by the event id their coordinates name, and what is wrong with the queue as a
 * whole: a body that is not an envelope, coordinates that name no record of the stream, more or
 * fewer messages than were sent.
 */
export function indexDeadLetters(result: StreamSimulationResult): {
  readonly byEventId: ReadonlyMap<string, readonly ParsedDeadLetter[]>;
  readonly problems: readonly string[];
} {
  const problems: string[] = [];
  const eventIds = new Set(result.stream.entries.map((entry) => entry.meta.eventId));
  const byEventId = new Map<string, ParsedDeadLetter[]>();
  for (const received of result.deadLetters) {
    let envelope: StreamDeadLetterBody;
    try {
      envelope = JSON.parse(received.body) as StreamDeadLetterBody;
    } catch {
      problems.push(`a dead letter that is not JSON: ${JSON.stringify(received.body.slice(0, 80))}`);
      continue;
    }
    const eventId = namedEventId(result, envelope?.source);
    if (envelope?.format !== STREAM_DEAD_LETTER_FORMAT || eventId === undefined || !eventIds.has(eventId)) {
      problems.push(
        `a dead letter that points at no record of the stream: ${JSON.stringify(received.body.slice(0, 160))}`,
      );
      continue;
    }
    byEventId.set(eventId, [...(byEventId.get(eventId) ?? []), { received, envelope }]);
  }
  if (result.deadLetters.length !== result.deadLettersSent) {
    problems.push(
      `the dead-letter queue held ${result.deadLetters.length} messages, ${result.deadLettersSent} were sent`,
    );
  }
  // A refused dead letter is refused again on every retry: each once, with its count.
  const refusals = new Map<string, number>();
  for (const error of result.deadLetterSendErrors) refusals.set(error, (refusals.get(error) ?? 0) + 1);
  for (const [error, times] of refusals) {
    problems.push(`SendMessage to the dead-letter queue failed ${times} time(s): ${error}`);
  }
  return { byEventId, problems };
}

/**
 * The coordinates a Kafka record's dead letter must name: built here from the record as
 * delivered, not with the handler's own `kafkaCoordinates`.
 */
function kafkaCoordinatesOf(
  result: StreamSimulationResult,
  entry: StreamEntry<StreamMeta>,
  kafka: KafkaRecord,
): StreamCoordinates {
  const headers = (kafka.headers ?? []).flatMap((header) =>
    Object.entries(header).map(([name, bytes]) => ({ name, value: Buffer.from(bytes).toString('base64') })),
  );
  return {
    eventSource: 'aws:kafka',
    eventSourceArn: result.streamArn,
    shardId: entry.shardId,
    sequenceNumber: String(entry.offset),
    topic: kafka.topic,
    partition: kafka.partition,
    offset: entry.offset,
    timestamp: kafka.timestamp!,
    timestampType: kafka.timestampType!,
    recordKey: Buffer.from(entry.partitionKey, 'utf8').toString('base64'),
    ...(headers.length === 0 ? {} : { headers }),
  };
}

/** The record's data as its dead letter must carry it, and the coordinates it must name. */
function expectedOf(
  result: StreamSimulationResult,
  entry: StreamEntry<StreamMeta>,
): { readonly data: Buffer; readonly coordinates: StreamCoordinates } {
  const { source } = result.options;
  const record = lambdaRecordOf(source, entry, result.streamArn);
  if (source !== 'dynamodb') {
    // Kinesis data and a Kafka value: the bytes as produced.
    const data = Buffer.from(entry.meta.plan.writes[entry.meta.write]!.data);
    if (source === 'kafka') {
      return { data, coordinates: kafkaCoordinatesOf(result, entry, record as KafkaRecord) };
    }
    return {
      data,
      coordinates: {
        eventSource: 'aws:kinesis',
        eventSourceArn: result.streamArn,
        shardId: entry.shardId,
        sequenceNumber: entry.sequenceNumber,
        eventId: entry.meta.eventId,
        partitionKey: entry.partitionKey,
        arrivalTime: (record as KinesisStreamRecord).kinesis.approximateArrivalTimestamp,
      },
    };
  }
  const change = record as DynamoDbStreamRecord;
  return {
    data: Buffer.from(JSON.stringify(change.dynamodb), 'utf8'),
    coordinates: {
      eventSource: 'aws:dynamodb',
      eventSourceArn: result.streamArn,
      sequenceNumber: entry.sequenceNumber,
      eventId: entry.meta.eventId,
      arrivalTime: change.dynamodb.ApproximateCreationDateTime,
      eventName: change.eventName,
      keys: change.dynamodb.Keys,
    },
  };
}

const sha256 = (data: Uint8Array): string => createHash('sha256').update(data).digest('hex');

/** JSON as an SQS body may hold it: the noncharacters U+FFFE and U+FFFF escaped, as JSON allows. */
const sqsJson = (value: unknown): string =>
  JSON.stringify(value).replace(/[\ufffe\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);

/** What is wrong with one dead letter of `entry`, which must fail with `code`; empty when it is right. */
export function deadLetterProblems(
  result: StreamSimulationResult,
  entry: StreamEntry<StreamMeta>,
  { received, envelope }: ParsedDeadLetter,
  code: ExpectedCode,
): string[] {
  const problems: string[] = [];
  const expected = expectedOf(result, entry);
  const text = isUtf8(expected.data);
  const attribute = (name: string) => received.attributes[name]?.StringValue;

  if (envelope.code !== code || attribute(DEAD_LETTER_ATTRIBUTES.code) !== code) {
    problems.push(
      `code ${envelope.code} (attribute ${attribute(DEAD_LETTER_ATTRIBUTES.code)}), expected ${code}`,
    );
  }
  const reason = REASONS[code][text ? 'text' : 'binary'];
  if (typeof envelope.reason !== 'string' || !reason.test(envelope.reason)) {
    problems.push(`reason ${JSON.stringify(envelope.reason)}, expected one matching ${reason}`);
  } else if (attribute(DEAD_LETTER_ATTRIBUTES.reason) !== envelope.reason) {
    problems.push(`attribute reason ${JSON.stringify(attribute(DEAD_LETTER_ATTRIBUTES.reason))}`);
  }

  if (!isDeepStrictEqual(envelope.source, expected.coordinates)) {
    problems.push(
      `coordinates ${JSON.stringify(envelope.source)}, expected ${JSON.stringify(expected.coordinates)}`,
    );
  }
  const attributes: Record<string, string | undefined> = {
    [DEAD_LETTER_ATTRIBUTES.sourceMessageId]: entry.meta.eventId,
    [STREAM_RECORD_ATTRIBUTES.eventSourceArn]: result.streamArn,
    // A Kafka record's offset is its sequence number, its topic-partition its shard.
    [STREAM_RECORD_ATTRIBUTES.sequenceNumber]: expected.coordinates.sequenceNumber,
    [STREAM_RECORD_ATTRIBUTES.shardId]: result.options.source === 'dynamodb' ? undefined : entry.shardId,
    [STREAM_RECORD_ATTRIBUTES.partitionKey]:
      result.options.source === 'kinesis' ? entry.partitionKey : undefined,
  };
  for (const [name, value] of Object.entries(attributes)) {
    if (attribute(name) !== value) problems.push(`attribute ${name} ${attribute(name)}, expected ${value}`);
  }

  const { data } = envelope;
  const whole = {
    encoding: text ? 'utf-8' : 'base64',
    value: text ? expected.data.toString('utf8') : expected.data.toString('base64'),
    bytes: expected.data.byteLength,
    sha256: sha256(expected.data),
  } as const;
  // The whole dead letter, as SQS would count it with the attributes this one came with.
  const wholeBytes = sqsMessageBytes({
    MessageBody: sqsJson({ ...envelope, data: whole }),
    MessageAttributes: { ...received.attributes },
  });
  const fits = wholeBytes <= DEAD_LETTER_MAX_MESSAGE_BYTES;
  const { boundaryOffset } = entry.meta.plan;
  // A boundary record is only one if its whole dead letter has the size it was planned to have
  // (a byte more where the data's byte count gained a digit): else the sizing of the simulation is off.
  if (boundaryOffset !== undefined) {
    const planned = DEAD_LETTER_MAX_MESSAGE_BYTES + boundaryOffset;
    if (
      Math.abs(wholeBytes - planned) > 1 ||
      wholeBytes > DEAD_LETTER_MAX_MESSAGE_BYTES !== boundaryOffset > 0
    ) {
      problems.push(`a boundary record whose whole dead letter is ${wholeBytes} bytes, planned ${planned}`);
    }
  }
  if ('truncated' in data) {
    if (data.truncated !== true || data.bytes !== whole.bytes || data.sha256 !== whole.sha256) {
      problems.push(
        `truncated data says ${data.bytes} bytes, SHA-256 ${data.sha256}; the record has ${whole.bytes}, ${whole.sha256}`,
      );
    }
    if (fits) {
      problems.push(
        `truncated, though the whole dead letter (${wholeBytes} bytes) fits the queue's ${DEAD_LETTER_MAX_MESSAGE_BYTES}`,
      );
    }
  } else {
    const recovered = recoveredData(envelope);
    if (data.encoding !== whole.encoding)
      problems.push(`data as ${data.encoding}, expected ${whole.encoding}`);
    if (recovered === undefined || !recovered.equals(expected.data)) {
      problems.push(
        `data recovered as ${recovered?.byteLength} bytes (SHA-256 ${recovered && sha256(recovered)}), not the record's ${whole.bytes} (${whole.sha256})`,
      );
    }
    if (data.bytes !== whole.bytes || data.sha256 !== whole.sha256) {
      problems.push(
        `data says ${data.bytes} bytes, SHA-256 ${data.sha256}; the record has ${whole.bytes}, ${whole.sha256}`,
      );
    }
    if (!fits)
      problems.push(`whole, though ${wholeBytes} bytes exceed the queue's ${DEAD_LETTER_MAX_MESSAGE_BYTES}`);
  }
  return problems;
}
