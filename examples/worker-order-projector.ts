/**
 * One handler definition, two runtimes. This module holds the definition and the Lambda entry
 * point; `worker-main.ts` runs the same definition as a long-running `sqs-consumer` worker.
 * The Lambda bundle built from this file never contains `sqs-consumer`: only `worker-main.ts`
 * imports the worker adapter.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { atomic, createSqsHandler, fromBody, type SqsHandlerOptions } from 'effectively-once';

/** An order event as the producer sends it. */
export interface OrderEvent {
  readonly orderId: string;
  readonly status: 'PLACED' | 'PAID' | 'SHIPPED';
  readonly total: number;
}

const client = DynamoDBDocumentClient.from(new DynamoDBClient({}), {
  marshallOptions: { removeUndefinedValues: true },
});

/** The handler definition: written once, used by both runtimes. */
export const orderProjector: SqsHandlerOptions<OrderEvent> = {
  consumer: 'order-projector',
  client,
  tableName: 'inbox',
  // A natural key: one effect per order and status, however often the event is resent.
  dedupKey: fromBody((order: OrderEvent) => [order.orderId, order.status]),
  mode: atomic((message, unitOfWork) => {
    unitOfWork.put({
      TableName: 'orders',
      Item: { pk: message.body.orderId, status: message.body.status, total: message.body.total },
    });
  }),
};

/** The Lambda entry point (SQS event source mapping with `ReportBatchItemFailures`). */
export const handler = createSqsHandler(orderProjector);
