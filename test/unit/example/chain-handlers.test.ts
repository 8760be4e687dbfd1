import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { IDEMPOTENCY_KEY_ATTRIBUTE, OUTBOX_ATTRIBUTES } from '../../../lambda/core/contract';
import { scopeKey } from '../../../lambda/core/dedup-key';
import { type OutboxDestination, outboxEventId } from '../../../lambda/outbox';
import { createSqsBatchHandler } from '../../../lambda/sqs/sqs-handler';
import type { DynamoDbStreamEvent } from '../../../lambda/streams';
import {
  captureLogger,
  captureMetrics,
  counts,
  manualClock,
  sqsEvent,
  sqsRecord,
} from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';

const environment = {
  EO_INBOX_TABLE: 'inbox',
  EO_CONSUMER: 'order-projector',
  EO_TTL_SECONDS: '86400',
  ORDERS_TABLE: 'Orders',
  SHIPMENTS_TABLE: 'Shipments',
  EO_OUTBOX_TABLE_NAME: 'Outbox',
  EO_OUTBOX_RETENTION_SECONDS: '216000',
  EO_OUTBOX_DESTINATION_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/shipments',
  EO_DEAD_LETTER_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/relay-dlq',
  AWS_REGION: 'us-east-1',
};

beforeEach(() => {
  for (const [name, value] of Object.entries(environment)) vi.stubEnv(name, value);
});

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('order projector: OrderConfirmed through the outbox', () => {
  async function setup() {
    const { orderProjectorOptions } = await import('../../../lambda/example/order-projector');
    const store = createMemoryStore({ keys: { Orders: ['pk', 'sk'] } });
    const metrics = captureMetrics();
    const processBatch = createSqsBatchHandler({
      consumer: 'order-projector',
      ttlSeconds: 86_400,
      store,
      clock: manualClock(),
      logger: captureLogger(),
      metrics,
      ...orderProjectorOptions('Orders', { tableName: 'Outbox', retentionSeconds: 216_000 }),
    });
    return { store, metrics, processBatch };
  }

  const placed = { orderId: 'o-1', status: 'PLACED', amount: 1250, currency: 'EUR' };
  const paid = { ...placed, status: 'PAID', occurredAt: '2026-01-01T10:05:00Z', eventId: 'e-2' };
  const shipped = { ...placed, status: 'SHIPPED' };
  const paidEventId = outboxEventId(scopeKey('order-projector', 'o-1:PAID'), 'OrderConfirmed#0');

  it('emits one OrderConfirmed, with the id derived from the PAID event’s scoped dedup key, and nothing for other statuses', async () => {
    const { store, processBatch } = await setup();

    await processBatch(
      sqsEvent(
        sqsRecord('m-1', placed, { groupId: 'o-1' }),
        sqsRecord('m-2', paid, { groupId: 'o-1' }),
        sqsRecord('m-3', shipped, { groupId: 'o-1' }),
      ),
    );

    const items = store.items('Outbox');
    expect(items.map((item) => item[OUTBOX_ATTRIBUTES.pk])).toEqual([paidEventId]);
    expect(items[0]).toMatchObject({
      [OUTBOX_ATTRIBUTES.type]: 'OrderConfirmed',
      [OUTBOX_ATTRIBUTES.entity]: 'o-1',
      [OUTBOX_ATTRIBUTES.source]: 'order-projector',
    });
    expect(JSON.parse(String(items[0]?.[OUTBOX_ATTRIBUTES.body]))).toEqual({
      orderId: 'o-1',
      amount: 1250,
      currency: 'EUR',
      confirmedAt: '2026-01-01T10:05:00Z',
    });
  });

  it('emits nothing again for a resend of the PAID event with a fresh event id', async () => {
    const { store, metrics, processBatch } = await setup();
    await processBatch(sqsEvent(sqsRecord('m-1', paid, { groupId: 'o-1' })));
    const items = store.items('Outbox');

    await processBatch(sqsEvent(sqsRecord('m-2', { ...paid, eventId: 'e-9' }, { groupId: 'o-1' })));

    expect(metrics.published[1]?.counts).toEqual(counts({ duplicate: 1 }));
    expect(store.items('Outbox')).toEqual(items);
  });

  it('fails the cold start without the outbox’s writer environment, naming the variable', async () => {
    const { orderOutboxOf } = await import('../../../lambda/example/order-projector');
    expect(orderOutboxOf(environment)).toEqual({ tableName: 'Outbox', retentionSeconds: 216_000 });
    expect(() => orderOutboxOf({ ...environment, EO_OUTBOX_TABLE_NAME: undefined })).toThrow(
      'Expected environment variable `EO_OUTBOX_TABLE_NAME` to be set, got `undefined`',
    );
    expect(() => orderOutboxOf({ ...environment, EO_OUTBOX_RETENTION_SECONDS: '-5' })).toThrow(
      'Expected environment variable `EO_OUTBOX_RETENTION_SECONDS` to be a positive integer, got `-5`',
    );
  });
});

describe('shipment scheduler', () => {
  async function setup() {
    const { shipmentSchedulerOptions } = await import('../../../lambda/example/shipment-scheduler');
    const store = createMemoryStore();
    const metrics = captureMetrics();
    const processBatch = createSqsBatchHandler({
      consumer: 'shipment-scheduler',
      ttlSeconds: 86_400,
      store,
      clock: manualClock(),
      logger: captureLogger(),
      metrics,
      ...shipmentSchedulerOptions('Shipments'),
    });
    return { store, metrics, processBatch };
  }

  const confirmed = { orderId: 'o-1', amount: 1250, currency: 'EUR', confirmedAt: '2026-01-01T10:05:00Z' };
  const published = (messageId: string, eventId: string) =>
    sqsRecord(messageId, confirmed, { attributes: { [IDEMPOTENCY_KEY_ATTRIBUTE]: eventId } });

  it('writes one Shipments item per event, and acknowledges a re-publish with the same idempotency-key as a duplicate', async () => {
    const { store, metrics, processBatch } = await setup();

    expect(await processBatch(sqsEvent(published('m-1', 'evt-a')))).toEqual({ batchItemFailures: [] });
    expect(await processBatch(sqsEvent(published('m-2', 'evt-a')))).toEqual({ batchItemFailures: [] });

    expect(metrics.published.map((entry) => entry.counts)).toEqual([
      counts({ processed: 1 }),
      counts({ duplicate: 1 }),
    ]);
    expect(store.items('Shipments')).toEqual([
      expect.objectContaining({
        pk: 'SHIPMENT#o-1',
        orderId: 'o-1',
        amount: 1250,
        currency: 'EUR',
        confirmedAt: '2026-01-01T10:05:00Z',
        status: 'SCHEDULED',
        eventId: 'evt-a',
      }),
    ]);
  });

  it('dead-letters an event without the idempotency-key attribute, or with an invalid detail', async () => {
    const { store, metrics, processBatch } = await setup();

    const response = await processBatch(
      sqsEvent(
        sqsRecord('m-1', confirmed),
        sqsRecord('m-2', { orderId: 'o-2' }, { attributes: { [IDEMPOTENCY_KEY_ATTRIBUTE]: 'evt-b' } }),
      ),
    );

    expect(response.batchItemFailures.map((failure) => failure.itemIdentifier)).toEqual(['m-1', 'm-2']);
    expect(metrics.published[0]?.counts).toEqual(counts({ permanent: 2 }));
    expect(store.items('Shipments')).toEqual([]);
  });
});

describe('order events relay: the crash once after a publish', () => {
  /** A DynamoDB client holding the marker item, with an optional lost response on the first put. */
  function markerClient(options: { loseFirstResponse?: boolean } = {}) {
    let marker: Record<string, { S?: string; N?: string }> | undefined;
    let puts = 0;
    const client = {
      puts: () => puts,
      send: vi.fn(async (command: { input: { Item: Record<string, { S?: string; N?: string }> } }) => {
        puts += 1;
        if (marker !== undefined) {
          throw Object.assign(new Error('The conditional request failed'), {
            name: 'ConditionalCheckFailedException',
            Item: marker,
          });
        }
        marker = command.input.Item;
        if (options.loseFirstResponse && puts === 1) {
          throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError' });
        }
        return {};
      }),
    };
    return { client, marker: () => marker };
  }

  it('claims the crash exactly once across instances, with one conditional put of the marker item', async () => {
    const { createCrashOnce, CRASH_MARKER_KEY } = await import('../../../lambda/example/order-events-relay');
    const { client, marker } = markerClient();
    let token = 0;
    const first = createCrashOnce({
      client,
      tableName: 'RelayCrashes',
      now: () => 1000,
      token: () => `t-${++token}`,
    });
    const coldStart = createCrashOnce({ client, tableName: 'RelayCrashes', token: () => `t-${++token}` });

    expect(await first.claim('evt-a')).toBe(true);
    expect(await first.claim('evt-b')).toBe(false);
    expect(await coldStart.claim('evt-a')).toBe(false);
    expect(await coldStart.claim('evt-c')).toBe(false);

    expect(marker()).toEqual({
      pk: { S: CRASH_MARKER_KEY },
      eventId: { S: 'evt-a' },
      claim: { S: 't-1' },
      crashedAt: { N: '1000' },
    });
    // An instance that found the marker stops asking.
    expect(client.send).toHaveBeenCalledTimes(2);
    expect(client.send.mock.calls[0]?.[0]).toMatchObject({
      input: {
        TableName: 'RelayCrashes',
        ConditionExpression: 'attribute_not_exists(#pk)',
        ExpressionAttributeNames: { '#pk': 'pk' },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    });
  });

  it('still crashes once when the put was applied but its response lost, and the retry finds its own claim', async () => {
    const { createCrashOnce } = await import('../../../lambda/example/order-events-relay');
    const { client } = markerClient({ loseFirstResponse: true });
    const once = createCrashOnce({ client, tableName: 'RelayCrashes', token: () => 'same-claim' });

    await expect(once.claim('evt-a')).rejects.toThrow('socket hang up');
    // The caller's retry of the same claim (as the SDK retries a request) meets the condition.
    const retried = createCrashOnce({ client, tableName: 'RelayCrashes', token: () => 'same-claim' });
    expect(await retried.claim('evt-a')).toBe(true);
    const other = createCrashOnce({ client, tableName: 'RelayCrashes', token: () => 'another-claim' });
    expect(await other.claim('evt-a')).toBe(false);
  });

  it('throws from the handler after the first accepted publish, so the batch comes again and that event is published twice with the same id', async () => {
    const { createOutboxRelay } = await import('../../../lambda/outbox');
    const { createCrashOnce, crashOnceAfterPublish, crashingRelay } = await import(
      '../../../lambda/example/order-events-relay'
    );
    const accepted: string[] = [];
    const destination: OutboxDestination = { publish: async (published) => void accepted.push(published.id) };
    const logger = captureLogger();
    const signal = { crash: undefined };
    const { client } = markerClient();
    const relay = crashingRelay(
      createOutboxRelay({
        destination: crashOnceAfterPublish(destination, {
          relayName: 'order-events-relay',
          logger,
          signal,
          crashOnce: createCrashOnce({ client, tableName: 'RelayCrashes' }),
        }),
        name: 'order-events-relay',
        // The stubbed environment is the order projector's (`EO_CONSUMER` order-projector).
        environment: {},
        logger,
      }),
      signal,
    );
    const event = outboxStreamEvent(['evt-a', 'evt-b']);

    await expect(relay(event)).rejects.toMatchObject({
      name: 'InjectedCrash',
      code: 'INJECTED_CRASH',
      eventId: 'evt-a',
    });
    expect(await relay(event)).toEqual({ batchItemFailures: [] });

    expect(accepted).toEqual(['evt-a', 'evt-a', 'evt-b']);
    expect(
      logger.entries.map(({ level, message, eventId, code }) => ({ level, message, eventId, code })),
    ).toEqual([
      { level: 'info', message: 'Outbox relay: published', eventId: 'evt-a', code: undefined },
      { level: 'warn', message: 'Outbox relay: publish failed', eventId: 'evt-a', code: 'INJECTED_CRASH' },
      { level: 'info', message: 'Outbox relay: published', eventId: 'evt-a', code: undefined },
      { level: 'info', message: 'Outbox relay: published', eventId: 'evt-b', code: undefined },
    ]);
  });

  it('never crashes when the crash cannot be claimed, and publishes on', async () => {
    const { crashOnceAfterPublish, crashingRelay } = await import(
      '../../../lambda/example/order-events-relay'
    );
    const { createOutboxRelay } = await import('../../../lambda/outbox');
    const accepted: string[] = [];
    const logger = captureLogger();
    const signal = { crash: undefined };
    const relay = crashingRelay(
      createOutboxRelay({
        destination: crashOnceAfterPublish(
          { publish: async (published) => void accepted.push(published.id) },
          {
            relayName: 'order-events-relay',
            logger,
            signal,
            crashOnce: {
              claim: async () => Promise.reject(Object.assign(new Error('down'), { name: 'Throttled' })),
            },
          },
        ),
        logger,
      }),
      signal,
    );

    expect(await relay(outboxStreamEvent(['evt-a', 'evt-b']))).toEqual({ batchItemFailures: [] });
    expect(accepted).toEqual(['evt-a', 'evt-b']);
    expect(logger.entries.filter((entry) => entry.level === 'warn')).toEqual([
      expect.objectContaining({
        message: 'Outbox relay: the crash could not be claimed; no crash',
        errorName: 'Throttled',
      }),
      expect.objectContaining({
        message: 'Outbox relay: the crash could not be claimed; no crash',
        eventId: 'evt-b',
      }),
    ]);
  });

  it('builds the relay from the environment, without the crash unless RELAY_CRASH_TABLE is set', async () => {
    const { createOrderEventsRelay } = await import('../../../lambda/example/order-events-relay');
    const sent: unknown[] = [];
    const sqs = { send: async (command: unknown) => void sent.push(command) } as never;
    const dynamodb = { send: vi.fn() };
    const relay = createOrderEventsRelay(
      { ...environment, EO_CONSUMER: 'order-events-relay' },
      { sqs, dynamodb },
      captureLogger(),
    );

    expect(await relay(outboxStreamEvent(['evt-a']))).toEqual({ batchItemFailures: [] });
    expect(sent).toEqual([
      expect.objectContaining({
        input: expect.objectContaining({
          QueueUrl: environment.EO_OUTBOX_DESTINATION_QUEUE_URL,
          MessageAttributes: expect.objectContaining({
            [IDEMPOTENCY_KEY_ATTRIBUTE]: { DataType: 'String', StringValue: 'evt-a' },
          }),
        }),
      }),
    ]);
    expect(dynamodb.send).not.toHaveBeenCalled();
    expect(() =>
      createOrderEventsRelay({ ...environment, EO_CONSUMER: undefined }, { sqs, dynamodb }),
    ).toThrow('Expected environment variable `EO_CONSUMER` to be set, got `undefined`');
  });
});

/** A stream event of one INSERT per event id, as the outbox table's stream carries them. */
function outboxStreamEvent(ids: readonly string[]): DynamoDbStreamEvent {
  return {
    Records: ids.map((id, index) => ({
      eventID: `e-${index}`,
      eventName: 'INSERT',
      eventSource: 'aws:dynamodb',
      dynamodb: {
        Keys: { [OUTBOX_ATTRIBUTES.pk]: { S: id } },
        NewImage: {
          [OUTBOX_ATTRIBUTES.pk]: { S: id },
          [OUTBOX_ATTRIBUTES.type]: { S: 'OrderConfirmed' },
          [OUTBOX_ATTRIBUTES.body]: { S: '{"orderId":"o-1"}' },
          [OUTBOX_ATTRIBUTES.entity]: { S: 'o-1' },
        },
        SequenceNumber: String(100 + index),
      },
    })),
  };
}
