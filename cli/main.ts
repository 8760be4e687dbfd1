/**
 * The `effectively-once` command line: picks the subcommand, runs it and turns every
 * failure into a short message and exit code 2.
 */

import { parseReplayArgs, REPLAY_USAGE } from './replay/args';
import { isReplayError, ReplayError } from './replay/errors';
import { type CliIo, EXIT, runReplay } from './replay/run';

/** Help text of `effectively-once`. */
export const USAGE = `Usage: effectively-once <command> [options]

Commands:
  replay    replay a message log twice and show every field the second replay changed

Run \`effectively-once <command> --help\` for the options of a command.
`;

/**
 * Runs the command line and returns the exit code. Never throws: errors are written to
 * `stderr` as one line (`--debug` adds the stack trace).
 *
 * @example
 * process.exitCode = await main(process.argv.slice(2), process);
 */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const [command, ...rest] = argv;
  const debug = rest.includes('--debug');
  try {
    if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
      io.stdout.write(USAGE);
      return EXIT.unchanged;
    }
    if (command !== 'replay') {
      throw new ReplayError('USAGE', `Unknown command \`${command}\``);
    }
    const parsed = parseReplayArgs(rest);
    if (parsed.kind === 'help') {
      io.stdout.write(REPLAY_USAGE);
      return EXIT.unchanged;
    }
    return await runReplay(parsed.options, io);
  } catch (error) {
    io.stderr.write(describeFailure(error, command, debug));
    return EXIT.error;
  }
}

function describeFailure(error: unknown, command: string | undefined, debug: boolean): string {
  const prefix = command === 'replay' ? 'effectively-once replay' : 'effectively-once';
  const stack = debug && error instanceof Error && error.stack ? `\n${stackWithCauses(error)}` : '';
  if (isReplayError(error)) {
    const hint = error.code === 'USAGE' ? `\nRun \`${prefix} --help\` for usage.` : '';
    return `${prefix}: ${error.message}${hint}${stack}\n`;
  }
  const message = error instanceof Error ? error.message : String(error);
  const hint = debug ? '' : '\n(Run with --debug for the stack trace.)';
  return `${prefix}: unexpected error: ${message}${hint}${stack}\n`;
}

function stackWithCauses(error: Error): string {
  const parts = [error.stack ?? String(error)];
  let cause: unknown = error.cause;
  while (cause instanceof Error) {
    parts.push(`Caused by: ${cause.stack ?? String(cause)}`);
    cause = cause.cause;
  }
  return parts.join('\n');
}
