import { describe, expect, it } from 'vitest';
import type { InboxRecord } from '../../lambda/core/store-port';
import { claimWithTakeover, isLeaseEnded } from '../../lambda/jobs/lease-claim';
import { createMemoryStore } from '../support/memory-store';

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

describe('isLeaseEnded', () => {
  it('holds only for a live in-progress claim whose lease ended before now', () => {
    expect(isLeaseEnded(claim('a', T0), T0 + 1001)).toBe(true);
    expect(isLeaseEnded(claim('a', T0), T0 + 1000)).toBe(false);
    expect(isLeaseEnded({ ...claim('a', T0), status: 'COMPLETED' }, T0 + 5000)).toBe(false);
    expect(isLeaseEnded({ ...claim('a', T0), expiresAt: T0 / 1000 }, T0 + 5000)).toBe(false);
  });
});
