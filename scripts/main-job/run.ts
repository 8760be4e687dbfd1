/**
 * The main job (`npm start`): the example app end to end on local AWS. It starts the emulator
 * (or uses `AWS_ENDPOINT_URL`), deploys the example app, sends the sample order and audit logs
 * with their resends, redeliveries and poison message, reads what the consumers did, replays
 * everything with the double-tap helper, checks every expectation, and cleans up what it started.
 */
import { relative } from 'node:path';
import { destroyLocal } from '../deploy-local-lib';
import { type LocalAws, projectRoot, startLocalAws } from '../local-aws-lib';
import { deployExample, EXAMPLE_STACK_NAME } from './example-deployment';
import { deliveriesOf } from './observations';
import { REPLAY_DEDUP_SUFFIX } from './replay-logs';
import {
  formatChecks,
  formatDeadLetters,
  formatEffects,
  formatLogStory,
  formatReplay,
  formatRunSummary,
  formatTimings,
  seconds,
  type Timing,
} from './report';
import { loadSampleLogs } from './sample-logs';
import {
  type Check,
  checkFirstRun,
  checkReplay,
  createExampleHarness,
  type ExampleHarness,
  firstRunDeliveries,
  observeExample,
  replayDeliveries,
  replayExample,
  runSampleLogs,
} from './scenario';

/** Options of {@link runMainJob}. */
export interface MainJobOptions {
  /** @default the project root */
  readonly root?: string;
  /** Where `AWS_ENDPOINT_URL` and friends are read. @default process.env */
  readonly env?: NodeJS.ProcessEnv;
  /** Receives every output line. @default console.log */
  readonly print?: (line: string) => void;
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
 * it started; on an emulator given through `AWS_ENDPOINT_URL`, it deploys under a stack name of
 * its own and deletes that stack by name afterwards.
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

  print('effectively-once: the example app end to end on local AWS\n');
  try {
    // A broken sample log fails here, before anything is started.
    const logs = loadSampleLogs(root);

    print('[1/5] Local AWS and the example app');
    aws = await time('start local AWS', () =>
      startLocalAws({ env: options.env ?? process.env, log: indented }),
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
        outputDir: 'cdk.out.main-job',
        outputsFile: '.local/main-job-outputs.json',
        logFile: '.local/logs/main-job-cdk.log',
        log: indented,
      });
    });
    harness = createExampleHarness(aws, deployment.outputs);
    const h = harness;

    print('\n[2/5] Sending the sample logs');
    const file = (path: string) => relative(root, path);
    print(
      formatLogStory(logs.orders, `${file(logs.orders.file)} → FIFO queue → order projector (atomic mode)`),
    );
    print(
      formatLogStory(logs.audit, `${file(logs.audit.file)} → standard queue → audit recorder (entity mode)`),
    );
    print(
      `  After the queues drain, orders line ${logs.orders.redeliver.join(', ')} and audit line ` +
        `${logs.audit.redeliver.join(', ')} are delivered once more: each function is invoked with the event\n` +
        '  SQS sends when a processed batch was not deleted (same message id, receive count 2).',
    );
    const run = await time('send the logs, drain, redeliver', () => runSampleLogs(h, logs));
    print(
      `  Sent ${logs.orders.entries.length + logs.audit.entries.length} messages; the queues drained in ${seconds(run.drainMillis)}.`,
    );

    print('\n[3/5] What the consumers did');
    const first = await time('read metrics, tables and DLQs', () =>
      observeExample(h, firstRunDeliveries(logs)),
    );
    print(formatRunSummary(logs, first));
    print(
      "  (Processed, duplicate and dead-letter counts come from the consumers' Embedded Metric Format lines\n" +
        "  in their CloudWatch Logs group; the broker's suppressions are the sends that were never delivered.)\n",
    );
    print(formatEffects(first));
    print(formatDeadLetters(logs, run, first));
    checks.push(...checkFirstRun(logs, run, first));

    print('\n[4/5] Replaying the whole log (double tap)');
    print(
      `  The replay tool's doubleTap helper sends each log twice and snapshots the Orders, Audit and inbox\n` +
        `  tables after each pass. SQS would drop a FIFO resend with a deduplication id it saw in the last\n` +
        `  five minutes, which would make the replay pass without reaching the consumer; so the replay uses\n` +
        `  fresh ids (suffix \`${REPLAY_DEDUP_SUFFIX}\`), as a producer replaying after the window would, and no\n` +
        `  wait (dedupWindowSeconds: 0). Pass 2 of the FIFO log repeats pass 1's ids, so the broker drops\n` +
        '  it; the comparison that proves the consumer is the one with the tables before the replay.',
    );
    const replay = await time('replay the logs (double tap)', () => replayExample(h, logs));
    const deliveries = replayDeliveries(logs);
    const second = await time('read metrics, tables and DLQs again', () =>
      observeExample(h, {
        orders: deliveriesOf(first.outcomes.orders) + deliveries.orders,
        audit: deliveriesOf(first.outcomes.audit) + deliveries.audit,
      }),
    );
    print(formatReplay(replay));
    const reached =
      deliveriesOf(second.outcomes.orders) -
      deliveriesOf(first.outcomes.orders) +
      deliveriesOf(second.outcomes.audit) -
      deliveriesOf(first.outcomes.audit);
    print(
      `  The replay reached the consumers ${reached} times (orders pass 1, audit passes 1 and 2); every\n` +
        '  delivery was a duplicate, except the poison message, which went to the dead-letter queue again:',
    );
    print(formatDeadLetters(logs, run, second).replace(/^ {2}/gm, '    '));
    checks.push(...checkReplay(logs, first, second, replay));
  } catch (error) {
    checks.push({
      ok: false,
      name: 'the main job ran to the end',
      detail: error instanceof Error ? error.message : String(error),
    });
  } finally {
    harness?.destroy();
  }

  print('\n[5/5] Checks');
  print(formatChecks(checks));

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
