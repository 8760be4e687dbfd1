/**
 * The SQS adapter of the dead-letter port (`deadLetter: 'direct'`): one `SendMessage` per
 * dead-lettered message, the original body unchanged and the reason in message attributes.
 */
import { createHash } from 'node:crypto';
import { type MessageAttributeValue, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { DEAD_LETTER_ATTRIBUTES } from '../core/contract';
import { EffectivelyOnceError } from '../core/errors';
import type { DeadLetterMessage, DeadLetterSender } from './dead-letter-message';
import { isSqsFifoId, OUTSIDE_SQS_TEXT_GLOBAL, SQS_MAX_MESSAGE_ATTRIBUTES } from './sqs-limits';

/** Options of {@link createSqsDeadLetterSender}. */
export interface SqsDeadLetterSenderOptions {
  /** The SQS client, created once at module scope. */
  readonly client: SQSClient;
  /** URL of the dead-letter queue; a URL ending in `.fifo` is sent to as a FIFO queue. */
  readonly queueUrl: string;
}

/** SQS accepts at most this many message attributes per message. */
const MAX_ATTRIBUTES = SQS_MAX_MESSAGE_ATTRIBUTES;
/** Longest reason kept in the `eo-reason` attribute, in code points; the full reason is in the log line. */
export const MAX_REASON_LENGTH = 1024;
/**
 * The longest reason a dead letter keeps when the whole one would not fit its queue, in code
 * points (an SQS message near its size limit, the smallest stream dead letter).
 */
export const SHORT_REASON_LENGTH = 128;

/**
 * `text` cut to at most `max` code points, the last one `…` when cut. Cut by code points, never
 * UTF-16 units, so no surrogate pair is split in half.
 */
export function cutText(text: string, max: number): string {
  // Shorter in UTF-16 units means shorter in code points too: no split needed.
  if (text.length <= max) return text;
  const codePoints = Array.from(text);
  return codePoints.length > max ? `${codePoints.slice(0, max - 1).join('')}…` : text;
}

/**
 * A string attribute value SQS accepts: characters outside XML 1.0 (a lone surrogate among
 * them) become `?`, and a value longer than `max` code points is cut to `max - 1` code points
 * and `…` (`cutText`).
 */
export function toAttributeText(value: string, max = Number.POSITIVE_INFINITY): string {
  return cutText(value.replace(OUTSIDE_SQS_TEXT_GLOBAL, '?'), max);
}

/**
 * `value` as a FIFO group or deduplication id: itself when SQS accepts it, else its SHA-256 (hex,
 * 64 characters), so the same value always maps to the same id.
 */
export function toFifoId(value: string): string {
  return isSqsFifoId(value) ? value : createHash('sha256').update(value, 'utf8').digest('hex');
}

function text(value: string, max?: number): MessageAttributeValue {
  return { DataType: 'String', StringValue: toAttributeText(value, max) };
}

/**
 * The attributes of the dead-lettered message, at most ten: `eo-reason` and `eo-code` always,
 * then `eo-deduplication-id` (the original FIFO deduplication id, which `fromDeduplicationId`
 * prefers, so a redriven message keeps its key); then the original attributes (needed to
 * process the message again after a redrive; earlier `eo-*` values are replaced); then
 * `eo-consumer`, `eo-source-message-id` and `eo-dedup-key` while there is room. Any attribute
 * name is kept as an own property, `__proto__` included.
 */
export function toDeadLetterAttributes(message: DeadLetterMessage): Record<string, MessageAttributeValue> {
  const attributes: Record<string, MessageAttributeValue> = {};
  const ours = new Set<string>(Object.values(DEAD_LETTER_ATTRIBUTES));
  const add = (name: string, value: MessageAttributeValue): void => {
    if (Object.keys(attributes).length >= MAX_ATTRIBUTES) return;
    // Assignment would set the prototype for `__proto__` instead of adding the attribute.
    Object.defineProperty(attributes, name, { value, enumerable: true, writable: true, configurable: true });
  };
  add(DEAD_LETTER_ATTRIBUTES.reason, text(message.reason, MAX_REASON_LENGTH));
  add(DEAD_LETTER_ATTRIBUTES.code, text(message.code));
  if (message.deduplicationId !== undefined)
    add(DEAD_LETTER_ATTRIBUTES.deduplicationId, text(message.deduplicationId));
  for (const [name, original] of Object.entries(message.attributes)) {
    if (ours.has(name)) continue;
    if (original.stringValue !== undefined) {
      add(name, { DataType: original.dataType, StringValue: original.stringValue });
    } else if (original.binaryValue !== undefined) {
      add(name, { DataType: original.dataType, BinaryValue: Buffer.from(original.binaryValue, 'base64') });
    }
  }
  add(DEAD_LETTER_ATTRIBUTES.consumer, text(message.consumer));
  add(DEAD_LETTER_ATTRIBUTES.sourceMessageId, text(message.sourceMessageId));
  if (message.dedupKey !== undefined)
    add(DEAD_LETTER_ATTRIBUTES.dedupKey, text(message.dedupKey, MAX_REASON_LENGTH));
  return attributes;
}

/**
 * Creates the SQS dead-letter sender. For a FIFO dead-letter queue the message keeps its group
 * (or the consumer name when it has none) and its deduplication id is the source message id
 * (each replaced by its SHA-256 where it is not a valid FIFO id, `toFifoId`),
 * so sending the same message again within five minutes (a retry after a lost acknowledgement)
 * adds no second copy. The original deduplication id travels in `eo-deduplication-id`, which
 * `fromDeduplicationId` prefers, so "fix, then redrive" finds the completed effects under the
 * same key. A failed send throws `DEAD_LETTER_FAILED` (retried: nothing is lost).
 *
 * @example
 * const deadLetterSender = createSqsDeadLetterSender({
 *   client: new SQSClient({}),
 *   queueUrl: process.env.EO_DEAD_LETTER_QUEUE_URL!,
 * });
 */
export function createSqsDeadLetterSender(options: SqsDeadLetterSenderOptions): DeadLetterSender {
  const { client, queueUrl } = options ?? ({} as SqsDeadLetterSenderOptions);
  if (typeof client?.send !== 'function') {
    throw new EffectivelyOnceError(
      'INVALID_OPTIONS',
      `Expected \`client\` to be an SQSClient, got \`${typeof client}\``,
    );
  }
  if (typeof queueUrl !== 'string' || !/^https?:\/\//.test(queueUrl)) {
    throw new EffectivelyOnceError(
      'INVALID_OPTIONS',
      `Expected \`queueUrl\` to be a queue URL, got \`${String(queueUrl)}\``,
    );
  }
  const fifo = queueUrl.endsWith('.fifo');
  return {
    async send(message) {
      try {
        await client.send(
          new SendMessageCommand({
            QueueUrl: queueUrl,
            MessageBody: message.body,
            MessageAttributes: toDeadLetterAttributes(message),
            ...(fifo
              ? {
                  MessageGroupId: toFifoId(message.groupId ?? message.consumer),
                  MessageDeduplicationId: toFifoId(message.sourceMessageId),
                }
              : {}),
          }),
        );
      } catch (error) {
        throw new EffectivelyOnceError('DEAD_LETTER_FAILED', 'Sending to the dead-letter queue failed', {
          cause: error,
        });
      }
    },
  };
}
