import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { createEmfMetricsSink, type OutcomeCounts } from '../../../../lambda';
import {
  deliveriesOf,
  subtractTotals,
  summariseTables,
  sumOutcomeMetrics,
} from '../../../../scripts/main-job/observations';
import { counts, outcomeTotals } from '../../../support/fixtures';

/** The metric line the runtime writes for one invocation with these counts. */
function metricLine(partial: Partial<OutcomeCounts>): string {
  const lines: string[] = [];
  createEmfMetricsSink({ write: (line) => lines.push(line) }).publish(counts(partial), {
    consumer: 'payment-notifier',
    timestampMillis: 1_700_000_000_000,
  });
  return lines[0]!;
}

const zero = outcomeTotals({});

describe('sumOutcomeMetrics', () => {
  it('sums every outcome over the Embedded Metric Format lines, one invocation per line', () => {
    const totals = sumOutcomeMetrics([
      metricLine({ processed: 4, retry: 2 }),
      metricLine({ processed: 1, duplicate: 1, inFlight: 1, takeover: 1 }),
      metricLine({ duplicate: 2, permanent: 1, mismatch: 1, stale: 1 }),
    ]);
    expect(totals).toEqual({
      processed: 5,
      duplicate: 3,
      inFlight: 1,
      mismatch: 1,
      stale: 1,
      retry: 2,
      permanent: 1,
      invocations: 3,
    });
  });

  it('reads a metric line behind a log prefix (timestamp, request id) and skips every other line', () => {
    const totals = sumOutcomeMetrics([
      'START RequestId: 4d2c Version: $LATEST',
      '{"level":"info","message":"Duplicate message acknowledged","outcome":"duplicate"}',
      `2026-11-30T02:57:35.268Z\t4d2c\tINFO\t${metricLine({ processed: 2 })}`,
      '{"CloudWatchMetrics": not json',
      '{"CloudWatchMetrics":[],"Processed":7}',
      'END RequestId: 4d2c',
    ]);
    expect(totals).toEqual({ ...zero, processed: 2, invocations: 1 });
  });

  it('counts nothing in a log without metric lines', () => {
    expect(sumOutcomeMetrics([])).toEqual(zero);
    expect(sumOutcomeMetrics(['plain text'])).toEqual(zero);
  });
});

describe('deliveriesOf and subtractTotals', () => {
  it('counts every delivery once, in its outcome, and never the takeovers', () => {
    expect(
      deliveriesOf({
        ...zero,
        processed: 5,
        duplicate: 3,
        inFlight: 1,
        retry: 2,
        permanent: 1,
        invocations: 4,
      }),
    ).toBe(12);
  });

  it('subtracts field by field', () => {
    expect(
      subtractTotals(
        { ...zero, processed: 5, duplicate: 17, permanent: 3, invocations: 9 },
        { ...zero, processed: 5, duplicate: 3, permanent: 1, invocations: 4 },
      ),
    ).toEqual({ ...zero, duplicate: 14, permanent: 2, invocations: 5 });
  });
});

describe('summariseTables', () => {
  const consumers = { orders: 'order-projector', audit: 'audit-recorder', payments: 'payment-notifier' };
  const inbox = (pk: string, consumer: string, fields: Record<string, unknown> = {}) =>
    marshall({ pk, consumer, status: 'COMPLETED', expiresAt: 1, ...fields });

  it('counts inbox records per consumer and reads the notification id each payment record stores', () => {
    const counts = summariseTables(
      {
        orders: [
          marshall({ pk: 'ORDER#o-1', sk: 'ORDER', orderId: 'o-1', status: 'PAID', amount: 4200 }),
          marshall({ pk: 'ORDER#o-1', sk: 'STATUS#PLACED' }),
          marshall({ pk: 'ORDER#o-1', sk: 'STATUS#PAID' }),
        ],
        inbox: [
          inbox('order-projector#o-1:PLACED', 'order-projector'),
          inbox('order-projector#o-1:PAID', 'order-projector'),
          inbox('payment-notifier/notify#pay-1:AUTHORIZED', 'payment-notifier', {
            result: JSON.stringify({ status: 201, notificationId: 'ntf-1' }),
          }),
          inbox('payment-notifier/notify#pay-2:AUTHORIZED', 'payment-notifier', {
            status: 'IN_PROGRESS',
          }),
          inbox('someone-else#x', 'someone-else'),
          inbox('order-summary-projector#ORDER#o-1:STATUS#PAID:INSERT:PAID', 'order-summary-projector'),
        ],
        audit: [marshall({ pk: 'audit-recorder#/shop:aud-1' })],
      },
      consumers,
      'order-summary-projector',
    );
    expect(counts).toEqual({
      ordersItems: 3,
      inboxRecords: { orders: 2, audit: 0, payments: 2 },
      streamInboxRecords: 1,
      inboxTotal: 6,
      auditItems: 1,
      orders: new Map([['o-1', { status: 'PAID', amount: 4200, statuses: 2 }]]),
      notifications: [
        { status: 'COMPLETED', notificationId: 'ntf-1' },
        { status: 'IN_PROGRESS', notificationId: undefined },
      ],
    });
  });

  it('reads no notification id from a result that is not its JSON', () => {
    const counts = summariseTables(
      {
        orders: [],
        inbox: [
          inbox('payment-notifier/notify#a:B', 'payment-notifier', { result: 'not json' }),
          inbox('payment-notifier/notify#c:D', 'payment-notifier', {
            result: JSON.stringify({ status: 204 }),
          }),
        ],
        audit: [],
      },
      consumers,
      'order-summary-projector',
    );
    expect(counts.notifications.map((record) => record.notificationId)).toEqual([undefined, undefined]);
  });
});
