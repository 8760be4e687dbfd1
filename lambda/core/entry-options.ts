/**
 * Option checks shared by the entry points built on the core outside the SQS handler (the job
 * guard, the HTTP idempotency wrapper), in the one vocabulary of `errors.ts`: a bad option
 * throws `INVALID_OPTIONS` with ``Expected `field` to be expected, got `value` `` and the value
 * shown by `describeValue`, the same as from every other entry point.
 */
import { expectOption, invalidOption } from './errors';
import { isLeaseWithinTtl } from './lease';
import { createJsonLogger, createLevelLog, type LogEntry, type Logger, type LogLevel } from './logger';

const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error', 'silent'];

/**
 * `value` when it is an integer from 1 to `max`, `fallback` when it is `undefined`; else throws.
 *
 * @example
 * positiveOption('ttlSeconds', options.ttlSeconds, 86_400); // 86400 when not given
 * positiveOption('ttlSeconds', -1, 86_400); // throws: Expected `ttlSeconds` to be a positive integer, got `-1`
 */
export function positiveOption(field: string, value: unknown, fallback: number, max?: number): number;
export function positiveOption(
  field: string,
  value: unknown,
  fallback: number | undefined,
  max?: number,
): number | undefined;
export function positiveOption(
  field: string,
  value: unknown,
  fallback: number | undefined,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || (value as number) < 1 || (value as number) > max) {
    invalidOption(
      field,
      max === Number.MAX_SAFE_INTEGER ? 'a positive integer' : `an integer from 1 to ${max}`,
      value,
    );
  }
  return value as number;
}

/** Throws `INVALID_OPTIONS` for a `leaseMillis` not shorter than `ttlSeconds` (see `isLeaseWithinTtl`). */
export function expectLeaseWithinTtl(leaseMillis: number, ttlSeconds: number): void {
  expectOption(
    isLeaseWithinTtl(leaseMillis, ttlSeconds),
    'leaseMillis',
    `shorter than \`ttlSeconds\` (${ttlSeconds * 1000} milliseconds)`,
    leaseMillis,
  );
}

/**
 * Throws `INVALID_OPTIONS` unless `value` is an object with every one of `methods`: the
 * capability an injected port (a store, a metrics sink) must have.
 */
export function expectPortOption(field: string, value: unknown, methods: readonly string[]): void {
  const ok =
    typeof value === 'object' &&
    value !== null &&
    methods.every((method) => typeof (value as Record<string, unknown>)[method] === 'function');
  expectOption(ok, field, `an object with ${methods.map((method) => `\`${method}\``).join(', ')}`, value);
}

/**
 * Checks `logLevel` and `logger`, and returns the entry point's log function
 * (`createLevelLog`): entries below the level are dropped, a failing logger is ignored.
 *
 * @example
 * const log = resolveLogOption(options); // JSON lines on standard output at 'info' by default
 */
export function resolveLogOption(options: {
  readonly logLevel?: LogLevel;
  readonly logger?: Logger;
}): (entry: LogEntry) => void {
  const logLevel = options.logLevel ?? 'info';
  expectOption(
    LOG_LEVELS.includes(logLevel),
    'logLevel',
    `one of ${LOG_LEVELS.map((level) => `'${level}'`).join(', ')}`,
    logLevel,
  );
  if (options.logger !== undefined) expectPortOption('logger', options.logger, ['log']);
  return createLevelLog(options.logger ?? createJsonLogger(), logLevel);
}
