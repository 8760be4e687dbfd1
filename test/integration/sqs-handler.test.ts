/**
 * The complete SQS handler (`createSqsHandler`, from the package root) against the real local
 * AWS endpoint over HTTP. Events are built the way Lambda delivers them; faults are injected
 * with an SDK middleware on a real client (the request still goes through the SDK's
 * serialisation, retry strategy and deserialisation). Real SQS queues are exercised in
 * `sqs-handler-queues.test.ts`, the middy middleware in `middleware.test.ts`.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { type DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createEmfMetricsSink,
  createSqsHandler,
  type EntityWrite,
  fromAttribute,
  fromBody,
  METRICS,
  PermanentError,
  type SqsEvent,
  type SqsHandler,
  type SqsHandlerOptions,
  type SqsMessage,
  type SqsRecord,
  type UnitOfWork,
} from '../../lambda';
import { atomic } from '../../lambda/modes/atomic';
import { entity } from '../../lambda/modes/entity';
import { marker } from '../../lambda/modes/marker';
import { twoPhase } from '../../lambda/modes/two-phase';
import { INBOX_TABLE_ACTIONS } from '../../lib/consumer-permissions';
import { uniqueName } from '../support/aws';
import {
  captureLogs,
  createLocalResources,
  type FakeError,
  injectFaults,
  lambdaContext,
  type OrderEvent,
  sqsRecord,
  THROTTLED,
} from '../support/fixtures';
import { attachRequestCounter } from '../support/request-counter';

const local = createLocalResources();
const inboxTable = uniqueName('eo-handler-inbox');
const businessTable = uniqueName('eo-handler-business');
/** Every test stamps records at this instant (the clock is injected, never slept on). */
const now = Date.now();
const nowSeconds = Math.floor(now / 1000);
const runId = randomBytes(3).toString('hex');
let sequence = 0;
/** A business id unique to this run, so tests never see each other's items. */
const id = (label: string) => `${label}-${runId}-${++sequence}`;

/** A document client of its own (its own connections), configured the way the store documents. */
const newClient = local.documentClient;
const admin = newClient();

beforeAll(async () => {
  await local.createTable(inboxTable);
  await local.createTable(businessTable);
});

afterAll(() => local.dispose());

const readItem = (tableName: string, pk: string) => local.readItem(tableName, { pk });

// --- Lambda-shaped events -------------------------------------------------------------------

/** The same message delivered again (a visibility timeout ran out): same id and body. */
function redelivered(record: SqsRecord): SqsRecord {
  return {
    ...record,
    receiptHandle: randomBytes(96).toString('base64'),
    attributes: {
      ...record.attributes,
      ApproximateReceiveCount: String(Number(record.attributes.ApproximateReceiveCount) + 1),
    },
  };
}

const sqsEvent = (...records: SqsRecord[]): SqsEvent => ({ Records: records });

/** Log entries sorted by their record's position in the batch (concurrent records log in any order). */
function inBatchOrder(records: readonly SqsRecord[], entries: Record<string, unknown>[]) {
  const position = (entry: Record<string, unknown>) =>
    records.findIndex((record) => record.messageId === entry.messageId);
  return [...entries].sort((a, b) => position(a) - position(b));
}

// --- Observability sinks ----------------------------------------------------------------------

/** The default Embedded Metric Format sink, its lines captured; `totals` sums each metric over every line. */
function captureMetrics() {
  const lines: Record<string, unknown>[] = [];
  return {
    sink: createEmfMetricsSink({ write: (line) => lines.push(JSON.parse(line)) }),
    lines,
    totals: (): Record<string, number> => {
      const totals: Record<string, number> = {};
      for (const name of Object.values(METRICS)) {
        totals[name] = lines.reduce(
          (sum, line) => sum + (typeof line[name] === 'number' ? line[name] : 0),
          0,
        );
      }
      return totals;
    },
  };
}

/** Totals of every metric name in the contract: zero except `nonZero`. */
const metricTotals = (nonZero: Record<string, number>) => ({
  ...Object.fromEntries(Object.values(METRICS).map((name) => [name, 0])),
  ...nonZero,
});

// --- Fault injection ---------------------------------------------------------------------------

/** A cancelled transaction whose business write (index 1) lost a race with another transaction. */
const CONFLICT: FakeError = {
  statusCode: 400,
  type: 'TransactionCanceledException',
  body: {
    Message: 'Transaction cancelled, please refer cancellation reasons for specific reasons (injected)',
    CancellationReasons: [{ Code: 'None' }, { Code: 'TransactionConflict' }, { Code: 'None' }],
  },
};
const UNAVAILABLE: FakeError = { statusCode: 500, type: 'InternalServerError' };

// --- The order projector (atomic mode), as in the README -------------------------------------

/**
 * The order item and one item per status transition. `receiveCount` is a probe: it differs on
 * every redelivery, so any write made by a duplicate would show in the stored item.
 */
function projectOrder(message: SqsMessage<OrderEvent>, unitOfWork: UnitOfWork): void {
  const { orderId, status, amount } = message.body;
  unitOfWork.put({ TableName: businessTable, Item: { pk: `ORDER#${orderId}`, status, amount } });
  unitOfWork.put({
    TableName: businessTable,
    Item: {
      pk: `ORDER#${orderId}#${status}`,
      amount,
      dedupKey: message.dedupKey,
      receiveCount: Number(message.record.attributes.ApproximateReceiveCount),
    },
  });
}

type ToolkitOverrides = Partial<Omit<SqsHandlerOptions<OrderEvent>, 'mode' | 'handle'>>;

/**
 * The README's order projector. `commit: 'message'` for the tests that fault one message's
 * commit by its body: one request per message, so the fault meets that message alone (batch
 * commit's faults, which meet every message of a shared transaction, are
 * `test/reliability/atomic-batch-commit-faults.test.ts`).
 */
function orderProjector(overrides: ToolkitOverrides = {}, commit: 'batch' | 'message' = 'batch'): SqsHandler {
  return createSqsHandler<OrderEvent>({
    consumer: 'order-projector',
    client: newClient(),
    tableName: inboxTable,
    dedupKey: fromBody((order: OrderEvent) => [order.orderId, order.status]),
    mode: atomic(projectOrder, { commit }),
    clock: () => now,
    ttlSeconds: 3600,
    logLevel: 'silent',
    metrics: false,
    ...overrides,
  });
}

/** The canonical JSON of a flat object (keys sorted), hashed: the default fingerprint. */
function fingerprintOfFlat(value: Record<string, unknown>): string {
  return createHash('sha256')
    .update(JSON.stringify(value, Object.keys(value).sort()))
    .digest('hex');
}

/** The inbox record the order projector stores for `order` at `committedAt`. */
function orderInboxRecord(order: OrderEvent, committedAt = now, ttlSeconds = 3600) {
  return {
    pk: `order-projector#${order.orderId}:${order.status}`,
    status: 'COMPLETED',
    fingerprint: fingerprintOfFlat({ ...order }),
    expiresAt: Math.floor(committedAt / 1000) + ttlSeconds,
    consumer: 'order-projector',
    committedAt,
  };
}

describe('createSqsHandler on a first delivery', () => {
  it('commits the inbox record and the business items together, exactly as described', async () => {
    const order = { orderId: id('order'), status: 'PAID', amount: 1250 };
    const handler = orderProjector();

    const response = await handler(sqsEvent(sqsRecord(randomUUID(), order)), lambdaContext());

    expect(response).toEqual({ batchItemFailures: [] });
    expect(await readItem(inboxTable, `order-projector#${order.orderId}:PAID`)).toEqual(
      orderInboxRecord(order),
    );
    expect(await readItem(businessTable, `ORDER#${order.orderId}`)).toEqual({
      pk: `ORDER#${order.orderId}`,
      status: 'PAID',
      amount: 1250,
    });
    expect(await readItem(businessTable, `ORDER#${order.orderId}#PAID`)).toEqual({
      pk: `ORDER#${order.orderId}#PAID`,
      amount: 1250,
      dedupKey: `${order.orderId}:PAID`,
      receiveCount: 1,
    });
  });
});

describe('createSqsHandler on a duplicate', () => {
  it('acknowledges a redelivery and a producer resend as duplicates and writes nothing', async () => {
    const order = { orderId: id('order'), status: 'SHIPPED', amount: 990 };
    const first = sqsRecord(randomUUID(), order);
    await orderProjector()(sqsEvent(first), lambdaContext());
    const logs = captureLogs();
    const metrics = captureMetrics();
    // A later clock: a write by the duplicates would show a new committedAt and expiresAt.
    const later = orderProjector({
      clock: () => now + 60_000,
      logger: logs.logger,
      logLevel: 'info',
      metrics: metrics.sink,
    });
    const redelivery = redelivered(first);
    const resend = sqsRecord(randomUUID(), order, { receiveCount: 1 });

    const response = await later(sqsEvent(redelivery, resend), lambdaContext());

    expect(response).toEqual({ batchItemFailures: [] });
    expect(await readItem(inboxTable, `order-projector#${order.orderId}:SHIPPED`)).toEqual(
      orderInboxRecord(order),
    );
    expect(await readItem(businessTable, `ORDER#${order.orderId}#SHIPPED`)).toEqual({
      pk: `ORDER#${order.orderId}#SHIPPED`,
      amount: 990,
      dedupKey: `${order.orderId}:SHIPPED`,
      receiveCount: 1,
    });
    expect(logs.entries()).toEqual(
      [redelivery, resend].map((record) => ({
        level: 'info',
        message: 'Duplicate message acknowledged',
        consumer: 'order-projector',
        requestId: expect.any(String),
        scopedKey: `order-projector#${order.orderId}:SHIPPED`,
        messageId: record.messageId,
        correlationId: record.messageId,
        outcome: 'duplicate',
      })),
    );
    expect(metrics.totals()).toEqual(metricTotals({ Duplicate: 2 }));
  });
});

describe('createSqsHandler on a reused key with a different payload', () => {
  it('reports the mismatch as a batch item failure in redrive mode and logs the key and reason, never the body', async () => {
    const order = { orderId: id('order'), status: 'PAID', amount: 1250 };
    await orderProjector()(sqsEvent(sqsRecord(randomUUID(), order)), lambdaContext());
    const logs = captureLogs();
    const metrics = captureMetrics();
    const handler = orderProjector({ logger: logs.logger, logLevel: 'info', metrics: metrics.sink });
    const changed = { ...order, amount: 1999, note: 'card 4111-1111-1111-1111' };
    const reused = sqsRecord(randomUUID(), changed, { attributes: { 'correlation-id': 'checkout-42' } });

    const response = await handler(sqsEvent(reused), lambdaContext());

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: reused.messageId }] });
    expect(logs.entries()).toEqual([
      {
        level: 'error',
        message: 'Dedup key reused with a different payload',
        consumer: 'order-projector',
        requestId: expect.any(String),
        scopedKey: `order-projector#${order.orderId}:PAID`,
        messageId: reused.messageId,
        correlationId: 'checkout-42',
        outcome: 'mismatch',
        code: 'PAYLOAD_MISMATCH',
        reason: `The dedup key was already used with a different payload (stored fingerprint ${fingerprintOfFlat(order)}, this message ${fingerprintOfFlat(changed)})`,
        deadLetter: 'redrive',
      },
    ]);
    const text = logs.textWithout([
      reused.messageId,
      order.orderId,
      fingerprintOfFlat(order),
      fingerprintOfFlat(changed),
    ]);
    expect(text).not.toContain('4111');
    expect(text).not.toContain('1999');
    expect(metrics.totals()).toEqual(metricTotals({ Mismatch: 1 }));
    expect(await readItem(businessTable, `ORDER#${order.orderId}`)).toEqual({
      pk: `ORDER#${order.orderId}`,
      status: 'PAID',
      amount: 1250,
    });
  });
});

describe('createSqsHandler on an expired inbox record', () => {
  it('processes the message again when its record has expired but not yet been swept', async () => {
    const order = { orderId: id('order'), status: 'PAID', amount: 400 };
    const longAgo = now - 2 * 3600_000;
    const first = sqsRecord(randomUUID(), order);
    await orderProjector({ clock: () => longAgo })(sqsEvent(first), lambdaContext());
    const pk = `order-projector#${order.orderId}:PAID`;
    // Still stored, expired one hour ago: DynamoDB's TTL sweeper has not deleted it yet.
    expect(await readItem(inboxTable, pk)).toEqual(orderInboxRecord(order, longAgo));
    expect(orderInboxRecord(order, longAgo).expiresAt).toBeLessThan(nowSeconds);
    const metrics = captureMetrics();

    const response = await orderProjector({ metrics: metrics.sink })(
      sqsEvent(redelivered(first)),
      lambdaContext(),
    );

    expect(response).toEqual({ batchItemFailures: [] });
    expect(metrics.totals()).toEqual(metricTotals({ Processed: 1 }));
    expect(await readItem(inboxTable, pk)).toEqual(orderInboxRecord(order));
    expect(await readItem(businessTable, `ORDER#${order.orderId}#PAID`)).toMatchObject({ receiveCount: 2 });
  });

  it('accepts a different payload under an expired key as a new message, not a mismatch', async () => {
    const order = { orderId: id('order'), status: 'PAID', amount: 400 };
    await orderProjector({ clock: () => now - 2 * 3600_000 })(
      sqsEvent(sqsRecord(randomUUID(), order)),
      lambdaContext(),
    );
    const changed = { ...order, amount: 450 };

    const response = await orderProjector()(sqsEvent(sqsRecord(randomUUID(), changed)), lambdaContext());

    expect(response).toEqual({ batchItemFailures: [] });
    expect(await readItem(inboxTable, `order-projector#${order.orderId}:PAID`)).toEqual(
      orderInboxRecord(changed),
    );
    expect(await readItem(businessTable, `ORDER#${order.orderId}`)).toEqual({
      pk: `ORDER#${order.orderId}`,
      status: 'PAID',
      amount: 450,
    });
  });
});

describe('createSqsHandler on a failing business condition', () => {
  interface StockOrder {
    readonly orderId: string;
    readonly sku: string;
    readonly quantity: number;
  }

  /** Books stock for an order: the order item, and a decrement that needs enough stock. */
  const bookStock = (overrides: Partial<SqsHandlerOptions<StockOrder>> = {}) =>
    createSqsHandler<StockOrder>({
      consumer: 'stock-booker',
      client: newClient(),
      tableName: inboxTable,
      dedupKey: fromBody('orderId'),
      mode: atomic((message, unitOfWork) => {
        const { orderId, sku, quantity } = message.body;
        unitOfWork.put({ TableName: businessTable, Item: { pk: `ORDER#${orderId}`, sku, quantity } });
        unitOfWork.update({
          TableName: businessTable,
          Key: { pk: `STOCK#${sku}` },
          UpdateExpression: 'SET available = available - :n',
          ConditionExpression: 'available >= :n',
          ExpressionAttributeValues: { ':n': quantity },
        });
      }),
      clock: () => now,
      logLevel: 'silent',
      metrics: false,
      ...overrides,
    } as SqsHandlerOptions<StockOrder>);

  it('reports BUSINESS_CONDITION_FAILED, writes nothing, and lets a later delivery commit', async () => {
    const sku = id('sku');
    await admin.send(
      new PutCommand({ TableName: businessTable, Item: { pk: `STOCK#${sku}`, available: 1 } }),
    );
    const order = { orderId: id('order'), sku, quantity: 2 };
    const record = sqsRecord(randomUUID(), order);
    const logs = captureLogs();
    const metrics = captureMetrics();

    const response = await bookStock({ logger: logs.logger, logLevel: 'info', metrics: metrics.sink })(
      sqsEvent(record),
      lambdaContext(),
    );

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: record.messageId }] });
    expect(logs.entries()).toEqual([
      {
        level: 'error',
        message: 'Message failed permanently',
        consumer: 'stock-booker',
        requestId: expect.any(String),
        scopedKey: `stock-booker#${order.orderId}`,
        messageId: record.messageId,
        correlationId: record.messageId,
        outcome: 'permanent',
        code: 'BUSINESS_CONDITION_FAILED',
        reason: 'The condition of business write 1 failed: The conditional request failed',
        deadLetter: 'redrive',
      },
    ]);
    expect(metrics.totals()).toEqual(metricTotals({ Permanent: 1 }));
    expect(await readItem(inboxTable, `stock-booker#${order.orderId}`)).toBeUndefined();
    expect(await readItem(businessTable, `ORDER#${order.orderId}`)).toBeUndefined();
    expect(await readItem(businessTable, `STOCK#${sku}`)).toEqual({ pk: `STOCK#${sku}`, available: 1 });

    // Restocked: the redriven message commits, because nothing marked it as processed.
    await admin.send(
      new PutCommand({ TableName: businessTable, Item: { pk: `STOCK#${sku}`, available: 5 } }),
    );
    expect(await bookStock()(sqsEvent(redelivered(record)), lambdaContext())).toEqual({
      batchItemFailures: [],
    });
    expect(await readItem(businessTable, `STOCK#${sku}`)).toEqual({ pk: `STOCK#${sku}`, available: 3 });
    expect(await readItem(inboxTable, `stock-booker#${order.orderId}`)).toMatchObject({
      status: 'COMPLETED',
    });
  });
});

describe('createSqsHandler on throttling and transaction conflicts', () => {
  it('reports throttled, conflicting and 5xx commits as batch item failures, commits the rest, and commits them on redelivery', async () => {
    const [ok, throttled, conflicting, unavailable] = ['ok', 'throttled', 'conflict', 'unavailable'].map(
      (label) => ({ orderId: id(label), status: 'CREATED', amount: 100 }),
    ) as [OrderEvent, OrderEvent, OrderEvent, OrderEvent];
    const client = newClient({ maxAttempts: 1 });
    const counter = attachRequestCounter(client);
    injectFaults(client, (operation, body) => {
      if (operation !== 'TransactWriteItems') return undefined;
      if (body.includes(throttled.orderId)) return THROTTLED;
      if (body.includes(conflicting.orderId)) return CONFLICT;
      if (body.includes(unavailable.orderId)) return UNAVAILABLE;
      return undefined;
    });
    const logs = captureLogs();
    const records = [ok, throttled, conflicting, unavailable].map((order) => sqsRecord(randomUUID(), order));
    const [, throttledRecord, conflictRecord, unavailableRecord] = records as [
      SqsRecord,
      SqsRecord,
      SqsRecord,
      SqsRecord,
    ];

    const response = await orderProjector({ client, logger: logs.logger, logLevel: 'info' }, 'message')(
      sqsEvent(...records),
      lambdaContext(),
    );

    expect(response).toEqual({
      batchItemFailures: [
        { itemIdentifier: throttledRecord.messageId },
        { itemIdentifier: conflictRecord.messageId },
        { itemIdentifier: unavailableRecord.messageId },
      ],
    });
    expect(
      inBatchOrder(records, logs.entries()).map(({ level, messageId, outcome, code, errorName }) => ({
        level,
        messageId,
        outcome,
        code,
        errorName,
      })),
    ).toEqual([
      {
        level: 'warn',
        messageId: throttledRecord.messageId,
        outcome: 'retry',
        code: 'THROTTLED',
        errorName: 'EffectivelyOnceError',
      },
      {
        level: 'warn',
        messageId: conflictRecord.messageId,
        outcome: 'retry',
        code: 'TRANSACTION_CONFLICT',
        errorName: 'EffectivelyOnceError',
      },
      {
        level: 'warn',
        messageId: unavailableRecord.messageId,
        outcome: 'retry',
        code: 'SERVICE_UNAVAILABLE',
        errorName: 'EffectivelyOnceError',
      },
    ]);
    expect(counter.counts()).toEqual({ TransactWriteItems: 4 });
    expect(await readItem(businessTable, `ORDER#${ok.orderId}`)).toMatchObject({ status: 'CREATED' });
    for (const order of [throttled, conflicting, unavailable]) {
      expect(await readItem(inboxTable, `order-projector#${order.orderId}:CREATED`)).toBeUndefined();
      expect(await readItem(businessTable, `ORDER#${order.orderId}`)).toBeUndefined();
    }

    const retried = await orderProjector()(sqsEvent(...records.map(redelivered)), lambdaContext());

    expect(retried).toEqual({ batchItemFailures: [] });
    for (const order of [throttled, conflicting, unavailable]) {
      expect(await readItem(businessTable, `ORDER#${order.orderId}#CREATED`)).toMatchObject({
        receiveCount: 2,
      });
    }
  });

  it('reports a conflicting or throttled marker put as a batch item failure without running the effect', async () => {
    const conflicting = { eventId: id('event') };
    const throttled = { eventId: id('event') };
    const client = newClient({ maxAttempts: 1 });
    injectFaults(client, (operation, body) => {
      if (operation !== 'PutItem') return undefined;
      if (body.includes(conflicting.eventId))
        return { statusCode: 400, type: 'TransactionConflictException' };
      if (body.includes(throttled.eventId))
        return { statusCode: 400, type: 'ProvisionedThroughputExceededException' };
      return undefined;
    });
    const effects: string[] = [];
    const logs = captureLogs();
    const handler = createSqsHandler<{ eventId: string }>({
      consumer: 'mailer',
      client,
      tableName: inboxTable,
      dedupKey: fromBody('eventId'),
      mode: marker((message) => {
        effects.push(message.dedupKey);
      }),
      clock: () => now,
      logger: logs.logger,
      metrics: false,
    });
    const records = [sqsRecord(randomUUID(), conflicting), sqsRecord(randomUUID(), throttled)];

    const response = await handler(sqsEvent(...records), lambdaContext());

    expect(response).toEqual({
      batchItemFailures: records.map((record) => ({ itemIdentifier: record.messageId })),
    });
    expect(inBatchOrder(records, logs.entries()).map((entry) => entry.code)).toEqual([
      'TRANSACTION_CONFLICT',
      'THROTTLED',
    ]);
    expect(effects).toEqual([]);
    expect(await readItem(inboxTable, `mailer#${conflicting.eventId}`)).toBeUndefined();
  });
});

describe('createSqsHandler on a FIFO batch', () => {
  it('reports the later records of a failing message group as failures without running them, and processes the other groups', async () => {
    const orderA = id('order');
    const orderB = id('order');
    const a1 = { orderId: orderA, status: 'CREATED', amount: 10 };
    const a2 = { orderId: orderA, status: 'PAID', amount: 10 };
    const a3 = { orderId: orderA, status: 'SHIPPED', amount: 10 };
    const b1 = { orderId: orderB, status: 'CREATED', amount: 20 };
    const b2 = { orderId: orderB, status: 'PAID', amount: 20 };
    const client = newClient({ maxAttempts: 1 });
    const counter = attachRequestCounter(client);
    injectFaults(client, (operation, body) =>
      operation === 'TransactWriteItems' && body.includes(`${orderA}:CREATED`) ? THROTTLED : undefined,
    );
    const logs = captureLogs();
    const records = [a1, b1, a2, b2, a3].map((order) =>
      sqsRecord(randomUUID(), order, { groupId: order.orderId }),
    );
    const [ra1, , ra2, , ra3] = records as [SqsRecord, SqsRecord, SqsRecord, SqsRecord, SqsRecord];

    const response = await orderProjector({ client, logger: logs.logger, logLevel: 'info' }, 'message')(
      sqsEvent(...records),
      lambdaContext(),
    );

    expect(response).toEqual({
      batchItemFailures: [ra1, ra2, ra3].map((record) => ({ itemIdentifier: record.messageId })),
    });
    expect(logs.entries().map(({ messageId, code, reason }) => ({ messageId, code, reason }))).toEqual([
      { messageId: ra1.messageId, code: 'THROTTLED', reason: expect.any(String) },
      {
        messageId: ra2.messageId,
        code: 'GROUP_BLOCKED',
        reason: 'An earlier message of the same message group failed in this batch',
      },
      {
        messageId: ra3.messageId,
        code: 'GROUP_BLOCKED',
        reason: 'An earlier message of the same message group failed in this batch',
      },
    ]);
    // a1 (injected) and the two of group B: the blocked records never reached DynamoDB.
    expect(counter.counts()).toEqual({ TransactWriteItems: 3 });
    expect(await readItem(businessTable, `ORDER#${orderB}`)).toEqual({
      pk: `ORDER#${orderB}`,
      status: 'PAID',
      amount: 20,
    });
    expect(await readItem(businessTable, `ORDER#${orderA}`)).toBeUndefined();
  });
});

describe('createSqsHandler batch responses', () => {
  it('names only ids of the batch, each once, for a batch with every kind of outcome', async () => {
    const client = newClient({ maxAttempts: 1 });
    const throttledOrder = { orderId: id('order'), status: 'CREATED', amount: 1 };
    injectFaults(client, (_operation, body) =>
      body.includes(throttledOrder.orderId) ? THROTTLED : undefined,
    );
    const seeded = { orderId: id('order'), status: 'CREATED', amount: 5 };
    await orderProjector()(sqsEvent(sqsRecord(randomUUID(), seeded)), lambdaContext());
    const fresh = { orderId: id('order'), status: 'CREATED', amount: 7 };
    const twice = sqsRecord(randomUUID(), undefined, { rawBody: '{not json' });
    const outcomes = {
      processed: sqsRecord(randomUUID(), fresh),
      inBatchDuplicate: sqsRecord(randomUUID(), fresh),
      duplicate: sqsRecord(randomUUID(), seeded),
      mismatch: sqsRecord(randomUUID(), { ...seeded, amount: 6 }),
      malformed: twice,
      malformedAgain: twice, // the same message listed twice: named once
      missingKey: sqsRecord(randomUUID(), { status: 'CREATED', amount: 1 }),
      throttled: sqsRecord(randomUUID(), throttledOrder),
    };

    const response = await orderProjector({ client }, 'message')(
      sqsEvent(...Object.values(outcomes)),
      lambdaContext(),
    );

    expect(response).toEqual({
      batchItemFailures: [
        { itemIdentifier: outcomes.mismatch.messageId },
        { itemIdentifier: twice.messageId },
        { itemIdentifier: outcomes.missingKey.messageId },
        { itemIdentifier: outcomes.throttled.messageId },
      ],
    });
  });

  it('never names an id outside the batch and names every failed record once (property, real endpoint)', async () => {
    const client = newClient({ maxAttempts: 1 });
    injectFaults(client, (_operation, body) => (body.includes('throttle-me') ? THROTTLED : undefined));
    const prefix = id('prop');
    type Fault = 'none' | 'throttle' | 'throw' | 'permanent' | 'malformed' | 'missing-key';
    const handler = createSqsHandler<{ key?: string; amount: number; fault: Fault }>({
      consumer: 'property',
      client,
      tableName: inboxTable,
      dedupKey: fromBody('key'),
      mode: atomic((message, unitOfWork) => {
        const { key, amount, fault } = message.body;
        if (fault === 'throw') throw new Error('downstream unavailable');
        if (fault === 'permanent') throw new PermanentError('rejected by the business');
        unitOfWork.put({ TableName: businessTable, Item: { pk: `PROP#${key}`, amount, probe: fault } });
      }),
      clock: () => now,
      logLevel: 'silent',
      metrics: false,
    });
    const spec = fc.record({
      key: fc.constantFrom('k1', 'k2', 'k3'),
      amount: fc.constantFrom(1, 2),
      fault: fc.constantFrom<Fault>(
        'none',
        'none',
        'none',
        'throttle',
        'throw',
        'permanent',
        'malformed',
        'missing-key',
      ),
      group: fc.constantFrom('g1', 'g2'),
    });

    await fc.assert(
      fc.asyncProperty(fc.array(spec, { minLength: 1, maxLength: 10 }), fc.boolean(), async (specs, fifo) => {
        const records = specs.map(({ key, amount, fault, group }) => {
          const body = {
            ...(fault === 'missing-key'
              ? {}
              : { key: `${prefix}-${key}${fault === 'throttle' ? '-throttle-me' : ''}` }),
            amount,
            fault,
          };
          return sqsRecord(randomUUID(), body, {
            ...(fault === 'malformed' ? { rawBody: `{"key": "${key}", ` } : {}),
            ...(fifo ? { groupId: group } : {}),
          });
        });

        const { batchItemFailures } = await handler(sqsEvent(...records), lambdaContext());

        const named = batchItemFailures.map((failure) => failure.itemIdentifier);
        const inBatch = new Set(records.map((record) => record.messageId));
        expect(named.filter((messageId) => !inBatch.has(messageId))).toEqual([]);
        expect(new Set(named).size).toBe(named.length);
        const mustFail = new Set<string>();
        const failedGroups = new Set<string>();
        specs.forEach(({ fault, group }, index) => {
          const messageId = records[index]!.messageId;
          if (fault !== 'none' || (fifo && failedGroups.has(group))) mustFail.add(messageId);
          if (fifo && named.includes(messageId)) failedGroups.add(group);
        });
        expect(named.filter((messageId) => mustFail.has(messageId))).toEqual([...mustFail]);
      }),
      { numRuns: 25 },
    );
  });
});

describe('createSqsHandler under concurrent deliveries', () => {
  const deliveries = 40;

  it.each(['atomic', 'marker', 'entity'] as const)(
    `commits exactly once when ${deliveries} handlers with separate clients receive one message at the same time (%s mode)`,
    async (mode) => {
      const event = { eventId: id('event'), amount: 3 };
      const record = sqsRecord(randomUUID(), event);
      const effects: number[] = [];
      const metrics = Array.from({ length: deliveries }, () => captureMetrics());
      const handlers = metrics.map((sink, writer) =>
        modeHandler(mode, newClient(), { writer, effects, metrics: sink.sink }),
      );

      const responses = await Promise.all(
        handlers.map((handler, writer) =>
          handler(
            sqsEvent({
              ...record,
              attributes: { ...record.attributes, ApproximateReceiveCount: String(writer + 1) },
            }),
            lambdaContext(),
          ),
        ),
      );

      expect(responses).toEqual(handlers.map(() => ({ batchItemFailures: [] })));
      const winners = metrics.flatMap((sink, writer) => (sink.totals().Processed === 1 ? [writer] : []));
      expect(winners).toHaveLength(1);
      expect(metrics.reduce((sum, sink) => sum + (sink.totals().Duplicate ?? 0), 0)).toBe(deliveries - 1);
      const winner = winners[0]!;
      if (mode === 'marker') {
        expect(effects).toEqual([winner]);
        expect(await readItem(inboxTable, `${mode}-consumer#${event.eventId}`)).toMatchObject({
          status: 'COMPLETED',
        });
      } else if (mode === 'atomic') {
        expect(await readItem(businessTable, `EVENT#${event.eventId}`)).toEqual({
          pk: `EVENT#${event.eventId}`,
          amount: 3,
          writer: winner,
        });
        const perWriter = await Promise.all(
          handlers.map((_, writer) => readItem(businessTable, `EVENT#${event.eventId}#writer-${writer}`)),
        );
        expect(perWriter.filter(Boolean)).toEqual([{ pk: `EVENT#${event.eventId}#writer-${winner}` }]);
      } else {
        expect(await readItem(businessTable, `AUDIT#${event.eventId}`)).toEqual({
          pk: `AUDIT#${event.eventId}`,
          amount: 3,
          writer: winner,
          eoFingerprint: fingerprintOfFlat(event),
        });
      }
    },
  );
});

/** A handler of `{ eventId, amount }` events in each mode, as the round-trip counts measure them. */
function modeHandler(
  mode: 'marker' | 'atomic' | 'atomic without writes' | 'entity',
  client: DynamoDBDocumentClient,
  options: {
    readonly writer?: number;
    readonly effects?: number[];
    readonly metrics?: ReturnType<typeof createEmfMetricsSink> | false;
    readonly fail?: boolean;
  } = {},
): SqsHandler {
  const { writer = 0, effects = [], metrics = false } = options;
  const common = {
    consumer: `${mode.replaceAll(' ', '-')}-consumer`,
    client,
    tableName: inboxTable,
    dedupKey: fromBody('eventId'),
    clock: () => now,
    logLevel: 'silent',
    metrics,
  } as const;
  type Event = { eventId: string; amount: number };
  switch (mode) {
    case 'marker':
      return createSqsHandler<Event>({
        ...common,
        mode: marker(() => {
          if (options.fail) throw new Error('the mail server is down');
          effects.push(writer);
        }),
      });
    case 'atomic':
    case 'atomic without writes':
      return createSqsHandler<Event>({
        ...common,
        mode: atomic((message, unitOfWork) => {
          if (mode === 'atomic without writes') return;
          const { eventId, amount } = message.body;
          unitOfWork.put({ TableName: businessTable, Item: { pk: `EVENT#${eventId}`, amount, writer } });
          unitOfWork.put({ TableName: businessTable, Item: { pk: `EVENT#${eventId}#writer-${writer}` } });
        }),
      });
    case 'entity':
      return createSqsHandler<Event>({
        ...common,
        mode: entity(
          (message): EntityWrite => ({
            tableName: businessTable,
            keyAttribute: 'pk',
            item: { pk: `AUDIT#${message.body.eventId}`, amount: message.body.amount, writer },
          }),
        ),
      });
  }
}

/**
 * The inbox-table requests of measured scenarios (labelled `<mode>…: …`) that `IdempotentConsumer`
 * does not grant in that mode: a transaction's inbox item is its marker `Put`; entity mode writes
 * business tables only.
 */
function ungrantedInboxActions(measured: Record<string, unknown>): string[] {
  return Object.entries(measured).flatMap(([label, counts]) => {
    const mode = (['marker', 'atomic', 'two-phase'] as const).find((name) => label.startsWith(name));
    if (mode === undefined) return [];
    return Object.keys(counts as Record<string, number>)
      .map((operation) => `dynamodb:${operation === 'TransactWriteItems' ? 'PutItem' : operation}`)
      .filter((action) => !INBOX_TABLE_ACTIONS[mode].includes(action))
      .map((action) => `${label}: ${action}`);
  });
}

describe('createSqsHandler DynamoDB round trips', () => {
  it('sends one DynamoDB request per message on first delivery and one on a duplicate, in every mode, and one per batch where atomic mode shares it', async () => {
    const measured: Record<string, unknown> = {};
    for (const mode of ['marker', 'atomic', 'atomic without writes', 'entity'] as const) {
      const client = newClient();
      const counter = attachRequestCounter(client);
      const handler = modeHandler(mode, client);
      const first = sqsRecord(randomUUID(), { eventId: id('event'), amount: 1 });
      const batch = Array.from({ length: 10 }, () =>
        sqsRecord(randomUUID(), { eventId: id('event'), amount: 1 }),
      );
      const measure = async (label: string, ...records: SqsRecord[]) => {
        counter.reset();
        expect(await handler(sqsEvent(...records), lambdaContext())).toEqual({ batchItemFailures: [] });
        measured[`${mode}: ${label}`] = counter.counts();
      };

      await measure('first delivery', first);
      await measure('duplicate', redelivered(first));
      await measure('batch of 10 first deliveries', ...batch);
      await measure('batch of 10 duplicates', ...batch.map(redelivered));
    }
    const failing = newClient();
    const counter = attachRequestCounter(failing);
    await modeHandler('marker', failing, { fail: true })(
      sqsEvent(sqsRecord(randomUUID(), { eventId: id('event'), amount: 1 })),
      lambdaContext(),
    );
    measured['marker: handler throws (marker released)'] = counter.counts();

    expect(measured).toEqual({
      'marker: first delivery': { PutItem: 1 },
      'marker: duplicate': { PutItem: 1 },
      'marker: batch of 10 first deliveries': { PutItem: 10 },
      'marker: batch of 10 duplicates': { PutItem: 10 },
      'atomic: first delivery': { TransactWriteItems: 1 },
      'atomic: duplicate': { TransactWriteItems: 1 },
      // Batch commit: the ten share one transaction, and so do their ten duplicates.
      'atomic: batch of 10 first deliveries': { TransactWriteItems: 1 },
      'atomic: batch of 10 duplicates': { TransactWriteItems: 1 },
      'atomic without writes: first delivery': { PutItem: 1 },
      'atomic without writes: duplicate': { PutItem: 1 },
      'atomic without writes: batch of 10 first deliveries': { PutItem: 10 },
      'atomic without writes: batch of 10 duplicates': { PutItem: 10 },
      'entity: first delivery': { PutItem: 1 },
      'entity: duplicate': { PutItem: 1 },
      'entity: batch of 10 first deliveries': { PutItem: 10 },
      'entity: batch of 10 duplicates': { PutItem: 10 },
      'marker: handler throws (marker released)': { PutItem: 1, UpdateItem: 1 },
    });
    expect(ungrantedInboxActions(measured)).toEqual([]);
  });

  it('sends two requests per effect on first delivery and one on a duplicate in two-phase mode, and one for a stale version', async () => {
    const measured: Record<string, unknown> = {};
    const client = newClient();
    const counter = attachRequestCounter(client);
    const performed: string[] = [];
    const twoPhaseHandler = createSqsHandler<{ eventId: string; effects: number }>({
      consumer: 'two-phase-consumer',
      client,
      tableName: inboxTable,
      dedupKey: fromBody('eventId'),
      mode: twoPhase({
        handle: async (message, effects) => {
          for (let effect = 1; effect <= message.body.effects; effect += 1) {
            await effects.run(`effect-${effect}`, ({ idempotencyKey }) => {
              performed.push(idempotencyKey);
            });
          }
        },
      }),
      clock: () => now,
      logLevel: 'silent',
      metrics: false,
    });
    for (const count of [1, 2]) {
      const first = sqsRecord(randomUUID(), { eventId: id('event'), effects: count });
      for (const [label, record] of [
        ['first delivery', first],
        ['duplicate', redelivered(first)],
      ] as const) {
        counter.reset();
        expect(await twoPhaseHandler(sqsEvent(record), lambdaContext())).toEqual({ batchItemFailures: [] });
        measured[`two-phase, ${count} effect${count > 1 ? 's' : ''}: ${label}`] = counter.counts();
      }
    }
    const customer = id('customer');
    const versioned = createSqsHandler<{ eventId: string; version: number }>({
      consumer: 'versioned-consumer',
      client,
      tableName: inboxTable,
      dedupKey: fromBody('eventId'),
      mode: atomic((message, unitOfWork) => {
        unitOfWork.putIfNewer({
          TableName: businessTable,
          Item: { pk: customer, version: message.body.version },
          versionAttribute: 'version',
        });
      }),
      clock: () => now,
      logLevel: 'silent',
      metrics: false,
    });
    await versioned(sqsEvent(sqsRecord(randomUUID(), { eventId: id('event'), version: 5 })), lambdaContext());
    counter.reset();
    expect(
      await versioned(
        sqsEvent(sqsRecord(randomUUID(), { eventId: id('event'), version: 3 })),
        lambdaContext(),
      ),
    ).toEqual({
      batchItemFailures: [],
    });
    measured['atomic: stale version (putIfNewer)'] = counter.counts();

    expect(measured).toEqual({
      'two-phase, 1 effect: first delivery': { PutItem: 1, UpdateItem: 1 },
      'two-phase, 1 effect: duplicate': { PutItem: 1 },
      'two-phase, 2 effects: first delivery': { PutItem: 2, UpdateItem: 2 },
      'two-phase, 2 effects: duplicate': { PutItem: 2 },
      'atomic: stale version (putIfNewer)': { TransactWriteItems: 1 },
    });
    expect(ungrantedInboxActions(measured)).toEqual([]);
    expect(performed).toHaveLength(3);
    expect(await readItem(businessTable, customer)).toEqual({ pk: customer, version: 5 });
  });
});

describe('createSqsHandler key sources', () => {
  it('keys a message by a message attribute, so a resend with a new message id is a duplicate', async () => {
    const metrics = captureMetrics();
    const effects: string[] = [];
    const handler = createSqsHandler({
      consumer: 'webhook-relay',
      client: newClient(),
      tableName: inboxTable,
      dedupKey: fromAttribute('idempotency-key'),
      parse: 'text',
      mode: marker((message) => {
        effects.push(message.dedupKey);
      }),
      clock: () => now,
      logLevel: 'silent',
      metrics: metrics.sink,
    });
    const key = id('idem');
    const attributes = { 'idempotency-key': key };

    const response = await handler(
      sqsEvent(
        sqsRecord(randomUUID(), undefined, { rawBody: 'ping', attributes }),
        sqsRecord(randomUUID(), undefined, { rawBody: 'ping', attributes }),
      ),
      lambdaContext(),
    );

    expect(response).toEqual({ batchItemFailures: [] });
    expect(effects).toEqual([key]);
    expect(metrics.totals()).toEqual(metricTotals({ Processed: 1, Duplicate: 1 }));
  });
});
