/**
 * SQS SDK `Message` (as `ReceiveMessage` returns it) → the `SqsRecord` shape Lambda delivers
 * and the core reads. With every attribute requested (see {@link RECEIVE_ALL_ATTRIBUTES}), a
 * record converted here carries what an event source mapping would put in it: the FIFO group
 * and deduplication ids, the receive count, the message attributes.
 */
import type { Message, MessageAttributeValue } from '@aws-sdk/client-sqs';
import { EffectivelyOnceError } from '../core/errors';
import type { SqsMessageAttribute, SqsRecord } from '../core/sqs-event';

/**
 * The `ReceiveMessage` settings that make a received message as complete as a Lambda record:
 * every system attribute (both the legacy and the current parameter) and every message attribute.
 */
export const RECEIVE_ALL_ATTRIBUTES = Object.freeze({
  AttributeNames: ['All'],
  MessageSystemAttributeNames: ['All'],
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

/**
 * Converts one received message into the record shape of a Lambda SQS event: `messageId`,
 * `receiptHandle`, `body`, system `attributes`, `messageAttributes` (binary values as base64,
 * as Lambda delivers them), `md5OfBody` and `eventSource: 'aws:sqs'`. Throws `INVALID_EVENT`
 * for a message without a `MessageId` (SQS always sets one).
 *
 * @example
 * const { Messages = [] } = await sqs.send(
 *   new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, ...RECEIVE_ALL_ATTRIBUTES }),
 * );
 * const response = await processBatch({ Records: Messages.map((message) => toSqsRecord(message)) });
 */
export function toSqsRecord(message: Message): SqsRecord {
  if (typeof message?.MessageId !== 'string' || message.MessageId === '') {
    throw new EffectivelyOnceError('INVALID_EVENT', 'Expected an SQS message with a `MessageId`');
  }
  const messageAttributes: Record<string, SqsMessageAttribute> = {};
  for (const [name, value] of Object.entries(message.MessageAttributes ?? {})) {
    messageAttributes[name] = toAttribute(value);
  }
  return {
    messageId: message.MessageId,
    ...(message.ReceiptHandle === undefined ? {} : { receiptHandle: message.ReceiptHandle }),
    body: message.Body ?? '',
    attributes: { ...(message.Attributes ?? {}) },
    messageAttributes,
    ...(message.MD5OfBody === undefined ? {} : { md5OfBody: message.MD5OfBody }),
    eventSource: 'aws:sqs',
  };
}
