/**
 * The main job's scenario against a deployed example app, as steps the end-to-end test reuses:
 * send the sample logs and redeliver processed messages ({@link runSampleLogs}), read what the
 * consumers did ({@link observeExample}), check it against the logs' story
 * ({@link checkFirstRun}), replay everything ({@link replayExample}) and check that nothing
 * changed ({@link checkReplay}).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { LocalAws } from '../local-aws-lib';
import type { AwsHttpTarget } from './aws-http';
import type { ExampleOutputs } from './example-deployment';
import {
  awaitOutcomeTotals,
  bodySha256,
  type DeadLetter,
  deliveriesOf,
  type OutcomeTotals,
  readDeadLetters,
  readTables,
  subtractTotals,
  type TableCounts,
} from './observations';
import { type ReplayLogsResult, replayLogs } from './replay-logs';
import {
  expectedOrders,
  expectedOutcome,
  poisonLines,
  type SampleLog,
  type SampleLogName,
} from './sample-logs';
import { type RedeliveryResult, redeliver, type SentMessages, sendLog, waitForQueues } from './traffic';

/** The sample logs, by consumer. */
export interface SampleLogs {
  readonly orders: SampleLog;
  readonly audit: SampleLog;
}

/** Clients and outputs to drive a deployed example app. */
export interface ExampleHarness {
  readonly sqs: SQSClient;
  readonly dynamodb: DynamoDBClient;
  readonly http: AwsHttpTarget;
  readonly outputs: ExampleOutputs;
  /** Closes the SDK clients. */
  destroy(): void;
}

/** Creates the clients for a deployed example app on `aws`. */
export function createExampleHarness(
  aws: Pick<LocalAws, 'endpoint' | 'region' | 'credentials'>,
  outputs: ExampleOutputs,
): ExampleHarness {
  const config = { endpoint: aws.endpoint, region: aws.region, credentials: { ...aws.credentials } };
  // Queue URLs may name another host than the endpoint (`localhost`); always call the endpoint.
  const sqs = new SQSClient({ ...config, useQueueUrlAsEndpoint: false });
  const dynamodb = new DynamoDBClient(config);
  return {
    sqs,
    dynamodb,
    http: config,
    outputs,
    destroy() {
      sqs.destroy();
      dynamodb.destroy();
    },
  };
}

/** The queue, dead-letter queue and function of each consumer. */
export function consumerOf(
  outputs: ExampleOutputs,
  name: SampleLogName,
): { readonly queueUrl: string; readonly deadLetterQueueUrl: string; readonly functionName: string } {
  return name === 'orders'
    ? {
        queueUrl: outputs.orderEventsQueueUrl,
        deadLetterQueueUrl: outputs.orderEventsDeadLetterQueueUrl,
        functionName: outputs.orderProjectorFunctionName,
      }
    : {
        queueUrl: outputs.auditEventsQueueUrl,
        deadLetterQueueUrl: outputs.auditEventsDeadLetterQueueUrl,
        functionName: outputs.auditRecorderFunctionName,
      };
}

/** What {@link runSampleLogs} sent and redelivered. */
export interface SampleRun {
  /** The SQS message id of every line, per log. */
  readonly sent: Readonly<Record<SampleLogName, SentMessages>>;
  readonly redeliveries: Readonly<Record<SampleLogName, readonly RedeliveryResult[]>>;
  /** How long the queues took to drain after the sends. */
  readonly drainMillis: number;
}

/**
 * Sends both sample logs (concurrently, each in log order), waits until both queues drained, then
 * delivers each log's `redeliver` lines to their consumer once more.
 */
export async function runSampleLogs(harness: ExampleHarness, logs: SampleLogs): Promise<SampleRun> {
  const names: SampleLogName[] = ['orders', 'audit'];
  const [orders, audit] = await Promise.all(
    names.map((name) => sendLog(harness.sqs, consumerOf(harness.outputs, name).queueUrl, logs[name].entries)),
  );
  const sent = { orders: orders!, audit: audit! };
  const drainMillis = await waitForQueues(
    harness.sqs,
    names.map((name) => consumerOf(harness.outputs, name).queueUrl),
  );
  const redeliveries: Record<SampleLogName, RedeliveryResult[]> = { orders: [], audit: [] };
  for (const name of names) {
    const { functionName, queueUrl } = consumerOf(harness.outputs, name);
    for (const line of logs[name].redeliver) {
      redeliveries[name].push(
        await redeliver(harness.http, harness.sqs, {
          functionName,
          queueUrl,
          entry: logs[name].entries[line - 1]!,
          messageId: sent[name].get(line)!,
        }),
      );
    }
  }
  return { sent, redeliveries, drainMillis };
}

/** What the consumers did, read after the queues drained. */
export interface ExampleObservation {
  /** Outcome counts from each consumer's metric lines, since the function was deployed. */
  readonly outcomes: Readonly<Record<SampleLogName, OutcomeTotals>>;
  readonly tables: TableCounts;
  readonly deadLetters: Readonly<Record<SampleLogName, readonly DeadLetter[]>>;
}

/**
 * Reads the consumers' outcome metrics (waiting, briefly, until they count at least
 * `minimumDeliveries` each), the tables and both dead-letter queues.
 */
export async function observeExample(
  harness: ExampleHarness,
  minimumDeliveries: Readonly<Record<SampleLogName, number>>,
): Promise<ExampleObservation> {
  const { outputs } = harness;
  const [orders, audit] = await Promise.all(
    (['orders', 'audit'] as const).map((name) =>
      awaitOutcomeTotals(harness.http, consumerOf(outputs, name).functionName, minimumDeliveries[name]),
    ),
  );
  const tables = await readTables(harness.dynamodb, {
    orders: outputs.ordersTableName,
    inbox: outputs.inboxTableName,
    audit: outputs.auditTableName,
  });
  return {
    outcomes: { orders: orders!, audit: audit! },
    tables,
    deadLetters: {
      orders: await readDeadLetters(harness.sqs, outputs.orderEventsDeadLetterQueueUrl),
      audit: await readDeadLetters(harness.sqs, outputs.auditEventsDeadLetterQueueUrl),
    },
  };
}

/** One expectation and whether it held. */
export interface Check {
  readonly ok: boolean;
  /** What was expected, in plain words. */
  readonly name: string;
  /** What was seen, when it differs from the expectation. */
  readonly detail?: string;
}

function check(name: string, expected: unknown, actual: unknown): Check {
  const ok = JSON.stringify(expected) === JSON.stringify(actual);
  return ok
    ? { ok, name }
    : { ok, name, detail: `expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}` };
}

/** The minimum deliveries each consumer's metrics must count after {@link runSampleLogs}. */
export function firstRunDeliveries(logs: SampleLogs): Record<SampleLogName, number> {
  const deliveries = (log: SampleLog) => expectedOutcome(log).delivered + expectedOutcome(log).redelivered;
  return { orders: deliveries(logs.orders), audit: deliveries(logs.audit) };
}

/**
 * Checks a first run against the logs' story: exact outcome counts per consumer, exact item
 * counts and order states, redeliveries acknowledged, and exactly the poison lines in the
 * dead-letter queues with their code and reason.
 */
export function checkFirstRun(logs: SampleLogs, run: SampleRun, observation: ExampleObservation): Check[] {
  const checks: Check[] = [];
  for (const name of ['orders', 'audit'] as const) {
    const log = logs[name];
    const expected = expectedOutcome(log);
    const outcomes = observation.outcomes[name];
    checks.push(
      check(
        `${name}: ${expected.delivered} of ${expected.sent} messages delivered by SQS (${expected.brokerSuppressed} suppressed by the broker), ${expected.redelivered} redelivered`,
        expected.delivered + expected.redelivered,
        deliveriesOf(outcomes),
      ),
      check(
        `${name}: ${expected.processed} processed, ${expected.duplicates} suppressed by the inbox, ${expected.deadLetters} failed permanently, nothing retried`,
        {
          processed: expected.processed,
          duplicate: expected.duplicates,
          permanent: expected.deadLetters,
          retry: 0,
          inFlight: 0,
          mismatch: 0,
          stale: 0,
        },
        {
          processed: outcomes.processed,
          duplicate: outcomes.duplicate,
          permanent: outcomes.permanent,
          retry: outcomes.retry,
          inFlight: outcomes.inFlight,
          mismatch: outcomes.mismatch,
          stale: outcomes.stale,
        },
      ),
      check(
        `${name}: every redelivery acknowledged (no batch item failure)`,
        [],
        run.redeliveries[name].flatMap((redelivery) => redelivery.failures),
      ),
    );
    checks.push(...checkDeadLetters(log, run.sent[name], observation.deadLetters[name], 1));
  }

  const orders = expectedOrders(logs.orders);
  const statusItems = [...orders.values()].reduce((sum, order) => sum + order.statuses, 0);
  checks.push(
    check(
      `Orders table: ${orders.size} orders + ${statusItems} status transitions = ${orders.size + statusItems} items`,
      orders.size + statusItems,
      observation.tables.ordersItems,
    ),
    check(
      `Inbox table: ${expectedOutcome(logs.orders).processed} records, one per processed order event`,
      expectedOutcome(logs.orders).processed,
      observation.tables.inboxRecords,
    ),
    check(
      `Audit table: ${expectedOutcome(logs.audit).processed} items, one per audit event`,
      expectedOutcome(logs.audit).processed,
      observation.tables.auditItems,
    ),
    check(
      'every order holds the status and amount of its last event, and each status once',
      Object.fromEntries([...orders].sort()),
      Object.fromEntries([...observation.tables.orders].sort()),
    ),
  );
  return checks;
}

/**
 * Checks that a dead-letter queue holds exactly `copies` copies of each poison line of `log`,
 * each with the expected code and reason; with `sent`, the first copy names the line's SQS
 * message id as its source.
 */
function checkDeadLetters(
  log: SampleLog,
  sent: SentMessages | undefined,
  letters: readonly DeadLetter[],
  copies: number,
): Check[] {
  const poison = poisonLines(log);
  const checks: Check[] = [
    check(
      `${log.name} dead-letter queue: ${poison.length * copies} message(s)${poison.length > 0 ? `, the poison line${poison.length > 1 ? 's' : ''} ${poison.map((p) => p.line).join(', ')}` : ''}`,
      poison.length * copies,
      letters.length,
    ),
  ];
  for (const { line, code, reason } of poison) {
    const hash = bodySha256(log.entries[line - 1]!.body);
    const copiesOfLine = letters.filter((letter) => letter.bodySha256 === hash);
    checks.push(
      check(
        `${log.name} line ${line} dead-lettered ${copies}× with code ${code} and a reason containing "${reason}"`,
        Array.from({ length: copies }, () => ({ code, reason: true })),
        copiesOfLine.map((letter) => ({
          code: letter.code,
          reason: letter.reason?.includes(reason) ?? false,
        })),
      ),
    );
    const messageId = sent?.get(line);
    if (messageId !== undefined) {
      checks.push(
        check(
          `${log.name} line ${line}'s dead letter names its source message`,
          true,
          copiesOfLine.some((letter) => letter.sourceMessageId === messageId),
        ),
      );
    }
  }
  return checks;
}

/** Replays both logs with the double-tap helper over every table (Orders, Audit and the inbox). */
export async function replayExample(
  harness: ExampleHarness,
  logs: SampleLogs,
  onProgress?: Parameters<typeof replayLogs>[0]['onProgress'],
): Promise<ReplayLogsResult> {
  const { outputs } = harness;
  return replayLogs({
    sqs: harness.sqs,
    dynamodb: harness.dynamodb,
    replays: (['orders', 'audit'] as const).map((name) => ({
      log: logs[name],
      queueUrl: consumerOf(outputs, name).queueUrl,
    })),
    tables: [outputs.ordersTableName, outputs.auditTableName, outputs.inboxTableName],
    ...(onProgress ? { onProgress } : {}),
  });
}

/**
 * The deliveries each consumer sees in a replay: the FIFO log once (its second pass reuses the
 * first pass's deduplication ids, so the broker drops it), the standard log twice.
 */
export function replayDeliveries(logs: SampleLogs): Record<SampleLogName, number> {
  return { orders: expectedOutcome(logs.orders).delivered, audit: 2 * expectedOutcome(logs.audit).sent };
}

/**
 * Checks a replay: no table changed by any comparison, no message processed again (every
 * delivery a duplicate, except poison, which is dead-lettered again with its reason).
 */
export function checkReplay(
  logs: SampleLogs,
  before: ExampleObservation,
  after: ExampleObservation,
  replay: ReplayLogsResult,
): Check[] {
  const checks: Check[] = [];
  const deliveries = replayDeliveries(logs);
  for (const name of ['orders', 'audit'] as const) {
    const log = logs[name];
    const outcomes = subtractTotals(after.outcomes[name], before.outcomes[name]);
    const poison = expectedOutcome(log).deadLetters;
    const passes = name === 'orders' ? 1 : 2;
    checks.push(
      check(
        `${name} replay: ${deliveries[name]} deliveries, none processed again, ${deliveries[name] - poison * passes} suppressed by the inbox`,
        { processed: 0, duplicate: deliveries[name] - poison * passes, permanent: poison * passes, retry: 0 },
        {
          processed: outcomes.processed,
          duplicate: outcomes.duplicate,
          permanent: outcomes.permanent,
          retry: outcomes.retry,
        },
      ),
    );
    checks.push(...checkDeadLetters(log, undefined, after.deadLetters[name], 1 + passes));
  }
  for (const result of replay.replays) {
    checks.push(
      check(`${result.name} replay: no table changed since before the replay`, 0, result.sinceBefore.length),
      check(
        `${result.name} replay: no table changed between the helper's two passes`,
        0,
        result.doubleTap.differences.length,
      ),
    );
  }
  checks.push(
    check(
      'Orders, Audit and inbox tables identical before and after the whole replay',
      0,
      replay.overall.length,
    ),
  );
  return checks;
}
