/**
 * Dedup keys: where the key of a message comes from (key sources), how a key source's value
 * becomes a key string, and how a key is scoped by consumer (and effect) into the inbox
 * record's partition key.
 *
 * Keys come from the producer or the business, never from transport ids that change on a
 * resend: `fromMessageId()` exists, but only as an explicit, documented choice.
 */
import { CONSUMER_NAME_PATTERN } from './contract';
import { EffectivelyOnceError, expectOption } from './errors';
import { isWellFormedText, sha256Hex } from './fingerprint';
import type { InboundMessage, MessageAttribute } from './inbound-message';

/** One part of a dedup key. */
export type KeyPart = string | number | bigint;

/**
 * What a key source returns: a key, a list of parts (a composite natural key, each part
 * required), or nothing (`undefined`, `null`, `''`: a permanent `MISSING_KEY` error).
 */
export type KeyValue = KeyPart | readonly (KeyPart | null | undefined)[] | null | undefined;

/**
 * Picks the dedup key of a message from the transport's record, its parsed body and the message
 * as the engine sees it (its attributes and id, the same for every transport).
 */
export type KeySource<TBody = unknown, TRecord = unknown> = (
  record: TRecord,
  body: TBody,
  message: InboundMessage<TRecord>,
) => KeyValue;

/** Consumer and effect names: no `#` or `/`, so a scoped key has exactly one reading. */
export const NAME_PATTERN = CONSUMER_NAME_PATTERN;

/**
 * A scoped key longer than this (UTF-8 bytes) is stored as `<scope>#sha256:<hex>`. Half of
 * DynamoDB's 2048-byte partition key limit, leaving room for any scope.
 */
export const SCOPED_KEY_HASH_THRESHOLD_BYTES = 1024;

/** Prefix of a hashed dedup key inside a scoped key. */
export const HASHED_KEY_PREFIX = 'sha256:';

/** True when `name` can scope keys (a consumer or effect name). */
export function isValidName(name: unknown): name is string {
  return typeof name === 'string' && NAME_PATTERN.test(name);
}

/**
 * The inbox record's partition key for `dedupKey`: `<consumer>#<dedupKey>`, or
 * `<consumer>/<effect>#<dedupKey>` for a named effect. A key whose scoped form would exceed
 * {@link SCOPED_KEY_HASH_THRESHOLD_BYTES}, or that itself starts with `sha256:`, is replaced by
 * `sha256:<hex of the key>` so every scoped key fits DynamoDB and no literal key can collide
 * with a hashed one. A key holding a lone surrogate (ill-formed UTF-16, which has no UTF-8 form)
 * is a permanent `INVALID_KEY`.
 *
 * @example
 * scopeKey('billing', 'order-1:PAID');            // 'billing#order-1:PAID'
 * scopeKey('billing', 'order-1', 'send-invoice'); // 'billing/send-invoice#order-1'
 */
export function scopeKey(consumer: string, dedupKey: string, effect?: string): string {
  assertName('consumer', consumer);
  if (effect !== undefined) assertName('effect', effect);
  if (dedupKey === '') throw new EffectivelyOnceError('MISSING_KEY', 'The dedup key is empty');
  if (!isWellFormedText(dedupKey)) throw illFormedKey('The dedup key');
  const scope = effect === undefined ? `${consumer}#` : `${consumer}/${effect}#`;
  const scoped = scope + dedupKey;
  if (
    dedupKey.startsWith(HASHED_KEY_PREFIX) ||
    Buffer.byteLength(scoped, 'utf8') > SCOPED_KEY_HASH_THRESHOLD_BYTES
  ) {
    return `${scope}${HASHED_KEY_PREFIX}${sha256Hex(dedupKey)}`;
  }
  return scoped;
}

/** Throws `INVALID_OPTIONS` unless `name` can scope keys (a consumer or effect name). */
export function assertName(field: string, name: unknown): void {
  // Checked for every message: the message is built only for a name that fails.
  if (!isValidName(name)) expectOption(false, field, `a name matching ${NAME_PATTERN}`, name);
}

/**
 * Turns a key source's value into the dedup key. A key is a list of parts (a plain key is a list
 * of one): each part has `%` written as `%25` and `:` as `%3A`, and the parts are joined with
 * `:`. So a plain key without `%` or `:` is itself (`'order-1'`), `['order-1', 'PAID']` is
 * `'order-1:PAID'`, and the plain key `'order-1:PAID'` is `'order-1%3APAID'`: no plain key equals
 * a composite one, and `['a:b', 'c']` differs from `['a', 'b:c']`.
 *
 * Throws `MISSING_KEY` for a missing or empty key (or part), and `INVALID_KEY` for a part that is
 * not a string, a finite number or a bigint, an integer beyond `Number.MAX_SAFE_INTEGER` (a double
 * that may have lost digits), or a string holding a lone surrogate. Messages never quote the value
 * (it may be body data); they name `source`, where the key was read (`body field \`orderId\``),
 * when given: the handler passes it for the built-in key sources.
 *
 * @example
 * toDedupKey('evt-1');                  // 'evt-1'
 * toDedupKey(['tenant-1', 'order-1']);  // 'tenant-1:order-1'
 * toDedupKey('urn:order:1');            // 'urn%3Aorder%3A1'
 */
export function toDedupKey(value: KeyValue, source?: string): string {
  const label = source === undefined ? 'The dedup key' : `The dedup key (${source})`;
  if (Array.isArray(value)) {
    if (value.length === 0) throw missingKey(label);
    return value.map((part, index) => escapePart(toKeyPart(part, index, label))).join(':');
  }
  return escapePart(toKeyPart(value as KeyPart | null | undefined, undefined, label));
}

/**
 * Checks one key part and returns its text, unescaped: what {@link toDedupKey} does to each part
 * before escaping it. For callers building a composite from an already checked part (its text
 * then goes into `toDedupKey([...])` once, escaped once).
 */
export function toKeyPart(value: unknown, index?: number, key = 'The dedup key'): string {
  if (value === undefined || value === null || value === '') throw missingKey(partLabel(key, index));
  if (typeof value === 'string') {
    if (!isWellFormedText(value)) throw illFormedKey(partLabel(key, index));
    return value;
  }
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number' && Number.isFinite(value)) {
    if (!Number.isSafeInteger(value) && Number.isInteger(value))
      throw inexactNumberKey(partLabel(key, index));
    return String(value);
  }
  const kind = typeof value === 'number' ? String(value) : typeof value;
  throw new EffectivelyOnceError(
    'INVALID_KEY',
    `${partLabel(key, index)} must be a string, a finite number or a bigint, got ${kind}`,
  );
}

/**
 * How a key error names the key or its part `index` (`Part 1 of the dedup key`). Written only for
 * an error: every message's key goes through {@link toKeyPart}.
 */
function partLabel(key: string, index: number | undefined): string {
  return index === undefined ? key : `Part ${index} of ${key.charAt(0).toLowerCase()}${key.slice(1)}`;
}

/**
 * The permanent error for a number key that a double does not carry exactly: an integer beyond
 * `Number.MAX_SAFE_INTEGER`, or a body number whose literal lost digits when parsed. Two such
 * keys could read the same, acknowledging a different message as a duplicate.
 */
export function inexactNumberKey(label = 'The dedup key'): EffectivelyOnceError {
  return new EffectivelyOnceError(
    'INVALID_KEY',
    `${label} is a number that a double cannot hold exactly; send it as a string`,
  );
}

function illFormedKey(label: string): EffectivelyOnceError {
  return new EffectivelyOnceError(
    'INVALID_KEY',
    `${label} is not well-formed UTF-16 (it holds a lone surrogate)`,
  );
}

function escapePart(part: string): string {
  // Most parts hold neither: looking is several times cheaper than replacing nothing, twice.
  if (!part.includes('%') && !part.includes(':')) return part;
  return part.replaceAll('%', '%25').replaceAll(':', '%3A');
}

function missingKey(label = 'The dedup key'): EffectivelyOnceError {
  return new EffectivelyOnceError('MISSING_KEY', `${label} is missing or empty`);
}

/** The string (or base64 binary) value of a message attribute, if present. */
export function attributeValue(
  attributes: Readonly<Record<string, MessageAttribute>> | undefined,
  name: string,
): string | undefined {
  const attribute = attributes?.[name];
  return attribute?.stringValue ?? attribute?.binaryValue;
}

/**
 * The key is the value of the message attribute `name` (its string value, or the base64 of
 * a binary value).
 *
 * @example
 * fromAttribute('idempotency-key')
 */
export function fromAttribute(name: string): KeySource {
  return describedKeySource(
    (_record, _body, message) => attributeValue(message.attributes, name),
    `message attribute \`${name}\``,
  );
}

/** What each built-in key source reads, named in a `MISSING_KEY` or `INVALID_KEY` reason. */
const KEY_SOURCE_DESCRIPTIONS = new WeakMap<KeySource<never, never>, string>();

/** `source`, described as reading `description` (`body field \`orderId\``) for its key errors. */
export function describedKeySource<TSource extends KeySource<never, never>>(
  source: TSource,
  description: string,
): TSource {
  KEY_SOURCE_DESCRIPTIONS.set(source, description);
  return source;
}

/** What a built-in key source reads (`body field \`orderId\``), for a key error's reason. */
export function keySourceDescription(source: KeySource<never, never>): string | undefined {
  return KEY_SOURCE_DESCRIPTIONS.get(source);
}

/** The body paths of the key sources `fromBody(path)` made, for the lossless number check. */
const BODY_PATHS = new WeakMap<KeySource<never, never>, readonly string[]>();

/**
 * The body path a key source reads, when it was made by `fromBody(path)`: preparation then checks
 * a number key against its literal in the body text (a double may have dropped digits).
 */
export function bodyPathOf(source: KeySource<never, never>): readonly string[] | undefined {
  return BODY_PATHS.get(source);
}

/**
 * The key is a field of the parsed body: a dotted path (`'order.id'`), a list of path
 * segments (for names containing dots), or a typed function. Only a function may return a list
 * of parts, for a composite natural key (every part required); a path to an array or an object
 * is a permanent `INVALID_KEY`. With the default JSON parse, a number at a path is read from the
 * body text: an integer keeps every digit (`{"id":12345678901234567890}` is the key
 * `12345678901234567890`), any other number with more digits than a double keeps is
 * `INVALID_KEY`. A function sees JavaScript numbers: an integer beyond `Number.MAX_SAFE_INTEGER`
 * is `INVALID_KEY`, so return large ids as strings or bigints.
 *
 * @example
 * fromBody('eventId')
 * fromBody((order: OrderEvent) => [order.orderId, order.status]) // natural key
 */
export function fromBody<TBody>(pick: (body: TBody) => KeyValue): KeySource<TBody>;
/** The key is the body field at a dotted path (`'order.id'`) or a list of path segments. */
export function fromBody(path: string | readonly string[]): KeySource;
export function fromBody<TBody>(
  pathOrPick: string | readonly string[] | ((body: TBody) => KeyValue),
): KeySource<TBody> {
  if (typeof pathOrPick === 'function') return (_record, body) => pathOrPick(body);
  const segments = typeof pathOrPick === 'string' ? pathOrPick.split('.') : [...pathOrPick];
  const shown = segments.join('.');
  const source: KeySource<TBody> = (_record, body) => {
    let value: unknown = body;
    for (const segment of segments) {
      if (typeof value !== 'object' || value === null || !Object.hasOwn(value, segment)) return undefined;
      value = (value as Record<string, unknown>)[segment];
    }
    if (typeof value === 'object' && value !== null) {
      throw new EffectivelyOnceError(
        'INVALID_KEY',
        `The body field \`${shown}\` must be a string, a finite number or a bigint, got ${Array.isArray(value) ? 'an array' : 'an object'}`,
      );
    }
    return value as KeyValue;
  };
  BODY_PATHS.set(source, segments);
  return describedKeySource(source, `body field \`${shown}\``);
}

/**
 * The key is CloudEvents `source` + `id` (the pair CloudEvents defines as unique), joined as a
 * composite key. Binary mode is recognised first: message attributes `ce-source` and `ce-id`,
 * or `ce_source` and `ce_id` (both spellings are valid SQS attribute names; a message uses
 * one of them). Otherwise structured mode: a JSON body with `specversion`, `source` and `id`.
 *
 * @example
 * fromCloudEvent() // key 'https%3A//example.com/orders:evt-1'
 */
export function fromCloudEvent(): KeySource {
  return describedKeySource((_record, body, message) => {
    for (const separator of ['-', '_']) {
      const id = attributeValue(message.attributes, `ce${separator}id`);
      if (id !== undefined) return [attributeValue(message.attributes, `ce${separator}source`), id];
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
    const event = body as Record<string, unknown>;
    if (typeof event.specversion !== 'string') return undefined;
    return [event.source as KeyPart | undefined, event.id as KeyPart | undefined];
  }, 'CloudEvents `source` and `id`');
}

/**
 * The key is the transport's message id (an SQS `messageId`, a stream record's event id). Only
 * catches redeliveries of the same message: a producer that resends gets a new `messageId`, so
 * resends are **not** deduplicated. Prefer a producer or business key; choose this only when
 * redeliveries are all you need to absorb.
 */
export function fromMessageId(): KeySource {
  return (_record, _body, message) => message.id;
}
