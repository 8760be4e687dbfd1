/**
 * The README's performance figures are the benchmark's: the cost and latency table in the mode
 * chooser and in the performance section is `renderHeadlineTable` of `latest.json`, and the
 * latency table is the one in `latest.md`, row for row.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderHeadlineTable } from '../../../bench/report/markdown';
import type { BenchResults } from '../../../bench/report/results';

const root = join(__dirname, '..', '..', '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const report = readFileSync(join(root, 'bench', 'results', 'latest.md'), 'utf8');
const results = JSON.parse(
  readFileSync(join(root, 'bench', 'results', 'latest.json'), 'utf8'),
) as BenchResults;

/** The text under `heading` (a whole line) up to the next heading of its level or above. */
function section(text: string, heading: string): string {
  const lines = text.split('\n');
  const start = lines.indexOf(heading);
  if (start < 0) throw new Error(`no heading "${heading}"`);
  const level = heading.indexOf(' ');
  const end = lines.findIndex(
    (line, index) => index > start && /^#+ /.test(line) && line.indexOf(' ') <= level,
  );
  return lines.slice(start + 1, end < 0 ? undefined : end).join('\n');
}

/** Table rows as trimmed cells, separator rows left out (the README's tables are padded). */
function rowsOf(text: string): string[][] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('|') && !/^\|\s*-/.test(line))
    .map((line) =>
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
}

describe('README performance figures', () => {
  const headline = rowsOf(renderHeadlineTable(results));

  it.each(['## Modes', '## Performance'])(
    'shows the cost and latency table of latest.json under "%s"',
    (heading) => {
      expect(headline.length).toBeGreaterThan(5);
      expect(rowsOf(section(readme, heading))).toEqual(expect.arrayContaining(headline));
    },
  );

  it("shows latest.md's modelled latency table in the performance section", () => {
    const latency = rowsOf(section(report, '### Latency added per batch (modelled)'));
    expect(latency.length).toBeGreaterThan(5);
    expect(rowsOf(section(readme, '## Performance'))).toEqual(expect.arrayContaining(latency));
  });
});
