/**
 * The relay's EventBridge and SNS destinations on the emulator over HTTP, configured the way the
 * `Outbox` construct configures the shipped relay (its `EO_*` environment, the SDK clients the
 * relay creates itself): an event written with the standalone writer, read from the outbox
 * table's real stream (`GetRecords`), published twice (a relay that crashed before its
 * checkpoint), and applied once by a real `createSqsHandler` consumer behind a rule (EventBridge,
 * keyed on the envelope) or a raw-delivery subscription (SNS, keyed on the attribute). A FIFO
 * topic drops the second publish itself.
 */
import { randomBytes } from 'node:crypto';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { CreateTopicCommand, DeleteTopicCommand, SNSClient, SubscribeCommand } from '@aws-sdk/client-sns';
import type { Message as QueueMessage } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSqsHandler, fromOutboxEnvelope, type KeySource, type Message, scopeKey } from '../../lambda';
import { ENV, OUTBOX_ENV } from '../../lambda/core/contract';
import { atomic } from '../../lambda/modes/atomic';
import {
  createOutboxRelay,
  createOutboxWriter,
  IDEMPOTENCY_KEY_ATTRIBUTE,
  type OutboxDestinationKind,
  outboxEventId,
} from '../../lambda/outbox';
import { readTableStream } from '../../scripts/support/stream-reader';
import { uniqueName } from '../support/aws';
import { createBusToQueue } from '../support/event-bus';
import {
  captureLogger,
  createLocalResources,
  lambdaContext,
  sqsEvent,
  sqsRecordFromMessage,
  type TestQueue,
} from '../support/fixtures';
import { createStreamTable } from '../support/stream-fixtures';
import { subscribeQueueRaw } from '../support/topic-to-queue';

const local = createLocalResources();
const admin = local.dynamoDbClient();
const client = local.documentClient();
const streams = new DynamoDBStreamsClient(local.aws);
const eventBridge = new EventBridgeClient(local.aws);
const sns = new SNSClient(local.aws);
const runId = randomBytes(3).toString('hex');
const envelope = fromOutboxEnvelope();
const inboxTable = uniqueName('eo-dest-inbox');
const shipmentsTable = uniqueName('eo-dest-shipments');
const outboxTables: string[] = [];
const cleanups: (() => Promise<unknown>)[] = [];

const RELAY = 'order-events-relay';
const EVENT_SOURCE = 'orders';

beforeAll(async () => {
  await Promise.all([inboxTable, shipmentsTable].map((name) => local.createTable(name)));
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await Promise.allSettled(
    outboxTables.map((TableName) => admin.send(new DeleteTableCommand({ TableName }))),
  );
  streams.destroy();
  eventBridge.destroy();
  sns.destroy();
  await local.dispose();
});

/** An outbox table with its stream, and a writer sizing events for `kind`. */
async function createOutbox(kind: OutboxDestinationKind) {
  const name = uniqueName('eo-dest-outbox');
  outboxTables.push(name);
  const streamArn = await createStreamTable(admin, name);
  const writer = createOutboxWriter({
    client,
    tableName: name,
    producer: 'orders-api',
    destinationKind: kind,
    ...(kind === 'eventbridge' ? { eventSource: EVENT_SOURCE } : {}),
  });
  return { name, streamArn, writer };
}

/**
 * Writes one `OrderConfirmed` for `orderId`, then runs the relay twice over the stream from
 * `TRIM_HORIZON` (the second run is what a crash after publishing, before the checkpoint, gives),
 * with `environment` as the construct would set it. Returns the event id.
 */
async function publishTwice(
  outbox: Awaited<ReturnType<typeof createOutbox>>,
  orderId: string,
  environment: Readonly<Record<string, string>>,
): Promise<string> {
  const written = await outbox.writer.write(
    [{ type: 'OrderConfirmed', detail: { orderId }, entity: orderId }],
    [],
    `request-${orderId}`,
  );
  expect(written.kind).toBe('written');
  const logger = captureLogger();
  const relay = createOutboxRelay({ environment, metrics: false, logger });
  for (let run = 0; run < 2; run++) {
    const records = await readTableStream(streams, outbox.streamArn);
    expect(records.map((record) => record.eventName)).toEqual(['INSERT']);
    expect({ response: await relay({ Records: records }), logs: logger.entries }).toEqual({
      response: { batchItemFailures: [] },
      logs: [],
    });
  }
  return written.ids[0]!;
}

/** Receives until `count` messages came (or eight receives), deleting none. */
async function receiveAll(queue: TestQueue, count: number): Promise<QueueMessage[]> {
  const received: QueueMessage[] = [];
  for (let attempt = 0; attempt < 8 && received.length < count; attempt++) {
    received.push(...(await local.receive(queue.url)));
  }
  return received;
}

/** The shipping service: one shipment per `OrderConfirmed`, keyed on the event id by `dedupKey`. */
function shippingService<TBody>(
  consumer: string,
  dedupKey: KeySource,
  orderIdOf: (body: TBody) => string,
  fingerprint?: (message: Message<TBody>) => unknown,
) {
  const logger = captureLogger();
  const handler = createSqsHandler<TBody>({
    consumer,
    client,
    tableName: inboxTable,
    environment: {},
    dedupKey,
    ...(fingerprint === undefined ? {} : { fingerprint }),
    mode: atomic((message, unitOfWork) => {
      unitOfWork.update({
        TableName: shipmentsTable,
        Key: { pk: orderIdOf(message.body) },
        UpdateExpression: 'SET shipped = if_not_exists(shipped, :zero) + :one',
        ExpressionAttributeValues: { ':zero': 0, ':one': 1 },
      });
    }),
    logger,
    logLevel: 'debug',
    metrics: false,
  });
  const deliver = (messages: readonly QueueMessage[]) =>
    handler(sqsEvent(...messages.map((message) => sqsRecordFromMessage(message))), lambdaContext(consumer));
  const outcomes = () => logger.entries.map(({ outcome }) => outcome);
  return { deliver, outcomes };
}

/**
 * Delivers `received` (both publishes of one event) to a shipping service keyed by
 * `fromOutboxEnvelope()`: the first is processed, the copy is a duplicate, one shipment.
 */
async function expectAppliedOnce<TBody>(
  consumer: string,
  received: readonly QueueMessage[],
  orderIdOf: (body: TBody) => string,
  orderId: string,
): Promise<void> {
  const shipping = shippingService(consumer, envelope.dedupKey, orderIdOf, envelope.fingerprint);
  expect(await shipping.deliver(received)).toEqual({ batchItemFailures: [] });
  expect(shipping.outcomes()).toEqual(['processed', 'duplicate']);
  expect(await local.readItem(shipmentsTable, { pk: orderId })).toEqual({ pk: orderId, shipped: 1 });
}

/**
 * A standard topic with a queue subscribed (`attributes`: the subscription's), and one event
 * published to it twice. Returns the queue, the event id and its order id.
 */
async function publishTwiceToTopic(name: string, attributes: Record<string, string>) {
  const { TopicArn } = await sns.send(new CreateTopicCommand({ Name: uniqueName('eo-dest-topic') }));
  cleanups.push(() => sns.send(new DeleteTopicCommand({ TopicArn })));
  const queue = await local.createQueue(`eo-dest-${name}`);
  await sns.send(
    new SubscribeCommand({ TopicArn, Protocol: 'sqs', Endpoint: queue.arn, Attributes: attributes }),
  );
  const outbox = await createOutbox('sns');
  const orderId = `o-${runId}-${name}`;
  const id = await publishTwice(outbox, orderId, {
    [OUTBOX_ENV.destinationKind]: 'sns',
    [OUTBOX_ENV.destinationArn]: TopicArn!,
    [OUTBOX_ENV.destinationFifo]: 'false',
    [ENV.consumer]: RELAY,
  });
  return { queue, id, orderId };
}

describe('the relay publishing to EventBridge and SNS on the emulator', () => {
  it('puts the event on the bus with its id in the envelope; a rule delivers both publishes to a queue, and a consumer keyed on the envelope applies it once', async () => {
    const queue = await local.createQueue('eo-dest-eb');
    const bus = await createBusToQueue(
      eventBridge,
      'eo-dest-bus',
      { source: [EVENT_SOURCE], 'detail-type': ['OrderConfirmed'] },
      queue.arn,
    );
    cleanups.push(() => bus.remove());
    const outbox = await createOutbox('eventbridge');
    const orderId = `o-${runId}-eb`;

    const id = await publishTwice(outbox, orderId, {
      [OUTBOX_ENV.destinationKind]: 'eventbridge',
      [OUTBOX_ENV.destinationArn]: bus.busArn,
      [OUTBOX_ENV.destinationFifo]: 'false',
      [OUTBOX_ENV.eventSource]: EVENT_SOURCE,
      [ENV.consumer]: RELAY,
    });

    expect(id).toBe(outboxEventId(scopeKey('orders-api', `request-${orderId}`), 'OrderConfirmed#0'));
    const received = await receiveAll(queue, 2);
    expect(received.map((message) => JSON.parse(message.Body!))).toEqual([
      expect.objectContaining({
        source: EVENT_SOURCE,
        'detail-type': 'OrderConfirmed',
        detail: { metadata: { [IDEMPOTENCY_KEY_ATTRIBUTE]: id, type: 'OrderConfirmed' }, data: { orderId } },
      }),
      expect.objectContaining({
        detail: { metadata: { [IDEMPOTENCY_KEY_ATTRIBUTE]: id, type: 'OrderConfirmed' }, data: { orderId } },
      }),
    ]);

    // EventBridge gives each put its own `id` and `time`: the envelope fingerprints the detail.
    await expectAppliedOnce(
      'shipping-eb',
      received,
      (body: { detail: { data: { orderId: string } } }) => body.detail.data.orderId,
      orderId,
    );
  });

  it('publishes to a topic with the id as a message attribute; a raw-delivery subscription delivers both publishes, and a consumer keyed on the attribute applies it once', async () => {
    const { queue, id, orderId } = await publishTwiceToTopic('sns', { RawMessageDelivery: 'true' });

    const received = await receiveAll(queue, 2);
    expect(received.map((message) => message.Body)).toEqual([
      JSON.stringify({ orderId }),
      JSON.stringify({ orderId }),
    ]);
    expect(received.map((message) => message.MessageAttributes)).toEqual([
      {
        [IDEMPOTENCY_KEY_ATTRIBUTE]: { DataType: 'String', StringValue: id },
        'eo-event-type': { DataType: 'String', StringValue: 'OrderConfirmed' },
      },
      {
        [IDEMPOTENCY_KEY_ATTRIBUTE]: { DataType: 'String', StringValue: id },
        'eo-event-type': { DataType: 'String', StringValue: 'OrderConfirmed' },
      },
    ]);

    await expectAppliedOnce('shipping-sns', received, (body: { orderId: string }) => body.orderId, orderId);
  });

  it('without raw delivery, delivers SNS notifications that differ per publish; a consumer keyed on the envelope takes the copy as a duplicate, not a mismatch', async () => {
    const { queue, id, orderId } = await publishTwiceToTopic('sns-envelope', {});

    const received = await receiveAll(queue, 2);
    const notifications = received.map((message) => JSON.parse(message.Body!));
    expect(notifications).toEqual([
      expect.objectContaining({
        Type: 'Notification',
        Message: JSON.stringify({ orderId }),
        MessageAttributes: expect.objectContaining({
          [IDEMPOTENCY_KEY_ATTRIBUTE]: { Type: 'String', Value: id },
        }),
      }),
      expect.objectContaining({ Message: JSON.stringify({ orderId }) }),
    ]);
    expect(notifications[0].MessageId).not.toBe(notifications[1].MessageId);

    await expectAppliedOnce(
      'shipping-sns-envelope',
      received,
      (body: { Message: string }) => (JSON.parse(body.Message) as { orderId: string }).orderId,
      orderId,
    );
  });

  it('on a FIFO topic, deduplicates the second publish by the event id and groups by the entity', async () => {
    const { TopicArn } = await sns.send(
      new CreateTopicCommand({
        Name: `${uniqueName('eo-dest-topic')}.fifo`,
        Attributes: { FifoTopic: 'true' },
      }),
    );
    cleanups.push(() => sns.send(new DeleteTopicCommand({ TopicArn })));
    const queue = await local.createQueue('eo-dest-sns-fifo', { FifoQueue: 'true' });
    await subscribeQueueRaw(sns, TopicArn!, queue.arn);
    const outbox = await createOutbox('sns');
    const orderId = `o-${runId}-fifo`;

    const id = await publishTwice(outbox, orderId, {
      [OUTBOX_ENV.destinationKind]: 'sns',
      [OUTBOX_ENV.destinationArn]: TopicArn!,
      [OUTBOX_ENV.destinationFifo]: 'true',
      [ENV.consumer]: RELAY,
    });

    // A FIFO queue delivers one message of a group at a time: its depth tells how many came.
    expect(await local.queueDepth(queue.url)).toBe(1);
    const received = await receiveAll(queue, 1);
    expect(
      received.map((message) => ({
        body: message.Body,
        key: message.MessageAttributes?.[IDEMPOTENCY_KEY_ATTRIBUTE]?.StringValue,
        group: message.Attributes?.MessageGroupId,
        deduplicationId: message.Attributes?.MessageDeduplicationId,
      })),
    ).toEqual([{ body: JSON.stringify({ orderId }), key: id, group: orderId, deduplicationId: id }]);
  });
});
