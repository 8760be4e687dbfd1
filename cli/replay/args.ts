/**
 * Command-line arguments of `effectively-once replay`. Pure: argv in, options out.
 */

import { type ParseArgsConfig, parseArgs } from 'node:util';
import { ReplayError } from './errors';

/** Resolved options of one `replay` run. */
export interface ReplayCliOptions {
  /** Path of the JSON Lines message log. */
  readonly log: string;
  readonly queueUrl: string;
  readonly tables: readonly string[];
  /** @default the SDK's resolution (which includes `AWS_ENDPOINT_URL`) */
  readonly endpointUrl?: string;
  /** @default the SDK's resolution (`AWS_REGION`, the profile) */
  readonly region?: string;
  /** Print the JSON report on stdout instead of text. */
  readonly json: boolean;
  /** Print stack traces of errors. */
  readonly debug: boolean;
  /** @default 120 */
  readonly timeoutSeconds: number;
  /** @default 1000 */
  readonly pollIntervalMillis: number;
  /** @default 5 */
  readonly stablePolls: number;
  /** @default 300 */
  readonly dedupWindowSeconds: number;
}

/** What the command line asks for. */
export type ReplayCommand =
  | { readonly kind: 'help' }
  | { readonly kind: 'replay'; readonly options: ReplayCliOptions };

/** Help text of `effectively-once replay`. */
export const REPLAY_USAGE = `Usage: effectively-once replay --log FILE --queue-url URL --table NAME [--table NAME ...] [options]

The double-tap test: sends a message log to a queue, waits until the consumer has
drained it, snapshots the tables, sends the log again, waits, snapshots again and shows
every field the second replay changed. The first replay stands in for yesterday's
delivery: an idempotent consumer leaves the tables exactly as the first replay left them.

Required:
  --log FILE                JSON Lines, one message per line:
                            {"body": "text" | {...}, "attributes": {"name": "text" | 1},
                             "groupId": "...", "deduplicationId": "..."}
                            (attributes, groupId and deduplicationId are optional)
  --queue-url URL           the queue the consumer reads
  --table NAME              a table the consumer writes; repeat for several

Options:
  --endpoint-url URL        AWS endpoint (default: the SDK's resolution, AWS_ENDPOINT_URL included)
  --region REGION           AWS region (default: the SDK's resolution, AWS_REGION included)
  --timeout SECONDS         longest wait for the queue to drain, per replay (default 120)
  --poll-interval SECONDS   pause between reads of the queue counters (default 1)
  --stable-polls N          consecutive all-zero reads that count as drained (default 5)
  --dedup-window SECONDS    FIFO queues: wait this long after the first replay's last send, so
                            SQS does not drop the second replay as duplicates (default 300)
  --json                    print a JSON report on stdout; progress stays on stderr
  --debug                   print stack traces of errors
  -h, --help                show this help

Exit codes: 0 nothing changed, 1 something changed, 2 usage, log, AWS or connection error.
`;

/**
 * Parses the arguments that follow `replay`.
 *
 * @throws {ReplayError} `USAGE` for an unknown option, a missing required option or a bad value.
 */
export function parseReplayArgs(argv: readonly string[]): ReplayCommand {
  const { values } = parseStrict(argv);
  if (values.help) return { kind: 'help' };

  const missing = [
    values.log === undefined ? '--log FILE' : '',
    values['queue-url'] === undefined ? '--queue-url URL' : '',
    values.table === undefined ? '--table NAME' : '',
  ].filter((option) => option !== '');
  if (missing.length > 0) {
    const names = missing.map((option) => `\`${option}\``).join(', ');
    throw new ReplayError('USAGE', `Missing required option${missing.length === 1 ? '' : 's'} ${names}`);
  }

  const tables = values.table ?? [];
  for (const option of ['log', 'table', 'region'] as const) {
    const given = ([] as Array<string | undefined>).concat(values[option]);
    if (given.some((value) => value !== undefined && value.trim() === '')) {
      throw new ReplayError('USAGE', `Expected \`--${option}\` to be non-empty, got \`\``);
    }
  }

  return {
    kind: 'replay',
    options: {
      log: values.log!,
      queueUrl: url('--queue-url', values['queue-url']!),
      tables: [...new Set(tables)],
      ...(values['endpoint-url'] === undefined
        ? {}
        : { endpointUrl: url('--endpoint-url', values['endpoint-url']) }),
      ...(values.region === undefined ? {} : { region: values.region }),
      json: values.json ?? false,
      debug: values.debug ?? false,
      timeoutSeconds: seconds('--timeout', values.timeout, 120, { allowZero: false }),
      pollIntervalMillis: seconds('--poll-interval', values['poll-interval'], 1, { allowZero: false }) * 1000,
      stablePolls: positiveInteger('--stable-polls', values['stable-polls'], 5),
      dedupWindowSeconds: seconds('--dedup-window', values['dedup-window'], 300, { allowZero: true }),
    },
  };
}

function parseStrict(argv: readonly string[]) {
  return parseStrictArgs(argv, {
    log: { type: 'string' },
    'queue-url': { type: 'string' },
    table: { type: 'string', multiple: true },
    'endpoint-url': { type: 'string' },
    region: { type: 'string' },
    timeout: { type: 'string' },
    'poll-interval': { type: 'string' },
    'stable-polls': { type: 'string' },
    'dedup-window': { type: 'string' },
    json: { type: 'boolean' },
    debug: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
}

/** The options of a command, as `parseArgs` takes them. */
type CommandOptions = NonNullable<ParseArgsConfig['options']>;

/** A `parseArgs` configuration: strict, no positionals. */
type StrictConfig<T extends CommandOptions> = {
  args: string[];
  strict: true;
  allowPositionals: false;
  options: T;
};

/**
 * `parseArgs` of a command's options, strict and without positionals; its errors become `USAGE`
 * with one short sentence ({@link usageMessage}). Shared by the commands of the CLI.
 */
export function parseStrictArgs<const T extends CommandOptions>(
  argv: readonly string[],
  options: T,
): ReturnType<typeof parseArgs<StrictConfig<T>>> {
  try {
    return parseArgs({ args: [...argv], strict: true, allowPositionals: false, options });
  } catch (error) {
    throw new ReplayError('USAGE', usageMessage(error), { cause: error });
  }
}

/**
 * Rewords `parseArgs` errors, which are long and quote with `'`, into one short sentence (shared
 * by the commands of the CLI).
 */
export function usageMessage(error: unknown): string {
  const { code, message } = error as { code?: string; message?: string };
  const quoted = /'([^']*)'/.exec(message ?? '')?.[1] ?? '';
  switch (code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `Unknown option \`${quoted}\``;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE': {
      const option = quoted.split(' ')[0];
      if (/argument missing/.test(message ?? '')) return `Option \`${option}\` needs a value`;
      if (/ambiguous/.test(message ?? '')) {
        return `Option \`${option}\` needs a value; write \`${option}=-...\` for a value that starts with \`-\``;
      }
      return `Option \`${option}\` takes no value`;
    }
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `Unexpected argument \`${quoted}\``;
    default:
      return message ?? String(error);
  }
}

const DECIMAL = /^\d+(\.\d+)?$/;

/** `text` as a number of seconds (`fallback` when absent); `USAGE` naming `name` otherwise. */
export function seconds(
  name: string,
  text: string | undefined,
  fallback: number,
  rule: { allowZero: boolean },
): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!DECIMAL.test(text) || (!rule.allowZero && value === 0)) {
    const expected = rule.allowZero ? 'a number of seconds' : 'a positive number of seconds';
    throw new ReplayError('USAGE', `Expected \`${name}\` to be ${expected}, got \`${text}\``);
  }
  return value;
}

function positiveInteger(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  if (!/^\d+$/.test(text) || Number(text) === 0) {
    throw new ReplayError('USAGE', `Expected \`${name}\` to be a positive integer, got \`${text}\``);
  }
  return Number(text);
}

/** `text` when it is an http(s) URL; `USAGE` naming `name` otherwise. */
export function url(name: string, text: string): string {
  let parsed: URL | undefined;
  try {
    parsed = new URL(text);
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
    throw new ReplayError('USAGE', `Expected \`${name}\` to be an http(s) URL, got \`${text}\``);
  }
  return text;
}
