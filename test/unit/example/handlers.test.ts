import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fingerprintOf } from '../../../lambda/core/fingerprint';
import type { SqsHandler, SqsRecord } from '../../../lambda/sqs/sqs-event';
import { createSqsBatchHandler } from '../../../lambda/sqs/sqs-handler';
import {
  captureLogger,
  captureMetrics,
  counts,
  invokeWithMalformedBody,
  manualClock,
  sqsEvent,
  sqsRecord,
} from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';
import { bundledInputs } from '../bundled-inputs';

const environment = {
  EO_INBOX_TABLE: 'inbox',
  EO_CONSUMER: 'order-projector',
  EO_TTL_SECONDS: '86400',
  ORDERS_TABLE: 'Orders',
  AUDIT_TABLE: 'Audit',
  EO_OUTBOX_TABLE_NAME: 'Outbox',
  EO_OUTBOX_RETENTION_SECONDS: '216000',
  AWS_REGION: 'us-east-1',
};

beforeEach(() => {
  for (const [name, value] of Object.entries(environment)) vi.stubEnv(name, value);
});

afterEach(() => {
  vi.unstubAllEnvs();
});

/**
 * Checks that `handler` was built from the stubbed environment: one malformed record (which needs
 * no store call) fails with the consumer and dead-letter mode the environment sets.
 */
async function expectBuiltFromEnvironment(handler: SqsHandler): Promise<void> {
  const { result, lines } = await invokeWithMalformedBody(handler, 'not json');

  expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-1' }] });
  expect(lines.filter((line) => 'level' in line)).toEqual([
    expect.objectContaining({
      level: 'error',
      consumer: 'order-projector',
      messageId: 'm-1',
      code: 'MALFORMED_BODY',
      deadLetter: 'redrive',
    }),
  ]);
  expect(
    lines.filter((line) => '_aws' in line).map(({ Consumer, Permanent }) => ({ Consumer, Permanent })),
  ).toEqual([{ Consumer: 'order-projector', Permanent: 1 }]);
}

describe('order projector', () => {
  async function setup() {
    const { orderProjectorOptions, handler } = await import('../../../lambda/example/order-projector');
    const store = createMemoryStore({ keys: { Orders: ['pk', 'sk'] } });
    const clock = manualClock();
    const logger = captureLogger();
    const metrics = captureMetrics();
    const processBatch = createSqsBatchHandler({
      consumer: 'order-projector',
      ttlSeconds: 86_400,
      store,
      clock,
      logger,
      metrics,
      ...orderProjectorOptions('Orders', { tableName: 'Outbox', retentionSeconds: 216_000 }),
    });
    return { handler, store, clock, logger, metrics, processBatch };
  }

  const log: SqsRecord[] = [
    sqsRecord(
      'm-1',
      {
        orderId: 'o-1',
        status: 'CREATED',
        amount: 1250,
        currency: 'EUR',
        occurredAt: '2026-01-01T10:00:00Z',
      },
      { groupId: 'o-1' },
    ),
    sqsRecord('m-2', { orderId: 'o-2', status: 'CREATED', amount: 300 }, { groupId: 'o-2' }),
    sqsRecord(
      'm-3',
      { orderId: 'o-1', status: 'PAID', amount: 1250, currency: 'EUR', occurredAt: '2026-01-01T10:05:00Z' },
      { groupId: 'o-1' },
    ),
  ];

  it('exports a Lambda handler built from the environment', async () => {
    const { handler } = await setup();
    await expectBuiltFromEnvironment(handler);
  });

  it('projects each order event into the order item and one status transition, committed with the marker', async () => {
    const { store, processBatch } = await setup();

    expect(await processBatch(sqsEvent(...log))).toEqual({ batchItemFailures: [] });
    expect(store.get('Orders', { pk: 'ORDER#o-1', sk: 'ORDER' })).toEqual({
      pk: 'ORDER#o-1',
      sk: 'ORDER',
      orderId: 'o-1',
      status: 'PAID',
      amount: 1250,
      currency: 'EUR',
      statusAt: '2026-01-01T10:05:00Z',
    });
    expect(store.get('Orders', { pk: 'ORDER#o-1', sk: 'STATUS#CREATED' })).toEqual({
      pk: 'ORDER#o-1',
      sk: 'STATUS#CREATED',
      orderId: 'o-1',
      status: 'CREATED',
      amount: 1250,
      currency: 'EUR',
      occurredAt: '2026-01-01T10:00:00Z',
      dedupKey: 'o-1:CREATED',
    });
    expect(store.items('inbox').map((record) => record.pk)).toEqual([
      'order-projector#o-1:CREATED',
      'order-projector#o-2:CREATED',
      'order-projector#o-1:PAID',
    ]);
  });

  it('changes nothing when the whole log is replayed, before and after the inbox records expire', async () => {
    const { store, processBatch, clock, metrics } = await setup();
    await processBatch(sqsEvent(...log));
    const orders = store.items('Orders');

    await processBatch(
      sqsEvent(...log.map((record) => ({ ...record, messageId: `${record.messageId}-resent` }))),
    );
    expect(metrics.published[1]?.counts).toEqual(counts({ duplicate: 3 }));
    expect(store.items('Orders')).toEqual(orders);

    clock.advance(86_400_000 + 1000);
    await processBatch(sqsEvent(...log));
    expect(metrics.published[2]?.counts).toEqual(counts({ processed: 3 }));
    expect(store.items('Orders')).toEqual(orders);
  });

  it('treats a resend with a fresh event id as a duplicate, and a changed amount as a mismatch', async () => {
    const { processBatch, metrics } = await setup();
    const placed = { orderId: 'o-9', status: 'CREATED', amount: 500, eventId: 'e-1' };
    await processBatch(sqsEvent(sqsRecord('m-1', placed, { groupId: 'o-9' })));

    expect(
      await processBatch(sqsEvent(sqsRecord('m-2', { ...placed, eventId: 'e-2' }, { groupId: 'o-9' }))),
    ).toEqual({ batchItemFailures: [] });
    expect(metrics.published[1]?.counts).toEqual(counts({ duplicate: 1 }));

    await processBatch(
      sqsEvent(sqsRecord('m-3', { ...placed, amount: 501, eventId: 'e-3' }, { groupId: 'o-9' })),
    );
    expect(metrics.published[2]?.counts).toEqual(counts({ mismatch: 1 }));
  });

  it('dead-letters an invalid order event with a reason that does not quote the body', async () => {
    const { processBatch, logger } = await setup();

    const response = await processBatch(
      sqsEvent(
        sqsRecord('m-1', undefined, { rawBody: 'card=4111', groupId: 'o-1' }),
        sqsRecord('m-2', { orderId: 'o-2', status: 'PAID' }, { groupId: 'o-2' }),
        sqsRecord('m-3', { orderId: 'o-3', status: 'PAID', amount: -1 }, { groupId: 'o-3' }),
      ),
    );

    expect(response.batchItemFailures.map((failure) => failure.itemIdentifier)).toEqual([
      'm-1',
      'm-2',
      'm-3',
    ]);
    expect(logger.entries.map(({ messageId, code, reason }) => ({ messageId, code, reason }))).toEqual(
      expect.arrayContaining([
        {
          messageId: 'm-1',
          code: 'MALFORMED_BODY',
          reason: 'The body was rejected by the `parse` option: An order event must be JSON',
        },
        {
          messageId: 'm-2',
          code: 'MALFORMED_BODY',
          reason: 'The body was rejected by the `parse` option: `amount` must be a number',
        },
        { messageId: 'm-3', code: 'PERMANENT', reason: 'An order amount cannot be negative' },
      ]),
    );
    expect(JSON.stringify(logger.entries)).not.toContain('4111');
  });
});

describe('audit recorder', () => {
  async function setup() {
    const { auditRecorderOptions, handler } = await import('../../../lambda/example/audit-recorder');
    const store = createMemoryStore();
    const metrics = captureMetrics();
    const processBatch = createSqsBatchHandler({
      consumer: 'audit-recorder',
      store,
      clock: manualClock(),
      logLevel: 'silent',
      metrics,
      ...auditRecorderOptions('Audit'),
    });
    return { handler, store, metrics, processBatch };
  }

  const cloudEvent = (id: string, data: unknown) => ({
    specversion: '1.0',
    id,
    source: 'https://shop.example/orders',
    type: 'order.viewed',
    time: '2026-01-01T10:00:00Z',
    data,
  });

  it('exports a Lambda handler built from the environment', async () => {
    const { handler } = await setup();
    await expectBuiltFromEnvironment(handler);
  });

  it('writes one audit item per CloudEvent, keyed by source and id, with its fingerprint', async () => {
    const { store, processBatch } = await setup();
    const event = cloudEvent('evt-1', { user: 'u-1' });

    expect(await processBatch(sqsEvent(sqsRecord('m-1', event)))).toEqual({ batchItemFailures: [] });
    expect(store.items('Audit')).toEqual([
      {
        pk: 'audit-recorder#https%3A//shop.example/orders:evt-1',
        eventId: 'evt-1',
        source: 'https://shop.example/orders',
        type: 'order.viewed',
        time: '2026-01-01T10:00:00Z',
        data: { user: 'u-1' },
        eoFingerprint: fingerprintOf(event),
      },
    ]);
    expect(store.items('inbox')).toEqual([]);
  });

  it('acknowledges a redelivered event as a duplicate and reports a reused id with other data as a mismatch', async () => {
    const { processBatch, metrics } = await setup();
    await processBatch(sqsEvent(sqsRecord('m-1', cloudEvent('evt-1', { user: 'u-1' }))));

    const response = await processBatch(
      sqsEvent(
        sqsRecord('m-2', cloudEvent('evt-1', { user: 'u-1' })),
        sqsRecord('m-3', cloudEvent('evt-1', { user: 'u-2' })),
      ),
    );

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-3' }] });
    expect(metrics.published[1]?.counts).toEqual(counts({ duplicate: 1, mismatch: 1 }));
  });

  it('rejects a body that is not a CloudEvent as permanent', async () => {
    const { processBatch, metrics } = await setup();

    await processBatch(
      sqsEvent(
        sqsRecord('m-1', { id: 'evt-1' }),
        sqsRecord('m-2', undefined, { rawBody: 'nope' }),
        sqsRecord('m-3', 'a string'),
      ),
    );
    expect(metrics.published[0]?.counts).toEqual(counts({ permanent: 3 }));
  });
});

describe('handler environment', () => {
  it('fails at cold start on a missing app variable, naming it', async () => {
    const { ordersTableOf } = await import('../../../lambda/example/order-projector');
    const { auditTableOf } = await import('../../../lambda/example/audit-recorder');
    expect(() => ordersTableOf({})).toThrow(
      'Expected environment variable `ORDERS_TABLE` to be set, got `undefined`',
    );
    expect(() => auditTableOf({ AUDIT_TABLE: ' ' })).toThrow(
      'Expected environment variable `AUDIT_TABLE` to be set, got ` `',
    );
  });
});

describe('order projector worker', () => {
  it('runs the handler module’s definition, while the Lambda bundle never contains the worker adapter', async () => {
    const lambda = await bundledInputs('lambda/example/order-projector.ts');
    const worker = await bundledInputs('lambda/example/order-projector-worker.ts');

    expect(lambda.filter((input) => /sqs-consumer|lambda\/worker\//.test(input))).toEqual([]);
    expect(worker.some((input) => input.includes('sqs-consumer'))).toBe(true);
    expect(worker.some((input) => input.endsWith('lambda/example/order-projector.ts'))).toBe(true);
  });

  it('builds a stopped worker from the Lambda’s environment plus ORDERS_QUEUE_URL, and fails fast without it', async () => {
    const { createOrderProjectorWorker } = await import('../../../lambda/example/order-projector-worker');
    const queueUrl = 'https://sqs.us-east-1.amazonaws.com/000000000000/orders.fifo';

    const worker = createOrderProjectorWorker({ ...environment, ORDERS_QUEUE_URL: queueUrl });
    expect(worker.consumer.status).toMatchObject({ isRunning: false });

    expect(() => createOrderProjectorWorker(environment)).toThrow(
      'Expected environment variable `ORDERS_QUEUE_URL` to be set, got `undefined`',
    );
    expect(() =>
      createOrderProjectorWorker({
        ...environment,
        ORDERS_QUEUE_URL: queueUrl,
        WORKER_VISIBILITY_TIMEOUT_SECONDS: 'soon',
      }),
    ).toThrow('Expected environment variable `WORKER_VISIBILITY_TIMEOUT_SECONDS` to be a positive integer');
    expect(() =>
      createOrderProjectorWorker({ ...environment, ORDERS_QUEUE_URL: queueUrl, ORDERS_TABLE: '' }),
    ).toThrow('Expected environment variable `ORDERS_TABLE` to be set');
  });
});
