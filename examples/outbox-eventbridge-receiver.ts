/**
 * A consumer behind an EventBridge rule's SQS target: the queue receives the whole event, and
 * EventBridge gives every put its own `id` and `time`. `fromOutboxEnvelope()` takes the event id
 * from `detail.metadata` and fingerprints `detail` only, so a re-published copy is a duplicate.
 */
import { createSqsHandler, fromOutboxEnvelope, marker } from 'effectively-once';

/** The body the queue receives: EventBridge's event, the outbox event's detail in `detail.data`. */
interface OrderConfirmedEvent {
  readonly detail: { readonly data: { readonly orderId: string } };
}

const parcelsUrl = process.env.PARCELS_URL!;

export const handler = createSqsHandler<OrderConfirmedEvent>({
  ...fromOutboxEnvelope(),
  mode: marker(async (message) => {
    const response = await fetch(parcelsUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': message.dedupKey },
      body: JSON.stringify({ orderId: message.body.detail.data.orderId }),
    });
    if (!response.ok) throw new Error(`Booking the parcel failed: HTTP ${response.status}`);
  }),
});
