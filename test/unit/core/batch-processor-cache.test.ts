/**
 * The completed-record cache in the engine: what each mode reports final is kept, a duplicate of
 * it makes no store call, and nothing in progress, released, failed or merely read from another
 * delivery's marker is ever kept.
 */
import { describe, expect, it } from 'vitest';
import { fromBody } from '../../../lambda/core/dedup-key';
import { EffectivelyOnceError } from '../../../lambda/core/errors';
import { fingerprintOf } from '../../../lambda/core/fingerprint';
import type { Mode } from '../../../lambda/core/mode';
import type { InboxRecord, InboxStore } from '../../../lambda/core/store-port';
import { atomic } from '../../../lambda/modes/atomic';
import { entity } from '../../../lambda/modes/entity';
import { marker } from '../../../lambda/modes/marker';
import { twoPhase } from '../../../lambda/modes/two-phase';
import type { SqsBatchHandlerOptions } from '../../../lambda/sqs/sqs-handler';
import { createSqsBatchHandler } from '../../../lambda/sqs/sqs-handler';
import {
  captureLogger,
  captureMetrics,
  counts,
  manualClock,
  sqsEvent,
  sqsRecord,
  T0,
} from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';

interface OrderEvent {
  readonly id: string;
  readonly amount: number;
}

const TTL = 3600;
const DAY_MILLIS = 86_400_000;
const body = (id: string, amount = 10): OrderEvent => ({ id, amount });
const delivery = (messageId: string, id: string, amount = 10) =>
  sqsEvent(sqsRecord(messageId, body(id, amount)));
const ids = (...messageIds: string[]) => ({
  batchItemFailures: messageIds.map((itemIdentifier) => ({ itemIdentifier })),
});
const completedMarker = (id: string, extra: Partial<InboxRecord> = {}): InboxRecord => ({
  pk: `orders#${id}`,
  status: 'COMPLETED',
  fingerprint: fingerprintOf(body(id)),
  expiresAt: Math.floor(T0 / 1000) + TTL,
  consumer: 'orders',
  committedAt: T0,
  ...extra,
});

function setup(
  mode: Mode<OrderEvent, InboxStore>,
  options: Partial<SqsBatchHandlerOptions<OrderEvent, InboxStore>> = {},
) {
  const store = createMemoryStore();
  const clock = manualClock();
  const logger = captureLogger();
  const metrics = captureMetrics();
  const create = () =>
    createSqsBatchHandler<OrderEvent, InboxStore>({
      consumer: 'orders',
      dedupKey: fromBody('id'),
      mode,
      store,
      clock,
      logger,
      metrics,
      ttlSeconds: TTL,
      completedCache: { maxEntries: 100 },
      ...options,
    });
  return { store, clock, logger, metrics, processBatch: create(), create };
}

/** Store calls made while `run` runs. */
async function callsDuring(store: ReturnType<typeof createMemoryStore>, run: () => Promise<unknown>) {
  const before = store.calls.length;
  await run();
  return store.calls.slice(before).map((call) => call.method);
}

describe('completed-record cache: duplicates without a request', () => {
  it('acknowledges a duplicate of a message this handler completed with no store call, logged and counted as a cache hit', async () => {
    const handled: string[] = [];
    const { store, processBatch, logger, metrics } = setup(
      marker((message) => {
        handled.push(message.messageId);
      }),
    );
    await processBatch(delivery('m-1', 'o-1'));

    const calls = await callsDuring(store, async () => {
      expect(await processBatch(delivery('m-2', 'o-1'))).toEqual(ids());
    });

    expect(calls).toEqual([]);
    expect(handled).toEqual(['m-1']);
    expect(logger.entries).toEqual([
      {
        level: 'info',
        message: 'Duplicate message acknowledged',
        consumer: 'orders',
        scopedKey: 'orders#o-1',
        messageId: 'm-2',
        correlationId: 'm-2',
        outcome: 'duplicate',
        cache: 'hit',
      },
    ]);
    expect(metrics.published.map((published) => published.counts)).toEqual([
      counts({ processed: 1 }),
      counts({ duplicate: 1, cacheHit: 1 }),
    ]);
  });

  it('asks the store for every duplicate when the cache is off, as before', async () => {
    const { store, processBatch, logger } = setup(
      marker(() => undefined),
      { completedCache: undefined },
    );
    await processBatch(delivery('m-1', 'o-1'));

    const calls = await callsDuring(store, () => processBatch(delivery('m-2', 'o-1')));

    expect(calls).toEqual(['insert']);
    expect(logger.entries.map((entry) => entry.cache)).toEqual([undefined]);
  });

  it('answers the second record of a key in the same batch from the cache', async () => {
    const { store, processBatch, metrics } = setup(marker(() => undefined));

    const response = await processBatch(
      sqsEvent(sqsRecord('m-1', body('o-1')), sqsRecord('m-2', body('o-1'))),
    );

    expect(response).toEqual(ids());
    expect(store.calls.map((call) => call.method)).toEqual(['insert']);
    expect(metrics.published[0]?.counts).toEqual(counts({ processed: 1, duplicate: 1, cacheHit: 1 }));
  });

  it('keeps one cache per handler instance: another instance over the same store asks the store', async () => {
    const { store, processBatch, create } = setup(marker(() => undefined));
    await processBatch(delivery('m-1', 'o-1'));
    const otherInstance = create();

    const calls = await callsDuring(store, () => otherInstance(delivery('m-2', 'o-1')));

    expect(calls).toEqual(['insert']);
  });

  it('asks the store for a key cached with another payload, which answers PAYLOAD_MISMATCH, and keeps the entry', async () => {
    const { store, processBatch, logger } = setup(marker(() => undefined));
    await processBatch(delivery('m-1', 'o-1'));

    const mismatchCalls = await callsDuring(store, async () => {
      expect(await processBatch(delivery('m-2', 'o-1', 99))).toEqual(ids('m-2'));
    });
    const sameCalls = await callsDuring(store, () => processBatch(delivery('m-3', 'o-1')));

    expect({ mismatchCalls, sameCalls }).toEqual({ mismatchCalls: ['insert'], sameCalls: [] });
    expect(
      logger.entries.map(({ messageId, outcome, code, cache }) => ({ messageId, outcome, code, cache })),
    ).toEqual([
      { messageId: 'm-2', outcome: 'mismatch', code: 'PAYLOAD_MISMATCH', cache: undefined },
      { messageId: 'm-3', outcome: 'duplicate', code: undefined, cache: 'hit' },
    ]);
  });

  it('asks the store again once the record expired, and runs the effect as the store decides', async () => {
    const handled: string[] = [];
    const { store, processBatch, clock } = setup(
      marker((message) => {
        handled.push(message.messageId);
      }),
    );
    await processBatch(delivery('m-1', 'o-1'));
    clock.advance(TTL * 1000);

    const calls = await callsDuring(store, () => processBatch(delivery('m-2', 'o-1')));

    expect(calls).toEqual(['insert']);
    expect(handled).toEqual(['m-1', 'm-2']);
  });
});

describe('completed-record cache: only final records', () => {
  it('never keeps a marker met in the store: another delivery may still release it', async () => {
    const { store, processBatch } = setup(marker(() => undefined));
    store.seed('inbox', completedMarker('o-1', { owner: 'another-delivery' }));

    const first = await callsDuring(store, () => processBatch(delivery('m-1', 'o-1')));
    const second = await callsDuring(store, () => processBatch(delivery('m-2', 'o-1')));

    expect({ first, second }).toEqual({ first: ['insert'], second: ['insert'] });
  });

  it('never keeps a released marker: the retry after a failed effect runs it again', async () => {
    let fail = true;
    const handled: string[] = [];
    const { store, processBatch } = setup(
      marker((message) => {
        handled.push(message.messageId);
        if (fail) throw new Error('downstream failed');
      }),
    );
    expect(await processBatch(delivery('m-1', 'o-1'))).toEqual(ids('m-1'));
    fail = false;

    const calls = await callsDuring(store, async () => {
      expect(await processBatch(delivery('m-1', 'o-1'))).toEqual(ids());
    });

    expect(calls).toEqual(['insert']);
    expect(handled).toEqual(['m-1', 'm-1']);
  });

  it('never keeps a message whose store call failed: the retry asks the store', async () => {
    const { store, processBatch } = setup(marker(() => undefined));
    store.failNext('insert', new EffectivelyOnceError('THROTTLED', 'slow down'));
    expect(await processBatch(delivery('m-1', 'o-1'))).toEqual(ids('m-1'));

    const calls = await callsDuring(store, () => processBatch(delivery('m-1', 'o-1')));

    expect(calls).toEqual(['insert']);
  });

  it('never keeps a two-phase claim in progress elsewhere: the next delivery asks the store', async () => {
    const { store, processBatch } = setup(
      twoPhase({ handle: (_message, effects) => effects.run(() => 'done'), leaseMillis: 60_000 }),
    );
    store.seed('inbox', {
      ...completedMarker('o-1'),
      status: 'IN_PROGRESS',
      owner: 'another-delivery',
      leaseExpiresAt: T0 + 60_000,
    });

    expect(await processBatch(delivery('m-1', 'o-1'))).toEqual(ids('m-1'));
    const calls = await callsDuring(store, () => processBatch(delivery('m-2', 'o-1')));

    expect(calls).toEqual(['claimLease']);
  });

  it('never keeps a two-phase message whose effect failed (its claim is released)', async () => {
    let fail = true;
    const { store, processBatch } = setup(
      twoPhase({
        handle: (_message, effects) =>
          effects.run(() => {
            if (fail) throw new Error('payment API down');
            return 'paid';
          }),
        leaseMillis: 60_000,
      }),
    );
    expect(await processBatch(delivery('m-1', 'o-1'))).toEqual(ids('m-1'));
    fail = false;

    const calls = await callsDuring(store, () => processBatch(delivery('m-1', 'o-1')));

    expect(calls).toEqual(['claimLease', 'complete']);
  });

  it('never keeps a two-phase message that ran no effect: there is no record to stand for it', async () => {
    const runs: string[] = [];
    const { store, processBatch } = setup(
      twoPhase({
        handle: (message) => {
          runs.push(message.messageId);
        },
        leaseMillis: 60_000,
      }),
    );
    await processBatch(delivery('m-1', 'o-1'));

    await processBatch(delivery('m-2', 'o-1'));

    expect({ runs, calls: store.calls.length }).toEqual({ runs: ['m-1', 'm-2'], calls: 0 });
  });

  it('never keeps a stale atomic message: nothing of its commit was written', async () => {
    const { store, processBatch } = setup(
      atomic((message, unitOfWork) => {
        unitOfWork.putIfNewer({
          TableName: 'Orders',
          Item: { pk: message.body.id, version: 1 },
          versionAttribute: 'version',
        });
      }),
    );
    store.seed('Orders', { pk: 'o-1', version: 2 });

    await processBatch(delivery('m-1', 'o-1'));
    const calls = await callsDuring(store, () => processBatch(delivery('m-2', 'o-1')));

    expect(calls).toEqual(['commit']);
  });
});

describe('completed-record cache: every mode', () => {
  it('atomic: keeps a committed message, and a committed record met in the store', async () => {
    const { store, processBatch } = setup(
      atomic((message, unitOfWork) => {
        unitOfWork.put({ TableName: 'Orders', Item: { pk: message.body.id } });
      }),
    );
    store.seed('inbox', completedMarker('o-2'));
    await processBatch(sqsEvent(sqsRecord('m-1', body('o-1')), sqsRecord('m-2', body('o-2'))));

    const calls = await callsDuring(store, () =>
      processBatch(sqsEvent(sqsRecord('m-3', body('o-1')), sqsRecord('m-4', body('o-2')))),
    );

    expect(calls).toEqual([]);
  });

  it('atomic without writes: keeps the marker it inserted', async () => {
    const { store, processBatch } = setup(atomic(() => undefined));
    await processBatch(delivery('m-1', 'o-1'));

    expect(await callsDuring(store, () => processBatch(delivery('m-2', 'o-1')))).toEqual([]);
  });

  it('entity: keeps an item without expiresAt for as long as the entry lives', async () => {
    const { store, processBatch, clock } = setup(
      entity((message) => ({ tableName: 'Customers', keyAttribute: 'pk', item: { pk: message.body.id } })),
    );
    await processBatch(delivery('m-1', 'c-1'));
    clock.advance(365 * DAY_MILLIS);

    expect(await callsDuring(store, () => processBatch(delivery('m-2', 'c-1')))).toEqual([]);
  });

  it('entity: honours the numeric expiresAt of the item it put', async () => {
    const expiresAt = Math.floor(T0 / 1000) + 60;
    const { store, processBatch, clock } = setup(
      entity((message) => ({
        tableName: 'Sessions',
        keyAttribute: 'pk',
        item: { pk: message.body.id, expiresAt },
      })),
    );
    await processBatch(delivery('m-1', 's-1'));
    const beforeExpiry = await callsDuring(store, () => processBatch(delivery('m-2', 's-1')));
    clock.advance(60_000);

    const afterExpiry = await callsDuring(store, () => processBatch(delivery('m-3', 's-1')));

    expect({ beforeExpiry, afterExpiry }).toEqual({ beforeExpiry: [], afterExpiry: ['insertEntity'] });
  });

  it('two-phase: keeps a message once every effect completed, and skips the handler on a duplicate', async () => {
    const runs: string[] = [];
    const { store, processBatch } = setup(
      twoPhase({
        handle: async (message, effects) => {
          runs.push(message.messageId);
          await effects.run('charge', () => 'charged');
          await effects.run('email', () => 'sent');
        },
        leaseMillis: 60_000,
      }),
    );
    await processBatch(delivery('m-1', 'p-1'));

    const calls = await callsDuring(store, async () => {
      expect(await processBatch(delivery('m-2', 'p-1'))).toEqual(ids());
    });

    expect({ calls, runs }).toEqual({ calls: [], runs: ['m-1'] });
  });

  it('two-phase: keeps a message whose effects were all completed before, until the earliest expiresAt', async () => {
    const { store, processBatch, clock } = setup(
      twoPhase({ handle: (_message, effects) => effects.run(() => 'done'), leaseMillis: 60_000 }),
    );
    const expiresAt = Math.floor(T0 / 1000) + 120;
    store.seed('inbox', completedMarker('p-1', { expiresAt, owner: 'earlier-delivery' }));
    await processBatch(delivery('m-1', 'p-1'));
    const cached = await callsDuring(store, () => processBatch(delivery('m-2', 'p-1')));
    clock.advance(120_000);

    const expired = await callsDuring(store, () => processBatch(delivery('m-3', 'p-1')));

    expect({ cached, expired }).toEqual({ cached: [], expired: ['claimLease', 'complete'] });
  });
});

describe('completed-record cache option', () => {
  it.each([
    [{ maxEntries: 0 }, 'Expected `completedCache.maxEntries` to be an integer from 1 to 10000, got `0`'],
    [
      { maxEntries: 20_000 },
      'Expected `completedCache.maxEntries` to be an integer from 1 to 10000, got `20000`',
    ],
    ['on', 'Expected `completedCache` to be an object, got `"on"`'],
  ])('fails the cold start with INVALID_OPTIONS for %j', (completedCache, message) => {
    expect(() =>
      setup(
        marker(() => undefined),
        { completedCache: completedCache as never },
      ),
    ).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS', message }));
  });
});
