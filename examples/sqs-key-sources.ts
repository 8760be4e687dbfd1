/**
 * Where a dedup key can come from. Pass one as the `dedupKey` option.
 */
import {
  fromAttribute,
  fromBody,
  fromCloudEvent,
  fromDeduplicationId,
  fromMessageId,
  fromRecord,
} from 'effectively-once';

interface PaymentEvent {
  readonly tenant: string;
  readonly payment: { readonly id: string; readonly version: number };
}

// A message attribute the producer sets (string value, or the base64 of a binary value).
export const byAttribute = fromAttribute('idempotency-key');

// A body field by dotted path, or by path segments when a field name contains a dot.
export const byPath = fromBody('payment.id');
export const bySegments = fromBody(['metadata', 'event.id']);

// A typed function; a list of parts is a composite natural key (every part required).
export const byNaturalKey = fromBody((event: PaymentEvent) => [
  event.tenant,
  event.payment.id,
  event.payment.version,
]);

// CloudEvents `source` + `id`: binary mode (ce-source/ce-id attributes) or structured mode.
export const byCloudEvent = fromCloudEvent();

// FIFO queues: the MessageDeduplicationId (the producer's id, or the body's SHA-256).
export const byDeduplicationId = fromDeduplicationId();

// Only redeliveries of one SQS message: a producer resend gets a new messageId.
export const byMessageId = fromMessageId();

// Anything else: a function of the record and the parsed body.
export const byTenantAndPayment = fromRecord((record, body: PaymentEvent) => [
  record.messageAttributes.tenant?.stringValue,
  body.payment.id,
]);
