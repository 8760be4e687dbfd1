/**
 * The receiving side of an outbox relay, whatever carried the event: the dedup key (the event
 * id) and the fingerprinted content, read from one of the shapes the relay's destinations
 * deliver. Transport-free: it reads the message's attributes and parsed body only.
 */
import { IDEMPOTENCY_KEY_ATTRIBUTE } from './contract';
import { attributeValue, type KeySource, type KeyValue } from './dedup-key';
import type { MessageAttribute } from './inbound-message';
import type { FingerprintPicker } from './message';

/** The key source and the fingerprint picker of {@link fromOutboxEnvelope}, to spread into a handler's options. */
export interface OutboxEnvelope {
  /** The event id the relay published: the `idempotency-key` the envelope carries. */
  readonly dedupKey: KeySource;
  /** The event's content: what one publish and the next of the same event have in common. */
  readonly fingerprint: FingerprintPicker<unknown>;
}

/** The event id and content an envelope carries; `undefined` when it carries no event id. */
interface OpenedEnvelope {
  readonly id: unknown;
  readonly content: unknown;
}

/** A plain object's own field, else `undefined`. */
function field(value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.hasOwn(value, name)
    ? (value as Record<string, unknown>)[name]
    : undefined;
}

/**
 * Reads the relay's event out of what a destination delivered, first match wins:
 *
 * - the `idempotency-key` message attribute (an SQS destination, or SNS with raw message
 *   delivery): the body is the event's detail;
 * - an SNS notification (no raw delivery): the id in `MessageAttributes['idempotency-key'].Value`,
 *   the detail in `Message`; `MessageId`, `Timestamp` and `Signature` differ per publish;
 * - an EventBridge event (a rule's SQS target): the id in `detail.metadata['idempotency-key']`,
 *   the content in `detail`; the event's `id` and `time` differ per publish.
 */
function openEnvelope(
  attributes: Readonly<Record<string, MessageAttribute>> | undefined,
  body: unknown,
): OpenedEnvelope | undefined {
  const attribute = attributeValue(attributes, IDEMPOTENCY_KEY_ATTRIBUTE);
  if (attribute !== undefined) return { id: attribute, content: body };
  if (field(body, 'Type') === 'Notification') {
    const id = field(field(field(body, 'MessageAttributes'), IDEMPOTENCY_KEY_ATTRIBUTE), 'Value');
    return { id, content: field(body, 'Message') };
  }
  const detail = field(body, 'detail');
  const id = field(field(detail, 'metadata'), IDEMPOTENCY_KEY_ATTRIBUTE);
  return id === undefined ? undefined : { id, content: detail };
}

/**
 * The dedup key and fingerprint of a consumer that receives an outbox relay's events, from any
 * of its destinations: an SQS queue, an SNS topic with or without raw message delivery, or an
 * EventBridge rule's SQS target. The key is the event id; the fingerprint covers the event
 * alone, never what the carrier adds per publish (SNS's `MessageId`, `Timestamp`, `Signature`;
 * EventBridge's `id`, `time`), so a re-published copy is a `duplicate`, not a
 * `PAYLOAD_MISMATCH`. A message without an event id is `MISSING_KEY` (dead-lettered).
 *
 * The handler still sees the body as delivered: the detail itself (SQS, raw SNS), the SNS
 * notification (the detail's JSON in `Message`) or the EventBridge event (the detail in
 * `detail.data`).
 *
 * @example
 * export const handler = createSqsHandler<{ orderId: string }>({
 *   ...fromOutboxEnvelope(),
 *   mode: marker(async (message) => bookParcel(message.body.orderId)),
 * });
 */
export function fromOutboxEnvelope(): OutboxEnvelope {
  const dedupKey: KeySource = (_record, body, message) =>
    openEnvelope(message.attributes, body)?.id as KeyValue;
  const fingerprint: FingerprintPicker<unknown> = (message) =>
    openEnvelope(message.attributes, message.body)?.content;
  return Object.freeze({ dedupKey, fingerprint });
}
