import { describe, expect, it } from 'vitest';
import {
  batchMillis,
  drawLatency,
  LATENCY_SOURCES,
  latencyOf,
  operationLatencies,
  sharesRequests,
  simulateBatches,
  simulateTrace,
  traceMillis,
  transactionLatency,
} from '../../../bench/latency-model';
import type { TracedRequest } from '../../../bench/measure/traces';
import { seededRandom } from '../../../bench/stats';

const put = (step: number, outcome = 'ok'): TracedRequest => ({
  role: 'dedup',
  operation: 'PutItem',
  items: [{ table: 'inbox', bytes: 120, conditional: true }],
  outcome,
  step,
});

const unbounded = { concurrency: Number.POSITIVE_INFINITY, fifo: 'per-group', basis: 'test' } as const;

/** A "generator" that always returns the same value: every draw is then the same latency. */
const constant = (value: number) => () => value;

describe('bench latency model: inputs', () => {
  it('reproduces the published transaction percentiles at the measured sizes', () => {
    expect(transactionLatency(5, false)).toEqual({ p50Millis: 25.3, p99Millis: 92.5 });
    expect(transactionLatency(25, false).p50Millis).toBeCloseTo(32.1, 10);
    expect(transactionLatency(25, false).p99Millis).toBeCloseTo(97.5, 10);
    expect(transactionLatency(5, true)).toEqual({ p50Millis: 25.3, p99Millis: 84.9 });
  });

  it('extends the transaction line below 5 items at 0.34 ms p50 per item', () => {
    expect(transactionLatency(2, false).p50Millis).toBeCloseTo(25.3 - 3 * 0.34, 10);
    expect(transactionLatency(2, false).p99Millis).toBeCloseTo(92.5 - 3 * 0.25, 10);
  });

  it('gives a single-item request the published PutItem figures and a transaction its size', () => {
    expect(latencyOf(put(1))).toEqual({ p50Millis: 7.55, p99Millis: 16.2 });
    expect(latencyOf({ ...put(1), operation: 'GetItem' })).toEqual({ p50Millis: 7.55, p99Millis: 16.2 });
    expect(
      latencyOf({
        operation: 'TransactWriteItems',
        items: [put(1).items[0]!, put(1).items[0]!],
        outcome: 'TransactionCanceledException',
      }),
    ).toEqual(transactionLatency(2, true));
  });

  it('refuses an operation it has no figure for instead of guessing', () => {
    expect(() => latencyOf({ ...put(1), operation: 'Query' })).toThrow('no figure for Query');
  });

  it('names a published source for every row, and states the basis of every assumption', () => {
    const rows = operationLatencies([2]);
    expect(rows.map((row) => row.request)).toEqual([
      'PutItem',
      'UpdateItem',
      'DeleteItem',
      'GetItem',
      'TransactWriteItems (2 items)',
      'TransactWriteItems (2 items, cancelled)',
    ]);
    for (const row of rows) {
      expect(LATENCY_SOURCES[row.source].url).toMatch(/^https:\/\//);
      expect(row.basis).toMatch(/^(measured|assumption)/);
    }
  });
});

describe('bench latency model: draws and batches', () => {
  it('draws the median at the distribution centre and the p99 at z(0.99)', () => {
    // Box-Muller with u = 1 - 0 and cos(2 pi * 0.25) = 0 gives a standard normal of 0.
    expect(drawLatency(constant(0.25), 7.55, 16.2)).toBeCloseTo(7.55, 10);
    const random = seededRandom(7);
    const draws = Array.from({ length: 40_000 }, () => drawLatency(random, 10, 30)).sort((a, b) => a - b);
    expect(draws[20_000]!).toBeGreaterThan(9.7);
    expect(draws[20_000]!).toBeLessThan(10.3);
    expect(draws[39_600]!).toBeGreaterThan(27.5);
    expect(draws[39_600]!).toBeLessThan(32.5);
  });

  it("adds a record's steps and takes the slowest request of a step", () => {
    const random = constant(0.25);
    const median = 7.55;
    expect(batchMillis([put(1), put(2), put(3)], { records: 1 }, unbounded, random)).toBeCloseTo(
      3 * median,
      10,
    );
    expect(batchMillis([put(1), put(1)], { records: 1 }, unbounded, random)).toBeCloseTo(median, 10);
  });

  it('runs a standard batch side by side, one FIFO group in order, and Powertools FIFO one at a time', () => {
    const random = constant(0.25);
    const median = 7.55;
    const trace = [put(1)];
    expect(batchMillis(trace, { records: 10 }, unbounded, random)).toBeCloseTo(median, 10);
    expect(batchMillis(trace, { records: 10, groups: 1 }, unbounded, random)).toBeCloseTo(10 * median, 10);
    expect(batchMillis(trace, { records: 10, groups: 10 }, unbounded, random)).toBeCloseTo(median, 10);
    expect(
      batchMillis(trace, { records: 10, groups: 10 }, { ...unbounded, fifo: 'one-at-a-time' }, random),
    ).toBeCloseTo(10 * median, 10);
    expect(batchMillis(trace, { records: 10 }, { ...unbounded, concurrency: 5 }, random)).toBeCloseTo(
      2 * median,
      10,
    );
  });

  it('gives the same figures for the same requests, whatever ran before (seeded)', () => {
    const first = simulateBatches([put(1), put(2)], { records: 10 }, unbounded, { batches: 2_000 });
    simulateBatches([put(1)], { records: 1 }, unbounded, { batches: 500 });
    const again = simulateBatches([put(1), put(2)], { records: 10 }, unbounded, { batches: 2_000 });
    expect(again).toEqual(first);
    expect(first.p50).toBeLessThan(first.p99);
    expect(first.p50).toBeGreaterThan(2 * 7.55);
  });

  it('costs nothing for a record that makes no request (a cached duplicate)', () => {
    expect(simulateBatches([], { records: 10 }, unbounded, { batches: 100 })).toEqual({
      p50: 0,
      p99: 0,
      mean: 0,
    });
  });
});

/** A traced `TransactWriteItems` of `items` items in `step`. */
const transaction = (items: number, step: number, outcome = 'ok'): TracedRequest => ({
  role: 'dedup',
  operation: 'TransactWriteItems',
  items: Array.from({ length: items }, () => put(1).items[0]!),
  outcome,
  step,
});

/** Ten records, one 2-item transaction each: side by side (one step), or one after another. */
const tenSideBySide = Array.from({ length: 10 }, () => transaction(2, 1));
const tenInARow = Array.from({ length: 10 }, (_, index) => transaction(2, index + 1));
/** The toolkit's schedule: 10 records at a time, FIFO groups in order. */
const toolkit = { concurrency: 10, fifo: 'per-group', basis: 'test' } as const;

describe('bench latency model: batches from their own traces', () => {
  it("adds a batch trace's steps and takes the slowest request of a step", () => {
    const random = constant(0.25);
    expect(traceMillis([transaction(20, 1)], random)).toBeCloseTo(25.3 + 15 * 0.34, 10);
    expect(traceMillis(tenSideBySide, random)).toBeCloseTo(25.3 - 3 * 0.34, 10);
    expect(traceMillis(tenInARow, random)).toBeCloseTo(10 * (25.3 - 3 * 0.34), 10);
  });

  it('models one shared 20-item transaction faster than ten 2-item transactions side by side', () => {
    // One draw on the transaction line (p50 30.4 ms, p99 96.25 ms) against the slowest of ten
    // draws at p50 24.28 ms, p99 91.75 ms each.
    const shared = simulateTrace([transaction(20, 1)]);
    const perMessage = simulateTrace(tenSideBySide);
    expect(shared.p50).toBeCloseTo(30.4817, 3);
    expect(shared.p99).toBeCloseTo(97.5789, 3);
    expect(perMessage.p50).toBeCloseTo(56.9731, 3);
    expect(perMessage.p99).toBeCloseTo(141.664, 2);
    expect(shared.mean).toBeLessThan(perMessage.mean);
  });

  it('draws a cancelled shared transaction from the cancelled line', () => {
    const cancelled = simulateTrace([transaction(20, 1, 'TransactionCanceledException')]);
    expect(cancelled.p50).toBeCloseTo(30.4759, 3);
    expect(cancelled.p99).toBeCloseTo(89.7861, 3);
  });

  it('gives the schedule model’s figures where each record makes one request of its own', () => {
    expect(simulateTrace(tenSideBySide)).toEqual(
      simulateBatches([transaction(2, 1)], { records: 10 }, toolkit),
    );
    expect(simulateTrace(tenInARow)).toEqual(
      simulateBatches([transaction(2, 1)], { records: 10, groups: 1 }, toolkit),
    );
  });

  it('waits for the slowest record at every step where records of several requests run side by side', () => {
    // The tracer merges the steps of records running together; the schedule model keeps each
    // record's steps its own, so it is the one kept for them.
    const lockstep = [
      ...Array.from({ length: 10 }, () => put(1)),
      ...Array.from({ length: 10 }, () => put(2)),
    ];
    const merged = simulateTrace(lockstep);
    const scheduled = simulateBatches([put(1), put(2)], { records: 10 }, toolkit);
    expect(merged.p50).toBeGreaterThan(scheduled.p50);
  });

  it('tells a batch that shares a request between records from one that does not', () => {
    const record = [transaction(2, 1)];
    expect(sharesRequests(record, [transaction(20, 1)], { records: 10 })).toBe(true);
    expect(sharesRequests(record, tenSideBySide, { records: 10 })).toBe(false);
    expect(sharesRequests(record, tenInARow, { records: 10, groups: 1 })).toBe(false);
    expect(sharesRequests([], [], { records: 10 })).toBe(false);
  });
});
