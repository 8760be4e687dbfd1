/**
 * The functions' own output from the emulator's log, for `effectively-once local logs`. MiniStack
 * writes what each invocation printed, and each failed invocation of an event source mapping, to
 * its log file between its own lines:
 *
 * ```text
 * 2026-12-02 01:43:12 INFO [lambda] ESM: Lambda Shop-OrdersFunction-1A2B output:
 * {"level":"info","message":"…"}
 * 2026-12-02 01:43:10 WARNING [lambda] ESM: Lambda Shop-OrdersFunction-1A2B failed processing SQS batch from q (errorType=Error errorMessage=…)
 * ```
 *
 * A handler that fails its cold start (an `INVALID_OPTIONS` error) leaves its messages in flight
 * and says why only here, so the command shows it without a search through the emulator's log.
 */

/** One thing a function printed, or one failed invocation. */
export interface FunctionLogEntry {
  /** The emulator's time stamp of the block (`2026-12-02 01:43:12`). */
  readonly time: string;
  /** The function's physical name. */
  readonly functionName: string;
  readonly kind: 'output' | 'failure';
  /** An output line as printed; a failure's `errorType: errorMessage` and what it came from. */
  readonly text: string;
}

const EMULATOR_LINE = /^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (\w+) \[[^\]]+\] (.*)$/;
const OUTPUT_BLOCK = /^(?:ESM: )?Lambda (\S+) (?:async )?output(?: \(attempt \d+\))?:$/;
const FAILURE = /^ESM: Lambda (\S+) failed processing (.+?) \(errorType=(.*?) errorMessage=(.*)\)$/;
const OTHER_FAILURE = /^(?:ESM: )?Lambda (\S+):? (.*(?:error|failed).*)$/i;

/** The functions' output and failed invocations in the emulator log `text`, in order. */
export function parseFunctionLogs(text: string): FunctionLogEntry[] {
  const entries: FunctionLogEntry[] = [];
  // The function whose output the lines that follow are, with its block's time.
  let block: { readonly time: string; readonly functionName: string } | undefined;
  for (const line of text.split('\n')) {
    const emulator = EMULATOR_LINE.exec(line);
    if (!emulator) {
      if (block && line.trim() !== '') entries.push({ ...block, kind: 'output', text: line });
      continue;
    }
    const [, time = '', level = '', message = ''] = emulator;
    block = undefined;
    const output = OUTPUT_BLOCK.exec(message);
    if (output) {
      block = { time, functionName: output[1] ?? '' };
      continue;
    }
    const failure = FAILURE.exec(message);
    if (failure) {
      const [, functionName = '', source = '', errorType = '', errorMessage = ''] = failure;
      entries.push({
        time,
        functionName,
        kind: 'failure',
        text: `${errorType}: ${errorMessage} (${source})`,
      });
      // The invocation's output follows the failure line.
      block = { time, functionName };
      continue;
    }
    const other = level === 'WARNING' || level === 'ERROR' ? OTHER_FAILURE.exec(message) : null;
    if (other) entries.push({ time, functionName: other[1] ?? '', kind: 'failure', text: other[2] ?? '' });
  }
  return entries;
}

/** What `local logs` shows of `entries`: the functions named (by part of their name), failures only. */
export interface FunctionLogFilter {
  /** Parts of function names; empty: every function. */
  readonly functions: readonly string[];
  readonly failuresOnly: boolean;
}

/** `entries` as `local logs` prints them: a line each, `time function  text`, failures marked. */
export function formatFunctionLogs(entries: readonly FunctionLogEntry[], filter: FunctionLogFilter): string {
  const shown = entries.filter(
    (entry) =>
      (!filter.failuresOnly || entry.kind === 'failure') &&
      (filter.functions.length === 0 || filter.functions.some((part) => entry.functionName.includes(part))),
  );
  return shown
    .map(
      (entry) =>
        `${entry.time} ${entry.functionName}  ${entry.kind === 'failure' ? `FAILED ${entry.text}` : entry.text}\n`,
    )
    .join('');
}
