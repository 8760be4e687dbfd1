/** Summary statistics of repeated measurements. */
import { createRandom } from '../test/reliability/support/prng';

/** Median, min and max of a set of samples, and how many there were. */
export interface Summary {
  readonly median: number;
  readonly min: number;
  readonly max: number;
  readonly samples: number;
}

/** The median (mean of the two middle values for an even count). Throws for no samples. */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new Error('median of no samples');
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** Median, min and max of `values`. Throws for no samples or a non-finite sample. */
export function summarize(values: readonly number[]): Summary {
  if (values.some((value) => !Number.isFinite(value))) throw new Error('summary of a non-finite sample');
  return {
    median: median(values),
    min: Math.min(...values),
    max: Math.max(...values),
    samples: values.length,
  };
}

/** `value / reference`, or null when the reference is 0 or absent. */
export function ratio(value: number | undefined, reference: number | undefined): number | null {
  if (value === undefined || reference === undefined || reference === 0) return null;
  return value / reference;
}

/** Least-squares slope of `y` over `x` (for example heap bytes over messages processed). */
export function slope(points: readonly (readonly [number, number])[]): number {
  if (points.length < 2) throw new Error('slope of fewer than two points');
  const n = points.length;
  const meanX = points.reduce((sum, [x]) => sum + x, 0) / n;
  const meanY = points.reduce((sum, [, y]) => sum + y, 0) / n;
  let numerator = 0;
  let denominator = 0;
  for (const [x, y] of points) {
    numerator += (x - meanX) * (y - meanY);
    denominator += (x - meanX) ** 2;
  }
  if (denominator === 0) throw new Error('slope over a single x value');
  return numerator / denominator;
}

/** The order of `items` in repetition `repetition`: as given on even ones, reversed on odd ones. */
export function alternate<T>(items: readonly T[], repetition: number): T[] {
  return repetition % 2 === 0 ? [...items] : [...items].reverse();
}

/** A seeded uniform generator on [0, 1) (the reliability suite's mulberry32): the same seed, the same sequence. */
export function seededRandom(seed: number): () => number {
  const random = createRandom(seed);
  return () => random.next();
}

/** A median with a confidence interval. */
export interface MedianInterval {
  readonly median: number;
  readonly ciLow: number;
  readonly ciHigh: number;
  /** How the interval was computed. */
  readonly method: string;
}

/**
 * The median of `values` and a percentile-bootstrap confidence interval for it: `resamples`
 * resamples of the values with replacement (seeded, so the interval is reproducible), the
 * median of each, and the `(1 - level) / 2` and `(1 + level) / 2` quantiles of those medians.
 * For paired ratios, pass one ratio per repetition: resampling repetitions keeps each pair.
 */
export function bootstrapMedian(
  values: readonly number[],
  options: { readonly resamples?: number; readonly level?: number; readonly seed?: number } = {},
): MedianInterval {
  const resamples = options.resamples ?? 10_000;
  const level = options.level ?? 0.95;
  const random = seededRandom(options.seed ?? 1);
  const medians: number[] = [];
  for (let n = 0; n < resamples; n++) {
    const sample = values.map(() => values[Math.floor(random() * values.length)]!);
    medians.push(median(sample));
  }
  medians.sort((a, b) => a - b);
  const at = (q: number) => medians[Math.min(resamples - 1, Math.max(0, Math.floor(q * resamples)))]!;
  return {
    median: median(values),
    ciLow: at((1 - level) / 2),
    ciHigh: at((1 + level) / 2),
    method: `percentile bootstrap of the median over ${values.length} paired repetitions, ${resamples} resamples, ${Math.round(level * 100)}% interval`,
  };
}
