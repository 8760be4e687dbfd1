/**
 * `effectively-once outbox redrive` against the emulator over HTTP, run in process through
 * `main`: events written by the outbox writer are published again by id, by time window and from
 * a DynamoDB Streams on-failure record, through the relay's own destination code. The relay
 * itself publishes the same events to a queue of its own, so each redriven copy is compared with
 * the relay's, attribute by attribute. The `--relay` path reads a function created on the
 * emulator (`GetFunctionConfiguration`); it is never invoked.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { CreateFunctionCommand, DeleteFunctionCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { CreateTopicCommand, DeleteTopicCommand, SNSClient } from '@aws-sdk/client-sns';
import { DeleteMessageCommand, type Message as QueueMessage, SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENV, OUTBOX_ENV } from '../../lambda/core/contract';
import { createOutboxRelay, createOutboxWriter, sqsDestination } from '../../lambda/outbox';
import { readTableStream } from '../../scripts/support/stream-reader';
import { uniqueName } from '../support/aws';
import { runMain } from '../support/cli';
import { createBusToQueue } from '../support/event-bus';
import { createLocalResources, type TestQueue } from '../support/fixtures';
import { createStreamTable } from '../support/stream-fixtures';
import { subscribeQueueRaw } from '../support/topic-to-queue';

const local = createLocalResources();
const admin = local.dynamoDbClient();
const client = local.documentClient();
const streams = new DynamoDBStreamsClient(local.aws);
const lambda = new LambdaClient(local.aws);
const sns = new SNSClient(local.aws);
const eventBridge = new EventBridgeClient(local.aws);
const outboxTable = uniqueName('eo-redrive-outbox');
const relayName = uniqueName('eo-redrive-relay');
const workDir = mkdtempSync(join(tmpdir(), 'eo-outbox-redrive-'));
let streamArn = '';
/** Where the relay itself publishes: the copies every redriven one is compared with. */
let relayQueue: TestQueue;
/** The relay function's destination, which the redrive publishes to. */
let ordersQueue: TestQueue;
let ordersFifoQueue: TestQueue;
let deadLetterQueue: TestQueue;
let functionCreated = false;

const writer = createOutboxWriter({ client, tableName: outboxTable, producer: 'orders-api' });

beforeAll(async () => {
  streamArn = await createStreamTable(admin, outboxTable);
  [relayQueue, ordersQueue, ordersFifoQueue, deadLetterQueue] = await Promise.all([
    local.createQueue('eo-redrive-relay-copies'),
    local.createQueue('eo-redrive-orders'),
    local.createQueue('eo-redrive-orders', { FifoQueue: 'true' }),
    local.createQueue('eo-redrive-dead-letter'),
  ]);
  // The relay function as the `Outbox` construct configures it; only its configuration is read.
  writeFileSync(join(workDir, 'index.js'), 'exports.handler = async () => ({ batchItemFailures: [] });\n');
  execFileSync('python3', [
    '-c',
    'import sys, zipfile\nwith zipfile.ZipFile(sys.argv[1], "w") as z: z.write(sys.argv[2], "index.js")',
    join(workDir, 'relay.zip'),
    join(workDir, 'index.js'),
  ]);
  await lambda.send(
    new CreateFunctionCommand({
      FunctionName: relayName,
      Runtime: 'nodejs22.x',
      Handler: 'index.handler',
      Role: 'arn:aws:iam::000000000000:role/outbox-relay',
      Code: { ZipFile: readFileSync(join(workDir, 'relay.zip')) },
      Environment: {
        Variables: {
          [OUTBOX_ENV.tableName]: outboxTable,
          [OUTBOX_ENV.retentionSeconds]: '216000',
          [OUTBOX_ENV.destinationKind]: 'sqs',
          [OUTBOX_ENV.destinationFifo]: 'false',
          [OUTBOX_ENV.destinationArn]: ordersQueue.arn,
          [OUTBOX_ENV.destinationQueueUrl]: ordersQueue.url,
          [ENV.consumer]: relayName,
          [ENV.deadLetterMode]: 'direct',
          [ENV.deadLetterQueueUrl]: deadLetterQueue.url,
        },
      },
    }),
  );
  functionCreated = true;
}, 60_000);

afterAll(async () => {
  if (functionCreated) await lambda.send(new DeleteFunctionCommand({ FunctionName: relayName }));
  await admin.send(new DeleteTableCommand({ TableName: outboxTable })).catch(() => undefined);
  lambda.destroy();
  sns.destroy();
  eventBridge.destroy();
  streams.destroy();
  rmSync(workDir, { recursive: true, force: true });
  await local.dispose();
});

const cli = (...argv: string[]) => runMain(argv);

/** The table and destination queue named by hand (no `--relay`). */
const explicit = (queueUrl = ordersQueue.url) => ['--table', outboxTable, '--queue-url', queueUrl];

/** The endpoint and region flags every run takes (an operator would rely on AWS_ENDPOINT_URL). */
const aws = () => ['--endpoint-url', local.aws.endpoint, '--region', local.aws.region];

/** Writes one order's events as the API would; returns their ids. */
async function writeOrder(orderId: string, options: { entity?: string } = {}): Promise<string[]> {
  const result = await writer.write(
    [
      { type: 'OrderPlaced', detail: { orderId, total: 42 }, ...options },
      { type: 'PaymentRequested', detail: { orderId, amount: 42 }, ...options },
    ],
    [],
    `request-${orderId}`,
  );
  expect(result.kind).toBe('written');
  return [...result.ids];
}

/** Every message on the queue, received until it is empty, and deleted. */
async function drain(queueUrl: string): Promise<QueueMessage[]> {
  const messages: QueueMessage[] = [];
  for (;;) {
    const batch = await local.receive(queueUrl, { waitTimeSeconds: 0 });
    if (batch.length === 0) return messages;
    messages.push(...batch);
    for (const message of batch) {
      await local.sqs.send(
        new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle }),
      );
    }
  }
}

/** What a receiver sees of a message: its body and message attributes. */
function received(message: QueueMessage) {
  return {
    key: message.MessageAttributes?.['idempotency-key']?.StringValue,
    body: message.Body,
    attributes: message.MessageAttributes,
  };
}

/** The relay's own publish of `ids` (read from the table's stream), as received from its queue. */
async function relayCopies(ids: readonly string[]) {
  const relay = createOutboxRelay({
    destination: sqsDestination({ client: local.sqs, queueUrl: relayQueue.url }),
    environment: {},
    metrics: false,
    logger: { log: () => undefined },
  });
  const records = (await readTableStream(streams, streamArn)).filter((record) =>
    ids.includes(record.dynamodb.Keys?.pk && 'S' in record.dynamodb.Keys.pk ? record.dynamodb.Keys.pk.S : ''),
  );
  expect(await relay({ Records: records })).toEqual({ batchItemFailures: [] });
  return (await drain(relayQueue.url)).map(received);
}

const byKey = <T extends { key?: string }>(messages: readonly T[]) =>
  [...messages].sort((a, b) => (a.key ?? '').localeCompare(b.key ?? ''));

/** Each message's event id, group id and deduplication id, in id order. */
const groupsOf = (messages: readonly QueueMessage[]) =>
  byKey(
    messages.map((message) => ({
      key: received(message).key,
      groupId: message.Attributes?.MessageGroupId,
      deduplicationId: message.Attributes?.MessageDeduplicationId,
    })),
  );

/**
 * Writes an order's two events with `entity` and one whose entity SQS refuses as a group id (a
 * space: the conformance layer applies AWS's rule, on a FIFO queue and a fair one alike), redrives
 * the three to `destination` and checks the report: two published, one refused, exit 1. Returns
 * the two published ids.
 */
async function redriveWithRefusedGroupId(destination: readonly string[], entity: string): Promise<string[]> {
  const ids = await writeOrder(uniqueName('o'), { entity });
  const refused = await writeOrder(uniqueName('o'), { entity: `${entity} 2` });

  const result = await cli(
    'outbox',
    'redrive',
    ...destination,
    ...[...ids, refused[0]!].flatMap((id) => ['--id', id]),
    ...aws(),
  );

  expect(result.stdout.split('\n').slice(1)).toEqual([
    `${ids[0]} OrderPlaced published`,
    `${ids[1]} PaymentRequested published`,
    `${refused[0]} OrderPlaced refused (VALIDATION, InvalidParameterValue)`,
    'Summary: 2 published, 1 refused.',
    '',
  ]);
  expect(result.code).toBe(1);
  return ids;
}

describe('effectively-once outbox redrive', () => {
  it('publishes each named event as the relay does, reports a missing id as not found and exits 1', async () => {
    const ids = await writeOrder(uniqueName('o'));
    const missing = 'f'.repeat(64);

    const result = await cli(
      'outbox',
      'redrive',
      ...explicit(),
      '--id',
      ids[0]!,
      '--id',
      ids[1]!,
      '--id',
      missing,
      ...aws(),
    );

    expect(result).toEqual({
      code: 1,
      stdout: [
        `Outbox table ${outboxTable}, destination sqs ${ordersQueue.url}`,
        `${ids[0]} OrderPlaced published`,
        `${ids[1]} PaymentRequested published`,
        `${missing} - not found`,
        'Summary: 2 published, 1 not found.',
        '',
      ].join('\n'),
      stderr: '',
    });
    const redriven = byKey((await drain(ordersQueue.url)).map(received));
    expect(redriven.map(({ key }) => key)).toEqual([...ids].sort());
    expect(redriven).toEqual(byKey(await relayCopies(ids)));
    expect(result.stdout).not.toContain('"total"');
  });

  it('lists the events under --dry-run and publishes nothing', async () => {
    const ids = await writeOrder(uniqueName('o'));

    const result = await cli(
      'outbox',
      'redrive',
      '--relay',
      relayName,
      '--id',
      ids[0]!,
      '--id',
      ids[1]!,
      '--dry-run',
      ...aws(),
    );

    expect(result.stderr).toBe('');
    expect(result.stdout.split('\n').slice(1)).toEqual([
      `${ids[0]} OrderPlaced would publish`,
      `${ids[1]} PaymentRequested would publish`,
      'Summary: 2 would publish.',
      '',
    ]);
    expect(result.code).toBe(0);
    expect(await local.queueDepth(ordersQueue.url)).toBe(0);
  });

  it('publishes the same ids again when run twice, and nothing else', async () => {
    const ids = await writeOrder(uniqueName('o'));
    const args = ['outbox', 'redrive', '--relay', relayName, '--id', ids[0]!, '--id', ids[1]!, ...aws()];

    expect((await cli(...args)).code).toBe(0);
    expect((await cli(...args)).code).toBe(0);

    const keys = (await drain(ordersQueue.url)).map((message) => received(message).key);
    expect(keys.sort()).toEqual([ids[0], ids[0], ids[1], ids[1]].sort());
  });

  it('republishes the items created in a time window', async () => {
    const since = new Date().toISOString();
    const ids = await writeOrder(uniqueName('o'));
    const until = new Date(Date.now() + 1000).toISOString();

    const result = await cli(
      'outbox',
      'redrive',
      '--relay',
      relayName,
      '--since',
      since,
      '--until',
      until,
      ...aws(),
    );

    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Summary: 2 published.');
    expect((await drain(ordersQueue.url)).map((message) => received(message).key).sort()).toEqual(
      [...ids].sort(),
    );
  });

  it('publishes to a FIFO queue with the event id as deduplication id and reports a refused event, exit 1', async () => {
    const ids = await redriveWithRefusedGroupId(explicit(ordersFifoQueue.url), 'order-1');

    expect(groupsOf(await drain(ordersFifoQueue.url))).toEqual(
      byKey(ids.map((id) => ({ key: id, groupId: 'order-1', deduplicationId: id }))),
    );
  });

  it('publishes to a fair queue named with --fair-queue with the entity as group id, and without one when not told', async () => {
    const ids = await redriveWithRefusedGroupId([...explicit(), '--fair-queue'], 'tenant-1');
    const copies = (groupId: string | undefined) =>
      byKey(ids.map((id) => ({ key: id, groupId, deduplicationId: undefined })));
    expect(groupsOf(await drain(ordersQueue.url))).toEqual(copies('tenant-1'));

    // The same queue named without the flag: a plain standard queue, no group ids.
    const plain = await cli(
      'outbox',
      'redrive',
      ...explicit(),
      ...ids.flatMap((id) => ['--id', id]),
      ...aws(),
    );
    expect(plain.code).toBe(0);
    expect(groupsOf(await drain(ordersQueue.url))).toEqual(copies(undefined));
  });

  it('publishes to an SNS topic and an EventBridge bus named by hand, as the relay does', async () => {
    const ids = await writeOrder(uniqueName('o'));
    const topicQueue = await local.createQueue('eo-redrive-topic');
    const { TopicArn } = await sns.send(new CreateTopicCommand({ Name: uniqueName('eo-redrive-topic') }));
    await subscribeQueueRaw(sns, TopicArn!, topicQueue.arn);
    const busQueue = await local.createQueue('eo-redrive-bus');
    const bus = await createBusToQueue(
      eventBridge,
      'eo-redrive-bus',
      { source: ['orders-api'] },
      busQueue.arn,
    );
    try {
      const byId = ids.flatMap((id) => ['--id', id]);
      const table = ['--table', outboxTable];
      expect(
        (await cli('outbox', 'redrive', ...table, '--topic-arn', TopicArn!, ...byId, ...aws())).code,
      ).toBe(0);
      expect(
        (
          await cli(
            'outbox',
            'redrive',
            ...table,
            '--event-bus',
            bus.busArn,
            '--event-source',
            'orders-api',
            ...byId,
            ...aws(),
          )
        ).code,
      ).toBe(0);

      expect(byKey((await drain(topicQueue.url)).map(received))).toEqual(byKey(await relayCopies(ids)));
      const entries = (await drain(busQueue.url)).map((message) => JSON.parse(message.Body!));
      expect(entries.map((entry) => entry.detail.metadata['idempotency-key']).sort()).toEqual(
        [...ids].sort(),
      );
      expect(entries.map((entry) => entry.source)).toEqual(['orders-api', 'orders-api']);
    } finally {
      await bus.remove();
      await sns.send(new DeleteTopicCommand({ TopicArn }));
    }
  });

  it('republishes the batch of an on-failure record and deletes the record; a malformed record stays', async () => {
    const onFailureQueue = await local.createQueue('eo-redrive-on-failure');
    const ids = await writeOrder(uniqueName('o'));
    await local.sqs.send(
      new SendMessageCommand({
        QueueUrl: onFailureQueue.url,
        MessageBody: JSON.stringify(await onFailureRecord(ids)),
      }),
    );
    await local.sqs.send(
      new SendMessageCommand({ QueueUrl: onFailureQueue.url, MessageBody: '{"version":"1.0"}' }),
    );

    // The command of docs/outbox.md, as written there; AWS_ENDPOINT_URL points it at the emulator.
    const result = await cli(
      ...docsCommand().map((word) =>
        word === '"$RELAY_FUNCTION"'
          ? relayName
          : word === '"$ON_FAILURE_QUEUE_URL"'
            ? onFailureQueue.url
            : word,
      ),
    );

    const lines = result.stdout.split('\n');
    expect(lines.filter((line) => line.startsWith(ids[0]!) || line.startsWith(ids[1]!)).sort()).toEqual(
      [`${ids[0]} OrderPlaced published`, `${ids[1]} PaymentRequested published`].sort(),
    );
    expect(lines.filter((line) => line.endsWith('deleted'))).toHaveLength(1);
    expect(lines.filter((line) => line.endsWith('left on the queue'))).toEqual([
      expect.stringContaining(
        'not a DynamoDB Streams on-failure record (it has no `DDBStreamBatchInfo` object)',
      ),
    ]);
    expect(result.code).toBe(1);
    const keys = (await drain(ordersQueue.url)).map((message) => received(message).key);
    expect(keys).toEqual(expect.arrayContaining(ids));
    // Only the malformed record is left, visible again at once.
    expect((await drain(onFailureQueue.url)).map((message) => message.Body)).toEqual(['{"version":"1.0"}']);
  });

  it('stops with exit 2 naming the event when a publish fails without a refusal, the record visible again', async () => {
    const onFailureQueue = await local.createQueue('eo-redrive-on-failure');
    const ids = await writeOrder(uniqueName('o'));
    const body = JSON.stringify(await onFailureRecord(ids));
    await local.sqs.send(new SendMessageCommand({ QueueUrl: onFailureQueue.url, MessageBody: body }));
    // A queue that does not exist: the relay retries it (SERVICE_UNAVAILABLE), it is no refusal.
    const gone = `${ordersQueue.url}-gone`;

    const result = await cli(
      'outbox',
      'redrive',
      ...explicit(gone),
      '--on-failure-queue',
      onFailureQueue.url,
      '--margin',
      '5',
      ...aws(),
    );

    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /^effectively-once outbox redrive: Publishing event [0-9a-f]{64} failed \(SERVICE_UNAVAILABLE, QueueDoesNotExist\) after the SDK's retries/,
    );
    expect(result.stdout).not.toContain('deleted');
    expect((await drain(onFailureQueue.url)).map((message) => message.Body)).toEqual([body]);
  });

  it('keeps the on-failure record under --dry-run, visible again', async () => {
    const onFailureQueue = await local.createQueue('eo-redrive-on-failure');
    const ids = await writeOrder(uniqueName('o'));
    const body = JSON.stringify(await onFailureRecord(ids));
    await local.sqs.send(new SendMessageCommand({ QueueUrl: onFailureQueue.url, MessageBody: body }));

    const result = await cli(
      'outbox',
      'redrive',
      '--relay',
      relayName,
      '--on-failure-queue',
      onFailureQueue.url,
      '--dry-run',
      ...aws(),
    );

    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`${ids[0]} OrderPlaced would publish`);
    expect(result.stdout).toContain('kept (dry run)');
    expect(await local.queueDepth(ordersQueue.url)).toBe(0);
    expect((await drain(onFailureQueue.url)).map((message) => message.Body)).toEqual([body]);
  });
  it('exits 2 naming a relay function that does not exist', async () => {
    const result = await cli('outbox', 'redrive', '--relay', `${relayName}-gone`, '--id', 'e-1', ...aws());

    expect(result).toEqual({
      code: 2,
      stdout: '',
      stderr:
        `effectively-once outbox redrive: The function ${relayName}-gone does not exist ` +
        '(GetFunctionConfiguration: ResourceNotFoundException).\n',
    });
  });

  it('exits 2 naming the endpoint it cannot reach, having published nothing', async () => {
    // A port nothing listens on (the discard service's; closed on a test machine).
    const closed = 'http://127.0.0.1:9';
    const result = await cli('outbox', 'redrive', ...explicit(), '--id', 'e-1', '--endpoint-url', closed);

    expect(result.code).toBe(2);
    expect(result.stdout).toBe(`Outbox table ${outboxTable}, destination sqs ${ordersQueue.url}\n`);
    expect(result.stderr).toMatch(
      new RegExp(`^effectively-once outbox redrive: Cannot reach the endpoint for table ${outboxTable} `),
    );
  });
});

/** The arguments of the redrive command docs/outbox.md shows (its `sh` block under "Redrive"). */
function docsCommand(): string[] {
  const page = readFileSync(join(__dirname, '..', '..', 'docs', 'outbox.md'), 'utf8');
  const command = /```sh\nnpx effectively-once (outbox redrive [^\n]*)\n```/.exec(page)?.[1];
  expect(command, 'docs/outbox.md shows `npx effectively-once outbox redrive ...`').toBeDefined();
  return command!.split(' ');
}

/**
 * The record Lambda sends to the on-failure queue when it gives up on the batch of `ids`'s stream
 * records: `DDBStreamBatchInfo` with the shard, the sequence number range and the arrival times
 * (whole seconds, as AWS writes them) read from the real stream.
 */
async function onFailureRecord(ids: readonly string[]) {
  const records = (await readTableStream(streams, streamArn)).filter(
    (record) =>
      record.eventName === 'INSERT' && ids.some((id) => JSON.stringify(record.dynamodb.Keys).includes(id)),
  );
  expect(records).toHaveLength(ids.length);
  const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
  const seconds = (record: (typeof records)[number]) =>
    new Date(Math.floor(Number(record.dynamodb.ApproximateCreationDateTime)) * 1000)
      .toISOString()
      .replace('.000Z', 'Z');
  return {
    requestContext: {
      requestId: '316aa6d0-8154-xmpl-9af7-85d5f4a6bc81',
      functionArn: `arn:aws:lambda:${local.aws.region}:000000000000:function:${relayName}`,
      condition: 'RetryAttemptsExhausted',
      approximateInvokeCount: 1,
    },
    responseContext: { statusCode: 200, executedVersion: '$LATEST', functionError: 'Unhandled' },
    version: '1.0',
    timestamp: new Date().toISOString(),
    DDBStreamBatchInfo: {
      shardId: StreamDescription!.Shards![0]!.ShardId,
      startSequenceNumber: records[0]!.dynamodb.SequenceNumber,
      endSequenceNumber: records.at(-1)!.dynamodb.SequenceNumber,
      approximateArrivalOfFirstRecord: seconds(records[0]!),
      approximateArrivalOfLastRecord: seconds(records.at(-1)!),
      batchSize: records.length,
      streamArn,
    },
  };
}
