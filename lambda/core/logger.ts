/**
 * Structured logs: one JSON line per non-trivial outcome. Lines carry the consumer, the scoped
 * key (or its hash), the message id, the correlation id, the outcome and the error code and
 * class, and never any part of the body.
 */
import type { LogLevel } from './contract';

/** Log levels, lowest first; `silent` turns logging off. */
export type { LogLevel } from './contract';

/** One structured log line. */
export interface LogEntry {
  /** The entry's level. */
  readonly level: Exclude<LogLevel, 'silent'>;
  /** A fixed text naming what happened (never a body). */
  readonly message: string;
  /** Structured fields: consumer, dedup key (or its hash), message id, outcome, code. */
  readonly [field: string]: unknown;
}

/** Where log lines go. Inject one to route lines elsewhere (the core filters by level first). */
export interface Logger {
  /** Writes one entry; an error it throws is swallowed. */
  log(entry: LogEntry): void;
}

/** Writes one line of text (without its newline). */
export type LineWriter = (line: string) => void;

const LEVEL_RANK: Readonly<Record<LogLevel, number>> = {
  debug: 10,
  info: 20,
  warn: 30,
  error: 40,
  silent: 99,
};

/** True when an entry at `level` passes a logger configured at `threshold`. */
export function isLevelEnabled(level: Exclude<LogLevel, 'silent'>, threshold: LogLevel): boolean {
  return LEVEL_RANK[level] >= LEVEL_RANK[threshold];
}

/**
 * Writes to standard output directly: Lambda's patched `console` prefixes every line with a
 * timestamp and request id, which breaks JSON (and Embedded Metric Format) parsing.
 */
export const writeStdoutLine: LineWriter = (line) => {
  process.stdout.write(`${line}\n`);
};

/**
 * A logger writing each entry as one JSON line.
 *
 * @example
 * const lines: string[] = [];
 * const logger = createJsonLogger((line) => lines.push(line));
 */
export function createJsonLogger(write: LineWriter = writeStdoutLine): Logger {
  return { log: (entry) => write(JSON.stringify(entry)) };
}

/**
 * The log function of an entry point: passes entries at or above `threshold` to `logger`, and
 * swallows a failing logger's error (a logger must never change what happens to a message).
 */
export function createLevelLog(logger: Logger, threshold: LogLevel): (entry: LogEntry) => void {
  return (entry) => {
    if (!isLevelEnabled(entry.level, threshold)) return;
    try {
      logger.log(entry);
    } catch {
      // A failing logger must not change what happens to messages.
    }
  };
}
