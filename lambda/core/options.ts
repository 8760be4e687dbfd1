/**
 * The options of the batch processor, validated once at cold start and frozen. A bad option
 * is a configuration error: the function fails to initialise instead of mishandling messages.
 */
import { DEFAULT_METRIC_NAMESPACE } from './contract';
import type { DeadLetterMode, DeadLetterSender } from './dead-letter';
import { assertName, type KeySource } from './dedup-key';
import { expectOption } from './errors';
import { isLeaseWithinTtl } from './lease';
import type { Logger, LogLevel } from './logger';
import type { BodyParser, CorrelationIdPicker, FingerprintPicker, Message } from './message';
import type { MetricsSink } from './metrics';
import type { EntityWrite, InboxStore } from './store-port';
import type { Effects } from './two-phase';
import type { UnitOfWork } from './unit-of-work';

/** Epoch milliseconds now. Injected so the core never reads the system clock itself. */
export type Clock = () => number;

/**
 * Marker only: the marker is stored first, then `handle` runs; if `handle` throws, the marker
 * is released so a retry can run. This is at-most-once for the effect: a crash after the
 * marker and before `handle` finishes, or a concurrent delivery of the same key acknowledged
 * as a duplicate while a first delivery is still running and then fails, leaves the marker
 * without the effect. Use it for naturally idempotent effects; use atomic mode (or two-phase)
 * where the effect must happen.
 */
export interface MarkerModeOptions<TBody> {
  readonly mode: 'marker';
  /** Performs the effect. Its return value is ignored. */
  readonly handle: (message: Message<TBody>) => unknown;
}

/**
 * Atomic (inbox): `handle` describes business writes on a unit of work; they are committed in
 * one transaction with the marker at index 0. `handle` runs before the commit, also for a
 * message that turns out to be a duplicate, so it must only describe writes, never perform
 * side effects. With no writes, the marker alone is stored (one conditional put).
 */
export interface AtomicModeOptions<TBody> {
  readonly mode: 'atomic';
  /** Describes the writes on `unitOfWork`. Its return value is ignored. */
  readonly handle: (message: Message<TBody>, unitOfWork: UnitOfWork) => unknown;
}

/**
 * Entity as marker: `handle` returns the one business item that is the whole effect; it is put
 * on the condition that its key is absent, carrying the fingerprint. Like atomic mode,
 * `handle` runs before the write and must be free of side effects. The entity never expires
 * as a marker.
 */
export interface EntityModeOptions<TBody> {
  readonly mode: 'entity';
  /** Returns the business item, its table and its partition key attribute. */
  readonly handle: (message: Message<TBody>) => EntityWrite | Promise<EntityWrite>;
}

/**
 * Two-phase, for effects outside DynamoDB (a payment API, an email): each effect that `handle`
 * runs through `effects.run` is claimed (`IN_PROGRESS`, with a lease and a random owner token),
 * performed, then completed (or released when it throws), each under its own inbox record,
 * so after a partial failure only the unfinished effects run again. The message is
 * `processed` once every effect it ran completed, and a `duplicate` when all of them had.
 *
 * A claim whose lease ended (its invocation crashed or timed out) is taken over by the next
 * delivery with a new owner token (metric `Takeover`); the old owner can then neither
 * complete nor release it. The effect therefore runs at least once and, when the lease ends
 * mid-effect, possibly twice: pass the derived `idempotencyKey` (or `clientToken`,
 * `deduplicationId`) downstream so the second run is deduplicated there.
 *
 * Like atomic mode, code in `handle` outside `effects.run` runs on every delivery.
 * DynamoDB requests per effect: 2 on first delivery (claim, complete), 1 on a duplicate.
 *
 * @example
 * createSqsHandler<Order>({
 *   consumer: 'billing',
 *   dedupKey: fromBody('orderId'),
 *   client,
 *   tableName: process.env.EO_INBOX_TABLE!,
 *   mode: 'two-phase',
 *   storeResults: true,
 *   handle: async (message, effects) => {
 *     const invoice = await effects.run('invoice', ({ idempotencyKey }) =>
 *       payments.createInvoice(message.body, { headers: { 'Idempotency-Key': idempotencyKey } }),
 *     );
 *     await effects.run('stock', ({ clientToken }) => stock.reserve(message.body.items, clientToken));
 *   },
 * });
 */
export interface TwoPhaseModeOptions<TBody> {
  readonly mode: 'two-phase';
  /** Runs the message's effects with `effects.run`. Its return value is ignored. */
  readonly handle: (message: Message<TBody>, effects: Effects) => unknown;
  /**
   * How long a claim is valid, in milliseconds (at least 1000: a smaller value is taken for
   * seconds and rejected). Cover the longest effect plus the clock skew between instances: a
   * claim whose lease ended is taken over. Must be shorter than `ttlSeconds`
   * (`isLeaseWithinTtl`; `INVALID_OPTIONS` at creation otherwise). Whatever the lease, a claim's
   * record lives `ttlSeconds` past its lease end (`claimExpiresAt`), so it never expires
   * mid-effect. Keep it well below the queue's `visibilityTimeout × maxReceiveCount`: a crashed
   * claim is taken over only by a redelivery after its lease ended, and one that outlives every
   * receive is dead-lettered as in flight instead.
   * @default `EO_LEASE_MILLIS` through `createSqsHandler` and the middleware (the construct
   *   sets it to the function timeout); else the time the invocation has left when it starts,
   *   at least 1000; 15 minutes without a Lambda context; the visibility timeout in
   *   `createSqsWorker`
   */
  readonly leaseMillis?: number;
  /**
   * Extend the lease while an effect runs, every third of `leaseMillis`, moving the record's
   * `expiresAt` with it. When another delivery has taken the claim over, the effect's `signal`
   * is aborted. The heartbeat stops, and the extension in flight is awaited, before the claim is
   * completed or released, so a late extension never revives a released claim.
   * @default false; `true` in `createSqsWorker` while its visibility heartbeat is on
   */
  readonly heartbeat?: boolean;
  /**
   * Store each effect's result (its JSON form) with the completed record, so `effects.run`
   * returns it on a duplicate. A result that would push the record past DynamoDB's 400 KB item
   * limit, or that has no JSON form, is not stored (logged as `ITEM_TOO_LARGE`): the effect is
   * completed all the same, since it must never run again, and a duplicate gets `undefined`.
   * @default false
   */
  readonly storeResults?: boolean;
  /**
   * A claim in progress this long since its first claim is not taken over when its lease
   * ends: the message is dead-lettered as `STUCK_IN_PROGRESS` for a human, who checks the
   * effect downstream, then deletes the inbox record (or leaves it) and redrives.
   * @default no limit
   */
  readonly stuckAfterMillis?: number;
  /**
   * A claim already taken over this often is not taken over again (`STUCK_IN_PROGRESS`, as
   * with `stuckAfterMillis`); `0` never takes over.
   * @default no limit
   */
  readonly maxTakeovers?: number;
}

/** The mode and the user's handler for it. */
export type ModeOptions<TBody> =
  | MarkerModeOptions<TBody>
  | AtomicModeOptions<TBody>
  | EntityModeOptions<TBody>
  | TwoPhaseModeOptions<TBody>;

/** Options shared by every entry point. */
export interface CommonOptions<TBody> {
  /** Consumer name scoping every dedup key; matches `/^[A-Za-z0-9._:-]{1,100}$/`. */
  readonly consumer: string;
  /** Where the dedup key comes from: `fromBody`, `fromAttribute`, `fromCloudEvent`, ... */
  readonly dedupKey: KeySource<TBody>;
  /**
   * How the body is parsed. A body that fails to parse (or that the function rejects by
   * throwing) is a permanent `MALFORMED_BODY` error.
   * @default 'json'
   */
  readonly parse?: BodyParser<TBody>;
  /**
   * Picks the fingerprinted part of the message, for example to ignore volatile fields; the
   * result is hashed in canonical JSON form.
   * @default the body as canonical JSON when it is JSON, else the raw body
   */
  readonly fingerprint?: FingerprintPicker<TBody>;
  /**
   * Picks the correlation id of a record.
   * @default message attribute `correlation-id`, else `correlationId`, else the message id
   */
  readonly correlationId?: CorrelationIdPicker;
  /**
   * Inbox record lifetime (`expiresAt = now + ttlSeconds`). Cover the longest redelivery path:
   * at least 3x the producer's retry horizon and the dead-letter queue retention.
   * @default 1296000 (15 days: the 14-day maximum SQS retention plus a day)
   */
  readonly ttlSeconds?: number;
  /**
   * Records processed at the same time. FIFO message groups always run in order.
   * @default 10
   */
  readonly concurrency?: number;
  /**
   * Records that have not started this long before the Lambda timeout are reported as batch
   * item failures (`DEADLINE`) instead of being started. Capped at half the time an invocation
   * has left when it starts (`deadlineMarginFor`), so a function timeout at or below the margin
   * still processes records.
   * @default 2000
   */
  readonly deadlineMarginMillis?: number;
  /**
   * `redrive`: a permanent failure is reported as a batch item failure until the queue's
   * `maxReceiveCount` moves it to the dead-letter queue; the reason is then only in the logs.
   * `direct`: it is sent to the dead-letter queue at once with its reason (`deadLetterSender`)
   * and acknowledged; if the send fails it is reported as a batch item failure.
   * @default 'redrive'
   */
  readonly deadLetter?: DeadLetterMode;
  /** Required when `deadLetter` is `direct`. */
  readonly deadLetterSender?: DeadLetterSender;
  /**
   * Lowest level logged; `silent` logs nothing.
   * @default 'info'
   */
  readonly logLevel?: LogLevel;
  /**
   * `hash` logs `scopedKeyHash` (SHA-256 of the scoped key) instead of `scopedKey`.
   * @default 'plain'
   */
  readonly logKeys?: 'plain' | 'hash';
  /** @default JSON lines on standard output */
  readonly logger?: Logger;
  /**
   * Log (and dead-letter with) the messages of errors thrown by user code and the libraries it
   * calls. Off, a failure shows the error's class, its `code` when it has one, and the
   * toolkit's own reason: such messages may quote data (`assert.match(card, ...)` quotes the
   * card), and they would reach CloudWatch and the `eo-reason` attribute. Messages of toolkit
   * errors (including a `PermanentError` a handler throws) are always shown; a `SyntaxError`'s
   * never is (it quotes the body).
   * @default false
   */
  readonly logErrorMessages?: boolean;
  /**
   * Where the counts of each invocation go; `false` publishes nothing.
   * @default one Embedded Metric Format line on standard output
   */
  readonly metrics?: MetricsSink | false;
  /**
   * Namespace of the default Embedded Metric Format sink.
   * @default 'EffectivelyOnce'
   */
  readonly metricNamespace?: string;
}

/** Everything the processor needs from its caller: options plus the store and the clock. */
export type BatchProcessorOptions<TBody> = CommonOptions<TBody> &
  ModeOptions<TBody> & {
    readonly store: InboxStore;
    readonly clock: Clock;
  };

/** The options after validation, defaults applied, frozen. */
export type ResolvedOptions<TBody> = Readonly<
  Required<
    Omit<
      CommonOptions<TBody>,
      'fingerprint' | 'correlationId' | 'deadLetterSender' | 'logger' | 'metrics' | 'metricNamespace'
    >
  > & {
    readonly fingerprint: FingerprintPicker<TBody> | undefined;
    readonly correlationId: CorrelationIdPicker | undefined;
    readonly deadLetterSender: DeadLetterSender | undefined;
    readonly logger: Logger | undefined;
    readonly metrics: MetricsSink | false | undefined;
    readonly metricNamespace: string;
    readonly store: InboxStore;
    readonly clock: Clock;
  } & ModeOptions<TBody>
>;

/** Default inbox record lifetime: 15 days. */
export const DEFAULT_TTL_SECONDS = 15 * 24 * 60 * 60;
/** Default number of records processed at the same time. */
export const DEFAULT_CONCURRENCY = 10;
/** Default safety margin before the Lambda timeout. */
export const DEFAULT_DEADLINE_MARGIN_MILLIS = 2000;
/** The shortest lease: also the floor of a lease derived from the invocation's remaining time. */
export const MIN_LEASE_MILLIS = 1000;
/** The lease without `leaseMillis` and without a Lambda context: Lambda's longest timeout. */
export const DEFAULT_LEASE_MILLIS = 15 * 60 * 1000;

const isFunction = (value: unknown): boolean => typeof value === 'function';

function integer(field: string, value: unknown, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  expectOption(
    Number.isSafeInteger(value) && (value as number) >= min,
    field,
    min > 0 ? 'a positive integer' : 'a non-negative integer',
    value,
  );
  return value as number;
}

/** An optional duration in milliseconds of at least a second; a smaller one is likely seconds. */
function millis(field: string, value: unknown): void {
  if (value === undefined) return;
  expectOption(Number.isSafeInteger(value) && (value as number) > 0, field, 'a positive integer', value);
  expectOption(
    (value as number) >= MIN_LEASE_MILLIS,
    field,
    `milliseconds (at least ${MIN_LEASE_MILLIS}; for ${value} seconds use ${(value as number) * 1000})`,
    value,
  );
}

function oneOf<T extends string>(field: string, value: T | undefined, allowed: readonly T[], fallback: T): T {
  const chosen = value ?? fallback;
  expectOption(allowed.includes(chosen), field, `one of ${allowed.map((a) => `'${a}'`).join(', ')}`, value);
  return chosen;
}

function port(field: string, value: unknown, methods: readonly string[]): void {
  const ok =
    typeof value === 'object' && value !== null && methods.every((m) => isFunction((value as never)[m]));
  expectOption(ok, field, `an object with ${methods.map((m) => `\`${m}\``).join(', ')}`, value);
}

/**
 * Validates `options`, applies defaults and freezes the result. Throws `INVALID_OPTIONS` with a
 * message naming the option, what was expected and what was given.
 */
export function resolveOptions<TBody>(options: BatchProcessorOptions<TBody>): ResolvedOptions<TBody> {
  expectOption(typeof options === 'object' && options !== null, 'options', 'an object', options);
  const { parse = 'json', metricNamespace = DEFAULT_METRIC_NAMESPACE, logger, metrics } = options;
  assertName('consumer', options.consumer);
  expectOption(
    isFunction(options.dedupKey),
    'dedupKey',
    'a key source such as `fromBody(...)`',
    options.dedupKey,
  );
  oneOf('mode', options.mode, ['marker', 'atomic', 'entity', 'two-phase'], undefined as never);
  expectOption(isFunction(options.handle), 'handle', 'a function', options.handle);
  expectOption(
    parse === 'json' || parse === 'text' || isFunction(parse),
    'parse',
    "'json', 'text' or a function",
    parse,
  );
  for (const field of ['fingerprint', 'correlationId'] as const) {
    expectOption(
      options[field] === undefined || isFunction(options[field]),
      field,
      'a function',
      options[field],
    );
  }
  const deadLetter = oneOf('deadLetter', options.deadLetter, ['redrive', 'direct'], 'redrive');
  if (deadLetter === 'direct') port('deadLetterSender', options.deadLetterSender, ['send']);
  if (logger !== undefined) port('logger', logger, ['log']);
  const { logErrorMessages = false } = options;
  expectOption(typeof logErrorMessages === 'boolean', 'logErrorMessages', 'a boolean', logErrorMessages);
  if (metrics !== undefined && metrics !== false) port('metrics', metrics, ['publish']);
  expectOption(
    typeof metricNamespace === 'string' && metricNamespace !== '' && metricNamespace.length <= 255,
    'metricNamespace',
    'a non-empty string of at most 255 characters',
    metricNamespace,
  );
  const storeMethods = ['insert', 'commit', 'insertEntity', 'release'];
  // Two-phase needs the lease methods too; checked in one go, so the message lists them all.
  if (options.mode === 'two-phase') storeMethods.push('claimLease', 'complete', 'extendLease');
  port('store', options.store, storeMethods);
  expectOption(isFunction(options.clock), 'clock', 'a function returning epoch milliseconds', options.clock);
  const ttlSeconds = integer('ttlSeconds', options.ttlSeconds, DEFAULT_TTL_SECONDS, 1);
  if (options.mode === 'two-phase') {
    const { leaseMillis } = options;
    millis('leaseMillis', leaseMillis);
    expectOption(
      leaseMillis === undefined || isLeaseWithinTtl(leaseMillis, ttlSeconds),
      'leaseMillis',
      `shorter than \`ttlSeconds\` (${ttlSeconds * 1000} milliseconds)`,
      leaseMillis,
    );
    millis('stuckAfterMillis', options.stuckAfterMillis);
    integer('maxTakeovers', options.maxTakeovers, 0, 0);
    for (const field of ['heartbeat', 'storeResults'] as const) {
      const value = options[field];
      expectOption(value === undefined || typeof value === 'boolean', field, 'a boolean', value);
    }
  }

  return Object.freeze({
    ...options,
    parse,
    ttlSeconds,
    concurrency: integer('concurrency', options.concurrency, DEFAULT_CONCURRENCY, 1),
    deadlineMarginMillis: integer(
      'deadlineMarginMillis',
      options.deadlineMarginMillis,
      DEFAULT_DEADLINE_MARGIN_MILLIS,
      0,
    ),
    deadLetter,
    logLevel: oneOf('logLevel', options.logLevel, ['debug', 'info', 'warn', 'error', 'silent'], 'info'),
    logKeys: oneOf('logKeys', options.logKeys, ['plain', 'hash'], 'plain'),
    logErrorMessages,
    metricNamespace,
  }) as ResolvedOptions<TBody>;
}
