import { describe, expect, it } from 'vitest';
import { blended, COST_ASSUMPTIONS, dollarsPerMillion, PRICES } from '../../../bench/prices';

describe('bench prices', () => {
  it('dates every price and names its source', () => {
    for (const price of Object.values(PRICES)) {
      expect(price.source).toMatch(/^https:\/\/aws\.amazon\.com\//);
      expect(price.read).toMatch(/^\d{4}-\d{2}-\d{2}/);
    }
  });

  it('charges write and read units at the on-demand rates', () => {
    const cost = dollarsPerMillion({ writeUnits: 4, readUnits: 1, batchMillis: 0 });
    expect(cost.dynamoDb).toBeCloseTo(4 * 0.625 + 0.125, 10);
  });

  it('charges Lambda per batch: the invocation and the duration rounded up to the ms at 1,769 MB', () => {
    const cost = dollarsPerMillion({ writeUnits: 0, readUnits: 0, batchMillis: 24.2 }, 10);
    const perBatch = 0.2 / 1e6 + 0.025 * (1769 / 1024) * 0.000_016_666_7;
    expect(cost.lambda).toBeCloseTo(100_000 * perBatch, 10);
    expect(COST_ASSUMPTIONS.lambdaMemoryMegabytes).toBe(1769);
  });

  it('charges SQS for the send and the batch’s share of receive and delete', () => {
    const cost = dollarsPerMillion({ writeUnits: 0, readUnits: 0, batchMillis: 0 }, 10);
    expect(cost.sqs).toBeCloseTo(1.2 * 0.4, 10);
    expect(cost.total).toBeCloseTo(cost.dynamoDb + cost.lambda + cost.sqs, 12);
  });

  it('blends first deliveries and duplicates at the stated duplicate rate', () => {
    expect(COST_ASSUMPTIONS.duplicateRate).toBe(0.05);
    expect(blended(2, 1)).toBeCloseTo(1.95, 12);
    expect(blended(2, 1, 0.5)).toBe(1.5);
  });
});
