/**
 * What a destination would refuse of an event, settled at `emit`: characters SQS and SNS refuse in
 * a body are JSON escapes (the receiver parses the same detail), and an EventBridge `DetailType`
 * over 128 characters is refused before anything is committed.
 */

import { describe, expect, it } from 'vitest';
import { OUTBOX_ATTRIBUTES } from '../../../lambda/core/contract';
import { scopeKey } from '../../../lambda/core/dedup-key';
import type { TransactWriteAction } from '../../../lambda/core/store-port';
import { createUnitOfWork } from '../../../lambda/modes/unit-of-work';
import { IDEMPOTENCY_KEY_ATTRIBUTE, type OutboxDestinationSizing } from '../../../lambda/outbox';
import { checkSqsSendMessage } from '../../support/aws-limits/sqs';
import { createMemoryStore } from '../../support/memory-store';

function unitOfWorkFor(destination: OutboxDestinationSizing) {
  return createUnitOfWork(createMemoryStore(), 'inbox', {
    tableName: 'Outbox',
    retentionSeconds: 3600,
    scope: scopeKey('orders', 'o-1'),
    source: 'orders',
    nowMillis: 0,
    destination,
  });
}

/** The body of the one outbox item a unit of work put. */
const bodyOf = (writes: readonly TransactWriteAction[]): string =>
  writes.find((write) => write.Put !== undefined)?.Put?.Item?.[OUTBOX_ATTRIBUTES.body] as string;

describe('events at the edge of what a destination takes', () => {
  it('writes a detail holding U+FFFE, U+FFFF, NUL and a lone surrogate as a body SQS accepts, which parses to the same detail', () => {
    const unitOfWork = unitOfWorkFor({ kind: 'sqs' });
    const detail = { note: 'a\ufffeb\uffffc\u0000d\ud800e' };

    const id = unitOfWork.emit({ type: 'OrderConfirmed', detail });

    const body = bodyOf(unitOfWork.writes);
    expect(JSON.parse(body)).toEqual(detail);
    expect(body).toContain('\\ufffe');
    expect(
      checkSqsSendMessage(
        {
          QueueUrl: 'https://sqs.us-east-1.amazonaws.com/000000000000/shipping',
          MessageBody: body,
          MessageAttributes: { [IDEMPOTENCY_KEY_ATTRIBUTE]: { DataType: 'String', StringValue: id } },
        },
        { fifo: false },
      ),
    ).toBeUndefined();
  });

  it('refuses an EventBridge event whose type is longer than a DetailType may be (128), before the commit', () => {
    const destination = { kind: 'eventbridge', eventSource: 'orders.relay' } as const;
    expect(unitOfWorkFor(destination).emit({ type: 'T'.repeat(128), detail: {} })).toEqual(
      expect.any(String),
    );
    expect(() => unitOfWorkFor(destination).emit({ type: 'T'.repeat(129), detail: {} })).toThrow(
      expect.objectContaining({
        code: 'VALIDATION',
        message: "emit: the event's `type` is the EventBridge `DetailType`, at most 128 characters; got 129",
      }),
    );
    // An SQS or SNS destination takes a type of up to 256 characters (an attribute value).
    expect(unitOfWorkFor({ kind: 'sqs' }).emit({ type: 'T'.repeat(256), detail: {} })).toEqual(
      expect.any(String),
    );
  });
});
