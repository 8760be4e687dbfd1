/**
 * The benchmark's CPU figures are read as a measurement only from a quiet run: the load at its
 * start and end, per vCPU, against a stated threshold; a loaded run's CPU targets are reported,
 * not judged.
 */
import { describe, expect, it } from 'vitest';
import { loadVerdict, QUIET_LOAD_PER_CPU } from '../../../bench/report/load';
import { evaluateTargets, type TargetInputs } from '../../../bench/report/targets';

describe('loadVerdict', () => {
  it('calls a run quiet when the 1-minute load stays at or below the threshold per vCPU, start and end', () => {
    expect(QUIET_LOAD_PER_CPU).toBe(0.5);
    expect(loadVerdict({ cpus: 2, loadAverageStart: [0.4, 1, 1], loadAverageEnd: [1.0, 1, 1] })).toEqual({
      quiet: true,
      text: 'A quiet run: 1-minute load 0.4 at the start and 1.0 at the end on 2 vCPU (quiet: at most 1.0, 0.5 per vCPU).',
    });
    for (const [start, end] of [
      [6.1, 0.2],
      [0.2, 1.1],
    ] as const) {
      const verdict = loadVerdict({ cpus: 2, loadAverageStart: [start], loadAverageEnd: [end] });
      expect(verdict.quiet).toBe(false);
      expect(verdict.text).toMatch(/^\*\*A loaded run\*\*: .* the CPU figures are noise, not a measurement/);
    }
  });
});

describe('the CPU targets of a loaded run', () => {
  const inputs: TargetInputs = {
    toolkitRows: ['marker'],
    featureRows: {},
    sameCalls: { marker: 'manual-marker' },
    toolkitRequests: { marker: { first: 1, duplicate: 1 } },
    requests: { marker: { first: 1, duplicate: 1 }, powertools: { first: 3, duplicate: 1 } },
    writeUnits: { marker: { first: 1, duplicate: 0 }, powertools: { first: 3, duplicate: 0 } },
    latencyP50: { marker: 12, powertools: 31 },
    dollarsFirst: { marker: 1, powertools: 2 },
    cpuRatioVsSameCalls: { marker: { median: 1.3, ciLow: 1.2, ciHigh: 1.5, method: 'bootstrap' } as never },
    initAddedMillis: { marker: 1 },
    initNoiseBandMillis: 5,
    peer: 'powertools',
  };
  const cpuTarget = (quietRun?: boolean) =>
    evaluateTargets({ ...inputs, ...(quietRun === undefined ? {} : { quietRun }) }).find(
      (target) => target.id === 'cpu-vs-same-calls',
    );

  it('judges them on a quiet run and reports them without a verdict on a loaded one', () => {
    expect(cpuTarget()).toMatchObject({ met: false, verdict: expect.stringMatching(/^missed: 1\.50x/) });
    expect(cpuTarget(true)).toMatchObject({ met: false });
    expect(cpuTarget(false)).toMatchObject({
      met: null,
      value: 1.5,
      verdict: 'not judged: a loaded run (median 1.30x, interval 1.20x–1.50x)',
    });
  });
});
