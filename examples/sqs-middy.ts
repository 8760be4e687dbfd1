/**
 * The same engine as a middy middleware. It answers with the partial batch response as an
 * early response, so per-message logic goes in `handle` and the base handler never runs.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import middy from '@middy/core';
import { atomic, createSqsMiddleware, fromBody } from 'effectively-once';

interface InvoiceEvent {
  readonly invoiceId: string;
  readonly customerId: string;
  readonly total: number;
}

const invoicesTable = process.env.INVOICES_TABLE!;
const customersTable = process.env.CUSTOMERS_TABLE!;
const client = DynamoDBDocumentClient.from(new DynamoDBClient({}), {
  marshallOptions: { removeUndefinedValues: true },
});

export const handler = middy().use(
  createSqsMiddleware<InvoiceEvent>({
    consumer: 'invoice-ledger',
    client,
    tableName: process.env.EO_INBOX_TABLE!,
    dedupKey: fromBody('invoiceId'),
    mode: atomic((message, unitOfWork) => {
      const { invoiceId, customerId, total } = message.body;
      unitOfWork.put({ TableName: invoicesTable, Item: { pk: invoiceId, customerId, total } });
      unitOfWork.update({
        TableName: customersTable,
        Key: { pk: customerId },
        UpdateExpression: 'ADD balance :total',
        ExpressionAttributeValues: { ':total': total },
      });
    }),
  }),
);
