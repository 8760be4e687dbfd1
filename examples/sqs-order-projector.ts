/**
 * Atomic (inbox) mode: an order projector. The inbox record and the business writes are
 * committed in one TransactWriteItems, so a replayed event changes nothing. Deployed with the
 * `IdempotentConsumer` construct, it needs nothing but the key, the mode and the handler: the
 * consumer name, inbox table, record TTL, dead letters, metric namespace and log level come
 * from the construct's `EO_*` variables, and the DynamoDB client is created once per cold start.
 */
import { atomic, createSqsHandler, fromBody, PermanentError } from 'effectively-once';

interface OrderEvent {
  readonly orderId: string;
  readonly status: 'CREATED' | 'PAID' | 'SHIPPED';
  readonly amount: number;
}

const ordersTable = process.env.ORDERS_TABLE!;

export const handler = createSqsHandler<OrderEvent>({
  // A natural key: an order enters each status once, however often the producer resends.
  dedupKey: fromBody((order: OrderEvent) => [order.orderId, order.status]),
  mode: atomic(
    // Runs on every delivery, duplicates included: describe writes, never perform side effects.
    (message, unitOfWork) => {
      const { orderId, status, amount } = message.body;
      if (amount < 0) throw new PermanentError('An order amount cannot be negative');
      unitOfWork.put({
        TableName: ordersTable,
        Item: { pk: `ORDER#${orderId}`, sk: 'ORDER', status, amount },
      });
      unitOfWork.put({
        TableName: ordersTable,
        Item: { pk: `ORDER#${orderId}`, sk: `STATUS#${status}`, amount },
      });
    },
  ),
});
