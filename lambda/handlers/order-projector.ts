/**
 * Example handler: an order projector in atomic (inbox) mode, consuming a FIFO queue of order
 * events (message group = order id) and keeping an Orders table up to date.
 *
 * - **Dedup key: the natural key `orderId` + `status`.** An order enters each status once, so
 *   the pair identifies the logical event however often the producer resends it, even with a
 *   fresh event id. (A domain where an order can re-enter a status, say PAID after a refund,
 *   should key on a producer-supplied `eventId` instead: `fromBody('eventId')`.)
 * - **Writes, committed with the marker in one transaction:** the order item
 *   (`pk = ORDER#<orderId>`, `sk = ORDER`) updated to the new status and amount, and one
 *   status transition item (`sk = STATUS#<status>`). Orders table: partition key `pk` (String),
 *   sort key `sk` (String).
 * - **Idempotent on replay:** every written value comes from the message (no receive
 *   timestamps, no counters), so replaying the log after the inbox records expired rewrites
 *   the same values.
 *
 * Environment: `ORDERS_TABLE`, plus the toolkit's `EO_*` variables (see `ENV`). The same
 * definition runs as a long-running `sqs-consumer` worker: see `order-projector-worker.ts`.
 */

import {
  atomic,
  createSqsHandler,
  EffectivelyOnceError,
  fromBody,
  type Message,
  PermanentError,
  type SqsHandlerOptions,
  type UnitOfWork,
} from 'effectively-once';

/** The environment a deployable handler reads its own variables from. */
export type HandlerEnvironment = Readonly<Record<string, string | undefined>>;

/** One order event, as the producer sends it. */
export interface OrderEvent {
  readonly orderId: string;
  readonly status: string;
  /** Order total in minor units (for example cents). */
  readonly amount: number;
  readonly currency?: string;
  /** When the status changed, ISO 8601, set by the producer. */
  readonly occurredAt?: string;
  /** Producer's event id (kept for tracing; not the dedup key). */
  readonly eventId?: string;
}

const isText = (value: unknown): value is string => typeof value === 'string' && value.trim() !== '';

/**
 * Parses and validates an order event; an invalid one is a permanent `MALFORMED_BODY` error.
 * Its messages name the field, never a value, so they are toolkit errors: their reason is logged
 * and dead-lettered (the message of any other error is not, without `logErrorMessages`).
 */
export function parseOrderEvent(rawBody: string): OrderEvent {
  let event: Partial<OrderEvent> | null;
  try {
    event = JSON.parse(rawBody);
  } catch {
    // JSON.parse quotes the body in its message, and bodies never reach the logs.
    throw new EffectivelyOnceError('MALFORMED_BODY', 'An order event must be JSON');
  }
  if (typeof event !== 'object' || event === null)
    throw new EffectivelyOnceError('MALFORMED_BODY', 'An order event must be a JSON object');
  if (!isText(event.orderId))
    throw new EffectivelyOnceError('MALFORMED_BODY', '`orderId` must be a non-empty string');
  if (!isText(event.status))
    throw new EffectivelyOnceError('MALFORMED_BODY', '`status` must be a non-empty string');
  if (typeof event.amount !== 'number' || !Number.isFinite(event.amount))
    throw new EffectivelyOnceError('MALFORMED_BODY', '`amount` must be a number');
  return event as OrderEvent;
}

/** Describes the writes of one order event on the unit of work. */
export function projectOrder(
  ordersTable: string,
  message: Message<OrderEvent>,
  unitOfWork: UnitOfWork,
): void {
  const { orderId, status, amount, currency, occurredAt } = message.body;
  if (amount < 0) throw new PermanentError('An order amount cannot be negative');
  const pk = `ORDER#${orderId}`;
  unitOfWork.update({
    TableName: ordersTable,
    Key: { pk, sk: 'ORDER' },
    UpdateExpression:
      'SET orderId = :orderId, #status = :status, amount = :amount, currency = :currency, statusAt = :at',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: {
      ':orderId': orderId,
      ':status': status,
      ':amount': amount,
      ':currency': currency ?? null,
      ':at': occurredAt ?? null,
    },
  });
  unitOfWork.put({
    TableName: ordersTable,
    Item: {
      pk,
      sk: `STATUS#${status}`,
      orderId,
      status,
      amount,
      currency,
      occurredAt,
      dedupKey: message.dedupKey,
    },
  });
}

/** The order projector's options for `ordersTable` (everything but the toolkit settings). */
export function orderProjectorOptions(
  ordersTable: string,
): Pick<SqsHandlerOptions<OrderEvent>, 'parse' | 'dedupKey' | 'fingerprint' | 'mode'> {
  return {
    parse: parseOrderEvent,
    dedupKey: fromBody((order: OrderEvent) => [order.orderId, order.status]),
    // The producer's event id changes on a resend, so it stays out of the fingerprint: a
    // resend with a fresh id is a duplicate, while a changed amount is still a mismatch.
    fingerprint: ({ body: { eventId: _eventId, ...event } }) => event,
    mode: atomic((message: Message<OrderEvent>, unitOfWork) =>
      projectOrder(ordersTable, message, unitOfWork),
    ),
  };
}

/** The Orders table, from `ORDERS_TABLE`; a missing one fails the cold start. */
export function ordersTableOf(env: HandlerEnvironment): string {
  const table = env.ORDERS_TABLE;
  if (table === undefined || table.trim() === '') {
    throw new EffectivelyOnceError(
      'INVALID_OPTIONS',
      `Expected environment variable \`ORDERS_TABLE\` to be set, got \`${String(table)}\``,
    );
  }
  return table;
}

/**
 * The order projector's whole handler definition, read from `env`: `ORDERS_TABLE`, and the
 * toolkit settings (`EO_*`), which `createSqsHandler` reads from the same `env`. Both runtimes
 * run it: the Lambda entry point below, and the long-running worker in
 * `order-projector-worker.ts`. They share the inbox table and the consumer name, so a message
 * processed by one is a duplicate to the other, and a consumer can move between Lambda and a
 * container without reprocessing anything.
 */
export function orderProjectorDefinition(
  env: HandlerEnvironment = process.env,
): SqsHandlerOptions<OrderEvent> {
  return { environment: env, ...orderProjectorOptions(ordersTableOf(env)) };
}

/** The Lambda handler (bundled by entry path; read and validated once per cold start). */
export const handler = createSqsHandler<OrderEvent>(orderProjectorDefinition());
