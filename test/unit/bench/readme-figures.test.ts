/**
 * The performance figures in the docs are the benchmark's: the cost and latency table in the mode
 * chooser (`docs/modes.md`) and in the performance section (`docs/performance.md`) is
 * `renderHeadlineTable` of `latest.json`, and the latency table is the one in `latest.md`, row
 * for row.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderHeadlineTable } from '../../../bench/report/markdown';
import type { BenchResults } from '../../../bench/report/results';
import { root, rowsOf, section, sectionOf } from '../doc-pages';

const report = readFileSync(join(root, 'bench', 'results', 'latest.md'), 'utf8');
const results = JSON.parse(
  readFileSync(join(root, 'bench', 'results', 'latest.json'), 'utf8'),
) as BenchResults;

describe('docs performance figures', () => {
  const headline = rowsOf(renderHeadlineTable(results));

  it.each(['## Modes', '# Performance'])(
    'shows the cost and latency table of latest.json under "%s"',
    (heading) => {
      expect(headline.length).toBeGreaterThan(5);
      expect(rowsOf(section(heading))).toEqual(expect.arrayContaining(headline));
    },
  );

  it("shows latest.md's modelled latency table in the performance section", () => {
    const latency = rowsOf(sectionOf(report, '### Latency added per batch (modelled)') ?? '');
    expect(latency.length).toBeGreaterThan(5);
    expect(rowsOf(section('# Performance'))).toEqual(expect.arrayContaining(latency));
  });
});
