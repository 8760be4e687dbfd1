/**
 * Progress for long waits: a line every few seconds while a promise is pending, so a command that
 * installs, deploys or drains never sits silent.
 */

/** Options of {@link reportWhileWaiting}. */
export interface WaitProgress {
  /** Called every `everyMillis` while the work is pending, with the time since it began. */
  readonly report: (elapsedMillis: number) => void;
  /** @default 5000 */
  readonly everyMillis?: number;
  /** Milliseconds from any fixed origin. @default Date.now */
  readonly now?: () => number;
}

/** How often a long wait reports by default. */
export const PROGRESS_EVERY_MILLIS = 5_000;

/**
 * Resolves or rejects as `work` does; meanwhile calls `report` every `everyMillis`.
 *
 * @example
 * await reportWhileWaiting(install(), { report: (ms) => log(`still installing (${seconds(ms)})`) });
 */
export async function reportWhileWaiting<T>(work: Promise<T>, progress: WaitProgress): Promise<T> {
  const now = progress.now ?? Date.now;
  const started = now();
  const timer = setInterval(
    () => progress.report(now() - started),
    progress.everyMillis ?? PROGRESS_EVERY_MILLIS,
  );
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}

/** `12.3 s`. */
export function formatSeconds(millis: number): string {
  return `${(millis / 1000).toFixed(1)} s`;
}
