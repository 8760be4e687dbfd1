/**
 * The reliability report's renderers (`scripts/proof/report.ts`): what `npm run proof` refuses to
 * publish, and the page's table of one topology (a row per figure and fault kind, a column per
 * mode and the total).
 */
import { describe, expect, it } from 'vitest';
import { type ReliabilityReport, renderMarkdown, violationsOf } from '../../../../scripts/proof/report';
import type { ModeProof, ProofRecord } from '../../../../scripts/support/proof-record';

const mode = (name: string, figures: Partial<ModeProof> = {}): ModeProof => ({
  mode: name,
  seeds: [1],
  messages: 10,
  duplicateDeliveries: 0,
  faults: {},
  deadLettered: 0,
  duplicateEffects: 0,
  lost: 0,
  ...figures,
});
const record = (topology: string, modes: readonly ModeProof[]): ProofRecord => ({
  topology,
  transport: 'SQS → Lambda → DynamoDB',
  seeds: modes.flatMap((each) => each.seeds),
  messagesPerSeed: 10,
  modes,
  replay: `RELIABILITY_MESSAGES=10 RELIABILITY_SEEDS=2 npx vitest run --project reliability ${topology}.test.ts`,
});

describe('violationsOf', () => {
  it('names every topology and mode with a duplicate effect or a lost message', () => {
    expect(
      violationsOf({
        topologies: [
          record('sqs', [mode('atomic'), mode('marker', { duplicateEffects: 1 })]),
          record('chain', [mode('orders atomic, shipping entity', { lost: 2 })]),
        ],
      }),
    ).toEqual([
      'sqs marker: 1 duplicate effects, 0 lost',
      'chain orders atomic, shipping entity: 0 duplicate effects, 2 lost',
    ]);
  });
});

describe('renderMarkdown', () => {
  const base: Omit<ReliabilityReport, 'topologies'> = {
    schemaVersion: 1,
    command: 'npm run proof -- --messages 10 --seeds 2',
    messagesPerSeed: 10,
    seedsPerTopology: 2,
    startedAt: '2026-12-02T06:00:00.000Z',
    runSeconds: 3725,
    commit: 'abc',
    uncommittedChanges: false,
    machine: {
      cpuModel: 'CPU',
      cpus: 2,
      platform: 'linux x64',
      node: 'v20',
      loadAverageStart: [1, 2, 3],
      loadAverageEnd: [0.5, 1.25, 2],
    },
  };

  it("shows a topology's figures per mode and in total, one row per fault kind", () => {
    const report: ReliabilityReport = {
      ...base,
      topologies: [
        record('sqs', [
          mode('marker', {
            duplicateDeliveries: 1200,
            faults: { crashes: 3, 'lost responses': 0 },
            deadLettered: 1,
          }),
          mode('atomic', { seeds: [2], faults: { crashes: 4, 'lost responses': 5 } }),
        ]),
      ],
    };

    const page = renderMarkdown(report);

    expect(page).toContain(
      [
        '| | marker | atomic | total |',
        '|---|---:|---:|---:|',
        '| seeds | 1 | 2 | 1, 2 |',
        '| messages | 10 | 10 | 20 |',
        '| duplicates delivered | 1,200 | 0 | 1,200 |',
        '| crashes | 3 | 4 | 7 |',
        '| lost responses | 0 | 5 | 5 |',
        '| dead-lettered with a reason | 1 | 0 | 1 |',
        '| **duplicate effects** | 0 | 0 | 0 |',
        '| **lost** | 0 | 0 | 0 |',
      ].join('\n'),
    );
    expect(page).toContain(
      '**20 messages, 1,200 duplicates delivered, 2 of 2 fault kinds injected: 0 duplicate effects, 0 lost.**',
    );
    expect(page).toContain('| run time | 1 h 2 min 5 s |');
    // Written before the history checker: no mode carries its coverage, the page says nothing of it.
    expect(page).not.toContain('history');
    expect(page).toContain(
      '| load average (1 / 5 / 15 min) | 1.00 / 2.00 / 3.00 at the start, 0.50 / 1.25 / 2.00 at the end |',
    );
  });

  it('says what the history checker covered when every mode carries it, and that nothing broke it', () => {
    const checked = (name: string, history: NonNullable<ModeProof['history']>) => mode(name, { history });
    const report = {
      ...base,
      topologies: [
        record('sqs', [checked('atomic', { keys: 1200, groups: 0, events: 0, violations: 0 })]),
        record('streams', [checked('kinesis atomic', { keys: 300, groups: 24, events: 0, violations: 0 })]),
        record('chain', [checked('orders atomic', { keys: 500, groups: 0, events: 640, violations: 0 })]),
      ],
    };

    expect(renderMarkdown(report)).toContain(
      "\n\nEvery seed's history (its deliveries, the effects in commit order, its dead letters) was checked as well: " +
        '2,000 keys, each effect applied once per live window; every message applied with its payload or dead-lettered with a reason; ' +
        '24 partition keys, their effects in the order of their records; 640 events of the chain, each applied once downstream or dead-lettered: 0 violations.\n\n',
    );
  });

  it('counts the groups and first effects checked in order, per mode and in the sentence, when every mode counts them', () => {
    const checked = (name: string, history: NonNullable<ModeProof['history']>) => mode(name, { history });
    const report = {
      ...base,
      topologies: [
        record('sqs', [
          checked('atomic', { keys: 1200, groups: 0, ordered: 0, events: 0, violations: 0 }),
          checked('FIFO atomic', { keys: 190, groups: 25, ordered: 170, events: 0, violations: 0 }),
        ]),
        record('streams', [
          checked('kinesis atomic', { keys: 300, groups: 24, ordered: 290, events: 0, violations: 0 }),
        ]),
      ],
    };

    const page = renderMarkdown(report);

    expect(page).toContain('| groups checked in order | 0 | 25 | 25 |');
    expect(page).toContain('| first effects checked in order | 0 | 170 | 170 |');
    expect(page).toContain(
      '49 partition keys and FIFO message groups, 460 first effects in the order of their records; ',
    );
  });
});
