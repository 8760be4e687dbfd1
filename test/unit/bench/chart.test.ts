/**
 * The benchmark chart and report as a reader meets them: every Powertools variant in Powertools'
 * colour, no label clipped at the left edge, and the report's image link resolving beside it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { BenchResults } from '../../../bench/report/results';
import { kindOf, labelColumnWidth, renderSvg } from '../../../bench/report/svg';

const root = join(__dirname, '..', '..', '..');
const results = JSON.parse(
  readFileSync(join(root, 'bench', 'results', 'latest.json'), 'utf8'),
) as BenchResults;

describe('the benchmark chart', () => {
  it('colours every Powertools variant as Powertools', () => {
    const powertools = results.implementations.filter(({ id }) => id.startsWith('powertools'));
    expect(powertools.length).toBeGreaterThan(1);
    for (const { id } of powertools) expect(kindOf(id)).toBe('powertools');
    expect(kindOf('manual-atomic')).toBe('manual');
    expect(kindOf('atomic')).toBe('toolkit');
    const svg = renderSvg(results);
    const fills = (label: string) =>
      [
        ...svg.matchAll(new RegExp(`class="label">${label}</text>\\n<rect [^>]*fill="(#[0-9a-f]+)"`, 'g')),
      ].map((match) => match[1]);
    for (const { label } of powertools) {
      const colours = new Set(fills(label.replace(/[()]/g, '\\$&')));
      expect(colours, label).toEqual(new Set(['#e8833a']));
    }
  });

  it('sizes the label column for the longest label, so none starts left of the chart', () => {
    const svg = renderSvg(results);
    const longest = Math.max(...results.implementations.map(({ label }) => label.length));
    const labelX = Number(/<text x="(\d+)" y="\d+" class="label">/.exec(svg)?.[1]);
    // Right-aligned at `labelX`: the longest label, at 6.6 px a character, still starts at x ≥ 0.
    expect(labelX - longest * 6.6).toBeGreaterThanOrEqual(0);
    expect(labelColumnWidth(['short'])).toBe(300);
  });

  it('links the chart from the report by a path that resolves beside it', () => {
    const report = join(root, 'bench', 'results', 'latest.md');
    const link = /!\[Benchmark chart\]\(([^)]+)\)/.exec(readFileSync(report, 'utf8'))?.[1];
    expect(link).toBeDefined();
    expect(existsSync(join(dirname(report), link!))).toBe(true);
  });
});
