/**
 * SQS SDK `Message` (as `ReceiveMessage` returns it) → the `SqsRecord` shape Lambda delivers
 * and the core reads. With every attribute requested (see {@link RECEIVE_ALL_ATTRIBUTES}), a
 * record converted here carries what an event source mapping would put in it: the FIFO group
 * and deduplication ids, the receive count, the message attributes.
 */
import type { Message, MessageAttributeValue } from '@aws-sdk/client-sqs';
import { EffectivelyOnceError } from '../core/errors';
import type { SqsMessageAttribute, SqsRecord } from '../sqs/sqs-event';

/**
 * The `ReceiveMessage` settings that make a received message as complete as a Lambda record:
 * every system attribute (both the legacy and the current parameter) and every message attribute.
 */
export const RECEIVE_ALL_ATTRIBUTES = Object.freeze({
  /** Every attribute (the older `ReceiveMessage` parameter, kept for older endpoints). */
  AttributeNames: ['All'],
  /** Every system attribute: receive count, sent time, FIFO group and deduplication ids. */
  MessageSystemAttributeNames: ['All'],
  /** Every message attribute the producer set. */
  MessageAttributeNames: ['All'],
} as const);

function base64(value: Uint8Array): string {
  return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64');
}

function toAttribute(value: MessageAttributeValue): SqsMessageAttribute {
  return {
    dataType: value.DataType ?? 'String',
    ...(value.StringValue === undefined ? {} : { stringValue: value.StringValue }),
    ...(value.BinaryValue === undefined ? {} : { binaryValue: base64(value.BinaryValue) }),
    // Lambda always delivers both lists, empty when unused.
    stringListValues: [...(value.StringListValues ?? [])],
    binaryListValues: (value.BinaryListValues ?? []).map(base64),
  };
}

/** Where received messages come from: the queue fields of a Lambda record. */
export interface RecordSource {
  /** The queue's ARN; a FIFO queue's ends in `.fifo`, which is how the core tells FIFO records. */
  readonly eventSourceARN: string;
  /** The queue's region, copied onto each record. */
  readonly awsRegion?: string;
}

/** `https://sqs.<region>.amazonaws.com[.cn]/...` or the legacy `https://<region>.queue.amazonaws.com/...`. */
const AWS_QUEUE_HOST =
  /^(?:sqs\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?|([a-z0-9-]+)\.queue\.amazonaws\.com(\.cn)?)$/;

/**
 * The source of the messages received from `queueUrl`, as an event source mapping would name
 * it: `arn:<partition>:sqs:<region>:<account>:<name>`, the account and name being the URL's
 * last two path segments and the region that of an AWS host (empty for any other endpoint, such
 * as a local emulator). Throws `INVALID_OPTIONS` for a URL without both segments.
 *
 * @example
 * recordSourceOf('https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo');
 * // { eventSourceARN: 'arn:aws:sqs:eu-west-1:123456789012:orders.fifo', awsRegion: 'eu-west-1' }
 */
export function recordSourceOf(queueUrl: string): RecordSource {
  const url = new URL(queueUrl);
  const [account, name, ...rest] = url.pathname.split('/').filter((segment) => segment !== '');
  if (account === undefined || name === undefined || rest.length > 0) {
    throw new EffectivelyOnceError(
      'INVALID_OPTIONS',
      `Expected \`queueUrl\` to end in /<account>/<queue name>, got \`${queueUrl}\``,
    );
  }
  const host = AWS_QUEUE_HOST.exec(url.hostname);
  const region = host?.[1] ?? host?.[3];
  const china = (host?.[2] ?? host?.[4]) !== undefined;
  const partition = china ? 'aws-cn' : region?.startsWith('us-gov-') ? 'aws-us-gov' : 'aws';
  return {
    eventSourceARN: `arn:${partition}:sqs:${region ?? ''}:${account}:${name}`,
    ...(region === undefined ? {} : { awsRegion: region }),
  };
}

/**
 * Converts one received message into the record shape of a Lambda SQS event: `messageId`,
 * `receiptHandle`, `body`, system `attributes`, `messageAttributes` (binary values as base64,
 * as Lambda delivers them; any name, `__proto__` included, kept as an own property),
 * `md5OfBody`, `eventSource: 'aws:sqs'`, and `eventSourceARN` and `awsRegion` from `source`
 * (see {@link recordSourceOf}): without it the record is never treated as FIFO. Throws
 * `INVALID_EVENT` for a message without a `MessageId` (SQS always sets one).
 *
 * @example
 * const { Messages = [] } = await sqs.send(
 *   new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, ...RECEIVE_ALL_ATTRIBUTES }),
 * );
 * const source = recordSourceOf(queueUrl);
 * const response = await processBatch({ Records: Messages.map((message) => toSqsRecord(message, source)) });
 */
export function toSqsRecord(message: Message, source?: RecordSource): SqsRecord {
  if (typeof message?.MessageId !== 'string' || message.MessageId === '') {
    throw new EffectivelyOnceError('INVALID_EVENT', 'Expected an SQS message with a `MessageId`');
  }
  const messageAttributes: Record<string, SqsMessageAttribute> = {};
  for (const [name, value] of Object.entries(message.MessageAttributes ?? {})) {
    // A value the SDK could not read (its deserializer drops a `__proto__` entry's) is no attribute.
    if (typeof value !== 'object' || value === null) continue;
    // Assignment would set the prototype for `__proto__` instead of adding the attribute.
    Object.defineProperty(messageAttributes, name, {
      value: toAttribute(value),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return {
    messageId: message.MessageId,
    ...(message.ReceiptHandle === undefined ? {} : { receiptHandle: message.ReceiptHandle }),
    body: message.Body ?? '',
    attributes: { ...(message.Attributes ?? {}) },
    messageAttributes,
    ...(message.MD5OfBody === undefined ? {} : { md5OfBody: message.MD5OfBody }),
    eventSource: 'aws:sqs',
    ...(source === undefined ? {} : source),
  };
}
