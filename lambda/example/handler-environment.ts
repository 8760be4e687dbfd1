/**
 * Reading the example handlers' own environment variables (the toolkit's `EO_*` are read by the
 * toolkit). A module of its own, with no handler in it, so that any handler can import it without
 * bundling another handler's cold start.
 */
import { EffectivelyOnceError } from 'effectively-once';

/** The environment a deployable handler reads its own variables from. */
export type HandlerEnvironment = Readonly<Record<string, string | undefined>>;

/** The non-blank value of `name` in `env`; a missing one fails the cold start (`INVALID_OPTIONS`). */
export function requiredVariable(env: HandlerEnvironment, name: string): string {
  const value = env[name];
  if (value === undefined || value.trim() === '') {
    throw new EffectivelyOnceError(
      'INVALID_OPTIONS',
      `Expected environment variable \`${name}\` to be set, got \`${String(value)}\``,
    );
  }
  return value;
}
