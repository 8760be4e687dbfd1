/**
 * The fault model of atomic mode's batch commit (`atomic(handle)`, `commit: 'batch'`): the
 * messages of a batch share `TransactWriteItems` requests, so one fault now meets several
 * messages at once. Through `createSqsHandler` and the real store on the local emulator, faults
 * injected on the SDK client's middleware (`support/fault-injection.ts`):
 *
 * - each fault on the first shared transaction of a batch: throttled, conflicted (the last
 *   member's item held by another writer), its response lost (with and without the SDK's retry),
 *   a late copy landing after the answer, the process dying before or after it;
 * - a cancelled shared transaction with a duplicate in the middle: one more shared request for
 *   the others, and nothing else;
 * - two instances delivering overlapping batches at once (a conflict with a concurrent delivery);
 * - a FIFO batch of two message groups, each group's writes applied in order (a business
 *   condition fails if one is applied out of turn), with a lost response on the shared commit;
 *   the history checker (`support/history.ts`) follows each group's writes in commit order too:
 *   once each, in the order of the group, and, broken on purpose (a group delivered out of order,
 *   its writes unconditioned), it names the group with the two writes that show it;
 * - a seeded run drawing those faults at random over many batches.
 *
 * Each batch is delivered until every message is acknowledged (the unacknowledged ones again, as
 * a partial batch response makes SQS do), then whole once more (the duplicate every
 * at-least-once queue delivers). The oracle: every message's counter moved exactly once, its
 * order row and inbox record exist, nothing was dead-lettered.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromBody } from '../../lambda/core/dedup-key';
import type { LogEntry } from '../../lambda/core/logger';
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
  writesOn,
} from './support/fault-injection';
import {
  createFaultedInstance,
  type HandlerRecord,
  recordingHandlerOptions,
} from './support/faulted-instance';
import { createHistory, exactlyOnce, formatEntry, type History, orderPerGroup } from './support/history';
import { chanceOf } from './support/prng';
import { countEffect } from './support/tables';

const local = createLocalResources();
const inboxTable = uniqueName('eo-batch-faults-inbox');
const ordersTable = uniqueName('eo-batch-faults-orders');
const countersTable = uniqueName('eo-batch-faults-counters');
const groupsTable = uniqueName('eo-batch-faults-groups');

beforeAll(async () => {
  await Promise.all([
    local.createTable(inboxTable),
    local.createTable(ordersTable),
    local.createTable(countersTable),
    local.createTable(groupsTable),
  ]);
});
afterAll(() => local.dispose());

interface OrderPlaced {
  readonly orderId: string;
  /** FIFO: the message group and the message's place in it (1, 2, ...). */
  readonly group?: string;
  readonly sequence?: number;
}

type FaultName = CommitFaultName;

/** The orders a `TransactWriteItems` commits, by their order rows. */
function ordersOf(request: DynamoRequest): string[] {
  if (request.operation !== 'TransactWriteItems') return [];
  const items = (request.input.TransactItems ?? []) as {
    Put?: { TableName?: string; Item?: { pk?: unknown } };
  }[];
  return items.flatMap((item) =>
    item.Put?.TableName === ordersTable && typeof item.Put.Item?.pk === 'string' ? [item.Put.Item.pk] : [],
  );
}

interface Sink extends HandlerRecord {
  /** The size (orders) of every `TransactWriteItems` sent, in order. */
  readonly transactions: number[];
  /** Each FIFO message's group write DynamoDB applied, in commit order (`support/history.ts`). */
  readonly history: History;
}

const newSink = (): Sink => ({ logs: [], deadLetters: [], transactions: [], history: createHistory() });

/**
 * One simulated Lambda instance whose commits `faultOf` may fault. Each message puts its order
 * row and adds one to its counter; a FIFO message also moves its group's sequence from the one
 * before it, under a condition, so a write applied out of turn fails.
 */
function instance(
  consumer: string,
  faultOf: (request: DynamoRequest) => RequestFault | undefined,
  sink: Sink,
  options: { readonly groupCondition?: boolean } = {},
) {
  const { client, invoke } = createFaultedInstance(local.documentClient({ maxAttempts: 1 }), {
    decide: (request) => {
      if (request.operation === 'TransactWriteItems') sink.transactions.push(ordersOf(request).length);
      return faultOf(request);
    },
    onServerResponse: (request, statusCode, repeated, sent) => {
      if (statusCode !== 200 || repeated) return;
      for (const write of writesOn(request.operation, sent, groupsTable)) {
        const sequence = String(write.values[':sequence']);
        sink.history.append({ kind: 'applied', key: `${write.pk}#${sequence}`, group: write.pk, sequence });
      }
    },
  });
  const handler = createSqsHandler<OrderPlaced>({
    consumer,
    client,
    tableName: inboxTable,
    clock: manualClock(Date.now()),
    dedupKey: fromBody('orderId'),
    mode: atomic((message, unitOfWork) => {
      const { orderId, group, sequence } = message.body;
      unitOfWork.put({ TableName: ordersTable, Item: { pk: orderId } });
      countEffect(unitOfWork, countersTable, orderId);
      if (group !== undefined && sequence !== undefined) {
        unitOfWork.update({
          TableName: groupsTable,
          Key: { pk: group },
          UpdateExpression: 'SET #sequence = :sequence',
          ExpressionAttributeNames: { '#sequence': 'sequence' },
          ...(options.groupCondition === false
            ? { ExpressionAttributeValues: { ':sequence': sequence } }
            : {
                ConditionExpression:
                  sequence === 1 ? 'attribute_not_exists(#sequence)' : '#sequence = :previous',
                ExpressionAttributeValues:
                  sequence === 1 ? { ':sequence': 1 } : { ':sequence': sequence, ':previous': sequence - 1 },
              }),
        });
      }
    }),
    ...recordingHandlerOptions(sink),
  });
  return {
    /** Delivers `records` as one batch: the ids acknowledged by a live invocation. */
    async deliver(records: readonly SqsRecord[]): Promise<Set<string>> {
      const response = await invoke(() => handler({ Records: [...records] }, lambdaContext()));
      if (response === undefined) return new Set();
      const failed = new Set(response.batchItemFailures.map((failure) => failure.itemIdentifier));
      return new Set(records.map((record) => record.messageId).filter((id) => !failed.has(id)));
    },
  };
}

/** A batch of `bodies` as SQS records (FIFO when they carry a group), each with its own id. */
function recordsOf(bodies: readonly OrderPlaced[]): SqsRecord[] {
  return bodies.map((body) =>
    sqsRecord(randomUUID(), body, body.group === undefined ? {} : { groupId: body.group }),
  );
}

/**
 * Delivers `records` until all are acknowledged (at most `limit` rounds; the unacknowledged ones
 * again, in order), then the whole batch once more. Returns the rounds it took.
 */
async function deliverUntilAcknowledged(
  deliver: (records: readonly SqsRecord[]) => Promise<Set<string>>,
  records: readonly SqsRecord[],
  limit = 6,
): Promise<number> {
  let pending = [...records];
  let rounds = 0;
  const received = new Map<string, number>();
  const again = (record: SqsRecord) => {
    const count = (received.get(record.messageId) ?? 0) + 1;
    received.set(record.messageId, count);
    return { ...record, attributes: { ...record.attributes, ApproximateReceiveCount: String(count) } };
  };
  while (pending.length > 0 && rounds < limit) {
    rounds += 1;
    const acknowledged = await deliver(pending.map(again));
    pending = pending.filter((record) => !acknowledged.has(record.messageId));
  }
  await deliver(records.map(again));
  return rounds;
}

/** The oracle: one effect per order, its row and inbox record there, no dead letter. */
async function expectOneEffectEach(orderIds: readonly string[], sink: Sink, consumer: string): Promise<void> {
  for (const orderId of orderIds) {
    expect(await local.readItem(countersTable, { pk: orderId }), orderId).toEqual({
      pk: orderId,
      effects: 1,
    });
    expect(await local.readItem(ordersTable, { pk: orderId }), orderId).toEqual({ pk: orderId });
    expect(await local.readItem(inboxTable, { pk: `${consumer}#${orderId}` }), orderId).toMatchObject({
      status: 'COMPLETED',
    });
  }
  expect(sink.deadLetters).toEqual([]);
}

const consumerName = (label: string) => uniqueName(label).replace(/[^A-Za-z0-9._:-]/g, '-');
const ordersNamed = (count: number) =>
  Array.from({ length: count }, () => ({ orderId: `o-${randomUUID()}` }));
const outcomesOf = (logs: readonly LogEntry[]) =>
  logs.flatMap((entry) => (typeof entry.outcome === 'string' ? [entry.outcome] : []));

describe('atomic batch commit: one fault on the shared transaction', () => {
  it.each(Object.keys(COMMIT_FAULTS) as FaultName[])(
    'has one effect per message with the shared commit %s',
    async (name) => {
      const consumer = consumerName('batch-fault');
      const sink = newSink();
      let faulted = false;
      const { deliver } = instance(
        consumer,
        (request) => {
          if (faulted || ordersOf(request).length < 2) return undefined;
          faulted = true;
          return COMMIT_FAULTS[name];
        },
        sink,
      );
      const orders = ordersNamed(4);

      const rounds = await deliverUntilAcknowledged(deliver, recordsOf(orders));

      expect(faulted).toBe(true);
      expect(rounds).toBeLessThanOrEqual(2);
      await expectOneEffectEach(
        orders.map((order) => order.orderId),
        sink,
        consumer,
      );
      // The whole batch again at the end: four duplicates, read from one cancelled transaction.
      expect(outcomesOf(sink.logs).slice(-4)).toEqual(Array(4).fill('duplicate'));
      expect(sink.transactions.at(-1)).toBe(4);
    },
  );
});

describe('atomic batch commit: a cancelled shared transaction', () => {
  it('reads a duplicate in the middle of the batch and commits the others in one more shared request', async () => {
    const consumer = consumerName('batch-dup');
    const sink = newSink();
    const { deliver } = instance(consumer, () => undefined, sink);
    const orders = ordersNamed(5);
    const records = recordsOf(orders);
    await deliver([records[2]!]);
    sink.logs.length = 0;
    sink.transactions.length = 0;

    const acknowledged = await deliver(records);

    expect(acknowledged.size).toBe(5);
    expect(sink.logs.filter((entry) => entry.outcome !== undefined).map((entry) => entry.outcome)).toEqual(
      expect.arrayContaining(['duplicate']),
    );
    expect(outcomesOf(sink.logs).filter((outcome) => outcome === 'processed')).toHaveLength(4);
    expect(sink.transactions).toEqual([5, 4]);
    await expectOneEffectEach(
      orders.map((order) => order.orderId),
      sink,
      consumer,
    );
  });

  it('has one effect per message when two instances deliver overlapping batches at once', async () => {
    const consumer = consumerName('batch-race');
    const sink = newSink();
    const first = instance(consumer, () => undefined, sink);
    const second = instance(consumer, () => undefined, sink);
    const orders = ordersNamed(6);
    const records = recordsOf(orders);
    // The same messages, received twice (a redelivery racing the first delivery).
    const left = records.slice(0, 4);
    const right = records.slice(2).map((record) => ({ ...record, messageId: randomUUID() }));

    await Promise.all([
      deliverUntilAcknowledged(first.deliver, left),
      deliverUntilAcknowledged(second.deliver, right),
    ]);

    await expectOneEffectEach(
      orders.map((order) => order.orderId),
      sink,
      consumer,
    );
  });
});

describe('atomic batch commit: a FIFO batch of two message groups', () => {
  it.each(['none', 'its response lost', 'conflicted'] as const)(
    'applies each group in order, once, with the first shared commit fault: %s',
    async (fault) => {
      const consumer = consumerName('batch-fifo');
      const sink = newSink();
      let faulted = false;
      const { deliver } = instance(
        consumer,
        (request) => {
          if (fault === 'none' || faulted || ordersOf(request).length < 2) return undefined;
          faulted = true;
          return COMMIT_FAULTS[fault];
        },
        sink,
      );
      const [a, b] = [`g-${randomUUID()}`, `g-${randomUUID()}`];
      const bodies: OrderPlaced[] = [1, 2, 3].flatMap((sequence) => [
        { orderId: `o-${randomUUID()}`, group: a, sequence },
        { orderId: `o-${randomUUID()}`, group: b, sequence },
      ]);

      await deliverUntilAcknowledged(deliver, recordsOf(bodies));

      await expectOneEffectEach(
        bodies.map((body) => body.orderId),
        sink,
        consumer,
      );
      expect(await local.readItem(groupsTable, { pk: a })).toEqual({ pk: a, sequence: 3 });
      expect(await local.readItem(groupsTable, { pk: b })).toEqual({ pk: b, sequence: 3 });
      // The history checker sees each group's writes land once, in the order of the group.
      const { entries } = sink.history;
      expect(entries).toHaveLength(6);
      expect([exactlyOnce(entries), orderPerGroup(entries)]).toEqual([undefined, undefined]);
      // One message of each group per shared transaction: the groups side by side, each in order.
      if (fault === 'none') expect(sink.transactions.slice(0, 3)).toEqual([2, 2, 2]);
    },
  );

  it('is named by the history checker, with the two writes that show it, when a group reaches the handler out of order and nothing conditions its writes (broken on purpose)', async () => {
    const sink = newSink();
    const { deliver } = instance(consumerName('batch-fifo-unordered'), () => undefined, sink, {
      groupCondition: false,
    });
    const group = `g-${randomUUID()}`;
    const bodies: OrderPlaced[] = [2, 1, 3].map((sequence) => ({
      orderId: `o-${randomUUID()}`,
      group,
      sequence,
    }));

    await deliverUntilAcknowledged(deliver, recordsOf(bodies));

    const violation = orderPerGroup(sink.history.entries);
    expect(violation?.summary).toBe(
      `group ${group}: ${group}#1 (sequence 1) applied after ${group}#2 (sequence 2)`,
    );
    expect(violation?.history.map(formatEntry)).toEqual([
      `t0 applied ${group}#2 window 0 group ${group} sequence 2`,
      `t1 applied ${group}#1 window 0 group ${group} sequence 1`,
    ]);
  });
});

describe('atomic batch commit: faults at random', () => {
  const seed = Number(process.env.RELIABILITY_SEED ?? 20_261_202);
  const names = Object.keys(COMMIT_FAULTS) as FaultName[];

  it(`has one effect per message under seeded faults on shared commits (seed ${seed})`, async () => {
    const consumer = consumerName('batch-seeded');
    const sink = newSink();
    let sends = 0;
    const drawn: FaultName[] = [];
    // Each transaction is faulted with probability 1/2, the fault drawn from the seed and the
    // request's place in the run.
    const { deliver } = instance(
      consumer,
      (request) => {
        if (request.operation !== 'TransactWriteItems') return undefined;
        sends += 1;
        if (chanceOf(seed, 'batch', sends, 'faulted') < 0.5) return undefined;
        const name = names[Math.floor(chanceOf(seed, 'batch', sends, 'fault') * names.length)]!;
        drawn.push(name);
        return COMMIT_FAULTS[name];
      },
      sink,
    );
    const batches = Array.from({ length: 4 }, () => ordersNamed(5));

    try {
      for (const orders of batches) await deliverUntilAcknowledged(deliver, recordsOf(orders), 10);
      await expectOneEffectEach(
        batches.flat().map((order) => order.orderId),
        sink,
        consumer,
      );
      expect(drawn.length).toBeGreaterThan(0);
    } catch (error) {
      console.error(`atomic batch commit fault run failed; replay with RELIABILITY_SEED=${seed}`);
      throw error;
    }
  });
});
