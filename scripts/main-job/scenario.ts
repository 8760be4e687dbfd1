/**
 * The main job's scenario against a deployed example app, as steps the end-to-end test reuses:
 * send the sample logs and redeliver processed messages ({@link runSampleLogs}), read what the
 * consumers and the downstream service did ({@link observeExample}), check it against the logs'
 * story ({@link checkFirstRun}), replay everything ({@link replayExample}) and check that nothing
 * changed ({@link checkReplay}).
 */
import type { CloudWatchLogsClient } from '@aws-sdk/client-cloudwatch-logs';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { LambdaClient } from '@aws-sdk/client-lambda';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { LocalAws } from '../local-aws/harness';
import { type Check, check } from './checks';
import type { DownstreamFailure, DownstreamLedger, DownstreamSnapshot } from './downstream';
import type { ExampleOutputs } from './example-deployment';
import { checkExternalEffects, checkReplayEffects } from './external-effects';
import { createFunctionClients, destroyFunctionClients } from './functions';
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
  downstreamFailures,
  expectedDeliveries,
  expectedOrders,
  expectedOutcome,
  poisonLines,
  SAMPLE_LOG_NAMES,
  type SampleLog,
  type SampleLogName,
} from './sample-logs';
import { type RedeliveryResult, redeliver, type SentMessages, sendLog, waitForQueues } from './traffic';

/** The sample logs, by consumer. */
export interface SampleLogs {
  readonly orders: SampleLog;
  readonly audit: SampleLog;
  readonly payments: SampleLog;
}

/** Clients and outputs to drive a deployed example app, and the downstream its notifier calls. */
export interface ExampleHarness {
  readonly sqs: SQSClient;
  readonly dynamodb: DynamoDBClient;
  /** Reads the tables' streams (the Orders stream the projector consumes, the outbox's). */
  readonly streams: DynamoDBStreamsClient;
  readonly lambda: LambdaClient;
  readonly logs: CloudWatchLogsClient;
  /** The endpoint, region and credentials the clients use (for a process started against it). */
  readonly aws: Pick<LocalAws, 'endpoint' | 'region' | 'credentials'>;
  readonly outputs: ExampleOutputs;
  /** The ledger of the downstream service the payment notifier was deployed against. */
  readonly downstream: Pick<DownstreamLedger, 'snapshot'>;
  /** Closes the SDK clients (not the downstream service: whoever started it stops it). */
  destroy(): void;
}

/** Creates the clients for a deployed example app on `aws`. */
export function createExampleHarness(
  aws: Pick<LocalAws, 'endpoint' | 'region' | 'credentials'>,
  outputs: ExampleOutputs,
  downstream: Pick<DownstreamLedger, 'snapshot'>,
): ExampleHarness {
  const config = { endpoint: aws.endpoint, region: aws.region, credentials: { ...aws.credentials } };
  // Queue URLs may name another host than the endpoint (`localhost`); always call the endpoint.
  const sqs = new SQSClient({ ...config, useQueueUrlAsEndpoint: false });
  const dynamodb = new DynamoDBClient(config);
  const streams = new DynamoDBStreamsClient(config);
  const functions = createFunctionClients(config);
  return {
    sqs,
    dynamodb,
    streams,
    ...functions,
    aws: config,
    outputs,
    downstream,
    destroy() {
      sqs.destroy();
      dynamodb.destroy();
      streams.destroy();
      destroyFunctionClients(functions);
    },
  };
}

/** A consumer of the example app: its queue, dead-letter queue, function and consumer name. */
export interface ExampleConsumer {
  readonly queueUrl: string;
  readonly deadLetterQueueUrl: string;
  readonly functionName: string;
  readonly consumerName: string;
}

/** The consumer each sample log feeds. */
export function consumerOf(outputs: ExampleOutputs, name: SampleLogName): ExampleConsumer {
  switch (name) {
    case 'orders':
      return {
        queueUrl: outputs.orderEventsQueueUrl,
        deadLetterQueueUrl: outputs.orderEventsDeadLetterQueueUrl,
        functionName: outputs.orderProjectorFunctionName,
        consumerName: outputs.orderProjectorConsumerName,
      };
    case 'audit':
      return {
        queueUrl: outputs.auditEventsQueueUrl,
        deadLetterQueueUrl: outputs.auditEventsDeadLetterQueueUrl,
        functionName: outputs.auditRecorderFunctionName,
        consumerName: outputs.auditRecorderConsumerName,
      };
    case 'payments':
      return {
        queueUrl: outputs.paymentEventsQueueUrl,
        deadLetterQueueUrl: outputs.paymentEventsDeadLetterQueueUrl,
        functionName: outputs.paymentNotifierFunctionName,
        consumerName: outputs.paymentNotifierConsumerName,
      };
  }
}

/** The downstream failures the sample logs' story needs, to start the downstream service with. */
export function sampleDownstreamFailures(logs: SampleLogs): DownstreamFailure[] {
  return downstreamFailures(logs.payments).map(({ payment, status, applied }) => ({
    payment,
    status,
    applied,
  }));
}

/** What {@link runSampleLogs} sent and redelivered. */
export interface SampleRun {
  /** The SQS message id of every line, per log. */
  readonly sent: Readonly<Record<SampleLogName, SentMessages>>;
  readonly redeliveries: Readonly<Record<SampleLogName, readonly RedeliveryResult[]>>;
  /** How long the queues took to drain after the sends (retries after a visibility timeout included). */
  readonly drainMillis: number;
}

/** Options of {@link runSampleLogs}. */
export interface RunSampleLogsOptions {
  /**
   * Longest wait for the queues to drain. A message that failed transiently comes back only
   * after its queue's visibility timeout (30 s for the local payment queue).
   * @default 90000
   */
  readonly drainTimeoutMillis?: number;
}

/**
 * Sends the three sample logs (concurrently, each in log order), waits until every queue drained
 * (the payment log's transient failures come back after the visibility timeout), then delivers
 * each log's `redeliver` lines to their consumer once more.
 */
export async function runSampleLogs(
  harness: ExampleHarness,
  logs: SampleLogs,
  options: RunSampleLogsOptions = {},
): Promise<SampleRun> {
  const queueUrls = SAMPLE_LOG_NAMES.map((name) => consumerOf(harness.outputs, name).queueUrl);
  const [orders, audit, payments] = await Promise.all(
    SAMPLE_LOG_NAMES.map((name, index) => sendLog(harness.sqs, queueUrls[index]!, logs[name].entries)),
  );
  const sent = { orders: orders!, audit: audit!, payments: payments! };
  const drainMillis = await waitForQueues(harness.sqs, queueUrls, {
    timeoutMillis: options.drainTimeoutMillis ?? 90_000,
  });
  const redeliveries: Record<SampleLogName, RedeliveryResult[]> = { orders: [], audit: [], payments: [] };
  for (const name of SAMPLE_LOG_NAMES) {
    const { functionName, queueUrl } = consumerOf(harness.outputs, name);
    for (const line of logs[name].redeliver) {
      redeliveries[name].push(
        await redeliver(harness, {
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
  /** What the downstream service saw and applied. */
  readonly downstream: DownstreamSnapshot;
}

/**
 * Reads the consumers' outcome metrics (waiting, briefly, until they count at least
 * `minimumDeliveries` each), the tables, the dead-letter queues and the downstream's ledger.
 */
export async function observeExample(
  harness: ExampleHarness,
  minimumDeliveries: Readonly<Record<SampleLogName, number>>,
): Promise<ExampleObservation> {
  const { outputs } = harness;
  const [orders, audit, payments] = await Promise.all(
    SAMPLE_LOG_NAMES.map((name) =>
      awaitOutcomeTotals(harness, consumerOf(outputs, name).functionName, minimumDeliveries[name]),
    ),
  );
  const tables = await readTables(harness.dynamodb, {
    orders: outputs.ordersTableName,
    inbox: outputs.inboxTableName,
    audit: outputs.auditTableName,
    consumers: {
      orders: outputs.orderProjectorConsumerName,
      audit: outputs.auditRecorderConsumerName,
      payments: outputs.paymentNotifierConsumerName,
    },
    streamConsumer: outputs.orderSummaryProjectorConsumerName,
  });
  const deadLetters = {} as Record<SampleLogName, readonly DeadLetter[]>;
  for (const name of SAMPLE_LOG_NAMES) {
    deadLetters[name] = await readDeadLetters(harness.sqs, consumerOf(outputs, name).deadLetterQueueUrl);
  }
  return {
    outcomes: { orders: orders!, audit: audit!, payments: payments! },
    tables,
    deadLetters,
    downstream: harness.downstream.snapshot(),
  };
}

/** The minimum deliveries each consumer's metrics must count after {@link runSampleLogs}. */
export function firstRunDeliveries(logs: SampleLogs): Record<SampleLogName, number> {
  return {
    orders: expectedDeliveries(logs.orders),
    audit: expectedDeliveries(logs.audit),
    payments: expectedDeliveries(logs.payments),
  };
}

/**
 * Checks a first run against the logs' story: exact outcome counts per consumer, exact item
 * counts and order states, redeliveries acknowledged, exactly the poison lines in the
 * dead-letter queues with their code and reason, and the payment notifier's external effect
 * once per payment status.
 *
 * A message whose dedup key another delivery holds in progress at that moment (a producer
 * resend in a concurrent batch of a standard queue) is reported as in flight and retried; it
 * comes back after the visibility timeout as a duplicate. Whether that happens depends on how the
 * queue splits the log into batches, so such deliveries are allowed, and counted on top.
 */
export function checkFirstRun(logs: SampleLogs, run: SampleRun, observation: ExampleObservation): Check[] {
  const checks: Check[] = [];
  for (const name of SAMPLE_LOG_NAMES) {
    const log = logs[name];
    const expected = expectedOutcome(log);
    const outcomes = observation.outcomes[name];
    const inFlight =
      outcomes.inFlight > 0 ? ` + ${outcomes.inFlight} in flight elsewhere and delivered again` : '';
    checks.push(
      check(
        `${name}: ${expected.delivered} of ${expected.sent} messages delivered by SQS (${expected.brokerSuppressed} suppressed by the broker), ${expected.redelivered} redelivered, ${expected.retried} delivered again after a transient failure${inFlight}`,
        expectedDeliveries(log) + outcomes.inFlight,
        deliveriesOf(outcomes),
      ),
      check(
        `${name}: ${expected.processed} processed, ${expected.duplicates} suppressed by the inbox, ${expected.retried} retried, ${expected.deadLetters} failed permanently`,
        {
          processed: expected.processed,
          duplicate: expected.duplicates,
          permanent: expected.deadLetters,
          retry: expected.retried,
          mismatch: 0,
          stale: 0,
        },
        {
          processed: outcomes.processed,
          duplicate: outcomes.duplicate,
          permanent: outcomes.permanent,
          retry: outcomes.retry,
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
  const inbox = {
    orders: expectedOutcome(logs.orders).processed,
    audit: 0,
    payments: expectedOutcome(logs.payments).processed,
  };
  checks.push(
    check(
      `Orders table: ${orders.size} orders + ${statusItems} status transitions = ${orders.size + statusItems} items`,
      orders.size + statusItems,
      observation.tables.ordersItems,
    ),
    check(
      `Inbox table: ${inbox.orders} records of the order projector (one per processed order event) + ${inbox.payments} of the payment notifier (one per notified payment status), besides the stream consumer's`,
      { ...inbox, total: inbox.orders + inbox.payments },
      {
        ...observation.tables.inboxRecords,
        total: observation.tables.inboxTotal - observation.tables.streamInboxRecords,
      },
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
  checks.push(
    ...checkExternalEffects(logs.payments, observation.downstream, observation.tables.notifications),
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

/**
 * Replays the three logs with the double-tap helper over every table: Orders, Audit and the
 * inbox, and the second service's side of the chain, the outbox table and Shipments (the order
 * log is the first service's input: a replay must emit nothing, so nothing reaches Shipments).
 */
export async function replayExample(
  harness: ExampleHarness,
  logs: SampleLogs,
  onProgress?: Parameters<typeof replayLogs>[0]['onProgress'],
): Promise<ReplayLogsResult> {
  const { outputs } = harness;
  return replayLogs({
    sqs: harness.sqs,
    dynamodb: harness.dynamodb,
    replays: SAMPLE_LOG_NAMES.map((name) => ({
      log: logs[name],
      queueUrl: consumerOf(outputs, name).queueUrl,
    })),
    tables: [
      outputs.ordersTableName,
      outputs.auditTableName,
      outputs.inboxTableName,
      outputs.outboxTableName,
      outputs.shipmentsTableName,
    ],
    ...(onProgress ? { onProgress } : {}),
  });
}

/**
 * Passes of a replay that reach the consumer: a FIFO log's second pass reuses the first pass's
 * deduplication ids, so the broker drops it; a standard log reaches it twice.
 */
export function replayPasses(log: SampleLog): number {
  return log.fifo ? 1 : 2;
}

/**
 * The deliveries each consumer sees in a replay: the FIFO log once (without its broker resends),
 * the standard logs twice.
 */
export function replayDeliveries(logs: SampleLogs): Record<SampleLogName, number> {
  const deliveries = (log: SampleLog) => replayPasses(log) * expectedOutcome(log).delivered;
  return {
    orders: deliveries(logs.orders),
    audit: deliveries(logs.audit),
    payments: deliveries(logs.payments),
  };
}

/**
 * Checks a replay: no table changed by any comparison, no message processed again (every
 * delivery a duplicate, except poison, which is dead-lettered again with its reason), and the
 * downstream service called no more.
 */
export function checkReplay(
  logs: SampleLogs,
  before: ExampleObservation,
  after: ExampleObservation,
  replay: ReplayLogsResult,
): Check[] {
  const checks: Check[] = [];
  const deliveries = replayDeliveries(logs);
  for (const name of SAMPLE_LOG_NAMES) {
    const log = logs[name];
    const outcomes = subtractTotals(after.outcomes[name], before.outcomes[name]);
    const passes = replayPasses(log);
    const poison = expectedOutcome(log).deadLetters * passes;
    checks.push(
      check(
        `${name} replay: ${deliveries[name]} deliveries, none processed again, ${deliveries[name] - poison} suppressed by the inbox`,
        { processed: 0, duplicate: deliveries[name] - poison, permanent: poison, retry: 0, inFlight: 0 },
        {
          processed: outcomes.processed,
          duplicate: outcomes.duplicate,
          permanent: outcomes.permanent,
          retry: outcomes.retry,
          inFlight: outcomes.inFlight,
        },
      ),
    );
    checks.push(...checkDeadLetters(log, undefined, after.deadLetters[name], 1 + passes));
  }
  checks.push(...checkReplayEffects(logs.payments, before.downstream, after.downstream));
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
      'Orders, Audit, inbox, outbox and Shipments tables identical before and after the whole replay',
      0,
      replay.overall.length,
    ),
  );
  return checks;
}
