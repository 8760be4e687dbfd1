/**
 * `createOutboxWriter` against the emulator over HTTP: events and business writes in one
 * transaction, a retried request with the same idempotency key written once, and a cancelled
 * transaction leaving no outbox item.
 */
import { randomBytes } from 'node:crypto';
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
});
