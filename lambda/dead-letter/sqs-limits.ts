/**
 * What Amazon SQS refuses in a message, as the dead-letter writers need to know it before they
 * send: a dead letter that SQS refuses would be retried forever and hold its shard. Each limit
 * is quoted from the Amazon SQS documentation.
 */

/**
 * Every character SQS refuses: "A message can include only XML, JSON, and unformatted text. The
 * following Unicode characters are allowed: #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD |
 * #x10000 to #x10FFFF. Any characters not included in this list are rejected." (Amazon SQS
 * Developer Guide, "Amazon SQS message quotas", Message content; the same holds for String and
 * Number attribute values.) With the `u` flag a lone surrogate is one code point outside these
 * ranges, so it matches too. Global: for `replace` only (a global regex's `test` is stateful).
 */
export const OUTSIDE_SQS_TEXT_GLOBAL = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;

/** {@link OUTSIDE_SQS_TEXT_GLOBAL} without the global flag, for a stateless `test`. */
const OUTSIDE_SQS_TEXT = new RegExp(OUTSIDE_SQS_TEXT_GLOBAL.source, 'u');

/** Whether SQS takes every character of `text` in a message body or String attribute value. */
export function isSqsText(text: string): boolean {
  return !OUTSIDE_SQS_TEXT.test(text);
}

/**
 * JSON text that SQS (and SNS, and EventBridge) accepts, for the same value: `JSON.stringify`
 * already escapes control characters and lone surrogates; the two noncharacters U+FFFE and U+FFFF,
 * which SQS refuses, are escaped here too (`\ufffe`, `\uffff`), so the parsed JSON is unchanged.
 */
export function toSqsJson(value: object): string;
/** `undefined` for a value JSON cannot hold (`undefined`, a function), as `JSON.stringify`. */
export function toSqsJson(value: unknown): string | undefined;
export function toSqsJson(value: unknown): string | undefined {
  return JSON.stringify(value)?.replace(
    OUTSIDE_SQS_TEXT_GLOBAL,
    (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/**
 * "The minimum message size is 1 byte (1 character). The maximum is 1,048,576 bytes (1 MiB)."
 * (Amazon SQS API Reference, SendMessage, MessageBody.) A queue's `MaximumMessageSize` may be set
 * lower, from 1,024 bytes: the writers take the dead-letter queue's own limit.
 */
export const SQS_MAX_MESSAGE_BYTES = 1_048_576;

/**
 * The limit a dead-letter writer assumes when it is not told its queue's: 262,144 bytes (256 KiB),
 * the `MaximumMessageSize` a queue had by default before SQS raised the maximum to 1 MiB, so a
 * dead letter fits any queue created with the defaults. The `IdempotentStreamConsumer` construct
 * tells the function its queue's limit (`EO_DEAD_LETTER_MAX_MESSAGE_BYTES`).
 */
export const DEFAULT_DEAD_LETTER_MAX_MESSAGE_BYTES = 262_144;

/**
 * "The length of MessageGroupId is 128 characters. Valid values: alphanumeric characters and
 * punctuation (!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~)." The same holds for MessageDeduplicationId
 * (Amazon SQS API Reference, SendMessage), and for an SNS FIFO topic's group and deduplication
 * ids (Amazon SNS API Reference, Publish: "MessageGroupId can contain up to 128 alphanumeric
 * characters (a-z, A-Z, 0-9) and punctuation"). SendMessage states the group id's rule for both
 * queue types, after "Standard queues: Use MessageGroupId in standard queues to enable fair
 * queues", so a fair queue's group id is held to it too.
 */
const FIFO_ID = /^[\x21-\x7e]{1,128}$/;

/** Whether SQS and SNS take `value` as a FIFO group or deduplication id: 1 to 128 of `!`…`~`. */
export function isSqsFifoId(value: string): boolean {
  return FIFO_ID.test(value);
}

/** "A message can have up to 10 metadata attributes." (Amazon SQS message quotas.) */
export const SQS_MAX_MESSAGE_ATTRIBUTES = 10;

/** One message attribute as the SDK sends it (`MessageAttributeValue`), the part that is counted. */
export interface CountedAttribute {
  readonly DataType?: string;
  readonly StringValue?: string;
  readonly BinaryValue?: Uint8Array;
}

/**
 * The size SQS counts for a message: "All parts of the message attribute, including name, type,
 * and value, are part of the message size restriction" (Amazon SQS API Reference,
 * MessageAttributeValue), with the body's UTF-8 bytes.
 */
export function sqsMessageBytes(
  body: string,
  attributes: Readonly<Record<string, CountedAttribute>>,
): number {
  let bytes = Buffer.byteLength(body, 'utf8');
  for (const [name, value] of Object.entries(attributes)) {
    bytes += Buffer.byteLength(name, 'utf8') + Buffer.byteLength(value.DataType ?? '', 'utf8');
    if (value.StringValue !== undefined) bytes += Buffer.byteLength(value.StringValue, 'utf8');
    if (value.BinaryValue !== undefined) bytes += value.BinaryValue.byteLength;
  }
  return bytes;
}
