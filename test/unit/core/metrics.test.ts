import { describe, expect, it } from 'vitest';
import { METRICS } from '../../../lambda/core/contract';
import { createOutcomeCounts } from '../../../lambda/core/metrics';

describe('outcome counts', () => {
  it('start at zero for every metric of the contract, in its order (the order of the metrics line)', () => {
    expect(Object.entries(createOutcomeCounts())).toEqual(Object.keys(METRICS).map((name) => [name, 0]));
  });

  it('are a new object for every invocation', () => {
    const first = createOutcomeCounts();
    first.processed += 1;

    expect(createOutcomeCounts().processed).toBe(0);
  });
});
