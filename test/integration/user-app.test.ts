/**
 * The quickstart (the README's, step by step in `docs/getting-started.md`), end to end, as a new
 * user follows it: a CDK app laid out as
 * `cdk init app --language typescript` lays one out (NodeNext tsconfig, `npx tsc && npx tsx` in
 * cdk.json), in a directory outside the repository, with the packed tarball installed and the
 * quickstart's own files (`examples/my-app/`: a handler passing only `dedupKey`, `mode` and
 * `handle`, a stack with one `IdempotentConsumer`). It runs the installed
 * `node_modules/.bin/effectively-once local up/deploy`, sends orders with a duplicate and a poison
 * message, checks what the construct configured reached the running function, replays the log
 * with `effectively-once replay`, then destroys the stack and stops the emulator.
 *
 * The app's other dependencies (aws-cdk-lib, aws-cdk, esbuild, tsx, typescript) are links to the
 * repository's installs, standing in for the user's `npm install`.
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { CloudWatchLogsClient, FilterLogEventsCommand } from '@aws-sdk/client-cloudwatch-logs';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ReceiveMessageCommand, SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EmulatorState, readEmulatorState } from '../../cli/local/emulator';
import { ensureMiniStack, projectRoot } from '../../scripts/local-aws/harness';
import { type CommandRun, isAlive, runCommand } from '../support/child-process';
import { waitFor } from '../support/fixtures';

const root = projectRoot();
const quickstart = join(root, 'examples', 'my-app');
const CONSUMER = 'order-totals';
const RECORD_TTL_SECONDS = 3 * 24 * 3600;
const STACK = 'MyAppStack';

/** The tsconfig of the current `cdk init app --language typescript` template, less jest's types (no tests here). */
const CDK_INIT_TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    lib: ['es2022'],
    declaration: true,
    strict: true,
    noImplicitAny: true,
    strictNullChecks: true,
    noImplicitThis: true,
    alwaysStrict: true,
    noUnusedLocals: false,
    noUnusedParameters: false,
    noImplicitReturns: true,
    noFallthroughCasesInSwitch: false,
    inlineSourceMap: true,
    inlineSources: true,
    experimentalDecorators: true,
    strictPropertyInitialization: false,
    skipLibCheck: true,
    typeRoots: ['./node_modules/@types'],
    noEmit: true,
    isolatedModules: true,
    types: ['node'],
  },
  exclude: ['node_modules', 'cdk.out'],
};

/**
 * The package as `npm pack` makes it, without running `prepack` in the repository (another test
 * may be building `dist/` there at the same time): compiled into a staging directory with the
 * repository's build config, then packed from there. Returns the tarball's path.
 */
function packTarball(work: string): string {
  const staging = join(work, 'staging');
  mkdirSync(staging, { recursive: true });
  for (const file of ['package.json', 'README.md', 'LICENSE']) {
    if (existsSync(join(root, file))) copyFileSync(join(root, file), join(staging, file));
  }
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const build = spawnSync(
    process.execPath,
    [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', join(staging, 'dist')],
    { cwd: root, encoding: 'utf8' },
  );
  if (build.status !== 0) throw new Error(`Building the package failed:\n${build.stdout}${build.stderr}`);
  const pack = spawnSync('npm', ['pack', '--ignore-scripts', '--pack-destination', work], {
    cwd: staging,
    encoding: 'utf8',
  });
  if (pack.status !== 0) throw new Error(`npm pack failed:\n${pack.stdout}${pack.stderr}`);
  return join(work, readdirSync(work).find((name) => name.endsWith('.tgz'))!);
}

/**
 * The user's app: the quickstart's files in the `cdk init` layout, the tarball unpacked into
 * node_modules/effectively-once with its bin linked as npm links it, and every other package
 * linked from the repository's node_modules.
 */
function makeUserApp(app: string, tarball: string): void {
  cpSync(quickstart, app, { recursive: true });
  writeFileSync(join(app, 'tsconfig.json'), JSON.stringify(CDK_INIT_TSCONFIG, null, 2));
  writeFileSync(
    join(app, 'cdk.json'),
    JSON.stringify({ app: 'npx tsc && npx tsx bin/my-app.ts', watch: { include: ['**'] } }),
  );
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'my-app', version: '0.1.0' }));
  writeFileSync(
    join(app, 'package-lock.json'),
    JSON.stringify({
      name: 'my-app',
      lockfileVersion: 3,
      requires: true,
      packages: { '': { name: 'my-app' } },
    }),
  );

  const modules = join(app, 'node_modules');
  const bins = join(modules, '.bin');
  mkdirSync(bins, { recursive: true });
  const repoModules = join(root, 'node_modules');
  for (const name of readdirSync(repoModules)) {
    if (name === '.bin' || name.startsWith('.') || name === 'effectively-once') continue;
    symlinkSync(join(repoModules, name), join(modules, name), 'dir');
  }
  for (const name of readdirSync(join(repoModules, '.bin'))) {
    symlinkSync(realpathSync(join(repoModules, '.bin', name)), join(bins, name));
  }
  const installed = join(modules, 'effectively-once');
  mkdirSync(installed);
  const untar = spawnSync('tar', ['-xzf', tarball, '-C', installed, '--strip-components=1'], {
    encoding: 'utf8',
  });
  if (untar.status !== 0) throw new Error(`Unpacking the tarball failed: ${untar.stderr}`);
  const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
    bin: Record<string, string>;
  };
  const binFile = join(installed, manifest.bin['effectively-once']!);
  chmodSync(binFile, 0o755);
  symlinkSync(relative(bins, binFile), join(bins, 'effectively-once'));
}

/** Runs the installed `node_modules/.bin/effectively-once <args>` in the app, with exactly `env` (plus PATH and HOME). */
function runCli(app: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<CommandRun> {
  const bin = join(app, 'node_modules', '.bin', 'effectively-once');
  return runCommand(bin, args, app, { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', ...env });
}

/** Fails with the command's whole output unless it exited 0. */
function expectSuccess(what: string, run: CommandRun): CommandRun {
  if (run.code !== 0) {
    throw new Error(`${what} exited ${run.code}:\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`);
  }
  return run;
}

/** `Stack.Output = value` lines of `cdk deploy`, as a map. */
function outputsOf(stdout: string): Record<string, string> {
  const outputs: Record<string, string> = {};
  for (const match of stdout.matchAll(new RegExp(`^${STACK}\\.(\\w+) = (\\S+)$`, 'gm'))) {
    outputs[match[1]!] = match[2]!;
  }
  return outputs;
}

/** The messages of a log group (the first page of `FilterLogEvents`), through the CloudWatch Logs client. */
async function logMessages(endpoint: string, logGroupName: string): Promise<string[]> {
  const logs = new CloudWatchLogsClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  try {
    const { events = [] } = await logs.send(new FilterLogEventsCommand({ logGroupName }));
    return events.map((event) => event.message ?? '');
  } finally {
    logs.destroy();
  }
}

/** The JSON objects among log lines (the runtime's logs and EMF metrics); platform lines are skipped. */
function jsonLines(messages: readonly string[]): Record<string, unknown>[] {
  return messages.flatMap((message) =>
    message
      .split('\n')
      .map((line) => line.slice(line.indexOf('{')))
      .filter((line) => line.startsWith('{'))
      .flatMap((line) => {
        try {
          return [JSON.parse(line) as Record<string, unknown>];
        } catch {
          return [];
        }
      }),
  );
}

describe("the README quickstart: a user's own CDK app, deployed locally with the installed package", () => {
  const work = mkdtempSync(join(tmpdir(), 'eo-user-app-'));
  const app = join(work, 'my-app');
  const cache = join(work, 'cache');
  const env = { XDG_CACHE_HOME: cache };
  let started: EmulatorState | undefined;
  let deployed = false;
  let outputs: Record<string, string> = {};
  let clients: { sqs: SQSClient; dynamodb: DynamoDBDocumentClient } | undefined;

  beforeAll(async () => {
    makeUserApp(app, packTarball(work));
    // The per-user cache gets the MiniStack the repository installed, instead of a second pip install.
    const installation = await ensureMiniStack();
    mkdirSync(join(cache, 'effectively-once'), { recursive: true });
    symlinkSync(join(installation.python, '..', '..'), join(cache, 'effectively-once', 'venv'), 'dir');
  }, 120_000);

  /** Rethrows a failed wait with what the function logged, the first thing to read when it did not act. */
  const withFunctionLogs = async (error: Error): Promise<never> => {
    const logs = await logMessages(started!.endpoint, outputs.LogGroupName!).catch(String);
    throw new Error(`${error.message}; the function logged:\n${[logs].flat().join('\n')}`);
  };

  afterAll(async () => {
    // Whatever failed above, never leave the stack or the emulator behind.
    started ??= readEmulatorState(join(cache, 'effectively-once'));
    clients?.sqs.destroy();
    clients?.dynamodb.destroy();
    if (started && isAlive(started.pid)) {
      if (deployed) await runCli(app, ['local', 'destroy'], env);
      await runCli(app, ['local', 'down'], env);
    }
    rmSync(work, { recursive: true, force: true });
  }, 60_000);

  it('starts the emulator and deploys the app with `local up` and `local deploy -c local=true`', async () => {
    expect(relative(root, app).startsWith('..')).toBe(true);
    const up = expectSuccess('effectively-once local up', await runCli(app, ['local', 'up'], env));
    started = readEmulatorState(join(cache, 'effectively-once'));
    expect(up.stdout).toBe(
      `export AWS_ENDPOINT_URL=${started?.endpoint} AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test\n`,
    );

    const deploy = await runCli(app, ['local', 'deploy', '-c', 'local=true'], env);
    deployed = true;
    expectSuccess('effectively-once local deploy', deploy);
    outputs = outputsOf(deploy.stdout);
    expect(Object.keys(outputs).sort()).toEqual([
      'DeadLetterQueueUrl',
      'InboxTableName',
      'LogGroupName',
      'QueueUrl',
      'TotalsTableName',
    ]);
    expect(deploy.stderr).toContain('TTL on `expiresAt` was off');

    const config = {
      endpoint: started!.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    };
    clients = {
      sqs: new SQSClient(config),
      dynamodb: DynamoDBDocumentClient.from(new DynamoDBClient(config)),
    };
  }, 150_000);

  it('counts a resent order once, dead-letters the poison order with its reason, and keeps records for the recordTtl', async () => {
    const { sqs, dynamodb } = clients!;
    const orders = [
      { orderId: 'o-1', customerId: 'c-1', amount: 10 },
      { orderId: 'o-1', customerId: 'c-1', amount: 10 },
      { orderId: 'o-2', customerId: 'c-1', amount: 5 },
      { orderId: 'o-3', customerId: 'c-2', amount: 7 },
      { orderId: 'o-4', customerId: 'c-2', amount: -5 },
    ];
    const before = Math.floor(Date.now() / 1000);
    const sent = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: outputs.QueueUrl,
        Entries: orders.map((order, index) => ({ Id: `m${index}`, MessageBody: JSON.stringify(order) })),
      }),
    );
    expect(sent.Failed ?? []).toEqual([]);
    const poisonId = sent.Successful?.find((entry) => entry.Id === 'm4')?.MessageId;

    const readTotals = async () =>
      (await dynamodb.send(new ScanCommand({ TableName: outputs.TotalsTableName }))).Items ?? [];
    const deadLetters = await waitFor(
      'the poison order on the dead-letter queue',
      async () => {
        const received = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: outputs.DeadLetterQueueUrl,
            MessageAttributeNames: ['All'],
            WaitTimeSeconds: 1,
          }),
        );
        return received.Messages?.length ? received.Messages : undefined;
      },
      { timeoutMillis: 60_000, intervalMillis: 500 },
    ).catch(withFunctionLogs);
    await waitFor('two customers totalled', async () => (await readTotals()).length === 2, {
      timeoutMillis: 30_000,
      intervalMillis: 500,
    }).catch(withFunctionLogs);
    const after = Math.ceil(Date.now() / 1000);

    const totals = (await readTotals()).sort((a, b) => String(a.pk).localeCompare(String(b.pk)));
    expect(totals).toEqual([
      { pk: 'CUSTOMER#c-1', orderCount: 2, amountTotal: 15 },
      { pk: 'CUSTOMER#c-2', orderCount: 1, amountTotal: 7 },
    ]);

    expect(
      deadLetters.map(({ Body, MessageAttributes = {} }) => ({
        Body,
        reason: MessageAttributes['eo-reason']?.StringValue,
        code: MessageAttributes['eo-code']?.StringValue,
        consumer: MessageAttributes['eo-consumer']?.StringValue,
        sourceMessageId: MessageAttributes['eo-source-message-id']?.StringValue,
      })),
    ).toEqual([
      {
        Body: JSON.stringify(orders[4]),
        reason: 'An order amount must be positive',
        code: 'PERMANENT',
        consumer: CONSUMER,
        sourceMessageId: poisonId,
      },
    ]);

    const record = (
      await dynamodb.send(
        new GetCommand({ TableName: outputs.InboxTableName, Key: { pk: `${CONSUMER}#o-1` } }),
      )
    ).Item;
    expect(record).toMatchObject({ consumer: CONSUMER, status: 'COMPLETED' });
    expect(record?.expiresAt).toBeGreaterThanOrEqual(before + RECORD_TTL_SECONDS);
    expect(record?.expiresAt).toBeLessThanOrEqual(after + RECORD_TTL_SECONDS);
  }, 120_000);

  it("logs and emits metrics under the construct's consumer name", async () => {
    const lines = await waitFor(
      'the function logs in CloudWatch Logs',
      async () => {
        const parsed = jsonLines(await logMessages(started!.endpoint, outputs.LogGroupName!));
        return parsed.some((line) => line.code === 'PERMANENT') ? parsed : undefined;
      },
      { timeoutMillis: 20_000, intervalMillis: 500 },
    );
    const metrics = lines.filter((line) => '_aws' in line);
    const logs = lines.filter((line) => !('_aws' in line));
    expect(metrics.length).toBeGreaterThan(0);
    expect(new Set(metrics.map((line) => line.Consumer))).toEqual(new Set([CONSUMER]));
    expect(new Set(logs.map((line) => line.consumer))).toEqual(new Set([CONSUMER]));
    expect(logs.filter((line) => line.code === 'PERMANENT')).toEqual([
      expect.objectContaining({ level: 'error', consumer: CONSUMER, deadLetter: 'sent' }),
    ]);
  }, 30_000);

  it('passes `effectively-once replay` of the order log', async () => {
    const replay = await runCli(
      app,
      [
        'replay',
        '--log',
        'orders-log.jsonl',
        '--queue-url',
        outputs.QueueUrl!,
        '--table',
        outputs.TotalsTableName!,
        '--table',
        outputs.InboxTableName!,
        '--poll-interval',
        '0.5',
        '--stable-polls',
        '4',
        '--timeout',
        '60',
      ],
      {
        ...env,
        AWS_ENDPOINT_URL: started!.endpoint,
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'test',
        AWS_SECRET_ACCESS_KEY: 'test',
      },
    );
    expectSuccess('effectively-once replay', replay);
    expect(replay.stdout).toMatch(/^PASS: replaying 3 messages a second time changed nothing/);
  }, 150_000);

  it('destroys the stack and stops the emulator', async () => {
    const destroy = expectSuccess(
      'effectively-once local destroy',
      await runCli(app, ['local', 'destroy'], env),
    );
    deployed = false;
    expect(destroy.stderr).toMatch(new RegExp(`^Deleted stack ${STACK} in `, 'm'));

    expectSuccess('effectively-once local down', await runCli(app, ['local', 'down'], env));
    expect(isAlive(started!.pid)).toBe(false);
  }, 90_000);
});
