/**
 * The double-tap test (design principle 13): replay a message log twice against a
 * running consumer and report every field the second replay changed. The first replay
 * plays the part of "yesterday's delivery"; an idempotent consumer leaves the tables
 * exactly as the first replay left them.
 */

import { setTimeout as sleep } from 'node:timers/promises';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { describeKeyAttributes, describeQueue, readQueueCounters, scanTable, sendBatch } from './aws';
import { type Difference, diffSnapshots } from './diff';
import { assertIdle, redriveTimingWarning, waitForDrain } from './drain';
import { ReplayError } from './errors';
import { type LogEntry, type LogMessage, parseLog, toLogEntries } from './log';
import type { Pass, ProgressEvent } from './progress';
import { planBatches } from './send-plan';
import { createTableSnapshot, type TableSnapshot } from './snapshot';

/** Passed to a custom `drain` hook after each replay has been sent. */
export interface DrainContext {
  /** Which replay (1 or 2). */
  readonly pass: Pass;
  /** The queue the messages were sent to. */
  readonly queueUrl: string;
  /** Messages sent in this pass. */
  readonly messages: number;
}

/** Options of `doubleTap`. */
export interface DoubleTapOptions {
  /** The messages to replay: JSON Lines text (the CLI's `--log` format) or message objects. */
  readonly log: string | readonly LogMessage[];
  /** The queue the consumer reads. */
  readonly queueUrl: string;
  /** The tables the consumer writes, snapshotted after each replay. At least one. */
  readonly tables: readonly string[];
  /** The SQS client that sends the messages and reads the queue's counters. */
  readonly sqs: SQSClient;
  /** The DynamoDB client that snapshots the tables. */
  readonly dynamodb: DynamoDBClient;
  /**
   * Longest wait for the queue to drain, per replay, in seconds. A custom `drain` hook
   * bounds its own wait.
   * @default 120
   */
  readonly timeoutSeconds?: number;
  /**
   * Pause between two reads of the queue counters, in milliseconds.
   * @default 1000
   */
  readonly pollIntervalMillis?: number;
  /**
   * Consecutive reads of all-zero counters that count as drained (the counters lag).
   * @default 5
   */
  readonly stablePolls?: number;
  /**
   * FIFO queues only: how long after the first replay's last send the second replay
   * waits, in seconds. SQS drops a resend with the same deduplication id (or, with
   * content-based deduplication, the same body) for five minutes; a second replay inside
   * that window would never reach the consumer and would pass vacuously.
   * @default 300
   */
  readonly dedupWindowSeconds?: number;
  /**
   * Waits until the consumer has processed a replay, instead of watching the queue
   * counters. For tests where no Lambda polls the queue (an in-process consumer).
   * @default waits until the queue's approximate counters read zero `stablePolls` times in a row
   */
  readonly drain?: (context: DrainContext) => Promise<void>;
  /** Progress of each step (counts only, never message bodies). */
  readonly onProgress?: (event: ProgressEvent) => void;
}

/** What `doubleTap` found. */
export interface DoubleTapResult {
  /** True when the second replay changed anything. */
  readonly changed: boolean;
  /** Every field the second replay changed (see `formatDifferences`); empty for an idempotent consumer. */
  readonly differences: readonly Difference[];
  /** The tables after the first replay. */
  readonly firstSnapshot: readonly TableSnapshot[];
  /** The tables after the second replay. */
  readonly secondSnapshot: readonly TableSnapshot[];
  /** Messages in the log (each sent once per replay). */
  readonly messages: number;
}

/** A margin on top of the FIFO deduplication window, for clock granularity on the service side. */
const DEDUP_WINDOW_MARGIN_MILLIS = 1000;

/**
 * Replays a message log twice through a queue, waits for the consumer to drain it each
 * time, snapshots the tables after each replay and returns every difference between the
 * two snapshots. Checks the queue and the tables exist and the queue is idle before sending
 * anything, and reports a `notice` progress event when the queue's redrive timing
 * (visibility timeout × receives) is longer than the drain timeout.
 *
 * @throws {ReplayError} for an invalid log or options (`INVALID_LOG`, `USAGE`), an
 *   unreachable endpoint (`CONNECTION`), a missing queue or table (`NOT_FOUND`), a queue
 *   holding messages before the first replay (`QUEUE_BUSY`), refused messages
 *   (`SEND_FAILED`) or a queue that does not drain in time (`DRAIN_TIMEOUT`).
 *
 * @example
 * import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
 * import { SQSClient } from '@aws-sdk/client-sqs';
 * import { doubleTap, formatDifferences } from 'effectively-once/replay';
 *
 * it('changes nothing when the whole order log is replayed a second time', async () => {
 *   const result = await doubleTap({
 *     log: [
 *       { body: { orderId: 'o-1', status: 'PAID' }, attributes: { dedupKey: 'o-1#PAID' } },
 *       { body: { orderId: 'o-2', status: 'PAID' }, attributes: { dedupKey: 'o-2#PAID' } },
 *     ],
 *     queueUrl: process.env.ORDERS_QUEUE_URL!,
 *     tables: ['orders', 'inbox'],
 *     sqs: new SQSClient({}),
 *     dynamodb: new DynamoDBClient({}),
 *   });
 *   expect(result.differences, formatDifferences(result.differences)).toEqual([]);
 * });
 */
export async function doubleTap(options: DoubleTapOptions): Promise<DoubleTapResult> {
  const settings = resolveOptions(options);
  const entries: LogEntry[] =
    typeof options.log === 'string' ? parseLog(options.log) : toLogEntries(options.log);
  const { sqs, dynamodb, queueUrl } = options;
  const progress = options.onProgress ?? (() => {});

  // Everything that can be checked is checked before the first message changes any state.
  const queue = await describeQueue(sqs, queueUrl);
  const batches = planBatches(entries, queue);
  const tables: Array<{ table: string; keyAttributes: string[] }> = [];
  for (const table of options.tables) {
    tables.push({ table, keyAttributes: await describeKeyAttributes(dynamodb, table) });
  }
  // A backlog would mix into the first replay and its snapshot: fail before sending anything.
  assertIdle(await readQueueCounters(sqs, queueUrl));
  const redriveWarning =
    options.drain === undefined ? redriveTimingWarning(queue, settings.timeoutSeconds) : undefined;
  if (redriveWarning) progress({ phase: 'notice', message: redriveWarning });

  const replay = async (pass: Pass): Promise<{ lastSentAt: number; snapshot: TableSnapshot[] }> => {
    let sent = 0;
    progress({ phase: 'send', pass, sent, total: entries.length });
    for (const batch of batches) {
      await sendBatch(sqs, queueUrl, batch);
      sent += batch.length;
      progress({ phase: 'send', pass, sent, total: entries.length });
    }
    const lastSentAt = Date.now();

    if (options.drain === undefined) {
      const elapsedMillis = await waitForDrain({
        readCounters: () => readQueueCounters(sqs, queueUrl),
        timeoutMillis: settings.timeoutSeconds * 1000,
        pollIntervalMillis: settings.pollIntervalMillis,
        stablePolls: settings.stablePolls,
        sleep: (millis) => sleep(millis),
        now: () => Date.now(),
        onPoll: (counters, elapsed) =>
          progress({ phase: 'drain', pass, total: entries.length, counters, elapsedMillis: elapsed }),
      });
      progress({ phase: 'drained', pass, elapsedMillis });
    } else {
      const start = Date.now();
      await options.drain({ pass, queueUrl, messages: entries.length });
      progress({ phase: 'drained', pass, elapsedMillis: Date.now() - start });
    }

    const snapshot: TableSnapshot[] = [];
    for (const { table, keyAttributes } of tables) {
      progress({ phase: 'snapshot', pass, table, items: 0, complete: false });
      const items = await scanTable(dynamodb, table, (itemsSoFar) =>
        progress({ phase: 'snapshot', pass, table, items: itemsSoFar, complete: false }),
      );
      snapshot.push(createTableSnapshot(table, keyAttributes, items));
      progress({ phase: 'snapshot', pass, table, items: items.length, complete: true });
    }
    return { lastSentAt, snapshot };
  };

  const first = await replay(1);
  if (queue.fifo && settings.dedupWindowSeconds > 0) {
    await waitUntil(
      first.lastSentAt + settings.dedupWindowSeconds * 1000 + DEDUP_WINDOW_MARGIN_MILLIS,
      progress,
    );
  }
  const second = await replay(2);

  const differences = diffSnapshots(first.snapshot, second.snapshot);
  return {
    changed: differences.length > 0,
    differences,
    firstSnapshot: first.snapshot,
    secondSnapshot: second.snapshot,
    messages: entries.length,
  };
}

async function waitUntil(deadline: number, progress: (event: ProgressEvent) => void): Promise<void> {
  for (let remaining = deadline - Date.now(); remaining > 0; remaining = deadline - Date.now()) {
    progress({ phase: 'dedup-window', remainingMillis: remaining });
    await sleep(Math.min(remaining, 1000));
  }
  progress({ phase: 'dedup-window', remainingMillis: 0 });
}

interface Settings {
  readonly timeoutSeconds: number;
  readonly pollIntervalMillis: number;
  readonly stablePolls: number;
  readonly dedupWindowSeconds: number;
}

function resolveOptions(options: DoubleTapOptions): Settings {
  if (options.tables.length === 0) {
    throw new ReplayError('USAGE', 'Expected `tables` to name at least one table, got `[]`');
  }
  const settings: Settings = {
    timeoutSeconds: options.timeoutSeconds ?? 120,
    pollIntervalMillis: options.pollIntervalMillis ?? 1000,
    stablePolls: options.stablePolls ?? 5,
    dedupWindowSeconds: options.dedupWindowSeconds ?? 300,
  };
  const rules: Array<[keyof Settings, string, (value: number) => boolean]> = [
    ['timeoutSeconds', 'a positive number', (value) => value > 0],
    ['pollIntervalMillis', 'a number of at least 0', (value) => value >= 0],
    ['stablePolls', 'a positive integer', (value) => Number.isInteger(value) && value >= 1],
    ['dedupWindowSeconds', 'a number of at least 0', (value) => value >= 0],
  ];
  for (const [name, expected, isValid] of rules) {
    const value = settings[name];
    if (!Number.isFinite(value) || !isValid(value)) {
      throw new ReplayError('USAGE', `Expected \`${name}\` to be ${expected}, got \`${value}\``);
    }
  }
  return Object.freeze(settings);
}
