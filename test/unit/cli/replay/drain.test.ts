import { describe, expect, it } from 'vitest';
import {
  assertIdle,
  type QueueCounters,
  redriveTimingWarning,
  waitForDrain,
} from '../../../../cli/replay/drain';

/** Counters read in sequence (the last one repeats), on a fake clock advanced by `sleep`. */
function fakeQueue(readings: Array<[visible: number, inFlight: number, delayed: number]>) {
  let clock = 0;
  let reads = 0;
  const polls: Array<{ counters: QueueCounters; elapsed: number }> = [];
  return {
    polls,
    get reads() {
      return reads;
    },
    options: {
      readCounters: async (): Promise<QueueCounters> => {
        const [visible, inFlight, delayed] = readings[Math.min(reads++, readings.length - 1)]!;
        return { visible, inFlight, delayed };
      },
      sleep: async (millis: number) => {
        clock += millis;
      },
      now: () => clock,
      onPoll: (counters: QueueCounters, elapsed: number) => polls.push({ counters, elapsed }),
    },
  };
}

describe('waitForDrain', () => {
  it('returns after the required number of consecutive all-zero reads', async () => {
    const queue = fakeQueue([
      [3, 0, 0],
      [0, 2, 1],
      [0, 0, 0],
      [0, 0, 0],
      [0, 0, 0],
    ]);

    const elapsed = await waitForDrain({
      ...queue.options,
      timeoutMillis: 10_000,
      pollIntervalMillis: 100,
      stablePolls: 3,
    });

    expect(elapsed).toBe(400);
    expect(queue.reads).toBe(5);
    expect(queue.polls.map((poll) => poll.elapsed)).toEqual([0, 100, 200, 300, 400]);
  });

  it('starts counting again when a zero reading turns out to be stale', async () => {
    const queue = fakeQueue([
      [0, 0, 0],
      [0, 0, 0],
      [0, 1, 0],
      [0, 0, 0],
      [0, 0, 0],
      [0, 0, 0],
    ]);

    const elapsed = await waitForDrain({
      ...queue.options,
      timeoutMillis: 10_000,
      pollIntervalMillis: 100,
      stablePolls: 3,
    });

    expect(elapsed).toBe(500);
    expect(queue.reads).toBe(6);
  });

  it('counts delayed and in-flight messages as not drained', async () => {
    const queue = fakeQueue([
      [0, 0, 1],
      [0, 1, 0],
      [0, 0, 0],
    ]);

    await waitForDrain({ ...queue.options, timeoutMillis: 10_000, pollIntervalMillis: 100, stablePolls: 1 });

    expect(queue.reads).toBe(3);
  });

  it('gives up with the last counters once the timeout would pass', async () => {
    const queue = fakeQueue([[2, 1, 0]]);

    await expect(
      waitForDrain({ ...queue.options, timeoutMillis: 1000, pollIntervalMillis: 300, stablePolls: 2 }),
    ).rejects.toMatchObject({
      name: 'ReplayError',
      code: 'DRAIN_TIMEOUT',
      message:
        'The queue did not drain within 1 second: last read 2 visible, 1 in flight, 0 delayed. Is a consumer polling it? ' +
        'For long logs or slow consumers, raise the timeout (--timeout, or timeoutSeconds).',
    });
    expect(queue.polls.map((poll) => poll.elapsed)).toEqual([0, 300, 600, 900]);
  });
});

describe('assertIdle', () => {
  it('accepts a queue whose three counters read zero', () => {
    expect(() => assertIdle({ visible: 0, inFlight: 0, delayed: 0 })).not.toThrow();
  });

  it('fails with QUEUE_BUSY naming the counts when any counter is not zero', () => {
    expect(() => assertIdle({ visible: 0, inFlight: 2, delayed: 1 })).toThrow(
      expect.objectContaining({
        code: 'QUEUE_BUSY',
        message:
          'The queue is not idle before the first replay: 0 visible, 2 in flight, 1 delayed. Those messages ' +
          'would mix into the replay; wait until the consumer has drained them (or purge a test queue) and run again.',
      }),
    );
  });
});

describe('redriveTimingWarning', () => {
  it('warns when visibility × receives is longer than the drain timeout', () => {
    expect(redriveTimingWarning({ visibilityTimeoutSeconds: 30, maxReceiveCount: 5 }, 120)).toBe(
      "The queue's redrive timing exceeds the drain timeout: a message that fails every delivery stays up to " +
        '30 s visibility × 5 receives = 150 s before it moves to the dead-letter queue, and the drain gives up ' +
        'after 120 s. If the log holds poison messages, raise the timeout above 150 s (--timeout, or timeoutSeconds).',
    );
  });

  it('says nothing when the redrive fits in the timeout, or there is no dead-letter queue', () => {
    expect(redriveTimingWarning({ visibilityTimeoutSeconds: 30, maxReceiveCount: 4 }, 120)).toBeUndefined();
    expect(
      redriveTimingWarning({ visibilityTimeoutSeconds: 900, maxReceiveCount: undefined }, 120),
    ).toBeUndefined();
  });
});
