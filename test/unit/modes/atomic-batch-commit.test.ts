/**
 * Batch commit (`atomic(handle)`, `commit: 'batch'` by default): the messages an invocation runs
 * side by side share `TransactWriteItems` requests (`AtomicStore.commitMany`), each keeps its own
 * outcome, and a cancelled shared transaction is read message by message, the innocent ones sent
 * again together. Through the SQS handler over the in-memory store, which refuses what DynamoDB
 * refuses (two actions on one item, more than 100 actions) and reads every condition against the
 * tables as they were before the transaction.
 */
import { describe, expect, it } from 'vitest';
import { INBOX_ATTRIBUTES as A } from '../../../lambda/core/contract';
import { fromBody } from '../../../lambda/core/dedup-key';
import { EffectivelyOnceError } from '../../../lambda/core/errors';
import { sha256Hex } from '../../../lambda/core/fingerprint';
import type { AtomicCommit, CommitResult, SharedCommitResult } from '../../../lambda/core/store-port';
import { type AtomicOptions, atomic } from '../../../lambda/modes/atomic';
import { createCommitRounds, type QueuedCommit, ROUND_WAIT_MILLIS } from '../../../lambda/modes/batch-commit';
import type { ItemMarkerUnitOfWork } from '../../../lambda/modes/unit-of-work';
import { createSqsHandler } from '../../../lambda/sqs/sqs-handler';
import { captureLogger, captureMetrics, manualClock, sqsEvent, sqsRecord, T0 } from '../../support/fixtures';
import { createMemoryStore, type MemoryStore } from '../../support/memory-store';

interface Order {
  readonly orderId: string;
  readonly sku?: string;
  readonly version?: number;
  readonly quantity?: number;
}

type Handle = (message: { readonly body: Order }, unitOfWork: ItemMarkerUnitOfWork) => unknown;

const putOrder: Handle = (message, unitOfWork) => {
  unitOfWork.put({ TableName: 'Orders', Item: { pk: message.body.orderId } });
};

function consumer(
  handle: Handle = putOrder,
  options: AtomicOptions = {},
  store: MemoryStore = createMemoryStore(),
) {
  const logger = captureLogger();
  const handler = createSqsHandler<Order>({
    consumer: 'orders',
    dedupKey: fromBody('orderId'),
    mode: atomic(handle as never, options as never),
    store,
    clock: manualClock(),
    logger,
    metrics: captureMetrics(),
    logLevel: 'debug',
  });
  const run = async (...orders: (Order | { readonly order: Order; readonly groupId: string })[]) => {
    const records = orders.map((entry, index) =>
      'order' in entry
        ? sqsRecord(`m-${index + 1}`, entry.order, { groupId: entry.groupId })
        : sqsRecord(`m-${index + 1}`, entry),
    );
    const before = logger.entries.length;
    const response = await handler(sqsEvent(...records), {} as never);
    const outcomes = logger.entries
      .slice(before)
      .filter((entry) => entry.outcome !== undefined)
      .sort((a, b) => String(a.messageId).localeCompare(String(b.messageId), 'en', { numeric: true }))
      .map((entry) => (entry.code === undefined ? entry.outcome : `${entry.outcome}:${entry.code}`));
    return { response, outcomes };
  };
  return { store, run, logger };
}

const orders = (count: number, first = 1): Order[] =>
  Array.from({ length: count }, (_, index) => ({ orderId: `o-${first + index}` }));
const methods = (store: MemoryStore) => store.calls.map((call) => call.method);
const sharedSizes = (store: MemoryStore) =>
  store.calls
    .filter((call) => call.method === 'commitMany')
    .map((call) => (call.args[0] as unknown[]).length);

describe('atomic batch commit', () => {
  it('commits ten first deliveries in one shared transaction, each processed', async () => {
    const { store, run } = consumer();
    const { response, outcomes } = await run(...orders(10));

    expect(response).toEqual({ batchItemFailures: [] });
    expect(outcomes).toEqual(Array(10).fill('processed'));
    expect(methods(store)).toEqual(['commitMany']);
    expect(sharedSizes(store)).toEqual([10]);
    expect(store.items('Orders')).toHaveLength(10);
    expect(store.items('inbox')).toHaveLength(10);
  });

  it('reads a redelivered batch as ten duplicates from one cancelled transaction', async () => {
    const { store, run } = consumer();
    await run(...orders(10));
    store.calls.length = 0;

    const { outcomes } = await run(...orders(10));
    expect(outcomes).toEqual(Array(10).fill('duplicate'));
    expect(methods(store)).toEqual(['commitMany']);
  });

  it('reads a duplicate in the middle as a duplicate and commits the other nine again together', async () => {
    const { store, run } = consumer();
    await run({ orderId: 'o-5' });
    store.calls.length = 0;

    const { outcomes } = await run(...orders(10));
    expect(outcomes).toEqual([...Array(4).fill('processed'), 'duplicate', ...Array(5).fill('processed')]);
    expect(sharedSizes(store)).toEqual([10, 9]);
    expect(store.items('Orders')).toHaveLength(10);
  });

  it('dead-letters a reused key with another payload as a mismatch; the others commit', async () => {
    const { store, run } = consumer();
    store.seed('inbox', {
      [A.pk]: 'orders#o-3',
      [A.status]: 'COMPLETED',
      [A.fingerprint]: sha256Hex('another payload'),
      [A.expiresAt]: T0 / 1000 + 3600,
      [A.consumer]: 'orders',
    });
    const { outcomes, response } = await run(...orders(4));
    expect(outcomes).toEqual(['processed', 'processed', 'mismatch:PAYLOAD_MISMATCH', 'processed']);
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-3' }] });
    expect(store.read('Orders', 'o-3')).toBeUndefined();
    expect(store.items('Orders')).toHaveLength(3);
  });

  it('fails one message on its business condition and a stale one as stale, committing the rest', async () => {
    const store = createMemoryStore();
    store.seed('Stock', { pk: 'sku-empty', available: 0 });
    store.seed('Customers', { pk: 'c-1', version: 9 });
    const { run } = consumer(
      (message, unitOfWork) => {
        const { orderId, sku, version } = message.body;
        unitOfWork.put({ TableName: 'Orders', Item: { pk: orderId } });
        if (sku !== undefined) {
          unitOfWork.update({
            TableName: 'Stock',
            Key: { pk: sku },
            UpdateExpression: 'SET available = available - :one',
            ConditionExpression: 'available >= :one',
            ExpressionAttributeValues: { ':one': 1 },
          });
        }
        if (version !== undefined) {
          unitOfWork.putIfNewer({
            TableName: 'Customers',
            Item: { pk: 'c-1', version },
            versionAttribute: 'version',
          });
        }
      },
      {},
      store,
    );
    const { outcomes } = await run(
      { orderId: 'o-1' },
      { orderId: 'o-2', sku: 'sku-empty' },
      { orderId: 'o-3', version: 3 },
      { orderId: 'o-4' },
    );
    expect(outcomes).toEqual(['processed', 'permanent:BUSINESS_CONDITION_FAILED', 'stale', 'processed']);
    expect(sharedSizes(store)).toEqual([4, 2]);
    expect(store.items('Orders').map((item) => item.pk)).toEqual(['o-1', 'o-4']);
  });

  it('keeps two messages that write one item out of one transaction: the later one commits in the next round', async () => {
    const store = createMemoryStore();
    store.seed('Stock', { pk: 'sku-1', available: 5 });
    const { run } = consumer(
      (message, unitOfWork) => {
        unitOfWork.put({ TableName: 'Orders', Item: { pk: message.body.orderId } });
        unitOfWork.update({
          TableName: 'Stock',
          Key: { pk: message.body.sku },
          UpdateExpression: 'SET available = available - :one',
          ConditionExpression: 'available >= :one',
          ExpressionAttributeValues: { ':one': 1 },
        });
      },
      {},
      store,
    );
    const { outcomes } = await run(
      { orderId: 'o-1', sku: 'sku-1' },
      { orderId: 'o-2', sku: 'sku-2-absent-is-fine' },
      { orderId: 'o-3', sku: 'sku-1' },
    );
    expect(outcomes[0]).toBe('processed');
    expect(outcomes[2]).toBe('processed');
    // o-2's update of an absent item fails its condition: its own outcome, nobody else's.
    expect(outcomes[1]).toBe('permanent:BUSINESS_CONDITION_FAILED');
    expect(store.get('Stock', { pk: 'sku-1' })?.available).toBe(3);
    // Round 1 holds o-1 and o-2 (o-3 waits: it writes o-1's stock item); o-2 fails, o-1 commits
    // again alone; round 2 is o-3 alone.
    expect(methods(store)).toEqual(['commitMany', 'commit', 'commit']);
  });

  it('commits one at a time when DynamoDB refuses the shared transaction (two puts of one item it could not tell apart)', async () => {
    const { store, run } = consumer((message, unitOfWork) => {
      unitOfWork.put({ TableName: 'Orders', Item: { pk: message.body.orderId } });
      unitOfWork.put({ TableName: 'Totals', Item: { pk: 'day-1', last: message.body.orderId } });
    });
    const { outcomes } = await run(...orders(3));
    expect(outcomes).toEqual(['processed', 'processed', 'processed']);
    expect(methods(store)).toEqual(['commitMany', 'commit', 'commit', 'commit']);
    expect(store.items('Orders')).toHaveLength(3);
  });

  it("gives every member a throttled shared request's retry, as each message would have had", async () => {
    const store = createMemoryStore();
    store.failNext('commitMany', new EffectivelyOnceError('THROTTLED', 'DynamoDB throttled the request'));
    const { run } = consumer(putOrder, {}, store);
    const { outcomes, response } = await run(...orders(3));
    expect(outcomes).toEqual(Array(3).fill('retry:THROTTLED'));
    expect(response.batchItemFailures).toHaveLength(3);
    expect(store.items('Orders')).toHaveLength(0);
  });

  it('sends a marker without writes alone as one insert, never in a shared transaction', async () => {
    const { store, run } = consumer((message, unitOfWork) => {
      if (message.body.orderId !== 'o-2') putOrder(message, unitOfWork);
    });
    const { outcomes } = await run(...orders(3));
    expect(outcomes).toEqual(Array(3).fill('processed'));
    expect(methods(store).sort()).toEqual(['commitMany', 'insert']);
    expect(sharedSizes(store)).toEqual([2]);
  });

  it('shares with the marker on the item, and sends a lone marked put alone as one put', async () => {
    const { store, run } = consumer(
      (message, unitOfWork) => {
        unitOfWork.putAsMarker({
          TableName: 'Orders',
          Item: { pk: message.body.orderId },
          keyAttribute: 'pk',
        });
        if (message.body.quantity !== undefined) {
          unitOfWork.put({
            TableName: 'Lines',
            Item: { pk: message.body.orderId, quantity: message.body.quantity },
          });
        }
      },
      { marker: 'item' },
    );
    const { outcomes } = await run(
      { orderId: 'o-1', quantity: 1 },
      { orderId: 'o-2' },
      { orderId: 'o-3', quantity: 3 },
    );
    expect(outcomes).toEqual(Array(3).fill('processed'));
    expect(methods(store).sort()).toEqual(['commitMany', 'commitWithItemMarker']);
    expect(sharedSizes(store)).toEqual([2]);

    store.calls.length = 0;
    const again = await run({ orderId: 'o-1', quantity: 1 }, { orderId: 'o-3', quantity: 3 });
    expect(again.outcomes).toEqual(['duplicate', 'duplicate']);
    expect(methods(store)).toEqual(['commitMany']);
  });

  it("waits for a handler still describing its writes, so the slow one's commit joins the others'", async () => {
    const { store, run } = consumer(async (message, unitOfWork) => {
      if (message.body.orderId === 'o-2') await new Promise((resolve) => setTimeout(resolve, 20));
      putOrder(message, unitOfWork);
    });
    const { outcomes } = await run(...orders(3));
    expect(outcomes).toEqual(Array(3).fill('processed'));
    expect(sharedSizes(store)).toEqual([3]);
  });

  it(`commits the others without a handler still describing after ${ROUND_WAIT_MILLIS} ms; the slow one commits in a later round`, async () => {
    let release: () => void = () => undefined;
    const slowStarted = Date.now();
    let othersCommittedAfter: number | undefined;
    const store = createMemoryStore();
    const { run } = consumer(
      async (message, unitOfWork) => {
        if (message.body.orderId === 'o-3') {
          // Released only once the others' shared commit has been sent: never, if they wait for it.
          await new Promise<void>((resolve) => {
            release = resolve;
          });
        }
        putOrder(message, unitOfWork);
      },
      {},
      store,
    );
    const watch = setInterval(() => {
      if (sharedSizes(store).length === 0) return;
      othersCommittedAfter = Date.now() - slowStarted;
      clearInterval(watch);
      release();
    }, 5);
    const { outcomes, response } = await run(...orders(10));
    clearInterval(watch);

    expect(response).toEqual({ batchItemFailures: [] });
    expect(outcomes).toEqual(Array(10).fill('processed'));
    // The nine in one shared transaction without the slow one, which then commits alone.
    expect(sharedSizes(store)).toEqual([9]);
    expect(methods(store)).toEqual(['commitMany', 'commit']);
    expect(othersCommittedAfter).toBeGreaterThanOrEqual(ROUND_WAIT_MILLIS - 5);
    expect(store.items('Orders')).toHaveLength(10);
  });

  it('does not hold the others back for a handler that throws: it fails alone', async () => {
    const { store, run } = consumer((message, unitOfWork) => {
      if (message.body.orderId === 'o-2') throw new Error('cannot describe');
      putOrder(message, unitOfWork);
    });
    const { outcomes } = await run(...orders(3));
    expect(outcomes).toEqual(['processed', 'retry:HANDLER_FAILED', 'processed']);
    expect(sharedSizes(store)).toEqual([2]);
  });

  it('awaits what a handler returns only when it is a promise or thenable, whatever it is', async () => {
    // A plain value is ignored; a thenable (not a Promise) is awaited, its rejection the handler's failure.
    const { store, run } = consumer((message, unitOfWork) => {
      const { orderId } = message.body;
      if (orderId === 'o-1') {
        putOrder(message, unitOfWork);
        // biome-ignore lint/suspicious/noThenProperty: a value that only looks like a thenable, on purpose
        return { then: 'not a function' };
      }
      if (orderId === 'o-2') {
        // biome-ignore lint/suspicious/noThenProperty: a thenable that is not a Promise, on purpose
        return { then: (_resolve: () => void, reject: (error: Error) => void) => reject(new Error('late')) };
      }
      return {
        // biome-ignore lint/suspicious/noThenProperty: a thenable that is not a Promise, on purpose
        then(resolve: () => void) {
          setTimeout(() => {
            putOrder(message, unitOfWork);
            resolve();
          }, 5);
        },
      };
    });
    const { outcomes } = await run(...orders(3));
    expect(outcomes).toEqual(['processed', 'retry:HANDLER_FAILED', 'processed']);
    expect(
      store
        .items('Orders')
        .map((item) => item.pk)
        .sort(),
    ).toEqual(['o-1', 'o-3']);
  });
  it('keeps each FIFO message group in order: one message per group in each shared round', async () => {
    const { store, run } = consumer();
    const { outcomes } = await run(
      { order: { orderId: 'a-1' }, groupId: 'a' },
      { order: { orderId: 'b-1' }, groupId: 'b' },
      { order: { orderId: 'a-2' }, groupId: 'a' },
      { order: { orderId: 'b-2' }, groupId: 'b' },
    );
    expect(outcomes).toEqual(Array(4).fill('processed'));
    expect(
      store.calls.map((call) =>
        (call.args[0] as AtomicCommit[]).map((commit) => commit.record?.pk.split('#')[1]),
      ),
    ).toEqual([
      ['a-1', 'b-1'],
      ['a-2', 'b-2'],
    ]);
  });

  it("commits per message with commit: 'message'", async () => {
    const { store, run } = consumer(putOrder, { commit: 'message' });
    await run(...orders(3));
    expect(methods(store)).toEqual(['commit', 'commit', 'commit']);
  });

  it('refuses an unknown commit option at creation', () => {
    expect(() => consumer(putOrder, { commit: 'sometimes' as never })).toThrow(
      expect.objectContaining({ code: 'INVALID_OPTIONS', message: expect.stringContaining('atomic.commit') }),
    );
  });

  it('packs a round into transactions of at most 100 actions, side by side', async () => {
    const { store, run } = consumer((message, unitOfWork) => {
      for (let line = 0; line < 30; line++) {
        unitOfWork.put({ TableName: 'Lines', Item: { pk: `${message.body.orderId}#${line}` } });
      }
    });
    const { outcomes } = await run(...orders(5));
    expect(outcomes).toEqual(Array(5).fill('processed'));
    // 31 actions each: three fit in 100; the other two share a second transaction.
    expect(sharedSizes(store)).toEqual([3, 2]);
  });
});

describe('commit rounds', () => {
  /** A store whose shared commits answer from a script, one answer per call. */
  function scripted(
    ...answers: ((commits: readonly AtomicCommit[]) => readonly SharedCommitResult[] | Error)[]
  ) {
    const calls: number[] = [];
    const store = {
      async commitMany(commits: readonly AtomicCommit[]) {
        calls.push(commits.length);
        const answer = answers.shift()!(commits);
        if (answer instanceof Error) throw answer;
        return answer;
      },
    };
    return { store, calls };
  }
  const queued = (name: string, alone: () => Promise<CommitResult>): QueuedCommit => ({
    commit: {
      record: { pk: name, status: 'COMPLETED', fingerprint: 'f', expiresAt: 1, consumer: 'c' },
      writes: [{ Put: { TableName: 'Orders', Item: { pk: name } } }],
    },
    actions: 2,
    bytes: 100,
    nowMillis: T0,
    alone,
  });
  const committed = { kind: 'committed' } as const;
  const notApplied = { kind: 'not-applied' } as const;

  async function commitAll(store: ReturnType<typeof scripted>['store'], names: string[]) {
    const rounds = createCommitRounds(store);
    const alone: string[] = [];
    const results = await Promise.all(
      names.map((name) =>
        rounds
          .enter()
          .commit(
            queued(name, async () => {
              alone.push(name);
              return committed;
            }),
          )
          .then(
            (result) => result.kind,
            (error: Error) => `error:${error.message}`,
          ),
      ),
    );
    return { results, alone };
  }

  it('sends the innocent members of a cancelled transaction again, and gives up sharing after two cancellations', async () => {
    const existing = {
      kind: 'existing',
      record: { pk: 'x', status: 'COMPLETED', fingerprint: 'f', expiresAt: 1, consumer: 'c' },
    } as const;
    const { store, calls } = scripted(
      () => [notApplied, existing, notApplied, notApplied],
      () => [notApplied, { kind: 'failed', error: new Error('conflict') }, notApplied],
    );
    const { results, alone } = await commitAll(store, ['a', 'b', 'c', 'd']);
    expect(calls).toEqual([4, 3]);
    expect(results).toEqual(['committed', 'existing', 'error:conflict', 'committed']);
    expect(alone).toEqual(['a', 'd']);
  });

  it('commits alone when a cancellation names no member (no reasons sent)', async () => {
    const { store, calls } = scripted(() => [notApplied, notApplied, notApplied]);
    const { results, alone } = await commitAll(store, ['a', 'b', 'c']);
    expect(calls).toEqual([3]);
    expect(results).toEqual(['committed', 'committed', 'committed']);
    expect(alone).toEqual(['a', 'b', 'c']);
  });

  it('commits a lone message by itself, without a shared request', async () => {
    const { store, calls } = scripted();
    const { results, alone } = await commitAll(store, ['a']);
    expect(calls).toEqual([]);
    expect(results).toEqual(['committed']);
    expect(alone).toEqual(['a']);
  });

  it('rejects every member, never leaving one waiting, when the store answers out of contract', async () => {
    const { store } = scripted(() => [committed]);
    const { results } = await commitAll(store, ['a', 'b', 'c']);
    expect(results).toEqual(Array(3).fill('error:commitMany answered 1 results for 3 commits'));
  });

  it('rejects every member when the rounds themselves fail (a key no string names)', async () => {
    const { store, calls } = scripted();
    const rounds = createCommitRounds(store);
    const unnameable: QueuedCommit = {
      ...queued('a', async () => committed),
      commit: {
        record: { pk: 'a', status: 'COMPLETED', fingerprint: 'f', expiresAt: 1, consumer: 'c' },
        writes: [
          {
            Update: { TableName: 'Stock', Key: { pk: Object.create(null) }, UpdateExpression: 'SET n = :n' },
          },
        ],
      },
    };
    const results = await Promise.allSettled([
      rounds.enter().commit(unnameable),
      rounds.enter().commit(queued('b', async () => committed)),
    ]);
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected']);
    expect(calls).toEqual([]);
  });

  it("rejects every member with a shared request's failure other than a refused shape", async () => {
    const { store } = scripted(() => new EffectivelyOnceError('ACCESS_DENIED', 'denied'));
    const { results, alone } = await commitAll(store, ['a', 'b']);
    expect(results).toEqual(['error:denied', 'error:denied']);
    expect(alone).toEqual([]);
  });
});
