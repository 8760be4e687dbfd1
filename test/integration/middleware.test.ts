/**
 * The middy middleware (`createSqsMiddleware` under `@middy/core`) against the real local AWS
 * endpoint: for the same batch it must answer exactly as `createSqsHandler` does and leave the
 * same items behind. Each path gets its own inbox and business tables, seeded the same way.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import middy from '@middy/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createJsonLogger,
  createSqsHandler,
  createSqsMiddleware,
  fromBody,
  type Message,
  PermanentError,
  type SqsBatchResponse,
  type SqsEvent,
  type SqsHandlerOptions,
  type SqsRecord,
  type UnitOfWork,
} from '../../lambda';
import { atomic } from '../../lambda/modes/atomic';
import { uniqueName } from '../support/aws';
import {
  createLocalResources,
  injectFaults,
  lambdaContext,
  type OrderEvent,
  sqsRecord,
  THROTTLED,
} from '../support/fixtures';
import { attachRequestCounter } from '../support/request-counter';

const local = createLocalResources();
const now = Date.now();

interface Tables {
  readonly inbox: string;
  readonly orders: string;
}

const direct: Tables = { inbox: uniqueName('eo-mw-direct-inbox'), orders: uniqueName('eo-mw-direct-orders') };
const viaMiddy: Tables = { inbox: uniqueName('eo-mw-middy-inbox'), orders: uniqueName('eo-mw-middy-orders') };
const allTables = [direct.inbox, direct.orders, viaMiddy.inbox, viaMiddy.orders];

// One attempt: the injected throttle fails at once instead of waiting for the SDK's backoff.
const newClient = () => local.documentClient({ maxAttempts: 1 });
const admin = newClient();

beforeAll(async () => {
  for (const TableName of allTables) await local.createTable(TableName);
});

afterAll(() => local.dispose());

async function scan(TableName: string): Promise<Record<string, unknown>[]> {
  const { Items = [] } = await admin.send(new ScanCommand({ TableName, ConsistentRead: true }));
  return Items.sort((a, b) => String(a.pk).localeCompare(String(b.pk)));
}

/** A FIFO record as Lambda delivers it, sent at `now`. */
const fifoRecord = (body: unknown, groupId: string, rawBody?: string): SqsRecord =>
  sqsRecord(randomUUID(), body, { groupId, rawBody, sentAt: now });

/**
 * The options of one path: the order projector over `tables`, committing one transaction per
 * message, with its own client, a throttle injected for orders whose id contains `throttled`,
 * and logs captured.
 */
function pathOptions(tables: Tables) {
  const client = newClient();
  const counter = attachRequestCounter(client);
  injectFaults(client, (_, body) => (body.includes('throttled') ? THROTTLED : undefined));
  const lines: string[] = [];
  const options: SqsHandlerOptions<OrderEvent> = {
    consumer: 'order-projector',
    client,
    tableName: tables.inbox,
    dedupKey: fromBody((order: OrderEvent) => [order.orderId, order.status]),
    mode: atomic(
      (message: Message<OrderEvent>, unitOfWork: UnitOfWork) => {
        const { orderId, status, amount } = message.body;
        if (amount < 0) throw new PermanentError('An order amount cannot be negative');
        unitOfWork.put({ TableName: tables.orders, Item: { pk: `ORDER#${orderId}`, status, amount } });
        unitOfWork.put({ TableName: tables.orders, Item: { pk: `ORDER#${orderId}#${status}`, amount } });
        // One transaction per message: the throttle injected by body meets its own order alone.
      },
      { commit: 'message' },
    ),
    clock: () => now,
    logger: createJsonLogger((line) => lines.push(line)),
    logLevel: 'debug',
    metrics: false,
  };
  return { options, counter, lines };
}

/** Orders log entries by their record's position in the batch (records run concurrently). */
const byBatchPosition =
  (records: readonly SqsRecord[]) => (a: Record<string, unknown>, b: Record<string, unknown>) =>
    records.findIndex((record) => record.messageId === a.messageId) -
    records.findIndex((record) => record.messageId === b.messageId);

describe('createSqsMiddleware under middy', () => {
  it('answers the same batch with the same batch response, stored items, logs and requests as createSqsHandler', async () => {
    const run = randomBytes(3).toString('hex');
    const order = (label: string, status: string, amount: number) => ({
      orderId: `${label}-${run}`,
      status,
      amount,
    });
    const seed = [order('seeded', 'CREATED', 10), order('reused', 'CREATED', 20)];
    const seedBatch: SqsEvent = { Records: seed.map((body) => fifoRecord(body, body.orderId)) };
    const records = [
      fifoRecord(order('fresh', 'CREATED', 30), 'g-fresh'),
      fifoRecord(order('seeded', 'CREATED', 10), 'g-seeded'), // duplicate
      fifoRecord(order('reused', 'CREATED', 21), 'g-reused'), // mismatch
      fifoRecord(undefined, 'g-bad', '{"orderId": '), // malformed
      fifoRecord(order('negative', 'CREATED', -1), 'g-negative'), // PermanentError
      fifoRecord(order('throttled', 'CREATED', 40), 'g-throttled'), // injected throttle
      fifoRecord(order('throttled', 'PAID', 40), 'g-throttled'), // blocked behind it
      fifoRecord(order('fresh', 'PAID', 30), 'g-fresh'),
    ];
    const batch: SqsEvent = { Records: records };
    const plain = pathOptions(direct);
    const wrapped = pathOptions(viaMiddy);
    const handler = createSqsHandler(plain.options);
    const middyHandler = middy<SqsEvent, SqsBatchResponse>().use(createSqsMiddleware(wrapped.options));
    await handler(seedBatch, lambdaContext());
    await middyHandler(seedBatch, lambdaContext() as never);
    for (const path of [plain, wrapped]) {
      path.counter.reset();
      path.lines.length = 0;
    }

    // One context for both: each line names its invocation's request id.
    const context = lambdaContext();
    const expected = await handler(batch, context);
    const actual = await middyHandler(batch, context as never);

    const failed = (index: number) => ({ itemIdentifier: records[index]!.messageId });
    expect(expected).toEqual({ batchItemFailures: [2, 3, 4, 5, 6].map(failed) });
    expect(actual).toEqual(expected);
    for (const [a, b] of [
      [direct.inbox, viaMiddy.inbox],
      [direct.orders, viaMiddy.orders],
    ] as const) {
      expect(await scan(b)).toEqual(await scan(a));
    }
    expect(await scan(viaMiddy.orders)).toEqual([
      { pk: `ORDER#fresh-${run}`, status: 'PAID', amount: 30 },
      { pk: `ORDER#fresh-${run}#CREATED`, amount: 30 },
      { pk: `ORDER#fresh-${run}#PAID`, amount: 30 },
      { pk: `ORDER#reused-${run}`, status: 'CREATED', amount: 20 },
      { pk: `ORDER#reused-${run}#CREATED`, amount: 20 },
      { pk: `ORDER#seeded-${run}`, status: 'CREATED', amount: 10 },
      { pk: `ORDER#seeded-${run}#CREATED`, amount: 10 },
    ]);
    const logged = (lines: string[]) => lines.map((line) => JSON.parse(line)).sort(byBatchPosition(records));
    expect(logged(wrapped.lines)).toEqual(logged(plain.lines));
    expect(logged(plain.lines).map(({ outcome, code }) => [outcome, code])).toEqual([
      ['processed', undefined],
      ['duplicate', undefined],
      ['mismatch', 'PAYLOAD_MISMATCH'],
      ['permanent', 'MALFORMED_BODY'],
      ['permanent', 'PERMANENT'],
      ['retry', 'THROTTLED'],
      ['retry', 'GROUP_BLOCKED'],
      ['processed', undefined],
    ]);
    expect(wrapped.counter.counts()).toEqual(plain.counter.counts());
    // fresh (twice), seeded, reused and the throttled attempt; the others never reach DynamoDB.
    expect(plain.counter.counts()).toEqual({ TransactWriteItems: 5 });
  });
});
