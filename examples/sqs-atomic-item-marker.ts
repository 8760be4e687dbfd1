/**
 * Atomic mode with the marker on a business item: the order row a message creates is its own
 * marker, so the transaction holds the business writes alone (no inbox record) and a first
 * delivery costs 2 write units per write, not 2 more for the inbox record. A redelivery meets
 * the order row and is acknowledged as a duplicate; the stock is decremented once.
 */
import { atomic, createSqsHandler, fromBody } from 'effectively-once';

interface OrderPlaced {
  readonly orderId: string;
  readonly sku: string;
  readonly quantity: number;
}

const ordersTable = process.env.ORDERS_TABLE!;
const stockTable = process.env.STOCK_TABLE!;

export const handler = createSqsHandler<OrderPlaced>({
  dedupKey: fromBody('orderId'),
  mode: atomic(
    (message, unitOfWork) => {
      const { orderId, sku, quantity } = message.body;
      // The row keyed by the dedup key's order id carries the marker: its fingerprint, and the
      // condition that no live row holds the key.
      unitOfWork.putAsMarker({
        TableName: ordersTable,
        Item: { orderId, sku, quantity, status: 'PLACED' },
        keyAttribute: 'orderId',
      });
      // Not enough stock cancels the whole transaction: BUSINESS_CONDITION_FAILED, nothing written.
      unitOfWork.update({
        TableName: stockTable,
        Key: { sku },
        UpdateExpression: 'SET available = available - :quantity',
        ConditionExpression: 'available >= :quantity',
        ExpressionAttributeValues: { ':quantity': quantity },
      });
    },
    // Fixed at cold start: every message of this handler marks exactly one put.
    { marker: 'item' },
  ),
});
