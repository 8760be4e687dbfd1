/**
 * `npm run bench`: this toolkit in each mode, a bare handler and Powertools idempotency, on
 * the same inputs in one process, repetitions in alternating order. Writes
 * `bench/results/latest.{json,md,svg}` and prints the markdown report on stdout (progress goes
 * to stderr). `--quick` runs a small smoke version and writes its files to the system's
 * temporary directory instead, leaving the committed results alone; `--no-emulator` skips the
 * end-to-end run on the local emulator.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { availableImplementations, type Implementation, sameCallsBaseline } from './implementations';
import { bundleHandler, bundleToolkitRuntime, createInitTimer, type HandlerBundle } from './measure/bundles';
import { type CpuSample, canCollectGarbage, createCpuRig, measureCpu, measureHeap } from './measure/cpu';
import {
  createEmulatorContainer,
  type EmulatorSample,
  measureEmulator,
  startEmulatorRig,
} from './measure/emulator';
import { CASES, type CaseName, type CaseResult, runStubCases } from './measure/stub-cases';
import { renderMarkdown } from './report/markdown';
import type { BenchResults, CaseFigures } from './report/results';
import { renderSvg } from './report/svg';
import { evaluateTargets } from './report/targets';
import { alternate, type Summary, summarize } from './stats';
import { CAPACITY_FORMULA } from './stub/capacity';
import { createStubTable } from './stub/dynamodb-stub';
import { createStubClient } from './stub/stub-clients';
import { DEFAULT_TABLES } from './workload';

// The AWS SDK warns once per process that Node 20 support ends; it is noise in a benchmark.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
// Powertools' logger, should anything in it log, stays quiet.
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';
process.env.POWERTOOLS_DEV = 'false';

const ROOT = resolve(__dirname, '..');

/** Sizes of a run. */
const PLANS = {
  full: {
    caseRepetitions: 5,
    batchSize: 10,
    cpuRepetitions: 7,
    warmupBatches: 10,
    cpuBatches: 40,
    chunkBatches: 5,
    heapRepetitions: 5,
    heapSegments: 3,
    heapBatchesPerSegment: 10,
    initRepetitions: 7,
    emulatorRepetitions: 5,
    emulatorMessages: 150,
    emulatorPollers: 4,
  },
  quick: {
    caseRepetitions: 2,
    batchSize: 10,
    cpuRepetitions: 2,
    warmupBatches: 3,
    cpuBatches: 6,
    chunkBatches: 2,
    heapRepetitions: 2,
    heapSegments: 2,
    heapBatchesPerSegment: 3,
    initRepetitions: 2,
    emulatorRepetitions: 2,
    emulatorMessages: 30,
    emulatorPollers: 4,
  },
} as const;

type Plan = (typeof PLANS)[keyof typeof PLANS];

const progress = (line: string): void => {
  process.stderr.write(`[bench] ${line}\n`);
};

function versionOf(packageName: string): string {
  try {
    const text = readFileSync(join(ROOT, 'node_modules', ...packageName.split('/'), 'package.json'), 'utf8');
    return (JSON.parse(text) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

function byId<T>(entries: Iterable<readonly [string, T]>): Record<string, T> {
  return Object.fromEntries(entries);
}

/** Paired ratios: for each repetition, `samples[id][r] / samples[reference][r]`. */
function pairedRatios(
  samples: ReadonlyMap<string, number[]>,
  id: string,
  reference: string,
): Summary | undefined {
  const values = samples.get(id);
  const references = samples.get(reference);
  if (!values || !references || values.length !== references.length) return undefined;
  return summarize(values.map((value, index) => value / references[index]!));
}

async function timedPhase<T>(
  timings: Record<string, number>,
  name: string,
  work: () => Promise<T>,
): Promise<T> {
  const started = Date.now();
  try {
    return await work();
  } finally {
    timings[name] = (Date.now() - started) / 1000;
    progress(`${name}: ${timings[name]!.toFixed(1)} s`);
  }
}

async function runCases(plan: Plan, implementations: readonly Implementation[], run: string) {
  const samples = new Map<string, Record<CaseName, CaseResult[]>>();
  for (const implementation of implementations) {
    samples.set(implementation.id, { first: [], duplicate: [], inFlight: [], failure: [] });
  }
  for (let repetition = 0; repetition < plan.caseRepetitions; repetition++) {
    for (const implementation of alternate(implementations, repetition)) {
      const results = await runStubCases(
        implementation,
        DEFAULT_TABLES,
        `${run}-c${repetition}-${implementation.id}`,
        plan.batchSize,
      );
      for (const name of CASES) samples.get(implementation.id)![name].push(results[name]);
    }
  }
  const figures: Record<string, Record<string, CaseFigures>> = {};
  for (const [id, byCase] of samples) {
    figures[id] = {};
    for (const name of CASES) {
      const results = byCase[name];
      const pick = (field: keyof Omit<CaseResult, 'operations'>) =>
        summarize(results.map((result) => result[field]));
      figures[id]![name] = {
        requests: pick('requests'),
        dedupRequests: pick('dedupRequests'),
        businessRequests: pick('businessRequests'),
        writeUnits: pick('writeUnits'),
        readUnits: pick('readUnits'),
        acknowledged: pick('acknowledged'),
        effects: pick('effects'),
        operations: results[results.length - 1]!.operations,
      };
    }
  }
  return figures;
}

async function runCpu(plan: Plan, implementations: readonly Implementation[], run: string) {
  const rigs = implementations.map((implementation) => createCpuRig(implementation, DEFAULT_TABLES));
  const samples = new Map<string, CpuSample[]>(implementations.map((i) => [i.id, []]));
  for (let repetition = 0; repetition < plan.cpuRepetitions; repetition++) {
    const round = await measureCpu(
      rigs,
      {
        batchSize: plan.batchSize,
        warmupBatches: plan.warmupBatches,
        batches: plan.cpuBatches,
        chunkBatches: plan.chunkBatches,
      },
      `${run}-p${repetition}`,
      repetition,
    );
    for (const [id, sample] of round) samples.get(id)!.push(sample);
    progress(`CPU repetition ${repetition + 1}/${plan.cpuRepetitions}`);
  }
  return { rigs, samples };
}

async function runHeap(plan: Plan, rigs: ReturnType<typeof createCpuRig>[], run: string) {
  const samples = new Map<string, number[]>(rigs.map((rig) => [rig.implementation.id, []]));
  for (let repetition = 0; repetition < plan.heapRepetitions; repetition++) {
    for (const rig of alternate(rigs, repetition)) {
      const bytes = await measureHeap(
        rig,
        {
          batchSize: plan.batchSize,
          segments: plan.heapSegments,
          batchesPerSegment: plan.heapBatchesPerSegment,
        },
        `${run}-h${repetition}-${rig.implementation.id}`,
      );
      samples.get(rig.implementation.id)!.push(bytes);
    }
  }
  return samples;
}

async function runBundles(plan: Plan, implementations: readonly Implementation[]) {
  const bundles = new Map<string, HandlerBundle>();
  for (const implementation of implementations)
    bundles.set(implementation.id, await bundleHandler(implementation));
  const runtime = await bundleToolkitRuntime();
  const timer = createInitTimer(bundles);
  const init = new Map<string, number[]>(implementations.map((i) => [i.id, []]));
  try {
    for (let repetition = 0; repetition < plan.initRepetitions; repetition++) {
      for (const implementation of alternate(implementations, repetition)) {
        init.get(implementation.id)!.push(await timer.measure(implementation.id));
      }
    }
  } finally {
    timer.dispose();
  }
  return { bundles, runtime, init };
}

async function runEmulator(plan: Plan, implementations: readonly Implementation[], run: string) {
  const rig = await startEmulatorRig(run, progress);
  try {
    const subjects = [];
    for (const implementation of implementations) {
      subjects.push(await createEmulatorContainer(rig, implementation, run));
    }
    const samples = new Map<string, EmulatorSample[]>(implementations.map((i) => [i.id, []]));
    for (let repetition = 0; repetition < plan.emulatorRepetitions; repetition++) {
      for (const subject of alternate(subjects, repetition)) {
        const sample = await measureEmulator(rig, subject, {
          messages: plan.emulatorMessages,
          pollers: plan.emulatorPollers,
          run: `${run}-e${repetition}-${subject.implementation.id}`,
        });
        samples.get(subject.implementation.id)!.push(sample);
      }
      progress(`emulator repetition ${repetition + 1}/${plan.emulatorRepetitions}`);
    }
    return {
      samples,
      endpoint: rig.aws.started ? `MiniStack (started, ${rig.aws.endpoint})` : rig.aws.endpoint,
    };
  } finally {
    await rig.close();
  }
}

async function main(): Promise<void> {
  const args = new Set(process.argv.slice(2));
  if (args.has('--help')) {
    process.stdout.write('Usage: npm run bench [-- --quick] [-- --no-emulator]\n');
    return;
  }
  const quick = args.has('--quick');
  const plan: Plan = quick ? PLANS.quick : PLANS.full;
  const run = `b${Date.now().toString(36)}`;
  const started = Date.now();
  const loadAverageStart = loadavg();
  const timings: Record<string, number> = {};
  if (!canCollectGarbage())
    progress('global.gc is not exposed: retained heap is not measured (use tsx --expose-gc)');

  const probeTable = createStubTable({});
  const { available, missing } = availableImplementations(
    () => createStubClient(probeTable).client,
    DEFAULT_TABLES,
  );
  const unavailable = missing.map((implementation) => ({
    id: implementation.id,
    label: implementation.label,
    reason: 'not yet available (the toolkit does not accept this mode)',
  }));
  for (const entry of unavailable) progress(`${entry.label}: ${entry.reason}`);
  const compared = available.filter((implementation) => !implementation.cpuOnly);
  const toolkitModes = compared.filter((i) => i.kind === 'toolkit').map((i) => i.id);

  const cases = await timedPhase(timings, 'stub cases', () => runCases(plan, compared, run));
  const { rigs, samples: cpuSamples } = await timedPhase(timings, 'CPU and throughput (stub)', () =>
    runCpu(plan, available, run),
  );
  const heap = canCollectGarbage()
    ? await timedPhase(timings, 'retained heap', () =>
        runHeap(
          plan,
          rigs.filter((rig) => !rig.implementation.cpuOnly),
          run,
        ),
      )
    : undefined;
  const bundled = await timedPhase(timings, 'bundles and init time', () => runBundles(plan, compared));
  let emulator: Awaited<ReturnType<typeof runEmulator>> | undefined;
  let emulatorError: string | null = null;
  if (args.has('--no-emulator')) {
    emulatorError = 'skipped (--no-emulator)';
  } else {
    try {
      emulator = await timedPhase(timings, 'emulator end to end', () => runEmulator(plan, compared, run));
    } catch (error) {
      emulatorError = (error as Error).message;
      progress(`emulator run failed: ${emulatorError}`);
    }
  }
  timings.total = (Date.now() - started) / 1000;

  const cpuMicros = new Map([...cpuSamples].map(([id, s]) => [id, s.map((x) => x.cpuMicrosPerRecord)]));
  const throughput = new Map([...cpuSamples].map(([id, s]) => [id, s.map((x) => x.recordsPerSecond)]));
  const summaries = (values: ReadonlyMap<string, number[]>, ids: readonly string[] = [...values.keys()]) =>
    byId(ids.map((id) => [id, summarize(values.get(id)!)] as const));
  const medianRatios = (values: ReadonlyMap<string, number[]>, reference: string, ids: readonly string[]) =>
    byId(
      ids.flatMap((id) => {
        const summary = pairedRatios(values, id, reference);
        return summary ? [[id, summary] as const] : [];
      }),
    );
  const allIds = available.map((i) => i.id);
  const comparedIds = compared.map((i) => i.id);
  const cpuVsBare = medianRatios(cpuMicros, 'bare', allIds);
  const cpuVsPowertools = medianRatios(cpuMicros, 'powertools', allIds);
  const throughputVsPowertools = medianRatios(throughput, 'powertools', allIds);
  const throughputVsBare = medianRatios(throughput, 'bare', allIds);
  const cpuVsSameCalls = byId(
    compared.flatMap((implementation) => {
      const baseline = sameCallsBaseline(implementation);
      const summary = baseline && pairedRatios(cpuMicros, implementation.id, baseline.id);
      return summary ? [[implementation.id, summary] as const] : [];
    }),
  );
  const medians = (ratios: Record<string, Summary>) =>
    byId(Object.entries(ratios).map(([id, summary]) => [id, summary.median] as const));

  const emulatorThroughput = emulator
    ? new Map([...emulator.samples].map(([id, s]) => [id, s.map((x) => x.recordsPerSecond)]))
    : undefined;
  const bundleSizes = byId(
    [...bundled.bundles].map(([id, b]) => [
      id,
      {
        withSdk: b.withSdk,
        withoutSdk: b.withoutSdk,
        addedVsBareMinified: b.withoutSdk.minified - bundled.bundles.get('bare')!.withoutSdk.minified,
      },
    ]),
  );

  const results: BenchResults = {
    schemaVersion: 1,
    generatedAt: new Date().toISOString(),
    quick,
    environment: {
      node: process.version,
      platform: `${process.platform} ${process.arch}`,
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      loadAverageStart,
      loadAverageEnd: loadavg(),
      gcExposed: canCollectGarbage(),
      powertoolsVersion: versionOf('@aws-lambda-powertools/idempotency'),
      awsSdkVersion: versionOf('@aws-sdk/client-dynamodb'),
      emulator: emulator?.endpoint ?? null,
    },
    plan: { ...plan },
    timings,
    implementations: available.map(({ id, label }) => ({ id, label })),
    unavailable,
    capacityFormula: CAPACITY_FORMULA,
    requestsPerMessage: byId(
      Object.entries(cases).map(([id, byCase]) => [
        id,
        byId(Object.entries(byCase).map(([name, figures]) => [name, figures.requests.median] as const)),
      ]),
    ),
    writeUnitsPerMessage: byId(
      Object.entries(cases).map(([id, byCase]) => [
        id,
        byId(Object.entries(byCase).map(([name, figures]) => [name, figures.writeUnits.median] as const)),
      ]),
    ),
    cases,
    cpuMicrosPerRecord: summaries(cpuMicros),
    duplicateCpuMicrosPerRecord: summaries(
      new Map([...cpuSamples].map(([id, s]) => [id, s.map((x) => x.duplicateCpuMicrosPerRecord)])),
    ),
    stubMicrosPerRecord: summaries(
      new Map([...cpuSamples].map(([id, s]) => [id, s.map((x) => x.stubMicrosPerRecord)])),
    ),
    cpuRatioVsBare: medians(cpuVsBare),
    cpuRatioVsBareDetail: cpuVsBare,
    cpuRatioVsPowertools: medians(cpuVsPowertools),
    cpuRatioVsSameCalls: cpuVsSameCalls,
    recordsPerSecondStub: summaries(throughput),
    throughputRatioVsPowertools: medians(throughputVsPowertools),
    throughputRatioVsPowertoolsDetail: throughputVsPowertools,
    throughputRatioVsBare: medians(throughputVsBare),
    recordsPerSecondEmulator: emulatorThroughput ? summaries(emulatorThroughput, comparedIds) : null,
    emulatorThroughputRatioVsPowertools: emulatorThroughput
      ? medians(medianRatios(emulatorThroughput, 'powertools', comparedIds))
      : null,
    emulatorThroughputRatioVsBare: emulatorThroughput
      ? medians(medianRatios(emulatorThroughput, 'bare', comparedIds))
      : null,
    emulatorRequestsPerMessage: emulator
      ? byId(
          [...emulator.samples].map(
            ([id, s]) => [id, summarize(s.map((x) => x.requestsPerMessage)).median] as const,
          ),
        )
      : null,
    emulatorError,
    retainedHeapBytesPerMessage: heap ? summaries(heap) : null,
    bundles: bundleSizes,
    initMillis: summaries(bundled.init),
    runtimeBytesMinified: bundled.runtime.minified,
    runtimeBytesGzip: bundled.runtime.gzip,
    runtimeFiles: bundled.runtime.files,
    targets: evaluateTargets({
      modes: toolkitModes,
      toolkitRequests: byId(
        toolkitModes.map((id) => [
          id,
          {
            first: cases[id]!.first!.dedupRequests.median,
            duplicate: cases[id]!.duplicate!.dedupRequests.median,
          },
        ]),
      ),
      cpuRatioVsBare: cpuVsBare,
      cpuRatioVsSameCalls: cpuVsSameCalls,
      throughputRatioVsPowertools: throughputVsPowertools,
      runtimeBytesMinified: bundled.runtime.minified,
    }),
  };

  const directory = quick ? join(tmpdir(), 'effectively-once-bench-quick') : join(ROOT, 'bench', 'results');
  mkdirSync(directory, { recursive: true });
  const markdown = renderMarkdown(results, {
    svgPath: quick ? join(directory, 'latest.svg') : 'bench/results/latest.svg',
  });
  writeFileSync(join(directory, 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(join(directory, 'latest.svg'), renderSvg(results));
  writeFileSync(join(directory, 'latest.md'), markdown);
  process.stdout.write(markdown);
  progress(`wrote ${join(directory, 'latest')}.{json,md,svg} in ${timings.total!.toFixed(0)} s`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error)?.stack ?? String(error)}\n`);
  process.exitCode = 1;
});
