/**
 * The chart (`bench/results/latest.svg`): one horizontal bar panel per figure, written by hand
 * (no charting dependency). Bars show medians; whiskers show min–max over repetitions.
 */
import type { Summary } from '../stats';
import type { BenchResults } from './results';

/** The narrowest label column, px. */
const MIN_LABEL_WIDTH = 300;
/**
 * Pixels per character of a 12 px system-ui label, generous (average Latin glyphs measure about
 * 6 px): the label column is sized from the longest label, so none is clipped at the left edge.
 */
const LABEL_CHARACTER_WIDTH = 6.6;
const BAR_WIDTH = 430;
/** Room right of the bars for the value text. */
const VALUE_WIDTH = 130;
const ROW = 22;
const TITLE = 30;
const GAP = 18;

const COLORS = {
  bare: '#8c8c8c',
  toolkit: '#1f6feb',
  manual: '#56b4b4',
  powertools: '#e8833a',
} as const;

/** Escapes text for SVG. */
export function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

interface Bar {
  readonly label: string;
  readonly color: string;
  /** Segments stacked left to right (a single segment for a plain bar). */
  readonly segments: readonly { readonly value: number; readonly opacity: number }[];
  readonly whisker?: { readonly min: number; readonly max: number };
  readonly text: string;
}

/** The label column's width for `labels`: the longest one fits, with a margin. */
export function labelColumnWidth(labels: readonly string[]): number {
  const longest = Math.max(0, ...labels.map((label) => Array.from(label).length));
  return Math.max(MIN_LABEL_WIDTH, Math.ceil(longest * LABEL_CHARACTER_WIDTH) + 20);
}

function panel(
  title: string,
  bars: readonly Bar[],
  top: number,
  labelWidth: number,
): { svg: string; height: number } {
  const scaleMax = Math.max(
    1e-9,
    ...bars.map((bar) =>
      Math.max(
        bar.whisker?.max ?? 0,
        bar.segments.reduce((sum, s) => sum + s.value, 0),
      ),
    ),
  );
  const x = (value: number) => labelWidth + (value / scaleMax) * BAR_WIDTH;
  const parts = [`<text x="12" y="${top + 20}" class="title">${escapeXml(title)}</text>`];
  bars.forEach((bar, index) => {
    const y = top + TITLE + index * ROW;
    parts.push(`<text x="${labelWidth - 8}" y="${y + 15}" class="label">${escapeXml(bar.label)}</text>`);
    let start = 0;
    for (const segment of bar.segments) {
      const width = x(start + segment.value) - x(start);
      if (width > 0) {
        parts.push(
          `<rect x="${x(start).toFixed(1)}" y="${y + 4}" width="${width.toFixed(1)}" height="${ROW - 8}" ` +
            `fill="${bar.color}" fill-opacity="${segment.opacity}"/>`,
        );
      }
      start += segment.value;
    }
    if (bar.whisker && bar.whisker.max > bar.whisker.min) {
      const middle = y + ROW / 2;
      parts.push(
        `<line x1="${x(bar.whisker.min).toFixed(1)}" x2="${x(bar.whisker.max).toFixed(1)}" y1="${middle}" y2="${middle}" class="whisker"/>`,
        `<line x1="${x(bar.whisker.min).toFixed(1)}" x2="${x(bar.whisker.min).toFixed(1)}" y1="${middle - 4}" y2="${middle + 4}" class="whisker"/>`,
        `<line x1="${x(bar.whisker.max).toFixed(1)}" x2="${x(bar.whisker.max).toFixed(1)}" y1="${middle - 4}" y2="${middle + 4}" class="whisker"/>`,
      );
    }
    const end = Math.max(x(start), bar.whisker ? x(bar.whisker.max) : 0);
    parts.push(`<text x="${(end + 6).toFixed(1)}" y="${y + 15}" class="value">${escapeXml(bar.text)}</text>`);
  });
  return { svg: parts.join('\n'), height: TITLE + bars.length * ROW + GAP };
}

const format = (value: number): string =>
  Number.isInteger(value) || value >= 100
    ? Math.round(value).toLocaleString('en-US')
    : value >= 10
      ? value.toFixed(1)
      : value.toFixed(2);

/** The colour group of an implementation: every Powertools variant is Powertools. */
export function kindOf(id: string): keyof typeof COLORS {
  return id === 'bare'
    ? 'bare'
    : id === 'powertools' || id.startsWith('powertools-')
      ? 'powertools'
      : id.startsWith('manual-')
        ? 'manual'
        : 'toolkit';
}

/** Renders the chart of `results`. */
export function renderSvg(results: BenchResults): string {
  const implementations = results.implementations;
  const compared = implementations.filter(({ id }) => kindOf(id) !== 'manual');

  const summaryBars = (
    ids: readonly { id: string; label: string }[],
    pick: (id: string) => Summary | undefined,
    unit: string,
  ): Bar[] =>
    ids.flatMap(({ id, label }) => {
      const summary = pick(id);
      if (!summary) return [];
      return [
        {
          label,
          color: COLORS[kindOf(id)],
          segments: [{ value: summary.median, opacity: 0.9 }],
          whisker: { min: summary.min, max: summary.max },
          text: `${format(summary.median)}${unit}`,
        },
      ];
    });

  const panels: { title: string; bars: Bar[] }[] = [
    {
      title: 'DynamoDB requests per message, first delivery (dark: dedup layer, light: user code)',
      bars: compared.flatMap(({ id, label }) => {
        const figures = results.cases[id]?.first;
        if (!figures) return [];
        const dedup = figures.dedupRequests.median;
        const business = figures.businessRequests.median;
        return [
          {
            label,
            color: COLORS[kindOf(id)],
            segments: [
              { value: dedup, opacity: 0.95 },
              { value: business, opacity: 0.4 },
            ],
            text: `${format(dedup + business)}`,
          },
        ];
      }),
    },
    {
      title: 'Client CPU per record, µs (stub transport; lower is better)',
      bars: summaryBars(implementations, (id) => results.cpuMicrosPerRecord[id], ' µs'),
    },
    {
      title: 'Records per second, stub transport (higher is better)',
      bars: summaryBars(implementations, (id) => results.recordsPerSecondStub[id], '/s'),
    },
  ];
  if (results.recordsPerSecondEmulator) {
    panels.push({
      title: 'Records per second end to end on the local emulator (higher is better)',
      bars: summaryBars(compared, (id) => results.recordsPerSecondEmulator?.[id], '/s'),
    });
  }
  panels.push({
    title: 'Handler bundle without the AWS SDK, KB minified (lower is better)',
    bars: compared.flatMap(({ id, label }) => {
      const bundle = results.bundles[id];
      if (!bundle) return [];
      const value = bundle.withoutSdk.minified / 1024;
      return [
        {
          label,
          color: COLORS[kindOf(id)],
          segments: [{ value, opacity: 0.9 }],
          text: `${value.toFixed(1)} KB`,
        },
      ];
    }),
  });

  const labelWidth = labelColumnWidth(panels.flatMap(({ bars }) => bars.map((bar) => bar.label)));
  const WIDTH = labelWidth + BAR_WIDTH + VALUE_WIDTH;
  let top = 40;
  const rendered: string[] = [];
  for (const { title, bars } of panels) {
    const { svg, height } = panel(title, bars, top, labelWidth);
    rendered.push(svg);
    top += height;
  }
  const caption =
    `effectively-once benchmark, ${results.generatedAt.slice(0, 10)}, Node ${results.environment.node}, ` +
    `${results.environment.cpus} vCPU${results.quick ? ' (quick smoke run)' : ''}; bars: median, whiskers: min–max`;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${top + 10}" viewBox="0 0 ${WIDTH} ${top + 10}" font-family="system-ui, -apple-system, Segoe UI, sans-serif">`,
    '<style>.title{font-size:14px;font-weight:600;fill:#1b1f24}.label{font-size:12px;fill:#1b1f24;text-anchor:end}.value{font-size:12px;fill:#4b5563}.whisker{stroke:#1b1f24;stroke-width:1}.caption{font-size:12px;fill:#4b5563}</style>',
    `<rect width="${WIDTH}" height="${top + 10}" fill="#ffffff"/>`,
    `<text x="12" y="22" class="caption">${escapeXml(caption)}</text>`,
    ...rendered,
    '</svg>',
    '',
  ].join('\n');
}
