/**
 * Example handler: a DynamoDB Streams projection of the Orders table into the OrderSummaries
 * read model, in atomic (inbox) mode. One summary item per order status
 * (`pk = STATUS#<status>`) counts the orders that reached that status (`orders`) and sums their
 * amounts (`amount`), from the status transition items the order projector inserts
 * (`sk = STATUS#<status>`).
 *
 * - **Mode: atomic.** The summary is a counter: adding 1 to `orders` is not idempotent, so applying
 *   a change twice would count an order twice. The inbox record and the counter update commit
 *   in one transaction, so a change the stream delivers again (a retry from the checkpoint, a
 *   re-read from `TRIM_HORIZON`) finds the record and is a duplicate, and there is no crash
 *   window between the effect and its marker as in `marker` mode.
 * - **Dedup key: the item's key, the event name and the order status it carries**
 *   (`ORDER#o-1:STATUS#PAID:INSERT:PAID`). The Orders items have no version attribute, and
 *   each of them takes each status once: a transition item is inserted once, the order item
 *   moves to each status once. The event id is not the key: a second emission of the same
 *   change gets a new one.
 * - **Effects:** an `INSERT` of a transition item adds the order and its amount to its
 *   status; a `REMOVE` takes them away; a `MODIFY` of a transition item moves the amount by
 *   the difference. Changes of the order item itself are recorded and change nothing.
 *
 * Environment: `ORDER_SUMMARIES_TABLE`, plus the toolkit's `EO_*` variables (see `ENV`).
 */
import {
  atomic,
  EffectivelyOnceError,
  type Message,
  PermanentError,
  type UnitOfWork,
} from 'effectively-once';
import {
  createDynamoDbStreamHandler,
  type DynamoDbChange,
  type DynamoDbStreamHandlerOptions,
  type DynamoDbStreamRecord,
} from 'effectively-once/streams';
import type { HandlerEnvironment } from './order-projector';

/** An item of the Orders table, as the order projector writes it (only the fields read here). */
export interface OrdersItem {
  readonly pk: string;
  readonly sk: string;
  readonly status?: string;
  readonly amount?: number;
}

/** The prefix of the sort key of a status transition item, and of a summary's partition key. */
export const STATUS_PREFIX = 'STATUS#';

const isText = (value: unknown): value is string => typeof value === 'string' && value !== '';

/**
 * The dedup key of a change: the item's `pk` and `sk`, the event name and the order status of
 * its image (the new one, or the old one of a `REMOVE`). A change without them is a permanent
 * `MISSING_KEY` (dead-lettered with the reason, and the stream moves on).
 */
export function orderChangeKey(_record: DynamoDbStreamRecord, change: DynamoDbChange<OrdersItem>): string[] {
  const { pk, sk } = change.keys;
  const status = (change.newImage ?? change.oldImage)?.status;
  if (!isText(pk) || !isText(sk) || !isText(status)) {
    throw new EffectivelyOnceError(
      'MISSING_KEY',
      'An Orders change must carry the keys `pk` and `sk` and an image with a `status`',
    );
  }
  return [pk, sk, change.eventName, status];
}

/** The amount of a transition item's image; a missing or non-numeric one is a permanent error. */
function amountOf(item: OrdersItem | undefined): number {
  if (typeof item?.amount !== 'number' || !Number.isFinite(item.amount)) {
    throw new PermanentError('A status transition item must carry a numeric `amount`');
  }
  return item.amount;
}

/** Describes the read-model update of one Orders change on the unit of work (none for order items). */
export function projectOrderChange(
  summariesTable: string,
  message: Message<DynamoDbChange<OrdersItem>>,
  unitOfWork: UnitOfWork,
): void {
  const { eventName, keys, newImage, oldImage } = message.body;
  if (!String(keys.sk).startsWith(STATUS_PREFIX)) return;
  const status = (newImage ?? oldImage)!.status!;
  let orders = 0;
  let amount = 0;
  if (eventName === 'INSERT') {
    orders = 1;
    amount = amountOf(newImage);
  } else if (eventName === 'REMOVE') {
    orders = -1;
    amount = -amountOf(oldImage);
  } else {
    amount = amountOf(newImage) - amountOf(oldImage);
  }
  if (orders === 0 && amount === 0) return;
  unitOfWork.update({
    TableName: summariesTable,
    Key: { pk: `${STATUS_PREFIX}${status}` },
    UpdateExpression:
      'SET #status = :status, orders = if_not_exists(orders, :zero) + :orders, amount = if_not_exists(amount, :zero) + :amount',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: { ':status': status, ':orders': orders, ':amount': amount, ':zero': 0 },
  });
}

/** The OrderSummaries table, from `ORDER_SUMMARIES_TABLE`; a missing one fails the cold start. */
export function orderSummariesTableOf(env: HandlerEnvironment): string {
  const table = env.ORDER_SUMMARIES_TABLE;
  if (table === undefined || table.trim() === '') {
    throw new EffectivelyOnceError(
      'INVALID_OPTIONS',
      `Expected environment variable \`ORDER_SUMMARIES_TABLE\` to be set, got \`${String(table)}\``,
    );
  }
  return table;
}

/**
 * The projector's whole handler definition, read from `env`: `ORDER_SUMMARIES_TABLE`, and the
 * toolkit settings (`EO_*`), which `createDynamoDbStreamHandler` reads from the same `env`.
 */
export function orderSummaryProjectorDefinition(
  env: HandlerEnvironment = process.env,
): DynamoDbStreamHandlerOptions<DynamoDbChange<OrdersItem>> {
  const summariesTable = orderSummariesTableOf(env);
  return {
    environment: env,
    dedupKey: orderChangeKey,
    mode: atomic((message: Message<DynamoDbChange<OrdersItem>>, unitOfWork) =>
      projectOrderChange(summariesTable, message, unitOfWork),
    ),
  };
}

/** The Lambda handler (bundled by entry path; read and validated once per cold start). */
export const handler = createDynamoDbStreamHandler<DynamoDbChange<OrdersItem>>(
  orderSummaryProjectorDefinition(),
);
