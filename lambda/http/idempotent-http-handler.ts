/**
 * `createIdempotentHttpHandler`: wraps an API Gateway (REST or HTTP API) or function URL
 * handler so that requests carrying an `Idempotency-Key` run once. The first request claims the
 * key with a lease (`claimLease`), runs, and its response is stored (`complete`); a retry gets the
 * stored response; the same key on a different request gets 422; a retry while the first is
 * still running gets 409 with `Retry-After`. A failure releases the claim (`release`) so a retry
 * can run; the released claim keeps its fingerprint, so the key stays bound to its request.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DEFAULT_METRIC_NAMESPACE } from '../core/contract';
import { isValidName, type KeyPart, NAME_PATTERN, scopeKey, toDedupKey, toKeyPart } from '../core/dedup-key';
import {
  expectLeaseWithinTtl,
  expectPortOption,
  positiveOption,
  resolveLogOption,
} from '../core/entry-options';
import { dispositionOf, expectOption, isEffectivelyOnceError } from '../core/errors';
import { fingerprintOf, sha256Hex } from '../core/fingerprint';
import type { LambdaContext } from '../core/inbound-message';
import { createLeaseClaim } from '../core/lease-claim';
import type { Logger, LogLevel } from '../core/logger';
import {
  createEmfMetricsSink,
  createOutcomeCounts,
  type MetricsSink,
  type OutcomeCounts,
  publishCounts,
} from '../core/metrics';
import { errorMessageField } from '../core/outcome';
import type { LeaseStore } from '../core/store-port';
import type { Clock } from '../core/time';
import { createDynamoDbStore } from '../store/dynamodb-store';
import {
  type HttpEvent,
  type HttpRequest,
  type HttpResponse,
  readIdempotencyKey,
  toHttpRequest,
} from './http-event';
import {
  type ClaimDecision,
  capStoredResponse,
  DEFAULT_MAX_RESPONSE_BYTES,
  decideClaim,
  isReplayableStatus,
  PROBLEMS,
  toReplayResponse,
  toStoredResponse,
} from './http-outcome';

/** Default key window: 24 hours. */
export const DEFAULT_HTTP_TTL_SECONDS = 24 * 60 * 60;
/** Lease when neither `leaseMillis` nor the Lambda context gives one: 30 seconds. */
export const DEFAULT_HTTP_LEASE_MILLIS = 30_000;
/** Methods protected by default; `GET`, `HEAD` and `OPTIONS` pass through. */
export const DEFAULT_IDEMPOTENT_METHODS: readonly string[] = Object.freeze([
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
]);

/** Options of {@link createIdempotentHttpHandler}. */
export interface IdempotentHttpHandlerOptions<TEvent extends HttpEvent, TResult> {
  /** Name scoping every key (like an SQS consumer name); matches `/^[A-Za-z0-9._:-]{1,100}$/`. */
  readonly consumer: string;
  /** The wrapped handler. It runs once per key; throwing or a 5xx releases the key. */
  readonly handle: (event: TEvent, context: LambdaContext | undefined) => TResult | Promise<TResult>;
  /**
   * `true`: a protected request without the header gets 400. `false`: it runs without
   * idempotency (the header is optional in the IETF draft).
   * @default false
   */
  readonly required?: boolean;
  /**
   * Methods that are protected; others run without idempotency.
   * @default ['POST', 'PUT', 'PATCH', 'DELETE']
   */
  readonly methods?: readonly string[];
  /**
   * Scopes keys by caller, so two callers never share a key: for example the authorizer's
   * principal. Returning nothing is a configuration error (500), never a silent shared scope;
   * return a constant such as `'anonymous'` for unauthenticated callers on purpose.
   * @default keys are scoped by route only
   */
  readonly caller?: (request: HttpRequest<TEvent>) => KeyPart | null | undefined;
  /**
   * Picks what must match for a retry to get the stored response; hashed as canonical JSON.
   * @default `{ method, path, query, body }`: `query` holds the query parameters sorted by name (the
   * values of a repeated name in the order sent), and is left out when there are none
   */
  readonly fingerprint?: (request: HttpRequest<TEvent>) => unknown;
  /**
   * How long a key is remembered after its response is stored (`expiresAt`).
   * @default 86400 (24 hours)
   */
  readonly ttlSeconds?: number;
  /**
   * How long the first request holds the key before a retry may take it over (a crashed
   * request). A retry meanwhile gets 409 with `Retry-After`.
   * @default the invocation's remaining time plus 1 second, else 30000
   */
  readonly leaseMillis?: number;
  /**
   * Largest stored response (UTF-8 bytes of its JSON text). A larger one is stored without its body
   * and replayed with `Idempotent-Response-Omitted: too-large`.
   * @default 393216 (`DEFAULT_MAX_RESPONSE_BYTES`: the item limit less 16 KB)
   */
  readonly maxResponseBytes?: number;
  /**
   * Which responses are stored and replayed; the others release the key so a retry runs again.
   * @default below 500, except 408, 409, 425 and 429 (`isReplayableStatus`)
   */
  readonly isReplayable?: (statusCode: number) => boolean;
  /**
   * The inbox store. Give either this, or `client` and `tableName`.
   * @default the DynamoDB store over `client` and `tableName`
   */
  readonly store?: LeaseStore;
  /** The document client, created once at module scope. Used when `store` is not given. */
  readonly client?: DynamoDBDocumentClient;
  /** Name of the inbox table. Used when `store` is not given. */
  readonly tableName?: string;
  /**
   * Epoch milliseconds now.
   * @default Date.now
   */
  readonly clock?: Clock;
  /**
   * Lowest level logged; `silent` logs nothing.
   * @default 'info'
   */
  readonly logLevel?: LogLevel;
  /**
   * `hash` logs `scopedKeyHash` instead of `scopedKey`.
   * @default 'plain'
   */
  readonly logKeys?: 'plain' | 'hash';
  /** @default JSON lines on standard output */
  readonly logger?: Logger;
  /**
   * Log the message of an error the handler throws (`errorMessage`), as well as its class. Off,
   * only the class and the toolkit's code are logged: such messages may quote request data.
   * @default false
   */
  readonly logErrorMessages?: boolean;
  /**
   * Where each keyed request's outcome count goes (`processed`, `duplicate` for a replay,
   * `inFlight` for a 409, `mismatch` for a 422, `retry` for a released key, `permanent` for an
   * invalid key); `false` publishes nothing.
   * @default one Embedded Metric Format line on standard output
   */
  readonly metrics?: MetricsSink | false;
  /** @default 'EffectivelyOnce' */
  readonly metricNamespace?: string;
}

/** The wrapped handler: the handler's own result, or a replay or problem response. */
export type IdempotentHttpHandler<TEvent extends HttpEvent, TResult> = (
  event: TEvent,
  context?: LambdaContext,
) => Promise<TResult | HttpResponse>;

/**
 * What the default fingerprint covers: method, path, the query parameters (sorted by name, the
 * values of a repeated name kept in the order sent) and the body as delivered. `query` is left
 * out when there is none, so a request without a query string fingerprints as `{ method, path,
 * body }`, as before query strings were covered.
 *
 * @example
 * // POST /payments?b=2&a=1&a=0
 * defaultHttpFingerprint(request); // { method: 'POST', path: '/payments', query: [['a', '1'], ['a', '0'], ['b', '2']], body: '…' }
 */
export function defaultHttpFingerprint(request: HttpRequest): Record<string, unknown> {
  const { method, path, body } = request;
  if (request.query.length === 0) return { method, path, body };
  // A stable sort: parameter order across names carries no meaning, order within one name may.
  const query = [...request.query].sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
  return { method, path, query, body };
}

function optionalFunction(field: string, value: unknown): void {
  expectOption(value === undefined || typeof value === 'function', field, 'a function', value);
}

function optionalBoolean(field: string, value: unknown): void {
  expectOption(value === undefined || typeof value === 'boolean', field, 'a boolean', value);
}

/** Outcome names of a keyed request, for logs and metrics. */
type HttpOutcomeKind = keyof OutcomeCounts;

/**
 * Wraps an API Gateway (REST v1 or HTTP API v2) or Lambda function URL handler with
 * `Idempotency-Key` handling, on the same inbox table and store as the SQS handlers.
 *
 * - The key comes from the `Idempotency-Key` header (case-insensitive), scoped by `consumer`,
 *   method and route template, and by `caller` when given.
 * - The first request claims the key (`IN_PROGRESS`, with a lease and an owner token), runs,
 *   and its response (status, headers, cookies, body; size-capped) is stored when
 *   `isReplayable(statusCode)`; a thrown error or another status releases the key. The released
 *   claim keeps its fingerprint (lease end `0`): a retry of the same request claims it again in
 *   one request, a different request with the same key still gets 422.
 * - A retry with the same fingerprint (method, path, query string, body by default) gets the stored response
 *   with `Idempotent-Replayed: true`; a different request with the same key gets 422; a retry
 *   while the first runs gets 409 with `Retry-After` (seconds until the lease ends, at least 1).
 *   After the lease ends, a retry takes the key over (the first request crashed).
 * - Keys expire `ttlSeconds` (default 24 hours) after the response is stored.
 * - Without the header: runs without idempotency, or 400 when `required`.
 * - The store unreachable: 503 with `Retry-After: 1`; a misconfiguration: 500. The handler
 *   never runs unprotected when a key was given.
 *
 * Options are validated here, once; a bad option throws `INVALID_OPTIONS`.
 *
 * @example
 * export const handler = createIdempotentHttpHandler({
 *   consumer: 'payments-api',
 *   client,
 *   tableName: 'inbox',
 *   caller: (request) => request.event.requestContext?.authorizer?.principalId,
 *   handle: async (event: ApiGatewayProxyEventV1) => {
 *     const payment = await createPayment(JSON.parse(event.body ?? '{}'));
 *     return { statusCode: 201, headers: { Location: `/payments/${payment.id}` }, body: JSON.stringify(payment) };
 *   },
 * });
 */
export function createIdempotentHttpHandler<TEvent extends HttpEvent, TResult>(
  options: IdempotentHttpHandlerOptions<TEvent, TResult>,
): IdempotentHttpHandler<TEvent, TResult> {
  expectOption(typeof options === 'object' && options !== null, 'options', 'an object', options);
  const { consumer, handle, caller, fingerprint: pickFingerprint } = options;
  expectOption(isValidName(consumer), 'consumer', `a name matching ${NAME_PATTERN}`, consumer);
  expectOption(typeof handle === 'function', 'handle', 'a function', handle);
  optionalFunction('caller', caller);
  optionalFunction('fingerprint', pickFingerprint);
  optionalFunction('isReplayable', options.isReplayable);
  optionalFunction('clock', options.clock);
  optionalBoolean('required', options.required);
  optionalBoolean('logErrorMessages', options.logErrorMessages);
  const methods = new Set(
    (options.methods ?? DEFAULT_IDEMPOTENT_METHODS).map((method) => {
      expectOption(typeof method === 'string' && method !== '', 'methods', 'a list of HTTP methods', method);
      return method.toUpperCase();
    }),
  );
  const ttlSeconds = positiveOption('ttlSeconds', options.ttlSeconds, DEFAULT_HTTP_TTL_SECONDS);
  const fixedLeaseMillis = positiveOption('leaseMillis', options.leaseMillis, undefined);
  if (fixedLeaseMillis !== undefined) expectLeaseWithinTtl(fixedLeaseMillis, ttlSeconds);
  const maxResponseBytes = positiveOption(
    'maxResponseBytes',
    options.maxResponseBytes,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_RESPONSE_BYTES,
  );
  const log = resolveLogOption(options);
  if (options.metrics !== undefined && options.metrics !== false) {
    expectPortOption('metrics', options.metrics, ['publish']);
  }
  // The wrapper never extends a lease: only the methods it calls are required of a store.
  if (options.store !== undefined)
    expectPortOption('store', options.store, ['claimLease', 'complete', 'release']);
  const store =
    options.store ?? createDynamoDbStore({ client: options.client!, tableName: options.tableName! });
  const clock = options.clock ?? Date.now;
  const isReplayable = options.isReplayable ?? isReplayableStatus;
  const required = options.required === true;
  const metrics =
    options.metrics === false
      ? undefined
      : (options.metrics ??
        createEmfMetricsSink({ namespace: options.metricNamespace ?? DEFAULT_METRIC_NAMESPACE }));

  const countFor = (kind: HttpOutcomeKind, invocation: { readonly requestId?: string }): void => {
    if (metrics === undefined) return;
    const counts = createOutcomeCounts();
    counts[kind] = 1;
    publishCounts(metrics, counts, { consumer, timestampMillis: clock(), ...invocation }, log);
  };
  const keyFields = (scopedKey: string): Record<string, string> =>
    options.logKeys === 'hash' ? { scopedKeyHash: sha256Hex(scopedKey) } : { scopedKey };

  const leaseFor = (context: LambdaContext | undefined): number => {
    if (fixedLeaseMillis !== undefined) return fixedLeaseMillis;
    const remaining = context?.getRemainingTimeInMillis?.();
    // The invocation cannot outlive its remaining time: after that the first request is gone.
    return typeof remaining === 'number' && remaining > 0 ? remaining + 1000 : DEFAULT_HTTP_LEASE_MILLIS;
  };

  return async (event, context) => {
    // Each line names its invocation: on managed instances, invocations running at once share
    // one log stream, and Lambda tags no line written to standard output directly.
    const invocation = context?.awsRequestId === undefined ? {} : { requestId: context.awsRequestId };
    const count = (kind: HttpOutcomeKind) => countFor(kind, invocation);
    const request = toHttpRequest(event);
    if (!methods.has(request.method)) return handle(event, context);

    const header = readIdempotencyKey(event);
    if (header.kind === 'absent') {
      if (!required) return handle(event, context);
      count('permanent');
      return PROBLEMS.missingKey();
    }
    if (header.kind === 'invalid') {
      count('permanent');
      return PROBLEMS.invalidKey(header.reason);
    }

    let scopedKey: string;
    let fingerprint: string;
    try {
      // The caller is one part of the composite (checked once here, escaped once by toDedupKey).
      const scope = caller === undefined ? [] : [toKeyPart(caller(request))];
      scopedKey = scopeKey(consumer, toDedupKey([request.route, ...scope, header.key]));
      fingerprint = fingerprintOf(
        pickFingerprint === undefined ? defaultHttpFingerprint(request) : pickFingerprint(request),
      );
    } catch (error) {
      log({
        level: 'error',
        message: 'The idempotency key could not be scoped or the request fingerprinted',
        consumer,
        ...invocation,
        route: request.route,
        code: isEffectivelyOnceError(error) ? error.code : 'UNEXPECTED',
        errorName: (error as Error | undefined)?.name,
      });
      return PROBLEMS.misconfigured();
    }
    const fields = { consumer, ...invocation, ...keyFields(scopedKey), route: request.route };

    const now = clock();
    const lease = createLeaseClaim(
      store,
      { pk: scopedKey, fingerprint, consumer, leaseMillis: leaseFor(context), ttlSeconds },
      now,
    );

    let decision: ClaimDecision;
    let takeover = false;
    try {
      const result = await lease.claim();
      takeover = result.kind === 'inserted' && result.takeover === true;
      decision = decideClaim(result, fingerprint, now);
    } catch (error) {
      const retry = dispositionOf(error) === 'retry';
      log({
        level: 'error',
        message: 'Claiming the idempotency key failed',
        ...fields,
        outcome: 'retry',
        code: isEffectivelyOnceError(error) ? error.code : 'UNEXPECTED',
        errorName: (error as Error | undefined)?.name,
      });
      count('retry');
      return retry ? PROBLEMS.unavailable() : PROBLEMS.misconfigured();
    }

    switch (decision.kind) {
      case 'replay':
        log({ level: 'info', message: 'Stored response replayed', ...fields, outcome: 'duplicate' });
        count('duplicate');
        return toReplayResponse(decision.response);
      case 'in-progress':
        log({
          level: 'warn',
          message: 'Idempotency key in flight in another request; answered 409',
          ...fields,
          outcome: 'in-flight',
          retryAfterSeconds: decision.retryAfterSeconds,
        });
        count('inFlight');
        return PROBLEMS.inProgress(decision.retryAfterSeconds);
      case 'mismatch':
        log({
          level: 'warn',
          message: 'Idempotency key reused with a different request; answered 422',
          ...fields,
          outcome: 'mismatch',
          code: 'PAYLOAD_MISMATCH',
        });
        count('mismatch');
        return PROBLEMS.mismatch();
      case 'retry':
        log({ level: 'warn', message: decision.reason, ...fields, outcome: 'retry', code: 'EXPIRED_RECORD' });
        count('retry');
        return PROBLEMS.unavailable();
      default:
        break;
    }
    if (takeover) {
      log({
        level: 'warn',
        message: 'Lease of a crashed request taken over',
        ...fields,
        outcome: 'takeover',
      });
    }

    const releaseClaim = async (reason: string, extra: Record<string, unknown>): Promise<void> => {
      try {
        await lease.release();
      } catch (error) {
        log({
          level: 'error',
          message: 'Releasing the idempotency key failed: retries get 409 until the lease ends',
          ...fields,
          errorName: (error as Error | undefined)?.name,
        });
      }
      log({ level: 'warn', message: reason, ...fields, outcome: 'retry', ...extra });
      count('retry');
    };

    let result: TResult;
    try {
      result = await handle(event, context);
    } catch (error) {
      await releaseClaim('The handler failed; the key is released so a retry runs again', {
        code: 'HANDLER_FAILED',
        errorName: (error as Error | undefined)?.name,
        ...errorMessageField(error, options.logErrorMessages),
      });
      throw error;
    }

    const stored = toStoredResponse(result, request.version);
    if (stored === undefined || !isReplayable(stored.statusCode)) {
      await releaseClaim('The response is not stored; the key is released so a retry runs again', {
        statusCode: stored?.statusCode,
      });
      return result;
    }
    const capped = capStoredResponse(stored, maxResponseBytes);
    try {
      const completed = await lease.complete(clock(), JSON.stringify(capped));
      if (completed.kind === 'lost-ownership') {
        log({
          level: 'warn',
          message: 'The lease ended before the response was stored; another request took the key over',
          ...fields,
          outcome: 'processed',
        });
      } else {
        log({
          level: capped.omitted === undefined ? 'debug' : 'warn',
          message:
            capped.omitted === undefined
              ? 'Response stored'
              : 'Response stored without its body: over `maxResponseBytes`',
          ...fields,
          outcome: 'processed',
          statusCode: capped.statusCode,
        });
      }
    } catch (error) {
      log({
        level: 'error',
        message: 'Storing the response failed: retries get 409 until the lease ends, then run again',
        ...fields,
        outcome: 'processed',
        code: isEffectivelyOnceError(error) ? error.code : 'UNEXPECTED',
        errorName: (error as Error | undefined)?.name,
      });
    }
    count('processed');
    return result;
  };
}
