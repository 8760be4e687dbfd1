/**
 * Throughput ceilings: a table computed from quotas and the measured write units, not a run.
 * Each input is named with its source. Messages per second are what one table's write quota,
 * one hot item, one FIFO message group or the SQS event source allow before anything else.
 */
import { transactionLatency } from './latency-model';
import type { TracedRequest } from './measure/traces';

/** A quota or documented limit the ceilings are computed from. */
export interface CeilingInput {
  readonly name: string;
  readonly value: number;
  readonly unit: string;
  readonly source: string;
}

/** The inputs, with their sources (AWS documentation, read 2026-12-01). */
export const CEILING_INPUTS = {
  tableWriteQuota: {
    name: 'on-demand table write throughput, default quota',
    value: 40_000,
    unit: 'write request units per second per table',
    source: 'https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html',
  },
  newTableWrites: {
    name: 'a new on-demand table, before it has scaled',
    value: 4_000,
    unit: 'write request units per second (initial throughput of a new on-demand table)',
    source: 'https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/on-demand-capacity-mode.html',
  },
  partitionWrites: {
    name: 'one partition (every item lives in one)',
    value: 1_000,
    unit: 'write units per second per partition',
    source: 'https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html',
  },
  eventSourceConcurrency: {
    name: 'SQS event source (standard queue): concurrent batches',
    value: 1_000,
    unit: 'batches in flight per event source mapping at most (starts at 5, adds up to 300 a minute; provisioned mode scales further)',
    source: 'https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html',
  },
  fifoGroupInFlight: {
    name: 'SQS FIFO message group',
    value: 1,
    unit: 'batch in flight per message group (its next messages wait until these are deleted)',
    source:
      'https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/FIFO-queues-understanding-logic.html',
  },
} as const satisfies Record<string, CeilingInput>;

/** Write units per message on each table, from a record's trace (items under 1 KB: 1 unit, 2 in a commit). */
export function writeUnitsByTable(trace: readonly TracedRequest[]): Record<string, number> {
  const units: Record<string, number> = {};
  for (const request of trace) {
    if (request.operation === 'GetItem') continue;
    const committed = request.operation !== 'TransactWriteItems' || request.outcome === 'ok';
    const factor = request.operation === 'TransactWriteItems' && committed ? 2 : 1;
    for (const item of request.items) {
      units[item.table] = (units[item.table] ?? 0) + factor * Math.max(1, Math.ceil(item.bytes / 1024));
    }
  }
  return units;
}

/** The ceilings of one implementation. */
export interface CeilingRow {
  readonly id: string;
  /** First deliveries per second one table's default quota allows (the busiest table decides). */
  readonly messagesPerSecondTableQuota: number;
  /** The same for a new on-demand table. */
  readonly messagesPerSecondNewTable: number;
  /** The busiest table and its write units per message. */
  readonly busiestTable: string;
  readonly writeUnitsOnBusiestTable: number;
  /** Messages per second of one FIFO message group: one record at a time, at the modelled p50 per record. */
  readonly messagesPerSecondPerFifoGroup: number;
  /** Messages per second the event source allows at its concurrency limit, batches of 10, at the modelled p50. */
  readonly messagesPerSecondEventSource: number;
}

/**
 * The ceilings of one implementation from its first-delivery trace and its modelled p50 per
 * record and per batch of 10.
 */
export function ceilingsOf(
  id: string,
  trace: readonly TracedRequest[],
  recordP50Millis: number,
  batchP50Millis: number,
): CeilingRow {
  const units = Object.entries(writeUnitsByTable(trace)).sort((a, b) => b[1] - a[1]);
  const [busiestTable, writeUnitsOnBusiestTable] = units[0] ?? ['–', 0];
  const perUnit = (quota: number) =>
    writeUnitsOnBusiestTable === 0 ? Number.POSITIVE_INFINITY : quota / writeUnitsOnBusiestTable;
  return {
    id,
    messagesPerSecondTableQuota: perUnit(CEILING_INPUTS.tableWriteQuota.value),
    messagesPerSecondNewTable: perUnit(CEILING_INPUTS.newTableWrites.value),
    busiestTable,
    writeUnitsOnBusiestTable,
    messagesPerSecondPerFifoGroup: 1000 / recordP50Millis,
    messagesPerSecondEventSource: (CEILING_INPUTS.eventSourceConcurrency.value * 10 * 1000) / batchP50Millis,
  };
}

/**
 * A hot business item in atomic mode (every message updates the same item, an account
 * balance say): a committed transaction writes the item at 2 units, so the partition allows
 * 500 commits a second; and DynamoDB rejects a transaction that overlaps another on the same
 * item (`TransactionConflictException`), so commits on one item run one at a time: at most
 * 1,000 / (a 2-item transaction's modelled p50) a second, which is the lower bound.
 */
export function hotItemCeiling(): {
  readonly quotaBound: number;
  readonly serialBound: number;
  readonly basis: string;
} {
  const quotaBound = CEILING_INPUTS.partitionWrites.value / 2;
  const serialBound = 1000 / transactionLatency(2, false).p50Millis;
  return {
    quotaBound,
    serialBound,
    basis:
      'partition quota / 2 units per transactional write; transactions on one item conflict ' +
      '(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html), so they serialise at the modelled 2-item p50',
  };
}
