import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fromBody, scopeKey } from '../../../lambda/core/dedup-key';
import { deriveEffectKeys } from '../../../lambda/core/effect-keys';
import { EffectivelyOnceError, PermanentError } from '../../../lambda/core/errors';
import { fingerprintOf, sha256Hex } from '../../../lambda/core/fingerprint';
import { MAX_ITEM_BYTES } from '../../../lambda/core/item-size';
import type { Message } from '../../../lambda/core/message';
import type { InboxRecord, InboxStore } from '../../../lambda/core/store-port';
import {
  DEFAULT_LEASE_MILLIS,
  type EffectContext,
  type Effects,
  type TwoPhaseOptions,
  twoPhase,
} from '../../../lambda/modes/two-phase';
import { createSqsBatchHandler } from '../../../lambda/sqs/sqs-handler';
import {
  captureLogger,
  captureMetrics,
  check,
  counts,
  deferred,
  manualClock,
  sqsEvent,
  sqsRecord,
  T0,
} from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';

interface Payment {
  readonly id: string;
  readonly amount: number;
}

const LEASE = 30_000;
const TTL = 3600;
const T0_SECONDS = Math.floor(T0 / 1000);

function setup({ store, ...options }: Partial<TwoPhaseOptions<Payment>> & { store?: InboxStore } = {}) {
  const memory = createMemoryStore();
  const clock = manualClock();
  const logger = captureLogger();
  const metrics = captureMetrics();
  const contexts: EffectContext[] = [];
  const processBatch = createSqsBatchHandler<Payment>({
    consumer: 'payments',
    dedupKey: fromBody('id'),
    mode: twoPhase({
      handle: (_message, effects) =>
        effects.run((context) => {
          contexts.push(context);
          return { receipt: 'r-1' };
        }),
      leaseMillis: LEASE,
      ...options,
    }),
    store: store ?? memory,
    clock,
    logger,
    metrics,
    ttlSeconds: TTL,
  });
  return { store: memory, clock, logger, metrics, contexts, processBatch };
}

const payment = (id: string, amount = 10): Payment => ({ id, amount });
const fingerprint = (id: string, amount = 10) => fingerprintOf(payment(id, amount));
const event = (messageId: string, id: string, amount = 10) =>
  sqsEvent(sqsRecord(messageId, payment(id, amount)));
const ids = (...messageIds: string[]) => ({
  batchItemFailures: messageIds.map((itemIdentifier) => ({ itemIdentifier })),
});
const claimOf = (pk: string, extra: Partial<InboxRecord> = {}): InboxRecord => ({
  pk,
  status: 'IN_PROGRESS',
  fingerprint: fingerprint('p-1'),
  // An in-progress claim lives its TTL past its lease end.
  expiresAt: Math.ceil((T0 + LEASE) / 1000) + TTL,
  consumer: 'payments',
  committedAt: T0,
  owner: expect.any(String),
  leaseExpiresAt: T0 + LEASE,
  ...extra,
});

afterEach(() => {
  vi.useRealTimers();
});

describe('two-phase mode: one unnamed effect', () => {
  it('claims the message key with a lease and an owner token, runs the effect, then completes: two store calls', async () => {
    const { store, processBatch, contexts, metrics, logger } = setup();

    expect(await processBatch(event('m-1', 'p-1'))).toEqual(ids());

    expect(store.calls.map((call) => call.method)).toEqual(['claimLease', 'complete']);
    expect(store.calls[0]!.args).toEqual([claimOf('payments#p-1'), T0]);
    const owner = (store.calls[0]!.args[0] as InboxRecord).owner;
    expect(owner).toMatch(/^[0-9a-f-]{36}$/);
    expect(store.calls[1]!.args).toEqual(['payments#p-1', owner, { expiresAt: T0_SECONDS + TTL }]);
    expect(store.read('inbox', 'payments#p-1')).toEqual({
      ...claimOf('payments#p-1', { owner }),
      status: 'COMPLETED',
      // Completed, the record lives its TTL from the completion.
      expiresAt: T0_SECONDS + TTL,
      leaseExpiresAt: undefined,
    });
    expect(contexts).toEqual([
      {
        ...deriveEffectKeys('payments#p-1'),
        effect: undefined,
        scopedKey: 'payments#p-1',
        signal: expect.any(AbortSignal),
      },
    ]);
    expect(metrics.published).toEqual([{ consumer: 'payments', counts: counts({ processed: 1 }) }]);
    expect(logger.entries).toEqual([]);
  });

  it('acknowledges a redelivery as a duplicate with one store call and without running the effect', async () => {
    const { store, processBatch, contexts, metrics } = setup();
    await processBatch(event('m-1', 'p-1'));

    expect(await processBatch(event('m-2', 'p-1'))).toEqual(ids());

    expect(store.calls.map((call) => call.method)).toEqual(['claimLease', 'complete', 'claimLease']);
    expect(contexts).toHaveLength(1);
    expect(metrics.published[1]?.counts).toEqual(counts({ duplicate: 1 }));
  });

  it('returns the stored result to the handler on a duplicate when results are stored', async () => {
    const results: unknown[] = [];
    const { store, processBatch } = setup({
      storeResults: true,
      handle: async (_message, effects) => {
        results.push(await effects.run(() => ({ receipt: 'r-1', at: new Date(T0) })));
      },
    });

    await processBatch(event('m-1', 'p-1'));
    await processBatch(event('m-2', 'p-1'));

    expect(results).toEqual([
      { receipt: 'r-1', at: new Date(T0) },
      { receipt: 'r-1', at: new Date(T0).toISOString() },
    ]);
    expect(store.read('inbox', 'payments#p-1')?.result).toBe(
      JSON.stringify({ receipt: 'r-1', at: new Date(T0) }),
    );
  });

  it('returns undefined on a duplicate when results are not stored', async () => {
    const results: unknown[] = [];
    const { processBatch } = setup({
      handle: async (_message, effects) => {
        results.push(await effects.run(() => 'done'));
      },
    });

    await processBatch(event('m-1', 'p-1'));
    await processBatch(event('m-2', 'p-1'));

    expect(results).toEqual(['done', undefined]);
  });

  it('reports a key whose claim holds a live lease as in flight, without running the effect', async () => {
    const { store, processBatch, contexts, metrics } = setup();
    store.seed('inbox', claimOf('payments#p-1', { owner: 'other', leaseExpiresAt: T0 + 1 }));

    expect(await processBatch(event('m-1', 'p-1'))).toEqual(ids('m-1'));

    expect(contexts).toEqual([]);
    expect(store.calls.map((call) => call.method)).toEqual(['claimLease']);
    expect(metrics.published[0]?.counts).toEqual(counts({ inFlight: 1 }));
  });

  it('takes over a claim whose lease ended with a new owner, keeping the first claim time, and counts it', async () => {
    const { store, processBatch, clock, contexts, metrics, logger } = setup();
    store.seed('inbox', claimOf('payments#p-1', { owner: 'crashed', leaseExpiresAt: T0 + LEASE }));
    clock.advance(LEASE + 1);
    const now = T0 + LEASE + 1;

    expect(await processBatch(event('m-1', 'p-1'))).toEqual(ids());

    expect(store.calls.map((call) => call.args.slice(1))).toEqual([
      [now],
      [now, { owner: 'crashed' }],
      [expect.any(String), expect.any(Object)],
    ]);
    const record = store.read('inbox', 'payments#p-1');
    expect(record).toMatchObject({ status: 'COMPLETED', committedAt: T0, takeovers: 1 });
    expect(record?.owner).not.toBe('crashed');
    expect(contexts[0]?.idempotencyKey).toBe(deriveEffectKeys('payments#p-1').idempotencyKey);
    expect(metrics.published[0]?.counts).toEqual(counts({ processed: 1, takeover: 1 }));
    expect(logger.entries[0]).toMatchObject({
      level: 'warn',
      message: 'Lease ended: claim taken over',
      takeovers: 1,
      scopedKey: 'payments#p-1',
    });
  });

  it('fences the old owner out after a takeover: its completion fails as LEASE_LOST and is retried', async () => {
    const gate = deferred();
    const idempotencyKeys: string[] = [];
    let runs = 0;
    const { store, processBatch, clock, metrics } = setup({
      handle: (_message, effects) =>
        effects.run(async ({ idempotencyKey }) => {
          idempotencyKeys.push(idempotencyKey);
          runs += 1;
          if (runs === 1) await gate.promise;
        }),
    });

    const slow = processBatch(event('m-1', 'p-1'));
    await vi.waitFor(() => expect(runs).toBe(1));
    clock.advance(LEASE + 1);
    expect(await processBatch(event('m-1', 'p-1'))).toEqual(ids());
    gate.resolve();

    expect(await slow).toEqual(ids('m-1'));
    expect(idempotencyKeys).toEqual([idempotencyKeys[0], idempotencyKeys[0]]);
    expect(metrics.published.map((published) => published.counts)).toEqual([
      counts({ processed: 1, takeover: 1 }),
      counts({ retry: 1 }),
    ]);
    expect(store.read('inbox', 'payments#p-1')).toMatchObject({ status: 'COMPLETED', takeovers: 1 });
  });

  it('reports a lost takeover race as in flight', async () => {
    const memory = createMemoryStore();
    const winner = claimOf('payments#p-1', { owner: 'winner', leaseExpiresAt: T0 + 2 * LEASE });
    const store: InboxStore = {
      ...memory,
      claimLease: async (_record, _now, takeover) =>
        takeover
          ? { kind: 'existing', record: winner }
          : { kind: 'existing', record: { ...winner, owner: 'crashed', leaseExpiresAt: T0 - 1 } },
    };
    const { processBatch, contexts, metrics } = setup({ store });

    expect(await processBatch(event('m-1', 'p-1'))).toEqual(ids('m-1'));
    expect(contexts).toEqual([]);
    expect(metrics.published[0]?.counts).toEqual(counts({ inFlight: 1 }));
  });

  it('releases the claim when the effect throws, so the retry runs it again', async () => {
    let attempts = 0;
    const { store, processBatch, metrics, logger } = setup({
      handle: (_message, effects) =>
        effects.run(() => {
          attempts += 1;
          if (attempts === 1) throw new TypeError('downstream 503');
        }),
    });

    expect(await processBatch(event('m-1', 'p-1'))).toEqual(ids('m-1'));
    expect(store.calls.map((call) => call.method)).toEqual(['claimLease', 'release']);
    const owner = (store.calls[0]!.args[0] as InboxRecord).owner;
    expect(store.calls[1]!.args).toEqual(['payments#p-1', { owner }]);
    // The effect may have happened: the claim stays with its fingerprint, its lease ended (0).
    expect(store.read('inbox', 'payments#p-1')).toEqual(
      claimOf('payments#p-1', { owner, leaseExpiresAt: 0 }),
    );
    expect(logger.entries[0]).toMatchObject({
      outcome: 'retry',
      code: 'HANDLER_FAILED',
      errorName: 'TypeError',
    });

    expect(await processBatch(event('m-1', 'p-1'))).toEqual(ids());
    expect(attempts).toBe(2);
    expect(metrics.published.map((published) => published.counts)).toEqual([
      counts({ retry: 1 }),
      counts({ processed: 1 }),
    ]);
  });

  it('dead-letters a PermanentError from the effect, releasing the claim for a later redrive', async () => {
    const { store, processBatch, metrics } = setup({
      handle: (_message, effects) =>
        effects.run(() => {
          throw new PermanentError('card declined');
        }),
    });

    expect(await processBatch(event('m-1', 'p-1'))).toEqual(ids('m-1'));
    expect(store.read('inbox', 'payments#p-1')).toEqual(claimOf('payments#p-1', { leaseExpiresAt: 0 }));
    expect(metrics.published[0]?.counts).toEqual(counts({ permanent: 1 }));
  });

  it('logs an error when the claim of a failed effect cannot be released', async () => {
    const { store, processBatch, logger } = setup({
      handle: (_message, effects) =>
        effects.run(() => {
          throw new Error('boom');
        }),
    });
    store.failNext('release', new EffectivelyOnceError('THROTTLED', 'slow down'));

    expect(await processBatch(event('m-1', 'p-1'))).toEqual(ids('m-1'));
    expect(logger.entries[0]).toMatchObject({
      level: 'error',
      message: 'Releasing the claim failed: it is taken over when its lease ends',
      code: 'THROTTLED',
      scopedKey: 'payments#p-1',
    });
    expect(logger.entries[1]).toMatchObject({ outcome: 'retry', code: 'HANDLER_FAILED' });
  });

  it('keeps the claim, and retries, when completing fails after the effect ran', async () => {
    const { store, processBatch, contexts } = setup();
    store.failNext('complete', new EffectivelyOnceError('THROTTLED', 'slow down'));

    expect(await processBatch(event('m-1', 'p-1'))).toEqual(ids('m-1'));
    expect(contexts).toHaveLength(1);
    expect(store.calls.map((call) => call.method)).toEqual(['claimLease', 'complete']);
    expect(store.read('inbox', 'payments#p-1')).toMatchObject({ status: 'IN_PROGRESS' });
  });

  it('retries a throttled claim without running the effect', async () => {
    const { store, processBatch, contexts, logger } = setup();
    store.failNext('claimLease', new EffectivelyOnceError('THROTTLED', 'slow down'));

    expect(await processBatch(event('m-1', 'p-1'))).toEqual(ids('m-1'));
    expect(contexts).toEqual([]);
    expect(logger.entries[0]).toMatchObject({ outcome: 'retry', code: 'THROTTLED' });
  });

  it('reports a plain error of an injected store as UNEXPECTED', async () => {
    const { store, processBatch, logger } = setup();
    store.failNext('claimLease', new Error('socket hang up'));

    expect(await processBatch(event('m-1', 'p-1'))).toEqual(ids('m-1'));
    expect(logger.entries[0]).toMatchObject({ outcome: 'retry', code: 'UNEXPECTED' });
  });

  it('dead-letters a key reused with a different payload as a mismatch', async () => {
    const { processBatch, metrics } = setup();
    await processBatch(event('m-1', 'p-1', 10));

    expect(await processBatch(event('m-2', 'p-1', 99))).toEqual(ids('m-2'));
    expect(metrics.published[1]?.counts).toEqual(counts({ mismatch: 1 }));
  });

  it('retries when the store returns an expired record', async () => {
    const memory = createMemoryStore();
    const expired = {
      ...claimOf('payments#p-1', { owner: 'x' }),
      status: 'COMPLETED' as const,
      expiresAt: 1,
    };
    const store: InboxStore = { ...memory, claimLease: async () => ({ kind: 'existing', record: expired }) };
    const { processBatch, logger } = setup({ store });

    expect(await processBatch(event('m-1', 'p-1'))).toEqual(ids('m-1'));
    expect(logger.entries[0]).toMatchObject({ code: 'EXPIRED_RECORD' });
  });

  it('acknowledges a message whose handler runs no effect as processed', async () => {
    const { store, processBatch, metrics } = setup({ handle: () => undefined });

    expect(await processBatch(event('m-1', 'p-1'))).toEqual(ids());
    expect(store.calls).toEqual([]);
    expect(metrics.published[0]?.counts).toEqual(counts({ processed: 1 }));
  });

  it('runs records of one key in a batch one after the other: the second is a duplicate', async () => {
    const { processBatch, contexts, metrics } = setup();

    expect(
      await processBatch(sqsEvent(sqsRecord('m-1', payment('p-1')), sqsRecord('m-2', payment('p-1')))),
    ).toEqual(ids());
    expect(contexts).toHaveLength(1);
    expect(metrics.published[0]?.counts).toEqual(counts({ processed: 1, duplicate: 1 }));
  });
});

describe('two-phase mode: named effects', () => {
  it('records each effect under its own key, and after a partial failure runs only the unfinished one', async () => {
    const calls: string[] = [];
    let stockFails = true;
    const { store, processBatch, metrics } = setup({
      storeResults: true,
      handle: async (message, effects) => {
        const invoice = await effects.run('invoice', ({ effect, scopedKey }) => {
          calls.push(`${effect}:${scopedKey}`);
          return { invoiceId: `inv-${message.body.id}` };
        });
        await effects.run('stock', ({ effect }) => {
          calls.push(`${effect}:${JSON.stringify(invoice)}`);
          if (stockFails) throw new Error('stock service down');
        });
      },
    });

    expect(await processBatch(event('m-1', 'p-1'))).toEqual(ids('m-1'));
    stockFails = false;
    expect(await processBatch(event('m-1', 'p-1'))).toEqual(ids());
    expect(await processBatch(event('m-1', 'p-1'))).toEqual(ids());

    expect(calls).toEqual([
      'invoice:payments/invoice#p-1',
      'stock:{"invoiceId":"inv-p-1"}',
      'stock:{"invoiceId":"inv-p-1"}',
    ]);
    expect(store.items('inbox').map((item) => [item.pk, item.status])).toEqual([
      ['payments/invoice#p-1', 'COMPLETED'],
      ['payments/stock#p-1', 'COMPLETED'],
    ]);
    expect(metrics.published.map((published) => published.counts)).toEqual([
      counts({ retry: 1 }),
      counts({ processed: 1 }),
      counts({ duplicate: 1 }),
    ]);
    // Third delivery: one claim per effect, nothing else.
    expect(store.calls.slice(-2).map((call) => call.method)).toEqual(['claimLease', 'claimLease']);
  });

  it('derives different keys for each effect, consumer and dedup key', () => {
    const keys = [
      scopeKey('payments', 'p-1', 'invoice'),
      scopeKey('payments', 'p-1', 'stock'),
      scopeKey('payments', 'p-1'),
      scopeKey('refunds', 'p-1', 'invoice'),
      scopeKey('payments', 'p-2', 'invoice'),
    ].map((key) => deriveEffectKeys(key).idempotencyKey);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('runs effects started in parallel, and decides the outcome also by effects the handler did not await', async () => {
    const ran: string[] = [];
    const { processBatch, store } = setup({
      handle: (_message, effects) => {
        void effects.run('a', async () => {
          await Promise.resolve();
          ran.push('a');
        });
        void effects.run('b', () => {
          ran.push('b');
          throw new Error('b fails');
        });
      },
    });

    expect(await processBatch(event('m-1', 'p-1'))).toEqual(ids('m-1'));
    expect(ran.sort()).toEqual(['a', 'b']);
    expect(store.read('inbox', 'payments/a#p-1')).toMatchObject({ status: 'COMPLETED' });
    // Released, keeping the payload's fingerprint (lease end 0) for the retry.
    expect(store.read('inbox', 'payments/b#p-1')).toMatchObject({ status: 'IN_PROGRESS', leaseExpiresAt: 0 });
  });

  it('fails the message when an effect could not run, even if the handler catches the rejection', async () => {
    const { store, processBatch, metrics } = setup({
      handle: async (_message, effects) => {
        await effects.run('notify', () => 'sent').catch(() => 'ignored');
      },
    });
    store.seed('inbox', claimOf('payments/notify#p-1', { owner: 'other' }));

    expect(await processBatch(event('m-1', 'p-1'))).toEqual(ids('m-1'));
    expect(metrics.published[0]?.counts).toEqual(counts({ inFlight: 1 }));
  });

  it('rejects an effect name run twice in one message, and a run without a function, as permanent', async () => {
    for (const handle of [
      async (_message: Message<Payment>, effects: Effects) => {
        await effects.run('notify', () => 1);
        await effects.run('notify', () => 2);
      },
      (_message: Message<Payment>, effects: Effects) => effects.run('notify', undefined as never),
    ]) {
      const { processBatch, logger } = setup({ handle });
      expect(await processBatch(event('m-1', 'p-1'))).toEqual(ids('m-1'));
      expect(logger.entries.at(-1)).toMatchObject({ outcome: 'permanent', code: 'VALIDATION' });
    }
  });

  it('reports a failure of the handler outside the effects', async () => {
    const { processBatch, logger } = setup({
      handle: async (_message, effects) => {
        await effects.run('a', () => 1);
        throw new PermanentError('bad order');
      },
    });

    expect(await processBatch(event('m-1', 'p-1'))).toEqual(ids('m-1'));
    expect(logger.entries[0]).toMatchObject({ outcome: 'permanent', code: 'PERMANENT' });
  });
});

describe('two-phase mode: stuck claims', () => {
  it('dead-letters a claim in progress longer than stuckAfterMillis instead of taking it over', async () => {
    const { store, processBatch, clock, metrics, logger, contexts } = setup({ stuckAfterMillis: 10 * LEASE });
    store.seed('inbox', claimOf('payments#p-1', { owner: 'crashed', takeovers: 3 }));
    clock.advance(10 * LEASE);

    expect(await processBatch(event('m-1', 'p-1'))).toEqual(ids('m-1'));
    expect(contexts).toEqual([]);
    expect(store.calls.map((call) => call.method)).toEqual(['claimLease']);
    expect(metrics.published[0]?.counts).toEqual(counts({ permanent: 1 }));
    expect(logger.entries[0]).toMatchObject({
      outcome: 'permanent',
      code: 'STUCK_IN_PROGRESS',
      reason: `In progress since ${new Date(T0).toISOString()}, taken over 3 times`,
    });
  });

  it('takes over a claim younger than stuckAfterMillis', async () => {
    const { store, processBatch, clock, metrics } = setup({ stuckAfterMillis: 10 * LEASE });
    store.seed('inbox', claimOf('payments#p-1', { owner: 'crashed' }));
    clock.advance(10 * LEASE - 1);

    expect(await processBatch(event('m-1', 'p-1'))).toEqual(ids());
    expect(metrics.published[0]?.counts).toEqual(counts({ processed: 1, takeover: 1 }));
  });

  it('dead-letters a claim taken over maxTakeovers times; maxTakeovers 0 never takes over', async () => {
    for (const [maxTakeovers, takeovers, expected] of [
      [2, 2, 'permanent'],
      [2, 1, 'processed'],
      [0, undefined, 'permanent'],
    ] as const) {
      const { store, processBatch, clock, metrics } = setup({ maxTakeovers });
      store.seed('inbox', claimOf('payments#p-1', { owner: 'crashed', takeovers }));
      clock.advance(LEASE + 1);

      await processBatch(event('m-1', 'p-1'));
      expect(metrics.published[0]?.counts[expected]).toBe(1);
    }
  });
});

describe('two-phase mode: stored results', () => {
  it('completes without the result, logging ITEM_TOO_LARGE, when it would not fit the item', async () => {
    const results: unknown[] = [];
    const { store, processBatch, logger } = setup({
      storeResults: true,
      handle: async (_message, effects) => {
        results.push(await effects.run('pdf', () => 'x'.repeat(MAX_ITEM_BYTES)));
      },
    });

    expect(await processBatch(event('m-1', 'p-1'))).toEqual(ids());
    expect(store.read('inbox', 'payments/pdf#p-1')).toMatchObject({ status: 'COMPLETED' });
    expect(store.read('inbox', 'payments/pdf#p-1')).not.toHaveProperty('result');
    expect(logger.entries).toEqual([
      expect.objectContaining({
        level: 'warn',
        message: 'Effect result not stored: no JSON form, or over the item size limit',
        effect: 'pdf',
        code: 'ITEM_TOO_LARGE',
      }),
    ]);
    await processBatch(event('m-2', 'p-1'));
    expect(results[1]).toBeUndefined();
  });

  it('completes without a result that has no JSON form', async () => {
    const { store, processBatch, logger } = setup({
      storeResults: true,
      handle: (_message, effects) => effects.run(() => 10n),
    });

    expect(await processBatch(event('m-1', 'p-1'))).toEqual(ids());
    expect(store.read('inbox', 'payments#p-1')).not.toHaveProperty('result');
    expect(logger.entries[0]).toMatchObject({ code: 'ITEM_TOO_LARGE' });
  });

  it('returns a stored value that is not JSON text as it is', async () => {
    const results: unknown[] = [];
    const { store, processBatch } = setup({
      handle: async (_message, effects) => {
        results.push(await effects.run(() => 'unused'));
      },
    });
    for (const result of ['not json', { legacy: true }]) {
      store.seed('inbox', {
        ...claimOf('payments#p-1', { owner: 'x' }),
        status: 'COMPLETED',
        result,
      });
      await processBatch(event('m-1', 'p-1'));
    }
    expect(results).toEqual(['not json', { legacy: true }]);
  });
});

describe('two-phase mode: heartbeat', () => {
  it('extends the lease every third of it while the effect runs, and stops when it ends', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const gate = deferred();
    const { store, processBatch, clock } = setup({
      heartbeat: true,
      handle: (_message, effects) => effects.run(() => gate.promise),
    });

    const running = processBatch(event('m-1', 'p-1'));
    await vi.waitFor(() => expect(store.calls).toHaveLength(1));
    clock.advance(LEASE / 3);
    await vi.advanceTimersByTimeAsync(LEASE / 3);
    clock.advance(LEASE / 3);
    await vi.advanceTimersByTimeAsync(LEASE / 3);
    gate.resolve();
    expect(await running).toEqual(ids());
    await vi.advanceTimersByTimeAsync(LEASE);

    const owner = (store.calls[0]!.args[0] as InboxRecord).owner;
    // Each extension moves expiresAt with the lease: the record lives its TTL past the lease end.
    expect(store.calls.map((call) => [call.method, ...call.args.slice(1)])).toEqual([
      ['claimLease', T0],
      ['extendLease', owner, T0 + LEASE / 3 + LEASE, Math.ceil((T0 + LEASE / 3 + LEASE) / 1000) + TTL],
      [
        'extendLease',
        owner,
        T0 + (2 * LEASE) / 3 + LEASE,
        Math.ceil((T0 + (2 * LEASE) / 3 + LEASE) / 1000) + TTL,
      ],
      ['complete', owner, { expiresAt: Math.floor((T0 + (2 * LEASE) / 3) / 1000) + TTL }],
    ]);
  });

  /** Lets every pending callback run, so a request sent at once would have been recorded. */
  const settle = async () => {
    for (let turn = 0; turn < 10; turn += 1) await new Promise((resolve) => setImmediate(resolve));
  };

  it('waits for the extension in flight before releasing a failed effect, so the retry takes the released claim at once', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const failNow = deferred();
    let attempts = 0;
    const { store, processBatch, clock, metrics } = setup({
      heartbeat: true,
      handle: (_message, effects) =>
        effects.run(async () => {
          attempts += 1;
          if (attempts > 1) return;
          await failNow.promise;
          throw new Error('downstream refused');
        }),
    });
    const open = store.gate('extendLease');

    const running = processBatch(event('m-1', 'p-1'));
    await vi.waitFor(() => expect(store.calls).toHaveLength(1));
    clock.advance(LEASE / 3);
    await vi.advanceTimersByTimeAsync(LEASE / 3);
    failNow.resolve();
    await settle();
    expect(store.calls.map((call) => call.method)).toEqual(['claimLease', 'extendLease']);
    open();

    expect(await running).toEqual(ids('m-1'));
    expect(store.calls.map((call) => call.method)).toEqual(['claimLease', 'extendLease', 'release']);
    expect(store.read('inbox', 'payments#p-1')).toMatchObject({ status: 'IN_PROGRESS', leaseExpiresAt: 0 });
    expect(await processBatch(event('m-2', 'p-1'))).toEqual(ids());
    expect(attempts).toBe(2);
    expect(metrics.published.map((published) => published.counts)).toEqual([
      counts({ retry: 1 }),
      counts({ processed: 1 }),
    ]);
  });

  it('waits for the extension in flight before completing the effect', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const finish = deferred();
    const { store, processBatch, clock } = setup({
      heartbeat: true,
      handle: (_message, effects) => effects.run(() => finish.promise),
    });
    const open = store.gate('extendLease');

    const running = processBatch(event('m-1', 'p-1'));
    await vi.waitFor(() => expect(store.calls).toHaveLength(1));
    clock.advance(LEASE / 3);
    await vi.advanceTimersByTimeAsync(LEASE / 3);
    finish.resolve();
    await settle();
    expect(store.calls.map((call) => call.method)).toEqual(['claimLease', 'extendLease']);
    open();

    expect(await running).toEqual(ids());
    expect(store.calls.map((call) => call.method)).toEqual(['claimLease', 'extendLease', 'complete']);
    expect(store.read('inbox', 'payments#p-1')).toMatchObject({ status: 'COMPLETED' });
  });

  it('aborts the effect signal when the claim was taken over, and reports LEASE_LOST', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    let reason: unknown;
    const { store, processBatch, metrics } = setup({
      heartbeat: true,
      handle: (_message, effects) =>
        effects.run(
          ({ signal }) =>
            new Promise((_resolve, reject) => {
              signal.addEventListener('abort', () => {
                reason = signal.reason;
                reject(signal.reason);
              });
            }),
        ),
    });

    const running = processBatch(event('m-1', 'p-1'));
    await vi.waitFor(() => expect(store.calls).toHaveLength(1));
    store.seed('inbox', claimOf('payments#p-1', { owner: 'successor' }));
    await vi.advanceTimersByTimeAsync(LEASE / 3);

    expect(await running).toEqual(ids('m-1'));
    expect(reason).toMatchObject({ code: 'LEASE_LOST' });
    expect(metrics.published[0]?.counts).toEqual(counts({ retry: 1 }));
    expect(store.read('inbox', 'payments#p-1')).toMatchObject({ owner: 'successor' });
  });

  it('keeps beating when one extension fails', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const gate = deferred();
    const { store, processBatch } = setup({
      heartbeat: true,
      handle: (_message, effects) => effects.run(() => gate.promise),
    });

    const running = processBatch(event('m-1', 'p-1'));
    await vi.waitFor(() => expect(store.calls).toHaveLength(1));
    store.failNext('extendLease', new EffectivelyOnceError('THROTTLED', 'slow down'));
    await vi.advanceTimersByTimeAsync(LEASE / 3);
    await vi.advanceTimersByTimeAsync(LEASE / 3);
    gate.resolve();

    expect(await running).toEqual(ids());
    expect(store.calls.map((call) => call.method)).toEqual([
      'claimLease',
      'extendLease',
      'extendLease',
      'complete',
    ]);
  });
});

describe('two-phase mode: the lease', () => {
  const claimedLease = async (options: Record<string, unknown>, context?: object) => {
    const { store, processBatch } = setup(options);
    await processBatch(event('m-1', 'p-1'), context);
    return (store.calls[0]!.args[0] as InboxRecord).leaseExpiresAt! - T0;
  };

  it('follows the time the invocation has left when leaseMillis is not set', async () => {
    expect(await claimedLease({ leaseMillis: undefined }, { getRemainingTimeInMillis: () => 120_000 })).toBe(
      120_000,
    );
  });

  it('never claims with a zero lease: a derived lease has a floor of one second', async () => {
    for (const remaining of [1, 500, 999.5]) {
      const lease = await claimedLease(
        { leaseMillis: undefined, deadlineMarginMillis: 0 },
        { getRemainingTimeInMillis: () => remaining },
      );
      expect(lease).toBe(1000);
    }
    // With no time left, nothing is claimed at all: the message is retried (DEADLINE).
    const { store, processBatch, logger } = setup({
      leaseMillis: undefined,
      deadlineMarginMillis: 0,
    } as never);
    expect(await processBatch(event('m-1', 'p-1'), { getRemainingTimeInMillis: () => 0 })).toEqual(
      ids('m-1'),
    );
    expect(store.calls).toEqual([]);
    expect(logger.entries[0]).toMatchObject({ code: 'DEADLINE' });
  });

  it('uses 15 minutes without a Lambda context, and leaseMillis when set', async () => {
    expect(await claimedLease({ leaseMillis: undefined })).toBe(DEFAULT_LEASE_MILLIS);
    expect(DEFAULT_LEASE_MILLIS).toBe(900_000);
    expect(await claimedLease({ leaseMillis: 45_000 }, { getRemainingTimeInMillis: () => 120_000 })).toBe(
      45_000,
    );
  });

  it.each([
    [{ leaseMillis: 0 }, 'Expected `twoPhase.leaseMillis` to be a positive integer, got `0`'],
    [{ leaseMillis: -1 }, 'Expected `twoPhase.leaseMillis` to be a positive integer, got `-1`'],
    [{ leaseMillis: 1500.5 }, 'Expected `twoPhase.leaseMillis` to be a positive integer, got `1500.5`'],
    [{ leaseMillis: '30000' }, 'Expected `twoPhase.leaseMillis` to be a positive integer, got `"30000"`'],
    [{ leaseMillis: Number.NaN }, 'Expected `twoPhase.leaseMillis` to be a positive integer, got `NaN`'],
    [
      { leaseMillis: 30 },
      'Expected `twoPhase.leaseMillis` to be milliseconds (at least 1000; for 30 seconds use 30000), got `30`',
    ],
    [
      { leaseMillis: 900 },
      'Expected `twoPhase.leaseMillis` to be milliseconds (at least 1000; for 900 seconds use 900000), got `900`',
    ],
    [
      { leaseMillis: 3_600_000 },
      'Expected `twoPhase.leaseMillis` to be shorter than `ttlSeconds` (3600000 milliseconds), got `3600000`',
    ],
    [
      { stuckAfterMillis: 60 },
      'Expected `twoPhase.stuckAfterMillis` to be milliseconds (at least 1000; for 60 seconds use 60000), got `60`',
    ],
    [{ maxTakeovers: -1 }, 'Expected `twoPhase.maxTakeovers` to be a non-negative integer, got `-1`'],
    [{ heartbeat: 'yes' }, 'Expected `twoPhase.heartbeat` to be a boolean, got `"yes"`'],
    [{ storeResults: 1 }, 'Expected `twoPhase.storeResults` to be a boolean, got `1`'],
    [
      { store: { insert() {}, commit() {}, insertEntity() {}, release() {} } },
      'Expected `store` to be an object with `claimLease`, `complete`, `release`, `extendLease`, got `an object`',
    ],
  ])('rejects %j at cold start with a message naming the option', (options, message) => {
    expect(() => setup(options as never)).toThrow(
      expect.objectContaining({ code: 'INVALID_OPTIONS', message }) as Error,
    );
  });
});

describe('deriveEffectKeys', () => {
  it('derives the SHA-256 of the scoped key as Idempotency-Key and deduplication id, and a UUID-shaped client token', () => {
    // Pinned: a change here changes every downstream key of every deployed consumer.
    expect(deriveEffectKeys('payments/charge#order-1')).toEqual({
      idempotencyKey: '4f37adbeeecf2a4afdd1e5d1c4f484f372853c41430db4f655881747121f061e',
      deduplicationId: '4f37adbeeecf2a4afdd1e5d1c4f484f372853c41430db4f655881747121f061e',
      clientToken: '4f37adbe-eecf-8a4a-bdd1-e5d1c4f484f3',
    });
  });

  it('is stable and fits every target for any scoped key', async () => {
    await check(
      fc.property(fc.string({ minLength: 1, maxLength: 300 }), (key) => {
        const keys = deriveEffectKeys(key);
        expect(deriveEffectKeys(key)).toEqual(keys);
        expect(keys.idempotencyKey).toBe(sha256Hex(key));
        // SQS MessageDeduplicationId: at most 128 characters of alphanumerics and punctuation.
        expect(keys.deduplicationId).toMatch(/^[!-~]{1,128}$/);
        // DynamoDB's ClientRequestToken allows 36 characters; most client tokens 64.
        expect(keys.clientToken).toMatch(
          /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
        );
      }),
    );
  });
});
