/**
 * What the results file keeps of the whole-batch traces: requests per batch for every row and
 * shape, what a batch of 10 sends (described), and the traces themselves only where a modelled
 * figure was drawn from them (the rest are ten copies of a record's trace, already kept).
 */
import type { BatchShapeName } from '../latency-model';
import type { TracedRequest } from '../measure/traces';
import { describeBatchTrace } from './markdown';

type ByShape<T> = Record<BatchShapeName, Record<'first' | 'duplicate', T>>;

/** The batch-trace fields of `BenchResults`, from every row's traces and what each figure was modelled from. */
export function batchTraceFigures(
  batchTraces: Readonly<Record<string, ByShape<readonly TracedRequest[]>>>,
  latencyBasis: Readonly<Record<string, ByShape<'record trace' | 'batch trace'>>>,
): {
  readonly requestsPerBatch: Record<string, ByShape<number>>;
  readonly batchRequests: Record<string, string>;
  readonly batchTraces: Record<string, ByShape<readonly TracedRequest[]>>;
} {
  const requestsPerBatch: Record<string, ByShape<number>> = {};
  const batchRequests: Record<string, string> = {};
  const kept: Record<string, ByShape<readonly TracedRequest[]>> = {};
  for (const [id, byShape] of Object.entries(batchTraces)) {
    requestsPerBatch[id] = Object.fromEntries(
      Object.entries(byShape).map(([shape, byCase]) => [
        shape,
        { first: byCase.first.length, duplicate: byCase.duplicate.length },
      ]),
    ) as ByShape<number>;
    batchRequests[id] = describeBatchTrace(byShape.batch.first);
    const modelled = Object.values(latencyBasis[id] ?? {}).some(
      (byCase) => byCase.first === 'batch trace' || byCase.duplicate === 'batch trace',
    );
    if (modelled) kept[id] = byShape;
  }
  return { requestsPerBatch, batchRequests, batchTraces: kept };
}
