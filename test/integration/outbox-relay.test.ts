/**
 * The transactional outbox against the emulator over HTTP: atomic mode's `unitOfWork.emit`
 * commits the outbox item with the inbox record and the business writes; the relay publishes
 * what the outbox table's stream (read with `GetRecords`) carries to a real SQS queue; a
 * downstream consumer keyed by `fromAttribute('idempotency-key')` applies each event once.
 */
import { randomBytes } from 'node:crypto';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { Message as QueueMessage } from '@aws-sdk/client-sqs';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSqsHandler, fromAttribute, fromBody, type Message, scopeKey } from '../../lambda';
import { fingerprintOf } from '../../lambda/core/fingerprint';
import { atomic } from '../../lambda/modes/atomic';
import type { UnitOfWork } from '../../lambda/modes/unit-of-work';
import {
  createOutboxRelay,
  IDEMPOTENCY_KEY_ATTRIBUTE,
  MAX_DESTINATION_MESSAGE_BYTES,
  OUTBOX_ATTRIBUTES,
  type OutboxDestination,
  outboxEventId,
  sqsDestination,
} from '../../lambda/outbox';
import type { DynamoDbStreamRecord } from '../../lambda/streams';
import { readTableStream } from '../../scripts/support/stream-reader';
import { uniqueName } from '../support/aws';
import {
  captureLogger,
  createLocalResources,
  lambdaContext,
  sqsEvent,
  sqsRecord,
  sqsRecordFromMessage,
  type TestQueue,
} from '../support/fixtures';
import { createStreamTable } from '../support/stream-fixtures';

interface OrderPlaced {
  readonly orderId: string;
  readonly sku: string;
  readonly note?: string;
}

const local = createLocalResources();
const admin = local.dynamoDbClient();
const client = local.documentClient();
const streams = new DynamoDBStreamsClient(local.aws);
const runId = randomBytes(3).toString('hex');
const inboxTable = uniqueName('eo-outbox-inbox');
const ordersTable = uniqueName('eo-outbox-orders');
const stockTable = uniqueName('eo-outbox-stock');
const shipmentsTable = uniqueName('eo-outbox-shipments');
const outboxTables: string[] = [];
let shippingQueue: TestQueue;

beforeAll(async () => {
  await Promise.all(
    [inboxTable, ordersTable, stockTable, shipmentsTable].map((name) => local.createTable(name)),
  );
  shippingQueue = await local.createQueue('eo-outbox-shipping');
  await client.send(
    new PutCommand({ TableName: stockTable, Item: { pk: `in-stock-${runId}`, available: 100 } }),
  );
  await client.send(
    new PutCommand({ TableName: stockTable, Item: { pk: `sold-out-${runId}`, available: 0 } }),
  );
});

afterAll(async () => {
  await Promise.allSettled(
    outboxTables.map((TableName) => admin.send(new DeleteTableCommand({ TableName }))),
  );
  streams.destroy();
  await local.dispose();
});

async function createOutboxTable(): Promise<{ name: string; streamArn: string }> {
  const name = uniqueName('eo-outbox');
  outboxTables.push(name);
  return { name, streamArn: await createStreamTable(admin, name) };
}

/** The order service: the order row, the stock taken (only if available) and `OrderConfirmed`, in one commit. */
function orderService(outboxTable: string) {
  const logger = captureLogger();
  const handler = createSqsHandler<OrderPlaced>({
    consumer: 'orders',
    client,
    tableName: inboxTable,
    environment: {},
    dedupKey: fromBody('orderId'),
    mode: atomic(
      (message: Message<OrderPlaced>, unitOfWork: UnitOfWork) => {
        const { orderId, sku, note } = message.body;
        unitOfWork.put({ TableName: ordersTable, Item: { pk: orderId, sku, status: 'CONFIRMED' } });
        unitOfWork.update({
          TableName: stockTable,
          Key: { pk: sku },
          UpdateExpression: 'SET available = available - :one',
          ConditionExpression: 'available >= :one',
          ExpressionAttributeValues: { ':one': 1 },
        });
        unitOfWork.emit({ type: 'OrderConfirmed', detail: { orderId, sku, note } }, { entity: orderId });
      },
      { outbox: { tableName: outboxTable } },
    ),
    logger,
    logLevel: 'debug',
    metrics: false,
  });
  const run = (...orders: OrderPlaced[]) =>
    handler(sqsEvent(...orders.map((order) => sqsRecord(`m-${order.orderId}`, order))), lambdaContext());
  const outcomes = () => logger.entries.map(({ outcome, code }) => ({ outcome, code }));
  const reasons = () => logger.entries.map(({ reason }) => reason);
  return { run, outcomes, reasons };
}

/** The shipping service: one shipment per `OrderConfirmed`, keyed by the event id the relay carries. */
function shippingService() {
  const logger = captureLogger();
  const handler = createSqsHandler<{ orderId: string }>({
    consumer: 'shipping',
    client,
    tableName: inboxTable,
    environment: {},
    dedupKey: fromAttribute(IDEMPOTENCY_KEY_ATTRIBUTE),
    mode: atomic((message: Message<{ orderId: string }>, unitOfWork: UnitOfWork) => {
      unitOfWork.update({
        TableName: shipmentsTable,
        Key: { pk: message.body.orderId },
        UpdateExpression: 'SET shipped = if_not_exists(shipped, :zero) + :one',
        ExpressionAttributeValues: { ':zero': 0, ':one': 1 },
      });
    }),
    logger,
    logLevel: 'debug',
    metrics: false,
  });
  const deliver = (messages: readonly QueueMessage[]) =>
    handler(sqsEvent(...messages.map((message) => sqsRecordFromMessage(message))), lambdaContext('shipping'));
  const outcomes = () => logger.entries.map(({ outcome }) => outcome);
  return { deliver, outcomes };
}

/** Receives until `count` messages came (or ten receives), deleting none: each is received once. */
async function receiveAll(queue: TestQueue, count: number): Promise<QueueMessage[]> {
  const received: QueueMessage[] = [];
  for (let attempt = 0; attempt < 10 && received.length < count; attempt++) {
    received.push(...(await local.receive(queue.url)));
  }
  return received;
}

const eventId = (orderId: string) => outboxEventId(scopeKey('orders', orderId), 'OrderConfirmed#0');

describe('the transactional outbox on the emulator', () => {
  it('commits the outbox item with the business writes, and a cancelled transaction (a business condition failing) leaves none', async () => {
    const outbox = await createOutboxTable();
    const orders = orderService(outbox.name);
    const confirmed = { orderId: `o-${runId}-1`, sku: `in-stock-${runId}` };
    const refused = { orderId: `o-${runId}-2`, sku: `sold-out-${runId}` };

    expect(await orders.run(confirmed, refused)).toEqual({
      batchItemFailures: [{ itemIdentifier: `m-${refused.orderId}` }],
    });

    expect(orders.outcomes()).toEqual([
      { outcome: 'processed', code: undefined },
      { outcome: 'permanent', code: 'BUSINESS_CONDITION_FAILED' },
    ]);
    expect(await local.scanItems(outbox.name)).toEqual([
      {
        [OUTBOX_ATTRIBUTES.pk]: eventId(confirmed.orderId),
        [OUTBOX_ATTRIBUTES.type]: 'OrderConfirmed',
        [OUTBOX_ATTRIBUTES.body]: JSON.stringify(confirmed),
        [OUTBOX_ATTRIBUTES.entity]: confirmed.orderId,
        [OUTBOX_ATTRIBUTES.source]: 'orders',
        [OUTBOX_ATTRIBUTES.contentHash]: fingerprintOf([
          'OrderConfirmed',
          JSON.stringify(confirmed),
          confirmed.orderId,
        ]),
        [OUTBOX_ATTRIBUTES.createdAt]: expect.any(Number),
        [OUTBOX_ATTRIBUTES.expiresAt]: expect.any(Number),
      },
    ]);
    expect(await local.readItem(ordersTable, { pk: refused.orderId })).toBeUndefined();
    expect(await local.readItem(stockTable, { pk: refused.sku })).toEqual({ pk: refused.sku, available: 0 });
  });

  it('publishes each event at least once, re-publishes with the same id after a relay crash, and the downstream applies each once', async () => {
    const outbox = await createOutboxTable();
    const first = { orderId: `o-${runId}-3`, sku: `in-stock-${runId}` };
    const second = { orderId: `o-${runId}-4`, sku: `in-stock-${runId}` };
    expect(await orderService(outbox.name).run(first, second)).toEqual({ batchItemFailures: [] });
    const records: DynamoDbStreamRecord[] = await readTableStream(streams, outbox.streamArn);
    expect(records.map((record) => record.eventName)).toEqual(['INSERT', 'INSERT']);

    // The relay crashes after SQS took the first event, before its checkpoint.
    const sqs = sqsDestination({ client: local.sqs, queueUrl: shippingQueue.url });
    const crashing: OutboxDestination = {
      async publish(message) {
        await sqs.publish(message);
        throw new Error('relay crashed after publishing');
      },
    };
    expect(
      await createOutboxRelay({ destination: crashing, logger: captureLogger() })({ Records: records }),
    ).toEqual({
      batchItemFailures: [{ itemIdentifier: records[0]!.dynamodb.SequenceNumber }],
    });
    // The mapping resumes from the checkpoint: here, the stream read again from TRIM_HORIZON.
    expect(
      await createOutboxRelay({ destination: sqs })({
        Records: await readTableStream(streams, outbox.streamArn),
      }),
    ).toEqual({
      batchItemFailures: [],
    });

    const published = await receiveAll(shippingQueue, 3);
    expect(
      published.map((message) => message.MessageAttributes?.[IDEMPOTENCY_KEY_ATTRIBUTE]?.StringValue).sort(),
    ).toEqual([eventId(first.orderId), eventId(first.orderId), eventId(second.orderId)].sort());

    const shipping = shippingService();
    // In the order received: whichever copy of the first event comes first is the one applied.
    expect(await shipping.deliver(published)).toEqual({ batchItemFailures: [] });
    expect(shipping.outcomes().sort()).toEqual(['duplicate', 'processed', 'processed']);
    expect(await local.readItem(shipmentsTable, { pk: first.orderId })).toEqual({
      pk: first.orderId,
      shipped: 1,
    });
    expect(await local.readItem(shipmentsTable, { pk: second.orderId })).toEqual({
      pk: second.orderId,
      shipped: 1,
    });
  });

  it('rejects an event too large for its destination before the commit: nothing is written, the message is dead-lettered', async () => {
    const outbox = await createOutboxTable();
    const orders = orderService(outbox.name);
    const large = {
      orderId: `o-${runId}-5`,
      sku: `in-stock-${runId}`,
      note: 'x'.repeat(MAX_DESTINATION_MESSAGE_BYTES),
    };
    const stockBefore = await local.readItem(stockTable, { pk: large.sku });

    expect(await orders.run(large)).toEqual({
      batchItemFailures: [{ itemIdentifier: `m-${large.orderId}` }],
    });

    expect(orders.outcomes()).toEqual([{ outcome: 'permanent', code: 'ITEM_TOO_LARGE' }]);
    expect(await local.scanItems(outbox.name)).toEqual([]);
    expect(await local.readItem(ordersTable, { pk: large.orderId })).toBeUndefined();
    expect(await local.readItem(stockTable, { pk: large.sku })).toEqual(stockBefore);
    expect(await local.readItem(inboxTable, { pk: scopeKey('orders', large.orderId) })).toBeUndefined();
  });

  it('cancels the whole transaction when the outbox item meets another event under its id: nothing committed, dead-lettered as OUTBOX_COLLISION', async () => {
    const outbox = await createOutboxTable();
    const orders = orderService(outbox.name);
    const order = { orderId: `o-${runId}-6`, sku: `in-stock-${runId}` };
    const id = outboxEventId(scopeKey('orders', order.orderId), 'OrderConfirmed#0');
    const other = { pk: id, eventType: 'SomethingElse', body: '{}' };
    await client.send(new PutCommand({ TableName: outbox.name, Item: other }));
    const stockBefore = await local.readItem(stockTable, { pk: order.sku });

    expect(await orders.run(order)).toEqual({
      batchItemFailures: [{ itemIdentifier: `m-${order.orderId}` }],
    });

    expect(orders.outcomes()).toEqual([{ outcome: 'permanent', code: 'OUTBOX_COLLISION' }]);
    expect(orders.reasons()).toEqual([expect.stringContaining(`outbox put of event \`${id}\``)]);
    expect(await local.scanItems(outbox.name)).toEqual([other]);
    expect(await local.readItem(ordersTable, { pk: order.orderId })).toBeUndefined();
    expect(await local.readItem(stockTable, { pk: order.sku })).toEqual(stockBefore);
    expect(await local.readItem(inboxTable, { pk: scopeKey('orders', order.orderId) })).toBeUndefined();
  });
});
