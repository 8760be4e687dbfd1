/**
 * The completed-record cache against the local endpoint over HTTP, requests counted by an SDK
 * middleware: a duplicate in a warm handler makes no request in any mode; the cache honours
 * `expiresAt` (a manual clock past it sends the message to the store again) and the fingerprint
 * (another payload goes to the store, which answers `PAYLOAD_MISMATCH`: one request, as without
 * the cache, so a dead letter never rests on a stale entry); with the cache off, behaviour and
 * request counts are what they were.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CompletedCacheOptions,
  createSqsDeadLetterSender,
  createSqsHandler,
  fromBody,
  type Mode,
} from '../../lambda';
import { atomic } from '../../lambda/modes/atomic';
import { entity } from '../../lambda/modes/entity';
import { marker } from '../../lambda/modes/marker';
import { twoPhase } from '../../lambda/modes/two-phase';
import { uniqueName } from '../support/aws';
import {
  captureLogger,
  captureMetrics,
  counts,
  createLocalResources,
  lambdaContext,
  manualClock,
  sqsRecord,
} from '../support/fixtures';
import { attachRequestCounter } from '../support/request-counter';

const local = createLocalResources();
const client = local.documentClient();
const counter = attachRequestCounter(client);
const inboxTable = uniqueName('eo-cache-inbox');
const ordersTable = uniqueName('eo-cache-orders');

interface Order {
  readonly orderId: string;
  readonly amount: number;
}

beforeAll(async () => {
  await local.createTable(inboxTable);
  await local.createTable(ordersTable);
});
afterAll(() => local.dispose());

/** The four modes, each writing the order (or running one effect) and recording what ran. */
function modes(ran: string[]): Record<string, Mode<Order, unknown>> {
  return {
    marker: marker<Order>((message) => {
      ran.push(message.messageId);
    }),
    atomic: atomic<Order>((message, unitOfWork) => {
      ran.push(message.messageId);
      unitOfWork.put({
        TableName: ordersTable,
        Item: { pk: message.body.orderId, amount: message.body.amount },
      });
    }),
    entity: entity<Order>((message) => {
      ran.push(message.messageId);
      return { tableName: ordersTable, keyAttribute: 'pk', item: { pk: message.body.orderId } };
    }),
    twoPhase: twoPhase<Order>({
      leaseMillis: 30_000,
      handle: (message, effects) =>
        effects.run('charge', () => {
          ran.push(message.messageId);
        }),
    }),
  } as Record<string, Mode<Order, unknown>>;
}

function handlerFor(
  mode: Mode<Order, unknown>,
  completedCache: CompletedCacheOptions | undefined,
  extra: { clock?: () => number; ttlSeconds?: number; deadLetterQueueUrl?: string } = {},
) {
  const logger = captureLogger();
  const metrics = captureMetrics();
  const handler = createSqsHandler<Order>({
    consumer: `cache-${randomUUID().slice(0, 8)}`,
    dedupKey: fromBody('orderId'),
    mode,
    client,
    tableName: inboxTable,
    environment: {},
    clock: extra.clock ?? Date.now,
    ttlSeconds: extra.ttlSeconds ?? 3600,
    logger,
    metrics,
    completedCache,
    ...(extra.deadLetterQueueUrl === undefined
      ? {}
      : {
          deadLetter: 'direct' as const,
          deadLetterSender: createSqsDeadLetterSender({
            client: local.sqs,
            queueUrl: extra.deadLetterQueueUrl,
          }),
        }),
  });
  return { handler, logger, metrics };
}

/** The requests one delivery of `order` makes, and its batch response. */
async function deliver(
  handler: ReturnType<typeof createSqsHandler>,
  order: Order,
  messageId: string = randomUUID(),
) {
  counter.reset();
  const response = await handler({ Records: [sqsRecord(messageId, order)] }, lambdaContext());
  return { response, requests: counter.counts() };
}

const order = (amount = 10): Order => ({ orderId: `o-${randomUUID()}`, amount });

describe('completed-record cache on the local endpoint', () => {
  it.each(['marker', 'atomic', 'entity', 'twoPhase'])(
    'acknowledges a duplicate in a warm %s handler with no request, logged and counted as a cache hit',
    async (name) => {
      const ran: string[] = [];
      const { handler, logger, metrics } = handlerFor(modes(ran)[name]!, { maxEntries: 100 });
      const placed = order();
      await deliver(handler, placed, 'm-1');

      const duplicate = await deliver(handler, placed, 'm-2');

      expect(duplicate).toEqual({ response: { batchItemFailures: [] }, requests: {} });
      expect(ran).toEqual(['m-1']);
      expect(metrics.published.map((published) => published.counts)).toEqual([
        counts({ processed: 1 }),
        counts({ duplicate: 1, cacheHit: 1 }),
      ]);
      expect(logger.entries.filter((entry) => entry.messageId === 'm-2')).toEqual([
        expect.objectContaining({ outcome: 'duplicate', cache: 'hit' }),
      ]);
    },
  );

  it.each(['marker', 'atomic', 'entity', 'twoPhase'])(
    'makes the same requests with the cache off as before, and the same first delivery with it on (%s)',
    async (name) => {
      const off = handlerFor(modes([])[name]!, undefined).handler;
      const on = handlerFor(modes([])[name]!, { maxEntries: 100 }).handler;
      const offOrder = order();
      const onOrder = order();

      const offFirst = await deliver(off, offOrder);
      const offDuplicate = await deliver(off, offOrder);
      const onFirst = await deliver(on, onOrder);

      const expected = {
        marker: { first: { PutItem: 1 }, duplicate: { PutItem: 1 } },
        atomic: { first: { TransactWriteItems: 1 }, duplicate: { TransactWriteItems: 1 } },
        entity: { first: { PutItem: 1 }, duplicate: { PutItem: 1 } },
        twoPhase: { first: { PutItem: 1, UpdateItem: 1 }, duplicate: { PutItem: 1 } },
      }[name]!;
      expect({ first: offFirst.requests, duplicate: offDuplicate.requests }).toEqual(expected);
      expect(offDuplicate.response).toEqual({ batchItemFailures: [] });
      expect(onFirst.requests).toEqual(expected.first);
    },
  );

  it('asks the store again once the clock passes expiresAt, and the store lets the message run again', async () => {
    const ran: string[] = [];
    const clock = manualClock(Date.now());
    const { handler } = handlerFor(modes(ran).marker!, { maxEntries: 100 }, { clock, ttlSeconds: 60 });
    const placed = order();
    await deliver(handler, placed, 'm-1');
    const cached = await deliver(handler, placed, 'm-2');
    clock.advance(60_000);

    const expired = await deliver(handler, placed, 'm-3');

    expect({ cached: cached.requests, expired: expired.requests }).toEqual({
      cached: {},
      expired: { PutItem: 1 },
    });
    expect(ran).toEqual(['m-1', 'm-3']);
  });

  it('sends another payload under a cached key to the store, which dead-letters it as PAYLOAD_MISMATCH, and still answers the first payload from the cache', async () => {
    const deadLetters = await local.createQueue('eo-cache-dlq');
    const { handler, logger } = handlerFor(
      modes([]).atomic!,
      { maxEntries: 100 },
      {
        deadLetterQueueUrl: deadLetters.url,
      },
    );
    const placed = order(10);
    await deliver(handler, placed, 'm-1');

    const changed = await deliver(handler, { ...placed, amount: 99 }, 'm-2');
    const same = await deliver(handler, placed, 'm-3');

    expect(changed).toEqual({ response: { batchItemFailures: [] }, requests: { TransactWriteItems: 1 } });
    expect(same.requests).toEqual({});
    const received = await local.receive(deadLetters.url);
    expect(
      received.map(({ Body, MessageAttributes = {} }) => ({
        Body,
        code: MessageAttributes['eo-code']?.StringValue,
        sourceMessageId: MessageAttributes['eo-source-message-id']?.StringValue,
      })),
    ).toEqual([
      { Body: JSON.stringify({ ...placed, amount: 99 }), code: 'PAYLOAD_MISMATCH', sourceMessageId: 'm-2' },
    ]);
    expect(logger.entries.map(({ messageId, outcome, cache }) => [messageId, outcome, cache])).toEqual([
      ['m-2', 'mismatch', undefined],
      ['m-3', 'duplicate', 'hit'],
    ]);
    expect(await local.readItem(ordersTable, { pk: placed.orderId })).toEqual({
      pk: placed.orderId,
      amount: 10,
    });
  });
});
