/**
 * `createSqsHandler`: the complete Lambda SQS handler. Takes the construct's settings from the
 * `EO_*` environment, builds the DynamoDB store from a document client (or takes an injected
 * store) and runs the core batch processor with the system clock.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { applyConstructEnvironment } from './construct-environment';
import { createBatchProcessor } from './core/batch-processor';
import type { Environment } from './core/environment';
import type { Clock, CommonOptions, ModeOptions } from './core/options';
import type { SqsHandler } from './core/sqs-event';
import type { InboxStore } from './core/store-port';
import { createDynamoDbStore } from './store/dynamodb-store';

/** Where inbox records live: a document client and table, or any `InboxStore`. */
export interface SqsHandlerStoreOptions {
  /**
   * The inbox store. Give either this, or `client` and `tableName`.
   * @default the DynamoDB store over `client` and `tableName`
   */
  readonly store?: InboxStore;
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
 * `EO_DEAD_LETTER_QUEUE_URL`), two-phase `leaseMillis` (`createSqsWorker` uses its visibility
 * timeout instead), `metricNamespace` and `logLevel`.
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
export type SqsHandlerOptions<TBody = unknown> = Omit<CommonOptions<TBody>, 'consumer'> &
  SqsHandlerEnvironmentOptions &
  ModeOptions<TBody> &
  SqsHandlerStoreOptions;

/**
 * `options` with the construct's `EO_*` settings (from `options.environment`, else
 * `process.env`) and the default clients filled in, checked against the construct's. The
 * worker resolves its options with it once, so its logs name the same consumer.
 */
export function resolveSqsHandlerOptions<TBody>(options: SqsHandlerOptions<TBody>): SqsHandlerOptions<TBody> {
  return applyConstructEnvironment(options, options?.environment ?? process.env);
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
 *   mode: 'atomic',
 *   handle: (message, unitOfWork) => {
 *     unitOfWork.put({ TableName: 'Orders', Item: { pk: message.body.orderId, status: message.body.status } });
 *   },
 * });
 */
export function createSqsHandler<TBody = unknown>(options: SqsHandlerOptions<TBody>): SqsHandler {
  const { store, client, tableName, clock, environment: _read, ...rest } = resolveSqsHandlerOptions(options);
  return createBatchProcessor<TBody>({
    ...(rest as CommonOptions<TBody> & ModeOptions<TBody>),
    store:
      store ??
      createDynamoDbStore({
        client: client!,
        // Entity mode never reads or writes the inbox table; the name only satisfies the store.
        tableName: tableName ?? (rest.mode === 'entity' ? 'no-inbox-table-in-entity-mode' : tableName!),
      }),
    clock: clock ?? Date.now,
  });
}
