/**
 * The stream consumer of the example app: the order summary projector, fed by the Orders
 * table's stream. Reading the OrderSummaries read model, computing what it must hold from the
 * Orders table itself, waiting for the event source mapping to catch up, and the stream's double
 * tap: every record of the stream, re-read from `TRIM_HORIZON`, fed to the deployed function
 * again.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { scanTable } from '../../cli/replay/aws';
import type { DynamoDbStreamEvent, DynamoDbStreamRecord } from '../../lambda/streams';
import { readTableStream } from '../support/stream-reader';
import { type Check, check } from './checks';
import { invokeFunction } from './functions';
import {
  awaitOutcomeTotals,
  deliveriesOf,
  type OutcomeTotals,
  readDeadLetters,
  readOutcomeTotals,
  subtractTotals,
} from './observations';
import type { ExampleHarness } from './scenario';

/** One summary of the read model: the orders that reached a status and the sum of their amounts. */
export interface StatusSummary {
  readonly orders: number;
  readonly amount: number;
}

/** The read model by status, statuses in name order. */
export type OrderSummaries = Readonly<Record<string, StatusSummary>>;

const STATUS_PREFIX = 'STATUS#';

/** Every record the event source mapping hands the function at once (the construct's default). */
export const STREAM_BATCH_SIZE = 100;

const sortedByKey = <T>(entries: [string, T][]): Record<string, T> =>
  Object.fromEntries(entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

/** The OrderSummaries table as read: `STATUS#<status>` items with `orders` and `amount`. */
export async function readOrderSummaries(harness: ExampleHarness): Promise<OrderSummaries> {
  const items = await scanTable(harness.dynamodb, harness.outputs.orderSummariesTableName);
  return sortedByKey(
    items.map((raw) => {
      const item = unmarshall(raw) as { pk: string; orders?: number; amount?: number };
      return [item.pk.slice(STATUS_PREFIX.length), { orders: item.orders ?? 0, amount: item.amount ?? 0 }];
    }),
  );
}

/**
 * What the read model must hold, computed from the Orders table alone (not from the stream): for
 * each status, the status transition items (`sk = STATUS#<status>`) and the sum of their amounts.
 */
export async function impliedOrderSummaries(harness: ExampleHarness): Promise<OrderSummaries> {
  const items = await scanTable(harness.dynamodb, harness.outputs.ordersTableName);
  const summaries = new Map<string, StatusSummary>();
  for (const raw of items) {
    const item = unmarshall(raw) as { sk: string; amount: number };
    if (!item.sk.startsWith(STATUS_PREFIX)) continue;
    const status = item.sk.slice(STATUS_PREFIX.length);
    const summary = summaries.get(status) ?? { orders: 0, amount: 0 };
    summaries.set(status, { orders: summary.orders + 1, amount: summary.amount + item.amount });
  }
  return sortedByKey([...summaries]);
}

/** Every record of the Orders table's stream, every shard read from `TRIM_HORIZON` to its tip. */
export async function readOrdersStream(harness: ExampleHarness): Promise<DynamoDbStreamRecord[]> {
  return readTableStream(harness.streams, harness.outputs.ordersTableStreamArn);
}

/** The read model once the event source mapping caught up with the Orders stream. */
export interface StreamProjection {
  /** Records in the Orders stream. */
  readonly records: number;
  /** The projector's outcome counts (from its metric lines), every delivery the mapping made. */
  readonly outcomes: OutcomeTotals;
  readonly summaries: OrderSummaries;
  /** What the Orders table implies. */
  readonly implied: OrderSummaries;
  /** Messages in the projector's dead-letter queue. */
  readonly deadLetters: number;
  /** How long the mapping took to catch up, from the start of the wait. */
  readonly waitMillis: number;
}

/**
 * Waits until the projector's metrics count a delivery for every record of the Orders stream and
 * the read model equals what the Orders table implies, or `timeoutMillis` passed; returns the
 * last read either way (the checks tell which).
 */
export async function awaitStreamProjection(
  harness: ExampleHarness,
  timeoutMillis = 60_000,
): Promise<StreamProjection> {
  const started = Date.now();
  const records = (await readOrdersStream(harness)).length;
  const implied = await impliedOrderSummaries(harness);
  for (;;) {
    const outcomes = await awaitOutcomeTotals(
      harness,
      harness.outputs.orderSummaryProjectorFunctionName,
      records,
      1_000,
    );
    const summaries = await readOrderSummaries(harness);
    const caughtUp =
      deliveriesOf(outcomes) >= records && JSON.stringify(summaries) === JSON.stringify(implied);
    if (caughtUp || Date.now() - started > timeoutMillis) {
      const waitMillis = Date.now() - started;
      const deadLetters = await readDeadLetters(
        harness.sqs,
        harness.outputs.orderSummaryProjectorDeadLetterQueueUrl,
      );
      return { records, outcomes, summaries, implied, deadLetters: deadLetters.length, waitMillis };
    }
    await sleep(500);
  }
}

/** The stream's double tap: what feeding the whole stream to the function again did. */
export interface StreamReplay {
  /** Records re-read from `TRIM_HORIZON` and fed again. */
  readonly records: number;
  /** Invocations, at most {@link STREAM_BATCH_SIZE} records each, in stream order. */
  readonly batches: number;
  /** Sequence numbers the function reported as batch item failures (none expected). */
  readonly failures: readonly string[];
  /** The projector's outcome counts of the replay alone. */
  readonly outcomes: OutcomeTotals;
  readonly before: OrderSummaries;
  readonly after: OrderSummaries;
}

/**
 * Re-reads the Orders stream from `TRIM_HORIZON` and invokes the deployed projector with every
 * record again, in stream order and in batches as the event source mapping makes them: what a
 * mapping re-created at `TRIM_HORIZON`, or a checkpoint lost, would deliver. Reads the read
 * model and the projector's outcome counts before and after.
 *
 * @throws FunctionFailedError `FUNCTION_FAILED` when the function throws instead of answering.
 */
export async function replayOrdersStream(harness: ExampleHarness): Promise<StreamReplay> {
  const functionName = harness.outputs.orderSummaryProjectorFunctionName;
  const before = await readOrderSummaries(harness);
  const outcomesBefore = await readOutcomeTotals(harness, functionName);
  const records = await readOrdersStream(harness);
  const failures: string[] = [];
  let batches = 0;
  for (let start = 0; start < records.length; start += STREAM_BATCH_SIZE) {
    const event: DynamoDbStreamEvent = { Records: records.slice(start, start + STREAM_BATCH_SIZE) };
    const response = (await invokeFunction(harness.lambda, functionName, event)) as
      | { batchItemFailures?: { itemIdentifier: string }[] }
      | undefined;
    batches += 1;
    for (const failure of response?.batchItemFailures ?? []) failures.push(failure.itemIdentifier);
  }
  const outcomesAfter = await awaitOutcomeTotals(
    harness,
    functionName,
    deliveriesOf(outcomesBefore) + records.length,
  );
  return {
    records: records.length,
    batches,
    failures,
    outcomes: subtractTotals(outcomesAfter, outcomesBefore),
    before,
    after: await readOrderSummaries(harness),
  };
}

/** The checks of the stream consumer: the projection, then its double tap. */
export function checkStreamProjection(projection: StreamProjection, replay: StreamReplay): Check[] {
  const { outcomes } = projection;
  return [
    check(
      'OrderSummaries: the read model equals what the Orders table implies (status items and amounts per status)',
      projection.implied,
      projection.summaries,
    ),
    check(
      `order summary projector: each of the ${projection.records} Orders stream records processed once, none failed`,
      { processed: projection.records, permanent: 0, retry: 0, mismatch: 0 },
      {
        processed: outcomes.processed,
        permanent: outcomes.permanent,
        retry: outcomes.retry,
        mismatch: outcomes.mismatch,
      },
    ),
    check('order summary projector: nothing in its dead-letter queue', 0, projection.deadLetters),
    check('Orders stream replay: every batch acknowledged (no batch item failure)', [], replay.failures),
    check(
      `Orders stream replay: all ${replay.records} records re-fed are duplicates, none processed again`,
      { processed: 0, duplicate: replay.records, permanent: 0, retry: 0, inFlight: 0, mismatch: 0 },
      {
        processed: replay.outcomes.processed,
        duplicate: replay.outcomes.duplicate,
        permanent: replay.outcomes.permanent,
        retry: replay.outcomes.retry,
        inFlight: replay.outcomes.inFlight,
        mismatch: replay.outcomes.mismatch,
      },
    ),
    check('Orders stream replay: the read model unchanged', replay.before, replay.after),
  ];
}
