/**
 * Runs the `effectively-once` command line in process, as `npx effectively-once ...` would, with
 * its output captured.
 */
import { main } from '../../cli/main';

/** What one run of the command line printed and returned. */
export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `main(argv)` with captured `stdout` and `stderr` (not a terminal). */
export async function runMain(argv: readonly string[]): Promise<CliRun> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const code = await main(argv, {
    stdout: { write: (text: string) => stdout.push(text) },
    stderr: { write: (text: string) => stderr.push(text) },
  });
  return { code, stdout: stdout.join(''), stderr: stderr.join('') };
}

/** The input and output of one `runLocal` call (`cwd` the app, `env` its shell), captured. */
export function capturedLocalIo(env: NodeJS.ProcessEnv, cwd: string) {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return {
    io: {
      stdout: { write: (text: string) => stdout.push(text) },
      stderr: { write: (text: string) => stderr.push(text) },
      env,
      cwd,
    },
    stdout,
    stderr,
  };
}
