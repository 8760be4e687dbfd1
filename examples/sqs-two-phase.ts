/**
 * Two-phase mode: effects outside DynamoDB (a payments API). Each effect is claimed with a
 * lease, performed, then completed under its own inbox record; the derived idempotency key
 * lets the downstream deduplicate the rare second run (a lease that ended mid-call).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createSqsHandler, fromBody } from 'effectively-once';

interface RefundRequest {
  readonly refundId: string;
  readonly paymentId: string;
  readonly amount: number;
}

const paymentsUrl = process.env.PAYMENTS_URL!;
const client = DynamoDBDocumentClient.from(new DynamoDBClient({}), {
  marshallOptions: { removeUndefinedValues: true },
});

export const handler = createSqsHandler<RefundRequest>({
  consumer: 'refunds',
  client,
  tableName: process.env.EO_INBOX_TABLE!,
  dedupKey: fromBody('refundId'),
  mode: 'two-phase',
  // A claim still in progress after this long is taken over by the next delivery.
  leaseMillis: 30_000,
  // On a duplicate, `effects.run` returns the stored result instead of calling again.
  storeResults: true,
  handle: async (message, effects) => {
    const refund = await effects.run('refund', async ({ idempotencyKey, signal }) => {
      const response = await fetch(`${paymentsUrl}/refunds`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
        body: JSON.stringify(message.body),
        signal,
      });
      // Throwing releases the claim: the retry calls again, with the same key.
      if (!response.ok) throw new Error(`Refund failed with HTTP ${response.status}`);
      return (await response.json()) as { readonly refundReference: string };
    });
    await effects.run('notify', async ({ idempotencyKey }) => {
      const response = await fetch(`${paymentsUrl}/notifications`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
        body: JSON.stringify({ paymentId: message.body.paymentId, reference: refund?.refundReference }),
      });
      if (!response.ok) throw new Error(`Notification failed with HTTP ${response.status}`);
    });
  },
});
