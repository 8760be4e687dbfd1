import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DescribeContinuousBackupsCommand,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  GetItemCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import {
  GetQueueAttributesCommand,
  SendMessageBatchCommand,
  SetQueueAttributesCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyLocalFixups, type DeployLocalResult, deployLocal, destroyLocal } from '../../cli/local/deploy';
import { projectRoot } from '../../scripts/local-aws/harness';
import { awsConfig, uniqueName } from '../support/aws';

const root = projectRoot();
const stackName = uniqueName('DeployFixture');
const workDir = mkdtempSync(join(tmpdir(), 'deploy-local-test-'));
const assemblyDir = join(workDir, 'cdk.out');

describe('deployLocal on the local emulator', () => {
  const aws = awsConfig();
  const target = { endpoint: aws.endpoint, region: aws.region, credentials: aws.credentials };
  const sqs = new SQSClient(aws);
  const dynamodb = new DynamoDBClient(aws);
  let deployed: DeployLocalResult | undefined;
  let destroyed = false;

  const outputs = () => {
    const stackOutputs = deployed?.outputs[stackName];
    if (!stackOutputs) throw new Error(`No outputs for ${stackName}: the deploy did not run`);
    return stackOutputs as Record<'QueueUrl' | 'DeadLetterQueueUrl' | 'FifoQueueUrl' | 'TableName', string>;
  };
  const queueAttribute = async (queueUrl: string, name: 'RedrivePolicy' | 'FifoQueue' | 'QueueArn') =>
    (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: [name] })))
      .Attributes?.[name];

  const deployOptions = {
    ...target,
    cwd: root,
    app: `${join(root, 'node_modules', '.bin', 'tsx')} test/fixtures/deploy-app/app.ts`,
    context: { deployAppStackName: stackName, deployAppCodeVersion: '1' },
    outputDir: assemblyDir,
    outputsFile: join(workDir, 'outputs.json'),
    logFile: join(root, '.local', 'logs', 'deploy-local-test.log'),
  };

  beforeAll(async () => {
    deployed = await deployLocal(deployOptions);
  }, 240_000);

  afterAll(async () => {
    if (deployed && !destroyed) await destroyLocal({ ...target, stackName }).catch(() => {});
    sqs.destroy();
    dynamodb.destroy();
    rmSync(workDir, { recursive: true, force: true });
  });

  it('deploys the stack and returns its outputs', () => {
    expect(Object.keys(outputs()).sort()).toEqual([
      'DeadLetterQueueUrl',
      'FifoQueueUrl',
      'FunctionName',
      'QueueUrl',
      'TableName',
    ]);
    expect(outputs().FifoQueueUrl).toMatch(new RegExp(`/${stackName}-orders\\.fifo$`));
  });

  it('leaves every declared property in place, re-applying what the emulator dropped', async () => {
    expect(deployed?.fixups.map(({ kind, logicalId }) => ({ kind, logicalId }))).toEqual([
      { kind: 'queue-redrive', logicalId: 'Queue4A7E3555' },
      { kind: 'queue-fifo', logicalId: 'FifoQueueE5FF7273' },
      { kind: 'table-ttl', logicalId: 'TableCD117FA1' },
      { kind: 'table-pitr', logicalId: 'TableCD117FA1' },
    ]);
    for (const fixup of deployed?.fixups ?? []) expect(['ok', 'fixed']).toContain(fixup.status);

    const { QueueUrl, DeadLetterQueueUrl, FifoQueueUrl, TableName } = outputs();
    expect(JSON.parse((await queueAttribute(QueueUrl, 'RedrivePolicy')) ?? '{}')).toEqual({
      deadLetterTargetArn: await queueAttribute(DeadLetterQueueUrl, 'QueueArn'),
      maxReceiveCount: 2,
    });
    expect(await queueAttribute(FifoQueueUrl, 'FifoQueue')).toBe('true');
    const ttl = await dynamodb.send(new DescribeTimeToLiveCommand({ TableName }));
    expect(ttl.TimeToLiveDescription).toMatchObject({
      TimeToLiveStatus: 'ENABLED',
      AttributeName: 'expiresAt',
    });
    const backups = await dynamodb.send(new DescribeContinuousBackupsCommand({ TableName }));
    expect(
      backups.ContinuousBackupsDescription?.PointInTimeRecoveryDescription?.PointInTimeRecoveryStatus,
    ).toBe('ENABLED');
  });

  it('fixes exactly what is missing: a removed redrive policy and disabled TTL', async () => {
    const { QueueUrl, FifoQueueUrl, TableName } = outputs();
    await sqs.send(new SetQueueAttributesCommand({ QueueUrl, Attributes: { RedrivePolicy: '' } }));
    await dynamodb.send(
      new UpdateTimeToLiveCommand({
        TableName,
        TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: false },
      }),
    );

    const messages: string[] = [];
    const results = await applyLocalFixups({
      ...target,
      assemblyDir,
      stacks: [stackName],
      log: (message) => messages.push(message),
    });

    expect(results.map(({ kind, path, physicalId, status }) => ({ kind, path, physicalId, status }))).toEqual(
      [
        { kind: 'queue-redrive', path: 'DeployFixture/Queue', physicalId: QueueUrl, status: 'fixed' },
        { kind: 'queue-fifo', path: 'DeployFixture/FifoQueue', physicalId: FifoQueueUrl, status: 'ok' },
        { kind: 'table-ttl', path: 'DeployFixture/Table', physicalId: TableName, status: 'fixed' },
        { kind: 'table-pitr', path: 'DeployFixture/Table', physicalId: TableName, status: 'ok' },
      ],
    );
    expect(messages).toEqual([
      expect.stringMatching(
        /^Local fix-up: DeployFixture\/Queue: redrive policy \(maxReceiveCount 2\) was missing/,
      ),
      expect.stringMatching(/^Local fix-up: DeployFixture\/Table: TTL on `expiresAt` was off/),
      "Checked 4 properties the emulator's CloudFormation may drop: 2 fixed, 2 already in place",
    ]);
    expect(await queueAttribute(QueueUrl, 'RedrivePolicy')).toContain('"maxReceiveCount":2');
  });

  /** Sends one message per key and waits (bounded) until the deployed Lambda has written them all. */
  const sendAndAwaitWrites = async (keys: readonly string[]) => {
    const { QueueUrl, TableName } = outputs();
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl,
        Entries: keys.map((key, index) => ({ Id: String(index), MessageBody: key })),
      }),
    );
    const written = new Map<string, Record<string, unknown>>();
    const deadline = Date.now() + 30_000;
    while (written.size < keys.length && Date.now() < deadline) {
      for (const key of keys.filter((candidate) => !written.has(candidate))) {
        const { Item } = await dynamodb.send(
          new GetItemCommand({ TableName, Key: { pk: { S: key } }, ConsistentRead: true }),
        );
        if (Item) written.set(key, Item);
      }
      if (written.size < keys.length) await new Promise((done) => setTimeout(done, 200));
    }
    expect([...written.keys()].sort()).toEqual([...keys].sort());
    return [...written.values()];
  };

  it('runs the deployed Lambda on messages from the queue, writing each into the table', async () => {
    const items = await sendAndAwaitWrites(['first', 'second', 'third'].map((name) => `v1-${name}`));
    for (const item of items) {
      expect(item.codeVersion).toEqual({ S: '1' });
      // MiniStack injects AWS_ENDPOINT_URL into the Lambda, so its unconfigured SDK client reaches the emulator.
      expect(item.endpoint).toEqual({ S: expect.stringMatching(/^http:\/\//) });
    }
  }, 45_000);

  it('redeploys new handler code, and the fixed properties survive the update', async () => {
    deployed = await deployLocal({
      ...deployOptions,
      context: { ...deployOptions.context, deployAppCodeVersion: '2' },
    });
    expect(deployed.bootstrapped).toBe(false);
    for (const fixup of deployed.fixups) expect(['ok', 'fixed']).toContain(fixup.status);

    const [item] = await sendAndAwaitWrites(['v2-first']);
    expect(item?.codeVersion).toEqual({ S: '2' });
  }, 240_000);

  it('destroys the stack by name', async () => {
    expect(await destroyLocal({ ...target, stackName })).toBe('deleted');
    destroyed = true;
    expect(await destroyLocal({ ...target, stackName })).toBe('absent');
  }, 90_000);
});
