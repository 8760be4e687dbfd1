/**
 * Two-phase mode: effects outside DynamoDB (a payments API). Each effect is claimed with a
 * lease, performed, then completed under its own inbox record; the derived idempotency key
 * lets the downstream deduplicate the rare second run (a lease that ended mid-call).
 */
import { createSqsHandler, fromBody, twoPhase } from 'effectively-once';

interface RefundRequest {
  readonly refundId: string;
  readonly paymentId: string;
  readonly amount: number;
}

const paymentsUrl = process.env.PAYMENTS_URL!;

// Deployed with the construct, the consumer, inbox table, TTL, dead letters and the lease (a
// claim still in progress after it is taken over) come from its `EO_*` variables.
export const handler = createSqsHandler<RefundRequest>({
  dedupKey: fromBody('refundId'),
  mode: twoPhase({
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
  }),
});
