/**
 * Marker mode: the effect is naturally idempotent (purging a CDN path twice is harmless), so
 * the marker only saves the repeat. The marker is stored first, then `handle` runs.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createSqsHandler, fromAttribute, marker } from 'effectively-once';

interface PurgeRequest {
  readonly path: string;
}

const client = DynamoDBDocumentClient.from(new DynamoDBClient({}), {
  marshallOptions: { removeUndefinedValues: true },
});

export const handler = createSqsHandler<PurgeRequest>({
  consumer: 'cdn-purger',
  client,
  tableName: process.env.EO_INBOX_TABLE!,
  dedupKey: fromAttribute('idempotency-key'),
  mode: marker(async (message) => {
    const url = `https://cdn.example.com/purge?path=${encodeURIComponent(message.body.path)}`;
    const response = await fetch(url, { method: 'POST' });
    // Throwing releases the marker, and the message is retried.
    if (!response.ok) throw new Error(`Purge failed with HTTP ${response.status}`);
  }),
});
