/**
 * Reading what the consumers did: their outcome metrics (the Embedded Metric Format lines in
 * their CloudWatch Logs), the dead-letter queues and the tables.
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  ChangeMessageVisibilityBatchCommand,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { scanTable } from '../../cli/replay/aws';
import type { Item } from '../../cli/replay/snapshot';
import { DEAD_LETTER_ATTRIBUTES, INBOX_ATTRIBUTES, METRICS } from '../../lambda/core/contract';
import { type FunctionClients, flushLogLines, functionLogGroup, readLogMessages } from './functions';
import type { SampleLogName } from './sample-logs';

/** Outcome counts of one consumer, summed over its metric lines. */
export interface OutcomeTotals {
  readonly processed: number;
  readonly duplicate: number;
  readonly inFlight: number;
  readonly mismatch: number;
  /** Rejected as older than the state they would change (a runtime that reports it). */
  readonly stale: number;
  readonly retry: number;
  readonly permanent: number;
  /** Metric lines read: one per invocation. */
  readonly invocations: number;
}

/** Outcome totals, every one zero. */
export function zeroOutcomeTotals(): OutcomeTotals {
  return {
    processed: 0,
    duplicate: 0,
    inFlight: 0,
    mismatch: 0,
    stale: 0,
    retry: 0,
    permanent: 0,
    invocations: 0,
  };
}

/**
 * Every delivery a consumer counted: each message of an invocation counts once, in one outcome
 * (`Takeover` counts events on top of outcomes, so it is left out).
 */
export function deliveriesOf(totals: OutcomeTotals): number {
  return (
    totals.processed +
    totals.duplicate +
    totals.inFlight +
    totals.mismatch +
    totals.stale +
    totals.retry +
    totals.permanent
  );
}

/** `after − before`, field by field. */
export function subtractTotals(after: OutcomeTotals, before: OutcomeTotals): OutcomeTotals {
  const difference = {} as Record<keyof OutcomeTotals, number>;
  for (const key of Object.keys(after) as (keyof OutcomeTotals)[]) difference[key] = after[key] - before[key];
  return difference;
}

const OUTCOME_METRICS: Readonly<Record<Exclude<keyof OutcomeTotals, 'invocations'>, string>> = {
  processed: METRICS.processed,
  duplicate: METRICS.duplicate,
  inFlight: METRICS.inFlight,
  mismatch: METRICS.mismatch,
  stale: METRICS.stale,
  retry: METRICS.retry,
  permanent: METRICS.permanent,
};

/**
 * Sums the outcome metrics of a function from its log group: every line that is an Embedded
 * Metric Format document with the toolkit's metric names (what CloudWatch extracts the metrics
 * from on AWS). Other lines are skipped.
 */
export function sumOutcomeMetrics(messages: readonly string[]): OutcomeTotals {
  const totals = { ...zeroOutcomeTotals() };
  for (const message of messages) {
    if (!message.includes('"CloudWatchMetrics"')) continue;
    let document: Record<string, unknown>;
    try {
      document = JSON.parse(message.slice(message.indexOf('{')));
    } catch {
      continue;
    }
    if (typeof document._aws !== 'object' || document._aws === null) continue;
    totals.invocations += 1;
    for (const [field, metric] of Object.entries(OUTCOME_METRICS) as [
      keyof typeof OUTCOME_METRICS,
      string,
    ][]) {
      const value = document[metric];
      if (typeof value === 'number') totals[field] += value;
    }
  }
  return totals;
}

/** How long a wait for log lines goes before it flushes the function's worker (`flushLogLines`). */
export const FLUSH_AFTER_MILLIS = 2_000;

/** Reads and sums a function's outcome metrics once (see {@link sumOutcomeMetrics}). */
export async function readOutcomeTotals(
  clients: FunctionClients,
  functionName: string,
): Promise<OutcomeTotals> {
  const logGroup = await functionLogGroup(clients.lambda, functionName);
  return sumOutcomeMetrics(await readLogMessages(clients.logs, logGroup));
}

/**
 * Reads a function's outcome metrics until they count at least `minimumDeliveries` and two reads
 * in a row agree (log lines can arrive after the queue drained), or `timeoutMillis` passed; then
 * returns the last read.
 */
export async function awaitOutcomeTotals(
  clients: FunctionClients,
  functionName: string,
  minimumDeliveries: number,
  // Returns as soon as the counts settle; the wait only runs out when the log lines lag, as they
  // do on a loaded machine (5 s was seen to fall short with several emulators running).
  timeoutMillis = 20_000,
): Promise<OutcomeTotals> {
  const started = Date.now();
  const deadline = started + timeoutMillis;
  let previous: OutcomeTotals | undefined;
  let flushedAt = started;
  for (;;) {
    const totals = await readOutcomeTotals(clients, functionName);
    const settled = previous !== undefined && deliveriesOf(previous) === deliveriesOf(totals);
    if ((settled && deliveriesOf(totals) >= minimumDeliveries) || Date.now() > deadline) return totals;
    previous = totals;
    // Counts still short a while on: the last metrics lines may wait in the worker (see flushLogLines).
    if (deliveriesOf(totals) < minimumDeliveries && Date.now() - flushedAt >= FLUSH_AFTER_MILLIS) {
      flushedAt = Date.now();
      await flushLogLines(clients.lambda, functionName);
    }
    await sleep(200);
  }
}

/** A message in a dead-letter queue, with the reason the consumer gave (direct dead-lettering). */
export interface DeadLetter {
  readonly messageId: string;
  /** `eo-code`, for example `MALFORMED_BODY`; `undefined` when the message came by redrive. */
  readonly code: string | undefined;
  /** `eo-reason`. */
  readonly reason: string | undefined;
  /** `eo-consumer`. */
  readonly consumer: string | undefined;
  /** `eo-source-message-id`: the id of the message on the consumer's queue. */
  readonly sourceMessageId: string | undefined;
  /** SHA-256 of the body, to match it to a log line without keeping or showing the body. */
  readonly bodySha256: string;
}

/** SHA-256 (hex) of a message body, as in {@link DeadLetter.bodySha256}. */
export function bodySha256(body: string): string {
  return createHash('sha256').update(body, 'utf8').digest('hex');
}

/**
 * Every message waiting in a dead-letter queue. Each is received once (hidden while the queue is
 * read) and then made visible again, so the queue is left as it was for an operator.
 */
export async function readDeadLetters(sqs: SQSClient, queueUrl: string): Promise<DeadLetter[]> {
  const letters = new Map<string, DeadLetter>();
  const handles: string[] = [];
  try {
    for (;;) {
      const { Messages: messages = [] } = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: 10,
          VisibilityTimeout: 60,
          WaitTimeSeconds: 0,
          MessageAttributeNames: ['All'],
        }),
      );
      if (messages.length === 0) break;
      for (const message of messages) {
        if (message.ReceiptHandle) handles.push(message.ReceiptHandle);
        if (!message.MessageId || letters.has(message.MessageId)) continue;
        const attribute = (name: string) => message.MessageAttributes?.[name]?.StringValue;
        letters.set(message.MessageId, {
          messageId: message.MessageId,
          code: attribute(DEAD_LETTER_ATTRIBUTES.code),
          reason: attribute(DEAD_LETTER_ATTRIBUTES.reason),
          consumer: attribute(DEAD_LETTER_ATTRIBUTES.consumer),
          sourceMessageId: attribute(DEAD_LETTER_ATTRIBUTES.sourceMessageId),
          bodySha256: bodySha256(message.Body ?? ''),
        });
      }
    }
  } finally {
    for (let index = 0; index < handles.length; index += 10) {
      await sqs.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: queueUrl,
          Entries: handles.slice(index, index + 10).map((handle, offset) => ({
            Id: String(index + offset),
            ReceiptHandle: handle,
            VisibilityTimeout: 0,
          })),
        }),
      );
    }
  }
  return [...letters.values()];
}

/** One order as the Orders table holds it (the `ORDER` item and its `STATUS#` items). */
export interface OrderState {
  readonly status: unknown;
  readonly amount: unknown;
  /** Status transition items of the order. */
  readonly statuses: number;
}

/** An inbox record of the payment notifier, as far as the checks need it. */
export interface StoredNotification {
  /** `COMPLETED` or `IN_PROGRESS`. */
  readonly status: unknown;
  /** The downstream's notification id stored with the completed effect, if any. */
  readonly notificationId: string | undefined;
}

/** The example's tables, counted. */
export interface TableCounts {
  /** Items of the Orders table: one `ORDER` item per order plus one `STATUS#` item per transition. */
  readonly ordersItems: number;
  /** Inbox records of each consumer (the audit recorder keeps none: its item is its own marker). */
  readonly inboxRecords: Readonly<Record<SampleLogName, number>>;
  /**
   * Inbox records of the stream consumer (the order summary projector, one per Orders stream
   * record it processed), counted apart: its event source mapping may still be catching up when
   * the queues have drained.
   */
  readonly streamInboxRecords: number;
  /** Every inbox record, whoever wrote it. */
  readonly inboxTotal: number;
  /** Items of the Audit table: one per audit event. */
  readonly auditItems: number;
  /** Orders by order id. */
  readonly orders: ReadonlyMap<string, OrderState>;
  /** The payment notifier's inbox records, one per notified payment status. */
  readonly notifications: readonly StoredNotification[];
}

/** The example's tables, and the consumer names that tell their inbox records apart. */
export interface ExampleTables {
  readonly orders: string;
  readonly inbox: string;
  readonly audit: string;
  /** Each sample log's consumer name (the `consumer` attribute of its inbox records). */
  readonly consumers: Readonly<Record<SampleLogName, string>>;
  /** The stream consumer's name. */
  readonly streamConsumer: string;
}

/** Scans the example's tables (strongly consistent) and counts their items. */
export async function readTables(dynamodb: DynamoDBClient, tables: ExampleTables): Promise<TableCounts> {
  const [orders, inbox, audit] = await Promise.all([
    scanTable(dynamodb, tables.orders),
    scanTable(dynamodb, tables.inbox),
    scanTable(dynamodb, tables.audit),
  ]);
  return summariseTables({ orders, inbox, audit }, tables.consumers, tables.streamConsumer);
}

/** Counts scanned items (DynamoDB JSON) into {@link TableCounts}. Pure. */
export function summariseTables(
  items: {
    readonly orders: readonly Item[];
    readonly inbox: readonly Item[];
    readonly audit: readonly Item[];
  },
  consumers: Readonly<Record<SampleLogName, string>>,
  streamConsumer: string,
): TableCounts {
  const inbox = items.inbox.map((item) => unmarshall(item) as Record<string, unknown>);
  const of = (name: SampleLogName) =>
    inbox.filter((record) => record[INBOX_ATTRIBUTES.consumer] === consumers[name]);
  return {
    ordersItems: items.orders.length,
    inboxRecords: {
      orders: of('orders').length,
      audit: of('audit').length,
      payments: of('payments').length,
    },
    streamInboxRecords: inbox.filter((record) => record[INBOX_ATTRIBUTES.consumer] === streamConsumer).length,
    inboxTotal: inbox.length,
    auditItems: items.audit.length,
    orders: summariseOrders(items.orders),
    notifications: of('payments').map((record) => ({
      status: record[INBOX_ATTRIBUTES.status],
      notificationId: notificationIdOf(record[INBOX_ATTRIBUTES.result]),
    })),
  };
}

/** The `notificationId` of a stored result (JSON text of the notifier's `Notification`). */
function notificationIdOf(result: unknown): string | undefined {
  if (typeof result !== 'string') return undefined;
  try {
    const parsed = JSON.parse(result) as { notificationId?: unknown } | null;
    return typeof parsed?.notificationId === 'string' ? parsed.notificationId : undefined;
  } catch {
    return undefined;
  }
}

function summariseOrders(items: readonly Item[]): Map<string, OrderState> {
  const plain = items.map((item) => unmarshall(item) as Record<string, unknown>);
  const orders = new Map<string, OrderState>();
  for (const item of plain) {
    if (item.sk !== 'ORDER') continue;
    const pk = String(item.pk);
    orders.set(String(item.orderId ?? pk), {
      status: item.status,
      amount: item.amount,
      statuses: plain.filter((other) => other.pk === pk && String(other.sk).startsWith('STATUS#')).length,
    });
  }
  return orders;
}
