import { describe, expect, it } from 'vitest';
import { OUTBOX_ATTRIBUTES } from '../../../lambda/core/contract';
import { fromBody, scopeKey } from '../../../lambda/core/dedup-key';
import { fingerprintOf } from '../../../lambda/core/fingerprint';
import { type AtomicHandler, type AtomicOptions, atomic } from '../../../lambda/modes/atomic';
import { createUnitOfWork } from '../../../lambda/modes/unit-of-work';
import { MAX_DESTINATION_MESSAGE_BYTES, outboxEventId, publishedMessageBytes } from '../../../lambda/outbox';
import { createSqsBatchHandler } from '../../../lambda/sqs/sqs-handler';
import {
  captureLogger,
  captureMetrics,
  counts,
  manualClock,
  sqsEvent,
  sqsRecord,
  T0,
} from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';

interface OrderConfirmed {
  readonly orderId: string;
  readonly note?: string;
}

const OUTBOX = { tableName: 'Outbox', retentionSeconds: 3600 } as const;

const confirm: AtomicHandler<OrderConfirmed> = (message, unitOfWork) => {
  const { orderId } = message.body;
  unitOfWork.put({ TableName: 'Orders', Item: { pk: orderId, status: 'CONFIRMED' } });
  unitOfWork.emit(
    { type: 'OrderConfirmed', detail: { orderId, note: message.body.note } },
    { entity: orderId },
  );
};

function setup(handle: AtomicHandler<OrderConfirmed> = confirm, options: AtomicOptions = { outbox: OUTBOX }) {
  const store = createMemoryStore();
  const logger = captureLogger();
  const metrics = captureMetrics();
  const processBatch = createSqsBatchHandler<OrderConfirmed>({
    consumer: 'orders',
    dedupKey: fromBody('orderId'),
    mode: atomic(handle, options as AtomicOptions & { readonly marker?: 'inbox' }),
    store,
    clock: manualClock(),
    logger,
    metrics,
  });
  return { store, logger, metrics, processBatch };
}

const message = (messageId: string, body: OrderConfirmed) => sqsEvent(sqsRecord(messageId, body));

describe('unitOfWork.emit in atomic mode', () => {
  it('commits the outbox item in the same transaction as the inbox record and the business writes', async () => {
    const { store, metrics, processBatch } = setup();

    expect(await processBatch(message('m-1', { orderId: 'o-1' }))).toEqual({ batchItemFailures: [] });

    expect(store.calls.map((call) => call.method)).toEqual(['commit']);
    const [, writes] = store.calls[0]!.args as [unknown, unknown[]];
    const id = outboxEventId(scopeKey('orders', 'o-1'), 'OrderConfirmed#0');
    const contentHash = fingerprintOf(['OrderConfirmed', '{"orderId":"o-1"}', 'o-1']);
    expect(writes).toEqual([
      { Put: { TableName: 'Orders', Item: { pk: 'o-1', status: 'CONFIRMED' } } },
      {
        Put: {
          TableName: 'Outbox',
          Item: {
            [OUTBOX_ATTRIBUTES.pk]: id,
            [OUTBOX_ATTRIBUTES.type]: 'OrderConfirmed',
            [OUTBOX_ATTRIBUTES.body]: '{"orderId":"o-1"}',
            [OUTBOX_ATTRIBUTES.entity]: 'o-1',
            [OUTBOX_ATTRIBUTES.source]: 'orders',
            [OUTBOX_ATTRIBUTES.contentHash]: contentHash,
            [OUTBOX_ATTRIBUTES.createdAt]: T0,
            [OUTBOX_ATTRIBUTES.expiresAt]: T0 / 1000 + 3600,
          },
          ConditionExpression: 'attribute_not_exists(#pk) OR #contentHash = :contentHash',
          ExpressionAttributeNames: { '#pk': 'pk', '#contentHash': 'contentHash' },
          ExpressionAttributeValues: { ':contentHash': contentHash },
        },
      },
    ]);
    expect(store.items('Outbox').map((item) => item[OUTBOX_ATTRIBUTES.pk])).toEqual([id]);
    expect(metrics.published[0]?.counts).toEqual(counts({ processed: 1 }));
  });

  it('writes no second outbox item for a redelivery: the inbox record makes it a duplicate', async () => {
    const { store, metrics, processBatch } = setup();
    await processBatch(message('m-1', { orderId: 'o-1' }));
    const before = store.items('Outbox');

    await processBatch(message('m-2', { orderId: 'o-1' }));

    expect(store.items('Outbox')).toEqual(before);
    expect(metrics.published[1]?.counts).toEqual(counts({ duplicate: 1 }));
  });

  it('derives ids from the scoped dedup key and the name: the same for a replay, distinct per name and per consumer', () => {
    const ids = (scope: string) => {
      const unitOfWork = createUnitOfWork(undefined, 'inbox', {
        ...OUTBOX,
        scope,
        source: 'orders',
        nowMillis: T0,
      });
      return [
        unitOfWork.emit({ type: 'OrderConfirmed', detail: {} }),
        unitOfWork.emit({ type: 'OrderConfirmed', detail: {} }),
        unitOfWork.emit({ type: 'InvoiceDue', detail: {} }),
        unitOfWork.emit({ type: 'InvoiceDue', detail: {} }, { name: 'line-sku-1' }),
      ];
    };
    const first = ids('orders#o-1');

    expect(ids('orders#o-1')).toEqual(first);
    expect(new Set(first).size).toBe(4);
    expect(first).toEqual([
      outboxEventId('orders#o-1', 'OrderConfirmed#0'),
      outboxEventId('orders#o-1', 'OrderConfirmed#1'),
      outboxEventId('orders#o-1', 'InvoiceDue#0'),
      outboxEventId('orders#o-1', 'line-sku-1'),
    ]);
    expect(ids('shipping#o-1')[0]).not.toBe(first[0]);
  });

  it('rejects two events of one effect with one name (VALIDATION): they would share an id', () => {
    const unitOfWork = createUnitOfWork(undefined, 'inbox', {
      ...OUTBOX,
      scope: 's',
      source: 'orders',
      nowMillis: T0,
    });
    unitOfWork.emit({ type: 'A', detail: 1 }, { name: 'x' });

    expect(() => unitOfWork.emit({ type: 'B', detail: 2 }, { name: 'x' })).toThrow(
      expect.objectContaining({
        code: 'VALIDATION',
        message: 'emit: two events of one effect are named `x`; they would share an id',
      }),
    );
    expect(unitOfWork.writes).toHaveLength(1);
  });

  it('dead-letters a message whose outbox item meets another event under its id, committing nothing (OUTBOX_COLLISION)', async () => {
    const { store, logger, metrics, processBatch } = setup();
    const id = outboxEventId(scopeKey('orders', 'o-1'), 'OrderConfirmed#0');
    const other = { pk: id, eventType: 'SomethingElse', body: '{}' };
    store.seed('Outbox', other);

    expect(await processBatch(message('m-1', { orderId: 'o-1' }))).toEqual({
      batchItemFailures: [{ itemIdentifier: 'm-1' }],
    });

    expect(store.items('Orders')).toEqual([]);
    expect(store.items('Outbox')).toEqual([other]);
    expect(metrics.published[0]?.counts).toEqual(counts({ permanent: 1 }));
    expect(logger.entries.at(-1)).toMatchObject({ outcome: 'permanent', code: 'OUTBOX_COLLISION' });
  });

  it('dead-letters a message whose event is too large for its destination before anything is committed (ITEM_TOO_LARGE)', async () => {
    const { store, logger, metrics, processBatch } = setup();
    const note = 'x'.repeat(MAX_DESTINATION_MESSAGE_BYTES);

    expect(await processBatch(message('m-1', { orderId: 'o-1', note }))).toEqual({
      batchItemFailures: [{ itemIdentifier: 'm-1' }],
    });

    expect(store.calls).toEqual([]);
    expect(store.items('Orders')).toEqual([]);
    expect(store.items('Outbox')).toEqual([]);
    expect(metrics.published[0]?.counts).toEqual(counts({ permanent: 1 }));
    expect(logger.entries.at(-1)).toMatchObject({ outcome: 'permanent', code: 'ITEM_TOO_LARGE' });
  });

  it('accepts an event whose message is exactly the destination limit', () => {
    const unitOfWork = createUnitOfWork(undefined, 'inbox', {
      ...OUTBOX,
      scope: 's',
      source: 'orders',
      nowMillis: T0,
    });
    const id = outboxEventId('s', 'T#0');
    // body `"xxx..."` + idempotency-key (name, String, 64-hex id) + eo-event-type (name, String, `T`)
    const overhead = 2 + ('idempotency-key'.length + 6 + id.length) + ('eo-event-type'.length + 6 + 1);
    const fits = 'x'.repeat(MAX_DESTINATION_MESSAGE_BYTES - overhead);

    expect(unitOfWork.emit({ type: 'T', detail: fits })).toBe(id);
    expect(() => unitOfWork.emit({ type: 'T', detail: `${fits}x` })).toThrow(
      expect.objectContaining({ code: 'ITEM_TOO_LARGE' }),
    );
  });

  it('rejects an event without a type or with a detail that is not JSON (VALIDATION)', () => {
    const unitOfWork = createUnitOfWork(undefined, 'inbox', {
      ...OUTBOX,
      scope: 's',
      source: 'orders',
      nowMillis: T0,
    });

    expect(() => unitOfWork.emit({ type: '', detail: {} })).toThrow(
      expect.objectContaining({ code: 'VALIDATION' }),
    );
    expect(() => unitOfWork.emit({ type: 'T', detail: undefined })).toThrow(
      expect.objectContaining({ code: 'VALIDATION' }),
    );
    expect(() => unitOfWork.emit({ type: 'T', detail: { n: 1n } })).toThrow(
      expect.objectContaining({ code: 'VALIDATION' }),
    );
    expect(unitOfWork.writes).toEqual([]);
  });

  it('retries a message whose handler emits without an outbox configured (INVALID_OPTIONS), committing nothing', async () => {
    const { store, metrics, processBatch } = setup(confirm, {});

    expect(await processBatch(message('m-1', { orderId: 'o-1' }))).toEqual({
      batchItemFailures: [{ itemIdentifier: 'm-1' }],
    });

    expect(store.calls).toEqual([]);
    expect(metrics.published[0]?.counts).toEqual(counts({ retry: 1 }));
  });

  it('fails fast at creation on bad outbox options', () => {
    expect(() => setup(confirm, { outbox: { tableName: '' } })).toThrow(
      'Expected `atomic.outbox.tableName` to be a non-empty string',
    );
    expect(() => setup(confirm, { outbox: { tableName: 'Outbox', retentionSeconds: 0 } })).toThrow(
      'Expected `atomic.outbox.retentionSeconds` to be a positive integer',
    );
    expect(() => setup(confirm, { outbox: { tableName: 'Outbox', destinationKind: 'eventbridge' } })).toThrow(
      "Expected `atomic.outbox.eventSource` to be the relay's EventBridge `Source` (1 to 256 characters) when `destinationKind` is 'eventbridge', got `undefined`",
    );
  });

  it('sizes emitted events for the destination of `atomic.outbox`: an EventBridge entry counts its Source', async () => {
    const overhead = publishedMessageBytes(
      { id: 'x'.repeat(64), type: 'OrderConfirmed', body: '{"orderId":"o-1","note":""}' },
      { kind: 'eventbridge', eventSource: 'orders' },
    );
    const note = 'x'.repeat(MAX_DESTINATION_MESSAGE_BYTES - overhead);
    const outbox = { tableName: 'Outbox', destinationKind: 'eventbridge', eventSource: 'orders' } as const;
    const { processBatch, logger } = setup(confirm, { outbox });

    expect(await processBatch(message('m-1', { orderId: 'o-1', note }))).toEqual({ batchItemFailures: [] });
    expect(await processBatch(message('m-2', { orderId: 'o-2', note: `${note}x` }))).toEqual({
      batchItemFailures: [{ itemIdentifier: 'm-2' }],
    });
    expect(logger.entries.at(-1)).toMatchObject({ outcome: 'permanent', code: 'ITEM_TOO_LARGE' });
  });

  it('counts outbox items against the transaction limit like any write (TOO_MANY_WRITES)', () => {
    const unitOfWork = createUnitOfWork(undefined, 'inbox', {
      ...OUTBOX,
      scope: 's',
      source: 'orders',
      nowMillis: T0,
    });
    for (let index = 0; index < 99; index++) unitOfWork.emit({ type: 'T', detail: index });

    expect(() => unitOfWork.emit({ type: 'T', detail: 99 })).toThrow(
      expect.objectContaining({ code: 'TOO_MANY_WRITES' }),
    );
  });

  it("commits the outbox item with the marked business item under `marker: 'item'`, and a redelivery writes none", async () => {
    const store = createMemoryStore({ keys: { Orders: ['orderId'] } });
    const metrics = captureMetrics();
    const processBatch = createSqsBatchHandler<OrderConfirmed>({
      consumer: 'orders',
      dedupKey: fromBody('orderId'),
      mode: atomic(
        (message, unitOfWork) => {
          const { orderId } = message.body;
          unitOfWork.putAsMarker({
            TableName: 'Orders',
            Item: { orderId, status: 'CONFIRMED' },
            keyAttribute: 'orderId',
          });
          unitOfWork.emit({ type: 'OrderConfirmed', detail: { orderId } });
        },
        { marker: 'item', outbox: OUTBOX },
      ),
      store,
      clock: manualClock(),
      logger: captureLogger(),
      metrics,
    });

    await processBatch(message('m-1', { orderId: 'o-1' }));
    await processBatch(message('m-2', { orderId: 'o-1' }));

    expect(store.calls.map((call) => call.method)).toEqual(['commitWithItemMarker', 'commitWithItemMarker']);
    expect(store.items('Outbox').map((item) => item[OUTBOX_ATTRIBUTES.pk])).toEqual([
      outboxEventId(scopeKey('orders', 'o-1'), 'OrderConfirmed#0'),
    ]);
    expect(metrics.published.map((published) => published.counts)).toEqual([
      counts({ processed: 1 }),
      counts({ duplicate: 1 }),
    ]);
  });
});
