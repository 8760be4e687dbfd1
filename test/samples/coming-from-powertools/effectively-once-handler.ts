/**
 * After: the same consumer on effectively-once. The order id is the dedup key, the amount is
 * the fingerprinted part, and a record without an order id is dead-lettered (`MISSING_KEY`). The
 * order and its marker are written in one transaction.
 */
import { atomic, createSqsHandler, fromBody } from 'effectively-once';
import type { Order, OrderHandlerSettings } from './powertools-handler';

export function createOrderHandler({
  documentClient,
  inboxTable,
  ordersTable,
}: Pick<OrderHandlerSettings, 'documentClient' | 'ordersTable'> & { readonly inboxTable: string }) {
  return createSqsHandler<Order>({
    consumer: 'orders',
    client: documentClient,
    tableName: inboxTable,
    dedupKey: fromBody('orderId'),
    fingerprint: (message) => message.body.amount,
    mode: atomic((message, unitOfWork) => {
      const { orderId, amount } = message.body;
      unitOfWork.put({ TableName: ordersTable, Item: { pk: orderId, amount } });
    }),
  });
}
