import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import ProjectOrderSequencer from './test/support/project-order-sequencer.mjs';

/**
 * Test files run side by side: vitest's default in `vitest run` is one worker fewer than the
 * cores, a single worker on a 2-core CI machine, which ran the 214 files one after another
 * (915 s on 2026-12-02). Much of an integration or reliability file's time is spent waiting on
 * the emulator (a process of its own) and on the Lambda processes it starts, so more files than
 * cores keep the cores busy: 3 workers took 574 s on the same machine, both cores busy (vmstat)
 * but for the last 90 s. At least 3, one a core on a larger machine.
 */
const MAX_WORKERS = Math.max(3, availableParallelism());

export default defineConfig({
  // `effectively-once`, `effectively-once/http`, ... resolve to the TypeScript sources through
  // the `paths` of tsconfig.json, as they do for tsc and tsx, so the examples import the package
  // as a user would. Every project extends this root config to inherit it.
  resolve: { tsconfigPaths: true },
  test: {
    // The summary reporter prints the lines test files leave in their meta (the reliability
    // suite's totals) after vitest's own, so they end the run. The proof reporter writes the
    // reliability files' proof records for `npm run proof`, and only when it names a directory.
    reporters: ['default', './test/support/summary-reporter.ts', './test/support/proof-reporter.ts'],
    // The AWS SDK's notice that its 2027 releases need Node.js 22, printed by every test process
    // (and every command and emulator function it starts): noise between the results. The
    // package's own commands turn it off the same way (`cli/effectively-once.ts`).
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    maxWorkers: MAX_WORKERS,
    // The reliability files first: the longest of them would otherwise end the run alone.
    sequence: { sequencer: ProjectOrderSequencer },
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/support/global-setup.ts'],
          // Every SQS send refuses what AWS refuses (the emulator accepts more).
          setupFiles: ['test/support/aws-limits/setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'infra',
          include: ['test/infra/**/*.test.ts'],
          testTimeout: 120_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'reliability',
          include: ['test/reliability/**/*.test.ts'],
          globalSetup: ['test/support/global-setup.ts'],
          setupFiles: ['test/support/aws-limits/setup.ts'],
          testTimeout: 600_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
