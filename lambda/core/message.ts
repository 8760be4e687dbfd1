/**
 * The typed message a user's handler receives, and its preparation from a transport's message
 * (`InboundMessage`): parse the body, pick and scope the dedup key, fingerprint the payload.
 * Preparation depends only on the message, so every failure here is permanent.
 */
import {
  bodyPathOf,
  inexactNumberKey,
  type KeySource,
  type KeyValue,
  keySourceDescription,
  scopeKey,
  toDedupKey,
} from './dedup-key';
import { EffectivelyOnceError, isEffectivelyOnceError } from './errors';
import {
  canonicalJsonOfNode,
  canonicalJsonOfParsedText,
  fingerprintOf,
  sha256Hex,
  sha256HexOfBytes,
} from './fingerprint';
import type { InboundMessage, LambdaContext, MessageAttribute } from './inbound-message';
import {
  exactIntegerText,
  isExactNumberLiteral,
  isNumberLiteral,
  type JsonNode,
  nodeAt,
  readJson,
} from './json-text';

/** One message, typed: what a user's handler receives. `TRecord` is the transport's own record. */
export interface Message<TBody = unknown, TRecord = unknown> {
  /** The parsed body (see the `parse` option). */
  readonly body: TBody;
  /**
   * The body as text, exactly as delivered. A stream record whose data is not UTF-8 text has
   * its data's lenient UTF-8 decoding here and its exact bytes in `rawBytes`.
   */
  readonly rawBody: string;
  /** The body's exact bytes, when the transport delivers bytes (a stream record's data). */
  readonly rawBytes?: Uint8Array;
  /** The dedup key picked by the `dedupKey` option. */
  readonly dedupKey: string;
  /** The inbox record's partition key: `<consumer>#<dedupKey>` (hashed when long). */
  readonly scopedKey: string;
  /** The transport's id of this delivery: an SQS message id (changes when a producer resends), a stream event id. */
  readonly messageId: string;
  /** The message attributes as delivered (a stream entry point's tell where the record came from). */
  readonly attributes: Readonly<Record<string, MessageAttribute>>;
  /**
   * The message group: a FIFO queue's ordering group, the tenant of a fair (standard) queue, a
   * stream's shard; `undefined` when there is none.
   */
  readonly groupId: string | undefined;
  /** The correlation id carried into every log line (see the `correlationId` option). */
  readonly correlationId: string;
  /**
   * The transport's own record, typed per entry point: the SQS record (for system attributes
   * such as `ApproximateReceiveCount`), the Kinesis or DynamoDB Streams record.
   */
  readonly record: TRecord;
  /**
   * The Lambda context of the invocation, as the runtime passed it (typed with the fields the
   * toolkit reads; the runtime's object has them all): for example `getRemainingTimeInMillis()`
   * before a long call, or `awsRequestId` for a downstream log. `undefined` when the handler is
   * called without one (the long-running worker, tests).
   */
  readonly context?: LambdaContext;
}

/**
 * How the body is parsed: JSON, left as text, or a typed function (which may validate). A body
 * that is not UTF-8 text (a stream record's binary data) fails `json` and `text` as
 * `MALFORMED_BODY`; a function gets its lenient decoding and, as its second argument, the exact
 * bytes (for example to gunzip a CloudWatch Logs subscription's data).
 */
export type BodyParser<TBody> = 'json' | 'text' | ((rawBody: string, rawBytes?: Uint8Array) => TBody);

/**
 * Picks the part of a message that is fingerprinted, for example to drop volatile fields. It sees
 * the parsed body, so numbers are JavaScript numbers: two large numbers that parse to the same
 * double fingerprint the same (the default fingerprint reads the body text and keeps every digit).
 */
export type FingerprintPicker<TBody, TRecord = unknown> = (message: Message<TBody, TRecord>) => unknown;

/** Picks the correlation id of a message from the transport's record. */
export type CorrelationIdPicker<TRecord = unknown> = (record: TRecord) => string | undefined;

/** What preparation needs from the resolved options. */
export interface PrepareConfig<TBody, TRecord = unknown> {
  readonly consumer: string;
  readonly dedupKey: KeySource<TBody, TRecord>;
  readonly parse: BodyParser<TBody>;
  readonly fingerprint: FingerprintPicker<TBody, TRecord> | undefined;
  readonly correlationId: CorrelationIdPicker<TRecord> | undefined;
  /** Show the messages of errors thrown by the user's functions (see `logErrorMessages`). */
  readonly logErrorMessages?: boolean;
}

/** A prepared message, or the permanent error that stops it, with what is known for logs. */
export type Prepared<TBody, TRecord = unknown> =
  | { readonly ok: true; readonly message: Message<TBody, TRecord>; readonly fingerprint: string }
  | {
      readonly ok: false;
      readonly error: EffectivelyOnceError;
      readonly correlationId: string;
      readonly dedupKey?: string;
      readonly scopedKey?: string;
    };

/**
 * The default correlation id: message attribute `correlation-id`, else `correlationId`, else
 * the message id.
 */
export function defaultCorrelationId(message: Pick<InboundMessage, 'id' | 'attributes'>): string {
  const attributes = message.attributes ?? {};
  return attributes['correlation-id']?.stringValue ?? attributes.correlationId?.stringValue ?? message.id;
}

/** Decodes bytes as UTF-8, writing U+FFFD for what is not UTF-8: for a parse function and the logs' sake only. */
const lenientUtf8 = new TextDecoder('utf-8');

const NOT_JSON = Symbol('not-json');

function tryParseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return NOT_JSON;
  }
}

/**
 * What `run` (a user's function) returns; when it throws, an error explaining `message`. A
 * toolkit error it throws on purpose (`PermanentError`, `EffectivelyOnceError`) keeps its code
 * and its message, which is written for the logs. Anything else is a permanent error `code` with
 * the class of what was thrown, and its message only with `logErrorMessages` (a validator's
 * message quotes the value it rejects; a `SyntaxError` from `JSON.parse` quotes the body, and
 * bodies never reach the logs).
 */
function attempt<T>(
  run: () => T,
  code: 'MALFORMED_BODY' | 'MISSING_KEY',
  message: string,
  logErrorMessages: boolean | undefined,
): T {
  try {
    return run();
  } catch (cause) {
    if (isEffectivelyOnceError(cause)) {
      throw new EffectivelyOnceError(cause.code, `${message}: ${cause.message}`, { cause });
    }
    const { name, message: detail } = (cause ?? {}) as { name?: unknown; message?: unknown };
    const className = typeof name === 'string' ? name : typeof cause;
    const shown =
      logErrorMessages === true && typeof detail === 'string' && name !== 'SyntaxError'
        ? `${message}: ${detail}`
        : `${message} (${className} thrown)`;
    throw new EffectivelyOnceError(code, shown, { cause });
  }
}

/**
 * The key a `fromBody(path)` source picked from a JSON body, read again from the number's literal
 * in the body text: `JSON.parse` rounds a literal with more digits than a double keeps, so two
 * different ids would become one key. An integer keeps every digit (as a bigint key would); any
 * other number must be exactly what its double holds, else `INVALID_KEY`.
 */
function exactBodyNumberKey(
  value: KeyValue,
  source: KeySource<never, never>,
  readBody: () => JsonNode,
): KeyValue {
  if (typeof value !== 'number') return value;
  const path = bodyPathOf(source);
  if (path === undefined) return value;
  const node = nodeAt(readBody(), path);
  if (!isNumberLiteral(node)) return value;
  const integer = exactIntegerText(node.literal);
  if (integer !== undefined) return integer;
  if (!isExactNumberLiteral(node.literal)) throw inexactNumberKey();
  return value;
}

/**
 * Parses, keys and fingerprints one message. The default fingerprint is the canonical JSON of
 * the body text when it is JSON (read losslessly, so every digit of a number counts), else of the
 * raw body string, and for a body that is not text the SHA-256 of its bytes. `context` is the
 * invocation's Lambda context, handed to the user's handler. Never throws.
 */
export function prepareMessage<TBody, TRecord>(
  inbound: InboundMessage<TRecord>,
  config: PrepareConfig<TBody, TRecord>,
  context?: LambdaContext,
): Prepared<TBody, TRecord> {
  let correlationId = inbound.id;
  let dedupKey: string | undefined;
  let scopedKey: string | undefined;
  try {
    correlationId = config.correlationId?.(inbound.record) || defaultCorrelationId(inbound);
    const { text, bytes } = inbound;
    const rawBody = text ?? lenientUtf8.decode(bytes ?? new Uint8Array());
    let tree: JsonNode | undefined;
    // The lossless reading of a JSON body, made once for the key check and the fingerprint.
    const readBody = (): JsonNode => {
      tree ??= readJson(rawBody);
      return tree;
    };
    let json: unknown = NOT_JSON;
    let body: TBody;
    if (config.parse === 'json' || config.parse === 'text') {
      if (text === undefined) {
        throw new EffectivelyOnceError('MALFORMED_BODY', 'The body is not UTF-8 text');
      }
    }
    if (config.parse === 'json') {
      json = tryParseJson(rawBody);
      // The SyntaxError quotes the body, so it is not kept as the cause.
      if (json === NOT_JSON) throw new EffectivelyOnceError('MALFORMED_BODY', 'The body is not valid JSON');
      body = json as TBody;
    } else if (config.parse === 'text') {
      body = rawBody as TBody;
    } else {
      const parse = config.parse;
      body = attempt(
        () => parse(rawBody, bytes),
        'MALFORMED_BODY',
        'The body was rejected by the `parse` option',
        config.logErrorMessages,
      );
    }
    // Only the user's function runs inside `attempt`: the toolkit's own key errors stay as they are.
    const keyValue = attempt(
      () => config.dedupKey(inbound.record, body, inbound),
      'MISSING_KEY',
      'The `dedupKey` option failed to pick a key',
      config.logErrorMessages,
    );
    // Only the default parse makes the body the JSON of the text the literal is read from.
    const exact =
      config.parse === 'json'
        ? exactBodyNumberKey(keyValue, config.dedupKey as KeySource<never, never>, readBody)
        : keyValue;
    dedupKey = toDedupKey(exact, keySourceDescription(config.dedupKey as KeySource<never, never>));
    scopedKey = scopeKey(config.consumer, dedupKey);
    const message: Message<TBody, TRecord> = {
      body,
      rawBody,
      ...(bytes === undefined ? {} : { rawBytes: bytes }),
      dedupKey,
      scopedKey,
      messageId: inbound.id,
      attributes: inbound.attributes ?? {},
      groupId: inbound.groupId,
      correlationId,
      record: inbound.record,
      context,
    };
    let fingerprint: string;
    const pick = config.fingerprint;
    if (pick) {
      fingerprint = fingerprintOf(
        attempt(
          () => pick(message),
          'MALFORMED_BODY',
          'The `fingerprint` option failed',
          config.logErrorMessages,
        ),
      );
    } else if (text === undefined) {
      fingerprint = sha256HexOfBytes(bytes ?? new Uint8Array());
    } else {
      if (json === NOT_JSON) json = tryParseJson(rawBody);
      if (json === NOT_JSON) fingerprint = fingerprintOf(rawBody);
      // The key check may have read the body losslessly already; else the parsed body serves.
      else if (tree !== undefined) fingerprint = sha256Hex(canonicalJsonOfNode(tree));
      else fingerprint = sha256Hex(canonicalJsonOfParsedText(rawBody, json));
    }
    return { ok: true, message, fingerprint };
  } catch (error) {
    const failure = isEffectivelyOnceError(error)
      ? error
      : new EffectivelyOnceError('MALFORMED_BODY', 'The message could not be prepared', { cause: error });
    return { ok: false, error: failure, correlationId, dedupKey, scopedKey };
  }
}
