import {
  appendFileSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { DescribeTimeToLiveCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeStack, listStackResources } from '../../cli/local/cloudformation';
import { type EmulatorState, readEmulatorState } from '../../cli/local/emulator';
import { localPaths } from '../../cli/local/paths';
import { PROGRESS_EVERY_MILLIS } from '../../cli/local/progress';
import { ensureMiniStack, projectRoot } from '../../scripts/local-aws/harness';
import { awsConfig, uniqueName } from '../support/aws';
import { type CommandRun, isAlive, runCommand } from '../support/child-process';
import { waitFor } from '../support/fixtures';

const root = projectRoot();
const cli = join(root, 'cli', 'effectively-once.ts');
const tsx = join(root, 'node_modules', '.bin', 'tsx');

/**
 * A CDK app the way a user has one, in a directory outside the repository: cdk.json, its own
 * package.json and lock file, bin/ with the app and handler, and node_modules (linked to the
 * repository's, standing in for the user's own install of aws-cdk-lib, aws-cdk and esbuild).
 */
function makeUserApp(dir: string, extraStack = ''): void {
  mkdirSync(join(dir, 'bin'), { recursive: true });
  for (const file of ['app.ts', 'handler.ts']) {
    copyFileSync(join(root, 'test', 'fixtures', 'deploy-app', file), join(dir, 'bin', file));
  }
  appendFileSync(join(dir, 'bin', 'app.ts'), extraStack);
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: 'my-app', version: '0.1.0', private: true }),
  );
  writeFileSync(
    join(dir, 'package-lock.json'),
    JSON.stringify({
      name: 'my-app',
      lockfileVersion: 3,
      requires: true,
      packages: { '': { name: 'my-app' } },
    }),
  );
  writeFileSync(join(dir, 'cdk.json'), JSON.stringify({ app: 'npx tsx bin/app.ts' }));
}

/**
 * Runs `effectively-once <args>` in `cwd` with exactly `env` (plus PATH and HOME). Its stderr is
 * the command's own: the command turns off the AWS SDK's Node.js notice itself.
 */
function runCli(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<CommandRun> {
  return runCommand(tsx, [cli, ...args], cwd, env);
}

/**
 * A second stack for the fixture app, with what the emulator rejects (a metric-math alarm, and a
 * composite alarm, a dashboard and an output that refer to it) and a synth warning.
 */
const EXTRAS_STACK = `
import { Annotations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';

const extras = new Stack(app, 'Extras', {
  stackName: \`\${stackName}-extras\`,
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
});
const extrasQueue = new sqs.Queue(extras, 'Queue', { removalPolicy: RemovalPolicy.DESTROY });
Annotations.of(extrasQueue).addWarningV2('test:extras', 'a synth warning the terminal shows');
const mathAlarm = new cloudwatch.Alarm(extras, 'MathAlarm', {
  metric: new cloudwatch.MathExpression({
    expression: 'sent - deleted',
    usingMetrics: {
      sent: extrasQueue.metricNumberOfMessagesSent(),
      deleted: extrasQueue.metricNumberOfMessagesDeleted(),
    },
  }),
  threshold: 1,
  evaluationPeriods: 1,
});
const plainAlarm = new cloudwatch.Alarm(extras, 'PlainAlarm', {
  metric: extrasQueue.metricApproximateAgeOfOldestMessage(),
  threshold: 60,
  evaluationPeriods: 1,
});
new cloudwatch.CompositeAlarm(extras, 'Composite', {
  alarmRule: cloudwatch.AlarmRule.anyOf(mathAlarm, plainAlarm),
});
new cloudwatch.Dashboard(extras, 'Dashboard').addWidgets(
  new cloudwatch.AlarmStatusWidget({ alarms: [mathAlarm, plainAlarm] }),
);
new CfnOutput(extras, 'MathAlarmName', { value: mathAlarm.alarmName });
new CfnOutput(extras, 'PlainAlarmName', { value: plainAlarm.alarmName });
`;

const EXPORT_LINE =
  /^export AWS_ENDPOINT_URL=(http:\/\/127\.0\.0\.1:\d+) AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test\n$/;

describe('effectively-once local, run from a CDK app outside the repository', () => {
  const work = mkdtempSync(join(tmpdir(), 'eo-local-cli-'));
  const app = join(work, 'my-app');
  // Another app of the same user, with the same directory name and the same stack name.
  const otherApp = join(work, 'elsewhere', 'my-app');
  const cache = join(work, 'cache');
  const installHome = join(cache, 'effectively-once');
  const stackName = uniqueName('LocalCli');
  // No AWS_ENDPOINT_URL: the commands use the emulator `local up` starts for the app.
  const env = { XDG_CACHE_HOME: cache };
  const home = localPaths({ appDir: app, env }).appHome;
  const otherHome = localPaths({ appDir: otherApp, env }).appHome;
  let started: EmulatorState | undefined;
  let otherStarted: EmulatorState | undefined;

  beforeAll(async () => {
    makeUserApp(app);
    makeUserApp(otherApp, EXTRAS_STACK);
    // The per-user cache gets the MiniStack the repository installed, instead of a second pip install.
    const installation = await ensureMiniStack();
    mkdirSync(installHome, { recursive: true });
    symlinkSync(join(installation.python, '..', '..'), join(installHome, 'venv'), 'dir');
  }, 120_000);

  afterAll(async () => {
    // Whatever happened above, never leave the emulator running.
    if (started && isAlive(started.pid)) await runCli(['local', 'down'], app, env);
    if (otherStarted && isAlive(otherStarted.pid)) await runCli(['local', 'down'], otherApp, env);
    rmSync(work, { recursive: true, force: true });
  });

  it('starts the emulator detached, prints the export line, and is a no-op the second time', async () => {
    expect(relative(root, app).startsWith('..')).toBe(true);

    const first = await runCli(['local', 'up'], app, env);
    expect(first).toMatchObject({ code: 0, stdout: expect.stringMatching(EXPORT_LINE) });
    started = readEmulatorState(home);
    expect(started).toMatchObject({ version: '1.5.33', region: 'us-east-1' });
    expect(first.stdout).toBe(`${EXPORT_LINE.exec(first.stdout)?.[0]}`);
    expect(EXPORT_LINE.exec(first.stdout)?.[1]).toBe(started?.endpoint);
    expect(isAlive(started?.pid ?? 0)).toBe(true);

    const second = await runCli(['local', 'up'], app, env);
    expect(second).toEqual({
      code: 0,
      stdout: first.stdout,
      stderr: `MiniStack 1.5.33 already runs at ${started?.endpoint} (pid ${started?.pid}).\n`,
    });
    expect(readEmulatorState(home)).toEqual(started);
  }, 60_000);

  it('deploys the app with its own cdk, with progress, and applies the fix-ups', async () => {
    const deployed = await runCli(['local', 'deploy', '-c', `deployAppStackName=${stackName}`], app, env);

    expect(deployed.code).toBe(0);
    expect(deployed.stdout).toMatch(new RegExp(`^${stackName}\\.TableName = (\\S+)$`, 'm'));
    expect(deployed.stderr).toContain(`Deploying all stacks to ${started?.endpoint}`);
    expect(deployed.stderr).toContain(`Deployed ${stackName} in `);
    // A progress line every PROGRESS_EVERY_MILLIS while the CDK runs: required of a deploy that
    // took longer than that (a fast machine can finish first).
    const tookSeconds = Number(
      new RegExp(`^Deployed ${stackName} in (\\d+\\.\\d) s`, 'm').exec(deployed.stderr)?.[1],
    );
    if (tookSeconds * 1000 > PROGRESS_EVERY_MILLIS + 1_000) {
      expect(deployed.stderr).toMatch(/^ {2}still deploying \(\d+\.\d s\)/m);
    }
    expect(deployed.stderr).toContain('TTL on `expiresAt` was off');
    expect(existsSync(join(app, 'cdk.out.local', 'manifest.json'))).toBe(true);

    const again = await runCli(['local', 'deploy', '-c', `deployAppStackName=${stackName}`], app, env);
    expect(again.stderr).toMatch(new RegExp(`^Deployed ${stackName} in \\d+\\.\\d s \\(no changes\\)$`, 'm'));

    const tableName = new RegExp(`^${stackName}\\.TableName = (\\S+)$`, 'm').exec(deployed.stdout)?.[1];
    const dynamodb = new DynamoDBClient({
      endpoint: started?.endpoint ?? '',
      region: 'us-east-1',
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });
    try {
      const ttl = await dynamodb.send(new DescribeTimeToLiveCommand({ TableName: tableName }));
      expect(ttl.TimeToLiveDescription).toMatchObject({
        TimeToLiveStatus: 'ENABLED',
        AttributeName: 'expiresAt',
      });
    } finally {
      dynamodb.destroy();
    }
  }, 90_000);

  it('gives another app with the same stack name its own emulator and outputs, leaving this one alone', async () => {
    const up = await runCli(['local', 'up'], otherApp, env);
    expect(up.code).toBe(0);
    otherStarted = readEmulatorState(otherHome);
    expect(otherStarted?.endpoint).not.toBe(started?.endpoint);
    expect(otherStarted?.appDir).toBe(otherApp);

    const context = ['-c', `deployAppStackName=${stackName}`];
    const deployed = await runCli(['local', 'deploy', ...context], otherApp, env);
    expect(deployed.code).toBe(0);
    expect(deployed.stderr).toContain(`Deployed ${stackName}, ${stackName}-extras in `);
    // The synth warning, on the terminal once; what the emulator rejects, left out with a notice.
    const warning = '[Warning at /Extras/Queue] a synth warning the terminal shows [ack: test:extras]';
    expect(deployed.stderr).toContain(warning);
    expect(deployed.stderr.split('\n').filter((line) => line === warning)).toHaveLength(1);
    expect(deployed.stderr).toContain(
      'Left out locally: 1 metric-math alarm the emulator rejects (Extras/MathAlarm), what refers to them ' +
        '(Extras/Composite, Extras/Dashboard) and 1 output naming them (MathAlarmName); they deploy on AWS.\n',
    );
    expect(deployed.stdout).toMatch(new RegExp(`^${stackName}-extras\\.PlainAlarmName = \\S+$`, 'm'));
    expect(deployed.stdout).not.toContain('MathAlarmName');
    expect(existsSync(join(otherHome, 'cdk-outputs.json'))).toBe(true);
    expect(readFileSync(join(home, 'cdk-outputs.json'), 'utf8')).toContain(stackName);

    const destroyed = await runCli(['local', 'destroy'], otherApp, env);
    expect(destroyed.stderr).toMatch(new RegExp(`^Deleted stack ${stackName}-extras in `, 'm'));
    expect(destroyed.stderr).toMatch(new RegExp(`^Deleted stack ${stackName} in `, 'm'));
    const down = await runCli(['local', 'down'], otherApp, env);
    expect(down.stderr).toContain(`Stopped MiniStack at ${otherStarted?.endpoint}`);
    expect(isAlive(otherStarted?.pid ?? 0)).toBe(false);

    // This app's emulator and stack are untouched.
    expect(isAlive(started?.pid ?? 0)).toBe(true);
    expect(readEmulatorState(home)).toEqual(started);
    const target = {
      endpoint: started?.endpoint ?? '',
      region: 'us-east-1',
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    };
    expect(await describeStack(target, stackName)).toMatchObject({ status: 'CREATE_COMPLETE' });
  }, 120_000);

  it('destroys the stacks of the last local deploy by name', async () => {
    const destroyed = await runCli(['local', 'destroy'], app, env);
    expect(destroyed).toMatchObject({ code: 0, stdout: '' });
    expect(destroyed.stderr).toMatch(new RegExp(`^Deleted stack ${stackName} in `));

    const again = await runCli(['local', 'destroy'], app, env);
    expect(again.stderr).toBe(
      `Stack ${stackName} does not exist at ${started?.endpoint}; nothing to delete\n`,
    );
  }, 60_000);

  it('stops exactly the recorded emulator and forgets it', async () => {
    const down = await runCli(['local', 'down'], app, env);
    expect(down).toEqual({
      code: 0,
      stdout: '',
      stderr: `Stopped MiniStack at ${started?.endpoint} (pid ${started?.pid}); everything deployed to it is gone.\n`,
    });
    expect(isAlive(started?.pid ?? 0)).toBe(false);
    expect(readEmulatorState(home)).toBeUndefined();

    const again = await runCli(['local', 'down'], app, env);
    expect(again.stderr).toBe('No emulator started by `local up` is running; nothing to stop.\n');
  }, 30_000);

  it('uses a given AWS_ENDPOINT_URL through plain AWS APIs, starting and stopping nothing', async () => {
    const aws = awsConfig();
    const given = { ...env, AWS_ENDPOINT_URL: aws.endpoint };

    const up = await runCli(['local', 'up'], app, given);
    expect(up.code).toBe(0);
    expect(up.stderr).toMatch(
      new RegExp(
        `^AWS_ENDPOINT_URL=${aws.endpoint} answers CloudFormation \\(CDK bootstrap: (present|absent)\\); starting nothing\\.\\n$`,
      ),
    );
    expect(readEmulatorState(home)).toBeUndefined();

    const destroy = await runCli(['local', 'destroy', `${stackName}-never-deployed`], app, given);
    expect(destroy.stderr).toBe(
      `Stack ${stackName}-never-deployed does not exist at ${aws.endpoint}; nothing to delete\n`,
    );

    const down = await runCli(['local', 'down'], app, given);
    expect(down.stderr).toBe(
      `AWS_ENDPOINT_URL=${aws.endpoint} was not started by \`local up\`; stopping nothing.\n`,
    );
  }, 30_000);
});

describe('effectively-once local deploy of the docs’ stack samples as written, with a message through each', () => {
  // Inside the repository (git-ignored), without a lock file of its own: the constructs' handler
  // entries (the package's sources here, node_modules in a user's app) must be under the CDK
  // project root, which is then the repository's.
  mkdirSync(join(root, '.local'), { recursive: true });
  const app = mkdtempSync(join(root, '.local', 'chain-app-'));
  const cache = mkdtempSync(join(tmpdir(), 'eo-local-chain-'));
  const env = { XDG_CACHE_HOME: cache };
  let started: EmulatorState | undefined;

  beforeAll(async () => {
    writeFileSync(
      join(app, 'cdk.json'),
      JSON.stringify({ app: 'npx tsx ../../examples/outbox-chain-stack.ts' }),
    );
    const installation = await ensureMiniStack();
    mkdirSync(join(cache, 'effectively-once'), { recursive: true });
    symlinkSync(join(installation.python, '..', '..'), join(cache, 'effectively-once', 'venv'), 'dir');
  }, 120_000);

  afterAll(async () => {
    if (started && isAlive(started.pid)) await runCli(['local', 'down'], app, env);
    rmSync(app, { recursive: true, force: true });
    rmSync(cache, { recursive: true, force: true });
  });

  /** This app's emulator, as the SDK and CloudFormation reach it. */
  const target = () => ({
    endpoint: started?.endpoint ?? '',
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  /** The physical id of `stack`'s resource of `type` whose logical id is `prefix` and the CDK's hash. */
  const physicalId = async (stack: string, type: string, prefix: string): Promise<string> => {
    const found = (await listStackResources(target(), stack)).find(
      (resource) => resource.type === type && new RegExp(`^${prefix}[0-9A-F]{8}$`).test(resource.logicalId),
    );
    expect(found?.physicalId, `${stack}: ${type} ${prefix}`).toBeDefined();
    return found!.physicalId!;
  };
  /** Runs `use` with a document client and an SQS client on the emulator, destroyed after. */
  const withClients = async (
    use: (clients: { documents: DynamoDBDocumentClient; sqs: SQSClient }) => Promise<void>,
  ): Promise<void> => {
    const config = target();
    const documents = DynamoDBDocumentClient.from(new DynamoDBClient(config));
    const sqs = new SQSClient(config);
    try {
      await use({ documents, sqs });
    } finally {
      documents.destroy();
      sqs.destroy();
    }
  };
  /** The item at `key` of `table` once it exists (a minute at most): a function's write arrived. */
  const itemOnce = (documents: DynamoDBDocumentClient, table: string, key: Record<string, string>) =>
    waitFor(
      `an item at ${JSON.stringify(key)} in ${table}`,
      async () =>
        (await documents.send(new GetCommand({ TableName: table, Key: key, ConsistentRead: true }))).Item,
      { timeoutMillis: 60_000, intervalMillis: 500 },
    );
  /** `local deploy` of `appCommand` (or cdk.json's app), which must succeed without a synth warning. */
  const deploy = async (appCommand?: string) => {
    const deployed = await runCli(
      ['local', 'deploy', ...(appCommand ? ['--app', appCommand] : [])],
      app,
      env,
    );
    expect(deployed.code, deployed.stderr).toBe(0);
    expect(deployed.stderr).not.toMatch(/\[(Warning|Error) at /);
    return deployed;
  };

  it('deploys the outbox chain with its alarms on, leaving out the metric-math ones with one notice, and ships one order end to end', async () => {
    expect((await runCli(['local', 'up'], app, env)).code).toBe(0);
    started = readEmulatorState(localPaths({ appDir: app, env }).appHome);

    const deployed = await deploy();
    const notices = deployed.stderr.split('\n').filter((line) => line.startsWith('Left out locally: '));
    expect(notices).toEqual([
      'Left out locally: 3 metric-math alarms the emulator rejects (OrderChainStack/Shipping/DuplicateRateAlarm, ' +
        'OrderChainStack/OrderEvents/FailedPublishAlarm, OrderChainStack/Orders/DuplicateRateAlarm) and what ' +
        'refers to them (OrderChainStack/Shipping/Dashboard, OrderChainStack/OrderEvents/Dashboard, ' +
        'OrderChainStack/Orders/Dashboard); they deploy on AWS.',
    ]);
    expect(deployed.stderr).toContain('Deployed OrderChainStack in ');

    // The order service confirms the order and emits `OrderConfirmed`, the package's relay
    // publishes it, and shipping books one parcel.
    const ordersTable = await physicalId('OrderChainStack', 'AWS::DynamoDB::Table', 'OrdersTable');
    const shipmentsTable = await physicalId('OrderChainStack', 'AWS::DynamoDB::Table', 'ShipmentsTable');
    const ordersQueue = await physicalId('OrderChainStack', 'AWS::SQS::Queue', 'OrdersQueue');
    await withClients(async ({ documents, sqs }) => {
      await documents.send(new PutCommand({ TableName: ordersTable, Item: { pk: 'o-1', status: 'PLACED' } }));
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: ordersQueue,
          MessageBody: JSON.stringify({ orderId: 'o-1', amount: 42 }),
        }),
      );
      expect(await itemOnce(documents, shipmentsTable, { pk: 'o-1' })).toEqual({
        pk: 'o-1',
        status: 'BOOKED',
        parcels: 1,
      });
      expect(await itemOnce(documents, ordersTable, { pk: 'o-1' })).toEqual({
        pk: 'o-1',
        status: 'CONFIRMED',
        paid: 42,
      });
    });

    const destroyed = await runCli(['local', 'destroy'], app, env);
    expect(destroyed.stderr).toMatch(/^Deleted stack OrderChainStack in /m);
    // The tables keep the CDK's default removal policy: the emulator keeps them, and says so.
    expect(destroyed.stderr).toMatch(
      /^Kept \d+ resources of OrderChainStack that its DeletionPolicy retains: .*OrderChainStack\/OrdersTable \(AWS::DynamoDB::Table\).*\. They stay in the emulator until `local down`\.$/m,
    );
  }, 180_000);

  it("deploys the consumer stack (a FIFO queue, alarms on, cdk-nag's checks) and projects one order", async () => {
    expect(started).toBeDefined();
    const deployed = await deploy('npx tsx ../../examples/cdk-consumer-stack.ts');
    const queueUrl = /^OrdersStack\.OrderEventsQueueUrl = (\S+)$/m.exec(deployed.stdout)?.[1];
    expect(queueUrl).toMatch(/\.fifo$/);
    const ordersTable = await physicalId('OrdersStack', 'AWS::DynamoDB::Table', 'Orders');
    await withClients(async ({ documents, sqs }) => {
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: JSON.stringify({ orderId: 'o-1', status: 'PAID', amount: 42 }),
          MessageGroupId: 'o-1',
          MessageDeduplicationId: 'o-1:PAID',
        }),
      );
      expect(await itemOnce(documents, ordersTable, { pk: 'ORDER#o-1', sk: 'ORDER' })).toEqual({
        pk: 'ORDER#o-1',
        sk: 'ORDER',
        status: 'PAID',
        amount: 42,
      });
    });
    // The stacks of the last local deploy: this one.
    const destroyed = await runCli(['local', 'destroy'], app, env);
    expect(destroyed.stderr).toMatch(/^Deleted stack OrdersStack in /m);
  }, 180_000);

  it("deploys the stream consumer stack (alarms on, cdk-nag's checks) and projects one change of its table", async () => {
    expect(started).toBeDefined();
    await deploy('npx tsx ../../examples/cdk-stream-consumer-stack.ts');
    const ordersTable = await physicalId('OrderStreamsStack', 'AWS::DynamoDB::Table', 'Orders');
    const readModelTable = await physicalId('OrderStreamsStack', 'AWS::DynamoDB::Table', 'OrderReadModel');
    await withClients(async ({ documents }) => {
      await documents.send(
        new PutCommand({
          TableName: ordersTable,
          Item: { pk: 'o-1', version: 1, status: 'PAID', total: 42 },
        }),
      );
      expect(await itemOnce(documents, readModelTable, { pk: 'o-1' })).toEqual({
        pk: 'o-1',
        status: 'PAID',
        total: 42,
        version: 1,
      });
    });
    const destroyed = await runCli(['local', 'destroy'], app, env);
    expect(destroyed.stderr).toMatch(/^Deleted stack OrderStreamsStack in /m);
  }, 180_000);

  it("shows a handler's start-up error with `local logs --failures`, where the messages it leaves in flight say nothing", async () => {
    expect(started).toBeDefined();
    const deployed = await deploy('npx tsx ../../test/fixtures/startup-error-app/app.ts');
    expect(deployed.stderr).toContain('effectively-once local logs');
    const queueUrl = /^StartupErrorStack\.QueueUrl = (\S+)$/m.exec(deployed.stdout)?.[1];
    expect(queueUrl).toBeDefined();
    await withClients(async ({ sqs }) => {
      await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: '{"orderId":"o-1"}' }));
    });
    const failure = await waitFor(
      'the start-up error in local logs',
      async () => {
        const logs = await runCli(['local', 'logs', 'Orders', '--failures'], app, env);
        return logs.stdout.split('\n').find((line) => line.includes('FAILED')) ? logs : undefined;
      },
      { timeoutMillis: 60_000, intervalMillis: 1_000 },
    );
    expect(failure.stderr).toMatch(/^Function output and failed invocations from \S+ministack-\S+\.log:$/m);
    expect(failure.stdout).toMatch(/StartupErrorStack-Orders\S* {2}FAILED .*Expected `dedupKey` to be/);
    const destroyed = await runCli(['local', 'destroy'], app, env);
    expect(destroyed.stderr).toMatch(/^Deleted stack StartupErrorStack in /m);
  }, 180_000);
});
