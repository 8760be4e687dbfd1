/**
 * The reliability report of `npm run proof`: its JSON (`docs/reliability.json`), and the page
 * (`docs/reliability.md`) and chart (`docs/reliability.svg`) rendered from it alone, so a test can
 * render the page again from the JSON and find every figure the same.
 */
import type { LoadFacts } from '../../bench/report/load';
import { escapeXml, labelColumnWidth } from '../../bench/report/svg';
import type { ModeProof, ProofRecord } from '../support/proof-record';

/** The machine a run ran on, and how busy it was (its load average at the start and the end). */
export interface ProofMachine extends LoadFacts {
  readonly cpuModel: string;
  readonly platform: string;
  readonly node: string;
}

/** The shape of `docs/reliability.json`. */
export interface ReliabilityReport {
  readonly schemaVersion: 1;
  /** The command that produced the report, and reproduces it. */
  readonly command: string;
  readonly messagesPerSeed: number;
  readonly seedsPerTopology: number;
  /** When the run started (ISO 8601, UTC). */
  readonly startedAt: string;
  readonly runSeconds: number;
  /** The commit the run ran at, and whether the working tree had changes beside it. */
  readonly commit: string;
  readonly uncommittedChanges: boolean;
  readonly machine: ProofMachine;
  /** One record per topology, in run order (SQS, streams, the chain). */
  readonly topologies: readonly ProofRecord[];
}

/** The chart's file name, beside the page. */
export const CHART_FILE = 'reliability.svg';

const TITLES: Readonly<Record<string, string>> = {
  sqs: 'SQS',
  streams: 'Streams',
  chain: 'Chain: two services joined by the outbox',
};

/** A topology's heading. */
export function titleOf(record: ProofRecord): string {
  return TITLES[record.topology] ?? record.topology;
}

/** Figures as the page shows them: integers with thousands separators. */
export function formatCount(value: number): string {
  return value.toLocaleString('en-US');
}

function formatDuration(seconds: number): string {
  const whole = Math.round(seconds);
  const hours = Math.floor(whole / 3600);
  const minutes = Math.floor((whole % 3600) / 60);
  const rest = whole % 60;
  return hours > 0 ? `${hours} h ${minutes} min ${rest} s` : `${minutes} min ${rest} s`;
}

const formatLoad = (load: readonly number[]): string => load.map((value) => value.toFixed(2)).join(' / ');

/** Every fault kind of a record, in its first mode's order (every mode lists the same kinds). */
export function faultNames(record: ProofRecord): string[] {
  return [...new Set(record.modes.flatMap((mode) => Object.keys(mode.faults)))];
}

/** A topology's figures summed over its modes. */
export function totalOf(record: ProofRecord): ModeProof {
  const sum = (pick: (mode: ModeProof) => number) =>
    record.modes.reduce((total, mode) => total + pick(mode), 0);
  return {
    mode: 'total',
    seeds: record.seeds,
    messages: sum((mode) => mode.messages),
    duplicateDeliveries: sum((mode) => mode.duplicateDeliveries),
    faults: Object.fromEntries(
      faultNames(record).map((name) => [name, sum((mode) => mode.faults[name] ?? 0)]),
    ),
    deadLettered: sum((mode) => mode.deadLettered),
    duplicateEffects: sum((mode) => mode.duplicateEffects),
    lost: sum((mode) => mode.lost),
  };
}

/** Every topology and mode with a duplicate effect or a lost message, as sentences; empty when none. */
export function violationsOf(report: Pick<ReliabilityReport, 'topologies'>): string[] {
  return report.topologies.flatMap((record) =>
    record.modes.flatMap((mode) =>
      mode.duplicateEffects > 0 || mode.lost > 0
        ? [`${record.topology} ${mode.mode}: ${mode.duplicateEffects} duplicate effects, ${mode.lost} lost`]
        : [],
    ),
  );
}

/**
 * The order check's rows, when every mode of the record counts what it ordered (records written
 * before that have none): the groups (FIFO message groups, stream partition keys) and the first
 * effects checked in their group's order.
 */
function orderRows(
  record: ProofRecord,
  counts: (label: string, pick: (mode: ModeProof) => number) => string,
): string[] {
  if (!record.modes.every((mode) => mode.history?.ordered !== undefined)) return [];
  const total = (pick: (history: NonNullable<ModeProof['history']>) => number) =>
    record.modes.reduce((sum, mode) => sum + pick(mode.history!), 0);
  const pickOf =
    (pick: (history: NonNullable<ModeProof['history']>) => number) =>
    (mode: ModeProof): number =>
      // The total column carries no history of its own: it sums the modes'.
      mode.history === undefined ? total(pick) : pick(mode.history);
  return [
    counts(
      'groups checked in order',
      pickOf((history) => history.groups),
    ),
    counts(
      'first effects checked in order',
      pickOf((history) => history.ordered ?? 0),
    ),
  ];
}

function table(record: ProofRecord): string {
  const columns = [...record.modes, totalOf(record)];
  const row = (label: string, cells: readonly string[]) => `| ${label} | ${cells.join(' | ')} |`;
  const counts = (label: string, pick: (mode: ModeProof) => number) =>
    row(
      label,
      columns.map((mode) => formatCount(pick(mode))),
    );
  return [
    `| | ${columns.map((mode) => mode.mode).join(' | ')} |`,
    `|---|${columns.map(() => '---:').join('|')}|`,
    row(
      'seeds',
      columns.map((mode) => mode.seeds.join(', ')),
    ),
    counts('messages', (mode) => mode.messages),
    counts('duplicates delivered', (mode) => mode.duplicateDeliveries),
    ...faultNames(record).map((name) => counts(name, (mode) => mode.faults[name] ?? 0)),
    counts('dead-lettered with a reason', (mode) => mode.deadLettered),
    ...orderRows(record, counts),
    counts('**duplicate effects**', (mode) => mode.duplicateEffects),
    counts('**lost**', (mode) => mode.lost),
  ].join('\n');
}

function topologySection(record: ProofRecord): string {
  return [
    `## ${titleOf(record)}`,
    '',
    `${record.transport}: ${formatCount(record.messagesPerSeed)} messages per seed, seeds ${record.seeds.join(', ')}. ` +
      'Each fault kind is counted as injected, summed over the seeds of the mode.',
    '',
    table(record),
    '',
    `Replay this topology alone: \`${record.replay}\` (one seed: \`RELIABILITY_SEED=<n>\`).`,
  ].join('\n');
}

/**
 * The history checker's sentence: its coverage summed over every mode, or nothing for a report
 * with a mode that carries none (written before the checker existed).
 */
function historySentence(report: ReliabilityReport): string[] {
  const modes = report.topologies.flatMap((record) => record.modes);
  if (modes.length === 0 || modes.some((mode) => mode.history === undefined)) return [];
  const sum = (pick: (history: NonNullable<ModeProof['history']>) => number) =>
    formatCount(modes.reduce((all, mode) => all + pick(mode.history!), 0));
  return [
    '',
    "Every seed's history (its deliveries, the effects in commit order, its dead letters) was " +
      `checked as well: ${sum((history) => history.keys)} keys, each effect applied once per live window; ` +
      'every message applied with its payload or dead-lettered with a reason; ' +
      (modes.every((mode) => mode.history!.ordered !== undefined)
        ? `${sum((history) => history.groups)} partition keys and FIFO message groups, ` +
          `${sum((history) => history.ordered ?? 0)} first effects in the order of their records; `
        : `${sum((history) => history.groups)} partition keys, their effects in the order of their records; `) +
      `${sum((history) => history.events)} events of the chain, each applied once downstream or dead-lettered: ` +
      `${sum((history) => history.violations)} violations.`,
  ];
}

/** Renders `docs/reliability.md` from the report. */
export function renderMarkdown(report: ReliabilityReport): string {
  const { machine } = report;
  const totals = report.topologies.map(totalOf);
  const kinds = totals.flatMap((total) => Object.values(total.faults));
  const kindsInjected = kinds.filter((count) => count > 0).length;
  const kindsCounted = kinds.length;
  const sum = (pick: (total: ModeProof) => number) =>
    formatCount(totals.reduce((all, total) => all + pick(total), 0));
  return [
    '# Reliability report',
    '',
    '<!-- Written by `npm run proof` (scripts/proof.ts) from reliability.json; a test renders it again from the JSON. Do not edit by hand. -->',
    '',
    'Seeded fault injection through the real toolkit and the real store, on the local emulator ' +
      '(MiniStack): every seed plans its messages, delivers them through a simulated event source ' +
      'and simulated Lambda instances with faults injected at every step, then an oracle reads the ' +
      'end state and checks every message: its effect applied once, or dead-lettered with its reason. ' +
      'The method: [Testing](../CONTRIBUTING.md#testing); what this does not cover: ' +
      '[What the reliability report does not cover](limits.md#what-the-reliability-report-does-not-cover).',
    ...historySentence(report),
    '',
    `**${sum((total) => total.messages)} messages, ${sum((total) => total.duplicateDeliveries)} duplicates delivered, ` +
      `${kindsInjected} of ${kindsCounted} fault kinds injected: ` +
      `${sum((total) => total.duplicateEffects)} duplicate effects, ${sum((total) => total.lost)} lost.**`,
    '',
    `Reproduce: \`${report.command}\``,
    '',
    '| run | |',
    '|---|---|',
    `| size | ${formatCount(report.messagesPerSeed)} messages per seed, ${report.seedsPerTopology} seeds per topology |`,
    `| started | ${report.startedAt} |`,
    `| run time | ${formatDuration(report.runSeconds)} |`,
    `| commit | \`${report.commit}\`${report.uncommittedChanges ? ' with uncommitted changes' : ''} |`,
    `| machine | ${machine.cpus} × ${machine.cpuModel}, ${machine.platform}, Node.js ${machine.node} |`,
    `| load average (1 / 5 / 15 min) | ${formatLoad(machine.loadAverageStart)} at the start, ${formatLoad(machine.loadAverageEnd)} at the end |`,
    '',
    `![Faults injected per topology, by kind, summed over the seeds](${CHART_FILE})`,
    '',
    ...report.topologies.flatMap((record) => [topologySection(record), '']),
  ].join('\n');
}

const BAR_WIDTH = 360;
const VALUE_WIDTH = 80;
const ROW = 20;
const TITLE = 30;
const GAP = 14;

/** Renders `docs/reliability.svg`: one panel per topology, one bar per fault kind (its total). */
export function renderSvg(report: ReliabilityReport): string {
  const panels = report.topologies.map((record) => {
    const total = totalOf(record);
    return {
      title: titleOf(record),
      bars: faultNames(record).map((name) => [name, total.faults[name] ?? 0] as const),
    };
  });
  const labelWidth = labelColumnWidth(panels.flatMap(({ bars }) => bars.map(([name]) => name)));
  const width = labelWidth + BAR_WIDTH + VALUE_WIDTH;
  const parts: string[] = [];
  let top = 0;
  for (const { title, bars } of panels) {
    const scaleMax = Math.max(1, ...bars.map(([, value]) => value));
    parts.push(`<text x="12" y="${top + 20}" class="title">${escapeXml(title)}: faults injected</text>`);
    bars.forEach(([name, value], index) => {
      const y = top + TITLE + index * ROW;
      const barWidth = (value / scaleMax) * BAR_WIDTH;
      parts.push(
        `<text x="${labelWidth - 8}" y="${y + 14}" class="label">${escapeXml(name)}</text>`,
        `<rect x="${labelWidth}" y="${y + 4}" width="${barWidth.toFixed(1)}" height="${ROW - 6}" fill="#1f6feb"/>`,
        `<text x="${(labelWidth + barWidth + 6).toFixed(1)}" y="${y + 14}" class="value">${formatCount(value)}</text>`,
      );
    });
    top += TITLE + bars.length * ROW + GAP;
  }
  const height = top + 10;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" font-family="system-ui, sans-serif" font-size="12">`,
    `<title>Faults injected per topology, by kind, summed over the seeds: ${escapeXml(report.command)}</title>`,
    '<style>.title { font-weight: 600; font-size: 14px; } .label { text-anchor: end; fill: #24292f; } .value { fill: #24292f; }</style>',
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}
