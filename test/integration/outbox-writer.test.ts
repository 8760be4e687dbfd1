/**
 * `createOutboxWriter` against the emulator over HTTP: events and business writes in one
 * transaction, a retried request with the same idempotency key written once, and a cancelled
 * transaction leaving no outbox item.
 */
import { randomBytes } from 'node:crypto';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENTITY_FINGERPRINT_ATTRIBUTE, OUTBOX_ATTRIBUTES } from '../../lambda/core/contract';
import { createOutboxWriter, outboxEventId } from '../../lambda/outbox';
import { uniqueName } from '../support/aws';
import { createLocalResources } from '../support/fixtures';

const local = createLocalResources();
const client = local.documentClient();
const outboxTable = uniqueName('eo-outbox-writer');
const ordersTable = uniqueName('eo-outbox-writer-orders');
const runId = randomBytes(3).toString('hex');

beforeAll(() => Promise.all([local.createTable(outboxTable), local.createTable(ordersTable)]));

afterAll(() => local.dispose());

const writer = createOutboxWriter({ client, tableName: outboxTable, producer: 'orders-api' });
const placed = (orderId: string) => [{ type: 'OrderPlaced', detail: { orderId }, entity: orderId }];
const newOrder = (orderId: string) => [
  {
    Put: {
      TableName: ordersTable,
      Item: { pk: orderId, status: 'PLACED' },
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  },
];

describe('createOutboxWriter on the emulator', () => {
  it('commits the event with the business write once; the retried request is a duplicate, and another payload under the key a mismatch', async () => {
    const orderId = `o-${runId}-1`;
    const key = `req-${runId}-1`;
    const id = outboxEventId(`orders-api#${key}`, 'OrderPlaced#0');

    expect(await writer.write(placed(orderId), newOrder(orderId), key)).toEqual({
      kind: 'written',
      ids: [id],
    });
    const stored = await local.readItem(outboxTable, { pk: id });
    expect(stored).toMatchObject({
      [OUTBOX_ATTRIBUTES.type]: 'OrderPlaced',
      [OUTBOX_ATTRIBUTES.body]: JSON.stringify({ orderId }),
      [OUTBOX_ATTRIBUTES.entity]: orderId,
      [OUTBOX_ATTRIBUTES.source]: 'orders-api',
      [ENTITY_FINGERPRINT_ATTRIBUTE]: expect.stringMatching(/^[0-9a-f]{64}$/),
    });

    expect(await writer.write(placed(orderId), newOrder(orderId), key)).toEqual({
      kind: 'duplicate',
      ids: [id],
    });
    expect((await writer.write(placed(`${orderId}-other`), [], key)).kind).toBe('mismatch');
    expect(await local.readItem(outboxTable, { pk: id })).toEqual(stored);
    expect(await local.readItem(ordersTable, { pk: `${orderId}-other` })).toBeUndefined();
  });

  it('writes no outbox item when a business condition fails', async () => {
    const orderId = `o-${runId}-2`;
    await writer.write(placed(orderId), newOrder(orderId), `req-${runId}-2`);
    const before = await local.scanItems(outboxTable);

    // Another request for the same order: its order row exists, so the transaction is cancelled.
    expect(await writer.write(placed(orderId), newOrder(orderId), `req-${runId}-3`)).toMatchObject({
      kind: 'condition-failed',
      index: 0,
    });
    expect(await local.scanItems(outboxTable)).toEqual(before);
  });

  it('answers a write retried after a lost response as a duplicate: one item per event, one order', async () => {
    const orderId = `o-${runId}-4`;
    const key = `req-${runId}-4`;
    let lose = true;
    // The emulator applies the transaction, then the response is lost on the way back.
    const lossy = {
      async send(command: Parameters<typeof client.send>[0]) {
        const output = await client.send(command);
        if (lose) {
          lose = false;
          throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
        }
        return output;
      },
    } as unknown as typeof client;
    const retried = createOutboxWriter({ client: lossy, tableName: outboxTable, producer: 'orders-api' });
    const events = [...placed(orderId), { type: 'OrderNoted', detail: { orderId } }];

    await expect(retried.write(events, newOrder(orderId), key)).rejects.toMatchObject({ code: 'NETWORK' });
    const result = await retried.write(events, newOrder(orderId), key);

    expect(result).toEqual({
      kind: 'duplicate',
      ids: [
        outboxEventId(`orders-api#${key}`, 'OrderPlaced#0'),
        outboxEventId(`orders-api#${key}`, 'OrderNoted#0'),
      ],
    });
    const ids = new Set(result.ids);
    expect((await local.scanItems(outboxTable)).filter((item) => ids.has(item.pk as string))).toHaveLength(2);
    expect(await local.readItem(ordersTable, { pk: orderId })).toEqual({ pk: orderId, status: 'PLACED' });
  });

  it('refuses an event whose id holds another event (OUTBOX_COLLISION), writing nothing and replacing nothing', async () => {
    const orderId = `o-${runId}-5`;
    const key = `req-${runId}-5`;
    const events = [...placed(orderId), { type: 'OrderNoted', detail: { orderId } }];
    const other = { pk: outboxEventId(`orders-api#${key}`, 'OrderNoted#0'), eventType: 'Other', body: '{}' };
    await client.send(new PutCommand({ TableName: outboxTable, Item: other }));

    await expect(writer.write(events, newOrder(orderId), key)).rejects.toMatchObject({
      code: 'OUTBOX_COLLISION',
      disposition: 'permanent',
    });
    expect(await local.readItem(outboxTable, { pk: other.pk })).toEqual(other);
    expect(
      await local.readItem(outboxTable, { pk: outboxEventId(`orders-api#${key}`, 'OrderPlaced#0') }),
    ).toBeUndefined();
    expect(await local.readItem(ordersTable, { pk: orderId })).toBeUndefined();
  });
});
