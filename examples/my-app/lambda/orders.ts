/**
 * The quickstart's handler: it keeps a running total per customer. A duplicate delivery of an
 * order would add it twice, so the total update is committed with the inbox record in one
 * TransactWriteItems. Deployed with `IdempotentConsumer`, it passes only the key, the mode and
 * the handler: the consumer name, inbox table, record TTL and dead-letter mode come from the
 * construct.
 */
import { atomic, createSqsHandler, fromBody, PermanentError } from 'effectively-once';

interface OrderPlaced {
  readonly orderId: string;
  readonly customerId: string;
  readonly amount: number;
}

const totalsTable = process.env.TOTALS_TABLE!;

export const handler = createSqsHandler<OrderPlaced>({
  dedupKey: fromBody('orderId'),
  mode: atomic((message, unitOfWork) => {
    const { customerId, amount } = message.body;
    // A permanent failure: with `deadLetterMode: 'direct'` it goes to the dead-letter queue at once.
    if (!(amount > 0)) throw new PermanentError('An order amount must be positive');
    unitOfWork.update({
      TableName: totalsTable,
      Key: { pk: `CUSTOMER#${customerId}` },
      UpdateExpression: 'ADD orderCount :one, amountTotal :amount',
      ExpressionAttributeValues: { ':one': 1, ':amount': amount },
    });
  }),
});
