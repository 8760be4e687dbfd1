import { describe, expect, it } from 'vitest';
import { formatStreamProjection, formatStreamReplay } from '../../../../scripts/main-job/report';
import {
  checkStreamProjection,
  type StreamProjection,
  type StreamReplay,
} from '../../../../scripts/main-job/stream-projection';
import { outcomeTotals } from '../../../support/fixtures';

const summaries = { PAID: { orders: 2, amount: 5700 }, PLACED: { orders: 3, amount: 6690 } };

const projection: StreamProjection = {
  records: 12,
  outcomes: outcomeTotals({ processed: 12 }),
  summaries,
  implied: summaries,
  deadLetters: 0,
  waitMillis: 700,
};

const replay: StreamReplay = {
  records: 12,
  batches: 1,
  failures: [],
  outcomes: outcomeTotals({ duplicate: 12 }),
  before: summaries,
  after: summaries,
};

const failed = (checks: ReturnType<typeof checkStreamProjection>) =>
  checks.filter((check) => !check.ok).map((check) => `${check.name}: ${check.detail}`);

describe('checkStreamProjection', () => {
  it('holds when the read model equals the Orders table and the replay was all duplicates', () => {
    expect(failed(checkStreamProjection(projection, replay))).toEqual([]);
  });

  it('fails when a replayed record was applied again and changed a counter', () => {
    const doubled: StreamReplay = {
      ...replay,
      outcomes: outcomeTotals({ processed: 1, duplicate: 11 }),
      after: { ...summaries, PAID: { orders: 3, amount: 9900 } },
    };

    expect(failed(checkStreamProjection(projection, doubled))).toEqual([
      'Orders stream replay: all 12 records re-fed are duplicates, none processed again: expected {"processed":0,"duplicate":12,"permanent":0,"retry":0,"inFlight":0,"mismatch":0}, got {"processed":1,"duplicate":11,"permanent":0,"retry":0,"inFlight":0,"mismatch":0}',
      'Orders stream replay: the read model unchanged: expected {"PAID":{"orders":2,"amount":5700},"PLACED":{"orders":3,"amount":6690}}, got {"PAID":{"orders":3,"amount":9900},"PLACED":{"orders":3,"amount":6690}}',
    ]);
  });

  it('fails when the read model lags the Orders table, a record was dead-lettered or a batch reported a failure', () => {
    const lagging: StreamProjection = {
      ...projection,
      outcomes: outcomeTotals({ processed: 11, permanent: 1 }),
      summaries: { PLACED: summaries.PLACED },
      deadLetters: 1,
    };

    expect(failed(checkStreamProjection(lagging, { ...replay, failures: ['300'] }))).toEqual([
      'OrderSummaries: the read model equals what the Orders table implies (status items and amounts per status): expected {"PAID":{"orders":2,"amount":5700},"PLACED":{"orders":3,"amount":6690}}, got {"PLACED":{"orders":3,"amount":6690}}',
      'order summary projector: each of the 12 Orders stream records processed once, none failed: expected {"processed":12,"permanent":0,"retry":0,"mismatch":0}, got {"processed":11,"permanent":1,"retry":0,"mismatch":0}',
      'order summary projector: nothing in its dead-letter queue: expected 0, got 1',
      'Orders stream replay: every batch acknowledged (no batch item failure): expected [], got ["300"]',
    ]);
  });
});

describe('formatStreamProjection and formatStreamReplay', () => {
  it('shows the read model next to what the Orders table implies, and the replay in two lines', () => {
    expect(formatStreamProjection({ ...projection, summaries: { PLACED: summaries.PLACED } })).toBe(
      [
        '  The mapping delivered the 12 records of the Orders stream in 0.7 s: 12 processed, 0 duplicate, 0 dead-lettered, 0 retried.',
        '  status  OrderSummaries: orders (amount)  implied by Orders',
        '  PAID                                  -           2 (5700)',
        '  PLACED                         3 (6690)           3 (6690)',
      ].join('\n'),
    );
    expect(formatStreamReplay(replay)).toBe(
      [
        '  Re-read 12 records from TRIM_HORIZON and invoked the projector with them (1 batch(es)): 12 duplicate, 0 processed, 0 batch item failure(s).',
        '  OrderSummaries before vs after the replay: identical. Every counter was incremented once.',
      ].join('\n'),
    );
  });
});
