import { describe, expect, it } from 'vitest';
import { judge } from '../../../bench/report/targets';
import { alternate, median, ratio, slope, summarize } from '../../../bench/stats';

describe('bench statistics', () => {
  it('takes the middle value of an odd number of samples, whatever their order', () => {
    expect(median([5, 1, 3])).toBe(3);
  });

  it('takes the mean of the two middle values of an even number of samples', () => {
    expect(median([4, 1, 3, 2])).toBe(2.5);
  });

  it('summarises samples as median, min, max and count', () => {
    expect(summarize([3, 9, 1, 4, 7])).toEqual({ median: 4, min: 1, max: 9, samples: 5 });
  });

  it('refuses to summarise no samples or a non-finite one', () => {
    expect(() => summarize([])).toThrow('median of no samples');
    expect(() => summarize([1, Number.NaN])).toThrow('non-finite');
  });

  it('gives no ratio against a zero or missing reference', () => {
    expect(ratio(3, 2)).toBe(1.5);
    expect(ratio(3, 0)).toBeNull();
    expect(ratio(3, undefined)).toBeNull();
  });

  it('fits the least-squares slope of points', () => {
    expect(
      slope([
        [0, 10],
        [100, 110],
        [200, 210],
      ]),
    ).toBe(1);
    expect(
      slope([
        [0, 5],
        [10, 5],
        [20, 5],
      ]),
    ).toBe(0);
  });

  it('keeps the order on even repetitions and reverses it on odd ones', () => {
    expect(alternate(['a', 'b', 'c'], 0)).toEqual(['a', 'b', 'c']);
    expect(alternate(['a', 'b', 'c'], 1)).toEqual(['c', 'b', 'a']);
  });
});

describe('bench targets', () => {
  it('states the margin of a met and of a missed upper limit', () => {
    expect(judge(1.05, 1.1, 'at-most', (v) => `${v.toFixed(2)}x`)).toEqual({
      met: true,
      verdict: 'met: 1.05x (limit <= 1.10x, 5% under the limit)',
    });
    expect(judge(1.32, 1.1, 'at-most', (v) => `${v.toFixed(2)}x`)).toEqual({
      met: false,
      verdict: 'missed: 1.32x (limit <= 1.10x, 20% over the limit)',
    });
  });

  it('judges a lower limit and refuses a non-positive measurement', () => {
    expect(judge(1.5, 1.7, 'at-least', String).met).toBe(false);
    expect(judge(-2, 1.1, 'at-most', String).met).toBeNull();
  });
});
