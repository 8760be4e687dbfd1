/**
 * Waiting for a queue to drain, judged by its approximate counters. The logic is pure
 * over injected effects (read the counters, sleep, clock), so it is unit-tested with a
 * fake clock; the adapter supplies the real ones.
 */

import { ReplayError } from './errors';

/** The three approximate counters of a queue. */
export interface QueueCounters {
  /** `ApproximateNumberOfMessages`: ready to be received. */
  readonly visible: number;
  /** `ApproximateNumberOfMessagesNotVisible`: received by a consumer and not yet deleted. */
  readonly inFlight: number;
  /** `ApproximateNumberOfMessagesDelayed`: sent with a delay that has not passed. */
  readonly delayed: number;
}

/** What `waitForDrain` needs. */
export interface DrainOptions {
  readonly readCounters: () => Promise<QueueCounters>;
  /** Give up after this long. */
  readonly timeoutMillis: number;
  /** Pause between polls. */
  readonly pollIntervalMillis: number;
  /**
   * Consecutive all-zero polls required. The counters are approximate and lag (on AWS
   * by seconds), so one zero reading right after a send can be stale.
   */
  readonly stablePolls: number;
  readonly sleep: (millis: number) => Promise<void>;
  /** Milliseconds from any fixed origin. */
  readonly now: () => number;
  /** Called after every poll with the counters and the time since the wait began. */
  readonly onPoll?: (counters: QueueCounters, elapsedMillis: number) => void;
}

/** Sum of the three counters: messages the consumer has not finished with. */
export function remainingMessages(counters: QueueCounters): number {
  return counters.visible + counters.inFlight + counters.delayed;
}

/**
 * Resolves with the elapsed milliseconds once `stablePolls` consecutive polls read all
 * three counters as zero.
 *
 * @throws {ReplayError} `DRAIN_TIMEOUT` with the last counters when the queue has not
 *   drained within `timeoutMillis`.
 */
export async function waitForDrain(options: DrainOptions): Promise<number> {
  const start = options.now();
  let zeros = 0;
  for (;;) {
    const counters = await options.readCounters();
    const elapsed = options.now() - start;
    options.onPoll?.(counters, elapsed);
    zeros = remainingMessages(counters) === 0 ? zeros + 1 : 0;
    if (zeros >= options.stablePolls) return elapsed;
    if (elapsed + options.pollIntervalMillis > options.timeoutMillis) {
      throw new ReplayError(
        'DRAIN_TIMEOUT',
        `The queue did not drain within ${formatSeconds(options.timeoutMillis)}: last read ${counters.visible} visible, ` +
          `${counters.inFlight} in flight, ${counters.delayed} delayed. Is a consumer polling it? ` +
          'For long logs or slow consumers, raise the timeout (--timeout, or timeoutSeconds).',
      );
    }
    await options.sleep(options.pollIntervalMillis);
  }
}

/**
 * Throws unless the queue is idle: a backlog, or messages a consumer is still working on, would
 * mix into the first replay and the snapshot after it.
 *
 * @throws {ReplayError} `QUEUE_BUSY` naming the counts.
 */
export function assertIdle(counters: QueueCounters): void {
  if (remainingMessages(counters) === 0) return;
  throw new ReplayError(
    'QUEUE_BUSY',
    `The queue is not idle before the first replay: ${counters.visible} visible, ${counters.inFlight} in ` +
      `flight, ${counters.delayed} delayed. Those messages would mix into the replay; wait until the ` +
      'consumer has drained them (or purge a test queue) and run again.',
  );
}

/**
 * The warning when a message that fails every delivery stays in the queue longer than the drain
 * waits (visibility timeout × receives before the redrive to the dead-letter queue), so a poison
 * message in the log would end the replay with `DRAIN_TIMEOUT`; `undefined` when it fits.
 */
export function redriveTimingWarning(
  queue: { readonly visibilityTimeoutSeconds: number; readonly maxReceiveCount: number | undefined },
  timeoutSeconds: number,
): string | undefined {
  if (queue.maxReceiveCount === undefined) return undefined;
  const redriveSeconds = queue.visibilityTimeoutSeconds * queue.maxReceiveCount;
  if (redriveSeconds <= timeoutSeconds) return undefined;
  return (
    `The queue's redrive timing exceeds the drain timeout: a message that fails every delivery stays ` +
    `up to ${queue.visibilityTimeoutSeconds} s visibility × ${queue.maxReceiveCount} receives = ` +
    `${redriveSeconds} s before it moves to the dead-letter queue, and the drain gives up after ` +
    `${timeoutSeconds} s. If the log holds poison messages, raise the timeout above ${redriveSeconds} s ` +
    '(--timeout, or timeoutSeconds).'
  );
}

function formatSeconds(millis: number): string {
  const seconds = millis / 1000;
  return `${seconds} ${seconds === 1 ? 'second' : 'seconds'}`;
}
