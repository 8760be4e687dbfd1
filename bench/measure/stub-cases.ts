/**
 * Requests and capacity per message in the four cases, on the stub transport:
 *
 * - `first`: first delivery of fresh messages;
 * - `duplicate`: the same messages again, after the first delivery completed (a producer
 *   resend: new message ids, same bodies);
 * - `inFlight`: the same messages delivered to a second container while the first delivery
 *   is still in flight (its first request has been applied, its responses are held);
 * - `failure`: the user's code throws before writing anything.
 *
 * In every case only the deliveries of that case are counted (for `inFlight`, the second
 * container's).
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { SqsBatchResponse } from '../../lambda';
import { createContainer, type Implementation } from '../implementations';
import type { BatchShape } from '../latency-model';
import { createStubTable, type StubTable, type StubUsage } from '../stub/dynamodb-stub';
import { createStubClient, type StubClient } from '../stub/stub-clients';
import {
  type BatchHandler,
  type BenchTables,
  batchOf,
  benchContext,
  type ClientRole,
  tableSchemas,
} from '../workload';
import type { RequestTracer, TracedRequest } from './traces';

/** The cases measured. */
export const CASES = ['first', 'duplicate', 'inFlight', 'failure'] as const;
export type CaseName = (typeof CASES)[number];

/** What one case cost, per message. */
export interface CaseResult {
  /** Requests per message, all clients. */
  readonly requests: number;
  /** Requests per message sent by the deduplication layer (toolkit, Powertools). */
  readonly dedupRequests: number;
  /** Requests per message sent by the user's own code. */
  readonly businessRequests: number;
  readonly writeUnits: number;
  readonly readUnits: number;
  /** Requests per message by operation. */
  readonly operations: Readonly<Record<string, number>>;
  /** Share of the messages acknowledged (not reported as batch item failures). */
  readonly acknowledged: number;
  /** Business items written per message in this case: 1 on a first delivery, 0 for a suppressed duplicate. */
  readonly effects: number;
  /** The counted delivery's requests, when the cases ran with a tracer. */
  readonly trace?: readonly TracedRequest[];
}

/** A container over stub clients sharing `table`. */
interface StubContainer {
  readonly handler: BatchHandler;
  readonly stubs: Readonly<Record<ClientRole, StubClient>>;
}

function stubContainer(
  implementation: Implementation,
  table: StubTable,
  tables: BenchTables,
  tracer?: RequestTracer,
): StubContainer {
  const stubs = {
    dedup: createStubClient(table, tracer?.wrap('dedup')),
    business: createStubClient(table, tracer?.wrap('business')),
  };
  const container = createContainer(implementation, (role) => stubs[role].client, tables);
  return { handler: container.handler, stubs };
}

function usageOf(container: StubContainer): Record<ClientRole, StubUsage> {
  return { dedup: container.stubs.dedup.stub.usage(), business: container.stubs.business.stub.usage() };
}

function reset(container: StubContainer): void {
  container.stubs.dedup.stub.resetUsage();
  container.stubs.business.stub.resetUsage();
}

function perMessage(
  usage: Record<ClientRole, StubUsage>,
  response: SqsBatchResponse,
  messages: number,
  businessTable: string,
): CaseResult {
  const effects =
    (usage.dedup.itemsWritten[businessTable] ?? 0) + (usage.business.itemsWritten[businessTable] ?? 0);
  const operations: Record<string, number> = {};
  for (const role of ['dedup', 'business'] as const) {
    for (const [operation, count] of Object.entries(usage[role].requests)) {
      operations[operation] = (operations[operation] ?? 0) + count / messages;
    }
  }
  return {
    requests: (usage.dedup.totalRequests + usage.business.totalRequests) / messages,
    dedupRequests: usage.dedup.totalRequests / messages,
    businessRequests: usage.business.totalRequests / messages,
    writeUnits: (usage.dedup.writeUnits + usage.business.writeUnits) / messages,
    readUnits: (usage.dedup.readUnits + usage.business.readUnits) / messages,
    operations,
    acknowledged: (messages - response.batchItemFailures.length) / messages,
    effects: effects / messages,
  };
}

/** Event-loop turns without a new request after which a held delivery is taken to have sent all it can. */
const SETTLED_TURNS = 200;

/**
 * Waits until a held delivery has sent every request it can before its responses are released:
 * at least one, then none new for `SETTLED_TURNS` turns. How many that is depends on the
 * implementation (one per record side by side, or one shared by the batch's records; one for a
 * FIFO group whose records wait for each other).
 */
async function waitForHeldRequests(container: StubContainer): Promise<void> {
  let seen = 0;
  let quiet = 0;
  for (let turn = 0; turn < 100_000; turn++) {
    const { dedup, business } = usageOf(container);
    const sent = dedup.totalRequests + business.totalRequests;
    quiet = sent > 0 && sent === seen ? quiet + 1 : 0;
    seen = sent;
    if (quiet >= SETTLED_TURNS) return;
    await nextTurn();
  }
  throw new Error('The first delivery sent no request');
}

/**
 * Runs the four cases for `implementation` with batches of `shape` (its record count; FIFO
 * message groups when it has `groups`) of run `run`. With a `tracer`, each case's counted
 * delivery is traced (its result carries `trace`).
 */
export async function runStubCases(
  implementation: Implementation,
  tables: BenchTables,
  run: string,
  shape: BatchShape,
  tracer?: RequestTracer,
): Promise<Record<CaseName, CaseResult>> {
  const batchSize = shape.records;
  const groups = shape.groups === undefined ? {} : { groups: shape.groups };
  const table = createStubTable(tableSchemas(tables));
  const context = benchContext();
  const traced = (result: CaseResult): CaseResult => (tracer ? { ...result, trace: tracer.take() } : result);

  // First delivery, then the duplicate (a resend: same bodies, new message ids).
  const first = stubContainer(implementation, table, tables, tracer);
  const event = batchOf(`${run}-a`, 0, batchSize, groups);
  const firstResponse = await first.handler(event, context);
  const firstResult = traced(perMessage(usageOf(first), firstResponse, batchSize, tables.orders));
  reset(first);
  const duplicateResponse = await first.handler(
    batchOf(`${run}-a`, 0, batchSize, { ...groups, delivery: 1 }),
    context,
  );
  const duplicateResult = traced(perMessage(usageOf(first), duplicateResponse, batchSize, tables.orders));

  // In flight: a second container receives the messages while the first one's responses are held.
  table.clear();
  const holder = stubContainer(implementation, table, tables);
  const second = stubContainer(implementation, table, tables, tracer);
  const releases = [holder.stubs.dedup.stub.hold(), holder.stubs.business.stub.hold()];
  const inFlightEvent = batchOf(`${run}-b`, 0, batchSize, groups);
  const held = holder.handler(inFlightEvent, context);
  await waitForHeldRequests(holder);
  const secondResponse = await second.handler(
    batchOf(`${run}-b`, 0, batchSize, { ...groups, delivery: 1 }),
    context,
  );
  const secondUsage = usageOf(second);
  for (const release of releases) release();
  await held;
  const inFlightResult = traced(perMessage(secondUsage, secondResponse, batchSize, tables.orders));

  // Handler failure: the user's code throws before writing.
  table.clear();
  const failing = stubContainer(implementation, table, tables, tracer);
  const failureEvent = batchOf(`${run}-c`, 0, batchSize, { ...groups, simulateFailure: true });
  const failureResponse = await failing.handler(failureEvent, context);
  const failureResult = traced(perMessage(usageOf(failing), failureResponse, batchSize, tables.orders));

  return { first: firstResult, duplicate: duplicateResult, inFlight: inFlightResult, failure: failureResult };
}
