/**
 * The next service of the chain books one parcel per confirmed order. A copy the relay publishes
 * again carries the same `idempotency-key`: it is a duplicate, and no second parcel is booked.
 */
import { atomic, createSqsHandler, fromAttribute } from 'effectively-once';

const shipmentsTable = process.env.SHIPMENTS_TABLE!;

export const handler = createSqsHandler<{ orderId: string; amount: number }>({
  dedupKey: fromAttribute('idempotency-key'),
  mode: atomic((message, unitOfWork) => {
    unitOfWork.update({
      TableName: shipmentsTable,
      Key: { pk: message.body.orderId },
      UpdateExpression: 'SET #status = :booked ADD parcels :one',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':booked': 'BOOKED', ':one': 1 },
    });
  }),
});
