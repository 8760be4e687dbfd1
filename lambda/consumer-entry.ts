/**
 * What every consumer entry point (the SQS handler, middleware and worker; the Kinesis and
 * DynamoDB Streams handlers) shares: the options a user gives, filled from the construct's
 * `EO_*` environment, the default DynamoDB store, the system clock, and the engine built over
 * them with the transport's own dead-letter writer. No transport lives here.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { applyConstructEnvironment, constructModeDefaults } from './construct-environment';
import { type BatchProcessor, createBatchProcessor } from './core/batch-processor';
import { DEAD_LETTER_MODES } from './core/contract';
import {
  assertModeAgreesWithConstruct,
  type ConstructSettings,
  type Environment,
  readConstructSettings,
} from './core/environment';
import { expectMethods, expectOption } from './core/errors';
import type { DeadLetterWriter } from './core/inbound-message';
import { expectMode, type Mode, type ModeDefaults } from './core/mode';
import type { CommonOptions } from './core/options';
import type { Clock } from './core/time';
import type { DeadLetterMode, DeadLetterSender } from './dead-letter/dead-letter-message';
import { createDynamoDbEntityStore, createDynamoDbStore } from './store/dynamodb-store';

/**
 * Where inbox records live: a document client and table, or a store of the mode's capability
 * (`MarkerStore`, `AtomicStore`, `EntityStore`, `LeaseStore`; an `InboxStore` has them all).
 */
export interface SqsHandlerStoreOptions<TStore = unknown> {
  /**
   * The store. Give either this, or `client` (and `tableName`, except in entity mode).
   * @default the DynamoDB store over `client` and `tableName`; in entity mode over `client` alone
   */
  readonly store?: TStore;
  /**
   * The document client, created once at module scope (with
   * `marshallOptions: { removeUndefinedValues: true }`). Used when `store` is not given.
   * @default one document client per cold start, with `removeUndefinedValues`
   */
  readonly client?: DynamoDBDocumentClient;
  /**
   * Name of the inbox table. Used when `store` is not given; `entity` mode needs none (the
   * business item is the marker, and the construct creates no inbox table for it). A name
   * other than the construct's `EO_INBOX_TABLE` fails the cold start.
   * @default `EO_INBOX_TABLE`
   */
  readonly tableName?: string;
  /**
   * Epoch milliseconds now.
   * @default Date.now
   */
  readonly clock?: Clock;
}

/**
 * Where the construct's settings come from. Inside a function that `IdempotentConsumer` (or
 * `IdempotentStreamConsumer`) configured, every option it sets an `EO_*` variable for defaults
 * to that variable: `consumer`, `tableName`, `ttlSeconds`, `deadLetter` (and for `direct` a
 * sender to `EO_DEAD_LETTER_QUEUE_URL`), `metricNamespace`, `logLevel` and `completedCache`
 * (`EO_COMPLETED_CACHE_MAX_ENTRIES`); and the lease of a two-phase
 * claim (`EO_LEASE_MILLIS`; `createSqsWorker` uses its visibility timeout instead), unless the
 * mode sets `leaseMillis`.
 * An explicit option wins; an explicit `consumer` or `tableName` other than the construct's
 * fails the cold start (`INVALID_OPTIONS`), and so does a malformed variable.
 */
export interface SqsHandlerEnvironmentOptions {
  /**
   * Consumer name scoping every dedup key; matches `/^[A-Za-z0-9._:-]{1,100}$/`. A name other
   * than the construct's `EO_CONSUMER` fails the cold start.
   * @default `EO_CONSUMER` (required when that is unset)
   */
  readonly consumer?: string;
  /**
   * The environment the `EO_*` variables are read from; pass `{}` to read none.
   * @default process.env
   */
  readonly environment?: Environment;
}

/** How a permanent failure reaches the dead-letter queue. */
export interface DeadLetterOptions {
  /**
   * `redrive`: a permanent failure is reported as a batch item failure until the queue's
   * `maxReceiveCount` moves it to the dead-letter queue; the reason is then only in the logs.
   * `direct`: it is sent to the dead-letter queue at once with its reason (`deadLetterSender`)
   * and acknowledged; if the send fails it is reported as a batch item failure. A stream entry
   * point is always `direct` (a stream has no redrive).
   * @default 'redrive' (`EO_DEAD_LETTER_MODE` in a function the construct configured)
   */
  readonly deadLetter?: DeadLetterMode;
  /**
   * Sends each dead letter; required when `deadLetter` is `direct`.
   * @default with `EO_DEAD_LETTER_QUEUE_URL`, `createSqsDeadLetterSender` to that queue
   */
  readonly deadLetterSender?: DeadLetterSender;
}

/**
 * The options of a consumer entry point, with `TRecord` its transport's record: the engine's
 * options (`CommonOptions`), the construct's environment, the store and the dead letters.
 */
export type ConsumerEntryOptions<TBody = unknown, TStore = unknown, TRecord = unknown> = Omit<
  CommonOptions<TBody, TStore, TRecord>,
  'consumer'
> &
  SqsHandlerEnvironmentOptions &
  SqsHandlerStoreOptions<TStore> &
  DeadLetterOptions;

/**
 * `options` with the construct's `EO_*` settings (from `options.environment`, else
 * `process.env`) and the default clients filled in, checked against the construct's. The
 * worker resolves its options with it once, so its logs name the same consumer.
 */
export function resolveEntryOptions<TOptions extends ConsumerEntryOptions<never, never, never>>(
  options: TOptions,
): TOptions {
  return applyConstructEnvironment(options, options?.environment ?? process.env);
}

/** The DynamoDB store the mode asks for: entity mode's needs no inbox table. */
function defaultStore(
  mode: Mode<never, never, never>,
  client: SqsHandlerStoreOptions['client'],
  tableName: string | undefined,
) {
  return mode.capability === 'entity'
    ? createDynamoDbEntityStore({ client: client! })
    : createDynamoDbStore({ client: client!, tableName: tableName! });
}

/**
 * Checks `deadLetter` and `deadLetterSender` and returns the sender when dead letters are sent
 * directly, `undefined` when they are left to the queue's redrive policy.
 */
export function directDeadLetterSender(options: DeadLetterOptions): DeadLetterSender | undefined {
  const deadLetter = options.deadLetter ?? 'redrive';
  expectOption(
    DEAD_LETTER_MODES.includes(deadLetter),
    'deadLetter',
    `one of ${DEAD_LETTER_MODES.map((mode) => `'${mode}'`).join(', ')}`,
    options.deadLetter,
  );
  if (deadLetter === 'redrive') return undefined;
  expectMethods('deadLetterSender', options.deadLetterSender, ['send']);
  return options.deadLetterSender;
}

/**
 * The engine of an entry point: `options` filled from the construct's environment, the default
 * store and clock, `modeDefaults` (the worker's visibility timeout as the two-phase lease) over
 * the construct's `EO_LEASE_MILLIS` and outbox, and the transport's dead-letter writer, made from
 * the checked options and the construct's settings (`undefined`: permanent failures are left to
 * the transport's redrive).
 */
export function createEntryEngine<TBody, TStore, TRecord>(
  options: ConsumerEntryOptions<TBody, TStore, TRecord>,
  modeDefaults: ModeDefaults,
  deadLetterWriterOf: (
    resolved: ConsumerEntryOptions<TBody, TStore, TRecord>,
    settings: ConstructSettings,
  ) => DeadLetterWriter<TRecord> | undefined,
): BatchProcessor<TRecord> {
  const environment = options?.environment ?? process.env;
  const resolved = applyConstructEnvironment(options, environment);
  const {
    store,
    client,
    tableName,
    clock,
    environment: _read,
    deadLetter: _deadLetter,
    deadLetterSender: _sender,
    ...rest
  } = resolved;
  // Checked before the default store is built for it: a missing mode is named as such.
  expectMode(rest.mode);
  const settings = readConstructSettings(environment);
  assertModeAgreesWithConstruct(rest.mode.name, settings);
  const deadLetterWriter = deadLetterWriterOf(resolved, settings);
  const constructDefaults = constructModeDefaults(environment);
  return createBatchProcessor<TBody, TStore, TRecord>(
    {
      ...(rest as CommonOptions<TBody, TStore, TRecord>),
      store: store ?? (defaultStore(rest.mode as never, client, tableName) as TStore),
      clock: clock ?? Date.now,
      ...(deadLetterWriter === undefined ? {} : { deadLetterWriter }),
    },
    {
      leaseMillis: modeDefaults.leaseMillis ?? constructDefaults.leaseMillis,
      heartbeat: modeDefaults.heartbeat,
      outbox: modeDefaults.outbox ?? constructDefaults.outbox,
    },
  );
}
