/**
 * The main job (`npm start`): the example app end to end on local AWS. It starts the emulator
 * (or uses `AWS_ENDPOINT_URL`) and a deduplicating downstream service on `127.0.0.1`, deploys the
 * example app, sends the sample order, audit and payment logs with their resends, redeliveries,
 * transient downstream failures and poison messages, reads what the consumers and the downstream
 * did, follows the chain to the second service (the order projector's `OrderConfirmed` events
 * through the outbox and its relay, which crashes once after a publish, to the shipment
 * scheduler), waits for the stream consumer's read model (projected from the Orders table's
 * stream) and feeds it the whole stream again, replays everything with the double-tap helper,
 * checks every expectation, and cleans up what it started.
 */
import { relative } from 'node:path';
import { destroyLocal } from '../../cli/local/deploy';
import { type LocalAws, projectRoot, startLocalAws } from '../local-aws/harness';
import { awaitChain, checkChain, checkChainUnchanged, confirmedOrders, observeChain } from './chain';
import { type Check, check } from './checks';
import { type Downstream, startDownstream } from './downstream';
import { deployExample, EXAMPLE_STACK_NAME } from './example-deployment';
import { deliveriesOf } from './observations';
import { REPLAY_DEDUP_SUFFIX } from './replay-logs';
import {
  formatChain,
  formatChecks,
  formatDeadLetters,
  formatEffects,
  formatLogStory,
  formatReplay,
  formatRunSummary,
  formatStreamProjection,
  formatStreamReplay,
  formatTimings,
  formatWorkerSwitch,
  seconds,
  type Timing,
} from './report';
import { loadSampleLogs, SAMPLE_LOG_NAMES } from './sample-logs';
import {
  checkFirstRun,
  checkReplay,
  createExampleHarness,
  type ExampleHarness,
  firstRunDeliveries,
  observeExample,
  replayDeliveries,
  replayExample,
  runSampleLogs,
  sampleDownstreamFailures,
} from './scenario';
import {
  awaitStreamProjection,
  checkStreamProjection,
  impliedOrderSummaries,
  readOrderSummaries,
  replayOrdersStream,
} from './stream-projection';
import {
  checkWorkerSwitch,
  ORDER_PROJECTOR_WORKER_ENTRY,
  runOrdersOnWorker,
  WORKER_DEDUP_SUFFIX,
} from './worker-switch';

/** Options of {@link runMainJob}. */
export interface MainJobOptions {
  /** @default the project root */
  readonly root?: string;
  /** Where `AWS_ENDPOINT_URL` and friends are read. @default process.env */
  readonly env?: NodeJS.ProcessEnv;
  /** Receives every output line. @default console.log */
  readonly print?: (line: string) => void;
  /**
   * List every check as a PASS line; otherwise the passed checks are folded into one line.
   * @default false
   */
  readonly verbose?: boolean;
}

/** What the main job found. */
export interface MainJobResult {
  /** True when every check held. */
  readonly ok: boolean;
  readonly checks: readonly Check[];
  readonly timings: readonly Timing[];
  readonly totalMillis: number;
}

/**
 * Runs the main job and prints what happens in plain words, a summary table, every check and
 * the step timings. Never throws: a failure is printed and makes `ok` false. Stops the emulator
 * and the downstream service it started; on an emulator given through `AWS_ENDPOINT_URL`, it
 * deploys under a stack name of its own and deletes that stack by name afterwards (that emulator
 * must run the functions on this host, as MiniStack does, for them to reach the downstream
 * service on `127.0.0.1`).
 *
 * @example
 * const { ok } = await runMainJob();
 * process.exitCode = ok ? 0 : 1;
 */
export async function runMainJob(options: MainJobOptions = {}): Promise<MainJobResult> {
  const root = options.root ?? projectRoot();
  const print = options.print ?? ((line: string) => console.log(line));
  const indented = (line: string) => print(`  ${line}`);
  const started = Date.now();
  const timings: Timing[] = [];
  const time = async <T>(step: string, work: () => Promise<T>): Promise<T> => {
    const start = Date.now();
    try {
      return await work();
    } finally {
      timings.push({ step, millis: Date.now() - start });
    }
  };
  const checks: Check[] = [];
  let aws: LocalAws | undefined;
  let stackName = EXAMPLE_STACK_NAME;
  let deployed = false;
  let harness: ExampleHarness | undefined;
  let downstream: Downstream | undefined;

  print('effectively-once: the example app end to end on local AWS\n');
  try {
    // A broken sample log fails here, before anything is started.
    const logs = loadSampleLogs(root);

    print('[1/8] Local AWS, the downstream service and the example app');
    aws = await time('start local AWS and the downstream service', async () => {
      downstream = await startDownstream({ failures: sampleDownstreamFailures(logs) });
      // IAM enforced: the functions run with their execution roles, so a grant the construct
      // forgot fails the run here instead of on AWS.
      return startLocalAws({ env: options.env ?? process.env, log: indented, enforceIam: true });
    });
    const service = downstream!;
    indented(
      `Downstream service on ${service.url}: POST /notifications applies each Idempotency-Key once ` +
        '(a repeated key gets the first notification id back)',
    );
    // On an emulator of our own the stack has its usual name; on a shared one, a name of its own,
    // so the run starts from empty tables and never touches a stack someone else deployed.
    if (!aws.started) stackName = `${EXAMPLE_STACK_NAME}-main-${Date.now().toString(36)}`;
    const currentAws = aws;
    const deployment = await time('deploy the example app', () => {
      deployed = true;
      return deployExample({
        aws: currentAws,
        root,
        stackName,
        downstreamUrl: service.url,
        outputDir: 'cdk.out.main-job',
        outputsFile: '.local/main-job-outputs.json',
        logFile: '.local/logs/main-job-cdk.log',
        log: indented,
      });
    });
    harness = createExampleHarness(aws, deployment.outputs, service.ledger);
    const h = harness;

    print('\n[2/8] Sending the sample logs');
    const file = (path: string) => relative(root, path);
    print(
      formatLogStory(logs.orders, `${file(logs.orders.file)} → FIFO queue → order projector (atomic mode)`),
    );
    print(
      formatLogStory(logs.audit, `${file(logs.audit.file)} → standard queue → audit recorder (entity mode)`),
    );
    print(
      formatLogStory(
        logs.payments,
        `${file(logs.payments.file)} → standard queue → payment notifier (two-phase mode) → downstream service`,
      ),
    );
    print(
      '  A notification that fails transiently is released and reported as a batch item failure; SQS\n' +
        "  delivers it again once the queue's visibility timeout (30 s locally) has passed.",
    );
    print(
      `  After the queues drain, orders line ${logs.orders.redeliver.join(', ')}, audit line ` +
        `${logs.audit.redeliver.join(', ')} and payments line ${logs.payments.redeliver.join(', ')} are ` +
        'delivered once more: each function is invoked\n' +
        '  with the event SQS sends when a processed batch was not deleted (same message id, receive count 2).',
    );
    const run = await time('send the logs, drain (with retries), redeliver', () => runSampleLogs(h, logs));
    const sent = SAMPLE_LOG_NAMES.reduce((sum, name) => sum + logs[name].entries.length, 0);
    print(`  Sent ${sent} messages; the queues drained in ${seconds(run.drainMillis)}.`);

    print('\n[3/8] What the consumers did');
    const first = await time('read metrics, tables and DLQs', () =>
      observeExample(h, firstRunDeliveries(logs)),
    );
    print(formatRunSummary(logs, first));
    print(
      "  (Processed, duplicate and dead-letter counts come from the consumers' Embedded Metric Format lines\n" +
        "  in their CloudWatch Logs group; the broker's suppressions are the sends that were never delivered.)\n",
    );
    print(formatEffects(logs, first));
    print(formatDeadLetters(logs, run, first));
    checks.push(...checkFirstRun(logs, run, first));

    print(
      '\n[4/8] The chain: order projector → outbox → relay → shipment scheduler (entity mode) → Shipments',
    );
    const chainExpectation = {
      confirmed: confirmedOrders(logs.orders, h.outputs.orderProjectorConsumerName),
      crash: h.outputs.relayCrashTableName !== undefined,
    };
    print(
      '  An order event that makes an order PAID also puts an OrderConfirmed outbox item, in the same\n' +
        "  transaction as the order writes, with an id derived from the event's scoped dedup key. The outbox\n" +
        "  table's stream feeds the relay, which publishes each new item to the shipment scheduler's standard\n" +
        '  queue with the id as the `idempotency-key` attribute; the shipment scheduler keys on it. The relay\n' +
        '  crashes once, after a publish and before its checkpoint: the stream delivers the batch again (about\n' +
        '  1.2 s later on MiniStack) and the event is published a second time, with the same id.',
    );
    const chain = await time('wait for the chain (outbox, relay, shipments)', () =>
      awaitChain(h, chainExpectation),
    );
    print(formatChain(chainExpectation, chain));
    checks.push(...checkChain(chainExpectation, chain));

    print(
      '\n[5/8] The stream consumer: Orders table stream → order summary projector (atomic mode) → OrderSummaries',
    );
    print(
      "  Every write to the Orders table lands in its DynamoDB stream; the projector's event source mapping\n" +
        '  reads it from TRIM_HORIZON and counts, per status, the orders that reached it and their amounts.\n' +
        '  The read model is compared with what the Orders table itself implies.',
    );
    const projection = await time('wait for the stream projection', () => awaitStreamProjection(h));
    print(formatStreamProjection(projection));
    print(
      '  Double tap: the whole stream is re-read from TRIM_HORIZON and every record fed to the projector\n' +
        '  again, as a re-created mapping or a lost checkpoint would. (The emulator ignores batch item\n' +
        '  failures and retries, so the replay is invoked directly with the records GetRecords returns.)',
    );
    const streamReplay = await time('replay the Orders stream (double tap)', () => replayOrdersStream(h));
    print(formatStreamReplay(streamReplay));
    checks.push(...checkStreamProjection(projection, streamReplay));

    print('\n[6/8] Replaying the whole log (double tap)');
    print(
      `  The replay tool's doubleTap helper sends each log twice and snapshots the Orders, Audit, inbox,\n` +
        `  outbox and Shipments tables after each pass: the order log is the first service's input, and its\n` +
        `  replay must reach neither service's tables. SQS would drop a FIFO resend with a deduplication id it saw in the last\n` +
        `  five minutes, which would make the replay pass without reaching the consumer; so the replay uses\n` +
        `  fresh ids (suffix \`${REPLAY_DEDUP_SUFFIX}\`), as a producer replaying after the window would, and no\n` +
        `  wait (dedupWindowSeconds: 0). Pass 2 of the FIFO log repeats pass 1's ids, so the broker drops\n` +
        '  it; the comparison that proves the consumer is the one with the tables before the replay.',
    );
    const replay = await time('replay the logs (double tap)', () => replayExample(h, logs));
    // Nothing new in the outbox means nothing for the relay to publish: the chain is read again
    // once the other consumers' metrics have settled below.
    const deliveries = replayDeliveries(logs);
    const second = await time('read metrics, tables and DLQs again', () =>
      observeExample(h, {
        orders: deliveriesOf(first.outcomes.orders) + deliveries.orders,
        audit: deliveriesOf(first.outcomes.audit) + deliveries.audit,
        payments: deliveriesOf(first.outcomes.payments) + deliveries.payments,
      }),
    );
    const chainAfterReplay = await observeChain(h);
    print(formatReplay(replay));
    const quiet = checkChainUnchanged('chain after the replay', chain.observation, chainAfterReplay);
    print(
      `  The chain after the replay: ${chainAfterReplay.outbox.length} outbox items, ${chainAfterReplay.relay.published.length} relay publishes, ` +
        `${chainAfterReplay.shipments.length} Shipments items` +
        (quiet.every((item) => item.ok)
          ? ", as before: replaying the first service's log reached no one downstream."
          : ': changed (see the checks).'),
    );
    const reached = SAMPLE_LOG_NAMES.reduce(
      (sum, name) => sum + deliveriesOf(second.outcomes[name]) - deliveriesOf(first.outcomes[name]),
      0,
    );
    const calls = second.downstream.requests.length - first.downstream.requests.length;
    print(
      `  The replay reached the consumers ${reached} times (orders pass 1, audit and payments passes 1 and 2),\n` +
        `  and the downstream service ${calls === 0 ? 'not at all' : `${calls} times`}. Every delivery was a duplicate,\n` +
        '  except the poison messages, which went to their dead-letter queue again:',
    );
    print(formatDeadLetters(logs, run, second).replace(/^ {2}/gm, '    '));
    checks.push(...checkReplay(logs, first, second, replay));
    checks.push(...quiet);

    print('\n[7/8] The order projector as a long-running worker');
    print(
      "  The same handler module runs outside Lambda: the function's event source mapping is turned off,\n" +
        `  and \`${ORDER_PROJECTOR_WORKER_ENTRY}\` starts as a process of its own (as in a container) with\n` +
        "  the function's environment plus ORDERS_QUEUE_URL, polling the queue with sqs-consumer. The order log\n" +
        `  is sent once more with fresh deduplication ids (suffix \`${WORKER_DEDUP_SUFFIX}\`), so the broker passes it.`,
    );
    const switched = await time('run the order log through the worker', () =>
      runOrdersOnWorker(h, logs, { root, log: indented }),
    );
    print(formatWorkerSwitch(switched));
    checks.push(...checkWorkerSwitch(logs, switched));
    checks.push(...checkChainUnchanged('chain after the worker', chain.observation, await observeChain(h)));
    const [summaries, implied] = await Promise.all([readOrderSummaries(h), impliedOrderSummaries(h)]);
    checks.push(
      check(
        'OrderSummaries still equals what the Orders table implies after the replays and the worker',
        implied,
        summaries,
      ),
    );
  } catch (error) {
    checks.push({
      ok: false,
      name: 'the main job ran to the end',
      detail: error instanceof Error ? error.message : String(error),
    });
  } finally {
    harness?.destroy();
  }
  if (downstream) {
    await downstream.close();
    print('\nStopped the downstream service.');
  }

  print('\n[8/8] Checks');
  print(formatChecks(checks, { verbose: options.verbose ?? false }));

  if (aws) {
    const running = aws;
    await time('clean up', async () => {
      if (running.started) {
        await running.stop();
        print('\nStopped the local MiniStack (with everything deployed to it).');
      } else if (deployed) {
        try {
          const outcome = await destroyLocal({ ...running, stackName });
          print(
            outcome === 'absent'
              ? `\nThe stack ${stackName} is not on ${running.endpoint}; nothing to delete.`
              : `\nDeleted the stack ${stackName} from ${running.endpoint} (by name).`,
          );
        } catch (error) {
          checks.push({ ok: false, name: `stack ${stackName} deleted`, detail: (error as Error).message });
          print(`\nCould not delete the stack ${stackName}: ${(error as Error).message}`);
        }
      }
    });
  }

  const totalMillis = Date.now() - started;
  const ok = checks.length > 0 && checks.every((check) => check.ok);
  print('\nTimings');
  print(formatTimings(timings, totalMillis));
  const failed = checks.filter((check) => !check.ok).length;
  print(ok ? `\nAll ${checks.length} checks held.` : `\n${failed} of ${checks.length} checks failed.`);
  if (!ok) {
    const logs = [
      aws?.logFile && `emulator (with the functions' output): ${aws.logFile}`,
      'CDK: .local/logs/main-job-cdk.log',
    ];
    print(`Logs: ${logs.filter(Boolean).join('; ')}`);
  }
  return { ok, checks, timings, totalMillis };
}
