/**
 * Atomic mode with the marker on a business item (`atomic(handle, { marker: 'item' })`) through
 * `createSqsHandler` on the local endpoint: the commit holds no inbox record (the marked put alone
 * is one conditional `PutItem`), a duplicate is recognised from the business item the cancelled
 * transaction or the failed put returns (`ALL_OLD`), a foreign or
 * other payload is a mismatch, the put's own condition stays a business condition, and a commit
 * whose response is lost, or raced by a second delivery, has one effect.
 */
import { type DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENTITY_FINGERPRINT_ATTRIBUTE } from '../../lambda/core/contract';
import { fromBody } from '../../lambda/core/dedup-key';
import type { DeadLetterMessage } from '../../lambda/dead-letter/dead-letter-message';
import { type AtomicHandler, atomic, type ItemMarkerHandler } from '../../lambda/modes/atomic';
import { createSqsHandler, type SqsHandlerOptions } from '../../lambda/sqs/sqs-handler';
import { uniqueName } from '../support/aws';
import {
  captureMetrics,
  counts,
  createLocalResources,
  deferred,
  sqsEvent,
  sqsRecord,
} from '../support/fixtures';
import { attachRequestCounter } from '../support/request-counter';

interface OrderPlaced {
  readonly orderId: string;
  readonly sku: string;
  readonly total: number;
}

const local = createLocalResources();
const inboxTable = uniqueName('eo-item-marker-inbox');
const ordersTable = uniqueName('eo-item-marker-orders');
const stockTable = uniqueName('eo-item-marker-stock');
const context = { getRemainingTimeInMillis: () => 60_000 };

beforeAll(async () => {
  await Promise.all([
    local.createTable(inboxTable),
    local.createTable(ordersTable, ['orderId']),
    local.createTable(stockTable),
  ]);
});

afterAll(() => local.dispose());

/** The client that writes test setup, never counted. */
const setupClient = local.documentClient();
let sequence = 0;
/** A fresh order (and its own stock row), so tests never share an item. */
async function freshOrder(total = 30): Promise<OrderPlaced> {
  const id = `${++sequence}-${Date.now()}`;
  const order = { orderId: `o-${id}`, sku: `sku-${id}`, total };
  await setupClient.send(new PutCommand({ TableName: stockTable, Item: { pk: order.sku, available: 10 } }));
  return order;
}

/** The order row alone: the marked put is the only write, sent as one conditional PutItem. */
const orderRowOnly: ItemMarkerHandler<OrderPlaced> = (message, unitOfWork) => {
  const { orderId, sku, total } = message.body;
  unitOfWork.putAsMarker({
    TableName: ordersTable,
    Item: { orderId, sku, total, status: 'PLACED' },
    keyAttribute: 'orderId',
  });
};

/** The order row is the marker; the stock update commits with it. */
const placeOrder: ItemMarkerHandler<OrderPlaced> = (message, unitOfWork) => {
  orderRowOnly(message, unitOfWork);
  unitOfWork.update({
    TableName: stockTable,
    Key: { pk: message.body.sku },
    UpdateExpression: 'SET available = available - :one',
    ExpressionAttributeValues: { ':one': 1 },
  });
};

function handlerWith(client: DynamoDBDocumentClient, handle: ItemMarkerHandler<OrderPlaced> = placeOrder) {
  const metrics = captureMetrics();
  const deadLetters: DeadLetterMessage[] = [];
  const options = {
    consumer: 'orders',
    client,
    tableName: inboxTable,
    dedupKey: fromBody('orderId'),
    mode: atomic(handle, { marker: 'item' }),
    logLevel: 'silent',
    metrics,
    deadLetter: 'direct',
    deadLetterSender: { send: async (message: DeadLetterMessage) => void deadLetters.push(message) },
  } satisfies SqsHandlerOptions<OrderPlaced>;
  return { handler: createSqsHandler<OrderPlaced>(options), metrics, deadLetters };
}

/**
 * Loses the first answer to `commandName` on `client`: inside the SDK's retry loop, next to the
 * transport, the request is applied and its answer replaced by a connection reset.
 */
function loseFirstAnswer(client: DynamoDBDocumentClient, commandName: string): void {
  let lose = true;
  client.middlewareStack.add(
    (next, commandContext) => async (args) => {
      const result = await next(args);
      if (lose && commandContext.commandName === commandName) {
        lose = false;
        throw Object.assign(new Error('socket hang up (the response was lost)'), { code: 'ECONNRESET' });
      }
      return result;
    },
    { step: 'deserialize', priority: 'low', name: 'loseCommitAnswer' },
  );
}

const failed = (...messageIds: string[]) => ({
  batchItemFailures: messageIds.map((itemIdentifier) => ({ itemIdentifier })),
});
const readOrder = (orderId: string) => local.readItem(ordersTable, { orderId });
const readStock = (sku: string) => local.readItem(stockTable, { pk: sku });

describe('atomic mode with the marker on a business item, on the local endpoint', () => {
  it('commits the business writes in one transaction with the fingerprint on the order row, writing no inbox record', async () => {
    const client = local.documentClient();
    const counter = attachRequestCounter(client);
    const { handler, metrics } = handlerWith(client);
    const order = await freshOrder();

    expect(await handler(sqsEvent(sqsRecord('m-1', order)), context)).toEqual(failed());

    expect(counter.counts()).toEqual({ TransactWriteItems: 1 });
    expect(await readOrder(order.orderId)).toEqual({
      ...order,
      status: 'PLACED',
      [ENTITY_FINGERPRINT_ATTRIBUTE]: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(await readStock(order.sku)).toEqual({ pk: order.sku, available: 9 });
    expect(await local.scanItems(inboxTable)).toEqual([]);
    expect(metrics.published[0]?.counts).toEqual(counts({ processed: 1 }));
  });

  it('acknowledges a redelivery as a duplicate from the order row the cancelled transaction returns, in one request', async () => {
    const client = local.documentClient();
    const { handler, metrics } = handlerWith(client);
    const order = await freshOrder();
    await handler(sqsEvent(sqsRecord('m-1', order)), context);
    const stored = await readOrder(order.orderId);
    const counter = attachRequestCounter(client);

    expect(await handler(sqsEvent(sqsRecord('m-1', order)), context)).toEqual(failed());

    // ALL_OLD brings the item back with the cancellation: no read follows.
    expect(counter.counts()).toEqual({ TransactWriteItems: 1 });
    expect(await readOrder(order.orderId)).toEqual(stored);
    expect(await readStock(order.sku)).toEqual({ pk: order.sku, available: 9 });
    expect(await local.scanItems(inboxTable)).toEqual([]);
    expect(metrics.published.map((published) => published.counts)).toEqual([
      counts({ processed: 1 }),
      counts({ duplicate: 1 }),
    ]);
  });

  it('dead-letters the same key with another payload as PAYLOAD_MISMATCH, leaving the order row alone', async () => {
    const { handler, deadLetters } = handlerWith(local.documentClient());
    const order = await freshOrder(30);
    await handler(sqsEvent(sqsRecord('m-1', order)), context);
    const stored = await readOrder(order.orderId);

    expect(await handler(sqsEvent(sqsRecord('m-2', { ...order, total: 99 })), context)).toEqual(failed());

    expect(deadLetters).toMatchObject([{ code: 'PAYLOAD_MISMATCH', sourceMessageId: 'm-2' }]);
    expect(await readOrder(order.orderId)).toEqual(stored);
    expect(await readStock(order.sku)).toEqual({ pk: order.sku, available: 9 });
  });

  it('dead-letters a message whose order row exists without a fingerprint (written by something else) as PAYLOAD_MISMATCH', async () => {
    const client = local.documentClient();
    const { handler, deadLetters } = handlerWith(client);
    const order = await freshOrder();
    await client.send(new PutCommand({ TableName: ordersTable, Item: { orderId: order.orderId, total: 1 } }));

    expect(await handler(sqsEvent(sqsRecord('m-1', order)), context)).toEqual(failed());

    expect(deadLetters).toMatchObject([{ code: 'PAYLOAD_MISMATCH', sourceMessageId: 'm-1' }]);
    expect(await readOrder(order.orderId)).toEqual({ orderId: order.orderId, total: 1 });
    expect(await readStock(order.sku)).toEqual({ pk: order.sku, available: 10 });
  });

  it('dead-letters the put’s own condition failing as BUSINESS_CONDITION_FAILED, its placeholders kept apart from the marker’s', async () => {
    const { handler, deadLetters } = handlerWith(local.documentClient(), (message, unitOfWork) => {
      unitOfWork.putAsMarker({
        TableName: ordersTable,
        Item: { orderId: message.body.orderId, total: message.body.total },
        keyAttribute: 'orderId',
        // `#pk` and `:nowSeconds` are the marker condition's own names: they must not collide.
        ConditionExpression: 'attribute_exists(#pk) OR :nowSeconds = :never',
        ExpressionAttributeNames: { '#pk': 'approvedAt' },
        ExpressionAttributeValues: { ':nowSeconds': 1, ':never': 2 },
      });
    });
    const order = await freshOrder();

    expect(await handler(sqsEvent(sqsRecord('m-1', order)), context)).toEqual(failed());

    expect(deadLetters).toMatchObject([
      {
        code: 'BUSINESS_CONDITION_FAILED',
        reason: expect.stringMatching(/^The condition of business write 0 failed/),
      },
    ]);
    expect(await readOrder(order.orderId)).toBeUndefined();
  });

  it('has one effect when the commit is applied, its response lost, and the SDK sends it again', async () => {
    const lossy = local.documentClient({ maxAttempts: 3 });
    const tokens: unknown[] = [];
    // The transaction is applied, its answer lost, and the SDK retries the very same request.
    loseFirstAnswer(lossy, 'TransactWriteItemsCommand');
    lossy.middlewareStack.add(
      (next, commandContext) => async (args) => {
        if (commandContext.commandName === 'TransactWriteItemsCommand') {
          const { body } = args.request as { body: string | Uint8Array };
          const text = typeof body === 'string' ? body : new TextDecoder().decode(body);
          tokens.push((JSON.parse(text) as { ClientRequestToken?: unknown }).ClientRequestToken);
        }
        return next(args);
      },
      { step: 'deserialize', priority: 'low', name: 'recordRequestTokens' },
    );
    const counter = attachRequestCounter(lossy);
    const { handler, metrics } = handlerWith(lossy);
    const order = await freshOrder();

    expect(await handler(sqsEvent(sqsRecord('m-1', order)), context)).toEqual(failed());

    expect(counter.counts()).toEqual({ TransactWriteItems: 2 });
    // The resend carries the SDK's idempotency token of the first attempt, so the endpoint answers
    // it as that committed transaction (without the token it would meet the order row: a duplicate).
    expect(tokens).toHaveLength(2);
    expect(tokens[0]).toEqual(expect.any(String));
    expect(tokens[1]).toBe(tokens[0]);
    expect(await readStock(order.sku)).toEqual({ pk: order.sku, available: 9 });
    expect(await readOrder(order.orderId)).toMatchObject({ status: 'PLACED' });
    expect(metrics.published.map((published) => published.counts)).toEqual([counts({ processed: 1 })]);
    // A later redelivery meets the order row: a duplicate, still one effect.
    expect(await handler(sqsEvent(sqsRecord('m-1', order)), context)).toEqual(failed());
    expect(await readStock(order.sku)).toEqual({ pk: order.sku, available: 9 });
    expect(metrics.published[1]?.counts).toEqual(counts({ duplicate: 1 }));
  });

  it('has one effect when a lost response fails the invocation and the queue delivers the message again', async () => {
    const lossy = local.documentClient({ maxAttempts: 1 });
    loseFirstAnswer(lossy, 'TransactWriteItemsCommand');
    const { handler, metrics } = handlerWith(lossy);
    const order = await freshOrder();

    expect(await handler(sqsEvent(sqsRecord('m-1', order)), context)).toEqual(failed('m-1'));
    expect(await handler(sqsEvent(sqsRecord('m-1', order, { receiveCount: 2 })), context)).toEqual(failed());

    expect(await readStock(order.sku)).toEqual({ pk: order.sku, available: 9 });
    expect(metrics.published.map((published) => published.counts)).toEqual([
      counts({ retry: 1 }),
      counts({ duplicate: 1 }),
    ]);
  });

  it('writes a lone marked put with one PutItem, and reads its redelivery and another payload from the row', async () => {
    const client = local.documentClient();
    const counter = attachRequestCounter(client);
    const { handler, metrics, deadLetters } = handlerWith(client, orderRowOnly);
    const order = await freshOrder();

    expect(await handler(sqsEvent(sqsRecord('m-1', order)), context)).toEqual(failed());
    const stored = await readOrder(order.orderId);
    expect(await handler(sqsEvent(sqsRecord('m-1', order)), context)).toEqual(failed());
    expect(await handler(sqsEvent(sqsRecord('m-2', { ...order, total: 99 })), context)).toEqual(failed());

    // The failed condition returns the row (ALL_OLD): no read follows.
    expect(counter.counts()).toEqual({ PutItem: 3 });
    expect(stored).toEqual({
      ...order,
      status: 'PLACED',
      [ENTITY_FINGERPRINT_ATTRIBUTE]: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(await readOrder(order.orderId)).toEqual(stored);
    expect(await local.scanItems(inboxTable)).toEqual([]);
    expect(deadLetters).toMatchObject([{ code: 'PAYLOAD_MISMATCH', sourceMessageId: 'm-2' }]);
    expect(metrics.published.map((published) => published.counts)).toEqual([
      counts({ processed: 1 }),
      counts({ duplicate: 1 }),
      counts({ mismatch: 1 }),
    ]);
  });

  it('has one effect when a lone marked put is applied, its response lost, and the SDK sends it again: the retry meets its own row, a duplicate', async () => {
    const lossy = local.documentClient({ maxAttempts: 3 });
    loseFirstAnswer(lossy, 'PutItemCommand');
    const counter = attachRequestCounter(lossy);
    const { handler, metrics, deadLetters } = handlerWith(lossy, orderRowOnly);
    const order = await freshOrder();

    expect(await handler(sqsEvent(sqsRecord('m-1', order)), context)).toEqual(failed());

    // A PutItem has no idempotency token: the resend meets the row its first attempt wrote, with
    // this message's fingerprint, as entity mode's resend does.
    expect(counter.counts()).toEqual({ PutItem: 2 });
    expect(await readOrder(order.orderId)).toMatchObject({ status: 'PLACED', total: order.total });
    expect(deadLetters).toEqual([]);
    expect(metrics.published.map((published) => published.counts)).toEqual([counts({ duplicate: 1 })]);
  });

  it.each([
    ['a transaction', placeOrder, 9],
    ['a lone marked put', orderRowOnly, 10],
  ] as const)(
    'has one effect when two deliveries of the message commit at once, in %s',
    async (_shape, writes, available) => {
      const order = await freshOrder();
      const both = deferred();
      let waiting = 2;
      // Both handlers have described their writes before either commit is sent.
      const racing: ItemMarkerHandler<OrderPlaced> = async (message, unitOfWork) => {
        writes(message, unitOfWork);
        if (--waiting === 0) both.resolve();
        await both.promise;
      };
      const first = handlerWith(local.documentClient(), racing);
      const second = handlerWith(local.documentClient(), racing);

      const results = await Promise.all([
        first.handler(sqsEvent(sqsRecord('m-1', order)), context),
        second.handler(sqsEvent(sqsRecord('m-1b', order)), context),
      ]);

      expect(results).toEqual([failed(), failed()]);
      expect(await readStock(order.sku)).toEqual({ pk: order.sku, available });
      const outcomes = [...first.metrics.published, ...second.metrics.published].map(
        (published) => published.counts,
      );
      expect(outcomes).toHaveLength(2);
      expect(outcomes).toContainEqual(counts({ processed: 1 }));
      expect(outcomes).toContainEqual(counts({ duplicate: 1 }));
    },
  );

  describe('requests and write units for a one-item effect, against the inbox marker', () => {
    const NOT_REPORTED = -1;
    /** Asks every request for its consumed capacity and keeps the write units it reports. */
    function capacityOf(client: DynamoDBDocumentClient): { readonly units: number[] } {
      const units: number[] = [];
      // Before the SDK serialises the input: every attempt asks for the capacity it consumed.
      client.middlewareStack.add(
        (next) => async (args) => {
          (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'TOTAL';
          try {
            const result = await next(args);
            const consumed = (result.output as { ConsumedCapacity?: unknown }).ConsumedCapacity;
            units.push(sumWriteUnits(consumed));
            return result;
          } catch (error) {
            // A cancelled transaction's error carries no ConsumedCapacity.
            units.push(NOT_REPORTED);
            throw error;
          }
        },
        { step: 'initialize', name: 'consumedCapacity' },
      );
      return { units };
    }
    // A write's TOTAL may name its units `CapacityUnits` alone (a PutItem), or also
    // `WriteCapacityUnits` (a transaction).
    const sumWriteUnits = (consumed: unknown): number =>
      (Array.isArray(consumed) ? consumed : [consumed]).reduce((sum: number, entry) => {
        const { WriteCapacityUnits, CapacityUnits } = (entry ?? {}) as {
          WriteCapacityUnits?: number;
          CapacityUnits?: number;
        };
        return sum + Number(WriteCapacityUnits ?? CapacityUnits ?? 0);
      }, 0);

    it('commits a one-item effect in one PutItem and 1 write unit, where the inbox marker takes a transaction and 4; a duplicate in one request too', async () => {
      const onItem = local.documentClient();
      const inInbox = local.documentClient();
      const [itemCapacity, inboxCapacity] = [capacityOf(onItem), capacityOf(inInbox)];
      const [itemCounter, inboxCounter] = [attachRequestCounter(onItem), attachRequestCounter(inInbox)];
      const orderRow: ItemMarkerHandler<OrderPlaced> = (message, unitOfWork) => {
        unitOfWork.putAsMarker({
          TableName: ordersTable,
          Item: { orderId: message.body.orderId },
          keyAttribute: 'orderId',
        });
      };
      const inboxOrderRow: AtomicHandler<OrderPlaced> = (message, unitOfWork) => {
        unitOfWork.put({ TableName: ordersTable, Item: { orderId: message.body.orderId } });
      };
      const item = handlerWith(onItem, orderRow);
      const inbox = createSqsHandler<OrderPlaced>({
        consumer: 'orders',
        client: inInbox,
        tableName: inboxTable,
        dedupKey: fromBody('orderId'),
        mode: atomic(inboxOrderRow),
        logLevel: 'silent',
        metrics: captureMetrics(),
      });
      const [first, second] = [await freshOrder(), await freshOrder()];

      await item.handler(sqsEvent(sqsRecord('m-1', first)), context);
      await item.handler(sqsEvent(sqsRecord('m-1', first)), context);
      await inbox(sqsEvent(sqsRecord('m-2', second)), context);
      await inbox(sqsEvent(sqsRecord('m-2', second)), context);

      // The marked put alone is entity mode's conditional PutItem, not a one-item transaction.
      expect(itemCounter.counts()).toEqual({ PutItem: 2 });
      expect(inboxCounter.counts()).toEqual({ TransactWriteItems: 2 });
      // First delivery, then the duplicate (a failed condition or a cancelled transaction: the
      // endpoint reports no capacity for it).
      expect(itemCapacity.units).toEqual([1, NOT_REPORTED]);
      expect(inboxCapacity.units).toEqual([4, NOT_REPORTED]);
    });
  });
});
