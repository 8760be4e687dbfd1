/**
 * The simulated stream event source is the ground truth of the stream simulation, so it is
 * tested on its own (no I/O), against the semantics AWS documents for Lambda stream consumers.
 */
import { describe, expect, it } from 'vitest';
import { createSimulatedStream, type SimulatedStreamOptions, shardIdOf } from './support/simulated-stream';

function streamOf(options: Partial<SimulatedStreamOptions> = {}) {
  return createSimulatedStream<string>({
    shardCount: 1,
    batchSize: 4,
    maxRetryAttempts: 2,
    bisectOnError: false,
    ...options,
  });
}

/** Writes `labels` under one partition key and returns their sequence numbers. */
function put(stream: ReturnType<typeof streamOf>, ...labels: string[]): string[] {
  return labels.map((label) => stream.put('customer-1', label).sequenceNumber);
}

/** The labels of the one batch that runs next. */
function nextLabels(stream: ReturnType<typeof streamOf>) {
  const batches = stream.nextBatches();
  expect(batches).toHaveLength(1);
  return { batch: batches[0]!, labels: batches[0]!.entries.map((entry) => entry.meta) };
}

const ok = { kind: 'response', itemIdentifiers: [] } as const;
const error = { kind: 'error' } as const;

describe('simulated stream event source', () => {
  it('gives every write a new, increasing sequence number, the same data written twice included', () => {
    const stream = streamOf();
    const [first, second, again] = put(stream, 'a', 'b', 'a');

    expect(first! < second! && second! < again!).toBe(true);
    expect(stream.entries.map((entry) => entry.meta)).toEqual(['a', 'b', 'a']);
  });

  it('delivers a shard in order, batchSize records at a time, and moves past a batch with an empty failure list', () => {
    const stream = streamOf();
    put(stream, 'a', 'b', 'c', 'd', 'e', 'f');

    const first = nextLabels(stream);
    expect(stream.nextBatches()).toEqual([]);
    stream.complete(first.batch, ok);
    const second = nextLabels(stream);
    stream.complete(second.batch, ok);

    expect([first.labels, second.labels]).toEqual([
      ['a', 'b', 'c', 'd'],
      ['e', 'f'],
    ]);
    expect(stream.hasWork()).toBe(false);
    expect([...stream.fates().values()]).toEqual(Array(6).fill('acknowledged'));
  });

  it('resumes from the lowest sequence number a partial batch response names', () => {
    const stream = streamOf();
    const [, b, c] = put(stream, 'a', 'b', 'c', 'd');

    const first = nextLabels(stream);
    stream.complete(first.batch, { kind: 'response', itemIdentifiers: [c!, b!] });
    const retried = nextLabels(stream);

    expect(retried.labels).toEqual(['b', 'c', 'd']);
    expect(retried.batch.retry).toBe(1);
    expect(stream.fates().get(stream.entries[0]!.sequenceNumber)).toBe('acknowledged');
    expect(stream.stats.retriesFromCheckpoint).toBe(1);
  });

  it('retries the whole batch when the function errors, or when a failure names no record of the batch', () => {
    const stream = streamOf();
    put(stream, 'a', 'b');

    stream.complete(nextLabels(stream).batch, error);
    const afterError = nextLabels(stream);
    stream.complete(afterError.batch, { kind: 'response', itemIdentifiers: ['not-a-sequence-number'] });
    const afterBadName = nextLabels(stream);

    expect([afterError.labels, afterBadName.labels]).toEqual([
      ['a', 'b'],
      ['a', 'b'],
    ]);
    expect(afterBadName.batch.retry).toBe(2);
  });

  it('splits a failing batch in two with bisectOnError and runs the halves one after the other', () => {
    const stream = streamOf({ bisectOnError: true, maxRetryAttempts: 10 });
    put(stream, 'a', 'b', 'c', 'd', 'e');

    stream.complete(nextLabels(stream).batch, error);
    const firstHalf = nextLabels(stream);
    stream.complete(firstHalf.batch, error);
    const quarter = nextLabels(stream);
    stream.complete(quarter.batch, ok);
    const secondQuarter = nextLabels(stream);
    stream.complete(secondQuarter.batch, ok);
    const secondHalf = nextLabels(stream);
    stream.complete(secondHalf.batch, ok);
    const rest = nextLabels(stream);

    expect([firstHalf.labels, quarter.labels, secondQuarter.labels, secondHalf.labels, rest.labels]).toEqual([
      ['a', 'b'],
      ['a'],
      ['b'],
      ['c', 'd'],
      ['e'],
    ]);
    expect(stream.stats.bisects).toBe(2);
  });

  it('discards the batch from the checkpoint after maxRetryAttempts, names its shard and sequence range to the on-failure destination, and moves on', () => {
    const stream = streamOf({ maxRetryAttempts: 2 });
    const [, b, c, d, e, f] = put(stream, 'a', 'b', 'c', 'd', 'e', 'f');

    const attempts: string[][] = [];
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const { batch, labels } = nextLabels(stream);
      attempts.push(labels);
      stream.complete(batch, { kind: 'response', itemIdentifiers: [b!] });
    }
    const next = nextLabels(stream);

    // A retry reads up to batchSize records from the checkpoint.
    expect(attempts).toEqual([
      ['a', 'b', 'c', 'd'],
      ['b', 'c', 'd', 'e'],
      ['b', 'c', 'd', 'e'],
    ]);
    expect(stream.onFailure).toEqual([
      {
        condition: 'RetryAttemptsExhausted',
        shardId: shardIdOf(0),
        startSequenceNumber: b,
        endSequenceNumber: e,
        batchSize: 4,
      },
    ]);
    expect([b, c, d, e].map((sequenceNumber) => stream.fates().get(sequenceNumber!))).toEqual([
      'reported',
      'reported',
      'reported',
      'reported',
    ]);
    expect(next.labels).toEqual(['f']);
    expect(next.batch.retry).toBe(0);
    expect(stream.fates().get(f!)).toBe('pending');
  });

  it('runs one batch per lane at a time, at most as many as asked for, keeping each partition key in order, with a parallelization factor', () => {
    const stream = streamOf({ parallelization: 4, batchSize: 100 });
    const keys = Array.from({ length: 16 }, (_, index) => `customer-${index}`);
    for (const round of [1, 2]) for (const key of keys) stream.put(key, `${key}#${round}`);

    // As many as there are idle instances: one now, the others next.
    const first = stream.nextBatches(1);
    const batches = [...first, ...stream.nextBatches()];
    const lanes = new Set(batches.map((batch) => batch.lane));

    expect(first).toHaveLength(1);

    expect(lanes.size).toBe(batches.length);
    expect(batches.length).toBeGreaterThan(1);
    expect(stream.nextBatches()).toEqual([]);
    for (const batch of batches) {
      for (const key of new Set(batch.entries.map((entry) => entry.partitionKey))) {
        expect(
          batch.entries.filter((entry) => entry.partitionKey === key).map((entry) => entry.meta),
        ).toEqual([`${key}#1`, `${key}#2`]);
      }
    }
    expect(batches.flatMap((batch) => batch.entries)).toHaveLength(32);
  });

  it('delivers the same batch again, without counting a retry, when the checkpoint of an answered batch is lost', () => {
    const stream = streamOf({ maxRetryAttempts: 0 });
    put(stream, 'a', 'b', 'c', 'd', 'e');
    const first = nextLabels(stream);

    stream.complete(first.batch, { ...ok, checkpointLost: true });
    const again = nextLabels(stream);
    stream.complete(again.batch, ok);

    expect(again.labels).toEqual(first.labels);
    expect(again.batch.retry).toBe(0);
    expect(stream.stats).toMatchObject({ checkpointsLost: 1, retriesFromCheckpoint: 0, discarded: 0 });
    expect(nextLabels(stream).labels).toEqual(['e']);
  });

  it('puts each record on the lane the laneOf hook names, whatever its partition key', () => {
    const stream = streamOf({ parallelization: 2, laneOf: (_key, position) => position % 2 });
    put(stream, 'a', 'b', 'c', 'd');

    const lanes = stream.nextBatches().map((batch) => [batch.lane, batch.entries.map((entry) => entry.meta)]);

    expect(lanes).toEqual([
      [`${shardIdOf(0)}/1`, ['a', 'c']],
      [`${shardIdOf(0)}/0`, ['b', 'd']],
    ]);
  });

  it('names shards with the shardIdOf option and gives each record its offset in its shard, from 0 in write order', () => {
    const stream = streamOf({ shardCount: 2, shardIdOf: (index) => `orders-${index}` });
    const keys = Array.from({ length: 12 }, (_, index) => `customer-${index}`);
    for (const key of keys) stream.put(key, key);

    const offsetsOf = (shardId: string) =>
      stream.entries.filter((entry) => entry.shardId === shardId).map((entry) => entry.offset);

    expect(new Set(stream.entries.map((entry) => entry.shardId))).toEqual(new Set(['orders-0', 'orders-1']));
    for (const shardId of ['orders-0', 'orders-1']) {
      const offsets = offsetsOf(shardId);
      expect(offsets).toEqual(offsets.map((_, index) => index));
    }
  });

  it('delivers every record again after a replay from TRIM_HORIZON', () => {
    const stream = streamOf();
    put(stream, 'a', 'b');
    stream.complete(nextLabels(stream).batch, ok);

    stream.replayFromTrimHorizon();

    expect([...stream.fates().values()]).toEqual(['pending', 'pending']);
    expect(nextLabels(stream).labels).toEqual(['a', 'b']);
  });
});
