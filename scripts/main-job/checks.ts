/**
 * Checks: one expectation of the main job, whether it held, and what was seen when it did not.
 * Pure.
 */

/** One expectation and whether it held. */
export interface Check {
  readonly ok: boolean;
  /** What was expected, in plain words. */
  readonly name: string;
  /** What was seen, when it differs from the expectation. */
  readonly detail?: string;
}

/**
 * A check that holds when `actual` equals `expected` as JSON (so key order and `undefined`
 * fields count; keep both sides built the same way).
 *
 * @example
 * check('Audit table: 5 items', 5, observation.tables.auditItems);
 */
export function check(name: string, expected: unknown, actual: unknown): Check {
  const ok = JSON.stringify(expected) === JSON.stringify(actual);
  return ok
    ? { ok, name }
    : { ok, name, detail: `expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}` };
}
