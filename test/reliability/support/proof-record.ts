/**
 * Each reliability topology's proof record (`scripts/support/proof-record.ts`): how its seed
 * reports count as messages and modes, and its fault kinds, each a name and how to count it in
 * one seed's report. A new fault kind is one more entry in its topology's `faults` (for the SQS
 * simulation, one more name in `INJECTED_FAULTS`, which the list maps). Each topology's test file
 * leaves its record in its module's `meta.proof`, for `npm run proof`.
 */
import {
  createProofRecord,
  type FaultCount,
  type ProofTopology,
} from '../../../scripts/support/proof-record';
import { PUBLISH_FAULTS } from './chain-destination';
import type { ChainSeedReport } from './chain-oracle';
import type { SeedReport } from './oracle';
import { CRASH_POINTS, INJECTED_FAULTS } from './simulation';
import type { StreamSeedReport } from './stream-oracle';
import { BAD_KINDS, STREAM_CRASH_POINTS } from './stream-simulation';

export { createProofRecord };

/** The SQS simulation (`fault-injection.test.ts`): one mode per seed, on a standard queue or a FIFO one. */
export const SQS_PROOF: ProofTopology<SeedReport> = {
  topology: 'sqs',
  transport: 'SQS (standard, and FIFO at a fifth of the messages per seed) → Lambda → DynamoDB',
  file: 'test/reliability/fault-injection.test.ts',
  // The FIFO seeds are rows of their own: `FIFO atomic`, ...
  modeOf: (report) => (report.queue === 'fifo' ? `FIFO ${report.mode}` : report.mode),
  messagesOf: (report) => report.messages,
  faults: [
    ...CRASH_POINTS.map(
      (point): FaultCount<SeedReport> => [`crash ${point}`, (report) => report.crashesByPoint[point] ?? 0],
    ),
    ...INJECTED_FAULTS.map((fault): FaultCount<SeedReport> => [fault, (report) => report.injected[fault]]),
  ],
};

/** The stream simulation (`stream-simulation.test.ts`): one source and mode per seed. */
export const STREAM_PROOF: ProofTopology<StreamSeedReport> = {
  topology: 'streams',
  transport: 'Kinesis, DynamoDB Streams and Kafka → Lambda → DynamoDB',
  file: 'test/reliability/stream-simulation.test.ts',
  modeOf: (report) => `${report.source} ${report.mode}`,
  messagesOf: (report) => report.records,
  faults: [
    ['producer duplicates', (report) => report.producerDuplicates],
    ...STREAM_CRASH_POINTS.map(
      (point): FaultCount<StreamSeedReport> => [`crash ${point}`, (report) => report.crashesByPoint[point]],
    ),
    ['lost responses', (report) => report.lostResponses],
    ['claims throttled', (report) => report.throttles],
    ['transaction conflicts', (report) => report.conflicts],
    [
      'batches beside another of their shard (two instances on one shard)',
      (report) => report.concurrentShardBatches,
    ],
    ['checkpoints lost after the function answered', (report) => report.lostCheckpoints],
    ['table-stream transactions split across batches', (report) => report.splitTransactions],
    ['table-stream transactions interleaved with another', (report) => report.interleavedTransactions],
    ['batches to the on-failure destination', (report) => report.onFailureBatches],
    ['records replayed from TRIM_HORIZON', (report) => report.replayed],
    ['dead-letter responses lost', (report) => report.deadLetterLostResponses],
    ...BAD_KINDS.map(
      (kind): FaultCount<StreamSeedReport> => [`bad data: ${kind}`, (report) => report.badRecords[kind]],
    ),
  ],
};

/** The chain (`chain-simulation.test.ts`): orders, the outbox relay and shipping in every seed. */
export const CHAIN_PROOF: ProofTopology<ChainSeedReport> = {
  topology: 'chain',
  transport: 'SQS → orders → outbox table → DynamoDB Streams → relay → SQS → shipping',
  file: 'test/reliability/chain-simulation.test.ts',
  modeOf: () => 'orders atomic, shipping entity',
  messagesOf: (report) => report.messages,
  faults: [
    ['orders crashes', (report) => report.crashesBy.orders],
    ['relay crashes', (report) => report.crashesBy.relay],
    ['shipping crashes', (report) => report.crashesBy.shipping],
    ['lost responses', (report) => report.lostResponses],
    ...PUBLISH_FAULTS.map(
      ([fault]): FaultCount<ChainSeedReport> => [
        `publish ${fault}`,
        (report) => report.publishFaults[fault] ?? 0,
      ],
    ),
    ['dead-letter sends failed', (report) => report.failedDeadLetterSends],
    ['events refused: too large for the queue', (report) => report.refusedBy['too-large-for-queue'] ?? 0],
    ['events refused: InvalidMessageContents', (report) => report.refusedBy.injected ?? 0],
    ['events refused: an invalid attribute', (report) => report.refusedBy['invalid-attribute'] ?? 0],
    ['relay batches beside another of their shard', (report) => report.concurrentShardBatches],
    ['relay checkpoints lost', (report) => report.lostCheckpoints],
    ['relay races', (report) => report.races],
    ['stream records emitted twice', (report) => report.emittedTwice],
    ['redrives', (report) => report.redrives],
  ],
};
