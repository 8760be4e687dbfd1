/**
 * DESIGN.md's targets, judged from one run's figures. Every verdict states the margin, met
 * or missed.
 */
import type { TargetResult } from './results';

/** Request floors per toolkit mode: the toolkit's own requests on first delivery and on a duplicate. */
export const REQUEST_FLOORS: Readonly<
  Record<string, { readonly first: number; readonly duplicate: number }>
> = {
  marker: { first: 1, duplicate: 1 },
  atomic: { first: 1, duplicate: 1 },
  entity: { first: 1, duplicate: 1 },
  'two-phase': { first: 2, duplicate: 1 },
};

/** CPU per record at most this multiple of the baseline. */
export const CPU_RATIO_LIMIT = 1.1;
/** Records per second at least this multiple of Powertools (stub transport). */
export const THROUGHPUT_RATIO_LIMIT = 1.7;
/** The toolkit's own runtime code, minified, at most this many bytes (15 KB, 1 KB = 1024 bytes). */
export const RUNTIME_BYTES_LIMIT = 15 * 1024;

const percent = (value: number): string => `${Math.abs(value * 100).toFixed(0)}%`;

/** "met: 1.05x (limit <= 1.10x, 5% under)" or "missed: ...". */
export function judge(
  value: number | null,
  limit: number,
  comparison: 'at-most' | 'at-least',
  format: (value: number) => string,
): { readonly met: boolean | null; readonly verdict: string } {
  if (value === null) return { met: null, verdict: 'not measured' };
  if (!Number.isFinite(value) || value <= 0)
    return { met: null, verdict: `not measured reliably (${value})` };
  const met = comparison === 'at-most' ? value <= limit : value >= limit;
  const relation = comparison === 'at-most' ? '<=' : '>=';
  const margin = value / limit - 1;
  const how =
    comparison === 'at-most'
      ? `${percent(margin)} ${margin <= 0 ? 'under' : 'over'} the limit`
      : `${percent(margin)} ${margin >= 0 ? 'above' : 'below'} the limit`;
  return {
    met,
    verdict: `${met ? 'met' : 'missed'}: ${format(value)} (limit ${relation} ${format(limit)}, ${how})`,
  };
}

/** A ratio's median over repetitions and its range. */
export interface RatioRange {
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

/** Judges a ratio's median, and says when its per-repetition range straddles the limit. */
function judgeRatio(
  range: RatioRange | undefined,
  limit: number,
  comparison: 'at-most' | 'at-least',
): { readonly met: boolean | null; readonly verdict: string } {
  const judged = judge(range?.median ?? null, limit, comparison, times);
  if (!range || judged.met === null || !(range.min <= limit && limit <= range.max)) return judged;
  return {
    ...judged,
    verdict: `${judged.verdict}; per-repetition ratios ${times(range.min)}–${times(range.max)} straddle the limit, so this is within the noise of this run`,
  };
}

/** The figures targets are judged on. */
export interface TargetInputs {
  /** Toolkit modes measured, by id (`marker`, `atomic`, ...). */
  readonly modes: readonly string[];
  /** Median requests per message sent by the toolkit itself, by mode and case. */
  readonly toolkitRequests: Readonly<Record<string, { readonly first: number; readonly duplicate: number }>>;
  /** Paired per-repetition ratios (median, min, max). */
  readonly cpuRatioVsBare: Readonly<Record<string, RatioRange>>;
  /** Against the hand-written handler making the same calls (DESIGN.md's wording). */
  readonly cpuRatioVsSameCalls: Readonly<Record<string, RatioRange>>;
  readonly throughputRatioVsPowertools: Readonly<Record<string, RatioRange>>;
  readonly runtimeBytesMinified: number;
}

const times = (value: number): string => `${value.toFixed(2)}x`;
const requests = (value: number): string => (Number.isInteger(value) ? String(value) : value.toFixed(2));

/** Judges every target. */
export function evaluateTargets(inputs: TargetInputs): TargetResult[] {
  const results: TargetResult[] = [];
  for (const mode of inputs.modes) {
    const floor = REQUEST_FLOORS[mode];
    const measured = inputs.toolkitRequests[mode];
    if (!floor || !measured) continue;
    const met = measured.first === floor.first && measured.duplicate === floor.duplicate;
    const extra = measured.first - floor.first + (measured.duplicate - floor.duplicate);
    results.push({
      id: 'request-floor',
      subject: mode,
      description: `toolkit requests per message at the floor (${floor.first} first delivery, ${floor.duplicate} duplicate)`,
      value: measured.first,
      limit: floor.first,
      comparison: 'equal',
      met,
      verdict: `${met ? 'met' : 'missed'}: ${requests(measured.first)} on first delivery, ${requests(measured.duplicate)} on a duplicate (floor ${floor.first} and ${floor.duplicate}${met ? '' : `; ${requests(extra)} extra`})`,
    });
  }
  for (const mode of inputs.modes) {
    const ratio = inputs.cpuRatioVsBare[mode];
    results.push({
      id: 'cpu-vs-bare',
      subject: mode,
      description: 'client CPU per record at most 1.1x the bare handler (no deduplication)',
      value: ratio?.median ?? null,
      limit: CPU_RATIO_LIMIT,
      comparison: 'at-most',
      ...judgeRatio(ratio, CPU_RATIO_LIMIT, 'at-most'),
    });
    const sameCalls = inputs.cpuRatioVsSameCalls[mode];
    if (sameCalls !== undefined) {
      results.push({
        id: 'cpu-vs-bare',
        subject: `${mode} (same calls)`,
        description:
          'client CPU per record at most 1.1x a hand-written handler making the same calls (DESIGN.md)',
        value: sameCalls.median,
        limit: CPU_RATIO_LIMIT,
        comparison: 'at-most',
        ...judgeRatio(sameCalls, CPU_RATIO_LIMIT, 'at-most'),
      });
    }
  }
  for (const mode of inputs.modes) {
    const ratio = inputs.throughputRatioVsPowertools[mode];
    results.push({
      id: 'throughput-vs-powertools',
      subject: mode,
      description: 'records per second at least 1.7x Powertools (stub transport)',
      value: ratio?.median ?? null,
      limit: THROUGHPUT_RATIO_LIMIT,
      comparison: 'at-least',
      ...judgeRatio(ratio, THROUGHPUT_RATIO_LIMIT, 'at-least'),
    });
  }
  const kilobytes = inputs.runtimeBytesMinified / 1024;
  results.push({
    id: 'runtime-size',
    subject: 'lambda/index.ts',
    description: "the toolkit's own runtime code at most 15 KB minified (AWS SDK external)",
    value: kilobytes,
    limit: RUNTIME_BYTES_LIMIT / 1024,
    comparison: 'at-most',
    ...judge(kilobytes, RUNTIME_BYTES_LIMIT / 1024, 'at-most', (value) => `${value.toFixed(1)} KB`),
  });
  return results;
}
