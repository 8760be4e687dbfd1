/**
 * Logs and metrics: the options that shape them.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createSqsHandler, fromBody, marker } from 'effectively-once';

const client = DynamoDBDocumentClient.from(new DynamoDBClient({}), {
  marshallOptions: { removeUndefinedValues: true },
});

export const handler = createSqsHandler<{ readonly eventId: string }>({
  consumer: 'search-indexer',
  client,
  tableName: process.env.EO_INBOX_TABLE!,
  dedupKey: fromBody('eventId'),
  mode: marker(async () => {}),
  // `debug` also logs processed messages; `silent` logs nothing.
  logLevel: 'warn',
  // Dedup keys are business data: log their SHA-256 instead (field `scopedKeyHash`).
  logKeys: 'hash',
  // Carried into every log line as `correlationId`.
  correlationId: (record) => record.messageAttributes.traceparent?.stringValue,
  // The CloudWatch namespace of the Embedded Metric Format line.
  metricNamespace: 'Search',
});
