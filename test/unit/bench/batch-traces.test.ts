/**
 * Whole-batch traces: a batch's requests as the stub sees them, for the shapes the latency
 * model reports (standard, FIFO in one group, FIFO in ten groups), and how the report reads them.
 */
import { describe, expect, it } from 'vitest';
import { IMPLEMENTATIONS } from '../../../bench/implementations';
import { BATCH_SHAPES, type BatchShape } from '../../../bench/latency-model';
import { runStubCases } from '../../../bench/measure/stub-cases';
import { createRequestTracer, type TracedRequest } from '../../../bench/measure/traces';
import { describeBatchTrace } from '../../../bench/report/markdown';
import { DEFAULT_TABLES } from '../../../bench/workload';

const implementation = (id: string) => IMPLEMENTATIONS.find((candidate) => candidate.id === id)!;

/** "TransactWriteItems(20):ok@1": each request's operation, size, answer and step. */
const requestsOf = (trace: readonly TracedRequest[] | undefined) =>
  (trace ?? []).map(
    (request) => `${request.operation}(${request.items.length}):${request.outcome}@${request.step}`,
  );

async function traced(id: string, shape: BatchShape) {
  const results = await runStubCases(
    implementation(id),
    DEFAULT_TABLES,
    `t-${id}`,
    shape,
    createRequestTracer(),
  );
  return {
    first: requestsOf(results.first.trace),
    duplicate: requestsOf(results.duplicate.trace),
    acknowledged: results.duplicate.acknowledged,
  };
}

describe('bench batch traces', () => {
  it('shows batch commit as one 20-item transaction for 10 first deliveries and one cancelled for 10 duplicates', async () => {
    expect(await traced('manual-atomic-batch', BATCH_SHAPES.batch)).toEqual({
      first: ['TransactWriteItems(20):ok@1'],
      duplicate: ['TransactWriteItems(20):TransactionCanceledException@1'],
      acknowledged: 1,
    });
  });

  it('shows one FIFO group committed message after message, and ten groups together', async () => {
    const oneGroup = await traced('manual-atomic-batch', BATCH_SHAPES.fifoOneGroup);
    expect(oneGroup.first).toEqual(
      Array.from({ length: 10 }, (_, index) => `TransactWriteItems(2):ok@${index + 1}`),
    );
    expect((await traced('manual-atomic-batch', BATCH_SHAPES.fifoTenGroups)).first).toEqual([
      'TransactWriteItems(20):ok@1',
    ]);
  });

  it('shows per-message transactions side by side in one step', async () => {
    expect((await traced('manual-atomic', BATCH_SHAPES.batch)).first).toEqual(
      Array.from({ length: 10 }, () => 'TransactWriteItems(2):ok@1'),
    );
  });

  it('describes a batch trace by step, like requests counted', () => {
    const request = (operation: string, items: number, step: number) => ({
      operation,
      items: Array.from({ length: items }),
      step,
    });
    expect(describeBatchTrace([request('TransactWriteItems', 20, 1)])).toBe('TransactWriteItems(20)');
    expect(
      describeBatchTrace([
        ...Array.from({ length: 10 }, () => request('PutItem', 1, 1)),
        ...Array.from({ length: 10 }, () => request('UpdateItem', 1, 2)),
      ]),
    ).toBe('10 × PutItem → 10 × UpdateItem');
    expect(
      describeBatchTrace(
        Array.from({ length: 10 }, (_, index) => request('TransactWriteItems', 2, index + 1)),
      ),
    ).toBe('TransactWriteItems(2), 10 steps in a row');
  });
});
