/**
 * The proof record of a reliability run (`npm run proof`): per topology (SQS, streams, the chain)
 * and per mode, the messages, the duplicates delivered, each fault kind injected with its count,
 * the messages dead-lettered, the duplicate effects and the messages lost, summed from the seeds'
 * reports, and the command that replays the run. Each topology's test file builds its record
 * (`test/reliability/support/proof-record.ts` names each topology's fault kinds) and leaves it in
 * its module's `meta.proof`; `test/support/proof-reporter.ts` writes the records to the
 * directory named by {@link PROOF_DIR_VARIABLE}, and `scripts/proof.ts` renders
 * `docs/reliability.md` from them. Shared by the scripts and the tests; not part of the package.
 */

/** The environment variable naming the directory the test run writes its proof records to. */
export const PROOF_DIR_VARIABLE = 'RELIABILITY_PROOF_DIR';

/** One fault kind: its name in the report, and its count in one seed's report. */
export type FaultCount<Report> = readonly [name: string, count: (report: Report) => number];

/** The figures of one mode (or mode and source) of a topology, summed over its seeds. */
export interface ModeProof {
  readonly mode: string;
  readonly seeds: readonly number[];
  readonly messages: number;
  /** Deliveries beyond the first of each message. */
  readonly duplicateDeliveries: number;
  /** Each fault kind injected, by name, in the topology's order. */
  readonly faults: Readonly<Record<string, number>>;
  /** Messages dead-lettered with a reason (poison input, bad data, refused events). */
  readonly deadLettered: number;
  readonly duplicateEffects: number;
  readonly lost: number;
  /**
   * What the history checker covered (`test/reliability/support/history.ts`), summed over the
   * seeds; absent from records written before it existed.
   */
  readonly history?: HistoryProof;
}

/** The history checker's coverage: keys followed, groups whose order was checked, events followed downstream, violations. */
export interface HistoryProof {
  readonly keys: number;
  /** Ordered groups with an effect: FIFO message groups, stream partition keys. */
  readonly groups: number;
  /**
   * First effects of a key whose place in their group's order was checked; absent from records
   * written before it was counted.
   */
  readonly ordered?: number;
  readonly events: number;
  readonly violations: number;
}

/** One topology's run: what ran, at what size, its figures per mode, and how to replay it. */
export interface ProofRecord {
  /** `sqs`, `streams` or `chain`. */
  readonly topology: string;
  /** What carries the messages, from source to effect. */
  readonly transport: string;
  readonly seeds: readonly number[];
  readonly messagesPerSeed: number;
  readonly modes: readonly ModeProof[];
  /** The command that runs this topology's seeds again, at this size. */
  readonly replay: string;
}

/** What every seed report has, whatever its topology. */
export interface CommonReport {
  readonly seed: number;
  readonly duplicateDeliveries: number;
  readonly deadLettered: number;
  readonly duplicateEffects: number;
  readonly lost: number;
  readonly history?: HistoryProof;
}

/** How a topology's seed reports become its proof record. */
export interface ProofTopology<Report extends CommonReport> {
  readonly topology: string;
  readonly transport: string;
  /** The test file that runs it, from the repository root. */
  readonly file: string;
  readonly modeOf: (report: Report) => string;
  readonly messagesOf: (report: Report) => number;
  readonly faults: readonly FaultCount<Report>[];
}

/** The size a test file ran at: messages per seed, and its seeds (1..n, or one seed alone). */
export interface RunSize {
  readonly messages: number;
  readonly seeds: readonly number[];
}

/** The command that runs `file`'s seeds again at `size`. */
export function replayCommand(file: string, size: RunSize): string {
  const [first] = size.seeds;
  const seeds =
    size.seeds.length === 1 && first !== 1
      ? `RELIABILITY_SEED=${first}`
      : `RELIABILITY_SEEDS=${size.seeds.length}`;
  return `RELIABILITY_MESSAGES=${size.messages} ${seeds} npx vitest run --project reliability ${file}`;
}

/** Sums `reports` per mode (modes in the order of their first seed) into `topology`'s record. */
export function createProofRecord<Report extends CommonReport>(
  topology: ProofTopology<Report>,
  reports: readonly Report[],
  size: RunSize,
): ProofRecord {
  const bySeed = [...reports].sort((a, b) => a.seed - b.seed);
  const modes = [...new Set(bySeed.map(topology.modeOf))];
  return {
    topology: topology.topology,
    transport: topology.transport,
    // Once each: a seed may run in two modes of a topology (SQS seed 1 on a standard and a FIFO queue).
    seeds: [...new Set(bySeed.map((report) => report.seed))],
    messagesPerSeed: size.messages,
    modes: modes.map((mode) => {
      const seeds = bySeed.filter((report) => topology.modeOf(report) === mode);
      const sum = (count: (report: Report) => number) =>
        seeds.reduce((total, report) => total + count(report), 0);
      return {
        mode,
        seeds: seeds.map((report) => report.seed),
        messages: sum(topology.messagesOf),
        duplicateDeliveries: sum((report) => report.duplicateDeliveries),
        faults: Object.fromEntries(topology.faults.map(([name, count]) => [name, sum(count)])),
        deadLettered: sum((report) => report.deadLettered),
        duplicateEffects: sum((report) => report.duplicateEffects),
        lost: sum((report) => report.lost),
        ...(seeds.every((report) => report.history !== undefined)
          ? {
              history: {
                keys: sum((report) => report.history!.keys),
                groups: sum((report) => report.history!.groups),
                ...(seeds.every((report) => report.history!.ordered !== undefined)
                  ? { ordered: sum((report) => report.history!.ordered!) }
                  : {}),
                events: sum((report) => report.history!.events),
                violations: sum((report) => report.history!.violations),
              },
            }
          : {}),
      };
    }),
    replay: replayCommand(topology.file, size),
  };
}
