/**
 * The order service of a chain: `OrderConfirmed` commits with the order update and the inbox
 * record, in one `TransactWriteItems`, or nothing does. `IdempotentConsumer({ outbox })` sets the
 * `EO_OUTBOX_*` variables that `atomic` emits to (see `examples/outbox-chain-stack.ts`).
 */
import { atomic, createSqsHandler, fromBody } from 'effectively-once';

const ordersTable = process.env.ORDERS_TABLE!;

export const handler = createSqsHandler<{ orderId: string; amount: number }>({
  dedupKey: fromBody('orderId'),
  mode: atomic((message, unitOfWork) => {
    const { orderId, amount } = message.body;
    // A cancelled order fails the condition: the whole transaction, event included, is cancelled.
    unitOfWork.update({
      TableName: ordersTable,
      Key: { pk: orderId },
      UpdateExpression: 'SET #status = :confirmed, paid = :amount',
      ConditionExpression: '#status = :placed',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':confirmed': 'CONFIRMED', ':placed': 'PLACED', ':amount': amount },
    });
    // Its id derives from this message's dedup key: a redelivery cannot mint a second one.
    unitOfWork.emit({ type: 'OrderConfirmed', detail: { orderId, amount } }, { entity: orderId });
  }),
});
