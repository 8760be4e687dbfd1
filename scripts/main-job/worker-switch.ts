/**
 * The main job's runtime switch: the order projector moves from Lambda to a long-running worker.
 * The function's event source mapping is turned off, and the worker entry point of the same
 * handler module (`lambda/example/order-projector-worker.ts`) starts as a process of its own,
 * with the function's environment plus `ORDERS_QUEUE_URL`, as a container would. The order log
 * is sent once more with fresh deduplication ids (so the broker passes it). The worker finds
 * every order event already processed, because both runtimes share the inbox: moving a consumer
 * reprocesses nothing. SIGTERM stops the worker after its batch, and the mapping is turned back
 * on.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { describeKeyAttributes, scanTable } from '../../cli/replay/aws';
import { type Difference, diffSnapshots } from '../../cli/replay/diff';
import { createTableSnapshot, type TableSnapshot } from '../../cli/replay/snapshot';
import { localAwsEnv } from '../local-aws/harness';
import { type Check, check } from './checks';
import { functionEnvironment, setEventSourceMappingsEnabled } from './functions';
import {
  deliveriesOf,
  type OutcomeTotals,
  readOutcomeTotals,
  subtractTotals,
  sumOutcomeMetrics,
} from './observations';
import { expectedOutcome } from './sample-logs';
import { consumerOf, type ExampleHarness, type SampleLogs } from './scenario';
import { sendLog, waitForQueues } from './traffic';

/** How long a SIGTERM'd worker may take to exit: its longest poll (20 s) plus a margin. */
const WORKER_STOP_MILLIS = 30_000;

/** Appended to the FIFO deduplication ids of the worker's pass, so the broker delivers it. */
export const WORKER_DEDUP_SUFFIX = '#worker';

/** The worker entry point, relative to the project root. */
export const ORDER_PROJECTOR_WORKER_ENTRY = 'lambda/example/order-projector-worker.ts';

/** What happened while the order projector ran as a worker. */
export interface WorkerSwitchResult {
  /** Event source mappings turned off (and on again afterwards). */
  readonly mappingsTurnedOff: number;
  readonly sent: number;
  /** Deliveries the log leads to: every send but the broker's suppressions. */
  readonly expectedDeliveries: number;
  /** The worker's outcomes, from the Embedded Metric Format lines it printed. */
  readonly worker: OutcomeTotals;
  /** The function's outcomes while it was switched off. */
  readonly lambda: OutcomeTotals;
  /** How the worker process ended after SIGTERM. */
  readonly exit: { readonly code: number | null; readonly signal: NodeJS.Signals | null };
  /** Orders and inbox tables, before the worker's pass against after it. */
  readonly differences: readonly Difference[];
  /** Bodies of the log found in the worker's output (none: logs carry keys, never bodies). */
  readonly bodiesInOutput: number;
  readonly millis: number;
}

/** Options of {@link runOrdersOnWorker}. */
export interface RunOrdersOnWorkerOptions {
  /** Project root, where the worker entry point is. */
  readonly root: string;
  /** @default 60000 */
  readonly timeoutMillis?: number;
  /** Receives one line per step. */
  readonly log?: (line: string) => void;
}

/** Runs the order log once more through the order projector as a worker (see the module comment). */
export async function runOrdersOnWorker(
  harness: ExampleHarness,
  logs: SampleLogs,
  options: RunOrdersOnWorkerOptions,
): Promise<WorkerSwitchResult> {
  const started = Date.now();
  const timeoutMillis = options.timeoutMillis ?? 60_000;
  const { outputs } = harness;
  const consumer = consumerOf(outputs, 'orders');
  const tables = [outputs.ordersTableName, outputs.inboxTableName];
  const snapshot = async (): Promise<TableSnapshot[]> =>
    Promise.all(
      tables.map(async (table) =>
        createTableSnapshot(
          table,
          await describeKeyAttributes(harness.dynamodb, table),
          await scanTable(harness.dynamodb, table),
        ),
      ),
    );

  const before = await snapshot();
  const lambdaBefore = await readOutcomeTotals(harness, consumer.functionName);
  const mappingsTurnedOff = await setEventSourceMappingsEnabled(harness.lambda, consumer.functionName, false);
  options.log?.(`Turned off ${mappingsTurnedOff} event source mapping(s) of ${consumer.functionName}.`);
  let worker: ChildProcess | undefined;
  let output = '';
  try {
    const environment = await functionEnvironment(harness.lambda, consumer.functionName);
    worker = spawn(process.execPath, [require.resolve('tsx/cli'), ORDER_PROJECTOR_WORKER_ENTRY], {
      cwd: options.root,
      env: {
        ...process.env,
        ...environment,
        ORDERS_QUEUE_URL: consumer.queueUrl,
        ...localAwsEnv(harness.aws),
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const collect = (chunk: Buffer) => {
      output += chunk.toString('utf8');
    };
    worker.stdout?.on('data', collect);
    worker.stderr?.on('data', collect);
    const exited = new Promise<WorkerSwitchResult['exit']>((resolve) =>
      worker?.once('exit', (code, signal) => resolve({ code, signal })),
    );
    options.log?.(
      `Started \`${ORDER_PROJECTOR_WORKER_ENTRY}\` (pid ${worker.pid}) with the function's environment and ORDERS_QUEUE_URL.`,
    );

    const entries = logs.orders.entries.map((entry) =>
      entry.deduplicationId === undefined
        ? entry
        : { ...entry, deduplicationId: `${entry.deduplicationId}${WORKER_DEDUP_SUFFIX}` },
    );
    await sendLog(harness.sqs, consumer.queueUrl, entries);
    const expected = expectedOutcome(logs.orders).delivered;
    const deadline = Date.now() + timeoutMillis;
    while (deliveriesOf(sumOutcomeMetrics(output.split('\n'))) < expected) {
      if (worker.exitCode !== null) throw new Error(`The worker exited early:\n${output.slice(-2000)}`);
      if (Date.now() > deadline) {
        throw new Error(
          `The worker did not take the ${expected} deliveries in time:\n${output.slice(-2000)}`,
        );
      }
      await sleep(250);
    }
    await waitForQueues(harness.sqs, [consumer.queueUrl], { timeoutMillis });

    worker.kill('SIGTERM');
    // A stop waits for the long poll in flight (at most the worker's 20 s wait time) rather than
    // abort it, since SQS can still hand an aborted poll a message: allow that and a margin.
    const exit = await withTimeout(exited, WORKER_STOP_MILLIS, (): WorkerSwitchResult['exit'] => ({
      code: null,
      signal: null,
    }));
    options.log?.(`Stopped the worker with SIGTERM (exit code ${exit.code ?? `none, ${exit.signal}`}).`);
    const after = await snapshot();
    const lambda = subtractTotals(await readOutcomeTotals(harness, consumer.functionName), lambdaBefore);
    return {
      mappingsTurnedOff,
      sent: entries.length,
      expectedDeliveries: expected,
      worker: sumOutcomeMetrics(output.split('\n')),
      lambda,
      exit,
      differences: diffSnapshots(before, after),
      bodiesInOutput: logs.orders.entries.filter((entry) => output.includes(entry.body)).length,
      millis: Date.now() - started,
    };
  } finally {
    if (worker && worker.exitCode === null && worker.signalCode === null) worker.kill('SIGKILL');
    await setEventSourceMappingsEnabled(harness.lambda, consumer.functionName, true);
    options.log?.('Turned the event source mapping(s) back on.');
  }
}

/** Checks the switch: the Lambda idle, the worker processing nothing again, no table changed, a clean stop. */
export function checkWorkerSwitch(logs: SampleLogs, result: WorkerSwitchResult): Check[] {
  const poison = expectedOutcome(logs.orders).deadLetters;
  const deliveries = result.expectedDeliveries;
  return [
    check(
      'orders on the worker: the Lambda event source mapping turned off',
      true,
      result.mappingsTurnedOff > 0,
    ),
    check(
      'orders on the worker: the Lambda received nothing while switched off',
      0,
      deliveriesOf(result.lambda),
    ),
    check(
      `orders on the worker: ${deliveries} deliveries, none processed again, ${deliveries - poison} suppressed by the inbox`,
      { processed: 0, duplicate: deliveries - poison, permanent: poison, retry: 0, inFlight: 0 },
      {
        processed: result.worker.processed,
        duplicate: result.worker.duplicate,
        permanent: result.worker.permanent,
        retry: result.worker.retry,
        inFlight: result.worker.inFlight,
      },
    ),
    check('orders on the worker: Orders and inbox tables unchanged', 0, result.differences.length),
    check('orders on the worker: no message body in the worker output', 0, result.bodiesInOutput),
    check('orders on the worker: stopped by SIGTERM with exit code 0', 0, result.exit.code),
  ];
}

/**
 * `work`, or `onTimeout()` when it has not settled after `millis`. The timer is cleared as soon as
 * `work` settles, so a finished wait never keeps the process alive (npm start exits at its last line).
 */
export async function withTimeout<T>(work: Promise<T>, millis: number, onTimeout: () => T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<T>((done) => {
    timer = setTimeout(() => done(onTimeout()), millis);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
