/**
 * `createSqsHandler`: the complete Lambda SQS handler. Takes the construct's settings from the
 * `EO_*` environment, builds the DynamoDB store from a document client (or takes an injected
 * store) and runs the core batch processor with the system clock.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { applyConstructEnvironment, constructModeDefaults } from './construct-environment';
import { type BatchOrdering, createBatchProcessor } from './core/batch-processor';
import type { Environment } from './core/environment';
import { expectMode, type Mode, type ModeDefaults } from './core/mode';
import type { CommonOptions } from './core/options';
import type { SqsHandler } from './core/sqs-event';
import type { Clock } from './core/time';
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
 * Where the construct's settings come from. Inside a function that `IdempotentConsumer`
 * configured, every option it sets an `EO_*` variable for defaults to that variable:
 * `consumer`, `tableName`, `ttlSeconds`, `deadLetter` (and for `direct` a sender to
 * `EO_DEAD_LETTER_QUEUE_URL`), `metricNamespace`, `logLevel` and `completedCache`
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

/** Options of {@link createSqsHandler} (and of `createSqsMiddleware` and the worker). */
export type SqsHandlerOptions<TBody = unknown, TStore = unknown> = Omit<
  CommonOptions<TBody, TStore>,
  'consumer'
> &
  SqsHandlerEnvironmentOptions &
  SqsHandlerStoreOptions<TStore>;

/**
 * `options` with the construct's `EO_*` settings (from `options.environment`, else
 * `process.env`) and the default clients filled in, checked against the construct's. The
 * worker resolves its options with it once, so its logs name the same consumer.
 */
export function resolveSqsHandlerOptions<TBody, TStore>(
  options: SqsHandlerOptions<TBody, TStore>,
): SqsHandlerOptions<TBody, TStore> {
  return applyConstructEnvironment(options, options?.environment ?? process.env);
}

/** The DynamoDB store the mode asks for: entity mode's needs no inbox table. */
function defaultStore(
  mode: Mode<unknown, unknown>,
  client: SqsHandlerStoreOptions['client'],
  tableName: string | undefined,
) {
  return mode.capability === 'entity'
    ? createDynamoDbEntityStore({ client: client! })
    : createDynamoDbStore({ client: client!, tableName: tableName! });
}

/**
 * Creates a complete Lambda SQS handler that deduplicates every message and returns a partial
 * batch response (enable `ReportBatchItemFailures` on the event source mapping). Call it once,
 * at module scope: options are validated here and a bad option throws at cold start. In a
 * function the construct configured, the consumer, inbox table, TTL, dead letters, lease,
 * metric namespace and log level come from its `EO_*` variables
 * ({@link SqsHandlerEnvironmentOptions}).
 *
 * @example
 * export const handler = createSqsHandler<OrderEvent>({
 *   dedupKey: fromBody((order: OrderEvent) => [order.orderId, order.status]),
 *   mode: atomic((message, unitOfWork) => {
 *     unitOfWork.put({ TableName: 'Orders', Item: { pk: message.body.orderId, status: message.body.status } });
 *   }),
 * });
 */
export function createSqsHandler<TBody = unknown, TStore = unknown>(
  options: SqsHandlerOptions<TBody, TStore>,
): SqsHandler {
  return createSqsHandlerWithDefaults(options, {});
}

/**
 * `createSqsHandler` for an entry point that supplies mode defaults of its own (the worker's
 * visibility timeout as the two-phase lease); they win over the construct's `EO_LEASE_MILLIS`.
 * `ordering` is the transport's own record order (a stream entry point's shards).
 */
export function createSqsHandlerWithDefaults<TBody, TStore>(
  options: SqsHandlerOptions<TBody, TStore>,
  modeDefaults: ModeDefaults,
  ordering: BatchOrdering = {},
): SqsHandler {
  const environment = options?.environment ?? process.env;
  const resolved = applyConstructEnvironment(options, environment);
  const { store, client, tableName, clock, environment: _read, ...rest } = resolved;
  // Checked before the default store is built for it: a missing mode is named as such.
  expectMode(rest.mode);
  const constructDefaults = constructModeDefaults(environment);
  return createBatchProcessor<TBody, TStore>(
    {
      ...(rest as CommonOptions<TBody, TStore>),
      store: store ?? (defaultStore(rest.mode, client, tableName) as TStore),
      clock: clock ?? Date.now,
    },
    {
      leaseMillis: modeDefaults.leaseMillis ?? constructDefaults.leaseMillis,
      heartbeat: modeDefaults.heartbeat,
      outbox: modeDefaults.outbox ?? constructDefaults.outbox,
    },
    ordering,
  );
}
