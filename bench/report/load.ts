/**
 * Whether a run's CPU figures can be read as a measurement: client CPU per record is timed on the
 * machine the benchmark runs on, and on a shared 2-core machine other work inflates it unevenly
 * between implementations (the ratios' intervals widen, their medians move).
 */

/**
 * The 1-minute load average per vCPU at or below which a run counts as quiet, at its start and at
 * its end: half the cores idle leaves the implementations' turns (every 5 batches) on a core of
 * their own.
 */
export const QUIET_LOAD_PER_CPU = 0.5;

/** The machine facts a verdict is read from (`BenchResults.environment`). */
export interface LoadFacts {
  readonly cpus: number;
  /** `os.loadavg()` when the run started: 1, 5 and 15 minutes. */
  readonly loadAverageStart: readonly number[];
  /** `os.loadavg()` when it ended. */
  readonly loadAverageEnd: readonly number[];
}

/** A run's load, judged against {@link QUIET_LOAD_PER_CPU}. */
export interface LoadVerdict {
  /** Both 1-minute figures at or below the threshold. */
  readonly quiet: boolean;
  /** One sentence for the report, with the figures. */
  readonly text: string;
}

/** Judges the 1-minute load average at the run's start and end against {@link QUIET_LOAD_PER_CPU}. */
export function loadVerdict(facts: LoadFacts): LoadVerdict {
  const cpus = Math.max(1, facts.cpus);
  const start = facts.loadAverageStart[0] ?? Number.NaN;
  const end = facts.loadAverageEnd[0] ?? Number.NaN;
  const limit = QUIET_LOAD_PER_CPU * cpus;
  const quiet = start <= limit && end <= limit;
  const figures = `1-minute load ${start.toFixed(1)} at the start and ${end.toFixed(1)} at the end on ${cpus} vCPU (quiet: at most ${limit.toFixed(1)}, ${QUIET_LOAD_PER_CPU} per vCPU)`;
  return {
    quiet,
    text: quiet
      ? `A quiet run: ${figures}.`
      : `**A loaded run**: ${figures}. Other work shared the cores, so the CPU figures are noise, not a measurement (a run of this version reports its CPU targets without a verdict); run \`npm run bench\` again on a quiet machine.`,
  };
}
