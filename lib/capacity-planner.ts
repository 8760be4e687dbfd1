/**
 * The capacity planner: from a consumer's expected peak rate (`expectedPeakMessagesPerSecond`)
 * and its mode, the write rate each of its tables takes, the warm throughput of the inbox table
 * the construct creates, and the synth-time warnings where a new table, a FIFO message group or
 * the event source's concurrency cannot carry that rate. Pure over its input: the constructs
 * create and annotate.
 *
 * The per-mode figures are the benchmark's (`npm run bench`, docs/performance.md), copied here
 * because the constructs must not load `bench/` at run time; a unit test
 * (`test/unit/bench/capacity-planner-figures.test.ts`) recomputes them with
 * `bench/latency-model.ts` and `bench/ceilings.ts`, so they cannot drift.
 */
import { Stack } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { ConsumerMode } from '../lambda/core/contract';
import { describeValue } from '../lambda/core/errors';
import { type BusinessTableAccess, defaultBusinessTableAccess } from './consumer-permissions';
import { type Fail, isKnownNumber } from './consumer-validation';

/** What one first delivery costs in a mode, as the benchmark counted and modelled it. */
export interface ModeCapacity {
  /** Write units one message takes on the inbox table (0: the mode writes no inbox record). */
  readonly inboxWriteUnits: number;
  /** Write units one message takes on a business table: one item under 1 KB (2 in a transaction). */
  readonly businessWriteUnits: number;
  /**
   * Modelled p50 of one message's DynamoDB requests, in milliseconds: the time a FIFO message
   * group waits between two of its messages.
   */
  readonly messageMillis: number;
  /**
   * Modelled p50 of a batch of 10 messages, in milliseconds: the runtime's default 10 at a time
   * (`concurrency`), atomic mode's batch commit one `TransactWriteItems` for the ten.
   */
  readonly batchOfTenMillis: number;
}

/**
 * Each mode's write units and modelled latency (docs/performance.md, bench run of 2026-12-02):
 * entity 1 write unit (one conditional `PutItem` on the business item); marker 2 (the claim on
 * the inbox table, the handler's own write); atomic 4 (one `TransactWriteItems` of the inbox
 * record and the business item, 2 units each); two-phase 3 (claim and completion on the inbox
 * table, the handler's own write). Latencies are the p50 of the latency model (published
 * `PutItem` and `TransactWriteItems` percentiles measured from Lambda), DynamoDB time only.
 */
export const MODE_CAPACITY: Readonly<Record<ConsumerMode, ModeCapacity>> = Object.freeze({
  entity: { inboxWriteUnits: 0, businessWriteUnits: 1, messageMillis: 7.56, batchOfTenMillis: 12.32 },
  marker: { inboxWriteUnits: 1, businessWriteUnits: 1, messageMillis: 15.52, batchOfTenMillis: 22.04 },
  atomic: { inboxWriteUnits: 2, businessWriteUnits: 2, messageMillis: 24.36, batchOfTenMillis: 30.48 },
  'two-phase': { inboxWriteUnits: 2, businessWriteUnits: 1, messageMillis: 23.44, batchOfTenMillis: 31.38 },
});

/**
 * Messages the runtime runs side by side in one invocation by default (its `concurrency` option,
 * `DEFAULT_CONCURRENCY` in lambda/core/options.ts; a unit test holds the two equal).
 */
export const RUNTIME_DEFAULT_CONCURRENCY = 10;

/** The AWS limits the planner plans with, each quoted from AWS's documentation. */
export const CAPACITY_LIMITS = Object.freeze({
  /**
   * "New on-demand tables will be able to sustain up to 4,000 writes per second and 12,000 reads
   * per second. [...] throttling can still occur if the throughput exceeds twice the previous
   * peak within the same 30 minutes." (DynamoDB Developer Guide, Pre-warming a table for
   * on-demand capacity mode)
   */
  newTableWriteUnitsPerSecond: 4_000,
  /**
   * The per-table on-demand write throughput default quota: 40,000 write request units a second
   * (DynamoDB Developer Guide, Service, account, and table quotas; adjustable).
   */
  tableWriteUnitsQuota: 40_000,
  /**
   * "The maximum number of invokes that an event source mapping can process simultaneously is
   * 1,250." (Lambda Developer Guide, Configuring scaling behavior for SQS event source mappings)
   */
  sqsEventSourceConcurrency: 1_250,
  /** Lambda's default concurrent executions quota: 1,000 a Region (Lambda Developer Guide, Lambda quotas). */
  regionalConcurrency: 1_000,
  /**
   * Concurrent invocations per event poller of an SQS event source in provisioned mode: "up to
   * 20,000 concurrency" (AWS News Blog, provisioned mode for SQS event source mappings, November
   * 2025) at the most pollers allowed, 2,000 (`MaximumPollers`, CloudFormation).
   */
  invocationsPerPoller: 10,
});

/**
 * What bounds the event source's concurrent invocations: an SQS event source's `maxConcurrency`,
 * provisioned pollers (10 invocations each, up to `maximum`), or neither (the event source's and
 * the Region's default limits); a Kinesis stream's shards × `parallelizationFactor`; or a limit
 * unknown at synth time (a token, a stream whose shards are not known), which the planner does
 * not check.
 */
export type EventSourceConcurrency =
  | {
      /** An SQS event source's `maxConcurrency`. */
      readonly kind: 'maxConcurrency';
      /** The most concurrent invocations the event source starts. */
      readonly maxConcurrency: number;
    }
  | {
      /** An SQS event source in provisioned mode. */
      readonly kind: 'provisionedPollers';
      /** The fewest event pollers the event source keeps. */
      readonly minimum: number;
      /** The most event pollers the event source scales to, 10 invocations each. */
      readonly maximum: number;
    }
  | {
      /** A Kinesis stream whose shard count is known at synth time. */
      readonly kind: 'shards';
      /** The stream's shards. */
      readonly shards: number;
      /** Concurrent batches per shard (`parallelizationFactor`). */
      readonly parallelizationFactor: number;
    }
  | {
      /** Neither `maxConcurrency` nor provisioned pollers: the event source's and the Region's defaults. */
      readonly kind: 'default';
    }
  | {
      /** A limit not known at synth time, which the planner does not check. */
      readonly kind: 'unknown';
      /** Why it is not known (a token, a stream whose shards are not known). */
      readonly reason: string;
    };

/** A table the consumer writes, as the planner sees it. */
export interface PlannedTable {
  /** How messages name it: "the inbox table", "business table `Stack/Orders`". */
  readonly label: string;
  /** The table, when it exists already (a given inbox table, a business table). */
  readonly table?: dynamodb.ITable;
  /** True for the inbox table the construct creates: it gets the warm throughput. */
  readonly created: boolean;
  /** Write units one message takes on it. */
  readonly writeUnitsPerMessage: number;
}

/** What the planner is given. */
export interface CapacityInput {
  readonly mode: ConsumerMode;
  /** `expectedPeakMessagesPerSecond`, a positive finite number. */
  readonly messagesPerSecond: number;
  /**
   * Messages one invocation runs side by side: the batch size up to the runtime's default 10 for
   * a queue, 1 for a stream (a shard's records run in order).
   */
  readonly messagesSideBySide: number;
  /** True for a FIFO queue. */
  readonly fifo: boolean;
  /** `expectedMessageGroups`, on a FIFO queue. */
  readonly messageGroups?: number;
  readonly concurrency: EventSourceConcurrency;
  /** The tables the consumer writes (none with no write units). */
  readonly tables: readonly PlannedTable[];
}

/** One table's write rate at the expected peak. */
export interface TableCapacity extends PlannedTable {
  /** Write units a second at the expected peak. */
  readonly writeUnitsPerSecond: number;
  /** The warm throughput the construct sets (only on a table it creates, above what a new table absorbs). */
  readonly warmThroughput?: dynamodb.WarmThroughput;
}

/** The planner's figures for one consumer. */
export interface CapacityPlan {
  /** The consumer's mode, which sets the write units and latency per message. */
  readonly mode: ConsumerMode;
  /** `expectedPeakMessagesPerSecond`. */
  readonly messagesPerSecond: number;
  /** The mode's write units a message: the inbox record's and one business item's. */
  readonly writeUnitsPerMessage: number;
  /** `writeUnitsPerMessage` × the expected peak: write units a second (see `tables` for each table's). */
  readonly writeUnitsPerSecond: number;
  /** Each table the consumer writes, with its write rate (and warm throughput, on one it creates). */
  readonly tables: readonly TableCapacity[];
  /** Messages one invocation carries a second at the mode's modelled latency. */
  readonly messagesPerSecondPerInvocation: number;
  /** Concurrent invocations the expected peak needs at that rate. */
  readonly invocationsNeeded: number;
  /** The most concurrent invocations the event source runs (infinite when unknown at synth time). */
  readonly concurrencyLimit: number;
  /** What sets `concurrencyLimit`, for messages. */
  readonly concurrencyLimitSource: string;
  /** Messages one FIFO message group carries a second (one at a time, at the modelled latency). */
  readonly messagesPerSecondPerGroup: number;
  /** FIFO message groups the expected peak needs, evenly loaded. */
  readonly messageGroupsNeeded: number;
}

/** The planner's input and plan for one consumer, when `expectedPeakMessagesPerSecond` is set. */
export interface CapacityPlanning {
  readonly input: CapacityInput;
  readonly plan: CapacityPlan;
}

/** The input and its plan, or `undefined` without an input. */
export function planning(input: CapacityInput | undefined): CapacityPlanning | undefined {
  return input && { input, plan: planCapacity(input) };
}

/** Computes the plan (see {@link CapacityPlan}); the input is assumed valid. */
export function planCapacity(input: CapacityInput): CapacityPlan {
  const mode = MODE_CAPACITY[input.mode];
  const rate = input.messagesPerSecond;
  const tables = input.tables
    .filter((table) => table.writeUnitsPerMessage > 0)
    .map((table): TableCapacity => {
      const writeUnitsPerSecond = rate * table.writeUnitsPerMessage;
      const warm =
        table.created && writeUnitsPerSecond > CAPACITY_LIMITS.newTableWriteUnitsPerSecond
          ? { writeUnitsPerSecond: Math.ceil(writeUnitsPerSecond) }
          : undefined;
      return { ...table, writeUnitsPerSecond, ...(warm && { warmThroughput: warm }) };
    });
  const writeUnitsPerMessage = mode.inboxWriteUnits + mode.businessWriteUnits;
  // One at a time, an invocation waits for each message's requests; side by side (at most the
  // runtime's default `concurrency`, 10), each group in the modelled time of a batch of 10. Fewer
  // than 10 are taken at the batch-of-10 time: a little slow, so the need is not understated.
  const perInvocation =
    input.messagesSideBySide <= 1
      ? 1000 / mode.messageMillis
      : (Math.min(input.messagesSideBySide, RUNTIME_DEFAULT_CONCURRENCY) * 1000) / mode.batchOfTenMillis;
  const { limit, source } = concurrencyLimit(input.concurrency);
  const perGroup = 1000 / mode.messageMillis;
  return {
    mode: input.mode,
    messagesPerSecond: rate,
    writeUnitsPerMessage,
    writeUnitsPerSecond: rate * writeUnitsPerMessage,
    tables,
    messagesPerSecondPerInvocation: perInvocation,
    invocationsNeeded: Math.ceil(rate / perInvocation),
    concurrencyLimit: limit,
    concurrencyLimitSource: source,
    messagesPerSecondPerGroup: perGroup,
    messageGroupsNeeded: Math.ceil(rate / perGroup),
  };
}

function concurrencyLimit(concurrency: EventSourceConcurrency): { limit: number; source: string } {
  const perPoller = CAPACITY_LIMITS.invocationsPerPoller;
  switch (concurrency.kind) {
    case 'maxConcurrency':
      return {
        limit: concurrency.maxConcurrency,
        source: `\`maxConcurrency\` ${concurrency.maxConcurrency}`,
      };
    case 'provisionedPollers':
      return {
        limit: concurrency.maximum * perPoller,
        source: `\`provisionedPollers.maximum\` ${concurrency.maximum} × ${perPoller} invocations a poller`,
      };
    case 'shards':
      return {
        limit: concurrency.shards * concurrency.parallelizationFactor,
        source: `${concurrency.shards} shards × \`parallelizationFactor\` ${concurrency.parallelizationFactor}`,
      };
    case 'unknown':
      return { limit: Number.POSITIVE_INFINITY, source: concurrency.reason };
    default:
      return {
        limit: Math.min(CAPACITY_LIMITS.sqsEventSourceConcurrency, CAPACITY_LIMITS.regionalConcurrency),
        source: `no \`maxConcurrency\`: the lower of the ${formatNumber(CAPACITY_LIMITS.sqsEventSourceConcurrency)} an SQS event source runs and Lambda's default concurrency quota of ${formatNumber(CAPACITY_LIMITS.regionalConcurrency)} a Region`,
      };
  }
}

/** A number as the messages show it: thousands separated, at most one decimal. */
function formatNumber(value: number): string {
  return value.toLocaleString('en-US', { maximumFractionDigits: 1 });
}

/** Where the planner's notes go: a warning under its id, or an informational note. */
export interface CapacityNotes {
  readonly warn: (id: string, message: string) => void;
  readonly info: (message: string) => void;
}

/**
 * The plan's synth-time notes: warnings where a table, a FIFO message group or the event
 * source cannot carry the expected peak, each naming its numbers, and a note for each warm
 * throughput set. `knownWarmWrites` tells the warm write throughput a given table is known to
 * have (set in this app), so a pre-warmed table draws no warning.
 */
export function capacityNotes(
  plan: CapacityPlan,
  input: Pick<CapacityInput, 'fifo' | 'messageGroups' | 'messagesSideBySide'>,
  knownWarmWrites: (table: dynamodb.ITable) => number | undefined,
  notes: CapacityNotes,
): void {
  const mode = MODE_CAPACITY[plan.mode];
  const rate = formatNumber(plan.messagesPerSecond);
  const newTable = CAPACITY_LIMITS.newTableWriteUnitsPerSecond;
  const quota = CAPACITY_LIMITS.tableWriteUnitsQuota;
  for (const table of plan.tables) {
    const units = formatNumber(table.writeUnitsPerSecond);
    const arithmetic = `${rate} messages a second × ${table.writeUnitsPerMessage} write unit${table.writeUnitsPerMessage === 1 ? '' : 's'} a message in ${plan.mode} mode = ${units} write units a second`;
    if (table.warmThroughput) {
      notes.info(
        `The ${table.label} is created with a warm throughput of ${formatNumber(table.warmThroughput.writeUnitsPerSecond ?? 0)} write units a second: ${arithmetic} at the expected peak, above the ${formatNumber(newTable)} a new on-demand table absorbs.`,
      );
    } else if (!table.created && table.writeUnitsPerSecond > newTable) {
      const warm = table.table ? knownWarmWrites(table.table) : undefined;
      if (warm === undefined || warm < table.writeUnitsPerSecond) {
        notes.warn(
          'tableWriteRateAboveNewTable',
          `The ${table.label} takes ${arithmetic} at the expected peak, above the ${formatNumber(newTable)} a new on-demand table absorbs (it then at most doubles its previous peak within 30 minutes, throttling writes meanwhile). The construct did not create this table, so it sets no warm throughput on it: give it \`warmThroughput: { writeUnitsPerSecond: ${Math.ceil(table.writeUnitsPerSecond)} }\`, or make sure it has served that rate before.`,
        );
      }
    }
    if (table.writeUnitsPerSecond > quota) {
      notes.warn(
        'tableWriteQuota',
        `The ${table.label} takes ${arithmetic} at the expected peak, above DynamoDB's default quota of ${formatNumber(quota)} write units a second per on-demand table: raise the table-level write throughput quota through Service Quotas before the peak, or writes are throttled.`,
      );
    }
  }

  const perGroup = formatNumber(plan.messagesPerSecondPerGroup);
  const groupTime = `one message at a time, ${formatNumber(mode.messageMillis)} ms a message at ${plan.mode} mode's modelled p50`;
  if (input.fifo && input.messageGroups !== undefined) {
    const groupRate = plan.messagesPerSecond / input.messageGroups;
    if (groupRate > plan.messagesPerSecondPerGroup) {
      notes.warn(
        'fifoGroupRate',
        `Each of the ${formatNumber(input.messageGroups)} FIFO message groups takes ${rate} / ${formatNumber(input.messageGroups)} = ${formatNumber(groupRate)} messages a second at the expected peak, above the ${perGroup} one group carries (${groupTime}): its backlog grows. Spread the messages over at least ${formatNumber(plan.messageGroupsNeeded)} message groups.`,
      );
    }
  } else if (input.fifo && plan.messagesPerSecond > plan.messagesPerSecondPerGroup) {
    notes.warn(
      'fifoGroupRate',
      `A FIFO message group carries at most ${perGroup} messages a second (${groupTime}), so the expected peak of ${rate} messages a second needs at least ${formatNumber(plan.messageGroupsNeeded)} message groups busy at once, evenly loaded; a group above ${perGroup} messages a second falls behind. Set \`expectedMessageGroups\` to the number of groups the producers spread messages over to check it.`,
    );
  }

  const pace =
    input.messagesSideBySide <= 1
      ? `one message at a time, ${formatNumber(mode.messageMillis)} ms each`
      : `${Math.min(input.messagesSideBySide, RUNTIME_DEFAULT_CONCURRENCY)} messages side by side in ${formatNumber(mode.batchOfTenMillis)} ms`;
  const carries = `one invocation carries ${formatNumber(plan.messagesPerSecondPerInvocation)} messages a second (${pace}, ${plan.mode} mode's modelled p50)`;
  if (!Number.isFinite(plan.concurrencyLimit)) {
    notes.info(
      `The event source's concurrency was not checked (${plan.concurrencyLimitSource}): ${carries}, so the expected peak of ${rate} messages a second needs at least ${formatNumber(plan.invocationsNeeded)} concurrent invocations.`,
    );
  } else if (plan.invocationsNeeded > plan.concurrencyLimit) {
    notes.warn(
      'eventSourceConcurrency',
      `The event source runs at most ${formatNumber(plan.concurrencyLimit)} concurrent invocations (${plan.concurrencyLimitSource}); ${carries}, so the expected peak of ${rate} messages a second needs at least ${formatNumber(plan.invocationsNeeded)}. Raise the limit, or expect a backlog at the peak (the model counts DynamoDB request time only, so the real need is higher).`,
    );
  }
}

/** The tables of a consumer's props the planner needs. */
export interface PlannedTablesProps {
  readonly mode: ConsumerMode;
  readonly table?: dynamodb.ITable;
  readonly businessTables?: readonly {
    readonly table: dynamodb.ITable;
    readonly access?: readonly BusinessTableAccess[];
  }[];
}

/**
 * The tables a consumer writes and the write units a message takes on each: the inbox table
 * (created, or given), and every business table with `write` access, each assumed to take one
 * item under 1 KB a message. A table given both as the inbox and as a business table takes both.
 */
export function plannedTables(props: PlannedTablesProps): PlannedTable[] {
  const mode = MODE_CAPACITY[props.mode];
  const tables: PlannedTable[] = [];
  if (mode.inboxWriteUnits > 0) {
    tables.push(
      props.table
        ? {
            label: `inbox table \`${props.table.node.path}\` you passed`,
            table: props.table,
            created: false,
            writeUnitsPerMessage: mode.inboxWriteUnits,
          }
        : { label: 'inbox table', created: true, writeUnitsPerMessage: mode.inboxWriteUnits },
    );
  }
  for (const business of props.businessTables ?? []) {
    if (!(business.access ?? defaultBusinessTableAccess(props.mode)).includes('write')) continue;
    const index = tables.findIndex((planned) => planned.table === business.table);
    const existing = tables[index];
    if (existing) {
      tables[index] = {
        ...existing,
        label: `table \`${business.table.node.path}\` (inbox and business table)`,
        writeUnitsPerMessage: existing.writeUnitsPerMessage + mode.businessWriteUnits,
      };
      continue;
    }
    tables.push({
      label: `business table \`${business.table.node.path}\``,
      table: business.table,
      created: false,
      writeUnitsPerMessage: mode.businessWriteUnits,
    });
  }
  return tables;
}

/**
 * The warm write throughput a table of this app is created with (`warmThroughput` of a `Table`
 * or `TableV2`); `undefined` when it has none or it cannot be known (an imported table, a token).
 */
export function knownWarmWrites(table: dynamodb.ITable): number | undefined {
  const cfn = table.node.defaultChild;
  if (!(cfn instanceof dynamodb.CfnTable || cfn instanceof dynamodb.CfnGlobalTable)) return undefined;
  const warm = Stack.of(table).resolve(cfn.warmThroughput) as { writeUnitsPerSecond?: unknown } | undefined;
  const writes = warm?.writeUnitsPerSecond;
  return typeof writes === 'number' ? writes : undefined;
}

/** `expectedPeakMessagesPerSecond` when it is a usable rate: known at synth time, finite and positive. */
export function plannedRate(rate: number | undefined): number | undefined {
  return isKnownNumber(rate) && Number.isFinite(rate) && rate > 0 ? rate : undefined;
}

/** Fails unless a known `expectedPeakMessagesPerSecond` is a positive, finite number. */
export function checkExpectedPeak(rate: number | undefined, fail: Fail): void {
  if (isKnownNumber(rate) && plannedRate(rate) === undefined) {
    fail(
      `Expected \`expectedPeakMessagesPerSecond\` to be a positive number of messages a second, got \`${describeValue(rate)}\``,
    );
  }
}
