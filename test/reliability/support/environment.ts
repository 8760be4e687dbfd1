/** The reliability suite's size settings, read from the environment (`RELIABILITY_*`). */

/** The positive integer in the environment variable `name`, or `fallback` when it is unset or empty. */
export function positiveInteger(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 1)
    throw new Error(`Expected ${name} to be a positive integer, got ${raw}`);
  return value;
}
