import { describe, expect, it } from 'vitest';
import {
  formatChain,
  formatChecks,
  formatDownstream,
  formatRunSummary,
  formatTable,
  formatTimings,
  seconds,
} from '../../../../scripts/main-job/report';
import { outcomeTotals } from '../../../support/fixtures';
import { sampleLogs, storyRun } from './story';

const logs = sampleLogs();

describe('formatTable', () => {
  it('left-aligns the first column, right-aligns the others, and trims trailing spaces', () => {
    expect(
      formatTable([
        ['', 'a', 'total'],
        ['messages sent', '11', '7'],
        ['dead-lettered', '1', ''],
      ]),
    ).toBe(['                  a  total', '  messages sent  11      7', '  dead-lettered   1'].join('\n'));
  });

  it('left-aligns every column on request, with the given indent', () => {
    expect(
      formatTable(
        [
          ['line 1', 'order o-1 PLACED', 'first send'],
          ['line 10', 'order o-3', 'poison'],
        ],
        '    ',
        true,
      ),
    ).toBe(['    line 1   order o-1 PLACED  first send', '    line 10  order o-3         poison'].join('\n'));
  });

  it('aligns rows of different lengths', () => {
    expect(formatTable([['x'], ['long', '1']], '')).toBe(['x', 'long  1'].join('\n'));
  });
});

describe('formatRunSummary', () => {
  it('shows each consumer with its queue and mode, the totals, and the external effects of the payment notifier', () => {
    const { observation } = storyRun(logs);
    expect(formatRunSummary(logs, observation)).toBe(
      [
        '                                                       orders               audit               payments  total',
        '                                               (FIFO, atomic)  (standard, entity)  (standard, two-phase)',
        '  messages sent                                            11                   7                      8     26',
        '  suppressed by the broker (FIFO dedup)                     2                   0                      0      2',
        '  delivered by SQS                                          9                   7                      8     24',
        '  delivered again after a transient failure                 0                   0                      2      2',
        '  redelivered after processing                              1                   1                      1      3',
        '  suppressed by the inbox (duplicates)                      3                   3                      3      9',
        '  processed (effects committed)                             6                   5                      5     16',
        '  dead-lettered                                             1                   0                      1      2',
        '  external effects (downstream calls applied)               -                   -                      5      5',
      ].join('\n'),
    );
  });

  it('shows the expectation next to a number that differs from it', () => {
    const { observation } = storyRun(logs);
    const summary = formatRunSummary(logs, {
      ...observation,
      outcomes: {
        ...observation.outcomes,
        payments: { ...observation.outcomes.payments, processed: 6 },
      },
      downstream: {
        ...observation.downstream,
        applications: [
          ...observation.downstream.applications,
          { key: 'k', payment: 'pay-2001:AUTHORIZED', notificationId: 'ntf-6' },
        ],
      },
    });
    expect(summary).toContain(
      'processed (effects committed)                             6                   5         6 (expected 5)     17',
    );
    expect(summary).toContain(
      'external effects (downstream calls applied)               -                   -         6 (expected 5)      6',
    );
    // One delivery more than the story, yet nothing was delivered by SQS more often.
    expect(summary).toContain(
      'delivered by SQS                                          9                   7         9 (expected 8)     25',
    );
  });

  it('counts a delivery found in flight as delivered again, as expected', () => {
    const { observation } = storyRun(logs);
    const summary = formatRunSummary(logs, {
      ...observation,
      outcomes: { ...observation.outcomes, payments: { ...observation.outcomes.payments, inFlight: 1 } },
    });
    expect(summary).toContain(
      'delivered by SQS                                          9                   7                      8     24',
    );
    expect(summary).toContain(
      'delivered again after a transient failure                 0                   0                      3      3',
    );
  });
});

describe('formatDownstream', () => {
  it('lists requests, keys and applications by payment status, and how each failure ended', () => {
    const { observation } = storyRun(logs);
    expect(formatDownstream(logs.payments, observation)).toBe(
      [
        '  Downstream service: 7 requests with 5 distinct Idempotency-Keys; 5 notifications applied, 1 answered from an earlier application, 2 failed on purpose',
        '    pay-2001:AUTHORIZED → ntf-1, pay-2002:AUTHORIZED → ntf-2, pay-2001:CAPTURED → ntf-3, pay-2003:AUTHORIZED → ntf-4, pay-2002:CAPTURED → ntf-5',
        '    pay-2003:AUTHORIZED (line 5): 503 failed, then 201 applied',
        '    pay-2002:CAPTURED (line 6): 504 failed, then 200 replayed',
      ].join('\n'),
    );
  });
});

describe('formatChecks, formatTimings and seconds', () => {
  it('folds the PASS lines into one count and keeps every FAIL line, with what was seen', () => {
    expect(
      formatChecks([
        { ok: true, name: 'Audit table: 5 items' },
        { ok: false, name: 'Inbox table: 11 records', detail: 'expected 11, got 10' },
        { ok: true, name: 'Orders table: 4 items' },
      ]),
    ).toBe(
      [
        '  PASS  2 of 3 checks (npm start -- --verbose lists them)',
        '  FAIL  Inbox table: 11 records',
        '        expected 11, got 10',
      ].join('\n'),
    );
  });

  it('prints only the failures when no check passed', () => {
    expect(formatChecks([{ ok: false, name: 'Inbox table: 11 records', detail: 'got 10' }])).toBe(
      '  FAIL  Inbox table: 11 records\n        got 10',
    );
  });

  it('prints every PASS and FAIL line when verbose, with what was seen under a failure', () => {
    expect(
      formatChecks(
        [
          { ok: true, name: 'Audit table: 5 items' },
          { ok: false, name: 'Inbox table: 11 records', detail: 'expected 11, got 10' },
        ],
        { verbose: true },
      ),
    ).toBe(
      ['  PASS  Audit table: 5 items', '  FAIL  Inbox table: 11 records', '        expected 11, got 10'].join(
        '\n',
      ),
    );
  });

  it('prints step timings in seconds with their total', () => {
    expect(
      formatTimings(
        [
          { step: 'deploy the example app', millis: 31_234 },
          { step: 'clean up', millis: 450 },
        ],
        69_400,
      ),
    ).toBe(
      [
        '  deploy the example app  31.2 s',
        '  clean up                 0.5 s',
        '  total                   69.4 s',
      ].join('\n'),
    );
    expect(seconds(0)).toBe('0.0 s');
  });
});

describe('formatChain', () => {
  const expected = {
    confirmed: [
      { orderId: 'o-1001', line: 3, eventId: 'a'.repeat(64) },
      { orderId: 'o-1002', line: 8, eventId: 'b'.repeat(64) },
    ],
    crash: true,
  };
  const observation = {
    outbox: [
      { id: 'a'.repeat(64), type: 'OrderConfirmed', entity: 'o-1001' },
      { id: 'b'.repeat(64), type: 'OrderConfirmed', entity: 'o-1002' },
    ],
    streamRecords: 2,
    relay: { published: ['a'.repeat(64), 'a'.repeat(64)], crashes: ['a'.repeat(64)], failures: 0 },
    crashMarkers: ['a'.repeat(64)],
    shipping: outcomeTotals({ processed: 1, duplicate: 1 }),
    shipments: [{ pk: 'SHIPMENT#o-1001', orderId: 'o-1001', eventId: 'a'.repeat(64) }],
    deadLetters: { shipping: 0, outbox: 0 },
  };

  it('shows each link of the chain by order and short event id, and what had not arrived when the wait ran out', () => {
    const text = formatChain(expected, {
      observation,
      missing: ['relay publishes: 2 of 3', 'Shipments items: 1 of 2'],
      waitMillis: 90_500,
      timeoutMillis: 90_000,
    });
    expect(text.split('\n')).toEqual([
      '  Orders confirmed by the log: o-1001 (line 3), o-1002 (line 8).',
      '  Outbox table: 2 OrderConfirmed item(s), committed with the order writes: o-1001 → aaaaaaaaaaaa…, o-1002 → bbbbbbbbbbbb…',
      '  Relay: 2 publish(es) to the shipment queue (expected 3): aaaaaaaaaaaa…, aaaaaaaaaaaa…; crashed 1× after publishing aaaaaaaaaaaa…, before its checkpoint, and the stream delivered the batch again',
      '  Shipment scheduler: 1 processed, 1 duplicate (suppressed by the Shipments item, its own marker), 0 dead-lettered, 0 retried',
      '  Shipments table: 1 item(s): SHIPMENT#o-1001',
      '  The chain had not completed after 90.5 s (the wait is 90.0 s); missing: relay publishes: 2 of 3; Shipments items: 1 of 2',
    ]);
  });
});
