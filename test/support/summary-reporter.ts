/**
 * A vitest reporter that prints, after vitest's own totals, the summary lines test files leave in
 * their module's `meta` (`summary`), then every failed test by file and name with the first line
 * of its error. CI shows the end of a run's output only: its last lines then say what failed, not
 * just how many. Prints nothing when no file left a summary and nothing failed.
 */
import { relative } from 'node:path';
import type { Reporter, SerializedError, TestModule } from 'vitest/node';

declare module '@vitest/runner' {
  interface TaskMeta {
    /** A line to print at the very end of the run. */
    summary?: string;
  }
}

/** The first line of an error's message, at most 300 characters. */
function firstLine(error: { readonly message?: string } | undefined): string {
  const line = (error?.message ?? 'no error message').split('\n')[0] ?? '';
  return line.length > 300 ? `${line.slice(0, 299)}…` : line;
}

/** One line per failed test (`file > suite > test: error`), and per file that failed to run. */
export function failureLines(testModules: ReadonlyArray<TestModule>): string[] {
  return testModules.flatMap((module) => {
    const file = relative(process.cwd(), module.moduleId);
    const moduleErrors = module.errors().map((error) => `${file}: ${firstLine(error)}`);
    const tests = [...module.children.allTests()].flatMap((test) => {
      const result = test.result();
      return result.state === 'failed'
        ? [`${file} > ${test.fullName}: ${firstLine(result.errors?.[0])}`]
        : [];
    });
    return [...moduleErrors, ...tests];
  });
}

/** Prints every module's `meta.summary`, then the failed tests, at the end of the run. */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(
    testModules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<SerializedError> = [],
  ): void {
    const lines = testModules.flatMap((module) => {
      const summary = module.meta().summary;
      return typeof summary === 'string' ? [summary] : [];
    });
    if (lines.length > 0) process.stdout.write(`\n${lines.join('\n')}\n`);
    const failures = [
      ...failureLines(testModules),
      ...unhandledErrors.map((error) => `unhandled error: ${firstLine(error)}`),
    ];
    if (failures.length > 0)
      process.stdout.write(`\nFailed:\n${failures.map((line) => `  ${line}`).join('\n')}\n`);
  }
}
