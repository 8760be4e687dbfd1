/**
 * Atomic (inbox) mode: an order projector. The inbox record and the business writes are
 * committed in one TransactWriteItems, so a replayed event changes nothing.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createSqsHandler, fromBody, PermanentError } from 'effectively-once';

interface OrderEvent {
  readonly orderId: string;
  readonly status: 'CREATED' | 'PAID' | 'SHIPPED';
  readonly amount: number;
}

const ordersTable = process.env.ORDERS_TABLE!;
// Created once per cold start, at module scope.
const client = DynamoDBDocumentClient.from(new DynamoDBClient({}), {
  marshallOptions: { removeUndefinedValues: true },
});

export const handler = createSqsHandler<OrderEvent>({
  consumer: 'order-projector',
  client,
  tableName: process.env.EO_INBOX_TABLE!,
  // A natural key: an order enters each status once, however often the producer resends.
  dedupKey: fromBody((order: OrderEvent) => [order.orderId, order.status]),
  mode: 'atomic',
  // Runs on every delivery, duplicates included: describe writes, never perform side effects.
  handle: (message, unitOfWork) => {
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
});
