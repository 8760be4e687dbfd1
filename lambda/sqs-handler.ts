/**
 * `createSqsHandler`: the complete Lambda SQS handler. Builds the DynamoDB store from a
 * document client (or takes an injected store) and runs the core batch processor with the
 * system clock.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createBatchProcessor } from './core/batch-processor';
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
   */
  readonly client?: DynamoDBDocumentClient;
  /**
   * Name of the inbox table. Used when `store` is not given; `entity` mode needs none (the
   * business item is the marker, and the construct creates no inbox table for it).
   */
  readonly tableName?: string;
  /**
   * Epoch milliseconds now.
   * @default Date.now
   */
  readonly clock?: Clock;
}

/** Options of {@link createSqsHandler} (and of `createSqsMiddleware`). */
export type SqsHandlerOptions<TBody = unknown> = CommonOptions<TBody> &
  ModeOptions<TBody> &
  SqsHandlerStoreOptions;

/**
 * Creates a complete Lambda SQS handler that deduplicates every message and returns a partial
 * batch response (enable `ReportBatchItemFailures` on the event source mapping). Call it once,
 * at module scope: options are validated here and a bad option throws at cold start.
 *
 * @example
 * const client = DynamoDBDocumentClient.from(new DynamoDBClient({}), {
 *   marshallOptions: { removeUndefinedValues: true },
 * });
 *
 * export const handler = createSqsHandler<OrderEvent>({
 *   consumer: 'order-projector',
 *   client,
 *   tableName: process.env.EO_INBOX_TABLE!,
 *   dedupKey: fromBody((order: OrderEvent) => [order.orderId, order.status]),
 *   mode: 'atomic',
 *   handle: (message, unitOfWork) => {
 *     unitOfWork.put({ TableName: 'Orders', Item: { pk: message.body.orderId, status: message.body.status } });
 *   },
 * });
 */
export function createSqsHandler<TBody = unknown>(options: SqsHandlerOptions<TBody>): SqsHandler {
  const { store, client, tableName, clock, ...rest } = options;
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
