/**
 * The fault model for atomic mode with the marker on a business item
 * (`atomic(handle, { marker: 'item' })`), through `createSqsHandler` and the real store on the
 * local emulator, faults injected on the SDK client's middleware (`support/fault-injection.ts`).
 * With no inbox record, the order row is the only thing that tells a redelivery from a first
 * delivery, so every fault of its commit must still end in one effect:
 *
 * - each fault on the commit, one at a time: throttled, conflicted, its response lost (with and
 *   without the SDK's retry), a late copy of it landing after the answer, the process dying
 *   before or after it; for a commit of two writes (`TransactWriteItems`), and for the marked put
 *   alone (one conditional `PutItem`, which has no idempotency token: its resend meets its own
 *   row);
 * - the put alone with its response lost, landing before, after or racing another delivery's put;
 * - a seeded run drawing those faults at random for many messages of both shapes, each delivered
 *   until acknowledged and then again (a duplicate), with the seed printed on failure.
 *
 * The oracle: every message's effect happened exactly once (its stock counter moved once; for
 * the put alone, DynamoDB applied exactly one put of its row), its order row carries its
 * fingerprint, no inbox record was written, nothing was dead-lettered.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENTITY_FINGERPRINT_ATTRIBUTE } from '../../lambda/core/contract';
import { fromBody } from '../../lambda/core/dedup-key';
import { atomic } from '../../lambda/modes/atomic';
import type { SqsRecord } from '../../lambda/sqs/sqs-event';
import { createSqsHandler } from '../../lambda/sqs/sqs-handler';
import { uniqueName } from '../support/aws';
import { createLocalResources, lambdaContext, manualClock, sqsRecord } from '../support/fixtures';
import {
  COMMIT_FAULTS,
  type CommitFaultName,
  type DynamoRequest,
  type RequestFault,
} from './support/fault-injection';
import {
  createFaultedInstance,
  type HandlerRecord,
  recordingHandlerOptions,
} from './support/faulted-instance';
import { chanceOf } from './support/prng';
import { countEffect } from './support/tables';

const local = createLocalResources();
const inboxTable = uniqueName('eo-item-marker-faults-inbox');
const ordersTable = uniqueName('eo-item-marker-faults-orders');
const countersTable = uniqueName('eo-item-marker-faults-counters');

beforeAll(async () => {
  await Promise.all([
    local.createTable(inboxTable),
    local.createTable(ordersTable, ['orderId']),
    local.createTable(countersTable),
  ]);
});
afterAll(() => local.dispose());

interface OrderPlaced {
  readonly orderId: string;
  readonly total: number;
}

type FaultName = CommitFaultName;

/**
 * What a message's handler writes: the order row and a counter update in one transaction, or the
 * order row alone (the marked put by itself: one conditional `PutItem`).
 */
type CommitShape = 'with a counter' | 'the row alone';

/** The order a commit request writes, when the request is a commit of the order row. */
function orderOfCommit(request: DynamoRequest): string | undefined {
  const input = request.input as {
    TableName?: string;
    Item?: { orderId?: unknown };
    TransactItems?: { Put?: { TableName?: string; Item?: { orderId?: unknown } } }[];
  };
  const put =
    request.operation === 'TransactWriteItems'
      ? input.TransactItems?.find((item) => item.Put?.TableName === ordersTable)?.Put
      : request.operation === 'PutItem' && input.TableName === ordersTable
        ? input
        : undefined;
  return typeof put?.Item?.orderId === 'string' ? put.Item.orderId : undefined;
}

/** What one run observed: log lines, dead letters, and the row puts DynamoDB applied per order. */
interface Sink extends HandlerRecord {
  /** Order rows written by a `PutItem` DynamoDB answered 200 (applied), per order. */
  readonly appliedPuts: Map<string, number>;
}

function newSink(): Sink {
  return { logs: [], deadLetters: [], appliedPuts: new Map() };
}

/**
 * One simulated Lambda instance: a client whose commits `faultOf` may fault, and the handler over
 * it. A crashed invocation's answer is discarded, as the Lambda runtime would: the message is
 * delivered again.
 */
function instance(
  consumer: string,
  faultOf: (request: DynamoRequest) => RequestFault | undefined,
  sink: Sink,
  shapeOf: (order: OrderPlaced) => CommitShape = () => 'with a counter',
) {
  const { client, invoke } = createFaultedInstance(local.documentClient({ maxAttempts: 1 }), {
    decide: faultOf,
    onServerResponse: (request, statusCode) => {
      const orderId = orderOfCommit(request);
      if (request.operation !== 'PutItem' || statusCode !== 200 || orderId === undefined) return;
      sink.appliedPuts.set(orderId, (sink.appliedPuts.get(orderId) ?? 0) + 1);
    },
  });
  const handler = createSqsHandler<OrderPlaced>({
    consumer,
    client,
    tableName: inboxTable,
    clock: manualClock(Date.now()),
    dedupKey: fromBody('orderId'),
    mode: atomic(
      (message, unitOfWork) => {
        unitOfWork.putAsMarker({
          TableName: ordersTable,
          Item: { orderId: message.body.orderId, total: message.body.total },
          keyAttribute: 'orderId',
        });
        if (shapeOf(message.body) === 'the row alone') return;
        countEffect(unitOfWork, countersTable, message.body.orderId);
      },
      { marker: 'item' },
    ),
    ...recordingHandlerOptions(sink),
  });
  return {
    /** Delivers `record`: `true` when it was acknowledged by a live invocation. */
    async deliver(record: SqsRecord): Promise<boolean> {
      const response = await invoke(() => handler({ Records: [record] }, lambdaContext()));
      return response !== undefined && response.batchItemFailures.length === 0;
    },
  };
}

/** Delivers `body` until it is acknowledged (at most `limit` times), then once more. */
async function deliverUntilAcknowledged(
  deliver: (record: SqsRecord) => Promise<boolean>,
  body: OrderPlaced,
  limit = 5,
): Promise<number> {
  const messageId = randomUUID();
  let receiveCount = 0;
  while (receiveCount < limit) {
    receiveCount += 1;
    if (await deliver(sqsRecord(messageId, body, { receiveCount }))) break;
  }
  // The duplicate every at-least-once queue delivers sooner or later.
  await deliver(sqsRecord(messageId, body, { receiveCount: receiveCount + 1 }));
  return receiveCount;
}

/**
 * The oracle: one effect per order (its counter moved once; for the row alone, one applied put of
 * the row), its row carrying a fingerprint, no inbox record, no dead letter.
 */
async function expectOneEffectEach(
  orders: readonly { readonly orderId: string; readonly shape: CommitShape }[],
  { deadLetters, appliedPuts }: Sink,
  consumer: string,
): Promise<void> {
  for (const { orderId, shape } of orders) {
    if (shape === 'the row alone') {
      expect(appliedPuts.get(orderId), orderId).toBe(1);
      expect(await local.readItem(countersTable, { pk: orderId }), orderId).toBeUndefined();
    } else {
      expect(await local.readItem(countersTable, { pk: orderId }), orderId).toEqual({
        pk: orderId,
        effects: 1,
      });
    }
    expect(await local.readItem(ordersTable, { orderId }), orderId).toMatchObject({
      orderId,
      [ENTITY_FINGERPRINT_ATTRIBUTE]: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
  }
  const inbox = await local.scanItems(inboxTable);
  expect(inbox.filter((item) => String(item.pk).startsWith(`${consumer}#`))).toEqual([]);
  expect(deadLetters).toEqual([]);
}

/** The request each commit shape sends. */
const COMMIT_OPERATION: Readonly<Record<CommitShape, string>> = {
  'with a counter': 'TransactWriteItems',
  'the row alone': 'PutItem',
};

describe.each(['with a counter', 'the row alone'] as const)(
  'atomic mode with the marker on a business item, %s: one fault on the commit',
  (shape) => {
    it.each(Object.keys(COMMIT_FAULTS) as FaultName[])('has one effect with the commit %s', async (name) => {
      const consumer = uniqueName('im-fault').replace(/[^A-Za-z0-9._:-]/g, '-');
      const sink = newSink();
      let faulted = false;
      const { deliver } = instance(
        consumer,
        (request) => {
          if (faulted || request.operation !== COMMIT_OPERATION[shape]) return undefined;
          faulted = true;
          return COMMIT_FAULTS[name];
        },
        sink,
        () => shape,
      );
      const orderId = `o-${randomUUID()}`;

      const deliveries = await deliverUntilAcknowledged(deliver, { orderId, total: 3 });

      expect(faulted).toBe(true);
      expect(deliveries).toBeLessThanOrEqual(2);
      await expectOneEffectEach([{ orderId, shape }], sink, consumer);
      const outcomes = sink.logs.flatMap((entry) =>
        typeof entry.outcome === 'string' ? [entry.outcome] : [],
      );
      // The last delivery always meets the order row.
      expect(outcomes.at(-1)).toBe('duplicate');
    });
  },
);

describe('atomic mode with the marker on a business item, the row alone: a lost response beside a concurrent delivery', () => {
  it.each(['lands first', 'lands second', 'races the other'] as const)(
    'has one effect when the put whose response is lost %s, another delivery of the message beside it',
    async (order) => {
      const consumer = uniqueName('im-race').replace(/[^A-Za-z0-9._:-]/g, '-');
      const sink = newSink();
      const rowAlone = () => 'the row alone' as const;
      // Two instances, one sink: every applied put of the row is counted, whoever sent it.
      const lossy = instance(
        consumer,
        (request) => (request.operation === 'PutItem' ? { kind: 'lost-response' } : undefined),
        sink,
        rowAlone,
      );
      const clean = instance(consumer, () => undefined, sink, rowAlone);
      const body = { orderId: `o-${randomUUID()}`, total: 3 };
      const [lost, other] = [sqsRecord(randomUUID(), body), sqsRecord(randomUUID(), body)];

      // Which put reaches the row first decides which one writes it; the lost one's invocation
      // fails either way (its answer never arrives), the other's is acknowledged.
      let acknowledged: boolean[];
      if (order === 'races the other') {
        acknowledged = await Promise.all([lossy.deliver(lost), clean.deliver(other)]);
      } else if (order === 'lands first') {
        const lostAcknowledged = await lossy.deliver(lost);
        acknowledged = [lostAcknowledged, await clean.deliver(other)];
      } else {
        const otherAcknowledged = await clean.deliver(other);
        acknowledged = [await lossy.deliver(lost), otherAcknowledged];
      }
      // The lost delivery comes back from the queue and meets the row.
      const again = await clean.deliver(sqsRecord(lost.messageId, body, { receiveCount: 2 }));

      expect(acknowledged).toEqual([false, true]);
      expect(again).toBe(true);
      await expectOneEffectEach([{ orderId: body.orderId, shape: 'the row alone' }], sink, consumer);
    },
  );
});

describe('atomic mode with the marker on a business item: faults at random', () => {
  const seed = Number(process.env.RELIABILITY_SEED ?? 20_261_201);
  const names = Object.keys(COMMIT_FAULTS) as FaultName[];

  it(`has one effect per message under seeded commit faults (seed ${seed})`, async () => {
    const consumer = uniqueName('im-seeded').replace(/[^A-Za-z0-9._:-]/g, '-');
    const sink = newSink();
    // Every other order is the row alone (a lone PutItem), the rest a transaction with a counter.
    const orders = Array.from({ length: 12 }, (_, index) => ({
      orderId: `o-${seed}-${index}-${randomUUID()}`,
      shape: (index % 2 === 0 ? 'with a counter' : 'the row alone') as CommitShape,
    }));
    const shapes = new Map(orders.map(({ orderId, shape }) => [orderId, shape]));
    const sends = new Map<string, number>();
    const drawn: FaultName[] = [];
    // Each commit of an order is faulted with probability 1/2, the fault drawn from the seed and
    // the order's commit count: the same seed, the same faults, however requests interleave.
    const { deliver } = instance(
      consumer,
      (request) => {
        const orderId = orderOfCommit(request);
        if (orderId === undefined) return undefined;
        const attempt = (sends.get(orderId) ?? 0) + 1;
        sends.set(orderId, attempt);
        if (chanceOf(seed, orderId, attempt, 'faulted') < 0.5) return undefined;
        const name = names[Math.floor(chanceOf(seed, orderId, attempt, 'fault') * names.length)]!;
        drawn.push(name);
        return COMMIT_FAULTS[name];
      },
      sink,
      (order) => shapes.get(order.orderId) ?? 'with a counter',
    );

    try {
      await Promise.all(
        orders.map(({ orderId }) => deliverUntilAcknowledged(deliver, { orderId, total: 1 }, 10)),
      );
      await expectOneEffectEach(orders, sink, consumer);
      // The run met faults, not only clean commits.
      expect(drawn.length).toBeGreaterThan(0);
    } catch (error) {
      console.error(`atomic item-marker fault run failed; replay with RELIABILITY_SEED=${seed}`);
      throw error;
    }
  });
});
