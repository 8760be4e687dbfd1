import { describe, expect, expectTypeOf, it } from 'vitest';
import { ENTITY_FINGERPRINT_ATTRIBUTE } from '../../../lambda/core/contract';
import { fromBody } from '../../../lambda/core/dedup-key';
import type { Message } from '../../../lambda/core/message';
import type { Mode } from '../../../lambda/core/mode';
import type { AtomicStore } from '../../../lambda/core/store-port';
import { type AtomicOptions, atomic, type ItemMarkerHandler } from '../../../lambda/modes/atomic';
import type { ItemMarkerUnitOfWork, UnitOfWork } from '../../../lambda/modes/unit-of-work';
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

interface OrderPlaced {
  readonly orderId: string;
  readonly sku: string;
  readonly total: number;
}

const placed = (orderId: string, total = 30): OrderPlaced => ({ orderId, sku: 'sku-1', total });

/** The handler most tests use: the order row is the marker; the stock update rides along. */
const placeOrder: ItemMarkerHandler<OrderPlaced> = (message, unitOfWork) => {
  const { orderId, sku, total } = message.body;
  unitOfWork.putAsMarker({
    TableName: 'Orders',
    Item: { orderId, sku, total, status: 'PLACED' },
    keyAttribute: 'orderId',
  });
  unitOfWork.update({
    TableName: 'Stock',
    Key: { pk: sku },
    UpdateExpression: 'SET available = available - :one',
    ExpressionAttributeValues: { ':one': 1 },
  });
};

function setup(
  handle: ItemMarkerHandler<OrderPlaced> = placeOrder,
  options: AtomicOptions & { readonly marker: 'item' } = { marker: 'item' },
) {
  const store = createMemoryStore({ keys: { Orders: ['orderId'] } });
  store.seed('Stock', { pk: 'sku-1', available: 10 });
  const logger = captureLogger();
  const metrics = captureMetrics();
  const clock = manualClock();
  const processBatch = createSqsBatchHandler<OrderPlaced>({
    consumer: 'orders',
    dedupKey: fromBody('orderId'),
    mode: atomic(handle, options),
    store,
    clock,
    logger,
    metrics,
  });
  return { store, logger, metrics, clock, processBatch };
}

const message = (messageId: string, body: OrderPlaced) => sqsEvent(sqsRecord(messageId, body));

describe('atomic mode with the marker on a business item', () => {
  it('commits the business writes alone, the marked put carrying the fingerprint, and writes no inbox record', async () => {
    const { store, metrics, processBatch } = setup();

    expect(await processBatch(message('m-1', placed('o-1')))).toEqual({ batchItemFailures: [] });

    expect(store.calls.map((call) => call.method)).toEqual(['commitWithItemMarker']);
    const [writes, marker, nowMillis] = store.calls[0]!.args as [unknown, { fingerprint: string }, number];
    expect(writes).toEqual([
      { Put: { TableName: 'Orders', Item: { orderId: 'o-1', sku: 'sku-1', total: 30, status: 'PLACED' } } },
      {
        Update: {
          TableName: 'Stock',
          Key: { pk: 'sku-1' },
          UpdateExpression: 'SET available = available - :one',
          ExpressionAttributeValues: { ':one': 1 },
        },
      },
    ]);
    expect(marker).toEqual({
      index: 0,
      keyAttribute: 'orderId',
      fingerprint: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(nowMillis).toBe(T0);
    expect(store.get('Orders', { orderId: 'o-1' })).toEqual({
      orderId: 'o-1',
      sku: 'sku-1',
      total: 30,
      status: 'PLACED',
      [ENTITY_FINGERPRINT_ATTRIBUTE]: marker.fingerprint,
    });
    expect(store.read('Stock', 'sku-1')).toEqual({ pk: 'sku-1', available: 9 });
    expect(store.items('inbox')).toEqual([]);
    expect(metrics.published[0]?.counts).toEqual(counts({ processed: 1 }));
  });

  it('acknowledges a redelivery as a duplicate from the marked item, applying none of its writes', async () => {
    const { store, metrics, processBatch } = setup();
    await processBatch(message('m-1', placed('o-1')));
    const stored = store.get('Orders', { orderId: 'o-1' });

    expect(await processBatch(message('m-1', placed('o-1')))).toEqual({ batchItemFailures: [] });

    expect(store.get('Orders', { orderId: 'o-1' })).toEqual(stored);
    expect(store.read('Stock', 'sku-1')).toEqual({ pk: 'sku-1', available: 9 });
    expect(metrics.published[1]?.counts).toEqual(counts({ duplicate: 1 }));
  });

  it('still reads a redelivery as a duplicate from a clock years ahead: an item without expiresAt holds its key forever', async () => {
    const { store, metrics, clock, processBatch } = setup();
    await processBatch(message('m-1', placed('o-1')));
    const stored = store.get('Orders', { orderId: 'o-1' });

    clock.advance(10 * 365 * 24 * 3600 * 1000);
    expect(await processBatch(message('m-1', placed('o-1')))).toEqual({ batchItemFailures: [] });

    expect(metrics.published[1]?.counts).toEqual(counts({ duplicate: 1 }));
    expect(store.get('Orders', { orderId: 'o-1' })).toEqual(stored);
    expect(store.read('Stock', 'sku-1')).toEqual({ pk: 'sku-1', available: 9 });
  });

  it('remembers a committed marked item in the completed-record cache: a redelivery is a duplicate without a request', async () => {
    const store = createMemoryStore({ keys: { Orders: ['orderId'] } });
    store.seed('Stock', { pk: 'sku-1', available: 10 });
    const metrics = captureMetrics();
    const processBatch = createSqsBatchHandler<OrderPlaced>({
      consumer: 'orders',
      dedupKey: fromBody('orderId'),
      mode: atomic(placeOrder, { marker: 'item' }),
      store,
      clock: manualClock(),
      logger: captureLogger(),
      metrics,
      completedCache: { maxEntries: 10 },
    });
    await processBatch(message('m-1', placed('o-1')));

    expect(await processBatch(message('m-1', placed('o-1')))).toEqual({ batchItemFailures: [] });

    expect(store.calls.map((call) => call.method)).toEqual(['commitWithItemMarker']);
    expect(metrics.published[1]?.counts).toEqual(counts({ duplicate: 1, cacheHit: 1 }));
  });

  it('dead-letters the same key with a different payload as PAYLOAD_MISMATCH', async () => {
    const { store, logger, processBatch } = setup();
    await processBatch(message('m-1', placed('o-1', 30)));

    expect(await processBatch(message('m-2', placed('o-1', 99)))).toEqual({
      batchItemFailures: [{ itemIdentifier: 'm-2' }],
    });

    expect(logger.entries.at(-1)).toMatchObject({ outcome: 'mismatch', code: 'PAYLOAD_MISMATCH' });
    expect(store.get('Orders', { orderId: 'o-1' })).toMatchObject({ total: 30 });
  });

  it('dead-letters a message whose item exists without a fingerprint (written by something else) as PAYLOAD_MISMATCH', async () => {
    const { store, logger, processBatch } = setup();
    store.seed('Orders', { orderId: 'o-1', total: 5 });

    expect(await processBatch(message('m-1', placed('o-1')))).toEqual({
      batchItemFailures: [{ itemIdentifier: 'm-1' }],
    });

    expect(logger.entries[0]).toMatchObject({
      outcome: 'mismatch',
      code: 'PAYLOAD_MISMATCH',
      reason: expect.stringContaining('stored fingerprint ,'),
    });
    expect(store.get('Orders', { orderId: 'o-1' })).toEqual({ orderId: 'o-1', total: 5 });
    expect(store.read('Stock', 'sku-1')).toEqual({ pk: 'sku-1', available: 10 });
  });

  it('writes over a marked item whose own expiresAt has been reached, as entity mode does', async () => {
    const { store, processBatch } = setup();
    store.seed('Orders', { orderId: 'o-1', total: 5, expiresAt: T0 / 1000 });

    expect(await processBatch(message('m-1', placed('o-1')))).toEqual({ batchItemFailures: [] });

    expect(store.get('Orders', { orderId: 'o-1' })).toMatchObject({ total: 30, status: 'PLACED' });
  });

  it('reports the marked put’s own condition failing on an absent item as BUSINESS_CONDITION_FAILED', async () => {
    const { store, logger, processBatch } = setup((message, unitOfWork) => {
      unitOfWork.conditionCheck({
        TableName: 'Stock',
        Key: { pk: message.body.sku },
        ConditionExpression: 'attribute_exists(pk)',
      });
      unitOfWork.putAsMarker({
        TableName: 'Orders',
        Item: { orderId: message.body.orderId, total: message.body.total },
        keyAttribute: 'orderId',
        ConditionExpression: 'attribute_exists(approvedAt)',
      });
    });

    expect(await processBatch(message('m-1', placed('o-1')))).toEqual({
      batchItemFailures: [{ itemIdentifier: 'm-1' }],
    });

    expect(logger.entries[0]).toMatchObject({
      outcome: 'permanent',
      code: 'BUSINESS_CONDITION_FAILED',
      reason: 'The condition of business write 1 failed',
    });
    expect(store.get('Orders', { orderId: 'o-1' })).toBeUndefined();
  });

  it('reads a duplicate before the failed condition of another write, as with the inbox marker', async () => {
    let stockCheck = false;
    const { store, metrics, processBatch } = setup((message, unitOfWork) => {
      if (stockCheck) {
        unitOfWork.conditionCheck({
          TableName: 'Stock',
          Key: { pk: message.body.sku },
          ConditionExpression: 'available > :none',
          ExpressionAttributeValues: { ':none': 100 },
        });
      }
      unitOfWork.putAsMarker({
        TableName: 'Orders',
        Item: { orderId: message.body.orderId },
        keyAttribute: 'orderId',
      });
    });
    await processBatch(message('m-1', placed('o-1')));
    stockCheck = true;

    expect(await processBatch(message('m-1', placed('o-1')))).toEqual({ batchItemFailures: [] });

    expect(metrics.published[1]?.counts).toEqual(counts({ duplicate: 1 }));
    expect(store.calls.map((call) => call.method)).toEqual(['commitWithItemMarker', 'commitWithItemMarker']);
  });

  it('dead-letters a message whose handler marks no put as VALIDATION, sending nothing', async () => {
    const { store, logger, processBatch } = setup((message, unitOfWork) => {
      unitOfWork.put({ TableName: 'Orders', Item: { orderId: message.body.orderId } });
    });

    expect(await processBatch(message('m-1', placed('o-1')))).toEqual({
      batchItemFailures: [{ itemIdentifier: 'm-1' }],
    });

    expect(logger.entries[0]).toMatchObject({
      outcome: 'permanent',
      code: 'VALIDATION',
      reason:
        "atomic(handle, { marker: 'item' }): the handler marked no put; every message must mark the put that creates its business item with `unitOfWork.putAsMarker`",
    });
    expect(store.calls).toEqual([]);
  });

  it('dead-letters a message whose handler marks two puts as VALIDATION, sending nothing', async () => {
    const { store, logger, processBatch } = setup((message, unitOfWork) => {
      unitOfWork.putAsMarker({
        TableName: 'Orders',
        Item: { orderId: message.body.orderId },
        keyAttribute: 'orderId',
      });
      unitOfWork.putAsMarker({
        TableName: 'Invoices',
        Item: { pk: message.body.orderId },
        keyAttribute: 'pk',
      });
    });

    await processBatch(message('m-1', placed('o-1')));

    expect(logger.entries[0]).toMatchObject({
      outcome: 'permanent',
      code: 'VALIDATION',
      reason: 'putAsMarker: a message marks one put, and write 0 already is the marker',
    });
    expect(store.calls).toEqual([]);
  });

  it.each([
    [
      'an update',
      {
        TableName: 'Orders',
        Key: { orderId: 'o-1' },
        UpdateExpression: 'SET a = :a',
        keyAttribute: 'orderId',
      },
    ],
    [
      'a put without its key attribute set',
      { TableName: 'Orders', Item: { total: 1 }, keyAttribute: 'orderId' },
    ],
    ['a put with an empty key', { TableName: 'Orders', Item: { orderId: '' }, keyAttribute: 'orderId' }],
    ['a put without a key attribute name', { TableName: 'Orders', Item: { orderId: 'o-1' } }],
    ['a put without a table', { Item: { orderId: 'o-1' }, keyAttribute: 'orderId' }],
  ])('dead-letters a message marking %s as VALIDATION, sending nothing', async (_, write) => {
    const { store, logger, processBatch } = setup((_message, unitOfWork) => {
      unitOfWork.putAsMarker(write as never);
    });

    await processBatch(message('m-1', placed('o-1')));

    expect(logger.entries[0]).toMatchObject({
      outcome: 'permanent',
      code: 'VALIDATION',
      reason:
        'putAsMarker: the marker must be a put `{ TableName, Item, keyAttribute }` with `Item[keyAttribute]` set (a string, number or bigint); an update, delete or condition check cannot carry it',
    });
    expect(store.calls).toEqual([]);
  });

  it('rejects putAsMarker in atomic mode with the inbox marker as VALIDATION, never falling back to the inbox', async () => {
    const store = createMemoryStore();
    const logger = captureLogger();
    const processBatch = createSqsBatchHandler<OrderPlaced>({
      consumer: 'orders',
      dedupKey: fromBody('orderId'),
      mode: atomic((message, unitOfWork) => {
        (unitOfWork as ItemMarkerUnitOfWork).putAsMarker({
          TableName: 'Orders',
          Item: { orderId: message.body.orderId },
          keyAttribute: 'orderId',
        });
      }),
      store,
      clock: manualClock(),
      logger,
      metrics: captureMetrics(),
    });

    expect(await processBatch(message('m-1', placed('o-1')))).toEqual({
      batchItemFailures: [{ itemIdentifier: 'm-1' }],
    });

    expect(logger.entries[0]).toMatchObject({
      outcome: 'permanent',
      code: 'VALIDATION',
      reason:
        "putAsMarker: this atomic mode keeps the marker in the inbox; mark a put only with `atomic(handle, { marker: 'item' })`",
    });
    expect(store.calls).toEqual([]);
  });

  it('acknowledges a stale version guard next to the marked put as stale, writing nothing, and again on redelivery', async () => {
    const handle: ItemMarkerHandler<OrderPlaced> = (message, unitOfWork) => {
      unitOfWork.putAsMarker({
        TableName: 'Orders',
        Item: { orderId: message.body.orderId },
        keyAttribute: 'orderId',
      });
      unitOfWork.putIfNewer({
        TableName: 'Customers',
        Item: { pk: 'c-1', version: message.body.total },
        versionAttribute: 'version',
      });
    };
    const { store, metrics, processBatch } = setup(handle);
    store.seed('Customers', { pk: 'c-1', version: 50 });

    await processBatch(message('m-1', placed('o-1', 30)));
    await processBatch(message('m-1', placed('o-1', 30)));

    expect(metrics.published.map((published) => published.counts)).toEqual([
      counts({ stale: 1 }),
      counts({ stale: 1 }),
    ]);
    expect(store.get('Orders', { orderId: 'o-1' })).toBeUndefined();
    expect(store.read('Customers', 'c-1')).toEqual({ pk: 'c-1', version: 50 });
  });

  it('fits 100 writes when the marker is on a business item, and rejects the 101st as TOO_MANY_WRITES', async () => {
    const handle =
      (count: number): ItemMarkerHandler<OrderPlaced> =>
      (message, unitOfWork) => {
        unitOfWork.putAsMarker({
          TableName: 'Orders',
          Item: { orderId: message.body.orderId },
          keyAttribute: 'orderId',
        });
        for (let line = 1; line < count; line++) {
          unitOfWork.put({ TableName: 'Lines', Item: { pk: `${message.body.orderId}#${line}` } });
        }
      };
    const full = setup(handle(100));
    const over = setup(handle(101));

    expect(await full.processBatch(message('m-1', placed('o-1')))).toEqual({ batchItemFailures: [] });
    await over.processBatch(message('m-1', placed('o-1')));

    expect(full.store.items('Lines')).toHaveLength(99);
    expect(over.logger.entries[0]).toMatchObject({
      outcome: 'permanent',
      code: 'TOO_MANY_WRITES',
      reason: 'A commit with the marker on a business item holds at most 100 writes',
    });
    expect(over.store.calls).toEqual([]);
  });

  it('rejects a marked item that the fingerprint attribute pushes past 400 KB as ITEM_TOO_LARGE', async () => {
    // Within the item limit by itself; not with the marker's 13-byte name and 64-byte fingerprint.
    const note = 'x'.repeat(400 * 1024 - 'orderId'.length - 'o-1'.length - 'note'.length - 10);
    const { store, logger, processBatch } = setup((message, unitOfWork) => {
      unitOfWork.putAsMarker({
        TableName: 'Orders',
        Item: { orderId: message.body.orderId, note },
        keyAttribute: 'orderId',
      });
    });

    await processBatch(message('m-1', placed('o-1')));

    expect(logger.entries[0]).toMatchObject({ outcome: 'permanent', code: 'ITEM_TOO_LARGE' });
    expect(logger.entries[0]?.reason).toMatch(/^Write 0 \(Put on `Orders`\) is about 409667 bytes/);
    expect(store.calls).toEqual([]);
  });

  describe('options, checked when the mode is created', () => {
    const create = (mode: Mode<OrderPlaced, AtomicStore>, store: unknown = createMemoryStore()) =>
      createSqsBatchHandler<OrderPlaced>({
        consumer: 'orders',
        dedupKey: fromBody('orderId'),
        mode,
        store: store as AtomicStore,
        clock: manualClock(),
        logger: captureLogger(),
        metrics: captureMetrics(),
      });

    it.each([
      [{ marker: 'items' }, "Expected `atomic.marker` to be `'inbox'` or `'item'`, got `\"items\"`"],
      [{ marker: true }, "Expected `atomic.marker` to be `'inbox'` or `'item'`, got `true`"],
      [null, 'Expected `atomic(handle, options)` to be an object, got `null`'],
      ['item', 'Expected `atomic(handle, options)` to be an object, got `"item"`'],
    ])('fails the cold start for options %o', (options, message) => {
      expect(() => create(atomic(placeOrder, options as never))).toThrow(
        expect.objectContaining({ code: 'INVALID_OPTIONS', message }) as Error,
      );
    });

    it('fails the cold start for a store without commitWithItemMarker, and needs nothing else', () => {
      const { commitWithItemMarker } = createMemoryStore();
      expect(() => create(atomic(placeOrder, { marker: 'item' }), { insert() {}, commit() {} })).toThrow(
        expect.objectContaining({ code: 'INVALID_OPTIONS' }) as Error,
      );
      expect(() => create(atomic(placeOrder, { marker: 'item' }), { commitWithItemMarker })).not.toThrow();
    });

    it('types the item-marker unit of work only under marker item, and its marked write as a put', () => {
      atomic<OrderPlaced>(
        (message, unitOfWork) => {
          expectTypeOf(message).toEqualTypeOf<Message<OrderPlaced>>();
          expectTypeOf(unitOfWork).toEqualTypeOf<ItemMarkerUnitOfWork>();
          unitOfWork.putAsMarker({
            TableName: 'Orders',
            // @ts-expect-error a marked write is a put: an update cannot carry the marker
            Key: { orderId: message.body.orderId },
            UpdateExpression: 'SET total = :total',
            keyAttribute: 'orderId',
          });
        },
        { marker: 'item' },
      );
      atomic<OrderPlaced>((_message, unitOfWork) => {
        expectTypeOf(unitOfWork).toEqualTypeOf<UnitOfWork>();
        // @ts-expect-error without `marker: 'item'` there is no put to mark
        unitOfWork.putAsMarker({ TableName: 'Orders', Item: { orderId: 'o-1' }, keyAttribute: 'orderId' });
      });
      atomic<OrderPlaced>(() => undefined, { marker: 'inbox' });
    });
  });
});
