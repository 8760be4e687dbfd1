/**
 * The README's outbox chain (`examples/outbox-*.ts`), imported as it is and run against the
 * emulator: the environment `examples/outbox-chain-stack.ts` gives each function is set first,
 * then each module is loaded (its SDK clients created at module scope, as in Lambda). One order
 * goes down the chain, test by test: the order service commits it with its `OrderConfirmed`
 * outbox item (a cancelled order commits neither), the relay publishes what the outbox table's
 * real stream (read with `GetRecords`) carries to a real queue, twice as after a crash before its
 * checkpoint, and the shipping service applies the event once.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Stack } from 'aws-cdk-lib';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  DEAD_LETTER_ATTRIBUTES,
  ENV,
  type LambdaContext,
  type SqsBatchResponse,
  type SqsEvent,
  scopeKey,
} from '../../lambda';
import { fingerprintOf } from '../../lambda/core/fingerprint';
import {
  EVENT_TYPE_ATTRIBUTE,
  IDEMPOTENCY_KEY_ATTRIBUTE,
  OUTBOX_ATTRIBUTES,
  OUTBOX_ENV,
  type OutboxRelay,
  outboxEventId,
} from '../../lambda/outbox';
import type { IdempotentConsumer, Outbox } from '../../lib';
import { localAwsEnv } from '../../scripts/local-aws/harness';
import { readTableStream } from '../../scripts/support/stream-reader';
import { uniqueName } from '../support/aws';
import {
  captureStdout,
  createLocalResources,
  lambdaContext,
  receiveMessages,
  sqsEvent,
  sqsRecord,
  sqsRecordFromMessage,
  type TestQueue,
} from '../support/fixtures';
import { createStreamTable } from '../support/stream-fixtures';

type SqsLambda = (event: SqsEvent, context: LambdaContext) => Promise<SqsBatchResponse>;

const local = createLocalResources();
const admin = local.dynamoDbClient();
const streams = new DynamoDBStreamsClient(local.aws);
const run = randomBytes(3).toString('hex');
const inboxTable = uniqueName('eo-outbox-examples-inbox');
const ordersTable = uniqueName('eo-outbox-examples-orders');
const shipmentsTable = uniqueName('eo-outbox-examples-shipments');
const outboxTable = uniqueName('eo-outbox-examples-outbox');
/** The retention the `Outbox` derives with its defaults: 108 hours (12 h give-up + 4 days on-failure). */
const retentionSeconds = 388_800;
const savedEnv = { ...process.env };
const placed = `o-${run}-placed`;
const cancelled = `o-${run}-cancelled`;
/** The id the order service's `emit` derives for the placed order's event. */
const eventId = outboxEventId(scopeKey('orders', placed), 'OrderConfirmed#0');

let outboxStreamArn = '';
let shippingQueue: TestQueue;
let ordersDeadLetterQueue: TestQueue;
let relayDeadLetterQueue: TestQueue;
let orderHandler: SqsLambda;
let relayHandler: OutboxRelay;
let shippingHandler: SqsLambda;

/** Loads an example with what its construct sets on that one function only (read at module load). */
async function loadAsDeployed<T>(environment: Record<string, string>, load: () => Promise<T>): Promise<T> {
  for (const [name, value] of Object.entries(environment)) vi.stubEnv(name, value);
  try {
    return await load();
  } finally {
    vi.unstubAllEnvs();
  }
}

const outcomesIn = (lines: readonly Record<string, unknown>[]) =>
  lines.filter((line) => line.outcome !== undefined).map(({ outcome, code }) => ({ outcome, code }));

/**
 * What `examples/outbox-chain-stack.ts` gives each function, with this test's tables and queues
 * (the last test checks the names, and the values that are not resources, against the stack).
 */
function deployedEnvironments(): Record<'orders' | 'relay' | 'shipping', Record<string, string>> {
  return {
    orders: {
      [ENV.consumer]: 'orders',
      [ENV.inboxTable]: inboxTable,
      [ENV.deadLetterMode]: 'direct',
      [ENV.deadLetterQueueUrl]: ordersDeadLetterQueue.url,
      ORDERS_TABLE: ordersTable,
      [OUTBOX_ENV.tableName]: outboxTable,
      [OUTBOX_ENV.retentionSeconds]: String(retentionSeconds),
      [OUTBOX_ENV.destinationKind]: 'sqs',
      [OUTBOX_ENV.destinationFifo]: 'false',
    },
    relay: {
      [ENV.consumer]: 'order-events-relay',
      [ENV.deadLetterMode]: 'direct',
      [ENV.deadLetterQueueUrl]: relayDeadLetterQueue.url,
      [OUTBOX_ENV.tableName]: outboxTable,
      [OUTBOX_ENV.destinationKind]: 'sqs',
      [OUTBOX_ENV.destinationQueueUrl]: shippingQueue.url,
    },
    shipping: {
      [ENV.consumer]: 'shipping',
      [ENV.inboxTable]: inboxTable,
      SHIPMENTS_TABLE: shipmentsTable,
    },
  };
}

beforeAll(async () => {
  await Promise.all([inboxTable, ordersTable, shipmentsTable].map((name) => local.createTable(name)));
  outboxStreamArn = await createStreamTable(admin, outboxTable);
  [shippingQueue, ordersDeadLetterQueue, relayDeadLetterQueue] = await Promise.all([
    local.createQueue('eo-outbox-examples-shipping'),
    local.createQueue('eo-outbox-examples-orders-dlq'),
    local.createQueue('eo-outbox-examples-relay-dlq'),
  ]);
  const writer = local.documentClient();
  for (const [pk, status] of [
    [placed, 'PLACED'],
    [cancelled, 'CANCELLED'],
  ]) {
    await writer.send(new PutCommand({ TableName: ordersTable, Item: { pk, status } }));
  }
  // The examples' unconfigured SDK clients reach the local endpoint. The log level is the
  // construct's `logLevel: 'debug'`, so that every outcome (`processed` too) is logged.
  Object.assign(process.env, localAwsEnv(local.aws), { [ENV.logLevel]: 'debug' });
  const environments = deployedEnvironments();
  ({ handler: orderHandler } = await loadAsDeployed(
    environments.orders,
    () => import('../../examples/outbox-order-confirmed'),
  ));
  ({ handler: relayHandler } = await loadAsDeployed(
    environments.relay,
    // The `Outbox` construct's default relay entry: the package's relay handler.
    () => import('../../lambda/outbox/relay-handler'),
  ));
  ({ handler: shippingHandler } = await loadAsDeployed(
    environments.shipping,
    () => import('../../examples/outbox-shipping'),
  ));
});

afterAll(async () => {
  process.env = savedEnv;
  await Promise.allSettled([admin.send(new DeleteTableCommand({ TableName: outboxTable }))]);
  streams.destroy();
  await local.dispose();
});

describe('the README outbox chain on the emulator', () => {
  it('outbox-order-confirmed.ts commits the confirmation with its outbox item, and a cancelled order commits neither', async () => {
    const startedAt = Date.now();
    const paid = sqsRecord(randomUUID(), { orderId: placed, amount: 4200 });
    const refused = sqsRecord(randomUUID(), { orderId: cancelled, amount: 1300 });

    const first = await captureStdout(() => orderHandler(sqsEvent(paid, refused), lambdaContext('orders')));
    // A redelivery of the payment: the inbox record makes it a duplicate, nothing is emitted again.
    const redelivery = await captureStdout(() =>
      orderHandler(sqsEvent({ ...paid, messageId: randomUUID() }), lambdaContext('orders')),
    );

    expect(first.result).toEqual({ batchItemFailures: [] });
    expect(outcomesIn(first.lines)).toEqual([
      { outcome: 'processed', code: undefined },
      { outcome: 'permanent', code: 'BUSINESS_CONDITION_FAILED' },
    ]);
    expect(redelivery.result).toEqual({ batchItemFailures: [] });
    expect(outcomesIn(redelivery.lines)).toEqual([{ outcome: 'duplicate', code: undefined }]);
    expect(await local.readItem(ordersTable, { pk: placed })).toEqual({
      pk: placed,
      status: 'CONFIRMED',
      paid: 4200,
    });
    expect(await local.readItem(ordersTable, { pk: cancelled })).toEqual({
      pk: cancelled,
      status: 'CANCELLED',
    });
    const items = await local.scanItems(outboxTable);
    expect(items).toEqual([
      {
        [OUTBOX_ATTRIBUTES.pk]: eventId,
        [OUTBOX_ATTRIBUTES.type]: 'OrderConfirmed',
        [OUTBOX_ATTRIBUTES.body]: JSON.stringify({ orderId: placed, amount: 4200 }),
        [OUTBOX_ATTRIBUTES.entity]: placed,
        [OUTBOX_ATTRIBUTES.source]: 'orders',
        [OUTBOX_ATTRIBUTES.contentHash]: fingerprintOf([
          'OrderConfirmed',
          JSON.stringify({ orderId: placed, amount: 4200 }),
          placed,
        ]),
        [OUTBOX_ATTRIBUTES.createdAt]: expect.any(Number),
        [OUTBOX_ATTRIBUTES.expiresAt]: expect.any(Number),
      },
    ]);
    // The TTL the construct's `EO_OUTBOX_RETENTION_SECONDS` asks for, from the commit's time.
    const createdAt = items[0]![OUTBOX_ATTRIBUTES.createdAt] as number;
    expect(createdAt).toBeGreaterThanOrEqual(startedAt);
    expect(items[0]![OUTBOX_ATTRIBUTES.expiresAt]).toBe(Math.floor(createdAt / 1000) + retentionSeconds);
    const deadLetters = await receiveMessages(local, ordersDeadLetterQueue.url, 1);
    expect(
      deadLetters.map((message) => ({
        body: message.Body,
        code: message.MessageAttributes?.[DEAD_LETTER_ATTRIBUTES.code]?.StringValue,
      })),
    ).toEqual([{ body: refused.body, code: 'BUSINESS_CONDITION_FAILED' }]);
  });

  it('the shipped relay publishes the stream’s new item with its id, twice when replayed, and outbox-shipping.ts applies it once', async () => {
    const records = await readTableStream(streams, outboxStreamArn);
    expect(records.map((record) => [record.eventName, record.dynamodb.Keys])).toEqual([
      ['INSERT', { [OUTBOX_ATTRIBUTES.pk]: { S: eventId } }],
    ]);

    expect(await relayHandler({ Records: records })).toEqual({ batchItemFailures: [] });
    // The mapping delivers the batch again when the relay crashed before its checkpoint: the
    // event is published a second time, with the same id.
    expect(await relayHandler({ Records: records })).toEqual({ batchItemFailures: [] });

    const published = await receiveMessages(local, shippingQueue.url, 2);
    expect(
      published.map((message) => ({
        body: message.Body,
        idempotencyKey: message.MessageAttributes?.[IDEMPOTENCY_KEY_ATTRIBUTE]?.StringValue,
        type: message.MessageAttributes?.[EVENT_TYPE_ATTRIBUTE]?.StringValue,
      })),
    ).toEqual([
      {
        body: JSON.stringify({ orderId: placed, amount: 4200 }),
        idempotencyKey: eventId,
        type: 'OrderConfirmed',
      },
      {
        body: JSON.stringify({ orderId: placed, amount: 4200 }),
        idempotencyKey: eventId,
        type: 'OrderConfirmed',
      },
    ]);
    expect(await local.queueDepth(relayDeadLetterQueue.url)).toBe(0);

    const shipped = await captureStdout(() =>
      shippingHandler(
        sqsEvent(...published.map((message) => sqsRecordFromMessage(message, 'shipping'))),
        lambdaContext('shipping'),
      ),
    );

    expect(shipped.result).toEqual({ batchItemFailures: [] });
    expect(outcomesIn(shipped.lines)).toEqual([
      { outcome: 'processed', code: undefined },
      { outcome: 'duplicate', code: undefined },
    ]);
    expect(await local.readItem(shipmentsTable, { pk: placed })).toEqual({
      pk: placed,
      status: 'BOOKED',
      parcels: 1,
    });
  });

  it('the shipped relay dead-letters a new item that is not an outbox event, with its reason, and moves on', async () => {
    const writer = local.documentClient();
    const stray = `stray-${run}`;
    await writer.send(new PutCommand({ TableName: outboxTable, Item: { pk: stray, note: 'not an event' } }));
    // The stream from its start: the event already published, then the stray item.
    const stream = await readTableStream(streams, outboxStreamArn);
    expect(stream.map((record) => [record.eventName, record.dynamodb.Keys])).toEqual([
      ['INSERT', { [OUTBOX_ATTRIBUTES.pk]: { S: eventId } }],
      ['INSERT', { [OUTBOX_ATTRIBUTES.pk]: { S: stray } }],
    ]);
    const records = stream.slice(1);

    expect(await relayHandler({ Records: records })).toEqual({ batchItemFailures: [] });

    const deadLetters = await receiveMessages(local, relayDeadLetterQueue.url, 1);
    expect(
      deadLetters.map((message) => ({
        body: message.Body,
        code: message.MessageAttributes?.[DEAD_LETTER_ATTRIBUTES.code]?.StringValue,
        consumer: message.MessageAttributes?.[DEAD_LETTER_ATTRIBUTES.consumer]?.StringValue,
      })),
    ).toEqual([
      {
        body: JSON.stringify({ [OUTBOX_ATTRIBUTES.pk]: { S: stray } }),
        code: 'VALIDATION',
        consumer: 'order-events-relay',
      },
    ]);
    expect(await local.queueDepth(shippingQueue.url)).toBe(2);
  });

  it('outbox-orders-api.ts places an order with its OrderPlaced event once per Idempotency-Key', async () => {
    const { handler } = await loadAsDeployed(
      {
        ORDERS_TABLE: ordersTable,
        [OUTBOX_ENV.tableName]: outboxTable,
        [OUTBOX_ENV.retentionSeconds]: String(retentionSeconds),
      },
      () => import('../../examples/outbox-orders-api'),
    );
    const orderId = `o-${run}-api`;
    const key = `key-${run}`;
    const request = (idempotencyKey: string | undefined, body: unknown) => ({
      headers: idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey },
      body: JSON.stringify(body),
    });
    const placedEventId = outboxEventId(`orders-api#${key}`, 'OrderPlaced#0');
    const answer = (statusCode: number, ids: readonly string[]) => ({
      statusCode,
      body: JSON.stringify({ orderId, eventIds: ids }),
    });

    expect(await handler(request(key, { orderId, amount: 990 }))).toEqual(answer(201, [placedEventId]));
    // The client retries (its answer was lost): nothing is written twice.
    expect(await handler(request(key, { orderId, amount: 990 }))).toEqual(answer(200, [placedEventId]));
    // The key reused for another amount: refused, nothing written.
    expect(await handler(request(key, { orderId, amount: 5 }))).toEqual(answer(422, [placedEventId]));
    // Another key for the same order: the order's condition fails, nothing written.
    const otherEventId = outboxEventId(`orders-api#${key}-2`, 'OrderPlaced#0');
    expect(await handler(request(`${key}-2`, { orderId, amount: 990 }))).toEqual(answer(409, [otherEventId]));
    expect(await handler(request(undefined, { orderId, amount: 990 }))).toEqual({
      statusCode: 400,
      body: 'Expected an Idempotency-Key and a body { orderId, amount }',
    });
    expect(await handler({ headers: { 'idempotency-key': key }, body: 'not json' })).toMatchObject({
      statusCode: 400,
    });

    expect(await local.readItem(ordersTable, { pk: orderId })).toEqual({
      pk: orderId,
      status: 'PLACED',
      amount: 990,
    });
    expect(
      (await local.scanItems(outboxTable))
        .filter((item) => item[OUTBOX_ATTRIBUTES.source] === 'orders-api')
        .map((item) => ({
          pk: item[OUTBOX_ATTRIBUTES.pk],
          type: item[OUTBOX_ATTRIBUTES.type],
          body: item[OUTBOX_ATTRIBUTES.body],
        })),
    ).toEqual([{ pk: placedEventId, type: 'OrderPlaced', body: JSON.stringify({ orderId, amount: 990 }) }]);
  });

  it('outbox-chain-stack.ts gives each function the variables the samples read', async () => {
    // Constructed without bundling: only the functions' settings are read.
    vi.stubEnv('CDK_CONTEXT_JSON', JSON.stringify({ 'aws:cdk:bundling-stacks': [] }));
    const { app } = await import('../../examples/outbox-chain-stack').finally(() => vi.unstubAllEnvs());
    const stack = app.node.findChild('OrderChainStack') as Stack;
    // The function's settings as the template will hold them, without synthesizing the app.
    const variablesOf = (fn: lambda.IFunction) =>
      (stack.resolve((fn.node.defaultChild as lambda.CfnFunction).environment) as { variables: object })
        .variables;
    // Resources are references in the template: their names must be there, with any value.
    const literal = new Set<string>([
      ENV.consumer,
      ENV.deadLetterMode,
      OUTBOX_ENV.retentionSeconds,
      OUTBOX_ENV.destinationKind,
      OUTBOX_ENV.destinationFifo,
    ]);
    const expected = (environment: Record<string, string>) =>
      Object.fromEntries(
        Object.entries(environment).map(([name, value]) => [
          name,
          literal.has(name) ? value : expect.anything(),
        ]),
      );
    const environments = deployedEnvironments();

    expect(variablesOf((stack.node.findChild('Orders') as IdempotentConsumer).handler)).toMatchObject(
      expected(environments.orders),
    );
    expect(variablesOf((stack.node.findChild('OrderEvents') as Outbox).relay)).toMatchObject(
      expected(environments.relay),
    );
    expect(variablesOf((stack.node.findChild('Shipping') as IdempotentConsumer).handler)).toMatchObject(
      expected(environments.shipping),
    );
  });
});
