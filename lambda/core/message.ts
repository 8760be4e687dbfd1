/**
 * The typed message a user's handler receives, and its preparation from an SQS record:
 * parse the body, pick and scope the dedup key, fingerprint the payload. Preparation depends
 * only on the message, so every failure here is permanent.
 */
import {
  bodyPathOf,
  inexactNumberKey,
  type KeySource,
  type KeyValue,
  scopeKey,
  toDedupKey,
} from './dedup-key';
import { EffectivelyOnceError, isEffectivelyOnceError } from './errors';
import { canonicalJsonOfNode, fingerprintOf, sha256Hex } from './fingerprint';
import {
  exactIntegerText,
  isExactNumberLiteral,
  isNumberLiteral,
  type JsonNode,
  nodeAt,
  readJson,
} from './json-text';
import type { LambdaContext, SqsMessageAttribute, SqsRecord } from './sqs-event';

/** One message, typed: what a user's handler receives. */
export interface Message<TBody = unknown> {
  /** The parsed body (see the `parse` option). */
  readonly body: TBody;
  /** The body exactly as delivered. */
  readonly rawBody: string;
  /** The dedup key picked by the `dedupKey` option. */
  readonly dedupKey: string;
  /** The inbox record's partition key: `<consumer>#<dedupKey>` (hashed when long). */
  readonly scopedKey: string;
  /** The SQS message id (changes when a producer resends). */
  readonly messageId: string;
  /** The message attributes as delivered. */
  readonly attributes: Readonly<Record<string, SqsMessageAttribute>>;
  /**
   * The message group: a FIFO queue's ordering group, or the tenant of a fair (standard) queue;
   * `undefined` when the producer set none.
   */
  readonly groupId: string | undefined;
  /** The correlation id carried into every log line (see the `correlationId` option). */
  readonly correlationId: string;
  /** The raw SQS record, for system attributes such as `ApproximateReceiveCount`. */
  readonly record: SqsRecord;
  /**
   * The Lambda context of the invocation, as the runtime passed it (typed with the fields the
   * toolkit reads; the runtime's object has them all): for example `getRemainingTimeInMillis()`
   * before a long call, or `awsRequestId` for a downstream log. `undefined` when the handler is
   * called without one (the long-running worker, tests).
   */
  readonly context?: LambdaContext;
}

/** How the body is parsed: JSON, left as text, or a typed function (which may validate). */
export type BodyParser<TBody> = 'json' | 'text' | ((rawBody: string) => TBody);

/**
 * Picks the part of a message that is fingerprinted, for example to drop volatile fields. It sees
 * the parsed body, so numbers are JavaScript numbers: two large numbers that parse to the same
 * double fingerprint the same (the default fingerprint reads the body text and keeps every digit).
 */
export type FingerprintPicker<TBody> = (message: Message<TBody>) => unknown;

/** Picks the correlation id of a record. */
export type CorrelationIdPicker = (record: SqsRecord) => string | undefined;

/** What preparation needs from the resolved options. */
export interface PrepareConfig<TBody> {
  readonly consumer: string;
  readonly dedupKey: KeySource<TBody>;
  readonly parse: BodyParser<TBody>;
  readonly fingerprint: FingerprintPicker<TBody> | undefined;
  readonly correlationId: CorrelationIdPicker | undefined;
  /** Show the messages of errors thrown by the user's functions (see `logErrorMessages`). */
  readonly logErrorMessages?: boolean;
}

/** A prepared message, or the permanent error that stops it, with what is known for logs. */
export type Prepared<TBody> =
  | { readonly ok: true; readonly message: Message<TBody>; readonly fingerprint: string }
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
export function defaultCorrelationId(record: SqsRecord): string {
  const attributes = record.messageAttributes ?? {};
  return (
    attributes['correlation-id']?.stringValue ?? attributes.correlationId?.stringValue ?? record.messageId
  );
}

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
function exactBodyNumberKey(value: KeyValue, source: KeySource<never>, readBody: () => JsonNode): KeyValue {
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
 * Parses, keys and fingerprints one record. The default fingerprint is the canonical JSON of
 * the body text when it is JSON (read losslessly, so every digit of a number counts), else of the
 * raw body string. `context` is the invocation's Lambda context, handed to the user's handler.
 * Never throws.
 */
export function prepareMessage<TBody>(
  record: SqsRecord,
  config: PrepareConfig<TBody>,
  context?: LambdaContext,
): Prepared<TBody> {
  let correlationId = record.messageId;
  let dedupKey: string | undefined;
  let scopedKey: string | undefined;
  try {
    correlationId = config.correlationId?.(record) || defaultCorrelationId(record);
    const rawBody = record.body;
    let tree: JsonNode | undefined;
    // The lossless reading of a JSON body, made once for the key check and the fingerprint.
    const readBody = (): JsonNode => {
      tree ??= readJson(rawBody);
      return tree;
    };
    let json: unknown = NOT_JSON;
    let body: TBody;
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
        () => parse(rawBody),
        'MALFORMED_BODY',
        'The body was rejected by the `parse` option',
        config.logErrorMessages,
      );
    }
    // Only the user's function runs inside `attempt`: the toolkit's own key errors stay as they are.
    const keyValue = attempt(
      () => config.dedupKey(record, body),
      'MISSING_KEY',
      'The `dedupKey` option failed to pick a key',
      config.logErrorMessages,
    );
    // Only the default parse makes the body the JSON of the text the literal is read from.
    const exact =
      config.parse === 'json' ? exactBodyNumberKey(keyValue, config.dedupKey, readBody) : keyValue;
    dedupKey = toDedupKey(exact);
    scopedKey = scopeKey(config.consumer, dedupKey);
    const message: Message<TBody> = {
      body,
      rawBody,
      dedupKey,
      scopedKey,
      messageId: record.messageId,
      attributes: record.messageAttributes ?? {},
      groupId: record.attributes?.MessageGroupId,
      correlationId,
      record,
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
    } else {
      if (json === NOT_JSON) json = tryParseJson(rawBody);
      fingerprint = json === NOT_JSON ? fingerprintOf(rawBody) : sha256Hex(canonicalJsonOfNode(readBody()));
    }
    return { ok: true, message, fingerprint };
  } catch (error) {
    const failure = isEffectivelyOnceError(error)
      ? error
      : new EffectivelyOnceError('MALFORMED_BODY', 'The message could not be prepared', { cause: error });
    return { ok: false, error: failure, correlationId, dedupKey, scopedKey };
  }
}
