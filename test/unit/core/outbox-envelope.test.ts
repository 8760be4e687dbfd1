import { describe, expect, it } from 'vitest';
import { IDEMPOTENCY_KEY_ATTRIBUTE } from '../../../lambda/core/contract';
import type { MessageAttribute } from '../../../lambda/core/inbound-message';
import type { Message } from '../../../lambda/core/message';
import { fromOutboxEnvelope } from '../../../lambda/core/outbox-envelope';

const ID = 'a'.repeat(64);
const detail = { orderId: 'o-1', amount: 5 };
const envelope = fromOutboxEnvelope();

/** What the engine hands the key source and the fingerprint picker for one delivery. */
function delivered(messageId: string, body: unknown, attributes: Record<string, MessageAttribute> = {}) {
  const message = { messageId, body, attributes } as unknown as Message<unknown>;
  const inbound = { id: messageId, attributes, record: {}, text: JSON.stringify(body) };
  return {
    key: envelope.dedupKey({}, body, inbound),
    fingerprint: envelope.fingerprint(message),
  };
}

const keyAttribute = { [IDEMPOTENCY_KEY_ATTRIBUTE]: { stringValue: ID, dataType: 'String' } };

/** An SNS notification of one publish: `MessageId`, `Timestamp` and `Signature` are its own. */
const notification = (publish: number) => ({
  Type: 'Notification',
  MessageId: `sns-${publish}`,
  TopicArn: 'arn:aws:sns:eu-west-1:123456789012:orders',
  Message: JSON.stringify(detail),
  Timestamp: `2026-12-01T00:00:0${publish}.000Z`,
  Signature: `signature-${publish}`,
  MessageAttributes: { [IDEMPOTENCY_KEY_ATTRIBUTE]: { Type: 'String', Value: ID } },
});

/** An EventBridge event of one put, as a rule's SQS target receives it: `id` and `time` are its own. */
const event = (put: number) => ({
  version: '0',
  id: `eb-${put}`,
  'detail-type': 'OrderConfirmed',
  source: 'orders',
  time: `2026-12-01T00:00:0${put}Z`,
  detail: { metadata: { [IDEMPOTENCY_KEY_ATTRIBUTE]: ID, type: 'OrderConfirmed' }, data: detail },
});

describe('fromOutboxEnvelope', () => {
  it.each([
    ['an SQS queue', (n: number) => delivered(`m-${n}`, detail, keyAttribute), detail],
    ['an SNS topic with raw delivery', (n: number) => delivered(`m-${n}`, detail, keyAttribute), detail],
    [
      'an SNS topic without raw delivery',
      (n: number) => delivered(`m-${n}`, notification(n)),
      JSON.stringify(detail),
    ],
    ['an EventBridge rule', (n: number) => delivered(`m-${n}`, event(n)), event(0).detail],
  ])(
    'reads the event id and the event alone from %s, so a re-published copy has the same key and fingerprint',
    (_kind, deliver, content) => {
      const first = deliver(1);
      const copy = deliver(2);

      expect(first).toEqual({ key: ID, fingerprint: content });
      expect(copy).toEqual(first);
    },
  );

  it('sees another event under the same id as other content (a mismatch)', () => {
    const other = { ...notification(2), Message: JSON.stringify({ ...detail, amount: 6 }) };

    expect(delivered('m-2', other).fingerprint).not.toEqual(delivered('m-1', notification(1)).fingerprint);
  });

  it('finds no key in a message that carries no event id (MISSING_KEY)', () => {
    expect(delivered('m-1', detail)).toEqual({ key: undefined, fingerprint: undefined });
    expect(delivered('m-1', { Type: 'Notification', Message: '{}' }).key).toBeUndefined();
    expect(delivered('m-1', { detail: { data: detail } }).key).toBeUndefined();
  });

  it('prefers the attribute: a raw delivery whose detail looks like an envelope is still the detail', () => {
    expect(delivered('m-1', event(1), keyAttribute)).toEqual({ key: ID, fingerprint: event(1) });
  });
});
