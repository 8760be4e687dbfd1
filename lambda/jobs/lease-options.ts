/**
 * Option checks shared by the entry points that claim with a lease (the job guard and the HTTP
 * idempotency wrapper): the message shape, positive integers, the store, the logger.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { EffectivelyOnceError } from '../core/errors';
import { createJsonLogger, isLevelEnabled, type LogEntry, type Logger, type LogLevel } from '../core/logger';
import type { InboxStore } from '../core/store-port';
import { createDynamoDbStore } from '../store/dynamodb-store';

const LOG_LEVELS: readonly string[] = ['debug', 'info', 'warn', 'error', 'silent'];

/** Throws `INVALID_OPTIONS`: ``Expected `field` to be expected, got `value` ``. */
export function invalidOption(field: string, expected: string, value: unknown): never {
  const shown =
    typeof value === 'string'
      ? JSON.stringify(value)
      : typeof value === 'function'
        ? 'a function'
        : String(value);
  throw new EffectivelyOnceError(
    'INVALID_OPTIONS',
    `Expected \`${field}\` to be ${expected}, got \`${shown}\``,
  );
}

/** `value` when it is an integer from 1 to `max`, `fallback` when it is `undefined`; else throws. */
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

/** The given store when it has `methods`, else the DynamoDB store over `client` and `tableName`. */
export function resolveLeaseStore(
  options: {
    readonly store?: InboxStore;
    readonly client?: DynamoDBDocumentClient;
    readonly tableName?: string;
  },
  methods: readonly (keyof InboxStore)[],
): InboxStore {
  if (options.store === undefined) {
    return createDynamoDbStore({ client: options.client!, tableName: options.tableName! });
  }
  const store = options.store as Partial<InboxStore> | null;
  for (const method of methods) {
    if (typeof store?.[method] !== 'function') {
      invalidOption('store', `an object with ${methods.map((name) => `\`${name}\``).join(', ')}`, store);
    }
  }
  return options.store;
}

/**
 * Checks `logLevel` and `logger`, and returns the log function: entries below the level are
 * dropped, and a failing logger is ignored.
 */
export function resolveLeaseLog(options: {
  readonly logLevel?: LogLevel;
  readonly logger?: Logger;
}): (entry: LogEntry) => void {
  const logLevel = options.logLevel ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    invalidOption('logLevel', "one of 'debug', 'info', 'warn', 'error', 'silent'", logLevel);
  }
  if (options.logger !== undefined && typeof options.logger?.log !== 'function') {
    invalidOption('logger', 'an object with `log`', options.logger);
  }
  const logger = options.logger ?? createJsonLogger();
  return (entry) => {
    if (!isLevelEnabled(entry.level, logLevel)) return;
    try {
      logger.log(entry);
    } catch {
      // A failing logger must not change what the run does or answers.
    }
  };
}
