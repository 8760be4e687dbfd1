/**
 * The committed reliability report (`docs/reliability.json`, `.md`, `.svg`, written by
 * `npm run proof`) says what its run measured: the page and the chart are the renderers' output
 * for the JSON, figure for figure, and the JSON counts no duplicate effect and no lost message.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type ReliabilityReport,
  renderMarkdown,
  renderSvg,
  totalOf,
  violationsOf,
} from '../../../../scripts/proof/report';
import { root } from '../../doc-pages';

const read = (file: string) => readFileSync(join(root, 'docs', file), 'utf8');
const report = JSON.parse(read('reliability.json')) as ReliabilityReport;

describe('the committed reliability report', () => {
  it('is the page npm run proof renders from reliability.json, figure for figure', () => {
    expect(read('reliability.md')).toBe(renderMarkdown(report));
  });

  it('has the chart npm run proof renders from reliability.json', () => {
    expect(read('reliability.svg')).toBe(renderSvg(report));
  });

  it('covers SQS, streams and the chain at its stated size, with the command that reproduces it', () => {
    expect(report.topologies.map((record) => record.topology)).toEqual(['sqs', 'streams', 'chain']);
    const seeds = Array.from({ length: report.seedsPerTopology }, (_, index) => index + 1);
    for (const record of report.topologies) {
      expect({ topology: record.topology, size: record.messagesPerSeed, seeds: record.seeds }).toEqual({
        topology: record.topology,
        size: report.messagesPerSeed,
        seeds,
      });
      expect(totalOf(record).messages).toBeGreaterThanOrEqual(report.messagesPerSeed * seeds.length);
    }
    expect(report.command).toBe(
      `npm run proof -- --messages ${report.messagesPerSeed} --seeds ${report.seedsPerTopology}`,
    );
  });

  it('counts 0 duplicate effects and 0 lost messages in every topology and mode, and faults injected in each', () => {
    expect(violationsOf(report)).toEqual([]);
    for (const record of report.topologies) {
      const faults = Object.values(totalOf(record).faults).reduce((sum, count) => sum + count, 0);
      expect({ topology: record.topology, injected: faults > 0 }).toEqual({
        topology: record.topology,
        injected: true,
      });
    }
  });
});
