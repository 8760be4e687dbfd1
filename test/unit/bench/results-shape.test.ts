/**
 * `bench/results/latest.json` stays scriptable: one number per field of each implementation's
 * headline figures, and the latency model's inputs with their sources.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { BenchResults } from '../../../bench/report/results';

const results = JSON.parse(
  readFileSync(join(__dirname, '..', '..', '..', 'bench', 'results', 'latest.json'), 'utf8'),
) as BenchResults;

const aNumber = expect.any(Number);

describe('bench results file', () => {
  it('is a full run of the current schema', () => {
    expect({ schemaVersion: results.schemaVersion, quick: results.quick }).toEqual({
      schemaVersion: 2,
      quick: false,
    });
  });

  it('has one number per headline field for every implementation', () => {
    const ids = results.implementations.map(({ id }) => id);
    expect(ids).toEqual(expect.arrayContaining(['bare', 'marker', 'atomic', 'entity', 'powertools']));
    expect(Object.keys(results.byImplementation).sort()).toEqual([...ids].sort());
    for (const id of ids) {
      const figures = results.byImplementation[id]!;
      expect({ id, figures }).toEqual({
        id,
        figures: {
          latencyMillisPerBatch: { p50: aNumber, p99: aNumber },
          dollarsPerMillion: { first: aNumber, duplicate: aNumber, blended: aNumber },
          writeUnitsPerMessage: { first: aNumber, duplicate: aNumber },
          requestsPerMessage: { first: aNumber, duplicate: aNumber },
          initMillis: aNumber,
          cpuRatioVsSameCalls:
            figures.cpuRatioVsSameCalls === null ? null : { median: aNumber, ciHigh: aNumber },
        },
      });
    }
    for (const id of ['marker', 'atomic', 'entity']) {
      expect(results.byImplementation[id]!.cpuRatioVsSameCalls).not.toBeNull();
    }
  });

  it('counts the requests of a whole batch of every reported shape for every implementation', () => {
    const shapes = { first: aNumber, duplicate: aNumber };
    for (const { id } of results.implementations) {
      expect({ id, perBatch: results.requestsPerBatch?.[id] }).toEqual({
        id,
        perBatch: { single: shapes, batch: shapes, fifoOneGroup: shapes, fifoTenGroups: shapes },
      });
      expect(results.batchRequests?.[id]).toEqual(expect.any(String));
    }
  });

  it('carries the latency model’s inputs, each with a dated source', () => {
    expect(results.latencyModel.operations.length).toBeGreaterThanOrEqual(6);
    for (const row of results.latencyModel.operations) {
      const source = results.latencyModel.sources[row.source]!;
      expect({ request: row.request, url: source.url, published: source.published.length > 0 }).toEqual({
        request: row.request,
        url: expect.stringMatching(/^https:\/\//),
        published: true,
      });
      expect(row.p99Millis).toBeGreaterThan(row.p50Millis);
    }
  });

  it('reports every target with a verdict', () => {
    expect(results.targets.length).toBeGreaterThan(10);
    for (const target of results.targets) {
      expect(target.verdict).toMatch(/^(met|missed|not measured|not applicable|not judged: a loaded run)/);
    }
  });
});
