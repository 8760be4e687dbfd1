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
import { createSqsDeadLetterSender } from '../../lambda/dead-letter/sqs-dead-letter-sender';
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
import { STREAM_DEAD_LETTER_FORMAT } from '../../lambda/streams/stream-dead-letter';
import { readTableStream } from '../../scripts/support/stream-reader';
import { uniqueName } from '../support/aws';
import { createConformingSqsClient } from '../support/aws-limits/sqs';
import {
  captureLogger,
  createLocalResources,
  lambdaContext,
  sqsEvent,
  sqsRecord,
  sqsRecordFromMessage,
  type TestQueue,
} from '../support/fixtures';
import { createStreamTable, recoveredData, streamDeadLetterOf } from '../support/stream-fixtures';

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
  // The messages in the order they were run: a batch's lines are logged as its messages settle
  // (batch commit settles a cancelled transaction's culprit before the others commit again).
  const runOrder: string[] = [];
  const run = (...orders: OrderPlaced[]) => {
    runOrder.push(...orders.map((order) => `m-${order.orderId}`));
    return handler(
      sqsEvent(...orders.map((order) => sqsRecord(`m-${order.orderId}`, order))),
      lambdaContext(),
    );
  };
  const inRunOrder = () =>
    [...logger.entries].sort(
      (a, b) => runOrder.indexOf(String(a.messageId)) - runOrder.indexOf(String(b.messageId)),
    );
  const outcomes = () => inRunOrder().map(({ outcome, code }) => ({ outcome, code }));
  const reasons = () => inRunOrder().map(({ reason }) => reason);
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

  /** Puts outbox items straight into the table (as a writer that checked nothing would). */
  async function putOutboxItems(
    tableName: string,
    items: readonly { readonly id: string; readonly body: string; readonly entity?: string }[],
  ): Promise<void> {
    for (const { id, body, entity } of items) {
      await client.send(
        new PutCommand({
          TableName: tableName,
          Item: {
            [OUTBOX_ATTRIBUTES.pk]: id,
            [OUTBOX_ATTRIBUTES.type]: 'OrderConfirmed',
            [OUTBOX_ATTRIBUTES.body]: body,
            ...(entity === undefined ? {} : { [OUTBOX_ATTRIBUTES.entity]: entity }),
          },
        }),
      );
    }
  }

  const idsOf = (messages: readonly QueueMessage[]) =>
    messages.map((message) => message.MessageAttributes?.[IDEMPOTENCY_KEY_ATTRIBUTE]?.StringValue).sort();

  it('dead-letters the events the destination refuses (a U+FFFF body, an entity no FIFO group id may be) with their reason and whole record, and publishes the events behind them', async () => {
    const outbox = await createOutboxTable();
    const standard = await local.createQueue('eo-outbox-refusing');
    const fifo = await local.createQueue('eo-outbox-refusing', { FifoQueue: 'true' });
    const deadLetterQueue = await local.createQueue('eo-outbox-relay-dlq');
    const [ok1, badBody, badEntity, ok4] = [1, 2, 3, 4].map((n) => `e-${runId}-refusal-${n}`) as [
      string,
      string,
      string,
      string,
    ];
    await putOutboxItems(outbox.name, [
      { id: ok1, body: '{"orderId":"o-1"}', entity: 'order-1' },
      // SQS refuses U+FFFF (the emulator too).
      { id: badBody, body: '{"note":"\uffff"}', entity: 'order-2' },
      // The emulator accepts any group id; the conformance layer refuses a space, as AWS does.
      { id: badEntity, body: '{"orderId":"o-3"}', entity: 'order 3' },
      { id: ok4, body: '{"orderId":"o-4"}', entity: 'order-4' },
    ]);
    const records = await readTableStream(streams, outbox.streamArn);
    const sqs = createConformingSqsClient(local.sqs);
    const deadLetter = createSqsDeadLetterSender({ client: local.sqs, queueUrl: deadLetterQueue.url });
    const relayTo = (queueUrl: string) =>
      createOutboxRelay({
        destination: sqsDestination({ client: sqs, queueUrl }),
        deadLetter,
        logger: captureLogger(),
        environment: {},
      });

    expect(await relayTo(standard.url)({ Records: records }, lambdaContext('relay'))).toEqual({
      batchItemFailures: [],
    });
    expect(await relayTo(fifo.url)({ Records: records }, lambdaContext('relay'))).toEqual({
      batchItemFailures: [],
    });

    expect(idsOf(await receiveAll(standard, 3))).toEqual([ok1, badEntity, ok4].sort());
    expect(idsOf(await receiveAll(fifo, 2))).toEqual([ok1, ok4].sort());
    const deadLetters = await receiveAll(deadLetterQueue, 3);
    const refusalOf = (message: QueueMessage) => {
      const attribute = (name: string) => message.MessageAttributes?.[name]?.StringValue;
      return [
        attribute('eo-dedup-key'),
        attribute('eo-code'),
        /\((\w+): /.exec(attribute('eo-reason') ?? '')?.[1],
      ];
    };
    expect(deadLetters.map(refusalOf).sort()).toEqual(
      [
        [badBody, 'VALIDATION', 'InvalidMessageContents'],
        [badBody, 'VALIDATION', 'InvalidMessageContents'],
        [badEntity, 'VALIDATION', 'InvalidParameterValue'],
      ].sort(),
    );
    for (const message of deadLetters) {
      const envelope = streamDeadLetterOf({ body: message.Body! } as never);
      const index = records.findIndex(
        (record) => record.dynamodb.SequenceNumber === envelope.source.sequenceNumber,
      );
      expect(envelope.format).toBe(STREAM_DEAD_LETTER_FORMAT);
      expect(envelope.source).toMatchObject({
        eventSourceArn: outbox.streamArn,
        keys: records[index]!.dynamodb.Keys,
      });
      // The whole record, the refused body included.
      expect(JSON.parse(recoveredData(envelope)!.toString('utf8'))).toEqual(records[index]!.dynamodb);
    }
  });

  it('stops at its deadline margin and returns the checkpoint; resumed there, it publishes every event once', async () => {
    const outbox = await createOutboxTable();
    const queue = await local.createQueue('eo-outbox-deadline');
    const ids = [1, 2, 3].map((n) => `e-${runId}-deadline-${n}`);
    await putOutboxItems(
      outbox.name,
      ids.map((id) => ({ id, body: `{"id":"${id}"}` })),
    );
    const records = await readTableStream(streams, outbox.streamArn);
    const clock = { now: 0 };
    const sqs = sqsDestination({ client: createConformingSqsClient(local.sqs), queueUrl: queue.url });
    // Each publish takes a second of the invocation's time.
    const slow: OutboxDestination = {
      async publish(message) {
        await sqs.publish(message);
        clock.now += 1_000;
      },
    };
    const relay = createOutboxRelay({ destination: slow, logger: captureLogger(), clock: () => clock.now });
    const end = 3_500;
    const context = { getRemainingTimeInMillis: () => end - clock.now };

    // 3.5 s left and a 2 s margin (capped at half: 1.75 s): records start during the first 1.75 s.
    const response = await relay({ Records: records }, context);
    expect(response).toEqual({
      batchItemFailures: [{ itemIdentifier: records[2]!.dynamodb.SequenceNumber }],
    });

    // The mapping resumes at the checkpoint.
    const checkpoint = records.findIndex(
      (record) => record.dynamodb.SequenceNumber === response.batchItemFailures[0]!.itemIdentifier,
    );
    expect(await relay({ Records: records.slice(checkpoint) }, lambdaContext('relay'))).toEqual({
      batchItemFailures: [],
    });
    expect(idsOf(await receiveAll(queue, 3))).toEqual(ids);
    expect(await local.receive(queue.url)).toEqual([]);
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
