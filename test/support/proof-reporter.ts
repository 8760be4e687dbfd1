/**
 * A vitest reporter for `npm run proof` (`scripts/proof.ts`): when `RELIABILITY_PROOF_DIR` names
 * a directory, it writes the proof record each test file left in its module's `meta`
 * (`test/reliability/support/proof-record.ts`) to `<directory>/<topology>.json` at the end of the
 * run. Does nothing without the variable, or for a file that left no record.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';
import { PROOF_DIR_VARIABLE, type ProofRecord } from '../../scripts/support/proof-record';

declare module '@vitest/runner' {
  interface TaskMeta {
    /** The file's proof record (`test/reliability/support/proof-record.ts`), for `npm run proof`. */
    proof?: ProofRecord;
  }
}

/** Writes every module's `meta.proof` to `$RELIABILITY_PROOF_DIR/<topology>.json`. */
export default class ProofReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const directory = process.env[PROOF_DIR_VARIABLE];
    if (directory === undefined || directory === '') return;
    mkdirSync(directory, { recursive: true });
    for (const module of testModules) {
      const record = module.meta().proof;
      if (record === undefined) continue;
      writeFileSync(join(directory, `${record.topology}.json`), `${JSON.stringify(record, null, 2)}\n`);
    }
  }
}
