/**
 * A replayed ETL batch: the batch id is the slot, so loading the same file twice (a retried
 * pipeline step, an operator re-running yesterday's import) loads it once.
 */

import type { InboxStore } from 'effectively-once';
import { createJobGuard, type JobGuard } from 'effectively-once/jobs';

/** One batch to load. */
export interface BatchInput {
  readonly batchId: string;
  readonly rows: readonly Record<string, unknown>[];
}

/** Creates the loader over any inbox store (the DynamoDB store, or a test double). */
export function createBatchLoader(store: InboxStore, load: (rows: BatchInput['rows']) => Promise<void>) {
  const guard: JobGuard = createJobGuard({ consumer: 'etl', store, leaseMillis: 10 * 60 * 1000 });
  return async (input: BatchInput): Promise<'loaded' | 'skipped'> => {
    const outcome = await guard.run({ job: 'load-orders', slot: input.batchId }, () => load(input.rows));
    return outcome.ran ? 'loaded' : 'skipped';
  };
}
