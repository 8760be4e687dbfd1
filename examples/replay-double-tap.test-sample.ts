/**
 * The double-tap test in your own suite: replay a message log twice against a deployed (or
 * local) consumer and fail with every field the second replay changed. Needs the consumer
 * running and the queue URL and table names from the stack outputs.
 *
 * (A sample: `tsc` type-checks it; the vitest projects of this repository do not run it.)
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { doubleTap, formatDifferences } from 'effectively-once/replay';
import { describe, expect, it } from 'vitest';

const sqs = new SQSClient({});
const dynamodb = new DynamoDBClient({});

describe('the audit recorder', () => {
  it('changes nothing when the whole audit log is replayed a second time', async () => {
    const result = await doubleTap({
      // JSON Lines text (the CLI's --log format) or message objects.
      log: [
        { body: { specversion: '1.0', id: 'aud-1', source: '/shop/orders', type: 'order.placed' } },
        { body: { specversion: '1.0', id: 'aud-2', source: '/shop/orders', type: 'order.placed' } },
      ],
      queueUrl: process.env.AUDIT_QUEUE_URL!,
      tables: [process.env.AUDIT_TABLE!, process.env.INBOX_TABLE!],
      sqs,
      dynamodb,
      // Waits until the queue's counters read zero this many times in a row, then snapshots.
      stablePolls: 3,
      timeoutSeconds: 60,
    });

    // On failure the message lists each changed field: `~ processedAt: 1700… -> 1700…`.
    expect(result.differences, formatDifferences(result.differences)).toEqual([]);
  }, 180_000);
});
