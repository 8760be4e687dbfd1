/**
 * Example handler: the shipping service, the second link of the example's chain. A shipment
 * scheduler in entity-as-marker mode, consuming the standard queue the outbox relay publishes
 * the order projector's `OrderConfirmed` events to, and writing one Shipments item per confirmed
 * order. The Shipments item is its own marker: one conditional put, no inbox record.
 *
 * - **Dedup key: the `idempotency-key` message attribute** (`IDEMPOTENCY_KEY_ATTRIBUTE`), the
 *   event id the relay carries. The outbox derives it from the order projector's scoped dedup
 *   key, so every copy of one event has the same key: a relay that crashed after publishing
 *   publishes again with the same id, and this consumer acknowledges the copy as a duplicate.
 * - **Shipments item:** partition key `pk` = `SHIPMENT#<orderId>`, with the event id, the order
 *   total and when it was confirmed. Shipments table: partition key `pk` (String).
 * - **Idempotent on replay:** every attribute comes from the event, and a second copy finds the
 *   item already there with its own fingerprint.
 *
 * Environment: `SHIPMENTS_TABLE`, plus the toolkit's `EO_*` variables (see `ENV`).
 */
import {
  createSqsHandler,
  EffectivelyOnceError,
  type EntityWrite,
  entity,
  fromAttribute,
  type Message,
  type SqsHandlerOptions,
} from 'effectively-once';
import { IDEMPOTENCY_KEY_ATTRIBUTE } from 'effectively-once/outbox';
import { type HandlerEnvironment, requiredVariable } from './handler-environment';
import type { OrderConfirmed } from './order-projector';

/**
 * Parses and validates an `OrderConfirmed` detail (the message body the relay publishes); an
 * invalid one is a permanent `MALFORMED_BODY` error whose message names the field, never a value.
 */
export function parseOrderConfirmed(rawBody: string): OrderConfirmed {
  let detail: Partial<OrderConfirmed> | null;
  try {
    detail = JSON.parse(rawBody);
  } catch {
    // JSON.parse quotes the body in its message, and bodies never reach the logs.
    throw new EffectivelyOnceError('MALFORMED_BODY', 'An OrderConfirmed event must be JSON');
  }
  if (typeof detail !== 'object' || detail === null)
    throw new EffectivelyOnceError('MALFORMED_BODY', 'An OrderConfirmed event must be a JSON object');
  if (typeof detail.orderId !== 'string' || detail.orderId.trim() === '')
    throw new EffectivelyOnceError('MALFORMED_BODY', '`orderId` must be a non-empty string');
  if (typeof detail.amount !== 'number' || !Number.isFinite(detail.amount))
    throw new EffectivelyOnceError('MALFORMED_BODY', '`amount` must be a number');
  return detail as OrderConfirmed;
}

/** The Shipments item of one confirmed order in `shipmentsTable`. */
export function scheduleShipment(shipmentsTable: string, message: Message<OrderConfirmed>): EntityWrite {
  const { orderId, amount, currency, confirmedAt } = message.body;
  return {
    tableName: shipmentsTable,
    keyAttribute: 'pk',
    item: {
      pk: `SHIPMENT#${orderId}`,
      orderId,
      amount,
      currency,
      confirmedAt,
      status: 'SCHEDULED',
      // The event id: which OrderConfirmed event scheduled this shipment.
      eventId: message.dedupKey,
    },
  };
}

/** The shipment scheduler's options for `shipmentsTable` (everything but the toolkit settings). */
export function shipmentSchedulerOptions(
  shipmentsTable: string,
): Pick<SqsHandlerOptions<OrderConfirmed>, 'parse' | 'dedupKey' | 'mode'> {
  return {
    parse: parseOrderConfirmed,
    dedupKey: fromAttribute(IDEMPOTENCY_KEY_ATTRIBUTE),
    mode: entity((message: Message<OrderConfirmed>) => scheduleShipment(shipmentsTable, message)),
  };
}

/** The Shipments table, from `SHIPMENTS_TABLE`; a missing one fails the cold start. */
export function shipmentsTableOf(env: HandlerEnvironment): string {
  return requiredVariable(env, 'SHIPMENTS_TABLE');
}

/** The Lambda handler (bundled by entry path; read and validated once per cold start). */
export const handler = createSqsHandler<OrderConfirmed>(
  shipmentSchedulerOptions(shipmentsTableOf(process.env)),
);
