/**
 * The options of the batch processor, validated once at cold start and frozen. A bad option
 * is a configuration error: the function fails to initialise instead of mishandling messages.
 */
import { type CompletedCacheOptions, expectCompletedCacheOptions } from './completed-cache';
import { DEFAULT_METRIC_NAMESPACE, LOG_LEVELS } from './contract';
import { assertName, type KeySource } from './dedup-key';
import { expectMethods, expectOption } from './errors';
import { expectGroupMetricsOptions, type GroupMetricsOptions } from './group-metrics';
import type { DeadLetterWriter } from './inbound-message';
import type { Logger, LogLevel } from './logger';
import type { BodyParser, CorrelationIdPicker, FingerprintPicker } from './message';
import type { MetricsSink } from './metrics';
import { expectMode, type Mode } from './mode';
import type { Clock } from './time';

/** Options shared by every entry point; `TRecord` is the transport's own record. */
export interface CommonOptions<TBody, TStore = unknown, TRecord = unknown> {
  /** Consumer name scoping every dedup key; matches `/^[A-Za-z0-9._:-]{1,100}$/`. */
  readonly consumer: string;
  /** Where the dedup key comes from: `fromBody`, `fromAttribute`, `fromCloudEvent`, ... */
  readonly dedupKey: KeySource<TBody, TRecord>;
  /**
   * What a message does, with the mode's own options: `marker(handle)`, `atomic(handle)`,
   * `entity(handle)` or `twoPhase({ handle, ... })`.
   */
  readonly mode: Mode<TBody, TStore, TRecord>;
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
  readonly fingerprint?: FingerprintPicker<TBody, TRecord>;
  /**
   * Picks the correlation id of a record.
   * @default message attribute `correlation-id`, else `correlationId`, else the message id
   */
  readonly correlationId?: CorrelationIdPicker<TRecord>;
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
  /**
   * Keep up to `maxEntries` (1 to 10000) completed messages in memory, one cache per handler
   * (so per execution environment, or per worker thread of a Lambda Managed Instance), and
   * acknowledge a duplicate found there with no request: its line says `cache: 'hit'` and it
   * counts as `Duplicate` and `CacheHit`. Only messages whose record is final are kept (never a
   * claim in progress or released, nor another delivery's marker), until their `expiresAt`; a
   * message with another payload misses and the store decides. The trade: a record deleted by
   * hand, or deleted or overwritten by another consumer process, is not seen until its entry
   * leaves the cache; and in two-phase mode a cached duplicate skips the whole handler, code
   * outside `effects.run` included (see `completed-cache.ts`).
   * @default off (`EO_COMPLETED_CACHE_MAX_ENTRIES` in a function the construct configured)
   */
  readonly completedCache?: CompletedCacheOptions;
  /**
   * A fair queue's per-group metrics: each invocation also writes, per message group with a
   * duplicate or in-flight message, `Duplicate` and `InFlight` with dimensions `Consumer` and
   * `MessageGroup`; the first `maxGroups` (1 to 1000) groups of an execution environment get their
   * own value, later ones count as `(other)` (see `group-metrics.ts`). Written to standard output
   * in `metricNamespace`, unless `metrics` is `false`.
   * @default off (`EO_GROUP_METRICS_MAX_GROUPS` in a function the construct configured)
   */
  readonly groupMetrics?: GroupMetricsOptions;
}

/**
 * Everything the engine needs from its entry point: options plus the store, the clock and the
 * transport's dead-letter writer.
 */
export type BatchProcessorOptions<TBody, TStore = unknown, TRecord = unknown> = CommonOptions<
  TBody,
  TStore,
  TRecord
> & {
  /** The store of the mode's capability (`MarkerStore`, `AtomicStore`, `EntityStore`, `LeaseStore`). */
  readonly store: TStore;
  /** The clock, epoch milliseconds (inject one in tests). */
  readonly clock: Clock;
  /**
   * Writes a permanent failure to the dead-letter queue in the transport's format, and the
   * message is acknowledged once it resolves (reported for retry when it rejects).
   * @default none: a permanent failure is reported for retry, left to the queue's redrive policy
   */
  readonly deadLetterWriter?: DeadLetterWriter<TRecord>;
};

/** The options after validation, defaults applied, frozen. */
export type ResolvedOptions<TBody, TStore = unknown, TRecord = unknown> = Readonly<
  Required<
    Omit<
      CommonOptions<TBody, TStore, TRecord>,
      | 'fingerprint'
      | 'correlationId'
      | 'logger'
      | 'metrics'
      | 'metricNamespace'
      | 'completedCache'
      | 'groupMetrics'
    >
  > & {
    readonly fingerprint: FingerprintPicker<TBody, TRecord> | undefined;
    readonly correlationId: CorrelationIdPicker<TRecord> | undefined;
    readonly deadLetterWriter: DeadLetterWriter<TRecord> | undefined;
    readonly logger: Logger | undefined;
    readonly metrics: MetricsSink | false | undefined;
    readonly metricNamespace: string;
    readonly completedCache: CompletedCacheOptions | undefined;
    readonly groupMetrics: GroupMetricsOptions | undefined;
    readonly store: TStore;
    readonly clock: Clock;
  }
>;

/** Default inbox record lifetime: 15 days. */
export const DEFAULT_TTL_SECONDS = 15 * 24 * 60 * 60;
/** Default number of records processed at the same time. */
export const DEFAULT_CONCURRENCY = 10;
/** Default safety margin before the Lambda timeout. */
export const DEFAULT_DEADLINE_MARGIN_MILLIS = 2000;
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

function oneOf<T extends string>(field: string, value: T | undefined, allowed: readonly T[], fallback: T): T {
  const chosen = value ?? fallback;
  expectOption(allowed.includes(chosen), field, `one of ${allowed.map((a) => `'${a}'`).join(', ')}`, value);
  return chosen;
}

/**
 * Validates `options`, applies defaults and freezes the result. Throws `INVALID_OPTIONS` with a
 * message naming the option, what was expected and what was given.
 */
export function resolveOptions<TBody, TStore, TRecord>(
  options: BatchProcessorOptions<TBody, TStore, TRecord>,
): ResolvedOptions<TBody, TStore, TRecord> {
  expectOption(typeof options === 'object' && options !== null, 'options', 'an object', options);
  const { parse = 'json', metricNamespace = DEFAULT_METRIC_NAMESPACE, logger, metrics } = options;
  assertName('consumer', options.consumer);
  expectOption(
    isFunction(options.dedupKey),
    'dedupKey',
    'a key source such as `fromBody(...)`',
    options.dedupKey,
  );
  expectMode(options.mode);
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
  expectOption(
    options.deadLetterWriter === undefined || isFunction(options.deadLetterWriter),
    'deadLetterWriter',
    'a function',
    options.deadLetterWriter,
  );
  if (logger !== undefined) expectMethods('logger', logger, ['log']);
  const { logErrorMessages = false } = options;
  expectOption(typeof logErrorMessages === 'boolean', 'logErrorMessages', 'a boolean', logErrorMessages);
  if (metrics !== undefined && metrics !== false) expectMethods('metrics', metrics, ['publish']);
  expectOption(
    typeof metricNamespace === 'string' && metricNamespace !== '' && metricNamespace.length <= 255,
    'metricNamespace',
    'a non-empty string of at most 255 characters',
    metricNamespace,
  );
  expectCompletedCacheOptions(options.completedCache);
  expectGroupMetricsOptions(options.groupMetrics);
  // The store is checked by the mode, which knows the capability it needs.
  expectOption(isFunction(options.clock), 'clock', 'a function returning epoch milliseconds', options.clock);
  const ttlSeconds = integer('ttlSeconds', options.ttlSeconds, DEFAULT_TTL_SECONDS, 1);

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
    deadLetterWriter: options.deadLetterWriter,
    logLevel: oneOf('logLevel', options.logLevel, LOG_LEVELS, 'info'),
    logKeys: oneOf('logKeys', options.logKeys, ['plain', 'hash'], 'plain'),
    logErrorMessages,
    metricNamespace,
  }) as ResolvedOptions<TBody, TStore, TRecord>;
}
