/**
 * The `effectively-once` command line: picks the subcommand, runs it and turns every
 * failure into a short message and exit code 2.
 */

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { localUsage, parseLocalArgs, runLocal } from './local/command';
import { closestName, LOCAL_SUBCOMMANDS } from './local/usage';
import { parseOutboxArgs, REDRIVE_USAGE } from './outbox/args';
import { runRedrive } from './outbox/redrive';
import { parseReplayArgs, REPLAY_USAGE } from './replay/args';
import { isReplayError, ReplayError } from './replay/errors';
import { type CliIo, EXIT, runReplay } from './replay/run';

/** Help text of `effectively-once`. */
export const USAGE = `Usage: effectively-once <command> [options]

Commands:
  local     run your CDK app on a local AWS emulator: local up, deploy, destroy, down
  outbox    outbox redrive: publish outbox events again, by id, time window or on-failure record
  replay    replay a message log twice and show every field the second replay changed

Options:
  --version  print the version
  -h, --help show this help

Run \`effectively-once <command> --help\` for the options of a command.
`;

/** What the command line reads besides its arguments (the `local` commands need both). */
export interface CliProcess extends CliIo {
  readonly env?: NodeJS.ProcessEnv;
  cwd?(): string;
}

/** Error codes whose message is written for the person running the command (no stack trace). */
const EXPECTED_CODES: ReadonlySet<string> = new Set([
  'USAGE',
  'NO_EMULATOR',
  'ENDPOINT_UNREACHABLE',
  'CDK_COMMAND_FAILED',
  'OUTPUTS_UNREADABLE',
  'FIXUP_FAILED',
  'DESTROY_FAILED',
  'STACKS_UNKNOWN',
]);

/**
 * Runs the command line and returns the exit code. Never throws: errors are written to
 * `stderr` as one line (`--debug` adds the stack trace). Without a command it prints the usage
 * on `stderr` and returns 2.
 *
 * @example
 * process.exitCode = await main(process.argv.slice(2), process);
 */
export async function main(argv: readonly string[], io: CliProcess): Promise<number> {
  const [command, ...rest] = argv;
  const debug = rest.includes('--debug');
  try {
    if (command === undefined) {
      io.stderr.write(USAGE);
      return EXIT.error;
    }
    if (command === '--help' || command === '-h' || command === 'help') {
      io.stdout.write(USAGE);
      return EXIT.unchanged;
    }
    if (command === '--version' || command === '-v') {
      io.stdout.write(`${packageVersion()}\n`);
      return EXIT.unchanged;
    }
    if (command === 'local') {
      const parsed = parseLocalArgs(rest);
      if (parsed.kind === 'help') {
        io.stdout.write(localUsage(parsed.subcommand));
        return EXIT.unchanged;
      }
      return await runLocal(parsed, {
        stdout: io.stdout,
        stderr: io.stderr,
        env: io.env ?? process.env,
        cwd: io.cwd?.() ?? process.cwd(),
      });
    }
    if (command === 'outbox') {
      const parsed = parseOutboxArgs(rest);
      if (parsed.kind === 'help') {
        io.stdout.write(REDRIVE_USAGE);
        return EXIT.unchanged;
      }
      return await runRedrive(parsed.options, io);
    }
    if (command !== 'replay') {
      const suggestion = (LOCAL_SUBCOMMANDS as readonly string[]).includes(command)
        ? `local ${command}`
        : closestName(command, ['local', 'outbox', 'replay']);
      throw new ReplayError(
        'USAGE',
        `Unknown command \`${command}\`${suggestion ? ` (did you mean \`${suggestion}\`?)` : ''}`,
      );
    }
    const parsed = parseReplayArgs(rest);
    if (parsed.kind === 'help') {
      io.stdout.write(REPLAY_USAGE);
      return EXIT.unchanged;
    }
    return await runReplay(parsed.options, io);
  } catch (error) {
    io.stderr.write(describeFailure(error, commandName(command, rest), debug));
    return EXIT.error;
  }
}

/** The `version` of the package's own `package.json` (found upwards from this file, source or dist). */
export function packageVersion(): string {
  for (let dir = __dirname; ; dir = dirname(dir)) {
    try {
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (manifest.name === 'effectively-once' && manifest.version) return manifest.version;
    } catch {
      // No package.json here; look one level up.
    }
    if (dirname(dir) === dir) return 'unknown';
  }
}

/** The command a failure message names: `effectively-once replay`, `effectively-once outbox redrive`. */
function commandName(command: string | undefined, rest: readonly string[]): string {
  if (command === 'replay' || command === 'local') return `effectively-once ${command}`;
  if (command === 'outbox')
    return rest[0] === 'redrive' ? 'effectively-once outbox redrive' : 'effectively-once outbox';
  return 'effectively-once';
}

function describeFailure(error: unknown, prefix: string, debug: boolean): string {
  const stack = debug && error instanceof Error && error.stack ? `\n${stackWithCauses(error)}` : '';
  const code = (error as { code?: unknown } | null)?.code;
  if (isReplayError(error) || (typeof code === 'string' && EXPECTED_CODES.has(code))) {
    const hint = code === 'USAGE' ? `\nRun \`${prefix} --help\` for usage.` : '';
    return `${prefix}: ${(error as Error).message}${hint}${stack}\n`;
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
