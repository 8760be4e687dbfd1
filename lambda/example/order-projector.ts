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
 * - **Emits `OrderConfirmed` through the outbox** when an order becomes `PAID`, in the same
 *   transaction: the outbox item exists if and only if the order writes do. `PAID` is the
 *   status that confirms an order (its payment is captured, so it can be shipped); `PLACED` may
 *   still be abandoned, and `SHIPPED` is what the shipping service reports back. The event id
 *   derives from the message's scoped dedup key (`order-projector#<orderId>:PAID`) and
 *   `OrderConfirmed#0`, so a resend, a redelivery or a replay of the `PAID` event can never mint
 *   a second one. The relay (`order-events-relay.ts`) publishes it to the shipment scheduler.
 * - **Idempotent on replay:** every written value comes from the message (no receive
 *   timestamps, no counters), so replaying the log after the inbox records expired rewrites
 *   the same values.
 *
 * Environment: `ORDERS_TABLE`, the outbox's `EO_OUTBOX_TABLE_NAME` and
 * `EO_OUTBOX_RETENTION_SECONDS` (the `Outbox` construct's writer environment), plus the
 * toolkit's `EO_*` variables (see `ENV`). The same definition runs as a long-running
 * `sqs-consumer` worker: see `order-projector-worker.ts`.
 */

import {
  type AtomicOutboxOptions,
  atomic,
  createSqsHandler,
  EffectivelyOnceError,
  fromBody,
  type Message,
  PermanentError,
  type SqsHandlerOptions,
  type UnitOfWork,
} from 'effectively-once';
import { OUTBOX_ENV } from 'effectively-once/outbox';
import { type HandlerEnvironment, requiredVariable } from './handler-environment';

export type { HandlerEnvironment } from './handler-environment';

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

/** The status that confirms an order: entering it emits {@link OrderConfirmed}. */
export const CONFIRMED_STATUS = 'PAID';

/** The type of the event the order projector emits when an order is confirmed. */
export const ORDER_CONFIRMED = 'OrderConfirmed';

/** The detail of an `OrderConfirmed` event: what the shipping service needs, from the order event. */
export interface OrderConfirmed {
  readonly orderId: string;
  readonly amount: number;
  readonly currency: string | null;
  /** When the order was confirmed (the `PAID` event's `occurredAt`). */
  readonly confirmedAt: string | null;
}

/**
 * Describes the writes of one order event on the unit of work, and the `OrderConfirmed` event
 * when the order becomes {@link CONFIRMED_STATUS}.
 */
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
  if (status === CONFIRMED_STATUS) {
    const detail: OrderConfirmed = {
      orderId,
      amount,
      currency: currency ?? null,
      confirmedAt: occurredAt ?? null,
    };
    unitOfWork.emit({ type: ORDER_CONFIRMED, detail }, { entity: orderId });
  }
}

/**
 * The order projector's options for `ordersTable` and the `outbox` it emits to (everything but
 * the toolkit settings).
 */
export function orderProjectorOptions(
  ordersTable: string,
  outbox: AtomicOutboxOptions,
): Pick<SqsHandlerOptions<OrderEvent>, 'parse' | 'dedupKey' | 'fingerprint' | 'mode'> {
  return {
    parse: parseOrderEvent,
    dedupKey: fromBody((order: OrderEvent) => [order.orderId, order.status]),
    // The producer's event id changes on a resend, so it stays out of the fingerprint: a
    // resend with a fresh id is a duplicate, while a changed amount is still a mismatch.
    fingerprint: ({ body: { eventId: _eventId, ...event } }) => event,
    mode: atomic(
      (message: Message<OrderEvent>, unitOfWork) => projectOrder(ordersTable, message, unitOfWork),
      { outbox },
    ),
  };
}

/** The Orders table, from `ORDERS_TABLE`; a missing one fails the cold start. */
export function ordersTableOf(env: HandlerEnvironment): string {
  return requiredVariable(env, 'ORDERS_TABLE');
}

/**
 * The outbox the projector emits to, from the `Outbox` construct's writer environment
 * (`EO_OUTBOX_TABLE_NAME`, `EO_OUTBOX_RETENTION_SECONDS`); a missing or invalid one fails the
 * cold start.
 */
export function orderOutboxOf(env: HandlerEnvironment): AtomicOutboxOptions {
  const tableName = requiredVariable(env, OUTBOX_ENV.tableName);
  const retention = requiredVariable(env, OUTBOX_ENV.retentionSeconds);
  const retentionSeconds = Number(retention);
  if (!Number.isSafeInteger(retentionSeconds) || retentionSeconds <= 0) {
    throw new EffectivelyOnceError(
      'INVALID_OPTIONS',
      `Expected environment variable \`${OUTBOX_ENV.retentionSeconds}\` to be a positive integer, got \`${retention}\``,
    );
  }
  return { tableName, retentionSeconds };
}

/**
 * The order projector's whole handler definition, read from `env`: `ORDERS_TABLE`, the outbox
 * (`EO_OUTBOX_*`), and the toolkit settings (`EO_*`), which `createSqsHandler` reads from the same `env`. Both runtimes
 * run it: the Lambda entry point below, and the long-running worker in
 * `order-projector-worker.ts`. They share the inbox table and the consumer name, so a message
 * processed by one is a duplicate to the other, and a consumer can move between Lambda and a
 * container without reprocessing anything.
 */
export function orderProjectorDefinition(
  env: HandlerEnvironment = process.env,
): SqsHandlerOptions<OrderEvent> {
  return { environment: env, ...orderProjectorOptions(ordersTableOf(env), orderOutboxOf(env)) };
}

/** The Lambda handler (bundled by entry path; read and validated once per cold start). */
export const handler = createSqsHandler<OrderEvent>(orderProjectorDefinition());
