/**
 * The latency model: what a batch's DynamoDB requests cost in wall time on AWS, from published
 * measurements, so the benchmark can report latency the stub cannot show (a stubbed request
 * answers in microseconds). Deterministic: a seeded generator draws every request's latency,
 * so machine load cannot move a figure.
 *
 * Each operation's latency is a log-normal distribution fitted to a published median (p50) and
 * p99: median `p50`, shape `ln(p99 / p50) / z(0.99)`. A record's requests run step by step
 * (the traces say which requests of a record overlap: none do, in any implementation
 * measured); records of a batch run as their implementation runs them (`BatchSchedule`).
 *
 * Where one request serves several records (atomic mode's batch commit: one `TransactWriteItems`
 * for the messages that reach their commit together), a per-record trace cannot show it, so such a
 * batch is modelled from its own trace instead (`simulateTrace`): its steps in order, the requests
 * of a step side by side.
 */
import type { TracedRequest } from './measure/traces';
import { seededRandom } from './stats';

/** A published measurement (or AWS statement) the model's numbers come from. */
export interface LatencySource {
  readonly title: string;
  readonly url: string;
  /** When it was published, as precisely as the source says. */
  readonly published: string;
  /** Exactly what was measured, and how. */
  readonly measured: string;
}

/** The sources, by id. */
export const LATENCY_SOURCES = {
  debrie2020: {
    title:
      'Alex DeBrie, "DynamoDB Transactions Performance Testing" (results table in the dynamodb-performance-testing repository)',
    url: 'https://www.alexdebrie.com/posts/dynamodb-transactions-performance/',
    published: '2020-02',
    measured:
      'client-side latency of single requests from an AWS Lambda function (Python, boto3) to a DynamoDB table ' +
      'in the same region, 400 invocations per configuration: PutItem of one item p50 7.55 ms, p99 16.2 ms; ' +
      'TransactWriteItems of 5 items p50 25.3 ms, p99 92.5 ms; of 25 items p50 32.1 ms, p99 97.5 ms; of 5 items ' +
      'with one failing condition (the transaction cancelled) p50 25.3 ms, p99 84.9 ms.',
  },
  cui2018: {
    title: 'Yan Cui, "Lambda optimization tip: enable HTTP keep-alive"',
    url: 'https://hackernoon.com/lambda-optimization-tip-enable-http-keep-alive-6dc503f6f114',
    published: '2018',
    measured:
      'average latency of a PutItem from a Node.js Lambda function: about 10 ms with HTTP keep-alive, 33 ms ' +
      'without (the AWS SDK v3 keeps connections alive by default). Corroborates the PutItem median; not used ' +
      'as an input.',
  },
  awsKnowledgeCenter: {
    title: 'AWS re:Post Knowledge Center, "How can I troubleshoot high latency on an Amazon DynamoDB table?"',
    url: 'https://repost.aws/knowledge-center/dynamodb-high-latency',
    published: 'undated (read 2026-12)',
    measured:
      'an AWS statement, not a measurement: "For most atomic operations, such as GetItem and PutItem, an ' +
      'average latency is in single-digit milliseconds". The basis for treating single-item reads and writes ' +
      'alike.',
  },
} as const satisfies Record<string, LatencySource>;

/** One row of the model: the latency of one kind of request. */
export interface OperationLatency {
  /** `PutItem`, `TransactWriteItems (2 items)`, ... */
  readonly request: string;
  readonly p50Millis: number;
  readonly p99Millis: number;
  readonly source: keyof typeof LATENCY_SOURCES;
  /** "measured" figures are the source's own; anything else states the assumption and its basis. */
  readonly basis: string;
}

/** The single-item operations: one published figure, and the assumptions extending it. */
const SINGLE_ITEM = { p50Millis: 7.55, p99Millis: 16.2 } as const;

/** TransactWriteItems medians and p99s at 5 and 25 items, committed and cancelled. */
const TRANSACTIONS = {
  committed: { five: { p50Millis: 25.3, p99Millis: 92.5 }, twentyFive: { p50Millis: 32.1, p99Millis: 97.5 } },
  // The source measured cancelled transactions at 5 items only; the committed slope is reused.
  cancelledFive: { p50Millis: 25.3, p99Millis: 84.9 },
} as const;

const SINGLE_ITEM_OPERATIONS = {
  PutItem: 'measured (the source PutItem, one item)',
  UpdateItem:
    'assumption: no published UpdateItem percentiles; taken equal to PutItem, a single-item write on the same ' +
    'path (AWS: single-item operations average single-digit milliseconds)',
  DeleteItem: 'assumption: as UpdateItem, taken equal to PutItem',
  GetItem:
    'assumption: no published GetItem percentiles from Lambda; taken equal to PutItem (AWS groups GetItem ' +
    'and PutItem as single-digit milliseconds); a strongly consistent read goes to the leader like a write',
} as const;

/** The p50 and p99 of a `TransactWriteItems` of `items` items, `cancelled` or committed. */
export function transactionLatency(
  items: number,
  cancelled: boolean,
): { p50Millis: number; p99Millis: number } {
  const { five, twentyFive } = TRANSACTIONS.committed;
  const perItem = {
    p50Millis: (twentyFive.p50Millis - five.p50Millis) / 20,
    p99Millis: (twentyFive.p99Millis - five.p99Millis) / 20,
  };
  const base = cancelled ? TRANSACTIONS.cancelledFive : five;
  return {
    p50Millis: base.p50Millis + perItem.p50Millis * (items - 5),
    p99Millis: base.p99Millis + perItem.p99Millis * (items - 5),
  };
}

const TRANSACTION_BASIS =
  'assumption: linear in the item count through the two measured sizes (5 and 25 items), extended below 5 ' +
  'items; the two-phase protocol (prepare, then commit) is a fixed cost that dominates, so a 2-item ' +
  'transaction is modelled at about 3x a PutItem';

/**
 * The rows of the model (as the report prints them): every single-item operation and the
 * transaction sizes the implementations send. Conditional and unconditional writes share a row:
 * no source separates them, and the condition is checked on the same leader replica that
 * applies the write (an assumption, stated in the report).
 */
export function operationLatencies(transactionSizes: readonly number[] = [1, 2, 3]): OperationLatency[] {
  const rows: OperationLatency[] = Object.entries(SINGLE_ITEM_OPERATIONS).map(([request, basis]) => ({
    request,
    ...SINGLE_ITEM,
    source: request === 'PutItem' ? 'debrie2020' : 'awsKnowledgeCenter',
    basis,
  }));
  for (const items of transactionSizes) {
    rows.push({
      request: `TransactWriteItems (${items} item${items === 1 ? '' : 's'})`,
      ...transactionLatency(items, false),
      source: 'debrie2020',
      basis: TRANSACTION_BASIS,
    });
    rows.push({
      request: `TransactWriteItems (${items} item${items === 1 ? '' : 's'}, cancelled)`,
      ...transactionLatency(items, true),
      source: 'debrie2020',
      basis: `${TRANSACTION_BASIS}; cancelled: the source's 5-item cancelled figures, the same slope`,
    });
  }
  return rows;
}

/** The p50 and p99 the model uses for one traced request. */
export function latencyOf(request: Pick<TracedRequest, 'operation' | 'items' | 'outcome'>): {
  p50Millis: number;
  p99Millis: number;
} {
  if (request.operation === 'TransactWriteItems') {
    return transactionLatency(request.items.length, request.outcome === 'TransactionCanceledException');
  }
  if (request.operation in SINGLE_ITEM_OPERATIONS) return SINGLE_ITEM;
  throw new Error(`The latency model has no figure for ${request.operation}`);
}

/** z(0.99): the standard normal's 99th percentile. */
const Z99 = 2.326_347_874;

/** One draw from the log-normal distribution with median `p50` and 99th percentile `p99`. */
export function drawLatency(random: () => number, p50: number, p99: number): number {
  // Box-Muller; 1 - u keeps the logarithm finite.
  const u = 1 - random();
  const v = random();
  const normal = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  return p50 * Math.exp((Math.log(p99 / p50) / Z99) * normal);
}

/** How an implementation runs the records of one batch. */
export interface BatchSchedule {
  /** Records in flight at once on a standard queue (`Infinity`: all of them). */
  readonly concurrency: number;
  /**
   * On a FIFO queue: `per-group`, records of one message group in order and groups side by side
   * (up to `concurrency`); `one-at-a-time`, the whole batch in order.
   */
  readonly fifo: 'per-group' | 'one-at-a-time';
  /** Where this schedule was read from. */
  readonly basis: string;
}

/** One modelled batch shape. */
export interface BatchShape {
  readonly records: number;
  /** `undefined`: a standard queue; otherwise the number of FIFO message groups (records dealt round-robin). */
  readonly groups?: number;
}

/**
 * The wall time of a trace: its steps one after another, the requests of a step side by side
 * (the step takes as long as its slowest request). One draw per request, in trace order.
 */
export function traceMillis(trace: readonly TracedRequest[], random: () => number): number {
  let total = 0;
  let step = -1;
  let stepMillis = 0;
  for (const request of trace) {
    if (request.step !== step) {
      total += stepMillis;
      step = request.step;
      stepMillis = 0;
    }
    const { p50Millis, p99Millis } = latencyOf(request);
    stepMillis = Math.max(stepMillis, drawLatency(random, p50Millis, p99Millis));
  }
  return total + stepMillis;
}

/**
 * The wall time of one batch whose every record makes the requests of `trace`: records start
 * in batch order on the earliest free slot of `concurrency`, each after the record before it in
 * its message group (FIFO) has finished.
 */
export function batchMillis(
  trace: readonly TracedRequest[],
  shape: BatchShape,
  schedule: BatchSchedule,
  random: () => number,
): number {
  const fifo = shape.groups !== undefined;
  const sequential = fifo && schedule.fifo === 'one-at-a-time';
  const slots = Array.from(
    { length: Math.min(sequential ? 1 : schedule.concurrency, shape.records) },
    () => 0,
  );
  const groupFinish = new Map<number, number>();
  let end = 0;
  for (let index = 0; index < shape.records; index++) {
    const group = fifo ? index % shape.groups! : undefined;
    const ready = group === undefined ? 0 : (groupFinish.get(group) ?? 0);
    let slot = 0;
    for (let candidate = 1; candidate < slots.length; candidate++) {
      if (slots[candidate]! < slots[slot]!) slot = candidate;
    }
    const finish = Math.max(ready, slots[slot]!) + traceMillis(trace, random);
    slots[slot] = finish;
    if (group !== undefined) groupFinish.set(group, finish);
    end = Math.max(end, finish);
  }
  return end;
}

/** The model's verdict on one scenario. */
export interface LatencyFigures {
  readonly p50: number;
  readonly p99: number;
  readonly mean: number;
}

/** The `q`-quantile of sorted values (nearest rank). */
function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
}

/** Simulation size and seed: fixed, so the figures are reproducible. */
export const SIMULATION = { batches: 10_000, seed: 20_260_101 } as const;

/**
 * p50, p99 and mean wall time of `batches` simulated batches. Every implementation draws from
 * the same seeded sequence, so two implementations making the same requests get the same figures.
 */
export function simulateBatches(
  trace: readonly TracedRequest[],
  shape: BatchShape,
  schedule: BatchSchedule,
  options: { readonly batches?: number; readonly seed?: number } = {},
): LatencyFigures {
  const random = seededRandom(options.seed ?? SIMULATION.seed);
  const batches = options.batches ?? SIMULATION.batches;
  const samples: number[] = [];
  for (let n = 0; n < batches; n++) samples.push(batchMillis(trace, shape, schedule, random));
  return figuresOf(samples);
}

/** p50, p99 and mean of simulated batch times. */
function figuresOf(samples: number[]): LatencyFigures {
  samples.sort((a, b) => a - b);
  return {
    p50: quantile(samples, 0.5),
    p99: quantile(samples, 0.99),
    mean: samples.reduce((sum, value) => sum + value, 0) / samples.length,
  };
}

/**
 * p50, p99 and mean wall time of a batch that makes the requests of `trace` (a whole batch's
 * trace), simulated `batches` times from the same seeded sequence as `simulateBatches`. Where each
 * record makes one request and the records run all side by side (one step) or one after another
 * (one step each), the figures equal `simulateBatches` over one record's trace: the same draws in
 * the same order. Records of several requests side by side would differ: the tracer merges their
 * steps, so the model would wait for the slowest record at every step, not only at the end.
 */
export function simulateTrace(
  trace: readonly TracedRequest[],
  options: { readonly batches?: number; readonly seed?: number } = {},
): LatencyFigures {
  const random = seededRandom(options.seed ?? SIMULATION.seed);
  const batches = options.batches ?? SIMULATION.batches;
  const samples: number[] = [];
  for (let n = 0; n < batches; n++) samples.push(traceMillis(trace, random));
  return figuresOf(samples);
}

/**
 * True when a batch's trace makes fewer requests than its records make one by one: some request
 * serves several records, which only the batch's own trace shows.
 */
export function sharesRequests(
  recordTrace: readonly TracedRequest[],
  batchTrace: readonly TracedRequest[],
  shape: BatchShape,
): boolean {
  return batchTrace.length < recordTrace.length * shape.records;
}

/** The batch shapes reported. */
export const BATCH_SHAPES = {
  single: { records: 1 },
  batch: { records: 10 },
  fifoOneGroup: { records: 10, groups: 1 },
  fifoTenGroups: { records: 10, groups: 10 },
} as const satisfies Record<string, BatchShape>;

/** Names of the reported shapes. */
export type BatchShapeName = keyof typeof BATCH_SHAPES;
