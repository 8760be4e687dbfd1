import { describe, expect, it } from 'vitest';
import { OUTBOX_ATTRIBUTES } from '../../../lambda/core/contract';
import { fingerprintOf } from '../../../lambda/core/fingerprint';
import { createOutboxWriter, outboxEventId } from '../../../lambda/outbox';
import { manualClock } from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';

function setup() {
  const store = createMemoryStore({ keys: { Outbox: ['pk'] } });
  const writer = createOutboxWriter({
    client: undefined as never,
    tableName: 'Outbox',
    producer: 'orders-api',
    store,
    clock: manualClock(),
  });
  return { store, writer };
}

const placed = (orderId: string) => [{ type: 'OrderPlaced', detail: { orderId }, entity: orderId }];
const orderRow = (orderId: string) => [
  { Put: { TableName: 'Orders', Item: { pk: orderId, status: 'PLACED' } } },
];

describe('the outbox writer', () => {
  it('commits the events and the business writes in one transaction, ids derived from the idempotency key', async () => {
    const { store, writer } = setup();

    const result = await writer.write(placed('o-1'), orderRow('o-1'), 'req-1');

    const id = outboxEventId('orders-api#req-1', 'OrderPlaced#0');
    expect(result).toEqual({ kind: 'written', ids: [id] });
    expect(store.calls.map((call) => call.method)).toEqual(['commitWithItemMarker']);
    expect(store.calls[0]!.args[1]).toEqual({
      index: 0,
      keyAttribute: 'pk',
      fingerprint: expect.any(String),
    });
    expect(
      store.items('Outbox').map((item) => [item[OUTBOX_ATTRIBUTES.pk], item[OUTBOX_ATTRIBUTES.entity]]),
    ).toEqual([[id, 'o-1']]);
    expect(store.items('Orders')).toEqual([{ pk: 'o-1', status: 'PLACED' }]);
  });

  it('writes nothing twice for a retried request with the same key and events: a duplicate', async () => {
    const { store, writer } = setup();
    const first = await writer.write(placed('o-1'), orderRow('o-1'), 'req-1');
    const outbox = store.items('Outbox');

    expect(await writer.write(placed('o-1'), orderRow('o-1'), 'req-1')).toEqual({
      kind: 'duplicate',
      ids: first.ids,
    });
    expect(store.items('Outbox')).toEqual(outbox);
  });

  it('puts every outbox item only if its id is free or holds the same event', async () => {
    const { store, writer } = setup();
    const events = [...placed('o-1'), { type: 'OrderNoted', detail: { orderId: 'o-1' } }];

    await writer.write(events, orderRow('o-1'), 'req-1');

    const [writes] = store.calls[0]!.args as [{ Put?: Record<string, unknown> }[]];
    const body = '{"orderId":"o-1"}';
    const condition = (...content: unknown[]) => ({
      ConditionExpression: 'attribute_not_exists(#pk) OR #contentHash = :contentHash',
      ExpressionAttributeNames: { '#pk': 'pk', '#contentHash': 'contentHash' },
      ExpressionAttributeValues: { ':contentHash': fingerprintOf(content) },
    });
    expect(
      writes.map(({ Put }) => ({
        ConditionExpression: Put?.ConditionExpression,
        ExpressionAttributeNames: Put?.ExpressionAttributeNames,
        ExpressionAttributeValues: Put?.ExpressionAttributeValues,
      })),
    ).toEqual([
      condition('OrderPlaced', body, 'o-1'),
      condition('OrderNoted', body, null),
      {
        ConditionExpression: undefined,
        ExpressionAttributeNames: undefined,
        ExpressionAttributeValues: undefined,
      },
    ]);
  });

  it('throws OUTBOX_COLLISION when an event meets another event under its id, writing nothing', async () => {
    const { store, writer } = setup();
    const events = [...placed('o-1'), { type: 'OrderNoted', detail: { orderId: 'o-1' } }];
    const other = { pk: outboxEventId('orders-api#req-1', 'OrderNoted#0'), eventType: 'Other', body: '{}' };
    store.seed('Outbox', other);

    await expect(writer.write(events, orderRow('o-1'), 'req-1')).rejects.toMatchObject({
      code: 'OUTBOX_COLLISION',
      disposition: 'permanent',
    });
    expect(store.items('Outbox')).toEqual([other]);
    expect(store.items('Orders')).toEqual([]);
  });

  it('passes an event whose id already holds that same event (its item expired with the marker, say)', async () => {
    const { store, writer } = setup();
    const noted = { type: 'OrderNoted', detail: { orderId: 'o-1' } };
    const same = {
      pk: outboxEventId('orders-api#req-1', 'OrderNoted#0'),
      eventType: 'OrderNoted',
      body: '{"orderId":"o-1"}',
      contentHash: fingerprintOf(['OrderNoted', '{"orderId":"o-1"}', null]),
    };
    store.seed('Outbox', same);

    expect((await writer.write([...placed('o-1'), noted], orderRow('o-1'), 'req-1')).kind).toBe('written');
    expect(store.items('Outbox')).toHaveLength(2);
  });

  it('reports a key reused with other events as a mismatch, writing nothing', async () => {
    const { store, writer } = setup();
    await writer.write(placed('o-1'), orderRow('o-1'), 'req-1');
    const outbox = store.items('Outbox');

    expect((await writer.write(placed('o-2'), orderRow('o-2'), 'req-1')).kind).toBe('mismatch');
    expect(store.items('Outbox')).toEqual(outbox);
    expect(store.items('Orders')).toEqual([{ pk: 'o-1', status: 'PLACED' }]);
  });

  it('writes no outbox item when a business condition fails, naming the business write', async () => {
    const { store, writer } = setup();
    const guarded = [
      { Put: { TableName: 'Orders', Item: { pk: 'o-1' } } },
      {
        ConditionCheck: {
          TableName: 'Stock',
          Key: { pk: 'sku-1' },
          ConditionExpression: 'attribute_exists(pk)',
        },
      },
    ];

    expect(await writer.write(placed('o-1'), guarded, 'req-1')).toMatchObject({
      kind: 'condition-failed',
      index: 1,
    });
    expect(store.items('Outbox')).toEqual([]);
    expect(store.items('Orders')).toEqual([]);
  });

  it('rejects a write without an idempotency key or events, or beyond 100 actions, before any request', async () => {
    const { store, writer } = setup();

    await expect(writer.write(placed('o-1'), [], '')).rejects.toMatchObject({ code: 'VALIDATION' });
    await expect(writer.write([], [], 'req-1')).rejects.toMatchObject({ code: 'VALIDATION' });
    await expect(
      writer.write(placed('o-1'), Array(100).fill(orderRow('o-1')[0]), 'req-1'),
    ).rejects.toMatchObject({
      code: 'TOO_MANY_WRITES',
    });
    expect(store.calls).toEqual([]);
  });

  it('fails fast on a producer name that could share a prefix with another', () => {
    expect(() =>
      createOutboxWriter({ client: undefined as never, tableName: 'Outbox', producer: 'a#b' }),
    ).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }));
  });
});
