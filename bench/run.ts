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
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { CEILING_INPUTS, ceilingsOf, hotItemCeiling } from './ceilings';
import { availableImplementations, type Implementation, sameCallsBaseline } from './implementations';
import {
  BATCH_SHAPES,
  type BatchShape,
  type BatchShapeName,
  LATENCY_SOURCES,
  type LatencyFigures,
  operationLatencies,
  SIMULATION,
  sharesRequests,
  simulateBatches,
  simulateTrace,
} from './latency-model';
import { bundleHandler, bundleToolkitRuntime, createInitTimer, type HandlerBundle } from './measure/bundles';
import { type CpuSample, canCollectGarbage, createCpuRig, measureCpu, measureHeap } from './measure/cpu';
import { measurePairInOwnProcess, type PairSamples } from './measure/cpu-pair';
import {
  createEmulatorContainer,
  type EmulatorSample,
  measureEmulator,
  startEmulatorRig,
} from './measure/emulator';
import { CASES, type CaseName, type CaseResult, runStubCases } from './measure/stub-cases';
import { createRequestTracer, type TracedRequest } from './measure/traces';
import { blended, COST_ASSUMPTIONS, dollarsPerMillion, PRICES } from './prices';
import { batchTraceFigures } from './report/batch-requests';
import { loadVerdict, QUIET_LOAD_PER_CPU } from './report/load';
import { renderMarkdown } from './report/markdown';
import type { BenchResults, CaseFigures, ImplementationFigures } from './report/results';
import { renderSvg } from './report/svg';
import { DOLLARS_FIRST_BEFORE_BATCH_COMMIT, evaluateTargets } from './report/targets';
import { alternate, bootstrapMedian, type MedianInterval, median, type Summary, summarize } from './stats';
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
    cpuRepetitions: 11,
    // Each pair of the toolkit and its same-calls mirror, in a process of its own: a pair's
    // ratio moved by up to 0.09 between two runs of 11 on a loaded 2-core machine; 33 narrow its
    // interval to about ±0.03-0.05 for about a minute more.
    pairRepetitions: 33,
    warmupBatches: 10,
    cpuBatches: 40,
    chunkBatches: 5,
    heapRepetitions: 5,
    heapSegments: 3,
    heapBatchesPerSegment: 10,
    initRepetitions: 11,
    emulatorRepetitions: 5,
    emulatorMessages: 150,
    emulatorPollers: 4,
  },
  quick: {
    caseRepetitions: 2,
    batchSize: 10,
    cpuRepetitions: 2,
    pairRepetitions: 2,
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
        { records: plan.batchSize },
      );
      for (const name of CASES) samples.get(implementation.id)![name].push(results[name]);
    }
  }
  const figures: Record<string, Record<string, CaseFigures>> = {};
  for (const [id, byCase] of samples) {
    figures[id] = {};
    for (const name of CASES) {
      const results = byCase[name];
      const pick = (field: keyof Omit<CaseResult, 'operations' | 'trace'>) =>
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

/** The traced cases of every reported batch shape: first deliveries and duplicates. */
type ShapeTraces = Record<BatchShapeName, Record<'first' | 'duplicate', TracedRequest[]>>;

/**
 * Request traces per implementation: one record's requests per case (the cases again, a batch of
 * 1, traced), and the requests of a whole batch of each reported shape, first deliveries and
 * duplicates (the batch of 1 is the same run as the record's).
 */
async function runTraces(implementations: readonly Implementation[], run: string) {
  const traces: Record<string, Record<CaseName, TracedRequest[]>> = {};
  const batchTraces: Record<string, ShapeTraces> = {};
  for (const implementation of implementations) {
    const byShape = {} as ShapeTraces;
    for (const [name, shape] of shapeEntries()) {
      const tracer = createRequestTracer();
      const results = await runStubCases(
        implementation,
        DEFAULT_TABLES,
        `${run}-t-${name}-${implementation.id}`,
        shape,
        tracer,
      );
      const traceOf = (caseName: CaseName) => [...(results[caseName].trace ?? [])];
      byShape[name] = { first: traceOf('first'), duplicate: traceOf('duplicate') };
      if (name === 'single') {
        traces[implementation.id] = Object.fromEntries(
          CASES.map((caseName) => [caseName, traceOf(caseName)]),
        ) as Record<CaseName, TracedRequest[]>;
      }
    }
    batchTraces[implementation.id] = byShape;
  }
  return { traces, batchTraces };
}

/** The reported batch shapes, by name. */
function shapeEntries(): [BatchShapeName, BatchShape][] {
  return Object.entries(BATCH_SHAPES) as [BatchShapeName, BatchShape][];
}

/** Where a modelled figure comes from: one record's trace and the schedule, or the batch's own trace. */
type LatencyBasis = 'record trace' | 'batch trace';

/**
 * Modelled latency per implementation, batch shape and case. A batch whose trace shares a request
 * between records is modelled from that trace (`simulateTrace`); any other from one record's
 * trace and the implementation's schedule (`simulateBatches`), which keeps each record's steps
 * its own (the tracer merges the steps of records running side by side) and the concurrency limit.
 */
function modelLatency(
  implementations: readonly Implementation[],
  traces: Readonly<Record<string, Readonly<Record<CaseName, readonly TracedRequest[]>>>>,
  batchTraces: Readonly<Record<string, ShapeTraces>>,
) {
  const latency: Record<string, Record<BatchShapeName, Record<'first' | 'duplicate', LatencyFigures>>> = {};
  const basis: Record<string, Record<BatchShapeName, Record<'first' | 'duplicate', LatencyBasis>>> = {};
  for (const implementation of implementations) {
    const id = implementation.id;
    const byShape = {} as Record<BatchShapeName, Record<'first' | 'duplicate', LatencyFigures>>;
    const basisByShape = {} as Record<BatchShapeName, Record<'first' | 'duplicate', LatencyBasis>>;
    for (const [name, shape] of shapeEntries()) {
      const model = (caseName: 'first' | 'duplicate'): [LatencyFigures, LatencyBasis] => {
        const recordTrace = traces[id]![caseName];
        const batchTrace = batchTraces[id]![name][caseName];
        return sharesRequests(recordTrace, batchTrace, shape)
          ? [simulateTrace(batchTrace), 'batch trace']
          : [simulateBatches(recordTrace, shape, implementation.schedule), 'record trace'];
      };
      const [first, firstBasis] = model('first');
      const [duplicate, duplicateBasis] = model('duplicate');
      byShape[name] = { first, duplicate };
      basisByShape[name] = { first: firstBasis, duplicate: duplicateBasis };
    }
    latency[id] = byShape;
    basis[id] = basisByShape;
  }
  return { latency, basis };
}

/** What a batch trace sends, order aside: its requests by operation, size and answer. */
function requestSignature(trace: readonly TracedRequest[]): string {
  return trace
    .map((request) => `${request.operation}(${request.items.length}):${request.outcome}`)
    .sort()
    .join(',');
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

/**
 * Each toolkit row with a same-calls baseline measured against it in a process of their own
 * (`measure/cpu-pair.ts`: a Lambda process runs one handler configuration), one pair after
 * another. By toolkit row.
 */
async function runCpuPairs(
  plan: Plan,
  implementations: readonly Implementation[],
  baselineOf: (implementation: Implementation) => Implementation | undefined,
  run: string,
): Promise<Map<string, PairSamples>> {
  const pairs = new Map<string, PairSamples>();
  for (const implementation of implementations) {
    const baseline = baselineOf(implementation);
    if (!baseline) continue;
    const samples = await measurePairInOwnProcess(
      implementation.id,
      baseline.id,
      {
        batchSize: plan.batchSize,
        warmupBatches: plan.warmupBatches,
        batches: plan.cpuBatches,
        chunkBatches: plan.chunkBatches,
        repetitions: plan.pairRepetitions,
      },
      `${run}-pair-${implementation.id}`,
    );
    pairs.set(implementation.id, samples);
    progress(`CPU against the same calls: ${implementation.id} / ${baseline.id}`);
  }
  return pairs;
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

/** The id of the bare handler's identical twin bundle (init-time noise band). */
const TWIN = 'bare-identical-twin';

async function runBundles(plan: Plan, implementations: readonly Implementation[]) {
  const bundles = new Map<string, HandlerBundle>();
  for (const implementation of implementations)
    bundles.set(implementation.id, await bundleHandler(implementation));
  const runtime = await bundleToolkitRuntime();
  // Two identical bundles of the bare handler: their difference is the noise of the measurement.
  const timer = createInitTimer(new Map([...bundles, [TWIN, bundles.get('bare')!]]));
  const ids = [...implementations.map((i) => i.id), TWIN];
  const init = new Map<string, number[]>(ids.map((id) => [id, []]));
  try {
    for (let repetition = 0; repetition < plan.initRepetitions; repetition++) {
      for (const id of alternate(ids, repetition)) {
        init.get(id)!.push(await timer.measure(id));
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
    // Does the endpoint report ConsumedCapacity? One put asks for it.
    const probe = await rig.dynamoDb.send(
      new PutItemCommand({
        TableName: rig.tables.orders,
        Item: { pk: { S: `capacity-probe-${run}` } },
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    const consumedCapacity = probe.ConsumedCapacity ?? null;
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
      consumedCapacity,
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
  if (!loadVerdict({ cpus: cpus().length, loadAverageStart, loadAverageEnd: loadAverageStart }).quiet) {
    progress(
      `1-minute load ${loadAverageStart[0]?.toFixed(1)} on ${cpus().length} vCPU is above the quiet threshold (${QUIET_LOAD_PER_CPU} per vCPU): the report will flag the CPU figures unless it drops`,
    );
  }
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

  const cases = await timedPhase(timings, 'stub cases', () => runCases(plan, available, run));
  const { traces, batchTraces } = await timedPhase(timings, 'request traces', () =>
    runTraces(available, run),
  );
  const { latency, basis: latencyBasis } = modelLatency(available, traces, batchTraces);
  // The hand-written baseline whose batch of 10 makes the same requests (first deliveries).
  const baselineOf = (implementation: Implementation) =>
    sameCallsBaseline(
      implementation,
      (baseline) =>
        batchTraces[baseline.id] !== undefined &&
        requestSignature(batchTraces[baseline.id]!.batch.first) ===
          requestSignature(batchTraces[implementation.id]!.batch.first),
    );
  const { rigs, samples: cpuSamples } = await timedPhase(timings, 'CPU and throughput (stub)', () =>
    runCpu(plan, available, run),
  );
  // Each toolkit row against its same-calls baseline, the pair in a process of its own.
  const pairSamples = await timedPhase(timings, 'CPU against the same calls (a process per pair)', () =>
    runCpuPairs(plan, compared, baselineOf, run),
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
  const bundled = await timedPhase(timings, 'bundles and init time', () => runBundles(plan, available));
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
  /** The CPU per record of `id` in its pair's own process (`pairOf`'s key: the toolkit row). */
  const pairCpuMicros = (pairOf: string) =>
    new Map(
      Object.entries(pairSamples.get(pairOf) ?? {}).map(([id, s]) => [
        id,
        s.map((x) => x.cpuMicrosPerRecord),
      ]),
    );
  const cpuVsSameCalls = byId(
    compared.flatMap((implementation) => {
      const baseline = baselineOf(implementation);
      const summary =
        baseline && pairedRatios(pairCpuMicros(implementation.id), implementation.id, baseline.id);
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

  // CPU against the same calls: paired ratios with a bootstrap interval, and ms added per batch.
  const cpuRatioVsSameCallsInterval: Record<string, MedianInterval> = {};
  const cpuMillisAddedPerBatch: Record<string, { median: number; ciHigh: number }> = {};
  for (const implementation of compared) {
    const baseline = baselineOf(implementation);
    const pair = pairCpuMicros(implementation.id);
    const values = pair.get(implementation.id);
    const references = baseline && pair.get(baseline.id);
    if (!values || !references || values.length !== references.length) continue;
    cpuRatioVsSameCallsInterval[implementation.id] = bootstrapMedian(
      values.map((value, index) => value / references[index]!),
    );
    // Microseconds per record on this machine's one core, taken as one Lambda vCPU (1,769 MB).
    const added = bootstrapMedian(
      values.map((value, index) => ((value - references[index]!) * plan.batchSize) / 1000),
    );
    cpuMillisAddedPerBatch[implementation.id] = { median: added.median, ciHigh: added.ciHigh };
  }

  // Init: paired differences to the bare handler; the identical twin's give the noise band.
  const bareInit = bundled.init.get('bare')!;
  const pairedDifferences = (id: string) =>
    bundled.init.get(id)!.map((value, index) => value - bareInit[index]!);
  const twinDifferences = pairedDifferences(TWIN);
  const initNoise = {
    differencesMillis: twinDifferences,
    bandMillis: Math.max(...twinDifferences.map(Math.abs)),
    method:
      'two byte-identical bundles of the bare handler required in fresh processes, in alternating order with the others; ' +
      'the band is the largest absolute paired difference between them over the repetitions',
  };
  const initAddedMillis = byId(available.map((i) => [i.id, median(pairedDifferences(i.id))] as const));

  // Dollars per million: measured units (batch of 10), modelled mean duration of the batch.
  const dollars = byId(
    available.map((implementation) => {
      const byCase = cases[implementation.id]!;
      const costOf = (name: 'first' | 'duplicate') =>
        dollarsPerMillion({
          writeUnits: byCase[name]!.writeUnits.median,
          readUnits: byCase[name]!.readUnits.median,
          batchMillis: latency[implementation.id]!.batch[name].mean,
        });
      const first = costOf('first');
      const duplicate = costOf('duplicate');
      return [
        implementation.id,
        { first, duplicate, blended: blended(first.total, duplicate.total) },
      ] as const;
    }),
  );

  const byImplementation = byId(
    available.map((implementation): readonly [string, ImplementationFigures] => {
      const id = implementation.id;
      const byCase = cases[id]!;
      const interval = cpuRatioVsSameCallsInterval[id];
      return [
        id,
        {
          latencyMillisPerBatch: { p50: latency[id]!.batch.first.p50, p99: latency[id]!.batch.first.p99 },
          dollarsPerMillion: {
            first: dollars[id]!.first.total,
            duplicate: dollars[id]!.duplicate.total,
            blended: dollars[id]!.blended,
          },
          writeUnitsPerMessage: {
            first: byCase.first!.writeUnits.median,
            duplicate: byCase.duplicate!.writeUnits.median,
          },
          requestsPerMessage: {
            first: byCase.first!.requests.median,
            duplicate: byCase.duplicate!.requests.median,
          },
          initMillis: median(bundled.init.get(id)!),
          cpuRatioVsSameCalls: interval ? { median: interval.median, ciHigh: interval.ciHigh } : null,
        },
      ];
    }),
  );

  const sameCallsIds = byId(
    toolkitModes.map((id) => [id, baselineOf(available.find((i) => i.id === id)!)?.id] as const),
  );

  const ceilingRows = available
    .filter((implementation) => !implementation.cpuOnly)
    .map((implementation) =>
      ceilingsOf(
        implementation.id,
        traces[implementation.id]!.first,
        latency[implementation.id]!.single.first.p50,
        latency[implementation.id]!.batch.first.p50,
      ),
    );
  const featureRows = Object.fromEntries(
    available.filter((i) => i.feature !== undefined).map((i) => [i.feature!, i.id] as const),
  );
  const consumedCapacity = emulator?.consumedCapacity;
  const loadAverageEnd = loadavg();
  const load = loadVerdict({ cpus: cpus().length, loadAverageStart, loadAverageEnd });
  if (!load.quiet) progress(load.text.replaceAll('**', ''));

  const results: BenchResults = {
    schemaVersion: 2,
    generatedAt: new Date().toISOString(),
    quick,
    environment: {
      node: process.version,
      platform: `${process.platform} ${process.arch}`,
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      loadAverageStart,
      loadAverageEnd,
      gcExposed: canCollectGarbage(),
      powertoolsVersion: versionOf('@aws-lambda-powertools/idempotency'),
      awsSdkVersion: versionOf('@aws-sdk/client-dynamodb'),
      emulator: emulator?.endpoint ?? null,
    },
    plan: { ...plan },
    timings,
    implementations: available.map(({ id, label }) => ({ id, label })),
    byImplementation,
    latencyModel: {
      sources: LATENCY_SOURCES,
      operations: operationLatencies(),
      simulation: { ...SIMULATION },
      distribution:
        'log-normal per request with the published median and p99 (shape ln(p99/p50) / 2.326), drawn from a seeded generator; ' +
        "a record's requests one after another, a batch's records as its implementation schedules them; " +
        "where a batch's trace shares a request between records (atomic mode's batch commit), the batch from its own trace: " +
        'its steps one after another, the requests of a step side by side',
      assumptions: [
        'conditional and unconditional writes take the same time (no source separates them)',
        'a request that fails its condition (ConditionalCheckFailedException) takes as long as one that succeeds',
        'UpdateItem, DeleteItem and GetItem take as long as PutItem (no published percentiles from Lambda)',
        'TransactWriteItems latency is linear in the item count through the measured 5 and 25 items, extended below 5',
        "client CPU time is not in the modelled wall time (it is reported apart: 'CPU added per batch')",
      ],
      schedules: byId(
        available.map((i) => [
          i.id,
          {
            concurrency: Number.isFinite(i.schedule.concurrency) ? i.schedule.concurrency : ('all' as const),
            fifo: i.schedule.fifo,
            basis: i.schedule.basis,
          },
        ]),
      ),
    },
    traces,
    ...batchTraceFigures(batchTraces, latencyBasis),
    latencyBasis,
    sameCallsBaselines: byId(toolkitModes.map((id) => [id, sameCallsIds[id] ?? null] as const)),
    latency,
    prices: PRICES,
    costAssumptions: {
      lambdaMemoryMegabytes: COST_ASSUMPTIONS.lambdaMemoryMegabytes,
      batchSize: COST_ASSUMPTIONS.batchSize,
      duplicateRate: COST_ASSUMPTIONS.duplicateRate,
      sqsRequestsPerMessage: COST_ASSUMPTIONS.sqsRequestsPerMessage(COST_ASSUMPTIONS.batchSize),
      lambdaDuration:
        'the modelled mean DynamoDB wall time of the batch of 10, rounded up to the next ms (client CPU time not included)',
    },
    dollars,
    capacitySource: {
      units: 'formula',
      emulatorReportsConsumedCapacity: consumedCapacity === undefined ? null : consumedCapacity !== null,
      detail:
        consumedCapacity === undefined
          ? `the emulator did not run (${emulatorError ?? 'unknown'}); units are the documented formula, computed by the stub`
          : consumedCapacity === null
            ? 'the emulator answered a PutItem with ReturnConsumedCapacity: TOTAL without ConsumedCapacity, so every unit is the documented formula, computed by the stub'
            : `MiniStack reports ConsumedCapacity (${JSON.stringify(consumedCapacity)} for a 1-attribute PutItem), so the emulator run measures units per first delivery (the "emulator" column of the write-unit table); the dollars use the documented formula computed by the stub, which is AWS's metering rule, where the emulator's figure is its own computation`,
    },
    initNoise,
    initAddedMillis,
    cpuRatioVsSameCallsInterval,
    cpuMillisAddedPerBatch,
    ceilings: { inputs: CEILING_INPUTS, rows: ceilingRows, hotItem: hotItemCeiling() },
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
    emulatorConsumedUnitsPerMessage: emulator
      ? byId(
          [...emulator.samples].map(([id, s]) => {
            const units = s.map((x) => x.consumedUnitsPerMessage);
            return [id, units.some((u) => u === null) ? null : median(units as number[])] as const;
          }),
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
      toolkitRows: toolkitModes,
      featureRows,
      sameCalls: sameCallsIds,
      toolkitRequests: byId(
        toolkitModes.map((id) => [
          id,
          {
            first: cases[id]!.first!.dedupRequests.median,
            duplicate: cases[id]!.duplicate!.dedupRequests.median,
          },
        ]),
      ),
      requests: byId(
        Object.entries(byImplementation).map(([id, figures]) => [id, figures.requestsPerMessage] as const),
      ),
      writeUnits: byId(
        Object.entries(byImplementation).map(([id, figures]) => [id, figures.writeUnitsPerMessage] as const),
      ),
      latencyP50: byId(
        Object.entries(byImplementation).map(
          ([id, figures]) => [id, figures.latencyMillisPerBatch.p50] as const,
        ),
      ),
      latencyP99: byId(
        Object.entries(byImplementation).map(
          ([id, figures]) => [id, figures.latencyMillisPerBatch.p99] as const,
        ),
      ),
      atomicDefault: 'atomic',
      dollarRows: comparedIds,
      dollarsFirstBefore: DOLLARS_FIRST_BEFORE_BATCH_COMMIT,
      dollarsFirst: byId(
        Object.entries(byImplementation).map(
          ([id, figures]) => [id, figures.dollarsPerMillion.first] as const,
        ),
      ),
      cpuRatioVsSameCalls: cpuRatioVsSameCallsInterval,
      quietRun: load.quiet,
      initAddedMillis,
      initNoiseBandMillis: initNoise.bandMillis,
      peer: 'powertools',
    }),
  };

  const directory = quick ? join(tmpdir(), 'effectively-once-bench-quick') : join(ROOT, 'bench', 'results');
  mkdirSync(directory, { recursive: true });
  const markdown = renderMarkdown(results, {
    svgPath: quick ? join(directory, 'latest.svg') : 'latest.svg',
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
