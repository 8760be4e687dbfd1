/**
 * Reading the example app's own variables (`ORDERS_TABLE`, `DOWNSTREAM_URL`, ...). The
 * toolkit's `EO_*` variables are not read here: `createSqsHandler` takes them from the
 * function's environment itself, as in any function the construct configures.
 */
import { EffectivelyOnceError } from '../core/errors';

/** The environment a deployable handler reads. */
export type HandlerEnvironment = Readonly<Record<string, string | undefined>>;

/** Reads a required variable; a missing or empty one is a configuration error at cold start. */
export function requireEnv(name: string, env: HandlerEnvironment = process.env): string {
  const value = env[name];
  if (value === undefined || value.trim() === '') {
    throw new EffectivelyOnceError(
      'INVALID_OPTIONS',
      `Expected environment variable \`${name}\` to be set, got \`${String(value)}\``,
    );
  }
  return value;
}

/** Reads an optional positive integer; anything else is a configuration error at start-up. */
export function optionalInteger(name: string, env: HandlerEnvironment = process.env): number | undefined {
  const value = env[name];
  if (value === undefined || value === '') return undefined;
  if (!/^\d+$/.test(value)) {
    throw new EffectivelyOnceError(
      'INVALID_OPTIONS',
      `Expected environment variable \`${name}\` to be a positive integer, got \`${value}\``,
    );
  }
  return Number(value);
}
