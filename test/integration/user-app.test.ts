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
 * - A chain (`test/fixtures/user-chain-app/`, handlers importing only `effectively-once`,
 *   `effectively-once/outbox` and `effectively-once/streams`): an order service in atomic mode
 *   emitting `OrderConfirmed` through an `Outbox` whose relay is the package's own (no
 *   `relayEntry`), a shipping service keyed on the relay's `idempotency-key`, and an
 *   `IdempotentStreamConsumer` keeping a read model of the orders table's stream. It sends orders
 *   with a resend and a poison message, checks every table, sends shipping a second copy of an
 *   event, rewrites and removes outbox items, and checks what each construct configured reached
 *   its function.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { SendMessageBatchCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { DeleteCommand, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expiresAt } from '../../lambda/core/time';
import { EVENT_TYPE_ATTRIBUTE, IDEMPOTENCY_KEY_ATTRIBUTE, outboxEventId } from '../../lambda/outbox';
import { projectRoot } from '../../scripts/local-aws/harness';
import { isAlive } from '../support/child-process';
import { waitFor } from '../support/fixtures';
import { expectSuccess, LocalUserApp, packTarball } from '../support/user-app';

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

describe("the README quickstart: a user's own CDK app, deployed locally with the installed package", () => {
  const CONSUMER = 'order-totals';
  const RECORD_TTL_SECONDS = 3 * 24 * 3600;
  const app = new LocalUserApp(work, {
    source: join(root, 'examples', 'my-app'),
    name: 'my-app',
    cdkApp: 'bin/my-app.ts',
    stack: 'MyAppStack',
  });

  beforeAll(() => app.install(tarball), 120_000);
  // Whatever failed above, never leave the stack or the emulator behind.
  afterAll(() => app.tearDown(), 60_000);

  it('starts the emulator and deploys the app with `local up` and `local deploy -c local=true`', async () => {
    expect(relative(root, app.dir).startsWith('..')).toBe(true);
    const up = await app.up();
    expect(up.stdout).toBe(
      `export AWS_ENDPOINT_URL=${app.emulator?.endpoint} AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test\n`,
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
  }, 150_000);

  it('counts a resent order once, dead-letters the poison order with its reason, and keeps records for the recordTtl', async () => {
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

  it('starts the emulator and deploys the chain with `local up` and `local deploy -c local=true`', async () => {
    expect(relative(root, app.dir).startsWith('..')).toBe(true);
    await app.up();
    await app.deploy();
    expect(Object.keys(app.outputs).sort()).toEqual([
      'InboxTableName',
      'OrdersDeadLetterQueueUrl',
      'OrdersLogGroupName',
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
