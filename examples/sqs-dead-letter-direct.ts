/**
 * `deadLetter: 'direct'`: a permanent failure goes to the dead-letter queue at once, with its
 * reason and code as message attributes, and is acknowledged.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createSqsDeadLetterSender, createSqsHandler, entity, fromBody } from 'effectively-once';

interface ShipmentEvent {
  readonly shipmentId: string;
  readonly carrier: string;
}

const shipmentsTable = process.env.SHIPMENTS_TABLE!;
const client = DynamoDBDocumentClient.from(new DynamoDBClient({}), {
  marshallOptions: { removeUndefinedValues: true },
});
const sqs = new SQSClient({});

export const handler = createSqsHandler<ShipmentEvent>({
  consumer: 'shipment-tracker',
  client,
  dedupKey: fromBody('shipmentId'),
  mode: entity((message) => ({
    tableName: shipmentsTable,
    keyAttribute: 'shipmentId',
    item: { shipmentId: message.body.shipmentId, carrier: message.body.carrier },
  })),
  deadLetter: 'direct',
  deadLetterSender: createSqsDeadLetterSender({
    client: sqs,
    queueUrl: process.env.EO_DEAD_LETTER_QUEUE_URL!,
  }),
});
