/**
 * `npm run bench:profile`: where the toolkit's own CPU goes. Runs batches of a toolkit mode and
 * of its hand-written mirror (the same DynamoDB calls, `implementations/hand-written.ts`) on the
 * bench's stub rigs under the V8 sampling profiler (`node:inspector`), and prints, per batch:
 * the time by where the code lives (the toolkit's `lambda/**`, the AWS SDK, the stub, the GC),
 * the toolkit's functions by self and total time, and the toolkit's stacks folded (a flame
 * graph as text: each line is a stack of toolkit frames, `;`-joined, and its milliseconds).
 *
 * `--measure` instead runs the bench's own CPU measurement (`measure/cpu.ts`) on just those
 * pairs and prints the paired ratio toolkit / hand-written per mode, with the machine's load.
 *
 * Usage: npm run bench:profile -- [--modes marker,atomic] [--batches 400] [--top 15] [--measure]
 *        [--repetitions 7]
 */
import { Session } from 'node:inspector/promises';
import { findSourceMap } from 'node:module';
import { cpus, loadavg } from 'node:os';
import { relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { IMPLEMENTATIONS, type Implementation } from './implementations';
import { type CpuRig, createCpuRig, measureCpu } from './measure/cpu';
import { bootstrapMedian } from './stats';
import { batchOf, benchContext, DEFAULT_TABLES } from './workload';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

const ROOT = resolve(__dirname, '..');
const BATCH_SIZE = 10;
/** Sampling interval of the profiler, microseconds (V8's default is 1000). */
const SAMPLING_MICROS = 50;

/**
 * Where a frame's code lives. `tsx` is code tsx adds to the toolkit's modules and a bundle does
 * not have (`__name`, which keeps the names of functions, and the getters of CommonJS exports):
 * frames of `lambda/**` with no place in the TypeScript source.
 */
type Area = 'toolkit' | 'tsx' | 'sdk' | 'stub' | 'bench' | 'node' | 'gc' | 'other';

/** One function of the profile: name and where it is defined. */
interface Frame {
  readonly name: string;
  /** `name path:line`. */
  readonly key: string;
  readonly path: string;
  readonly area: Area;
}

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  readonly children?: number[];
}

interface Profile {
  readonly nodes: ProfileNode[];
  readonly samples: number[];
  readonly timeDeltas: number[];
}

function pathOf(url: string): string {
  if (url.startsWith('file://')) return relative(ROOT, fileURLToPath(url));
  return url.startsWith('/') ? relative(ROOT, url) : url;
}

/**
 * The line (zero-based) in the TypeScript source of a frame, through the source map tsx attaches
 * (it compiles each file to one line); `undefined` for code with no place in the source.
 */
function sourceLineOf(url: string, lineNumber: number, columnNumber: number): number | undefined {
  const path = url.startsWith('file://') ? fileURLToPath(url) : url;
  if (!path.startsWith('/')) return lineNumber;
  const map = findSourceMap(path);
  if (map === undefined) return lineNumber;
  const entry = map.findEntry(lineNumber, columnNumber);
  return 'originalLine' in entry ? (entry.originalLine as number) : undefined;
}

function frameOf(node: ProfileNode): Frame {
  const { functionName, url, lineNumber, columnNumber } = node.callFrame;
  const path = pathOf(url);
  const name = functionName || '(anonymous)';
  const line = sourceLineOf(url, lineNumber, columnNumber);
  let area: Area = 'other';
  if (name === '(garbage collector)') area = 'gc';
  else if (path.includes('node_modules/@aws-sdk') || path.includes('node_modules/@smithy')) area = 'sdk';
  else if (path.startsWith('lambda/')) area = line === undefined ? 'tsx' : 'toolkit';
  else if (path.startsWith('bench/stub/')) area = 'stub';
  else if (path.startsWith('bench/')) area = 'bench';
  else if (path.startsWith('node:') || path === '') area = 'node';
  const where = path === '' ? '' : ` ${path}:${(line ?? lineNumber) + 1}`;
  return { name, key: `${name}${where}`, path, area };
}

/** Milliseconds by area, by toolkit function (self and total), and by folded toolkit stack. */
interface Summary {
  totalMillis: number;
  readonly byArea: Map<Area, number>;
  readonly self: Map<string, number>;
  readonly selfByFile: Map<string, number>;
  readonly total: Map<string, number>;
  readonly folded: Map<string, number>;
}

function add(map: Map<string, number>, key: string, millis: number): void {
  map.set(key, (map.get(key) ?? 0) + millis);
}

/** Reads a V8 CPU profile: each sample's time goes to its leaf (self) and its stack (total). */
function summarize(profile: Profile): Summary {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parents = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  const frames = new Map(profile.nodes.map((node) => [node.id, frameOf(node)]));
  const summary: Summary = {
    totalMillis: 0,
    byArea: new Map(),
    self: new Map(),
    selfByFile: new Map(),
    total: new Map(),
    folded: new Map(),
  };
  for (const [index, id] of profile.samples.entries()) {
    // The time of a sample is the gap to the next one (as Chrome DevTools reads it).
    const millis = (profile.timeDeltas[index + 1] ?? 0) / 1000;
    const leaf = frames.get(id)!;
    if (nodes.get(id)!.callFrame.functionName === '(idle)') continue;
    summary.totalMillis += millis;
    summary.byArea.set(leaf.area, (summary.byArea.get(leaf.area) ?? 0) + millis);
    if (leaf.area === 'toolkit') {
      add(summary.self, leaf.key, millis);
      add(summary.selfByFile, leaf.path, millis);
    }
    const stack: Frame[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parents.get(at)) stack.push(frames.get(at)!);
    const toolkit = stack.filter((frame) => frame.area === 'toolkit').reverse();
    for (const key of new Set(toolkit.map((frame) => frame.key))) add(summary.total, key, millis);
    if (toolkit.length > 0) {
      const names = toolkit.map((frame) => frame.name);
      // A toolkit stack whose leaf is elsewhere ends in that area, e.g. `…;send;[sdk]`.
      if (leaf.area !== 'toolkit') names.push(`[${leaf.area}]`);
      add(summary.folded, names.join(';'), millis);
    }
  }
  return summary;
}

async function runBatches(rig: CpuRig, run: string, batches: number, delivery: number): Promise<void> {
  const context = benchContext();
  for (let index = 0; index < batches; index++) {
    const event = batchOf(run, index * BATCH_SIZE, BATCH_SIZE, { delivery });
    const response = await rig.handler(event, context);
    if (response.batchItemFailures.length > 0) throw new Error(`${rig.implementation.id}: records failed`);
  }
}

/** Profiles `batches` first deliveries of `rig` after a warm-up, with the stub table emptied first. */
async function profileRig(session: Session, rig: CpuRig, batches: number): Promise<Summary> {
  const run = `p${Date.now().toString(36)}-${rig.implementation.id}`;
  rig.table.clear();
  await runBatches(rig, `${run}-w`, Math.max(50, batches / 4), 0);
  rig.table.clear();
  await session.post('Profiler.start');
  await runBatches(rig, run, batches, 0);
  const { profile } = await session.post('Profiler.stop');
  rig.table.clear();
  return summarize(profile as unknown as Profile);
}

const AREAS: readonly Area[] = ['toolkit', 'tsx', 'sdk', 'stub', 'bench', 'node', 'gc', 'other'];

function top(map: Map<string, number>, count: number): [string, number][] {
  return [...map].sort((a, b) => b[1] - a[1]).slice(0, count);
}

function perBatch(millis: number, batches: number): string {
  return (millis / batches).toFixed(3).padStart(7);
}

function printProfiles(mode: string, toolkit: Summary, mirror: Summary, batches: number, count: number) {
  const lines = [`## ${mode}: ms per batch of ${BATCH_SIZE}, ${batches} batches, first deliveries`, ''];
  lines.push(`${'area'.padEnd(8)} ${'toolkit'.padStart(7)} ${'mirror'.padStart(7)}`);
  for (const area of AREAS) {
    lines.push(
      `${area.padEnd(8)} ${perBatch(toolkit.byArea.get(area) ?? 0, batches)} ${perBatch(mirror.byArea.get(area) ?? 0, batches)}`,
    );
  }
  lines.push(
    `${'all'.padEnd(8)} ${perBatch(toolkit.totalMillis, batches)} ${perBatch(mirror.totalMillis, batches)}`,
  );
  for (const [title, map] of [
    ['toolkit files by self time', toolkit.selfByFile],
    ['toolkit functions by self time', toolkit.self],
    ['toolkit functions by total time (self and callees, SDK included)', toolkit.total],
    ['toolkit stacks, folded', toolkit.folded],
  ] as const) {
    lines.push('', `### ${title}`);
    for (const [key, millis] of top(map, count)) lines.push(`${perBatch(millis, batches)}  ${key}`);
  }
  process.stdout.write(`${lines.join('\n')}\n\n`);
}

/** The toolkit row of `mode` and its hand-written mirror. */
function pairOf(mode: string): [Implementation, Implementation] {
  const find = (kind: Implementation['kind']) =>
    IMPLEMENTATIONS.find((candidate) => candidate.kind === kind && candidate.mode === mode);
  const toolkit = find('toolkit');
  const mirror = find('hand-written');
  if (!toolkit || !mirror) throw new Error(`No toolkit mode \`${mode}\` with a hand-written mirror`);
  return [toolkit, mirror];
}

async function measure(modes: readonly string[], repetitions: number): Promise<void> {
  const pairs = modes.map(pairOf);
  const rigs = pairs.flat().map((implementation) => createCpuRig(implementation, DEFAULT_TABLES));
  const samples = new Map<string, number[]>(rigs.map((rig) => [rig.implementation.id, []]));
  const loadStart = loadavg()[0]!;
  const run = `m${Date.now().toString(36)}`;
  for (let repetition = 0; repetition < repetitions; repetition++) {
    const round = await measureCpu(
      rigs,
      { batchSize: BATCH_SIZE, warmupBatches: 10, batches: 40, chunkBatches: 5 },
      `${run}-${repetition}`,
      repetition,
    );
    for (const [id, sample] of round) samples.get(id)!.push(sample.cpuMicrosPerRecord);
    process.stderr.write(`[profile] CPU repetition ${repetition + 1}/${repetitions}\n`);
  }
  const loadEnd = loadavg()[0]!;
  const lines = [
    `CPU per record, toolkit / hand-written mirror, paired by repetition (${repetitions} repetitions, 40 batches of ${BATCH_SIZE} each);`,
    `1-minute load ${loadStart.toFixed(2)} at the start, ${loadEnd.toFixed(2)} at the end, on ${cpus().length} vCPU`,
  ];
  for (const [toolkit, mirror] of pairs) {
    const mine = samples.get(toolkit.id)!;
    const theirs = samples.get(mirror.id)!;
    const interval = bootstrapMedian(mine.map((value, index) => value / theirs[index]!));
    lines.push(
      `${toolkit.id.padEnd(12)} ${interval.median.toFixed(3)}× (95% ${interval.ciLow.toFixed(3)}–${interval.ciHigh.toFixed(3)})`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      modes: { type: 'string', default: 'marker,atomic,atomic-item,entity' },
      batches: { type: 'string', default: '400' },
      top: { type: 'string', default: '15' },
      measure: { type: 'boolean', default: false },
      repetitions: { type: 'string', default: '7' },
    },
  });
  const modes = values.modes.split(',');
  if (values.measure) {
    await measure(modes, Number(values.repetitions));
    return;
  }
  const batches = Number(values.batches);
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: SAMPLING_MICROS });
  process.stdout.write(
    `1-minute load ${loadavg()[0]!.toFixed(2)} on ${cpus().length} vCPU; sampling every ${SAMPLING_MICROS} µs\n\n`,
  );
  for (const mode of modes) {
    const [toolkit, mirror] = pairOf(mode).map((implementation) =>
      createCpuRig(implementation, DEFAULT_TABLES),
    ) as [CpuRig, CpuRig];
    const mirrorSummary = await profileRig(session, mirror, batches);
    const toolkitSummary = await profileRig(session, toolkit, batches);
    printProfiles(mode, toolkitSummary, mirrorSummary, batches, Number(values.top));
  }
  session.disconnect();
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
