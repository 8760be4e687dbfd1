/**
 * The capacity planner's per-mode figures (`lib/capacity-planner.ts`, copied there because the
 * constructs must not load `bench/`) are what the benchmark computes: the write units of each
 * table from a first delivery's requests (`bench/ceilings.ts`) and the modelled p50s
 * (`bench/latency-model.ts`). The requests are those the benchmark traced (bench/results/latest.json).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeUnitsByTable } from '../../../bench/ceilings';
import { type BatchSchedule, simulateBatches, simulateTrace } from '../../../bench/latency-model';
import type { TracedRequest } from '../../../bench/measure/traces';
import type { ConsumerMode } from '../../../lambda/core/contract';
import { DEFAULT_CONCURRENCY } from '../../../lambda/core/options';
import { MODE_CAPACITY, RUNTIME_DEFAULT_CONCURRENCY } from '../../../lib/capacity-planner';

const INBOX = 'bench-inbox';
const ORDERS = 'bench-orders';

/** A request of `operation` on items of `tables` (under 1 KB each), in `step`. */
function request(operation: string, tables: readonly string[], step: number): TracedRequest {
  return {
    role: 'dedup',
    operation,
    items: tables.map((table) => ({ table, bytes: 200, conditional: true })),
    outcome: 'ok',
    step,
  };
}

/** One first delivery's requests in each mode, as the benchmark traced them. */
const FIRST_DELIVERY: Record<ConsumerMode, readonly TracedRequest[]> = {
  entity: [request('PutItem', [ORDERS], 1)],
  marker: [request('PutItem', [INBOX], 1), request('PutItem', [ORDERS], 2)],
  atomic: [request('TransactWriteItems', [INBOX, ORDERS], 1)],
  'two-phase': [
    request('PutItem', [INBOX], 1),
    request('PutItem', [ORDERS], 2),
    request('UpdateItem', [INBOX], 3),
  ],
};

/** Atomic mode's batch commit: the ten messages' inbox records and items in one transaction. */
const ATOMIC_BATCH_OF_TEN = [
  request('TransactWriteItems', Array.from({ length: 10 }, () => [INBOX, ORDERS]).flat(), 1),
];

/** The toolkit runs 10 records of a batch side by side (its default `concurrency`). */
const TOOLKIT: BatchSchedule = { concurrency: DEFAULT_CONCURRENCY, fifo: 'per-group', basis: 'toolkit' };

const round2 = (value: number) => Math.round(value * 100) / 100;

describe('capacity planner figures', () => {
  it('traces each mode as the benchmark did (operations, tables, steps)', () => {
    const results = JSON.parse(
      readFileSync(join(__dirname, '..', '..', '..', 'bench', 'results', 'latest.json'), 'utf8'),
    ) as { traces: Record<string, { first: TracedRequest[] }> };
    const shape = (trace: readonly TracedRequest[]) =>
      trace.map(({ operation, items, step }) => ({
        operation,
        tables: items.map((item) => item.table),
        step,
      }));
    for (const mode of Object.keys(FIRST_DELIVERY) as ConsumerMode[]) {
      expect({ mode, trace: shape(results.traces[mode]!.first) }).toEqual({
        mode,
        trace: shape(FIRST_DELIVERY[mode]),
      });
    }
  });

  it('takes the write units per message of each table from the first delivery', () => {
    for (const [mode, trace] of Object.entries(FIRST_DELIVERY) as [ConsumerMode, TracedRequest[]][]) {
      const units = writeUnitsByTable(trace);
      expect({ mode, inbox: units[INBOX] ?? 0, business: units[ORDERS] ?? 0 }).toEqual({
        mode,
        inbox: MODE_CAPACITY[mode].inboxWriteUnits,
        business: MODE_CAPACITY[mode].businessWriteUnits,
      });
    }
  });

  it("plans with the runtime's default concurrency", () => {
    expect(RUNTIME_DEFAULT_CONCURRENCY).toBe(DEFAULT_CONCURRENCY);
  });

  it('takes the modelled p50 of one message and of a batch of 10 from the latency model', () => {
    for (const [mode, trace] of Object.entries(FIRST_DELIVERY) as [ConsumerMode, TracedRequest[]][]) {
      const message = simulateBatches(trace, { records: 1 }, TOOLKIT).p50;
      const batch =
        mode === 'atomic'
          ? simulateTrace(ATOMIC_BATCH_OF_TEN).p50
          : simulateBatches(trace, { records: 10 }, TOOLKIT).p50;
      expect({ mode, message: round2(message), batch: round2(batch) }).toEqual({
        mode,
        message: MODE_CAPACITY[mode].messageMillis,
        batch: MODE_CAPACITY[mode].batchOfTenMillis,
      });
    }
  });
});
