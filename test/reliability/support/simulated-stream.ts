/**
 * An in-process stream event source (a Kinesis or DynamoDB Streams event source mapping with
 * `ReportBatchItemFailures`), with the semantics AWS documents for Lambda stream consumers:
 *
 * - a shard keeps its records in order, each under a sequence number that increases with every
 *   write (the same data written twice gets two sequence numbers) and at an offset, its position
 *   in the shard from 0 (a Kafka partition is such a shard: `shardIdOf` names it `<topic>-<n>`);
 * - a batch holds up to `batchSize` records of one shard from its checkpoint on; with a
 *   `parallelization` factor above 1 a shard runs that many batches at once, one per lane, and a
 *   record's lane is its partition key's hash (order is kept per partition key, not per shard);
 * - a partial batch response checkpoints the lane at the lowest sequence number it names: the
 *   records before it are done, the batch is retried from it; an empty list checkpoints the
 *   whole batch; a name that is not a sequence number of the batch fails the whole batch;
 * - a function error (a thrown error, a crashed invocation) retries the whole batch; with
 *   `bisectOnError` a batch of two or more records is split in two and the halves run one after
 *   the other;
 * - after `maxRetryAttempts` retries at one checkpoint the batch is discarded from the checkpoint
 *   on, and the on-failure destination gets its shard and first and last sequence numbers, never
 *   the records; the lane moves on. (The model counts retries per checkpoint: the count restarts
 *   when the checkpoint moves. A bisect counts as a retry.)
 * - a checkpoint that does not persist (the function answered, the mapping failed to store where
 *   the lane is: `checkpointLost`) leaves the lane where it was: the same batch comes again, and
 *   no retry is counted (the function did not fail);
 * - `replayFromTrimHorizon()` starts every lane again at the start of the retention, as a new
 *   mapping or a reset iterator does: every record comes again.
 *
 * Not modelled: `MaximumRecordAgeInSeconds`, resharding, the batching window. Nothing here does
 * I/O or reads a clock: the driver decides when batches run.
 */
import { hashOf } from './prng';

/** One record of a shard, with whatever the test attaches (`meta`). */
export interface StreamEntry<TMeta> {
  readonly shardId: string;
  readonly sequenceNumber: string;
  /** Its position in its shard, from 0 in write order: a Kafka record's offset in its partition. */
  readonly offset: number;
  readonly partitionKey: string;
  readonly meta: TMeta;
}

/** What happened to a record in the current pass over the stream. */
export type EntryFate = 'pending' | 'acknowledged' | 'reported';

/** One batch handed to the function. */
export interface StreamBatch<TMeta> {
  readonly id: number;
  /** `<shard id>/<lane>`. */
  readonly lane: string;
  readonly shardId: string;
  readonly entries: readonly StreamEntry<TMeta>[];
  /** Retries so far at this batch's checkpoint (0 on the first attempt). */
  readonly retry: number;
}

/** How a batch ended, as Lambda sees it. */
export type BatchResult =
  | {
      readonly kind: 'response';
      readonly itemIdentifiers: readonly string[];
      /** The function answered, but the checkpoint it implies was not stored: the batch comes again. */
      readonly checkpointLost?: boolean;
    }
  | { readonly kind: 'error' };

/** What the on-failure destination gets for a discarded batch (the records are not in it). */
export interface OnFailureRecord {
  readonly condition: 'RetryAttemptsExhausted';
  readonly shardId: string;
  readonly startSequenceNumber: string;
  readonly endSequenceNumber: string;
  readonly batchSize: number;
}

/** Options of {@link createSimulatedStream}. */
export interface SimulatedStreamOptions {
  readonly shardCount: number;
  readonly batchSize: number;
  readonly maxRetryAttempts: number;
  readonly bisectOnError: boolean;
  /** Concurrent batches per shard, by partition key. @default 1 */
  readonly parallelization?: number;
  /**
   * Test hook: the lane (0 to `parallelization` - 1) of the `position`th record put, in place of
   * its partition key's hash, so a test can spread one partition key over lanes on purpose.
   */
  readonly laneOf?: (partitionKey: string, position: number) => number;
  /** The id of shard `index` (a Kafka topic-partition: `orders-0`). @default the Kinesis {@link shardIdOf} */
  readonly shardIdOf?: (index: number) => string;
}

/** Counts of what the event source did. */
export interface StreamStats {
  batches: number;
  /** Batches run again from a checkpoint (a partial batch response or a function error). */
  retriesFromCheckpoint: number;
  bisects: number;
  /** Batches discarded after `maxRetryAttempts`, reported to the on-failure destination. */
  discarded: number;
  /** Batches answered whose checkpoint was not stored, and so ran again. */
  checkpointsLost: number;
}

/** The event source. */
export interface SimulatedStream<TMeta> {
  /** Writes a record (a `PutRecord`, or one entry of `PutRecords`) and returns where it landed. */
  put(partitionKey: string, meta: TMeta): StreamEntry<TMeta>;
  /** The next batch of every lane that has records and no batch running, at most `limit` of them. */
  nextBatches(limit?: number): StreamBatch<TMeta>[];
  /** Applies how a batch ended: moves its lane's checkpoint, bisects, retries or discards. */
  complete(batch: StreamBatch<TMeta>, result: BatchResult): void;
  /** True while a lane has a batch running or records after its checkpoint. */
  hasWork(): boolean;
  /** Every lane starts again at its first record; fates start again at `pending`. */
  replayFromTrimHorizon(): void;
  /** The fate of every record in the current pass, by sequence number. */
  fates(): ReadonlyMap<string, EntryFate>;
  /** Every record, in write order. */
  readonly entries: readonly StreamEntry<TMeta>[];
  /** What the on-failure destination received, in order. */
  readonly onFailure: readonly OnFailureRecord[];
  readonly stats: StreamStats;
}

interface Lane<TMeta> {
  readonly name: string;
  readonly shardId: string;
  readonly entries: StreamEntry<TMeta>[];
  checkpoint: number;
  /** Bisected windows still to run, `[start, end)` in `entries`, the first one from the checkpoint. */
  windows: [number, number][];
  retry: number;
  running: StreamBatch<TMeta> | undefined;
}

/** The shard id of shard `index`, as Kinesis names it. */
export function shardIdOf(index: number): string {
  return `shardId-${String(index).padStart(12, '0')}`;
}

/** Creates an empty stream. */
export function createSimulatedStream<TMeta>(options: SimulatedStreamOptions): SimulatedStream<TMeta> {
  const {
    shardCount,
    batchSize,
    maxRetryAttempts,
    bisectOnError,
    parallelization = 1,
    laneOf: tamperLane,
    shardIdOf: nameOf = shardIdOf,
  } = options;
  const lanes = new Map<string, Lane<TMeta>>();
  const entries: StreamEntry<TMeta>[] = [];
  const fate = new Map<string, EntryFate>();
  /** Records written to each shard so far: the next one's offset. */
  const written = new Map<string, number>();
  const onFailure: OnFailureRecord[] = [];
  const stats: StreamStats = {
    batches: 0,
    retriesFromCheckpoint: 0,
    bisects: 0,
    discarded: 0,
    checkpointsLost: 0,
  };
  let sequence = 0;
  let batchId = 0;

  const laneOf = (partitionKey: string): Lane<TMeta> => {
    const hash = hashOf('partition key', partitionKey);
    const shardId = nameOf(hash % shardCount);
    const index = tamperLane?.(partitionKey, sequence) ?? Math.floor(hash / shardCount) % parallelization;
    const name = `${shardId}/${index}`;
    let lane = lanes.get(name);
    if (lane === undefined) {
      lane = { name, shardId, entries: [], checkpoint: 0, windows: [], retry: 0, running: undefined };
      lanes.set(name, lane);
    }
    return lane;
  };

  /** The window the lane runs next: a bisected one, or a full batch from the checkpoint. */
  const windowOf = (lane: Lane<TMeta>): [number, number] =>
    lane.windows[0] ?? [lane.checkpoint, Math.min(lane.checkpoint + batchSize, lane.entries.length)];

  const advance = (lane: Lane<TMeta>, to: number, how: EntryFate): void => {
    for (let index = lane.checkpoint; index < to; index += 1) {
      fate.set(lane.entries[index]!.sequenceNumber, how);
    }
    if (to > lane.checkpoint) lane.retry = 0;
    lane.checkpoint = to;
    while (lane.windows[0] !== undefined && lane.windows[0][1] <= to) lane.windows.shift();
    if (lane.windows[0] !== undefined) lane.windows[0][0] = Math.max(lane.windows[0][0], to);
  };

  /** One more retry at the checkpoint, or the batch discarded once the retries are used up. */
  const retryOrDiscard = (lane: Lane<TMeta>, end: number): boolean => {
    lane.retry += 1;
    if (lane.retry <= maxRetryAttempts) {
      stats.retriesFromCheckpoint += 1;
      return true;
    }
    const first = lane.entries[lane.checkpoint]!;
    const last = lane.entries[end - 1]!;
    onFailure.push({
      condition: 'RetryAttemptsExhausted',
      shardId: lane.shardId,
      startSequenceNumber: first.sequenceNumber,
      endSequenceNumber: last.sequenceNumber,
      batchSize: end - lane.checkpoint,
    });
    stats.discarded += 1;
    advance(lane, end, 'reported');
    return false;
  };

  return {
    put(partitionKey, meta) {
      sequence += 1;
      const lane = laneOf(partitionKey);
      const offset = written.get(lane.shardId) ?? 0;
      written.set(lane.shardId, offset + 1);
      const entry: StreamEntry<TMeta> = {
        shardId: lane.shardId,
        // Fixed width, so sequence numbers order as strings do.
        sequenceNumber: `4959${String(sequence).padStart(26, '0')}`,
        offset,
        partitionKey,
        meta,
      };
      lane.entries.push(entry);
      entries.push(entry);
      fate.set(entry.sequenceNumber, 'pending');
      return entry;
    },
    nextBatches(limit = Number.POSITIVE_INFINITY) {
      const batches: StreamBatch<TMeta>[] = [];
      for (const lane of lanes.values()) {
        if (batches.length >= limit) break;
        if (lane.running !== undefined || lane.checkpoint >= lane.entries.length) continue;
        const [start, end] = windowOf(lane);
        const batch: StreamBatch<TMeta> = {
          id: ++batchId,
          lane: lane.name,
          shardId: lane.shardId,
          entries: lane.entries.slice(start, end),
          retry: lane.retry,
        };
        lane.running = batch;
        stats.batches += 1;
        batches.push(batch);
      }
      return batches;
    },
    complete(batch, result) {
      const lane = lanes.get(batch.lane)!;
      if (lane.running !== batch) throw new Error(`Batch ${batch.id} is not the one running on ${lane.name}`);
      lane.running = undefined;
      if (result.kind === 'response' && result.checkpointLost === true) {
        stats.checkpointsLost += 1;
        return;
      }
      const [start, end] = windowOf(lane);
      const sequenceNumbers = batch.entries.map((entry) => entry.sequenceNumber);
      const named = result.kind === 'response' ? result.itemIdentifiers : [];
      // A name that is not a sequence number of the batch fails the whole batch, as on AWS.
      const failed = result.kind === 'error' || named.some((name) => !sequenceNumbers.includes(name));
      if (!failed && named.length === 0) {
        advance(lane, end, 'acknowledged');
        return;
      }
      if (!failed) {
        const lowest = [...named].sort()[0]!;
        advance(lane, start + sequenceNumbers.indexOf(lowest), 'acknowledged');
        retryOrDiscard(lane, end);
        return;
      }
      if (!retryOrDiscard(lane, end)) return;
      if (bisectOnError && end - start > 1) {
        const middle = start + Math.ceil((end - start) / 2);
        lane.windows.splice(0, lane.windows[0] === undefined ? 0 : 1, [start, middle], [middle, end]);
        stats.bisects += 1;
      }
    },
    hasWork: () =>
      [...lanes.values()].some((lane) => lane.running !== undefined || lane.checkpoint < lane.entries.length),
    replayFromTrimHorizon() {
      for (const lane of lanes.values()) {
        if (lane.running !== undefined) throw new Error(`A batch still runs on ${lane.name}`);
        lane.checkpoint = 0;
        lane.windows = [];
        lane.retry = 0;
      }
      for (const entry of entries) fate.set(entry.sequenceNumber, 'pending');
    },
    fates: () => fate,
    entries,
    onFailure,
    stats,
  };
}
