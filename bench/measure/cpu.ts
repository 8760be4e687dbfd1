/**
 * Client CPU per record, records per second and retained heap on the stub transport. One
 * warm container per implementation (created once, like a Lambda cold start) processes
 * pre-built batches. Within a repetition the implementations take turns chunk by chunk (a few
 * batches each, in alternating order), so a burst of load from elsewhere on the machine hits
 * them alike. `process.cpuUsage()` brackets each chunk. The stub's own CPU per record is
 * calibrated apart (the requests of a few batches are recorded, then replayed against fresh
 * tables in a tight loop) and subtracted, so the figure is the client's: the handler, the
 * library, and the AWS SDK's serialization, signing and parsing. Each chunk ends with a minor
 * GC inside its bracket, so every implementation pays for collecting its own garbage and none
 * for another's.
 */
import type { SqsEvent } from '../../lambda';
import { type ContainerOptions, createContainer, type Implementation } from '../implementations';
import { alternate, slope } from '../stats';
import {
  createStubTable,
  type RecordedRequest,
  type StubTable,
  stubCpuMicrosPerPass,
} from '../stub/dynamodb-stub';
import { createStubClient, type StubClient } from '../stub/stub-clients';
import {
  type BatchHandler,
  type BenchTables,
  batchOf,
  benchContext,
  type ClientRole,
  tableSchemas,
} from '../workload';

/** Sizes of one CPU repetition. */
export interface CpuPlan {
  readonly batchSize: number;
  /** Batches run before measuring (JIT warm-up), per implementation. */
  readonly warmupBatches: number;
  /** Batches measured per implementation, first delivery and then again as duplicates. */
  readonly batches: number;
  /** Batches per turn. */
  readonly chunkBatches: number;
}

/** One repetition's figures for one implementation. */
export interface CpuSample {
  /** Client CPU (user + system) per record on first delivery, microseconds. */
  readonly cpuMicrosPerRecord: number;
  /** Client CPU per record for duplicates, microseconds. */
  readonly duplicateCpuMicrosPerRecord: number;
  /** Records per second of handler time on first delivery (stub included). */
  readonly recordsPerSecond: number;
  /** Stub CPU per record on first delivery (subtracted from the CPU figures), microseconds. */
  readonly stubMicrosPerRecord: number;
}

/** Batches recorded to calibrate the stub's cost, and how often they are replayed. */
const CALIBRATION_BATCHES = 5;
const CALIBRATION_ROUNDS = 20;

/** Sizes of one retained-heap measurement. */
export interface HeapPlan {
  readonly batchSize: number;
  /** Heap checkpoints after the first (each after a full GC). */
  readonly segments: number;
  /** Batches between checkpoints. */
  readonly batchesPerSegment: number;
}

/** A warm container of one implementation on the stub. */
export interface CpuRig {
  readonly implementation: Implementation;
  readonly table: StubTable;
  readonly handler: BatchHandler;
  readonly stubs: readonly StubClient[];
}

/** Builds the warm container of `implementation`. */
export function createCpuRig(
  implementation: Implementation,
  tables: BenchTables,
  options: ContainerOptions = {},
): CpuRig {
  const table = createStubTable(tableSchemas(tables));
  const stubs: Record<ClientRole, StubClient> = {
    dedup: createStubClient(table),
    business: createStubClient(table),
  };
  const { handler } = createContainer(implementation, (role) => stubs[role].client, tables, options);
  return { implementation, table, handler, stubs: [stubs.dedup, stubs.business] };
}

type Collect = (options?: { type: 'minor' | 'major' }) => void;
const gc = (globalThis as { gc?: Collect }).gc;

/** True when `global.gc` is exposed (`node --expose-gc`, `tsx --expose-gc`). */
export function canCollectGarbage(): boolean {
  return gc !== undefined;
}

function heapAfterFullGc(): number {
  gc?.();
  return process.memoryUsage().heapUsed;
}

interface Totals {
  cpuMicros: number;
  wallNanos: number;
}

async function runChunk(rig: CpuRig, events: readonly SqsEvent[], totals: Totals): Promise<void> {
  const context = benchContext();
  const cpuBefore = process.cpuUsage();
  const started = process.hrtime.bigint();
  for (const event of events) {
    const response = await rig.handler(event, context);
    if (response.batchItemFailures.length > 0) {
      throw new Error(`${rig.implementation.id}: ${response.batchItemFailures.length} records failed`);
    }
  }
  gc?.({ type: 'minor' });
  const wallNanos = Number(process.hrtime.bigint() - started);
  const cpu = process.cpuUsage(cpuBefore);
  totals.cpuMicros += cpu.user + cpu.system;
  totals.wallNanos += wallNanos;
}

/** The stub's CPU per record for first deliveries and duplicates of `rig`'s requests. */
async function calibrateStub(
  rig: CpuRig,
  first: readonly SqsEvent[],
  again: readonly SqsEvent[],
): Promise<{ readonly first: number; readonly duplicate: number }> {
  const scratch: Totals = { cpuMicros: 0, wallNanos: 0 };
  const logs: RecordedRequest[][] = [[], []];
  rig.table.clear();
  for (const [index, events] of [first, again].entries()) {
    for (const { stub } of rig.stubs) stub.record(logs[index]);
    await runChunk(rig, events, scratch);
  }
  for (const { stub } of rig.stubs) stub.record(undefined);
  rig.table.clear();
  const records = first.reduce((sum, event) => sum + event.Records.length, 0);
  const [firstMicros, duplicateMicros] = stubCpuMicrosPerPass(
    () => createStubTable(rig.table.schemas),
    logs,
    CALIBRATION_ROUNDS,
  );
  return { first: firstMicros! / records, duplicate: duplicateMicros! / records };
}

/** Runs one repetition on every rig, taking turns; `repetition` alternates the order. */
export async function measureCpu(
  rigs: readonly CpuRig[],
  plan: CpuPlan,
  run: string,
  repetition: number,
): Promise<Map<string, CpuSample>> {
  const { batchSize, chunkBatches } = plan;
  const batches = (rig: CpuRig, prefix: string, count: number, delivery: number): SqsEvent[] =>
    Array.from({ length: count }, (_, index) =>
      batchOf(`${run}-${rig.implementation.id}-${prefix}`, index * batchSize, batchSize, { delivery }),
    );
  const scratch: Totals = { cpuMicros: 0, wallNanos: 0 };
  const stubCost = new Map<string, { first: number; duplicate: number }>();
  for (const rig of rigs) {
    rig.table.clear();
    await runChunk(rig, batches(rig, 'w', plan.warmupBatches, 0), scratch);
    await runChunk(rig, batches(rig, 'w', plan.warmupBatches, 1), scratch);
    stubCost.set(
      rig.implementation.id,
      await calibrateStub(
        rig,
        batches(rig, 'c', CALIBRATION_BATCHES, 0),
        batches(rig, 'c', CALIBRATION_BATCHES, 1),
      ),
    );
  }

  const totals = new Map(
    rigs.map((rig) => [
      rig.implementation.id,
      {
        first: { cpuMicros: 0, wallNanos: 0 },
        duplicate: { cpuMicros: 0, wallNanos: 0 },
      },
    ]),
  );
  for (const [phase, delivery] of [
    ['first', 0],
    ['duplicate', 1],
  ] as const) {
    const events = new Map(rigs.map((rig) => [rig, batches(rig, 'm', plan.batches, delivery)]));
    for (let chunk = 0; chunk * chunkBatches < plan.batches; chunk++) {
      for (const rig of alternate(rigs, repetition + chunk)) {
        const slice = events.get(rig)!.slice(chunk * chunkBatches, (chunk + 1) * chunkBatches);
        await runChunk(rig, slice, totals.get(rig.implementation.id)![phase]);
      }
    }
  }
  for (const rig of rigs) rig.table.clear();

  const records = plan.batches * batchSize;
  return new Map(
    rigs.map((rig) => {
      const { first, duplicate } = totals.get(rig.implementation.id)!;
      const stub = stubCost.get(rig.implementation.id)!;
      return [
        rig.implementation.id,
        {
          cpuMicrosPerRecord: first.cpuMicros / records - stub.first,
          duplicateCpuMicrosPerRecord: duplicate.cpuMicros / records - stub.duplicate,
          recordsPerSecond: records / (first.wallNanos / 1e9),
          stubMicrosPerRecord: stub.first,
        },
      ];
    }),
  );
}

/**
 * Heap retained per message: fresh messages are processed in segments; after each segment the
 * stub's table is emptied (its items are the "database", not the client's memory) and a full
 * GC runs; the least-squares slope of heap used over messages processed is the retained
 * bytes per message. About 0 means nothing grows with traffic.
 */
export async function measureHeap(rig: CpuRig, plan: HeapPlan, run: string): Promise<number> {
  const { batchSize, batchesPerSegment } = plan;
  const perSegment = batchesPerSegment * batchSize;
  const segments = Array.from({ length: plan.segments }, (_, segment) =>
    Array.from({ length: batchesPerSegment }, (_, index) =>
      batchOf(`${run}-h`, segment * perSegment + index * batchSize, batchSize),
    ),
  );
  const scratch: Totals = { cpuMicros: 0, wallNanos: 0 };
  rig.table.clear();
  const points: [number, number][] = [[0, heapAfterFullGc()]];
  for (const [index, events] of segments.entries()) {
    await runChunk(rig, events, scratch);
    rig.table.clear();
    points.push([(index + 1) * perSegment, heapAfterFullGc()]);
  }
  return slope(points);
}
