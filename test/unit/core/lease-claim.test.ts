import { describe, expect, it } from 'vitest';
import { claimWithTakeover, createLeaseClaim } from '../../../lambda/core/lease-claim';
import type { InboxRecord } from '../../../lambda/core/store-port';
import { createMemoryStore } from '../../support/memory-store';

const T0 = Date.UTC(2026, 0, 1);

const claim = (owner: string, now: number, leaseMillis = 1000): InboxRecord => ({
  pk: 'jobs#report:2026-01-01',
  status: 'IN_PROGRESS',
  fingerprint: 'f',
  expiresAt: Math.floor(now / 1000) + 3600,
  consumer: 'jobs',
  leaseExpiresAt: now + leaseMillis,
  owner,
});

describe('claimWithTakeover', () => {
  it('claims a free key', async () => {
    const store = createMemoryStore();
    expect(await claimWithTakeover(store, claim('a', T0), T0)).toMatchObject({ kind: 'inserted' });
    expect(store.read('inbox', 'jobs#report:2026-01-01')).toMatchObject({ owner: 'a' });
  });

  it('answers with the live claim while its lease runs', async () => {
    const store = createMemoryStore();
    await claimWithTakeover(store, claim('a', T0), T0);

    const answer = await claimWithTakeover(store, claim('b', T0 + 999), T0 + 999);

    expect(answer).toMatchObject({ kind: 'existing', record: { owner: 'a', status: 'IN_PROGRESS' } });
    expect(store.read('inbox', 'jobs#report:2026-01-01')).toMatchObject({ owner: 'a' });
  });

  it('takes a claim over once its lease has ended', async () => {
    const store = createMemoryStore();
    await claimWithTakeover(store, claim('a', T0), T0);

    const answer = await claimWithTakeover(store, claim('b', T0 + 1001), T0 + 1001);

    expect(answer).toEqual({ kind: 'inserted', takeover: true });
    expect(store.read('inbox', 'jobs#report:2026-01-01')).toMatchObject({ owner: 'b' });
  });

  it('lets only one of two runs that saw the same ended lease take it over', async () => {
    const store = createMemoryStore();
    await claimWithTakeover(store, claim('a', T0), T0);
    const later = T0 + 1001;

    const answers = await Promise.all([
      claimWithTakeover(store, claim('b', later), later),
      claimWithTakeover(store, claim('c', later), later),
    ]);

    expect(answers.filter((answer) => answer.kind === 'inserted')).toHaveLength(1);
    expect(answers.filter((answer) => answer.kind === 'existing')).toHaveLength(1);
  });

  it('never takes over the ended lease of a claim with another fingerprint', async () => {
    const store = createMemoryStore();
    await claimWithTakeover(store, claim('a', T0), T0);

    const answer = await claimWithTakeover(store, { ...claim('b', T0 + 1001), fingerprint: 'g' }, T0 + 1001);

    expect(answer).toMatchObject({ kind: 'existing', record: { owner: 'a', fingerprint: 'f' } });
    expect(store.calls.filter((call) => call.method === 'claimLease')).toHaveLength(2);
  });

  it('claims a released claim in one request, and keeps it from another fingerprint', async () => {
    const store = createMemoryStore();
    await claimWithTakeover(store, claim('a', T0), T0);
    await store.release('jobs#report:2026-01-01', { owner: 'a' });

    const other = await claimWithTakeover(store, { ...claim('b', T0 + 1), fingerprint: 'g' }, T0 + 1);
    const calls = store.calls.length;
    const same = await claimWithTakeover(store, claim('c', T0 + 2), T0 + 2);

    expect(other).toMatchObject({ kind: 'existing', record: { owner: 'a', leaseExpiresAt: 0 } });
    expect(same).toEqual({ kind: 'inserted', takeover: false });
    expect(store.calls).toHaveLength(calls + 1);
    expect(store.read('inbox', 'jobs#report:2026-01-01')).toMatchObject({ owner: 'c', fingerprint: 'f' });
  });

  it('never takes over a completed record', async () => {
    const store = createMemoryStore();
    await claimWithTakeover(store, claim('a', T0), T0);
    await store.complete('jobs#report:2026-01-01', 'a', { expiresAt: T0 / 1000 + 3600 });

    const answer = await claimWithTakeover(store, claim('b', T0 + 5000), T0 + 5000);

    expect(answer).toMatchObject({ kind: 'existing', record: { status: 'COMPLETED' } });
  });
});

describe('claimWithTakeover with a takeover policy', () => {
  const PK = 'jobs#report:2026-01-01';

  it('counts the takeover and keeps the first claim time on the record', async () => {
    const store = createMemoryStore();
    await claimWithTakeover(store, { ...claim('a', T0), committedAt: T0 }, T0, {});

    const later = T0 + 1001;
    const answer = await claimWithTakeover(store, { ...claim('b', later), committedAt: later }, later, {});

    expect(answer).toEqual({ kind: 'inserted', takeover: true, takeovers: 1 });
    expect(store.read('inbox', PK)).toMatchObject({ owner: 'b', committedAt: T0, takeovers: 1 });
    expect(store.calls.map((call) => call.args[2])).toEqual([undefined, undefined, { owner: 'a' }]);
  });

  it('counts on from the takeovers the record carries', async () => {
    const store = createMemoryStore();
    await claimWithTakeover(store, { ...claim('a', T0), committedAt: T0 - 5000, takeovers: 2 }, T0, {});

    const answer = await claimWithTakeover(store, claim('b', T0 + 1001), T0 + 1001, { maxTakeovers: 3 });

    expect(answer).toEqual({ kind: 'inserted', takeover: true, takeovers: 3 });
    expect(store.read('inbox', PK)).toMatchObject({ owner: 'b', committedAt: T0 - 5000, takeovers: 3 });
  });

  it('reports a claim taken over maxTakeovers times as stuck, and leaves it alone', async () => {
    const store = createMemoryStore();
    const stale = { ...claim('a', T0), committedAt: T0 - 5000, takeovers: 2 };
    await claimWithTakeover(store, stale, T0);

    const answer = await claimWithTakeover(store, claim('b', T0 + 1001), T0 + 1001, { maxTakeovers: 2 });

    expect(answer).toEqual({ kind: 'stuck', record: stale, takeovers: 2, since: T0 - 5000 });
    expect(store.calls.filter((call) => call.method === 'claimLease')).toHaveLength(2);
    expect(store.read('inbox', PK)).toMatchObject({ owner: 'a', takeovers: 2 });
  });

  it('reports a claim first made stuckAfterMillis ago as stuck, and one just younger as taken over', async () => {
    const store = createMemoryStore();
    await claimWithTakeover(store, { ...claim('a', T0), committedAt: T0 }, T0);

    const young = await claimWithTakeover(store, claim('b', T0 + 1001), T0 + 1001, {
      stuckAfterMillis: 1002,
    });
    const reclaimedAt = T0 + 1001 + 1001;
    const old = await claimWithTakeover(store, claim('c', reclaimedAt), reclaimedAt, {
      stuckAfterMillis: 2002,
    });

    expect(young).toEqual({ kind: 'inserted', takeover: true, takeovers: 1 });
    expect(old).toMatchObject({ kind: 'stuck', record: { owner: 'b' }, takeovers: 1, since: T0 });
  });

  it('counts from now a crashed claim that carries no claim time', async () => {
    const store = createMemoryStore();
    await claimWithTakeover(store, claim('a', T0), T0);

    const answer = await claimWithTakeover(store, claim('b', T0 + 1001), T0 + 1001, { stuckAfterMillis: 1 });

    expect(answer).toEqual({ kind: 'inserted', takeover: true, takeovers: 1 });
    expect(store.read('inbox', PK)).toMatchObject({ owner: 'b', committedAt: T0 + 1001, takeovers: 1 });
  });

  it('takes over without a count and with the new claim time when no policy is given', async () => {
    const store = createMemoryStore();
    await claimWithTakeover(store, { ...claim('a', T0), committedAt: T0 }, T0);

    await claimWithTakeover(store, { ...claim('b', T0 + 1001), committedAt: T0 + 1001 }, T0 + 1001);

    const stored = store.read('inbox', PK);
    expect(stored).toMatchObject({ owner: 'b', committedAt: T0 + 1001 });
    expect(stored).not.toHaveProperty('takeovers');
  });

  it("never finds a live claim or another payload's claim stuck", async () => {
    const store = createMemoryStore();
    await claimWithTakeover(store, { ...claim('a', T0), takeovers: 9 }, T0);
    const policy = { maxTakeovers: 0, stuckAfterMillis: 1 };

    const live = await claimWithTakeover(store, claim('b', T0 + 999), T0 + 999, policy);
    const other = await claimWithTakeover(
      store,
      { ...claim('c', T0 + 1001), fingerprint: 'g' },
      T0 + 1001,
      policy,
    );

    expect(live).toMatchObject({ kind: 'existing', record: { owner: 'a' } });
    expect(other).toMatchObject({ kind: 'existing', record: { owner: 'a' } });
  });
});

describe('createLeaseClaim', () => {
  const PK = 'jobs#report:2026-01-01';
  const TARGET = { pk: PK, fingerprint: 'f', consumer: 'jobs', leaseMillis: 1000, ttlSeconds: 3600 };

  it('claims the key in progress, with its owner, its lease end and a TTL past the lease end', async () => {
    const store = createMemoryStore();
    const lease = createLeaseClaim(store, TARGET, T0 + 500);

    expect(await lease.claim()).toMatchObject({ kind: 'inserted' });
    expect(lease.leaseExpiresAt).toBe(T0 + 1500);
    expect(store.calls[0]).toEqual({
      method: 'claimLease',
      args: [
        {
          pk: PK,
          status: 'IN_PROGRESS',
          fingerprint: 'f',
          expiresAt: Math.ceil((T0 + 1500) / 1000) + 3600,
          consumer: 'jobs',
          committedAt: T0 + 500,
          leaseExpiresAt: T0 + 1500,
          owner: lease.owner,
        },
        T0 + 500,
      ],
    });
  });

  it('extends its lease and the TTL with it, fenced by its owner', async () => {
    const store = createMemoryStore();
    const lease = createLeaseClaim(store, TARGET, T0);
    await lease.claim();

    expect(await lease.extend(T0 + 700)).toEqual({ kind: 'ok' });

    expect(lease.leaseExpiresAt).toBe(T0 + 1700);
    expect(store.calls[1]).toEqual({
      method: 'extendLease',
      args: [PK, lease.owner, T0 + 1700, Math.ceil((T0 + 1700) / 1000) + 3600],
    });
    expect(store.read('inbox', PK)).toMatchObject({ leaseExpiresAt: T0 + 1700 });
  });

  it('answers lost-ownership to an extension after a takeover, and keeps its lease end', async () => {
    const store = createMemoryStore();
    const lease = createLeaseClaim(store, TARGET, T0);
    await lease.claim();
    await createLeaseClaim(store, TARGET, T0 + 1001).claim();

    expect(await lease.extend(T0 + 1002)).toEqual({ kind: 'lost-ownership' });
    expect(lease.leaseExpiresAt).toBe(T0 + 1000);
  });

  it('completes with expiresAt counted from the completion, with a result only when given', async () => {
    const store = createMemoryStore();
    const lease = createLeaseClaim(store, TARGET, T0);
    await lease.claim();

    expect(await lease.complete(T0 + 2500, '{"ok":true}')).toEqual({ kind: 'ok' });
    const other = createLeaseClaim(store, { ...TARGET, pk: 'jobs#other' }, T0);
    await other.claim();
    await other.complete(T0 + 2500);

    expect(store.calls[1]).toEqual({
      method: 'complete',
      args: [PK, lease.owner, { expiresAt: T0 / 1000 + 2 + 3600, result: '{"ok":true}' }],
    });
    expect(store.calls[3]).toEqual({
      method: 'complete',
      args: ['jobs#other', other.owner, { expiresAt: T0 / 1000 + 2 + 3600 }],
    });
  });

  it('releases the claim keeping its fingerprint, so the same key claims it again at once', async () => {
    const store = createMemoryStore();
    const lease = createLeaseClaim(store, TARGET, T0);
    await lease.claim();

    expect(await lease.release()).toEqual({ kind: 'ok' });
    expect(store.calls[1]).toEqual({ method: 'release', args: [PK, { owner: lease.owner }] });
    expect(store.read('inbox', PK)).toMatchObject({ fingerprint: 'f', leaseExpiresAt: 0 });
    expect(await createLeaseClaim(store, TARGET, T0 + 1).claim()).toMatchObject({ kind: 'inserted' });
  });

  it('takes over under the policy it was created with', async () => {
    const store = createMemoryStore();
    await createLeaseClaim(store, TARGET, T0).claim();

    const answer = await createLeaseClaim(store, TARGET, T0 + 1001, { maxTakeovers: 0 }).claim();

    expect(answer).toMatchObject({ kind: 'stuck', takeovers: 0, since: T0 });
  });
});
