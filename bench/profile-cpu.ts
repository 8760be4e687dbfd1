/**
 * `npm run bench:profile`: where the toolkit's own CPU goes. Runs batches of a toolkit mode and
 * of its hand-written mirror (the same DynamoDB calls, `implementations/hand-written.ts`) on the
 * bench's stub rigs, taking turns, under the V8 sampling profiler (`node:inspector`), and prints,
 * per batch:
 * the time by where the code lives (the toolkit's `lambda/**`, the AWS SDK, the stub, the GC),
 * the toolkit's functions by self and total time, the toolkit's stacks folded (a flame graph as
 * text: each line is a stack of toolkit frames, `;`-joined, and its milliseconds), and every
 * function's self time in the toolkit's rig less the mirror's (the collector, the SDK and Node.js
 * included: where the toolkit costs more outside its own code).
 *
 * `--measure` instead runs the bench's own CPU measurement against the same calls
 * (`measure/cpu-pair.ts`: each pair in a process of its own) on just those pairs and prints the
 * paired ratio toolkit / hand-written per mode, with the machine's load (each pair from a
 * minified bundle, as the bench and Lambda run them, with or without `--bundled`). With
 * `--mirror-fingerprint canonical` the mirror hashes the body's canonical form instead of the body
 * as it came, so its markers carry the toolkit's fingerprint byte for byte: the ratio against a
 * mirror that pays for the same canonical form the toolkit computes.
 *
 * `--allocations` instead samples what each rig allocates (V8's sampling heap profiler, objects
 * the collector already freed included: garbage is what the collector then spends time on) and
 * prints bytes per batch by area and by function, the toolkit's less the mirror's. With
 * `--bundled --no-inlining` the bundle runs without TurboFan's inlining, so each function owns
 * the bytes (and time) it spends instead of its caller.
 *
 * `--parts` instead times parts of the toolkit's work per message in tight loops beside the
 * mirror's counterpart of each (`measure/parts.ts`: preparing a message, its fingerprint, the
 * commit's limit checks, a unit of work, atomic mode's commit rounds), medians over
 * `--repetitions`: which part of the difference is large.
 *
 * `--bundled` runs all of it from an esbuild bundle of this file (packages external, as a
 * handler's bundle has the toolkit minus tsx's additions: tsx keeps every function's name with
 * a `__name` call where the function is created, closures included, and reads every import
 * through a getter), with its source map, so the profile reads as the code runs in Lambda.
 *
 * Usage: npm run bench:profile -- [--modes marker,atomic] [--batches 400] [--top 15] [--measure]
 *        [--repetitions 11] [--mirror-fingerprint body|canonical] [--allocations] [--parts]
 *        [--bundled [--no-inlining]]
 */
import { spawnSync } from 'node:child_process';
import { Session } from 'node:inspector/promises';
import { findSourceMap } from 'node:module';
import { cpus, loadavg } from 'node:os';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { buildSync } from 'esbuild';
import { IMPLEMENTATIONS, type Implementation, sameCallsBaseline } from './implementations';
import type { MirrorFingerprint } from './implementations/hand-written';
import { type CpuRig, createCpuRig } from './measure/cpu';
import { alternate, bootstrapMedian, median } from './stats';
import { batchOf, benchContext, DEFAULT_TABLES } from './workload';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

/** The repository root: `npm run` runs scripts there (and a bundle of this file has another `__dirname`). */
const ROOT = process.cwd();
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
  /** Samples by line of the generated code (1-based) where this function was running. */
  readonly positionTicks?: { line: number; ticks: number }[];
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
 * Where a frame's code is in the TypeScript source (zero-based line), through the source map of
 * its file: the one tsx attaches to each file it compiles, or a bundle's under
 * `node --enable-source-maps`. `undefined` for code with a map but no place in the source (what
 * tsx adds); the generated place for code without a map.
 */
function sourceOf(
  url: string,
  lineNumber: number,
  columnNumber: number,
): { path: string; line: number } | undefined {
  const file = url.startsWith('file://') ? fileURLToPath(url) : url;
  const map = file.startsWith('/') ? findSourceMap(file) : undefined;
  if (map === undefined) return { path: pathOf(url), line: lineNumber };
  const entry = map.findEntry(lineNumber, columnNumber);
  if (!('originalSource' in entry)) return undefined;
  return { path: pathOf(entry.originalSource as string), line: entry.originalLine as number };
}

function frameOf(node: ProfileNode): Frame {
  const { functionName, url, lineNumber, columnNumber } = node.callFrame;
  const name = functionName || '(anonymous)';
  const source = sourceOf(url, lineNumber, columnNumber);
  const path = source?.path ?? pathOf(url);
  let area: Area = 'other';
  if (name === '(garbage collector)') area = 'gc';
  else if (path.includes('node_modules/@aws-sdk') || path.includes('node_modules/@smithy')) area = 'sdk';
  else if (path.startsWith('lambda/')) area = source === undefined ? 'tsx' : 'toolkit';
  else if (path.startsWith('bench/stub/')) area = 'stub';
  else if (path.startsWith('bench/')) area = 'bench';
  else if (path.startsWith('node:') || path === '') area = 'node';
  const where = path === '' ? '' : ` ${path}:${(source?.line ?? lineNumber) + 1}`;
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
  /** Toolkit self time by source line (readable under `--bundled`: tsx compiles a file to one line). */
  readonly lines: Map<string, number>;
  /** Self time of every function, whatever its area, keyed `[area] name path:line`. */
  readonly everySelf: Map<string, number>;
}

function add(map: Map<string, number>, key: string, millis: number): void {
  map.set(key, (map.get(key) ?? 0) + millis);
}

function emptySummary(): Summary {
  return {
    totalMillis: 0,
    byArea: new Map(),
    self: new Map(),
    selfByFile: new Map(),
    total: new Map(),
    folded: new Map(),
    lines: new Map(),
    everySelf: new Map(),
  };
}

/** Adds a V8 CPU profile to `summary`: each sample's time goes to its leaf (self) and its stack (total). */
function addProfile(summary: Summary, profile: Profile): void {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parents = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  const frames = new Map(profile.nodes.map((node) => [node.id, frameOf(node)]));
  const selfMillis = new Map<number, number>();
  for (const [index, id] of profile.samples.entries()) {
    // The time of a sample is the gap to the next one (as Chrome DevTools reads it).
    const millis = (profile.timeDeltas[index + 1] ?? 0) / 1000;
    const leaf = frames.get(id)!;
    if (nodes.get(id)!.callFrame.functionName === '(idle)') continue;
    summary.totalMillis += millis;
    summary.byArea.set(leaf.area, (summary.byArea.get(leaf.area) ?? 0) + millis);
    add(summary.everySelf, `[${leaf.area}] ${leaf.key}`, millis);
    if (leaf.area === 'toolkit') {
      selfMillis.set(id, (selfMillis.get(id) ?? 0) + millis);
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
  // A function's self time shared among its lines by their share of its samples.
  for (const [id, millis] of selfMillis) {
    const { callFrame, positionTicks = [] } = nodes.get(id)!;
    const ticks = positionTicks.reduce((sum, position) => sum + position.ticks, 0);
    for (const position of positionTicks) {
      const source = sourceOf(callFrame.url, position.line - 1, 0);
      if (source === undefined) continue;
      add(summary.lines, `${source.path}:${source.line + 1}`, (millis * position.ticks) / ticks);
    }
  }
}

async function runBatches(rig: CpuRig, run: string, first: number, count: number): Promise<void> {
  const context = benchContext();
  for (let index = first; index < first + count; index++) {
    const event = batchOf(run, index * BATCH_SIZE, BATCH_SIZE);
    const response = await rig.handler(event, context);
    if (response.batchItemFailures.length > 0) throw new Error(`${rig.implementation.id}: records failed`);
  }
}

/**
 * Batches per turn when profiling: the toolkit and its mirror take turns, the profiler running
 * only during a turn, so a burst of load from elsewhere on the machine hits both alike (as
 * `measure/cpu.ts` measures).
 */
const TURN_BATCHES = 10;

/** Profiles `batches` first deliveries of each rig after a warm-up, the rigs taking turns. */
async function profileRigs(session: Session, rigs: readonly CpuRig[], batches: number): Promise<Summary[]> {
  const run = `p${Date.now().toString(36)}`;
  const summaries = new Map(rigs.map((rig) => [rig, emptySummary()]));
  for (const rig of rigs) {
    rig.table.clear();
    await runBatches(rig, `${run}-${rig.implementation.id}-w`, 0, Math.max(50, batches / 4));
    rig.table.clear();
  }
  for (let turn = 0; turn * TURN_BATCHES < batches; turn++) {
    for (const rig of alternate(rigs, turn)) {
      await session.post('Profiler.start');
      await runBatches(rig, `${run}-${rig.implementation.id}`, turn * TURN_BATCHES, TURN_BATCHES);
      const { profile } = await session.post('Profiler.stop');
      addProfile(summaries.get(rig)!, profile as unknown as Profile);
    }
  }
  for (const rig of rigs) rig.table.clear();
  return rigs.map((rig) => summaries.get(rig)!);
}

interface AllocationNode {
  readonly callFrame: ProfileNode['callFrame'];
  readonly selfSize: number;
  readonly children: AllocationNode[];
}

/** Bytes per batch by area and by function (self), over `batches` first deliveries of `rig`. */
async function sampleAllocations(session: Session, rig: CpuRig, batches: number): Promise<Summary> {
  const run = `a${Date.now().toString(36)}-${rig.implementation.id}`;
  rig.table.clear();
  await runBatches(rig, `${run}-w`, 0, Math.max(50, batches / 4));
  rig.table.clear();
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 256,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  await runBatches(rig, run, 0, batches);
  const { profile } = await session.post('HeapProfiler.stopSampling');
  rig.table.clear();
  const summary = emptySummary();
  const visit = (node: AllocationNode, toolkitStack: string[]): void => {
    const frame = frameOf({ id: 0, callFrame: node.callFrame });
    const stack = frame.area === 'toolkit' ? [...toolkitStack, frame.key] : toolkitStack;
    if (node.selfSize > 0) {
      summary.totalMillis += node.selfSize;
      add(summary.byArea as Map<string, number>, frame.area, node.selfSize);
      add(summary.everySelf, `[${frame.area}] ${frame.key}`, node.selfSize);
      // Allocated by the SDK or Node.js on the toolkit's behalf: charged to the innermost toolkit frame.
      if (stack.length > 0) add(summary.total, stack.at(-1)!, node.selfSize);
    }
    for (const child of node.children) visit(child, stack);
  };
  visit((profile as unknown as { head: AllocationNode }).head, []);
  return summary;
}

function printAllocations(mode: string, toolkit: Summary, mirror: Summary, batches: number, count: number) {
  const kb = (bytes: number) => (bytes / batches / 1024).toFixed(2).padStart(8);
  const lines = [
    `## ${mode}: KB allocated per batch of ${BATCH_SIZE}, ${batches} batches, first deliveries`,
    '',
  ];
  lines.push(`${'area'.padEnd(8)} ${'toolkit'.padStart(8)} ${'mirror'.padStart(8)}`);
  for (const area of AREAS) {
    const mine = toolkit.byArea.get(area) ?? 0;
    const theirs = mirror.byArea.get(area) ?? 0;
    if (mine > 0 || theirs > 0) lines.push(`${area.padEnd(8)} ${kb(mine)} ${kb(theirs)}`);
  }
  lines.push(`${'all'.padEnd(8)} ${kb(toolkit.totalMillis)} ${kb(mirror.totalMillis)}`, '');
  lines.push('### by innermost toolkit frame (what it allocates itself or through what it calls)');
  for (const [key, bytes] of top(toolkit.total, count)) lines.push(`${kb(bytes)}  ${key}`);
  lines.push('', '### every function by bytes allocated, toolkit rig less mirror rig');
  const difference = new Map(toolkit.everySelf);
  for (const [key, bytes] of mirror.everySelf) difference.set(key, (difference.get(key) ?? 0) - bytes);
  for (const [key, bytes] of top(difference, count)) lines.push(`${kb(bytes)}  ${key}`);
  process.stdout.write(`${lines.join('\n')}\n\n`);
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
    ['toolkit lines by self time (with --bundled)', toolkit.lines],
  ] as const) {
    lines.push('', `### ${title}`);
    for (const [key, millis] of top(map, count)) lines.push(`${perBatch(millis, batches)}  ${key}`);
  }
  // Where the toolkit rig spends more than its mirror outside the toolkit's own code too (the
  // SDK on larger requests, the collector on more garbage): every function's self time, the
  // mirror's subtracted.
  const extra = new Map(toolkit.everySelf);
  for (const [key, millis] of mirror.everySelf) extra.set(key, (extra.get(key) ?? 0) - millis);
  lines.push('', '### every function by self time, toolkit rig less mirror rig');
  for (const [key, millis] of top(extra, count)) lines.push(`${perBatch(millis, batches)}  ${key}`);
  process.stdout.write(`${lines.join('\n')}\n\n`);
}

/** The toolkit row of `mode` and its hand-written mirror. */
function pairOf(mode: string): [Implementation, Implementation] {
  const toolkit = IMPLEMENTATIONS.find((candidate) => candidate.kind === 'toolkit' && candidate.id === mode);
  const mirror = toolkit && sameCallsBaseline(toolkit);
  if (!toolkit || !mirror) throw new Error(`No toolkit mode \`${mode}\` with a hand-written mirror`);
  return [toolkit, mirror];
}

/**
 * The bench's measurement of CPU against the same calls (`npm run bench`, `runCpuPairs`): each
 * pair in a process of its own, one pair after another, with the bench's sizes. Until
 * 2026-12-02 this ran every pair's rigs in one process, where the toolkit's shared functions
 * saw every mode's shapes and the collector every rig's heap: atomic read about 1.5× here
 * against the bench's 1.27×.
 */
async function measure(
  modes: readonly string[],
  repetitions: number,
  mirrorFingerprint: MirrorFingerprint,
): Promise<void> {
  // Loaded here, not at the top: `cpu-pair.ts` runs as a script when it is the main module,
  // which in a bundle of this file (`--bundled`) it would be.
  const { measurePairInOwnProcess } = await import('./measure/cpu-pair');
  const run = `m${Date.now().toString(36)}`;
  const lines = [
    `CPU per record, toolkit / hand-written mirror, paired by repetition (${repetitions} repetitions of ${PAIR_PLAN.batches} batches of ${BATCH_SIZE}), each pair in a process of its own, on ${cpus().length} vCPU; the mirror fingerprints ${MIRROR_FINGERPRINTS[mirrorFingerprint]}:`,
  ];
  for (const mode of modes) {
    const [toolkit, mirror] = pairOf(mode);
    const loadStart = loadavg()[0]!;
    const samples = await measurePairInOwnProcess(
      toolkit.id,
      mirror.id,
      { ...PAIR_PLAN, repetitions, mirrorFingerprint },
      `${run}-${toolkit.id}`,
    );
    const loadEnd = loadavg()[0]!;
    const mine = samples[toolkit.id]!.map((sample) => sample.cpuMicrosPerRecord);
    const theirs = samples[mirror.id]!.map((sample) => sample.cpuMicrosPerRecord);
    const interval = bootstrapMedian(mine.map((value, index) => value / theirs[index]!));
    // Medians of the differences and ratios of pairs: a repetition's two figures move together
    // with the machine (by a third between repetitions on a shared 2-core machine), so the
    // toolkit's median over the mirror's median is no ratio of anything measured together.
    const added = median(mine.map((value, index) => value - theirs[index]!));
    lines.push(
      `${toolkit.id.padEnd(12)} ${interval.median.toFixed(3)}× (95% ${interval.ciLow.toFixed(3)}–${interval.ciHigh.toFixed(3)}); ` +
        `${added.toFixed(1)} µs per record added (${((added * BATCH_SIZE) / 1000).toFixed(3)} ms per batch) to the mirror's ` +
        `${median(theirs).toFixed(1)} (its median); load ${loadStart.toFixed(2)} → ${loadEnd.toFixed(2)}`,
    );
    process.stderr.write(`[profile] CPU against the same calls: ${toolkit.id} / ${mirror.id}\n`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** The bench's sizes of one repetition of a pair (`bench/run.ts`, the full plan). */
const PAIR_PLAN = { batchSize: BATCH_SIZE, warmupBatches: 10, batches: 40, chunkBatches: 5 } as const;

/** What `--mirror-fingerprint` makes the mirror hash, as the report line says it. */
const MIRROR_FINGERPRINTS: Readonly<Record<MirrorFingerprint, string>> = {
  body: 'the body as it came (the bench)',
  canonical: "the body's canonical form, the toolkit's fingerprint byte for byte",
};

/** Where `--bundled` writes the bundle: under `node_modules`, so its packages resolve. */
const BUNDLE = 'node_modules/.cache/profile-cpu/profile-cpu.js';

/** Bundles this file and runs the bundle with `args`, in a child process. */
function runBundled(args: readonly string[], nodeFlags: readonly string[]): void {
  buildSync({
    entryPoints: [__filename],
    bundle: true,
    platform: 'node',
    packages: 'external',
    sourcemap: true,
    outfile: BUNDLE,
    logLevel: 'warning',
  });
  const child = spawnSync(
    process.execPath,
    ['--enable-source-maps', '--expose-gc', ...nodeFlags, BUNDLE, ...args],
    {
      stdio: 'inherit',
    },
  );
  process.exitCode = child.status ?? 1;
}

/** Calls of a part in one repetition (a twentieth of them for a part that awaits). */
const PART_ITERATIONS = 20_000;

async function printParts(repetitions: number): Promise<void> {
  const { measureParts } = await import('./measure/parts');
  const loadBefore = loadavg()[0]!;
  const figures = await measureParts(repetitions, PART_ITERATIONS);
  process.stdout.write(
    `Parts of the toolkit's work beside the mirror's, µs of CPU, median of ${repetitions} repetitions; load ${loadBefore.toFixed(2)} → ${loadavg()[0]!.toFixed(2)} on ${cpus().length} vCPU:\n`,
  );
  for (const figure of figures) {
    const mirror =
      figure.mirrorMicros === undefined
        ? 'no counterpart'
        : `${figure.mirrorMicros.toFixed(2)} (${figure.mirror})`;
    const added =
      figure.mirrorMicros === undefined ? figure.toolkitMicros : figure.toolkitMicros - figure.mirrorMicros;
    process.stdout.write(
      `${figure.part.padEnd(14)} per ${figure.per}: toolkit ${figure.toolkitMicros.toFixed(2)} (${figure.toolkit}); mirror ${mirror}; added ${added.toFixed(2)}\n`,
    );
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      modes: { type: 'string', default: 'marker,atomic,atomic-item,entity' },
      batches: { type: 'string', default: '400' },
      top: { type: 'string', default: '15' },
      measure: { type: 'boolean', default: false },
      repetitions: { type: 'string', default: '11' },
      bundled: { type: 'boolean', default: false },
      allocations: { type: 'boolean', default: false },
      parts: { type: 'boolean', default: false },
      'no-inlining': { type: 'boolean', default: false },
      'mirror-fingerprint': { type: 'string', default: 'body' },
    },
  });
  const mirrorFingerprint = values['mirror-fingerprint'];
  if (!Object.hasOwn(MIRROR_FINGERPRINTS, mirrorFingerprint)) {
    throw new Error(
      `--mirror-fingerprint takes ${Object.keys(MIRROR_FINGERPRINTS).join(' or ')}, not ${mirrorFingerprint}`,
    );
  }
  if (mirrorFingerprint !== 'body' && !values.measure) {
    throw new Error('--mirror-fingerprint applies to --measure only');
  }
  const modes = values.modes.split(',');
  // As the bench measures it (each pair's process runs a bundle of its own), bundled or not.
  if (values.measure) {
    await measure(modes, Number(values.repetitions), mirrorFingerprint as MirrorFingerprint);
    return;
  }
  if (values.bundled) {
    runBundled(
      process.argv.slice(2).filter((arg) => arg !== '--bundled' && arg !== '--no-inlining'),
      // Inlined, a function's allocations and time are charged to its caller.
      values['no-inlining'] ? ['--no-turbo-inlining'] : [],
    );
    return;
  }
  if (values.parts) {
    await printParts(Number(values.repetitions));
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
    if (values.allocations) {
      const toolkitAllocations = await sampleAllocations(session, toolkit, batches);
      const mirrorAllocations = await sampleAllocations(session, mirror, batches);
      printAllocations(mode, toolkitAllocations, mirrorAllocations, batches, Number(values.top));
      continue;
    }
    const [toolkitSummary, mirrorSummary] = (await profileRigs(session, [toolkit, mirror], batches)) as [
      Summary,
      Summary,
    ];
    printProfiles(mode, toolkitSummary, mirrorSummary, batches, Number(values.top));
  }
  session.disconnect();
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
