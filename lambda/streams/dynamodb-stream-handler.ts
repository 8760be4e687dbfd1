/**
 * `createDynamoDbStreamHandler`: the Lambda handler of a DynamoDB Streams event source mapping.
 * Each record's change is written as plain JSON (`DynamoDbChange`) and is the message body; a
 * failure checkpoints the stream at that record, and a permanent failure is a lossless stream
 * dead letter (the record's `dynamodb` field as delivered).
 */
import type { Message } from '../core/message';
import { type StreamCoordinates, streamRecordAttributes } from './stream-dead-letter';
import type { AttributeValue, DynamoDbStreamEvent, DynamoDbStreamRecord } from './stream-event';
import {
  createStreamHandler,
  invalidRecord,
  type StreamHandler,
  type StreamHandlerOptions,
  type StreamMessage,
} from './stream-handler';

/**
 * The body of a DynamoDB Streams message: the change as plain JSON. Numbers are JSON numbers
 * (the body text keeps every digit), binary values base64 strings, sets arrays in sorted order.
 * An image is present only when the stream's view type carries it.
 */
export interface DynamoDbChange<TItem = Record<string, unknown>> {
  /** What changed the item. */
  readonly eventName: 'INSERT' | 'MODIFY' | 'REMOVE';
  /** The item's key attributes, unmarshalled. */
  readonly keys: Record<string, unknown>;
  /** The item after the change, unmarshalled, when the stream records it. */
  readonly newImage?: TItem;
  /** The item before the change, unmarshalled, when the stream records it. */
  readonly oldImage?: TItem;
}

/**
 * The message a DynamoDB Streams handler receives: the change as its body, `message.record` the
 * DynamoDB Streams record.
 */
export type DynamoDbStreamMessage<TBody = DynamoDbChange> = Message<TBody, DynamoDbStreamRecord>;

/** Options of {@link createDynamoDbStreamHandler}. */
export type DynamoDbStreamHandlerOptions<TBody = DynamoDbChange, TStore = unknown> = StreamHandlerOptions<
  DynamoDbStreamRecord,
  TBody,
  TStore
>;

/** A JSON number literal; DynamoDB writes its numbers so, and anything else stays a string. */
const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

const sortedTexts = (values: readonly string[]): string =>
  `[${[...values]
    .sort()
    .map((value) => JSON.stringify(value))
    .join(',')}]`;

const numberText = (literal: string): string =>
  JSON_NUMBER.test(literal) ? literal : JSON.stringify(literal);

/** The JSON text of one attribute value, numbers as their exact literals. */
function attributeJson(value: AttributeValue): string {
  if ('S' in value) return JSON.stringify(value.S);
  if ('N' in value) return numberText(value.N);
  if ('B' in value) return JSON.stringify(value.B);
  if ('BOOL' in value) return value.BOOL ? 'true' : 'false';
  if ('NULL' in value) return 'null';
  if ('SS' in value) return sortedTexts(value.SS);
  if ('BS' in value) return sortedTexts(value.BS);
  if ('NS' in value) return `[${[...value.NS].sort().map(numberText).join(',')}]`;
  if ('L' in value) return `[${value.L.map(attributeJson).join(',')}]`;
  if ('M' in value) return mapJson(value.M);
  invalidRecord('DynamoDB Streams', 'attribute values of a known type');
}

function mapJson(map: Readonly<Record<string, AttributeValue>>): string {
  const fields = Object.entries(map).map(
    ([name, value]) => `${JSON.stringify(name)}:${attributeJson(value)}`,
  );
  return `{${fields.join(',')}}`;
}

/**
 * The JSON text of a record's change (`DynamoDbChange`): its event name, keys and images. The
 * approximate creation time and the size are left out, so the same change emitted twice has one
 * fingerprint.
 */
export function dynamoDbChangeJson(record: DynamoDbStreamRecord): string {
  const change = record.dynamodb;
  const parts = [`"eventName":${JSON.stringify(record.eventName)}`, `"keys":${mapJson(change.Keys ?? {})}`];
  if (change.NewImage !== undefined) parts.push(`"newImage":${mapJson(change.NewImage)}`);
  if (change.OldImage !== undefined) parts.push(`"oldImage":${mapJson(change.OldImage)}`);
  return `{${parts.join(',')}}`;
}

/** Checks a DynamoDB Streams record's sequence number and event name (`INVALID_EVENT` without them). */
function checkedChange(record: DynamoDbStreamRecord): string {
  const sequenceNumber = record?.dynamodb?.SequenceNumber;
  if (typeof sequenceNumber !== 'string' || sequenceNumber === '') {
    invalidRecord('DynamoDB Streams', '`dynamodb.SequenceNumber`');
  }
  if (record.eventName !== 'INSERT' && record.eventName !== 'MODIFY' && record.eventName !== 'REMOVE') {
    invalidRecord('DynamoDB Streams', '`eventName` INSERT, MODIFY or REMOVE');
  }
  return sequenceNumber;
}

/**
 * Where a DynamoDB Streams record sits: the table stream's ARN and the sequence number (a record
 * does not name its shard), the event id and name, when the change was made, and the item's key
 * (to read the item again).
 */
export function dynamoDbCoordinates(record: DynamoDbStreamRecord): StreamCoordinates {
  const sequenceNumber = checkedChange(record);
  const change = record.dynamodb;
  return {
    ...(record.eventSource === undefined ? {} : { eventSource: record.eventSource }),
    ...(record.eventSourceARN === undefined ? {} : { eventSourceArn: record.eventSourceARN }),
    sequenceNumber,
    ...(record.eventID === undefined ? {} : { eventId: record.eventID }),
    ...(change.ApproximateCreationDateTime === undefined
      ? {}
      : { arrivalTime: change.ApproximateCreationDateTime }),
    eventName: record.eventName!,
    ...(change.Keys === undefined ? {} : { keys: change.Keys }),
  };
}

/**
 * The engine's message of a DynamoDB Streams record: the change's JSON as the body, the stream
 * as its ordering group (a record does not name its shard; every batch Lambda delivers holds
 * one), the event id as its message id. A record without a sequence number or event name is not
 * a DynamoDB Streams record (`INVALID_EVENT`).
 */
export function dynamoDbMessage(record: DynamoDbStreamRecord): StreamMessage<DynamoDbStreamRecord> {
  const sequenceNumber = checkedChange(record);
  const shard = record.eventSourceARN ?? 'dynamodb';
  return {
    id: record.eventID ?? `${shard}:${sequenceNumber}`,
    text: dynamoDbChangeJson(record),
    attributes: streamRecordAttributes(dynamoDbCoordinates(record)),
    groupId: shard,
    orderingGroup: shard,
    sequenceNumber,
    record,
  };
}

/**
 * Creates the Lambda handler of a DynamoDB Streams event source mapping (enable
 * `ReportBatchItemFailures` on it). Call it once, at module scope: options are validated here.
 *
 * Each record's change is the message body, as plain JSON (`DynamoDbChange`:
 * `{ eventName, keys, newImage, oldImage }`). Key it by the item's key and version,
 * `fromKeysAndVersion('version')`, so the same change emitted twice is a duplicate, or by a field
 * of the change, `fromData('newImage.eventId')`. Records run in order; on the first one that must
 * be retried, the later ones do not run and the response names its sequence number, where the
 * event source resumes (the records processed before it come again as duplicates). A permanent
 * failure is sent to the dead-letter queue with its reason, the record's coordinates and its
 * `dynamodb` field as delivered (marked truncated with the item's key when it does not fit the
 * queue's message size), and acknowledged, so the stream moves on. `message.record` is the
 * DynamoDB Streams record. A record retried until the mapping's `MaximumRetryAttempts` (or
 * `MaximumRecordAgeInSeconds`) is discarded with the rest of its batch; the on-failure
 * destination gets the shard and sequence numbers, not the change.
 *
 * @example
 * export const handler = createDynamoDbStreamHandler<DynamoDbChange<Order>>({
 *   dedupKey: fromKeysAndVersion('version'),
 *   mode: marker(async (message) => publishOrder(message.body.newImage)),
 * });
 */
export function createDynamoDbStreamHandler<TBody = DynamoDbChange, TStore = unknown>(
  options: DynamoDbStreamHandlerOptions<TBody, TStore>,
): StreamHandler<DynamoDbStreamEvent> {
  return createStreamHandler<DynamoDbStreamEvent, DynamoDbStreamRecord, TBody, TStore>(options, {
    name: 'DynamoDB Streams',
    message: dynamoDbMessage,
    deadLetterRecord: (record) => ({
      coordinates: dynamoDbCoordinates(record),
      data: new TextEncoder().encode(JSON.stringify(record.dynamodb)),
    }),
  });
}
