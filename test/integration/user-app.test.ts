/**
 * The README's apps end to end, as a new user builds them: each a CDK app of its own laid out as
 * `cdk init app --language typescript` lays one out, in a directory outside the repository, with
 * the packed tarball installed (packed once for all three, `test/support/user-app.ts`), deployed
 * with the installed `node_modules/.bin/effectively-once local up/deploy`, checked, and destroyed;
 * the stream app's handlers run in the test's process instead.
 *
 * - The quickstart (the README's, step by step in `docs/getting-started.md`): the quickstart's
 *   own files (`examples/my-app/`: a handler passing only `dedupKey`, `mode` and `handle`, a
 *   stack with one `IdempotentConsumer`). It sends orders with a duplicate and a poison message,
 *   checks what the construct configured reached the running function, replays the log with
 *   `effectively-once replay`, then destroys the stack and stops the emulator.
 * - A chain (`test/fixtures/user-chain-app/`, handlers importing only `effectively-once`,
 *   `effectively-once/outbox` and `effectively-once/streams`): an order service in atomic mode
 *   emitting `OrderConfirmed` through an `Outbox` whose relay is the package's own (no
 *   `relayEntry`), a shipping service keyed on the relay's `idempotency-key`, and an
 *   `IdempotentStreamConsumer` keeping a read model of the orders table's stream. It sends orders
 *   with a resend and a poison message, checks every table, sends shipping a second copy of an
 *   event, rewrites and removes outbox items, and checks what each construct configured reached
 *   its function (and the capacity planner's write rate, from the order service's
 *   `expectedPeakMessagesPerSecond`, reached the stack's outputs).
 * - Stream consumers (`test/fixtures/user-stream-app/`, handlers importing only
 *   `effectively-once`, `effectively-once/streams` and `effectively-once/kafka`): a Kinesis
 *   consumer, a DynamoDB Streams projection and two Kafka consumers (atomic and entity mode, fed
 *   from a real local Apache Kafka broker), type-checked by the app's own `tsc`, bundled from the installed package and run
 *   in process on records read from the emulator's streams with `GetRecords` (the emulator's
 *   stream event source mappings ignore batch item failures), in the environment the construct
 *   gives them, with dead letters sent to a real queue through the SQS conformance layer. A
 *   shard carrying an empty, a gzip and a maximum-size record between payments, and a table
 *   change with two images larger than a dead letter: every good record applied once, each bad
 *   one dead-lettered with its coordinates and its data (whole, or marked truncated and read
 *   again from the stream at its sequence number), and no checkpoint.
 * - An outbox at its destination's edges (`test/fixtures/user-outbox-app/`: an order service in
 *   atomic mode taking the event's type and entity from the order), bundled from the installed
 *   package and run in process with the package's relay (`createOutboxRelay()`) in the
 *   environment the constructs give them, over tables, streams, queues and a bus on the emulator
 *   (SQS sends through the conformance layer). On a FIFO queue an order whose entity a
 *   `MessageGroupId` cannot hold is dead-lettered before the commit, nothing written, and items
 *   written past `emit` that SQS refuses (a group id with a space, a body holding U+FFFF) are
 *   dead-lettered by the relay with the destination's reason and whole record while the events
 *   behind them are published; on an EventBridge bus an event type longer than a `DetailType` is
 *   refused before the commit; and a relay that reaches its deadline returns the checkpoint, the
 *   invocation resumed there publishing the rest, each event once.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand as DescribeTableStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand as GetTableStreamRecordsCommand,
  GetShardIteratorCommand as GetTableStreamShardIteratorCommand,
} from '@aws-sdk/client-dynamodb-streams';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import {
  CreateStreamCommand,
  DeleteStreamCommand,
  DescribeStreamCommand,
  GetRecordsCommand,
  GetShardIteratorCommand,
  KinesisClient,
  PutRecordsCommand,
} from '@aws-sdk/client-kinesis';
import { CreateTopicCommand, DeleteTopicCommand, SNSClient } from '@aws-sdk/client-sns';
import {
  type Message as QueueMessage,
  SendMessageBatchCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { Kafka, logLevel as kafkaLogLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DEAD_LETTER_ATTRIBUTES, ENV, fingerprintOf } from '../../lambda';
import { OUTBOX_ATTRIBUTES, OUTBOX_ENV } from '../../lambda/core/contract';
import { expiresAt } from '../../lambda/core/time';
import { EVENT_TYPE_ATTRIBUTE, IDEMPOTENCY_KEY_ATTRIBUTE, outboxEventId } from '../../lambda/outbox';
import {
  STREAM_DEAD_LETTER_FORMAT,
  STREAM_RECORD_ATTRIBUTES,
  type StreamDeadLetterBody,
} from '../../lambda/streams';
import type { DynamoDbStreamRecord } from '../../lambda/streams/stream-event';
import { projectRoot } from '../../scripts/local-aws/harness';
import { startLocalKafka } from '../../scripts/local-kafka/broker';
import {
  dynamoDbStreamRecordFrom,
  readKinesisShard,
  readTableStream,
} from '../../scripts/support/stream-reader';
import { uniqueName } from '../support/aws';
import { createConformingSqsClient } from '../support/aws-limits/sqs';
import { type CommandRun, isAlive } from '../support/child-process';
import { createBusToQueue } from '../support/event-bus';
import {
  captureStdout,
  createLocalResources,
  lambdaContext,
  receiveMessages,
  sqsRecord,
  waitFor,
} from '../support/fixtures';
import { play, readTopic } from '../support/kafka-player';
import { createStreamTable, recoveredData } from '../support/stream-fixtures';
import { subscribeQueueRaw } from '../support/topic-to-queue';
import { expectSuccess, InProcessUserApp, LocalUserApp, packTarball } from '../support/user-app';

const root = projectRoot();
const work = mkdtempSync(join(tmpdir(), 'eo-user-app-'));
let tarball = '';

beforeAll(() => {
  tarball = packTarball(work);
}, 120_000);

afterAll(() => {
  rmSync(work, { recursive: true, force: true });
});

/** The dead letters' bodies and the attributes that say why, who and which message. */
const describeDeadLetters = (
  messages: readonly { Body?: string; MessageAttributes?: Record<string, { StringValue?: string }> }[],
) =>
  messages.map(({ Body, MessageAttributes = {} }) => ({
    Body,
    reason: MessageAttributes['eo-reason']?.StringValue,
    code: MessageAttributes['eo-code']?.StringValue,
    consumer: MessageAttributes['eo-consumer']?.StringValue,
    sourceMessageId: MessageAttributes['eo-source-message-id']?.StringValue,
  }));

/** The orders both apps are sent: o-1 resent, and o-4 a poison message (a negative amount). */
const orders = [
  { orderId: 'o-1', customerId: 'c-1', amount: 10 },
  { orderId: 'o-1', customerId: 'c-1', amount: 10 },
  { orderId: 'o-2', customerId: 'c-1', amount: 5 },
  { orderId: 'o-3', customerId: 'c-2', amount: 7 },
  { orderId: 'o-4', customerId: 'c-2', amount: -5 },
];

/** The orders a per-customer table has counted, summed over its customers. */
const ordersCounted = (customers: readonly Record<string, unknown>[]) =>
  customers.reduce((sum, customer) => sum + Number(customer.orderCount ?? 0), 0);

const isMetricLine = (line: Record<string, unknown>) => '_aws' in line;

/** Runs `create` (a cold start: module scope and handler options) with `environment` as the function's. */
async function coldStart<T>(environment: Record<string, string>, create: () => Promise<T>): Promise<T> {
  for (const [name, value] of Object.entries(environment)) vi.stubEnv(name, value);
  try {
    return await create();
  } finally {
    vi.unstubAllEnvs();
  }
}

describe("the README quickstart: a user's own CDK app, deployed locally with the installed package", () => {
  const CONSUMER = 'order-totals';
  /**
   * The record TTL the construct derives for the quickstart's queue, which sets none (the default
   * of docs/construct.md's Record TTL: max(4 + 14 + 14 days, 3 hours) + 1 day).
   */
  const RECORD_TTL_SECONDS = 33 * 24 * 3600;
  const app = new LocalUserApp(work, {
    source: join(root, 'examples', 'my-app'),
    name: 'my-app',
    cdkApp: 'bin/my-app.ts',
    stack: 'MyAppStack',
  });

  beforeAll(() => app.install(tarball), 120_000);
  // Whatever failed above, never leave the stack or the emulator behind.
  afterAll(() => app.tearDown(), 60_000);

  it('starts the emulator and deploys the app with `local up` and `local deploy`, alarms on', async () => {
    expect(relative(root, app.dir).startsWith('..')).toBe(true);
    const up = await app.up();
    expect(up.stdout).toBe(
      `export AWS_ENDPOINT_URL=${app.emulator?.endpoint} AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test\n`,
    );

    const deploy = await app.deploy();
    expect(Object.keys(app.outputs).sort()).toEqual([
      'DeadLetterQueueUrl',
      'InboxTableName',
      'LogGroupName',
      'QueueUrl',
      'TotalsTableName',
    ]);
    expect(deploy.stderr).toContain('TTL on `expiresAt` was off');
    // The quickstart teaches nothing the construct warns about; the alarm the emulator rejects
    // is left out locally, said once.
    expect(deploy.stderr).not.toMatch(/\[(Warning|Error) at /);
    expect(deploy.stderr.split('\n').filter((line) => line.startsWith('Left out locally:'))).toEqual([
      expect.stringContaining('MyAppStack/Orders/DuplicateRateAlarm'),
    ]);
  }, 150_000);

  it('counts a resent order once, dead-letters the poison order with its reason, and keeps records for the derived record TTL', async () => {
    const { sqs, dynamodb } = app.clients;
    const before = Math.floor(Date.now() / 1000);
    const sent = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: app.output('QueueUrl'),
        Entries: orders.map((order, index) => ({ Id: `m${index}`, MessageBody: JSON.stringify(order) })),
      }),
    );
    expect(sent.Failed ?? []).toEqual([]);
    const poisonId = sent.Successful?.find((entry) => entry.Id === 'm4')?.MessageId;

    const deadLetters = await app.receiveMessages(
      'DeadLetterQueueUrl',
      'the poison order on the dead-letter queue',
      ['LogGroupName'],
    );
    // Every order counted (rather than two customers seen: o-2 may come after o-3).
    await waitFor(
      'three orders totalled',
      async () => ordersCounted(await app.scan('TotalsTableName')) >= 3,
      {
        timeoutMillis: 30_000,
        intervalMillis: 500,
      },
    ).catch(app.withLogsOf(['LogGroupName']));
    const after = Math.ceil(Date.now() / 1000);

    expect(await app.scan('TotalsTableName')).toEqual([
      { pk: 'CUSTOMER#c-1', orderCount: 2, amountTotal: 15 },
      { pk: 'CUSTOMER#c-2', orderCount: 1, amountTotal: 7 },
    ]);

    expect(describeDeadLetters(deadLetters)).toEqual([
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
        new GetCommand({ TableName: app.output('InboxTableName'), Key: { pk: `${CONSUMER}#o-1` } }),
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
        const parsed = await app.logLines('LogGroupName');
        return parsed.some((line) => line.code === 'PERMANENT') ? parsed : undefined;
      },
      { timeoutMillis: 20_000, intervalMillis: 500 },
    );
    const metrics = lines.filter(isMetricLine);
    const logs = lines.filter((line) => !isMetricLine(line));
    expect(metrics.length).toBeGreaterThan(0);
    expect(new Set(metrics.map((line) => line.Consumer))).toEqual(new Set([CONSUMER]));
    expect(new Set(logs.map((line) => line.consumer))).toEqual(new Set([CONSUMER]));
    expect(logs.filter((line) => line.code === 'PERMANENT')).toEqual([
      expect.objectContaining({ level: 'error', consumer: CONSUMER, deadLetter: 'sent' }),
    ]);
  }, 30_000);

  it('passes `effectively-once replay` of the order log', async () => {
    const replay = await app.run(
      [
        'replay',
        '--log',
        'orders-log.jsonl',
        '--queue-url',
        app.output('QueueUrl'),
        '--table',
        app.output('TotalsTableName'),
        '--table',
        app.output('InboxTableName'),
        '--poll-interval',
        '0.5',
        '--stable-polls',
        '4',
        '--timeout',
        '60',
      ],
      app.awsEnv(),
    );
    expectSuccess('effectively-once replay', replay);
    expect(replay.stdout).toMatch(/^PASS: replaying 3 messages a second time changed nothing/);
    // The verdict without the SDK's noise: no endpoint warning per SQS call, no Node.js notice.
    expect(replay.stderr).not.toMatch(/differs from SQSClient resolved endpoint|NodeVersionSupportWarning/);
  }, 150_000);

  it('destroys the stack and stops the emulator', async () => {
    const { destroy } = await app.destroyAndStop();
    expect(destroy.stderr).toMatch(/^Deleted stack MyAppStack in /m);
    expect(isAlive(app.emulator!.pid)).toBe(false);
  }, 90_000);
});

describe("a chain in a user's own CDK app: an outbox and a stream consumer, deployed locally with the installed package", () => {
  const app = new LocalUserApp(work, {
    source: join(root, 'test', 'fixtures', 'user-chain-app'),
    name: 'chain-app',
    cdkApp: 'bin/chain-app.ts',
    stack: 'ChainAppStack',
  });
  const LOG_GROUPS = [
    'OrdersLogGroupName',
    'RelayLogGroupName',
    'ShippingLogGroupName',
    'SummariesLogGroupName',
  ];
  /** The orders the order service confirms: o-1 (once), o-2 and o-3. */
  const confirmed = [orders[0]!, orders[2]!, orders[3]!];
  /** The id the order service's `emit` gives an order's `OrderConfirmed`: from its scoped dedup key and the event's name. */
  const eventIdOf = (orderId: string) => outboxEventId(`order-service#${orderId}`, 'OrderConfirmed#0');
  const waitForShipments = (count: number) =>
    waitFor(`${count} shipments`, async () => (await app.scan('ShipmentsTableName')).length === count, {
      timeoutMillis: 60_000,
      intervalMillis: 500,
    }).catch(app.withLogsOf(LOG_GROUPS));

  beforeAll(() => app.install(tarball), 120_000);
  afterAll(() => app.tearDown(), 60_000);

  it('starts the emulator and deploys the chain with `local up` and `local deploy`, alarms on', async () => {
    expect(relative(root, app.dir).startsWith('..')).toBe(true);
    await app.up();
    await app.deploy();
    expect(Object.keys(app.outputs).sort()).toEqual([
      'InboxTableName',
      'OrdersDeadLetterQueueUrl',
      'OrdersLogGroupName',
      'OrdersPlannedWriteUnitsPerSecond',
      'OrdersQueueUrl',
      'OrdersRecordTtlSeconds',
      'OrdersTableName',
      'OutboxRetentionSeconds',
      'OutboxTableName',
      'RelayLogGroupName',
      'ShipmentsTableName',
      'ShippingLogGroupName',
      'ShippingQueueUrl',
      'ShippingRecordTtlSeconds',
      'SummariesLogGroupName',
      'SummariesRecordTtlSeconds',
      'SummariesTableName',
    ]);
    // The capacity planner, from the installed package: atomic mode's 4 write units a message
    // (the inbox record's and the order's, each doubled in a transaction) at the 50 a second given.
    expect(app.output('OrdersPlannedWriteUnitsPerSecond')).toBe('200');
  }, 240_000);

  it('commits each order with exactly one outbox event, and dead-letters the poison order with neither', async () => {
    const sent = await app.clients.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: app.output('OrdersQueueUrl'),
        Entries: orders.map((order, index) => ({ Id: `m${index}`, MessageBody: JSON.stringify(order) })),
      }),
    );
    expect(sent.Failed ?? []).toEqual([]);
    const deadLetters = await app.receiveMessages(
      'OrdersDeadLetterQueueUrl',
      'the poison order on the dead-letter queue',
      LOG_GROUPS,
    );
    expect(describeDeadLetters(deadLetters)).toEqual([
      {
        Body: JSON.stringify(orders[4]),
        reason: 'An order amount must be positive',
        code: 'PERMANENT',
        consumer: 'order-service',
        sourceMessageId: sent.Successful?.find((entry) => entry.Id === 'm4')?.MessageId,
      },
    ]);

    // The poison order may come in a batch of its own, before the others are committed.
    await waitFor('three orders committed', async () => (await app.scan('OrdersTableName')).length === 3, {
      timeoutMillis: 60_000,
      intervalMillis: 500,
    }).catch(app.withLogsOf(LOG_GROUPS));
    expect(await app.scan('OrdersTableName')).toEqual([
      { pk: 'ORDER#o-1', customerId: 'c-1', amount: 10, status: 'CONFIRMED', version: 1 },
      { pk: 'ORDER#o-2', customerId: 'c-1', amount: 5, status: 'CONFIRMED', version: 1 },
      { pk: 'ORDER#o-3', customerId: 'c-2', amount: 7, status: 'CONFIRMED', version: 1 },
    ]);
    const outboxItems = await app.scan('OutboxTableName');
    expect(outboxItems).toEqual(
      confirmed
        .map(({ orderId, customerId, amount }) => ({
          pk: eventIdOf(orderId),
          eventType: 'OrderConfirmed',
          body: JSON.stringify({ orderId, customerId, amount }),
          entity: orderId,
          source: 'order-service',
          // The outbox put's condition compares it: the same event met again passes, another fails.
          contentHash: fingerprintOf([
            'OrderConfirmed',
            JSON.stringify({ orderId, customerId, amount }),
            orderId,
          ]),
          createdAt: expect.any(Number),
          expiresAt: expect.any(Number),
        }))
        .sort((a, b) => a.pk.localeCompare(b.pk)),
    );
    // The writer keeps an item for the retention the construct derived (EO_OUTBOX_RETENTION_SECONDS).
    const retentionSeconds = Number(app.output('OutboxRetentionSeconds'));
    for (const item of outboxItems) {
      expect(item.expiresAt).toBe(expiresAt(item.createdAt as number, retentionSeconds));
    }
  }, 120_000);

  it('publishes each event to the shipping service through the shipped relay, and shipping applies it once', async () => {
    await waitForShipments(3);
    expect(await app.scan('ShipmentsTableName')).toEqual([
      { pk: 'SHIPMENT#o-1', customerId: 'c-1', labelsPrinted: 1 },
      { pk: 'SHIPMENT#o-2', customerId: 'c-1', labelsPrinted: 1 },
      { pk: 'SHIPMENT#o-3', customerId: 'c-2', labelsPrinted: 1 },
    ]);
    const shippingRecords = (await app.scan('InboxTableName')).filter(
      (record) => record.consumer === 'shipping',
    );
    expect(shippingRecords.map((record) => record.pk).sort()).toEqual(
      confirmed.map(({ orderId }) => `shipping#${eventIdOf(orderId)}`).sort(),
    );
  }, 90_000);

  it("keeps the stream consumer's read model of the orders table", async () => {
    await waitFor(
      'three orders summarised',
      async () => ordersCounted(await app.scan('SummariesTableName')) >= 3,
      { timeoutMillis: 60_000, intervalMillis: 500 },
    ).catch(app.withLogsOf(LOG_GROUPS));
    expect(await app.scan('SummariesTableName')).toEqual([
      { pk: 'CUSTOMER#c-1', orderCount: 2, amountTotal: 15 },
      { pk: 'CUSTOMER#c-2', orderCount: 1, amountTotal: 7 },
    ]);
  }, 90_000);

  it('acknowledges an event the relay publishes a second time as a duplicate downstream', async () => {
    const [published] = await app.scan('OutboxTableName');
    // What the relay sends when it publishes an event again (a crash before its checkpoint).
    await app.clients.sqs.send(
      new SendMessageCommand({
        QueueUrl: app.output('ShippingQueueUrl'),
        MessageBody: published!.body as string,
        MessageAttributes: {
          [IDEMPOTENCY_KEY_ATTRIBUTE]: { DataType: 'String', StringValue: published!.pk as string },
          [EVENT_TYPE_ATTRIBUTE]: { DataType: 'String', StringValue: published!.eventType as string },
        },
      }),
    );
    const duplicates = await waitFor(
      'the shipping service to acknowledge the second copy',
      async () => {
        const lines = (await app.logLines('ShippingLogGroupName')).filter(
          (line) => line.outcome === 'duplicate',
        );
        return lines.length > 0 ? lines : undefined;
      },
      { timeoutMillis: 30_000, intervalMillis: 500 },
    ).catch(app.withLogsOf(LOG_GROUPS));
    expect(duplicates).toEqual([
      expect.objectContaining({ consumer: 'shipping', scopedKey: `shipping#${published!.pk}` }),
    ]);
    expect((await app.scan('ShipmentsTableName')).map((shipment) => shipment.labelsPrinted)).toEqual([
      1, 1, 1,
    ]);
  }, 60_000);

  it('publishes nothing for a rewrite or a removal of an outbox item', async () => {
    const { dynamodb, sqs } = app.clients;
    const [removed, rewritten] = await app.scan('OutboxTableName');
    await dynamodb.send(
      new UpdateCommand({
        TableName: app.output('OutboxTableName'),
        Key: { pk: rewritten!.pk },
        UpdateExpression: 'SET #body = :body',
        ExpressionAttributeNames: { '#body': 'body' },
        ExpressionAttributeValues: { ':body': JSON.stringify({ orderId: 'rewritten', customerId: 'c-9' }) },
      }),
    );
    await dynamodb.send(
      new DeleteCommand({ TableName: app.output('OutboxTableName'), Key: { pk: removed!.pk } }),
    );
    // A new order after both: once its event is shipped, the stream's earlier records have been handled.
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: app.output('OrdersQueueUrl'),
        MessageBody: JSON.stringify({ orderId: 'o-5', customerId: 'c-2', amount: 3 }),
      }),
    );
    await waitForShipments(4);
    expect(await app.scan('ShipmentsTableName')).toEqual([
      { pk: 'SHIPMENT#o-1', customerId: 'c-1', labelsPrinted: 1 },
      { pk: 'SHIPMENT#o-2', customerId: 'c-1', labelsPrinted: 1 },
      { pk: 'SHIPMENT#o-3', customerId: 'c-2', labelsPrinted: 1 },
      { pk: 'SHIPMENT#o-5', customerId: 'c-2', labelsPrinted: 1 },
    ]);
    // Shipping met one second copy, the test's above: neither change reached it as an event.
    const shippingLogs = (await app.logLines('ShippingLogGroupName')).filter((line) => !isMetricLine(line));
    expect(shippingLogs).toEqual([expect.objectContaining({ outcome: 'duplicate', consumer: 'shipping' })]);
  }, 90_000);

  it("runs each function with the settings its construct gave it: names, record TTLs, the relay's destination", async () => {
    const ttlOf: Record<string, number> = {
      'order-service': Number(app.output('OrdersRecordTtlSeconds')),
      shipping: Number(app.output('ShippingRecordTtlSeconds')),
      'order-summaries': Number(app.output('SummariesRecordTtlSeconds')),
    };
    const records = await app.scan('InboxTableName');
    expect(new Set(records.map((record) => record.consumer))).toEqual(new Set(Object.keys(ttlOf)));
    for (const record of records) {
      expect(String(record.pk).startsWith(`${record.consumer}#`)).toBe(true);
      expect(record.expiresAt).toBe(
        expiresAt(record.committedAt as number, ttlOf[record.consumer as string]!),
      );
    }

    for (const [group, consumer] of [
      ['OrdersLogGroupName', 'order-service'],
      ['ShippingLogGroupName', 'shipping'],
      ['SummariesLogGroupName', 'order-summaries'],
      ['RelayLogGroupName', 'order-events-relay'],
    ] as const) {
      const lines = await app.logLines(group);
      const metrics = lines.filter(isMetricLine);
      expect(metrics.length, group).toBeGreaterThan(0);
      expect(new Set(metrics.map((line) => line.Consumer)), group).toEqual(new Set([consumer]));
      for (const line of lines.filter((line) => !isMetricLine(line))) {
        expect(line.consumer ?? line.relay, group).toBe(consumer);
      }
    }
    // The relay published to the queue the construct named, once per event (o-1, o-2, o-3, o-5).
    // Its last invocation's lines may land after shipping has the event: wait for them.
    const published = async () =>
      (await app.logLines('RelayLogGroupName'))
        .filter(isMetricLine)
        .reduce((sum, line) => sum + Number(line.Published ?? 0), 0);
    await waitFor('the relay to report four publishes', async () => (await published()) >= 4, {
      timeoutMillis: 20_000,
      intervalMillis: 500,
    }).catch(app.withLogsOf(['RelayLogGroupName']));
    expect(await published()).toBe(4);
  }, 60_000);

  it('destroys the stack and stops the emulator', async () => {
    const { destroy } = await app.destroyAndStop();
    expect(destroy.stderr).toMatch(/^Deleted stack ChainAppStack in /m);
    expect(isAlive(app.emulator!.pid)).toBe(false);
  }, 90_000);
});

describe("stream consumers in a user's own app: every record a stream may carry is applied once or dead-lettered losslessly, and the shard moves on", () => {
  const local = createLocalResources();
  // HTTP/1.1: over the Kinesis client's default HTTP/2, the emulator cuts a response at 65,535
  // bytes (the initial flow-control window), so GetRecords of a record over ~48 KB fails to parse.
  const kinesis = new KinesisClient({ ...local.aws, requestHandler: new NodeHttpHandler() });
  const tableStreams = new DynamoDBStreamsClient(local.aws);
  const admin = local.dynamoDbClient();
  const writer = local.documentClient();
  const app = new InProcessUserApp(work, {
    source: join(root, 'test', 'fixtures', 'user-stream-app'),
    name: 'stream-app',
  });
  const inboxTable = uniqueName('eo-user-streams-inbox');
  const paymentsTable = uniqueName('eo-user-payments');
  const ordersTable = uniqueName('eo-user-orders');
  const readModelTable = uniqueName('eo-user-order-read-model');
  const paymentStream = uniqueName('eo-user-payments');
  let typecheck: Promise<CommandRun>;

  /**
   * The environment the handler's function has, deployed with `IdempotentStreamConsumer` on the
   * emulator: the construct's `EO_*` variables, the app's own, and the emulator's endpoint.
   */
  const functionEnvironment = (
    consumer: string,
    deadLetterQueueUrl: string,
    own: Record<string, string>,
  ): Record<string, string> => ({
    [ENV.consumer]: consumer,
    [ENV.inboxTable]: inboxTable,
    [ENV.ttlSeconds]: String(2 * 24 * 3600),
    [ENV.deadLetterMode]: 'direct',
    [ENV.deadLetterQueueUrl]: deadLetterQueueUrl,
    AWS_ENDPOINT_URL: local.aws.endpoint,
    AWS_REGION: local.aws.region,
    AWS_ACCESS_KEY_ID: local.aws.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: local.aws.credentials.secretAccessKey,
    ...own,
  });

  /**
   * A dead-letter queue of `maximumMessageSize` bytes, and a sender to it as the package makes it
   * (`createSqsDeadLetterSender` of the installed tarball) over an SQS client wrapped in the
   * conformance layer: a message SQS would refuse fails the send. `sent` keeps every command that
   * passed the layer.
   */
  async function createDeadLetterQueue(prefix: string, maximumMessageSize: number) {
    const { url } = await local.createQueue(prefix, { MaximumMessageSize: String(maximumMessageSize) });
    const { createSqsDeadLetterSender } = app.require<typeof import('../../lambda')>('effectively-once');
    const sent: unknown[] = [];
    const recorder = {
      send: (command: SendMessageCommand) => {
        sent.push(command);
        return local.sqs.send(command);
      },
    };
    const client = createConformingSqsClient(recorder, { queues: { [url]: { maximumMessageSize } } });
    return {
      url,
      sender: createSqsDeadLetterSender({ client: client as unknown as SQSClient, queueUrl: url }),
      sent,
    };
  }

  /** A dead letter's envelope and the attributes that say why, who and where from. */
  const readDeadLetter = (message: QueueMessage) => {
    const attribute = (name: string) => message.MessageAttributes?.[name]?.StringValue;
    return {
      envelope: JSON.parse(message.Body!) as StreamDeadLetterBody,
      attributes: {
        code: attribute(DEAD_LETTER_ATTRIBUTES.code),
        consumer: attribute(DEAD_LETTER_ATTRIBUTES.consumer),
        sourceMessageId: attribute(DEAD_LETTER_ATTRIBUTES.sourceMessageId),
        eventSourceArn: attribute(STREAM_RECORD_ATTRIBUTES.eventSourceArn),
        shardId: attribute(STREAM_RECORD_ATTRIBUTES.shardId),
        sequenceNumber: attribute(STREAM_RECORD_ATTRIBUTES.sequenceNumber),
        partitionKey: attribute(STREAM_RECORD_ATTRIBUTES.partitionKey),
      },
    };
  };

  const sha256 = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');
  const byPk = (items: Record<string, unknown>[]) =>
    items.sort((a, b) => String(a.pk).localeCompare(String(b.pk)));
  /** What an invocation wrote: each logged outcome, and the counts of its metrics line. */
  const outcomesLogged = (lines: readonly Record<string, unknown>[]) => {
    const metrics = lines.filter(isMetricLine);
    expect(metrics).toHaveLength(1);
    const { Processed, Duplicate, Permanent, Retry } = metrics[0]!;
    return {
      logged: lines
        .filter((line) => !isMetricLine(line))
        .map(({ outcome, code, deadLetter }) => ({ outcome, code, deadLetter })),
      counted: { Processed, Duplicate, Permanent, Retry },
    };
  };

  beforeAll(async () => {
    app.install(tarball);
    // The app's `tsc` runs while the resources are created; its test awaits it.
    typecheck = app.typecheck();
    await Promise.all([
      local.createTable(inboxTable),
      local.createTable(paymentsTable),
      local.createTable(readModelTable),
      kinesis.send(new CreateStreamCommand({ StreamName: paymentStream, ShardCount: 1 })),
    ]);
  }, 120_000);

  afterAll(async () => {
    await Promise.allSettled([
      kinesis.send(new DeleteStreamCommand({ StreamName: paymentStream, EnforceConsumerDeletion: true })),
      admin.send(new DeleteTableCommand({ TableName: ordersTable })),
    ]);
    kinesis.destroy();
    tableStreams.destroy();
    await local.dispose();
  });

  it("type-checks the app's handlers against the installed package with the app's own tsc", async () => {
    expectSuccess('tsc in the stream app', await typecheck);
  }, 60_000);

  it('applies every payment of a Kinesis shard once, dead-letters an empty, a gzip and a maximum-size record with their coordinates and data, and runs the records after each in the same invocation', async () => {
    const CONSUMER = 'payment-events';
    // The dead-letter queue as SQS creates it by default (1 MiB), and its size told to the function.
    const MAX_MESSAGE_BYTES = 1_048_576;
    const deadLetterQueue = await createDeadLetterQueue('eo-user-payments-dlq', MAX_MESSAGE_BYTES);
    const handler = await coldStart(
      functionEnvironment(CONSUMER, deadLetterQueue.url, {
        [ENV.deadLetterMaxMessageBytes]: String(MAX_MESSAGE_BYTES),
        PAYMENTS_TABLE: paymentsTable,
      }),
      async () => {
        const module =
          await app.load<typeof import('../fixtures/user-stream-app/lambda/payment-events')>(
            'lambda/payment-events.ts',
          );
        return module.createPaymentEventsHandler(deadLetterQueue.sender);
      },
    );

    const { StreamDescription } = await waitFor('the payment stream to be active', async () => {
      const described = await kinesis.send(new DescribeStreamCommand({ StreamName: paymentStream }));
      return described.StreamDescription?.StreamStatus === 'ACTIVE' ? described : undefined;
    });
    const streamArn = StreamDescription!.StreamARN!;
    const shardId = StreamDescription!.Shards![0]!.ShardId!;

    const payment = (orderId: string, amount: number) => ({
      PartitionKey: orderId,
      Data: Buffer.from(JSON.stringify({ eventId: `pay-${orderId}`, orderId, amount })),
    });
    // What a CloudWatch Logs subscription writes: gzip, not text.
    const gzip = gzipSync(
      JSON.stringify({
        messageType: 'DATA_MESSAGE',
        logGroup: '/aws/lambda/checkout',
        logEvents: [{ id: '1', timestamp: 1767225600000, message: 'payment accepted' }],
      }),
    );
    // The largest record Kinesis accepts: data and partition key together 1 MiB.
    const largestKey = 'export-batch';
    const largest = randomBytes(1_048_576 - Buffer.byteLength(largestKey));
    const entries = [
      payment('p-1', 10),
      { PartitionKey: 'heartbeat', Data: new Uint8Array(0) },
      payment('p-2', 20),
      { PartitionKey: 'log-subscription', Data: gzip },
      payment('p-3', 30),
      { PartitionKey: largestKey, Data: largest },
      payment('p-4', 40),
      // The producer's second PutRecords of p-2 (a retry after a lost response).
      payment('p-2', 20),
    ];
    const { Records: put = [], FailedRecordCount } = await kinesis.send(
      new PutRecordsCommand({ StreamName: paymentStream, Records: entries }),
    );
    expect(FailedRecordCount ?? 0).toBe(0);
    const sequenceNumbers = put.map((record) => record.SequenceNumber!);

    const records = await readKinesisShard(kinesis, streamArn, shardId);
    expect(records.map((record) => record.kinesis.sequenceNumber)).toEqual(sequenceNumbers);

    // One invocation: no record is the checkpoint, so nothing of the shard is delivered again.
    const { result, lines } = await captureStdout(() =>
      handler({ Records: records }, lambdaContext(CONSUMER)),
    );
    expect(result).toEqual({ batchItemFailures: [] });
    expect(outcomesLogged(lines)).toEqual({
      logged: [
        { outcome: 'permanent', code: 'MALFORMED_BODY', deadLetter: 'sent' },
        { outcome: 'permanent', code: 'MALFORMED_BODY', deadLetter: 'sent' },
        { outcome: 'permanent', code: 'MALFORMED_BODY', deadLetter: 'sent' },
        { outcome: 'duplicate', code: undefined, deadLetter: undefined },
      ],
      counted: { Processed: 4, Duplicate: 1, Permanent: 3, Retry: 0 },
    });
    expect(byPk(await local.scanItems(paymentsTable))).toEqual([
      { pk: 'ORDER#p-1', paymentCount: 1, paidTotal: 10 },
      { pk: 'ORDER#p-2', paymentCount: 1, paidTotal: 20 },
      { pk: 'ORDER#p-3', paymentCount: 1, paidTotal: 30 },
      { pk: 'ORDER#p-4', paymentCount: 1, paidTotal: 40 },
    ]);

    const deadLetters = (await receiveMessages(local, deadLetterQueue.url, 3)).map(readDeadLetter);
    expect(deadLetters).toHaveLength(3);
    expect(deadLetterQueue.sent.map((command) => command instanceof SendMessageCommand)).toEqual([
      true,
      true,
      true,
    ]);
    const bySequenceNumber = new Map(
      deadLetters.map((letter) => [letter.envelope.source.sequenceNumber, letter]),
    );
    const badOnes = [
      { index: 1, partitionKey: 'heartbeat', data: Buffer.alloc(0) },
      { index: 3, partitionKey: 'log-subscription', data: gzip },
      { index: 5, partitionKey: largestKey, data: largest },
    ];
    for (const { index, partitionKey, data } of badOnes) {
      const sequenceNumber = sequenceNumbers[index]!;
      const letter = bySequenceNumber.get(sequenceNumber);
      const eventId = `${shardId}:${sequenceNumber}`;
      expect(letter?.envelope, partitionKey).toEqual({
        format: STREAM_DEAD_LETTER_FORMAT,
        source: {
          eventSource: 'aws:kinesis',
          eventSourceArn: streamArn,
          shardId,
          sequenceNumber,
          eventId,
          partitionKey,
          arrivalTime: records[index]!.kinesis.approximateArrivalTimestamp,
        },
        reason: expect.any(String),
        code: 'MALFORMED_BODY',
        data: expect.objectContaining({ bytes: data.byteLength, sha256: sha256(data) }),
      });
      expect(letter?.attributes, partitionKey).toEqual({
        code: 'MALFORMED_BODY',
        consumer: CONSUMER,
        sourceMessageId: eventId,
        eventSourceArn: streamArn,
        shardId,
        sequenceNumber,
        partitionKey,
      });
    }

    // The empty and the gzip record travel whole: their bytes come back from the dead letter.
    const [empty, gzipped, largestLetter] = badOnes.map(
      ({ index }) => bySequenceNumber.get(sequenceNumbers[index]!)!.envelope,
    );
    expect(empty!.data).toMatchObject({ encoding: 'utf-8', value: '' });
    expect(recoveredData(empty!)).toEqual(Buffer.alloc(0));
    expect(gzipped!.data).toMatchObject({ encoding: 'base64' });
    expect(recoveredData(gzipped!)).toEqual(gzip);
    expect(JSON.parse(gunzipSync(recoveredData(gzipped!)!).toString('utf8'))).toMatchObject({
      logGroup: '/aws/lambda/checkout',
    });

    // The largest record does not fit a dead letter: it is marked truncated, and its coordinates
    // read it again from the stream, byte for byte.
    expect(largestLetter!.data).toEqual({
      truncated: true,
      bytes: largest.byteLength,
      sha256: sha256(largest),
    });
    const { ShardIterator } = await kinesis.send(
      new GetShardIteratorCommand({
        StreamARN: largestLetter!.source.eventSourceArn,
        ShardId: largestLetter!.source.shardId,
        ShardIteratorType: 'AT_SEQUENCE_NUMBER',
        StartingSequenceNumber: largestLetter!.source.sequenceNumber,
      }),
    );
    const { Records: reread = [] } = await kinesis.send(
      new GetRecordsCommand({ StreamARN: streamArn, ShardIterator, Limit: 1 }),
    );
    expect(reread[0]?.SequenceNumber).toBe(largestLetter!.source.sequenceNumber);
    const rereadData = Buffer.from(reread[0]!.Data!);
    expect(rereadData.equals(largest)).toBe(true);
    expect(sha256(rereadData)).toBe(largestLetter!.data.sha256);
  }, 60_000);

  it('projects every order change of a DynamoDB stream once, dead-letters a change with two images larger than a dead letter, truncated with its keys, and projects the change after it in the same invocation', async () => {
    const CONSUMER = 'order-projection';
    // The limit the runtime assumes without EO_DEAD_LETTER_MAX_MESSAGE_BYTES, as the queue's.
    const MAX_MESSAGE_BYTES = 262_144;
    const deadLetterQueue = await createDeadLetterQueue('eo-user-projection-dlq', MAX_MESSAGE_BYTES);
    const handler = await coldStart(
      functionEnvironment(CONSUMER, deadLetterQueue.url, { READ_MODEL_TABLE: readModelTable }),
      async () => {
        const module = await app.load<typeof import('../fixtures/user-stream-app/lambda/order-projection')>(
          'lambda/order-projection.ts',
        );
        return module.createOrderProjectionHandler(deadLetterQueue.sender);
      },
    );

    const streamArn = await createStreamTable(admin, ordersTable);
    // Two images of about 150 KB each: the change is larger than a dead letter may be.
    const firstNotes = 'a'.repeat(150_000);
    const secondNotes = 'b'.repeat(150_000);
    for (const item of [
      { pk: 'ORDER#o-1', version: 1, amount: 10 },
      { pk: 'ORDER#o-2', version: 1, amount: 20, notes: firstNotes },
      // A writer that let a negative amount through: this change can never be projected.
      { pk: 'ORDER#o-2', version: 2, amount: -5, notes: secondNotes },
      { pk: 'ORDER#o-3', version: 1, amount: 7 },
    ]) {
      await writer.send(new PutCommand({ TableName: ordersTable, Item: item }));
    }
    const records = await readTableStream(tableStreams, streamArn);
    expect(records.map((record) => record.eventName)).toEqual(['INSERT', 'INSERT', 'MODIFY', 'INSERT']);
    const rejected = records[2]!;
    const rejectedData = Buffer.from(JSON.stringify(rejected.dynamodb));
    expect(rejectedData.byteLength).toBeGreaterThan(MAX_MESSAGE_BYTES);

    const { result, lines } = await captureStdout(() =>
      handler({ Records: records }, lambdaContext(CONSUMER)),
    );
    expect(result).toEqual({ batchItemFailures: [] });
    expect(outcomesLogged(lines)).toEqual({
      logged: [{ outcome: 'permanent', code: 'PERMANENT', deadLetter: 'sent' }],
      counted: { Processed: 3, Duplicate: 0, Permanent: 1, Retry: 0 },
    });
    expect(byPk(await local.scanItems(readModelTable))).toEqual([
      { pk: 'ORDER#o-1', amount: 10, version: 1, changesApplied: 1 },
      { pk: 'ORDER#o-2', amount: 20, version: 1, changesApplied: 1 },
      { pk: 'ORDER#o-3', amount: 7, version: 1, changesApplied: 1 },
    ]);

    const deadLetters = (await receiveMessages(local, deadLetterQueue.url, 1)).map(readDeadLetter);
    expect(deadLetterQueue.sent.map((command) => command instanceof SendMessageCommand)).toEqual([true]);
    const sequenceNumber = rejected.dynamodb.SequenceNumber;
    expect(deadLetters).toEqual([
      {
        envelope: {
          format: STREAM_DEAD_LETTER_FORMAT,
          source: {
            eventSource: 'aws:dynamodb',
            eventSourceArn: streamArn,
            sequenceNumber,
            eventId: rejected.eventID,
            arrivalTime: rejected.dynamodb.ApproximateCreationDateTime,
            eventName: 'MODIFY',
            keys: { pk: { S: 'ORDER#o-2' } },
          },
          reason: 'An order amount must be positive',
          code: 'PERMANENT',
          data: { truncated: true, bytes: rejectedData.byteLength, sha256: sha256(rejectedData) },
        },
        attributes: {
          code: 'PERMANENT',
          consumer: CONSUMER,
          sourceMessageId: rejected.eventID,
          eventSourceArn: streamArn,
          shardId: undefined,
          sequenceNumber,
          partitionKey: undefined,
        },
      },
    ]);

    // The coordinates read the change again from the stream: the shard whose range holds the
    // sequence number, at that sequence number.
    const { source } = deadLetters[0]!.envelope;
    const { StreamDescription } = await tableStreams.send(
      new DescribeTableStreamCommand({ StreamArn: source.eventSourceArn }),
    );
    const shard = StreamDescription?.Shards?.find(({ SequenceNumberRange: range }) => {
      const at = BigInt(source.sequenceNumber);
      return (
        BigInt(range?.StartingSequenceNumber ?? '0') <= at &&
        (range?.EndingSequenceNumber === undefined || at <= BigInt(range.EndingSequenceNumber))
      );
    });
    const { ShardIterator } = await tableStreams.send(
      new GetTableStreamShardIteratorCommand({
        StreamArn: source.eventSourceArn,
        ShardId: shard?.ShardId,
        ShardIteratorType: 'AT_SEQUENCE_NUMBER',
        SequenceNumber: source.sequenceNumber,
      }),
    );
    const { Records: reread = [] } = await tableStreams.send(
      new GetTableStreamRecordsCommand({ ShardIterator, Limit: 1 }),
    );
    const change = dynamoDbStreamRecordFrom(source.eventSourceArn!, reread[0]!);
    expect(change.dynamodb.SequenceNumber).toBe(source.sequenceNumber);
    expect(change.dynamodb.NewImage?.notes).toEqual({ S: secondNotes });
    expect(change.dynamodb.OldImage?.notes).toEqual({ S: firstNotes });
    expect(sha256(Buffer.from(JSON.stringify(change.dynamodb)))).toBe(deadLetters[0]!.envelope.data.sha256);
  }, 60_000);

  it('applies every order event of a real Kafka topic once in atomic and entity mode, through producer duplicates and partitions resumed at reported offsets, dead-letters a poison, an empty and a keyless record with their coordinates, and changes nothing on a re-read', async () => {
    const broker = await startLocalKafka({ partitions: 2 });
    try {
      const kafka = new Kafka({
        clientId: 'user-app',
        brokers: [...broker.brokers],
        logLevel: kafkaLogLevel.NOTHING,
      });
      const topic = uniqueName('orders');
      const [ordersTable, customerOrdersTable] = await Promise.all([
        local.createTable(uniqueName('eo-user-kafka-orders')),
        local.createTable(uniqueName('eo-user-kafka-customer-orders')),
      ]);
      const admin = kafka.admin();
      await admin.connect();
      await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
      await admin.disconnect();
      const order = (n: number) => ({ orderId: `o-${n}`, customerId: `c-${n % 2}`, status: 'PAID' });
      const json = (value: unknown) => Buffer.from(JSON.stringify(value));
      const keyed = (id: string) => ({ 'idempotency-key': id });
      const producer = kafka.producer();
      await producer.connect();
      await producer.send({
        topic,
        messages: [
          { partition: 0, value: json(order(1)), headers: keyed('evt-1') },
          { partition: 0, value: json(order(1)), headers: keyed('evt-1') }, // the producer's retry
          { partition: 0, value: Buffer.from('{"orderId": '), headers: keyed('evt-poison') },
          { partition: 0, value: json(order(2)), headers: keyed('evt-2') },
          { partition: 1, value: json(order(3)), headers: keyed('evt-3') },
          { partition: 1, value: Buffer.alloc(0), headers: keyed('evt-empty') },
          { partition: 1, value: json(order(4)) }, // no idempotency-key header
          { partition: 1, value: json(order(3)), headers: keyed('evt-3') }, // again, later
        ],
      });
      await producer.disconnect();
      const deadLetterQueue = await createDeadLetterQueue('eo-user-kafka-dlq', 262_144);
      const environment = (consumer: string) =>
        functionEnvironment(consumer, deadLetterQueue.url, {
          ORDERS_TABLE: ordersTable,
          CUSTOMER_ORDERS_TABLE: customerOrdersTable,
        });
      // SQS is unavailable during the first invocation: a dead letter fails, and its partition resumes there.
      let sqsUp = false;
      const sender = {
        send: (message: Parameters<typeof deadLetterQueue.sender.send>[0]) =>
          sqsUp ? deadLetterQueue.sender.send(message) : Promise.reject(new Error('SQS is unavailable')),
      };
      type KafkaOrders = typeof import('../fixtures/user-stream-app/lambda/kafka-orders');
      const orderEffects = await coldStart(environment('kafka-order-effects'), async () =>
        (await app.load<KafkaOrders>('lambda/kafka-orders.ts')).createOrderEffectsHandler(sender),
      );
      const customerOrders = await coldStart(environment('kafka-customer-orders'), async () =>
        (await app.load<KafkaOrders>('lambda/kafka-orders.ts')).createCustomerOrdersHandler(sender),
      );
      const bootstrapServers = broker.brokers.join(',');

      const partitions = await readTopic(kafka, topic, 8);
      const events = await play(orderEffects, partitions, {
        bootstrapServers,
        afterFirst: async () => {
          sqsUp = true;
        },
      });
      // Each partition came back from its first record that could not be dead-lettered.
      expect(events[1]?.records[`${topic}-0`]?.[0]?.offset).toBe(2);
      expect(events[1]?.records[`${topic}-1`]?.[0]?.offset).toBe(1);
      await play(customerOrders, partitions, { bootstrapServers });
      expect(byPk(await local.scanItems(ordersTable)).map(({ pk, effects }) => [pk, effects])).toEqual([
        ['o-1', 1],
        ['o-2', 1],
        ['o-3', 1],
      ]);
      expect(byPk(await local.scanItems(customerOrdersTable)).map(({ pk }) => pk)).toEqual([
        'c-0#o-2',
        'c-1#o-1',
        'c-1#o-3',
      ]);
      const letters = (await receiveMessages(local, deadLetterQueue.url, 6)).map(readDeadLetter);
      expect(
        letters
          .map(
            ({ envelope, attributes }) =>
              `${attributes.consumer} ${envelope.code} ${envelope.source.topic}-${envelope.source.partition}:${envelope.source.offset}`,
          )
          .sort(),
      ).toEqual(
        ['kafka-order-effects', 'kafka-customer-orders']
          .flatMap((consumer) => [
            `${consumer} MALFORMED_BODY ${topic}-0:2`,
            `${consumer} MALFORMED_BODY ${topic}-1:1`,
            `${consumer} MISSING_KEY ${topic}-1:2`,
          ])
          .sort(),
      );
      const poison = letters.find(
        ({ envelope }) => envelope.source.offset === 2 && envelope.source.partition === 0,
      )!;
      expect(recoveredData(poison.envelope)?.toString()).toBe('{"orderId": ');
      expect(poison.attributes).toMatchObject({ shardId: `${topic}-0`, sequenceNumber: '2' });

      // A new consumer group re-reads both partitions from the start: no table changes.
      const before = [await local.scanItems(ordersTable), await local.scanItems(customerOrdersTable)];
      const again = await readTopic(kafka, topic, 8);
      await play(orderEffects, again, { bootstrapServers });
      await play(customerOrders, again, { bootstrapServers });
      expect([await local.scanItems(ordersTable), await local.scanItems(customerOrdersTable)]).toEqual(
        before,
      );
    } finally {
      await broker.stop();
    }
  }, 180_000);
});

describe("an outbox in a user's own app at its destination's edges: what the destination would refuse is refused before the commit or dead-lettered by the relay, the events behind it are published, and a relay past its deadline publishes nothing twice", () => {
  const local = createLocalResources();
  const tableStreams = new DynamoDBStreamsClient(local.aws);
  const admin = local.dynamoDbClient();
  const writer = local.documentClient();
  const eventBridge = new EventBridgeClient(local.aws);
  const sns = new SNSClient(local.aws);
  const app = new InProcessUserApp(work, {
    source: join(root, 'test', 'fixtures', 'user-outbox-app'),
    name: 'outbox-app',
  });
  const ORDER_SERVICE = 'order-service';
  const RELAY = 'order-events-relay';
  const inboxTable = uniqueName('eo-user-outbox-inbox');
  const ordersTable = uniqueName('eo-user-outbox-orders');
  const cleanups: (() => Promise<unknown>)[] = [];
  type OrderPlaced = import('../fixtures/user-outbox-app/lambda/orders').OrderPlaced;
  type OutboxModule = typeof import('../../lambda/outbox');

  /** The emulator's endpoint and credentials, as a deployed function has its region's. */
  const awsEnvironment = () => ({
    AWS_ENDPOINT_URL: local.aws.endpoint,
    AWS_REGION: local.aws.region,
    AWS_ACCESS_KEY_ID: local.aws.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: local.aws.credentials.secretAccessKey,
  });

  /** An outbox table with its stream, as the `Outbox` construct creates it; deleted after the file. */
  async function createOutboxTable(prefix: string): Promise<{ name: string; streamArn: string }> {
    const name = uniqueName(prefix);
    const streamArn = await createStreamTable(admin, name);
    cleanups.push(() => admin.send(new DeleteTableCommand({ TableName: name })));
    return { name, streamArn };
  }

  /** An outbox table named from `name`, and the order service's and the relay's dead-letter queues. */
  async function outboxOf(name: string) {
    const ordersDeadLetters = await local.createQueue(`eo-user-outbox-orders-${name}-dlq`);
    const relayDeadLetters = await local.createQueue(`eo-user-outbox-relay-${name}-dlq`);
    const outbox = await createOutboxTable(`eo-user-outbox-${name}`);
    return { ordersDeadLetters, relayDeadLetters, outbox };
  }

  /**
   * The package's relay, with the construct's variables for `destination`, over `records` as one
   * invocation, which fails none of them: its result and the lines it wrote.
   */
  async function relayRecords(
    relayDeadLetterQueueUrl: string,
    destination: Record<string, string>,
    records: DynamoDbStreamRecord[],
  ) {
    const relayHandler = await relay(relayDeadLetterQueueUrl, destination);
    const run = await captureStdout(() => relayHandler({ Records: records }, lambdaContext(RELAY)));
    expect(run.result).toEqual({ batchItemFailures: [] });
    return run;
  }

  /**
   * An outbox relayed to an SQS queue (FIFO or standard), the order service's and the relay's
   * dead-letter queues, and the construct's `EO_OUTBOX_DESTINATION_*` variables for that queue.
   */
  async function queueOutbox(name: string, { fifo }: { readonly fifo: boolean }) {
    const shipping = await local.createQueue(`eo-user-outbox-${name}`, fifo ? { FifoQueue: 'true' } : {});
    const { ordersDeadLetters, relayDeadLetters, outbox } = await outboxOf(name);
    const destination = {
      [OUTBOX_ENV.destinationKind]: 'sqs',
      [OUTBOX_ENV.destinationFifo]: String(fifo),
      [OUTBOX_ENV.destinationQueueUrl]: shipping.url,
      [OUTBOX_ENV.destinationArn]: shipping.arn,
    };
    return { shipping, ordersDeadLetters, relayDeadLetters, outbox, destination };
  }

  /**
   * The order service at cold start with the variables `IdempotentConsumer({ outbox })` gives it
   * (`destination`: the outbox's `EO_OUTBOX_DESTINATION_*` and `EO_OUTBOX_EVENT_SOURCE`).
   */
  async function orderService(
    outboxTable: string,
    deadLetterQueueUrl: string,
    destination: Record<string, string>,
  ) {
    const environment = {
      [ENV.consumer]: ORDER_SERVICE,
      [ENV.inboxTable]: inboxTable,
      [ENV.ttlSeconds]: String(4 * 24 * 3600),
      [ENV.deadLetterMode]: 'direct',
      [ENV.deadLetterQueueUrl]: deadLetterQueueUrl,
      [OUTBOX_ENV.tableName]: outboxTable,
      [OUTBOX_ENV.retentionSeconds]: String(60 * 3600),
      ...destination,
      ORDERS_TABLE: ordersTable,
      ...awsEnvironment(),
    };
    return coldStart(environment, async () => {
      const module =
        await app.load<typeof import('../fixtures/user-outbox-app/lambda/orders')>('lambda/orders.ts');
      return module.createOrdersHandler();
    });
  }

  /** The package's relay (`createOutboxRelay()`, the construct's default handler) at cold start with the construct's variables. */
  function relay(deadLetterQueueUrl: string, destination: Record<string, string>, options: object = {}) {
    const environment = {
      [ENV.consumer]: RELAY,
      [ENV.deadLetterMode]: 'direct',
      [ENV.deadLetterQueueUrl]: deadLetterQueueUrl,
      ...destination,
      ...awsEnvironment(),
    };
    return coldStart(environment, async () =>
      app.require<OutboxModule>('effectively-once/outbox').createOutboxRelay(options),
    );
  }

  /** Sends `orders` to the order service as one SQS batch; its logged outcomes, by order. */
  async function place(
    handler: ReturnType<typeof import('../fixtures/user-outbox-app/lambda/orders').createOrdersHandler>,
    orders: OrderPlaced[],
  ) {
    const event = {
      Records: orders.map((order, index) => sqsRecord(`m-${order.orderId}-${index}`, order)),
    };
    const { result, lines } = await captureStdout(() => handler(event, lambdaContext(ORDER_SERVICE)));
    return { result, lines: lines.filter((line) => !isMetricLine(line)) };
  }

  /**
   * Places `accepted` with, second, an order `refused.orderId` whose customer reference (`Ada
   * Lovelace`) a group id cannot hold, and checks the invocation: nothing failed, the refused
   * order is its one line (processed orders log at debug) and a `VALIDATION` dead letter saying
   * why on `deadLetterQueueUrl`, worded for `refused.destination`.
   */
  async function placeRefusingGroupId(
    handler: Parameters<typeof place>[0],
    deadLetterQueueUrl: string,
    accepted: readonly OrderPlaced[],
    refused: { readonly orderId: string; readonly destination: string },
  ) {
    const poison = { orderId: refused.orderId, customerRef: 'Ada Lovelace' };
    const { result, lines } = await place(handler, [accepted[0]!, poison, ...accepted.slice(1)]);
    expect(result).toEqual({ batchItemFailures: [] });
    expect(lines.map(({ outcome, code }) => ({ outcome, code }))).toEqual([
      { outcome: 'permanent', code: 'VALIDATION' },
    ]);
    expect(await deadLettersOn(deadLetterQueueUrl, 1)).toEqual([
      {
        body: JSON.stringify(poison),
        code: 'VALIDATION',
        reason: `emit: on ${refused.destination} \`entity\` is the \`MessageGroupId\`, which SQS and SNS take only as 1 to 128 ASCII letters, digits and punctuation; it has character U+0020 at position 4`,
        dedupKey: refused.orderId,
      },
    ]);
  }

  /** The dead letters on `queueUrl`: body, code and reason. */
  async function deadLettersOn(queueUrl: string, count: number) {
    return (await receiveMessages(local, queueUrl, count)).map((message) => ({
      body: message.Body,
      code: message.MessageAttributes?.[DEAD_LETTER_ATTRIBUTES.code]?.StringValue,
      reason: message.MessageAttributes?.[DEAD_LETTER_ATTRIBUTES.reason]?.StringValue,
      dedupKey: message.MessageAttributes?.[DEAD_LETTER_ATTRIBUTES.dedupKey]?.StringValue,
    }));
  }

  /** A published copy's event id, group id and deduplication id. */
  const groupingOf = (message: QueueMessage) => ({
    id: message.MessageAttributes?.[IDEMPOTENCY_KEY_ATTRIBUTE]?.StringValue,
    group: message.Attributes?.MessageGroupId,
    deduplicationId: message.Attributes?.MessageDeduplicationId,
  });
  const eventIdOf = (orderId: string) => outboxEventId(`${ORDER_SERVICE}#${orderId}`, 'OrderConfirmed#0');
  const outboxIds = async (table: string) => (await local.scanItems(table)).map((item) => item.pk).sort();

  beforeAll(async () => {
    app.install(tarball);
    await Promise.all([local.createTable(inboxTable), local.createTable(ordersTable)]);
  }, 120_000);

  afterAll(async () => {
    await Promise.allSettled(cleanups.map((cleanup) => cleanup()));
    tableStreams.destroy();
    eventBridge.destroy();
    sns.destroy();
    await local.dispose();
  });

  it('on a FIFO queue: refuses an order whose customer reference a MessageGroupId cannot hold before the commit, escapes what SQS refuses in a detail, and dead-letters the items SQS refuses that were written past emit, publishing the events behind them', async () => {
    const { shipping, ordersDeadLetters, relayDeadLetters, outbox, destination } = await queueOutbox('fifo', {
      fifo: true,
    });
    // Items another writer put, past `emit`'s checks (or before the queue became FIFO): a group id
    // with a space, and a body holding U+FFFF, which SQS refuses (the emulator too).
    const legacy = (pk: string, body: string, entity?: string) =>
      writer.send(
        new PutCommand({
          TableName: outbox.name,
          Item: {
            [OUTBOX_ATTRIBUTES.pk]: pk,
            [OUTBOX_ATTRIBUTES.type]: 'OrderConfirmed',
            [OUTBOX_ATTRIBUTES.body]: body,
            ...(entity === undefined ? {} : { [OUTBOX_ATTRIBUTES.entity]: entity }),
            [OUTBOX_ATTRIBUTES.source]: 'legacy',
            [OUTBOX_ATTRIBUTES.createdAt]: Date.now(),
          },
        }),
      );
    await legacy('legacy-group', '{"orderId":"o-0"}', 'Ada Lovelace');
    await legacy('legacy-body', '{"note":"\uffff"}', 'c-0');

    const handler = await orderService(outbox.name, ordersDeadLetters.url, destination);
    const note = 'x\ufffey\uffffz';
    await placeRefusingGroupId(
      handler,
      ordersDeadLetters.url,
      [
        { orderId: 'o-1', customerRef: 'c-1', note },
        { orderId: 'o-3', customerRef: 'c-2' },
      ],
      { orderId: 'o-2', destination: 'a FIFO destination' },
    );
    // Nothing of o-2 was committed: no order, no event, no inbox record.
    expect(await outboxIds(outbox.name)).toEqual(
      ['legacy-body', 'legacy-group', eventIdOf('o-1'), eventIdOf('o-3')].sort(),
    );
    expect((await local.scanItems(ordersTable)).map((item) => item.pk).sort()).toEqual([
      'ORDER#o-1',
      'ORDER#o-3',
    ]);
    expect((await local.scanItems(inboxTable)).map((record) => record.pk).sort()).toEqual([
      `${ORDER_SERVICE}#o-1`,
      `${ORDER_SERVICE}#o-3`,
    ]);

    const records = await readTableStream(tableStreams, outbox.streamArn);
    // The legacy items first; o-1 and o-3 ran concurrently, their commits in either order.
    const keys = records.map((record) => (record.dynamodb.Keys?.pk as { S?: string } | undefined)?.S);
    expect(keys.slice(0, 2)).toEqual(['legacy-group', 'legacy-body']);
    expect(keys.slice(2).sort()).toEqual([eventIdOf('o-1'), eventIdOf('o-3')].sort());
    const run = await relayRecords(relayDeadLetters.url, destination, records);
    expect(run.lines.filter(isMetricLine)).toEqual([
      expect.objectContaining({ Published: 2, Permanent: 2, Retry: 0 }),
    ]);

    const published = await receiveMessages(local, shipping.url, 2);
    expect(
      published
        .map((message) => ({ ...groupingOf(message), detail: JSON.parse(message.Body!) }))
        .sort((a, b) => String(a.detail.orderId).localeCompare(String(b.detail.orderId))),
    ).toEqual([
      {
        id: eventIdOf('o-1'),
        group: 'c-1',
        deduplicationId: eventIdOf('o-1'),
        detail: { orderId: 'o-1', customerRef: 'c-1', note },
      },
      {
        id: eventIdOf('o-3'),
        group: 'c-2',
        deduplicationId: eventIdOf('o-3'),
        detail: { orderId: 'o-3', customerRef: 'c-2' },
      },
    ]);
    const refused = await deadLettersOn(relayDeadLetters.url, 2);
    expect(
      refused
        .map(({ code, dedupKey }) => ({ code, dedupKey }))
        .sort((a, b) => String(a.dedupKey).localeCompare(String(b.dedupKey))),
    ).toEqual([
      { code: 'VALIDATION', dedupKey: 'legacy-body' },
      { code: 'VALIDATION', dedupKey: 'legacy-group' },
    ]);
    for (const deadLetter of refused) {
      // The whole record travels in the stream dead-letter envelope: the event can be republished from it.
      const envelope = JSON.parse(deadLetter.body!) as StreamDeadLetterBody;
      expect(envelope.format).toBe(STREAM_DEAD_LETTER_FORMAT);
      expect(envelope.reason).toMatch(
        deadLetter.dedupKey === 'legacy-group'
          ? /^The destination refused event legacy-group \(`OrderConfirmed`\): .*InvalidParameterValue: .*MessageGroupId can only include alphanumeric and punctuation characters/
          : /^The destination refused event legacy-body \(`OrderConfirmed`\): .*InvalidMessageContents: Invalid binary character '#xFFFF'/,
      );
      expect(JSON.parse(recoveredData(envelope)!.toString('utf8')).NewImage.pk).toEqual({
        S: deadLetter.dedupKey,
      });
    }
  }, 90_000);

  it('on an EventBridge bus: refuses an event whose type is longer than a DetailType before the commit, and publishes the next one', async () => {
    const receiving = await local.createQueue('eo-user-outbox-eb-target');
    const bus = await createBusToQueue(
      eventBridge,
      'eo-user-outbox-bus',
      { source: ['orders'] },
      receiving.arn,
    );
    cleanups.push(() => bus.remove());
    const { ordersDeadLetters, relayDeadLetters, outbox } = await outboxOf('eb');
    const destination = {
      [OUTBOX_ENV.destinationKind]: 'eventbridge',
      [OUTBOX_ENV.destinationFifo]: 'false',
      [OUTBOX_ENV.destinationArn]: bus.busArn,
      [OUTBOX_ENV.eventSource]: 'orders',
    };

    const handler = await orderService(outbox.name, ordersDeadLetters.url, destination);
    const longType = 'OrderConfirmed'.padEnd(129, 'X');
    // A bus has no group ids: a customer reference with a space is an entity like any other.
    const { result } = await place(handler, [
      { orderId: 'o-4', customerRef: 'c-3', eventType: longType },
      { orderId: 'o-5', customerRef: 'Ada Lovelace' },
    ]);
    expect(result).toEqual({ batchItemFailures: [] });
    expect(await deadLettersOn(ordersDeadLetters.url, 1)).toEqual([
      {
        body: JSON.stringify({ orderId: 'o-4', customerRef: 'c-3', eventType: longType }),
        code: 'VALIDATION',
        reason: "emit: the event's `type` is the EventBridge `DetailType`, at most 128 characters; got 129",
        dedupKey: 'o-4',
      },
    ]);
    expect(await outboxIds(outbox.name)).toEqual([eventIdOf('o-5')]);

    await relayRecords(
      relayDeadLetters.url,
      destination,
      await readTableStream(tableStreams, outbox.streamArn),
    );
    const [delivered] = await receiveMessages(local, receiving.url, 1);
    expect(JSON.parse(delivered!.Body!)).toEqual(
      expect.objectContaining({
        source: 'orders',
        'detail-type': 'OrderConfirmed',
        detail: {
          metadata: { [IDEMPOTENCY_KEY_ATTRIBUTE]: eventIdOf('o-5'), type: 'OrderConfirmed' },
          data: { orderId: 'o-5', customerRef: 'Ada Lovelace' },
        },
      }),
    );
  }, 90_000);

  it('through a standard topic feeding fair queues: refuses an order whose customer reference a MessageGroupId cannot hold before the commit, and the fair queue subscribed receives each customer as its tenant', async () => {
    const tenants = await local.createQueue('eo-user-outbox-fair-tenants');
    const { TopicArn } = await sns.send(new CreateTopicCommand({ Name: uniqueName('eo-user-outbox-fair') }));
    cleanups.push(() => sns.send(new DeleteTopicCommand({ TopicArn })));
    await subscribeQueueRaw(sns, TopicArn!, tenants.arn);
    const { ordersDeadLetters, relayDeadLetters, outbox } = await outboxOf('fair');
    // What `Outbox({ topic, fairQueue: true })` gives the relay and every writer.
    const destination = {
      [OUTBOX_ENV.destinationKind]: 'sns',
      [OUTBOX_ENV.destinationFifo]: 'false',
      [OUTBOX_ENV.destinationFair]: 'true',
      [OUTBOX_ENV.destinationArn]: TopicArn!,
    };

    const handler = await orderService(outbox.name, ordersDeadLetters.url, destination);
    await placeRefusingGroupId(
      handler,
      ordersDeadLetters.url,
      [
        { orderId: 'o-11', customerRef: 'c-11' },
        { orderId: 'o-13', customerRef: 'c-13' },
      ],
      { orderId: 'o-12', destination: 'a topic feeding fair queues' },
    );
    expect(await outboxIds(outbox.name)).toEqual([eventIdOf('o-11'), eventIdOf('o-13')].sort());

    await relayRecords(
      relayDeadLetters.url,
      destination,
      await readTableStream(tableStreams, outbox.streamArn),
    );
    const published = await receiveMessages(local, tenants.url, 2);
    expect(published.map(groupingOf).sort((a, b) => String(a.group).localeCompare(String(b.group)))).toEqual([
      { id: eventIdOf('o-11'), group: 'c-11', deduplicationId: undefined },
      { id: eventIdOf('o-13'), group: 'c-13', deduplicationId: undefined },
    ]);
  }, 90_000);

  it("fails the order service's cold start when its construct deployed it as another mode, naming both", async () => {
    const outbox = await createOutboxTable('eo-user-outbox-mode');
    const deadLetters = await local.createQueue('eo-user-outbox-mode-dlq');
    const destination = { [OUTBOX_ENV.destinationKind]: 'sqs', [OUTBOX_ENV.destinationFifo]: 'false' };
    // What `IdempotentConsumer({ mode: 'marker' })` sets: its grants are a marker consumer's.
    await expect(
      coldStart({ [ENV.mode]: 'marker' }, () => orderService(outbox.name, deadLetters.url, destination)),
    ).rejects.toMatchObject({
      code: 'INVALID_OPTIONS',
      message: expect.stringMatching(
        /^The handler's mode is `atomic`, but the construct deployed it as `marker` \(`EO_MODE`\)/,
      ),
    });
    // The construct's own mode starts.
    await expect(
      coldStart({ [ENV.mode]: 'atomic' }, () => orderService(outbox.name, deadLetters.url, destination)),
    ).resolves.toEqual(expect.any(Function));
  }, 60_000);

  it('returns the checkpoint when a slow destination brings it to its deadline, and the invocation resumed there publishes the rest, each event once', async () => {
    const { shipping, ordersDeadLetters, relayDeadLetters, outbox, destination } = await queueOutbox('slow', {
      fifo: false,
    });
    const handler = await orderService(outbox.name, ordersDeadLetters.url, destination);
    const orderIds = ['o-6', 'o-7', 'o-8', 'o-9', 'o-10'];
    expect(
      (
        await place(
          handler,
          orderIds.map((orderId) => ({ orderId, customerRef: 'c-4' })),
        )
      ).result,
    ).toEqual({
      batchItemFailures: [],
    });
    const records = await readTableStream(tableStreams, outbox.streamArn);
    expect(records).toHaveLength(5);

    // Each send takes a second of the relay's clock; the invocation has 4.5 seconds. The relay
    // starts no record within its 2-second margin of the timeout: it publishes three and returns
    // the fourth as its checkpoint.
    let now = 1_000_000;
    const deadline = now + 4_500;
    const { sqsDestination } = app.require<OutboxModule>('effectively-once/outbox');
    const slowQueue = sqsDestination({
      client: {
        send: async (command: SendMessageCommand) => {
          now += 1_000;
          return local.sqs.send(command);
        },
      } as never,
      queueUrl: shipping.url,
    });
    const relayHandler = await relay(relayDeadLetters.url, destination, {
      destination: slowQueue,
      clock: () => now,
    });
    const first = await captureStdout(() =>
      relayHandler(
        { Records: records },
        { ...lambdaContext(RELAY), getRemainingTimeInMillis: () => deadline - now },
      ),
    );
    const checkpoint = records[3]!.dynamodb.SequenceNumber;
    expect(first.result).toEqual({ batchItemFailures: [{ itemIdentifier: checkpoint }] });
    expect(first.lines.filter(isMetricLine)).toEqual([
      expect.objectContaining({ Published: 3, Retry: 1, Permanent: 0 }),
    ]);

    // The event source resumes at the checkpoint: the fourth record and after.
    const second = await captureStdout(() =>
      relayHandler({ Records: records.slice(3) }, lambdaContext(RELAY)),
    );
    expect(second.result).toEqual({ batchItemFailures: [] });

    const published = await receiveMessages(local, shipping.url, 5);
    const ids = published.map(
      (message) => message.MessageAttributes?.[IDEMPOTENCY_KEY_ATTRIBUTE]?.StringValue,
    );
    expect(ids.sort()).toEqual(orderIds.map(eventIdOf).sort());
    // Nothing more arrives: no event was published twice.
    expect(await local.receive(shipping.url)).toEqual([]);
  }, 90_000);
});
