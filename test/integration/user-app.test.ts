/**
 * The README's apps end to end, as a new user builds them: each a CDK app of its own laid out as
 * `cdk init app --language typescript` lays one out, in a directory outside the repository, with
 * the packed tarball installed (packed once for both, `test/support/user-app.ts`), deployed with
 * the installed `node_modules/.bin/effectively-once local up/deploy`, checked, and destroyed.
 *
 * - The quickstart (the README's, step by step in `docs/getting-started.md`): the quickstart's
 *   own files (`examples/my-app/`: a handler passing only `dedupKey`, `mode` and `handle`, a
 *   stack with one `IdempotentConsumer`). It sends orders with a duplicate and a poison message,
 *   checks what the construct configured reached the running function, replays the log with
 *   `effectively-once replay`, then destroys the stack and stops the emulator.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ReceiveMessageCommand, SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmulatorState } from '../../cli/local/emulator';
import { projectRoot } from '../../scripts/local-aws/harness';
import { isAlive } from '../support/child-process';
import { waitFor } from '../support/fixtures';
import {
  EMULATOR_CLIENT_CONFIG,
  emulatorOf,
  expectSuccess,
  jsonLines,
  linkInstalledMiniStack,
  logMessages,
  makeUserApp,
  outputsOf,
  packTarball,
  runCli,
  tearDownUserApp,
} from '../support/user-app';

const root = projectRoot();
const work = mkdtempSync(join(tmpdir(), 'eo-user-app-'));
let tarball = '';

beforeAll(() => {
  tarball = packTarball(work);
}, 120_000);

afterAll(() => {
  rmSync(work, { recursive: true, force: true });
});

describe("the README quickstart: a user's own CDK app, deployed locally with the installed package", () => {
  const CONSUMER = 'order-totals';
  const RECORD_TTL_SECONDS = 3 * 24 * 3600;
  const STACK = 'MyAppStack';
  const app = join(work, 'my-app');
  const cache = join(work, 'my-app-cache');
  const env = { XDG_CACHE_HOME: cache };
  let started: EmulatorState | undefined;
  let deployed = false;
  let outputs: Record<string, string> = {};
  let clients: { sqs: SQSClient; dynamodb: DynamoDBDocumentClient } | undefined;

  beforeAll(async () => {
    makeUserApp({
      dir: app,
      source: join(root, 'examples', 'my-app'),
      name: 'my-app',
      cdkApp: 'bin/my-app.ts',
      tarball,
    });
    await linkInstalledMiniStack(cache);
  }, 120_000);

  /** Rethrows a failed wait with what the function logged, the first thing to read when it did not act. */
  const withFunctionLogs = async (error: Error): Promise<never> => {
    const logs = await logMessages(started!.endpoint, outputs.LogGroupName!).catch(String);
    throw new Error(`${error.message}; the function logged:\n${[logs].flat().join('\n')}`);
  };

  afterAll(async () => {
    // Whatever failed above, never leave the stack or the emulator behind.
    clients?.sqs.destroy();
    clients?.dynamodb.destroy();
    await tearDownUserApp(app, env, deployed);
  }, 60_000);

  it('starts the emulator and deploys the app with `local up` and `local deploy -c local=true`', async () => {
    expect(relative(root, app).startsWith('..')).toBe(true);
    const up = expectSuccess('effectively-once local up', await runCli(app, ['local', 'up'], env));
    started = emulatorOf(cache);
    expect(up.stdout).toBe(
      `export AWS_ENDPOINT_URL=${started?.endpoint} AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test\n`,
    );

    const deploy = await runCli(app, ['local', 'deploy', '-c', 'local=true'], env);
    deployed = true;
    expectSuccess('effectively-once local deploy', deploy);
    outputs = outputsOf(deploy.stdout, STACK);
    expect(Object.keys(outputs).sort()).toEqual([
      'DeadLetterQueueUrl',
      'InboxTableName',
      'LogGroupName',
      'QueueUrl',
      'TotalsTableName',
    ]);
    expect(deploy.stderr).toContain('TTL on `expiresAt` was off');

    const config = { endpoint: started!.endpoint, ...EMULATOR_CLIENT_CONFIG };
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
