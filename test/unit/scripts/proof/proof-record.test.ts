/**
 * How a topology's seed reports become its proof record (`scripts/support/proof-record.ts`).
 */
import { describe, expect, it } from 'vitest';
import {
  createProofRecord,
  type ProofTopology,
  replayCommand,
} from '../../../../scripts/support/proof-record';

describe('createProofRecord', () => {
  interface Report {
    readonly seed: number;
    readonly mode: string;
    readonly messages: number;
    readonly crashes: number;
    readonly duplicateDeliveries: number;
    readonly deadLettered: number;
    readonly duplicateEffects: number;
    readonly lost: number;
  }
  const topology: ProofTopology<Report> = {
    topology: 'sqs',
    transport: 'SQS → Lambda → DynamoDB',
    file: 'test/reliability/fault-injection.test.ts',
    modeOf: (report) => report.mode,
    messagesOf: (report) => report.messages,
    faults: [
      ['crashes', (report) => report.crashes],
      ['seed numbers', (report) => report.seed],
    ],
  };
  const seed = (seedNumber: number, mode: string): Report => ({
    seed: seedNumber,
    mode,
    messages: 100,
    crashes: seedNumber * 2,
    duplicateDeliveries: 10 * seedNumber,
    deadLettered: 3,
    duplicateEffects: 0,
    lost: 0,
  });

  it('sums the seeds of each mode, modes in the order of their first seed, each fault kind by name', () => {
    const record = createProofRecord(topology, [seed(3, 'atomic'), seed(1, 'marker'), seed(2, 'atomic')], {
      messages: 100,
      seeds: [1, 2, 3],
    });

    expect(record).toEqual({
      topology: 'sqs',
      transport: 'SQS → Lambda → DynamoDB',
      seeds: [1, 2, 3],
      messagesPerSeed: 100,
      modes: [
        {
          mode: 'marker',
          seeds: [1],
          messages: 100,
          duplicateDeliveries: 10,
          faults: { crashes: 2, 'seed numbers': 1 },
          deadLettered: 3,
          duplicateEffects: 0,
          lost: 0,
        },
        {
          mode: 'atomic',
          seeds: [2, 3],
          messages: 200,
          duplicateDeliveries: 50,
          faults: { crashes: 10, 'seed numbers': 5 },
          deadLettered: 6,
          duplicateEffects: 0,
          lost: 0,
        },
      ],
      replay:
        'RELIABILITY_MESSAGES=100 RELIABILITY_SEEDS=3 npx vitest run --project reliability test/reliability/fault-injection.test.ts',
    });
  });

  it("sums the history checker's coverage of each mode when every seed reports it", () => {
    const checked = (seedNumber: number, mode: string) => ({
      ...seed(seedNumber, mode),
      history: { keys: 90, groups: seedNumber, events: 0, violations: 0 },
    });

    const record = createProofRecord(topology, [checked(1, 'marker'), checked(2, 'marker')], {
      messages: 100,
      seeds: [1, 2],
    });

    expect(record.modes.map((mode) => mode.history)).toEqual([
      { keys: 180, groups: 3, events: 0, violations: 0 },
    ]);
  });

  it('lists a seed once when it runs in two modes, and sums what the order check covered when every seed counts it', () => {
    const checked = (seedNumber: number, mode: string) => ({
      ...seed(seedNumber, mode),
      history: { keys: 90, groups: 4, ordered: 80, events: 0, violations: 0 },
    });

    const record = createProofRecord(
      topology,
      [checked(1, 'atomic'), checked(1, 'FIFO atomic'), checked(2, 'FIFO atomic')],
      { messages: 100, seeds: [1, 2] },
    );

    expect(record.seeds).toEqual([1, 2]);
    expect(record.modes.map((mode) => [mode.mode, mode.seeds, mode.history?.ordered])).toEqual([
      ['atomic', [1], 80],
      ['FIFO atomic', [1, 2], 160],
    ]);
  });

  it('replays a single seed by its number', () => {
    expect(replayCommand('test/reliability/chain-simulation.test.ts', { messages: 40, seeds: [7] })).toBe(
      'RELIABILITY_MESSAGES=40 RELIABILITY_SEED=7 npx vitest run --project reliability test/reliability/chain-simulation.test.ts',
    );
  });
});
