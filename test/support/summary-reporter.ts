/**
 * A vitest reporter that prints the summary lines test files leave in their module's `meta`
 * (`summary`), after vitest's own totals, so a run's last line is its summary (the reliability
 * suite's `reliability: N messages, … lost`). Prints nothing when no file left one.
 */
import type { Reporter, TestModule } from 'vitest/node';

declare module '@vitest/runner' {
  interface TaskMeta {
    /** A line to print at the very end of the run. */
    summary?: string;
  }
}

/** Prints every module's `meta.summary` at the end of the run, in module order. */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const lines = testModules.flatMap((module) => {
      const summary = module.meta().summary;
      return typeof summary === 'string' ? [summary] : [];
    });
    if (lines.length > 0) process.stdout.write(`\n${lines.join('\n')}\n`);
  }
}
