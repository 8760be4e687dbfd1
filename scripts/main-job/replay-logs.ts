/**
 * The double tap (design principle 13) over the sample logs: each log is replayed through its
 * queue with the replay tool's `doubleTap` helper, and every table is compared with its state
 * before the replay.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { describeKeyAttributes, describeQueue, scanTable } from '../../cli/replay/aws';
import { type Difference, diffSnapshots } from '../../cli/replay/diff';
import { type DoubleTapResult, doubleTap } from '../../cli/replay/double-tap';
import type { LogEntry, LogMessage } from '../../cli/replay/log';
import type { ProgressEvent } from '../../cli/replay/progress';
import { createTableSnapshot, type TableSnapshot } from '../../cli/replay/snapshot';
import type { SampleLog } from './sample-logs';

/** The suffix the replay appends to FIFO deduplication ids by default. */
export const REPLAY_DEDUP_SUFFIX = '#replay';

/** One log and the queue its consumer reads. */
export interface LogReplay {
  readonly log: SampleLog;
  readonly queueUrl: string;
}

/** Options of {@link replayLogs}. */
export interface ReplayLogsOptions {
  readonly sqs: SQSClient;
  readonly dynamodb: DynamoDBClient;
  /** The logs to replay, one after the other. */
  readonly replays: readonly LogReplay[];
  /** Every table the consumers write, the inbox table included; snapshotted around each replay. */
  readonly tables: readonly string[];
  /**
   * Appended to every FIFO deduplication id, so the replayed messages are not dropped by the
   * broker as resends of the first run (a producer replaying after the five-minute window).
   * @default '#replay' ({@link REPLAY_DEDUP_SUFFIX})
   */
  readonly dedupSuffix?: string;
  /** Longest wait for a queue to drain, per pass. @default 60 */
  readonly timeoutSeconds?: number;
  readonly onProgress?: (name: string, event: ProgressEvent) => void;
}

/** The double tap of one log. */
export interface LogReplayResult {
  readonly name: string;
  /** Whether the queue is FIFO (its deduplication ids got the suffix). */
  readonly fifo: boolean;
  /** What `doubleTap` found: its first pass against its second. */
  readonly doubleTap: DoubleTapResult;
  /** The tables before this replay against after its first pass. */
  readonly sinceBefore: readonly Difference[];
}

/** What {@link replayLogs} found. */
export interface ReplayLogsResult {
  readonly replays: readonly LogReplayResult[];
  /** The tables before the first replay against after the last. */
  readonly overall: readonly Difference[];
  /** Every difference found, by any comparison. */
  readonly changed: boolean;
}

/**
 * Replays each log twice with `doubleTap` (FIFO deduplication ids suffixed, so the messages
 * reach the consumer, and `dedupWindowSeconds: 0`, since no wait is needed for fresh ids), and
 * compares the tables before each replay with after its first pass, and before the first replay
 * with after the last. An idempotent consumer changes nothing anywhere.
 *
 * The second pass of a FIFO log reuses the first pass's (suffixed) ids within five minutes, so
 * the broker drops it; the comparison that proves the consumer is the one with the state before
 * the replay.
 */
export async function replayLogs(options: ReplayLogsOptions): Promise<ReplayLogsResult> {
  const { sqs, dynamodb } = options;
  const suffix = options.dedupSuffix ?? REPLAY_DEDUP_SUFFIX;
  const keys = new Map<string, string[]>();
  for (const table of options.tables) keys.set(table, await describeKeyAttributes(dynamodb, table));
  const snapshot = async (): Promise<TableSnapshot[]> => {
    const snapshots: TableSnapshot[] = [];
    for (const table of options.tables) {
      snapshots.push(createTableSnapshot(table, keys.get(table)!, await scanTable(dynamodb, table)));
    }
    return snapshots;
  };

  const initial = await snapshot();
  let before: readonly TableSnapshot[] = initial;
  const replays: LogReplayResult[] = [];
  for (const { log, queueUrl } of options.replays) {
    const { fifo } = await describeQueue(sqs, queueUrl);
    const result = await doubleTap({
      log: log.entries.map((entry) => toLogMessage(entry, fifo ? suffix : '')),
      queueUrl,
      tables: options.tables,
      sqs,
      dynamodb,
      timeoutSeconds: options.timeoutSeconds ?? 60,
      pollIntervalMillis: 250,
      stablePolls: 3,
      dedupWindowSeconds: 0,
      ...(options.onProgress ? { onProgress: (event) => options.onProgress?.(log.name, event) } : {}),
    });
    replays.push({
      name: log.name,
      fifo,
      doubleTap: result,
      sinceBefore: diffSnapshots(before, result.firstSnapshot),
    });
    before = result.secondSnapshot;
  }
  const overall = diffSnapshots(initial, before);
  return {
    replays,
    overall,
    changed:
      overall.length > 0 ||
      replays.some((replay) => replay.doubleTap.changed || replay.sinceBefore.length > 0),
  };
}

function toLogMessage(entry: LogEntry, dedupSuffix: string): LogMessage {
  return {
    body: entry.body,
    attributes: entry.attributes,
    ...(entry.groupId === undefined ? {} : { groupId: entry.groupId }),
    ...(entry.deduplicationId === undefined
      ? {}
      : { deduplicationId: `${entry.deduplicationId}${dedupSuffix}` }),
  };
}
