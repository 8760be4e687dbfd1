import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  createSampleLog,
  describeRole,
  downstreamFailures,
  expectedDeliveries,
  expectedNotifications,
  expectedOrders,
  expectedOutcome,
  type LineRole,
  loadSampleLogs,
  poisonLines,
  type SampleLogSource,
} from '../../../../scripts/main-job/sample-logs';

const root = join(__dirname, '..', '..', '..', '..');

const line = (body: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ body, ...extra });

/** A small standard-queue payment log and its story; override what a test needs. */
function source(overrides: Partial<SampleLogSource> = {}): SampleLogSource {
  return {
    name: 'payments',
    file: 'payments.jsonl',
    text: [
      line({ paymentId: 'p-1', status: 'AUTHORIZED', amount: 100, currency: 'EUR' }),
      line({ paymentId: 'p-2', status: 'AUTHORIZED', amount: 200, currency: 'EUR' }),
      line({ paymentId: 'p-1', status: 'AUTHORIZED', amount: 100, currency: 'EUR' }),
    ].join('\n'),
    roles: [
      { kind: 'first' },
      { kind: 'retried', status: 503, applied: false },
      { kind: 'producer-resend', of: 1 },
    ],
    redeliver: [1],
    label: (body) => `payment ${String(body.paymentId)} ${String(body.status)}`,
    ...overrides,
  };
}

describe('the sample logs of the main job', () => {
  const logs = loadSampleLogs(root);

  it('derives what each consumer should see from its story', () => {
    expect(expectedOutcome(logs.orders)).toEqual({
      sent: 11,
      brokerSuppressed: 2,
      delivered: 9,
      redelivered: 1,
      retried: 0,
      processed: 6,
      duplicates: 3,
      deadLetters: 1,
    });
    expect(expectedOutcome(logs.audit)).toEqual({
      sent: 7,
      brokerSuppressed: 0,
      delivered: 7,
      redelivered: 1,
      retried: 0,
      processed: 5,
      duplicates: 3,
      deadLetters: 0,
    });
    expect(expectedOutcome(logs.payments)).toEqual({
      sent: 8,
      brokerSuppressed: 0,
      delivered: 8,
      redelivered: 1,
      retried: 2,
      processed: 5,
      duplicates: 3,
      deadLetters: 1,
    });
    expect(expectedDeliveries(logs.payments)).toBe(11);
    expect([logs.orders.fifo, logs.audit.fifo, logs.payments.fifo]).toEqual([true, false, false]);
  });

  it('names the payment statuses to notify and the downstream failures of the payment log', () => {
    expect(expectedNotifications(logs.payments)).toEqual([
      'pay-2001:AUTHORIZED',
      'pay-2001:CAPTURED',
      'pay-2002:AUTHORIZED',
      'pay-2002:CAPTURED',
      'pay-2003:AUTHORIZED',
    ]);
    expect(downstreamFailures(logs.payments)).toEqual([
      { line: 5, payment: 'pay-2003:AUTHORIZED', status: 503, applied: false },
      { line: 6, payment: 'pay-2002:CAPTURED', status: 504, applied: true },
    ]);
    expect(poisonLines(logs.payments)).toEqual([
      { line: 7, code: 'MALFORMED_BODY', reason: '`amount` must be an integer' },
    ]);
  });

  it('leaves each order with the status and amount of its last processed event', () => {
    expect(Object.fromEntries(expectedOrders(logs.orders))).toEqual({
      'o-1001': { status: 'SHIPPED', amount: 4200, statuses: 3 },
      'o-1002': { status: 'PAID', amount: 1500, statuses: 2 },
      'o-1003': { status: 'PLACED', amount: 990, statuses: 1 },
    });
  });

  it('describes lines by business key and role, never by body', () => {
    expect(logs.payments.describe(6)).toBe('payment pay-2002 CAPTURED');
    expect(describeRole(logs.payments, 4)).toBe('resend of line 1 (a new SQS message): the inbox drops it');
    expect(describeRole(logs.payments, 5)).toBe(
      'first send; the downstream answers 503 once, nothing applied: retried',
    );
    expect(describeRole(logs.payments, 6)).toBe(
      'first send; the downstream applies it but its answer is lost (504): retried with the same key',
    );
    expect(describeRole(logs.orders, 4)).toBe(
      'resend of line 2 with its deduplication id: the broker drops it',
    );
    expect(describeRole(logs.orders, 5)).toBe(
      'resend of line 3 with a new deduplication id: the inbox drops it',
    );
    expect(describeRole(logs.orders, 7)).toBe('poison (MALFORMED_BODY): to the dead-letter queue');
    expect(describeRole(logs.orders, 99)).toBe('not in the story');
  });
});

describe('createSampleLog', () => {
  it('pairs every line with its role', () => {
    const log = createSampleLog(source());
    expect(log.entries.map((entry) => entry.line)).toEqual([1, 2, 3]);
    expect(log.fifo).toBe(false);
    expect(log.describe(2)).toBe('payment p-2 AUTHORIZED');
    expect(log.describe(9)).toBe('line 9');
  });

  it('rejects a log with more or fewer lines than its story', () => {
    expect(() => createSampleLog(source({ roles: [{ kind: 'first' }] }))).toThrow(
      'payments.jsonl: expected 1 messages (one per role of the story), got 3',
    );
  });

  it('rejects a resend whose body differs from the line it repeats', () => {
    const text = [line({ paymentId: 'p-1', status: 'A' }), line({ paymentId: 'p-1', status: 'B' })].join(
      '\n',
    );
    expect(() =>
      createSampleLog(
        source({ text, roles: [{ kind: 'first' }, { kind: 'producer-resend', of: 1 }], redeliver: [] }),
      ),
    ).toThrow('payments.jsonl line 2: expected the body of line 1');
  });

  it('rejects a resend of a line that does not precede it', () => {
    const text = [line({ id: 1 }), line({ id: 1 })].join('\n');
    const roles: LineRole[] = [{ kind: 'producer-resend', of: 2 }, { kind: 'first' }];
    expect(() => createSampleLog(source({ text, roles, redeliver: [] }))).toThrow(
      'payments.jsonl line 1: repeats line 2, which does not precede it',
    );
  });

  it('tells broker resends (same deduplication id) from producer resends (a new one) on a FIFO log', () => {
    const fifo = (id: string) => line({ orderId: 'o-1' }, { groupId: 'o-1', deduplicationId: id });
    const first: LineRole = { kind: 'first' };
    expect(() =>
      createSampleLog(
        source({
          text: [fifo('e-1'), fifo('e-2')].join('\n'),
          roles: [first, { kind: 'broker-resend', of: 1 }],
          redeliver: [],
        }),
      ),
    ).toThrow('payments.jsonl line 2: expected the deduplication id of line 1');
    expect(() =>
      createSampleLog(
        source({
          text: [fifo('e-1'), fifo('e-1')].join('\n'),
          roles: [first, { kind: 'producer-resend', of: 1 }],
          redeliver: [],
        }),
      ),
    ).toThrow("payments.jsonl line 2: expected a deduplication id other than line 1's");
    const log = createSampleLog(
      source({
        text: [fifo('e-1'), fifo('e-1')].join('\n'),
        roles: [first, { kind: 'broker-resend', of: 1 }],
        redeliver: [],
      }),
    );
    expect(log.fifo).toBe(true);
  });

  it('redelivers only first sends', () => {
    expect(() => createSampleLog(source({ redeliver: [2] }))).toThrow(
      'payments.jsonl line 2: only a processed first send can be redelivered',
    );
  });

  it('rejects a resend of a line that fails transiently, whose counts would depend on timing', () => {
    expect(() =>
      createSampleLog(
        source({
          roles: [
            { kind: 'retried', status: 503, applied: false },
            { kind: 'first' },
            { kind: 'producer-resend', of: 1 },
          ],
          redeliver: [2],
        }),
      ),
    ).toThrow('payments.jsonl line 3: resends line 1, which fails transiently');
  });

  it('counts a retried line as processed once and delivered twice', () => {
    const log = createSampleLog(source());
    expect(expectedOutcome(log)).toMatchObject({ processed: 2, retried: 1, duplicates: 2, delivered: 3 });
    expect(expectedDeliveries(log)).toBe(5);
  });
});
