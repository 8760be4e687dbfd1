/**
 * The Kafka source of the stream simulation answers in partitions and offsets; the simulated
 * stream checkpoints by sequence number. The translation between them decides what a Kafka seed
 * retries, so it is tested on its own (no I/O).
 */
import { describe, expect, it } from 'vitest';
import { createSimulatedStream } from './support/simulated-stream';
import { KAFKA_TOPIC, kafkaPartitionOf, streamCheckpointOf } from './support/stream-simulation';

/** A topic of two partitions with `count` records spread over them, one lane per partition. */
function topicOf(count: number) {
  const stream = createSimulatedStream<number>({
    shardCount: 2,
    batchSize: 10,
    maxRetryAttempts: 2,
    bisectOnError: false,
    shardIdOf: (index) => `${KAFKA_TOPIC}-${index}`,
  });
  for (let index = 0; index < count; index += 1) stream.put(`customer-${index}`, index);
  return stream;
}

describe('the Kafka checkpoint of the stream simulation', () => {
  it('names, for a partition and offset, the sequence number of that record of the batch', () => {
    const stream = topicOf(12);
    const batch = stream.nextBatches(1)[0]!;
    const third = batch.entries[2]!;

    const checkpoint = streamCheckpointOf(
      { batchItemFailures: [{ itemIdentifier: { partition: batch.shardId, offset: third.offset } }] },
      batch.entries,
    );

    expect(checkpoint).toEqual({ batchItemFailures: [{ itemIdentifier: third.sequenceNumber }] });
    stream.complete(batch, { kind: 'response', itemIdentifiers: [third.sequenceNumber] });
    expect(stream.nextBatches(1)[0]!.entries[0]).toBe(third);
  });

  it('reads the partition number from the topic-partition, whatever dashes the topic holds', () => {
    expect(kafkaPartitionOf('orders-1')).toBe(1);
    expect(kafkaPartitionOf('eu-orders-v2-12')).toBe(12);
  });

  it('names no record of the batch for an offset past it or another partition, which fails the whole batch', () => {
    const stream = topicOf(12);
    const batch = stream.nextBatches(1)[0]!;
    const other = `${KAFKA_TOPIC}-${1 - kafkaPartitionOf(batch.shardId)}`;
    const past = batch.entries.at(-1)!.offset + 1;

    const checkpoint = streamCheckpointOf(
      {
        batchItemFailures: [
          { itemIdentifier: { partition: batch.shardId, offset: past } },
          { itemIdentifier: { partition: other, offset: 0 } },
        ],
      },
      batch.entries,
    );
    stream.complete(batch, {
      kind: 'response',
      itemIdentifiers: checkpoint.batchItemFailures.map((failure) => failure.itemIdentifier),
    });

    expect(checkpoint.batchItemFailures.map((failure) => failure.itemIdentifier)).toEqual([
      `${batch.shardId}:${past}`,
      `${other}:0`,
    ]);
    expect(stream.stats.retriesFromCheckpoint).toBe(1);
    expect(stream.nextBatches(1)[0]!.entries).toEqual(batch.entries);
  });
});
