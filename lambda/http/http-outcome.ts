/**
 * The transport-free part of the HTTP idempotency wrapper: what a claim's answer means for a
 * request, which handler responses are stored, how a response is stored (size-capped) and
 * replayed, and the problem responses (RFC 9457) the wrapper answers with itself.
 */
import { readExistingRecord } from '../core/existing-record';
import { MAX_ITEM_BYTES } from '../core/item-size';
import type { InboxRecord, InsertResult } from '../core/store-port';
import type { HttpResponse } from './http-event';

/** Header added to every replayed response. */
export const REPLAYED_HEADER = 'Idempotent-Replayed';

/** Header added to a replay whose body was too large to store (value `too-large`). */
export const OMITTED_HEADER = 'Idempotent-Response-Omitted';

/**
 * Default cap on a stored response (status, headers, cookies, body), in UTF-8 bytes of its
 * JSON text: the 400 KB item limit less 16 KB for the rest of the inbox record (its key is at
 * most 1 KB).
 */
export const DEFAULT_MAX_RESPONSE_BYTES = MAX_ITEM_BYTES - 16 * 1024;

/** A handler response as stored in the inbox record's `result` (as JSON text). */
export interface StoredHttpResponse {
  /** The HTTP status the handler answered. */
  readonly statusCode: number;
  /** The handler's headers. */
  readonly headers?: Record<string, string>;
  /** Payload 1.0: the handler's repeated headers. */
  readonly multiValueHeaders?: Record<string, string[]>;
  /** Payload 2.0: the handler's `Set-Cookie` values. */
  readonly cookies?: string[];
  /** The handler's body (absent when omitted for size). */
  readonly body?: string;
  /** True when `body` is base64-encoded binary. */
  readonly isBase64Encoded?: boolean;
  /** Set when the response was over the cap: only the status (and headers, if they fit) were kept. */
  readonly omitted?: 'too-large';
}

/** What the claim's answer means for the request. */
export type ClaimDecision =
  | {
      /** The key is ours (a first request, or a takeover of a crashed one): run the handler. */
      readonly kind: 'run';
    }
  | {
      /** The first request completed: answer with its stored response. */
      readonly kind: 'replay';
      /** The first request's stored response. */
      readonly response: StoredHttpResponse;
    }
  | {
      /** The first request is still running: 409, retry after the lease ends. */
      readonly kind: 'in-progress';
      /** Seconds until the lease ends, rounded up (the `Retry-After` header). */
      readonly retryAfterSeconds: number;
    }
  | {
      /** The key was used for a different request: 422. */
      readonly kind: 'mismatch';
    }
  | {
      /** The store returned a record it should have treated as absent, or an unreadable one: 503, retry. */
      readonly kind: 'retry';
      /** Why, for the log line. */
      readonly reason: string;
    };

/** Seconds until `leaseExpiresAt`, rounded up, at least 1 (the `Retry-After` of a 409). */
export function retryAfterSeconds(leaseExpiresAt: number | undefined, nowMillis: number): number {
  if (leaseExpiresAt === undefined || !Number.isFinite(leaseExpiresAt)) return 1;
  return Math.max(1, Math.ceil((leaseExpiresAt - nowMillis) / 1000));
}

/** True when `value` has the shape of a stored response. */
export function isStoredHttpResponse(value: unknown): value is StoredHttpResponse {
  return (
    typeof value === 'object' &&
    value !== null &&
    Number.isSafeInteger((value as StoredHttpResponse).statusCode)
  );
}

/** The stored response in a record's `result`: JSON text (as written), or an object. */
export function readStoredResponse(result: unknown): StoredHttpResponse | undefined {
  let value = result;
  if (typeof result === 'string') {
    try {
      value = JSON.parse(result);
    } catch {
      return undefined;
    }
  }
  return isStoredHttpResponse(value) ? value : undefined;
}

/** Size of a stored response: UTF-8 bytes of its JSON text. */
export function storedResponseBytes(response: StoredHttpResponse): number {
  return Buffer.byteLength(JSON.stringify(response), 'utf8');
}

/**
 * Decides what to do with a request from the store's answer to its claim. The fingerprint is
 * compared first: the same key with a different request is a 422 whether or not the first is
 * still running.
 *
 * @example
 * decideClaim(await store.claimLease(record, now), record.fingerprint, now);
 */
export function decideClaim(result: InsertResult, fingerprint: string, nowMillis: number): ClaimDecision {
  if (result.kind === 'inserted') return { kind: 'run' };
  return decideExisting(result.record, fingerprint, nowMillis);
}

function decideExisting(record: InboxRecord, fingerprint: string, nowMillis: number): ClaimDecision {
  const reading = readExistingRecord(record, fingerprint, nowMillis);
  switch (reading.kind) {
    case 'expired':
      return { kind: 'retry', reason: 'The store returned an expired inbox record' };
    case 'mismatch':
      return { kind: 'mismatch' };
    case 'in-flight':
    case 'lease-ended':
      return { kind: 'in-progress', retryAfterSeconds: retryAfterSeconds(reading.leaseExpiresAt, nowMillis) };
    case 'released':
      // Another request of the same key claims it again now: retry in a second.
      return { kind: 'in-progress', retryAfterSeconds: 1 };
    case 'completed': {
      const response = readStoredResponse(reading.result);
      if (response === undefined) {
        return { kind: 'retry', reason: 'The completed inbox record holds no readable response' };
      }
      return { kind: 'replay', response };
    }
  }
}

/**
 * The default rule for which responses are stored and replayed: everything below 500 except
 * 408, 409, 425 and 429, which tell the client to try again later. A 5xx (or one of those four)
 * releases the claim so a retry runs the handler again.
 */
export function isReplayableStatus(statusCode: number): boolean {
  return (
    statusCode < 500 && statusCode !== 408 && statusCode !== 409 && statusCode !== 425 && statusCode !== 429
  );
}

function stringRecord(value: unknown): Record<string, string> | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const out: Record<string, string> = {};
  for (const [name, item] of Object.entries(value)) {
    if (item !== undefined && item !== null) out[name] = String(item);
  }
  return out;
}

function listRecord(value: unknown): Record<string, string[]> | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const out: Record<string, string[]> = {};
  for (const [name, list] of Object.entries(value)) {
    if (Array.isArray(list)) out[name] = list.map(String);
  }
  return out;
}

/**
 * The handler's result as a response: a structured result (`statusCode` set) as it is; for
 * payload 2.0 anything else is what API Gateway makes of it (status 200, JSON, the value as
 * the body). `undefined` when the result is not a response (payload 1.0 without `statusCode`:
 * API Gateway answers 502).
 */
export function toStoredResponse(result: unknown, version: '1.0' | '2.0'): StoredHttpResponse | undefined {
  const structured = typeof result === 'object' && result !== null ? (result as Record<string, unknown>) : {};
  if (Number.isSafeInteger(structured.statusCode)) {
    const headers = stringRecord(structured.headers);
    const multiValueHeaders = listRecord(structured.multiValueHeaders);
    const cookies = Array.isArray(structured.cookies) ? structured.cookies.map(String) : undefined;
    return {
      statusCode: structured.statusCode as number,
      ...(headers ? { headers } : {}),
      ...(multiValueHeaders ? { multiValueHeaders } : {}),
      ...(cookies ? { cookies } : {}),
      ...(typeof structured.body === 'string' ? { body: structured.body } : {}),
      ...(structured.isBase64Encoded === true ? { isBase64Encoded: true } : {}),
    };
  }
  if (version === '1.0' || result === undefined) return undefined;
  return {
    statusCode: 200,
    headers: { 'content-type': 'application/json' },
    body: typeof result === 'string' ? result : JSON.stringify(result),
  };
}

const BODY_HEADERS = new Set(['content-type', 'content-length', 'content-encoding', 'content-md5', 'etag']);

/**
 * Caps a response at `maxBytes` (UTF-8 bytes of its JSON text). Over the cap, the body is not kept:
 * the stored response holds the status code, the headers that do not describe the body (when
 * they fit) and `omitted: 'too-large'`, so a retry learns the outcome (and, say, a `Location`)
 * without the handler running again.
 */
export function capStoredResponse(response: StoredHttpResponse, maxBytes: number): StoredHttpResponse {
  if (storedResponseBytes(response) <= maxBytes) return response;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers ?? {})) {
    if (!BODY_HEADERS.has(name.toLowerCase())) headers[name] = value;
  }
  const withHeaders: StoredHttpResponse = { statusCode: response.statusCode, headers, omitted: 'too-large' };
  if (storedResponseBytes(withHeaders) <= maxBytes) return withHeaders;
  return { statusCode: response.statusCode, omitted: 'too-large' };
}

/** The response a retry gets: the stored one, with `Idempotent-Replayed: true`. */
export function toReplayResponse(stored: StoredHttpResponse): HttpResponse {
  const headers: Record<string, string> = { ...(stored.headers ?? {}), [REPLAYED_HEADER]: 'true' };
  if (stored.omitted !== undefined) headers[OMITTED_HEADER] = stored.omitted;
  return {
    statusCode: stored.statusCode,
    headers,
    ...(stored.multiValueHeaders ? { multiValueHeaders: stored.multiValueHeaders } : {}),
    ...(stored.cookies ? { cookies: stored.cookies } : {}),
    body: stored.body ?? '',
    isBase64Encoded: stored.isBase64Encoded === true,
  };
}

/** A problem response (`application/problem+json`, RFC 9457). */
export function problemResponse(
  statusCode: number,
  title: string,
  detail: string,
  headers: Record<string, string> = {},
): HttpResponse {
  return {
    statusCode,
    headers: { 'Content-Type': 'application/problem+json', ...headers },
    body: JSON.stringify({ type: 'about:blank', title, status: statusCode, detail }),
    isBase64Encoded: false,
  };
}

/** The problem responses the wrapper answers with itself. */
export const PROBLEMS = Object.freeze({
  /** 400: the operation requires an `Idempotency-Key` header. */
  missingKey: () =>
    problemResponse(400, 'Idempotency-Key is missing', 'This operation requires an Idempotency-Key header.'),
  /** 400: the header is not a usable key, with the reason. */
  invalidKey: (reason: string) => problemResponse(400, 'Idempotency-Key is invalid', reason),
  /** 409 with `Retry-After`: the first request with the key is still running. */
  inProgress: (seconds: number) =>
    problemResponse(
      409,
      'A request with this Idempotency-Key is still being processed',
      `Retry after ${seconds} second${seconds === 1 ? '' : 's'}.`,
      { 'Retry-After': String(seconds) },
    ),
  /** 422: the key was used for a different request. */
  mismatch: () =>
    problemResponse(
      422,
      'Idempotency-Key is already used',
      'This Idempotency-Key was used for a different request; use a new key for a new request.',
    ),
  /** 503 with `Retry-After: 1`: the store could not be reached. */
  unavailable: () =>
    problemResponse(503, 'Idempotency check unavailable', 'The idempotency store could not be reached.', {
      'Retry-After': '1',
    }),
  /** 500: the check is misconfigured (missing table, denied access). */
  misconfigured: () =>
    problemResponse(500, 'Idempotency check failed', 'The idempotency check is misconfigured.'),
});
