import { describe, expect, it, vi } from 'vitest';
import { EffectivelyOnceError } from '../../../lambda/core/errors';
import { fingerprintOf } from '../../../lambda/core/fingerprint';
import type { LogEntry } from '../../../lambda/core/logger';
import type { InboxRecord } from '../../../lambda/core/store-port';
import {
  createJobGuard,
  type JobGuardOptions,
  type JobRun,
  jobSlotKey,
} from '../../../lambda/jobs/job-guard';
import { deferred } from '../../support/fixtures';
import { createMemoryStore, type MemoryStore } from '../../support/memory-store';

const T0 = Date.UTC(2026, 0, 1, 2);
const SLOT = { job: 'nightly-report', slot: '2026-01-01T00:00:00.000Z' };
const PK = 'reports#nightly-report:2026-01-01T00%3A00%3A00.000Z';
const CHECKPOINT_PK = 'reports/checkpoint#nightly-report:2026-01-01T00%3A00%3A00.000Z';

const settle = async () => {
  for (let i = 0; i < 20; i += 1) await Promise.resolve();
};

/** Another run's claim of SLOT, as the store would answer with it. */
const slotClaim = (fields: Pick<InboxRecord, 'expiresAt' | 'leaseExpiresAt'>): InboxRecord => ({
  pk: PK,
  status: 'IN_PROGRESS',
  fingerprint: fingerprintOf({ job: SLOT.job, slot: SLOT.slot }),
  consumer: 'reports',
  owner: 'x',
  ...fields,
});

function setup(overrides: Partial<JobGuardOptions> = {}) {
  const store: MemoryStore = createMemoryStore();
  let now = T0;
  const clock = () => now;
  const logs: LogEntry[] = [];
  const guard = createJobGuard({
    consumer: 'reports',
    store,
    clock,
    leaseMillis: 60_000,
    logger: { log: (entry) => void logs.push(entry) },
    ...overrides,
  });
  return { store, guard, logs, advance: (millis: number) => (now += millis) };
}

describe('createJobGuard', () => {
  it('runs a slot once: a later run of the same slot does nothing', async () => {
    const { guard, store } = setup();
    let effects = 0;
    const work = async () => {
      effects += 1;
      return 'report-1';
    };

    expect(await guard.run(SLOT, work)).toEqual({ ran: true, result: 'report-1', takeover: false });
    expect(await guard.run(SLOT, work)).toEqual({ ran: false, reason: 'completed' });
    expect(effects).toBe(1);
    expect(store.read('inbox', PK)).toMatchObject({
      status: 'COMPLETED',
      consumer: 'reports',
      expiresAt: T0 / 1000 + 7 * 86_400,
    });
  });

  it('answers an overlapping run of the same slot with in-progress and the lease end', async () => {
    const { guard } = setup();
    const gate = deferred();
    let effects = 0;
    const first = guard.run(SLOT, async () => {
      effects += 1;
      await gate.promise;
    });
    await settle();

    const overlapping = await guard.run(SLOT, async () => {
      effects += 1;
    });
    gate.resolve();

    expect(overlapping).toEqual({ ran: false, reason: 'in-progress', leaseExpiresAt: T0 + 60_000 });
    expect(await first).toEqual({ ran: true, result: undefined, takeover: false });
    expect(effects).toBe(1);
  });

  it('runs different slots and different jobs independently', async () => {
    const { guard } = setup();
    const ran = async (job: string, slot: string) => (await guard.run({ job, slot }, () => 1)).ran;
    expect(await ran('nightly-report', 'a')).toBe(true);
    expect(await ran('nightly-report', 'b')).toBe(true);
    expect(await ran('cleanup', 'a')).toBe(true);
  });

  it('releases the slot when the work throws, so a retry runs it again', async () => {
    const { guard, store } = setup();
    await expect(
      guard.run(SLOT, () => {
        throw new Error('export failed');
      }),
    ).rejects.toThrow('export failed');
    // Released, the claim stays bound to its slot with its lease ended.
    expect(store.read('inbox', PK)).toMatchObject({ status: 'IN_PROGRESS', leaseExpiresAt: 0 });
    const claims = store.calls.filter((call) => call.method === 'claimLease').length;
    expect(await guard.run(SLOT, () => 'ok')).toEqual({ ran: true, result: 'ok', takeover: false });
    // The retry claims the released slot in one request, as a first claim.
    expect(store.calls.filter((call) => call.method === 'claimLease')).toHaveLength(claims + 1);
    expect(store.read('inbox', PK)).toMatchObject({ status: 'COMPLETED' });
  });

  it('takes over a crashed run once its lease ends, resumes from its checkpoint, and stops the crashed run at its next checkpoint', async () => {
    const { guard, advance, store } = setup();
    const crashed = deferred();
    const pages: number[] = [];
    const work = async (run: JobRun) => {
      let page = (await run.loadCheckpoint<number>()) ?? 0;
      for (; page < 4; page += 1) {
        if (page === 2 && !run.takeover) await crashed.promise; // the first run hangs here
        pages.push(page);
        await run.saveCheckpoint(page + 1);
      }
      return pages.length;
    };

    const first = guard.run(SLOT, work);
    await settle();
    expect(pages).toEqual([0, 1]);
    advance(59_999);
    expect(await guard.run(SLOT, work)).toMatchObject({ ran: false, reason: 'in-progress' });
    advance(2);
    const second = await guard.run(SLOT, work);
    crashed.resolve();

    expect(second).toEqual({ ran: true, result: 4, takeover: true });
    expect(pages).toEqual([0, 1, 2, 3]);
    // The crashed run wakes up, finishes the step it was in, and stops at its next checkpoint.
    expect(await first).toEqual({ ran: false, reason: 'lease-lost' });
    expect(pages).toEqual([0, 1, 2, 3, 2]);
    expect(store.read('inbox', PK)).toMatchObject({ status: 'COMPLETED' });
    // Cleared by the run that completed: expired at once, so a later load finds none (TTL reaps it).
    expect(store.read('inbox', CHECKPOINT_PK)).toMatchObject({
      expiresAt: Math.floor((T0 + 60_001) / 1000),
    });
  });

  it('writes each checkpoint save, and the clear, as one fenced replace, deleting nothing', async () => {
    const { guard, store } = setup();
    await guard.run(SLOT, async (run) => {
      await run.saveCheckpoint('a');
      await run.saveCheckpoint('b');
    });

    const checkpointCalls = store.calls.filter(
      (call) => call.args[0] === CHECKPOINT_PK || (call.args[0] as { pk?: unknown }).pk === CHECKPOINT_PK,
    );
    expect(checkpointCalls.map((call) => call.method)).toEqual(['insert', 'replace', 'replace', 'replace']);
    expect(store.read('inbox', CHECKPOINT_PK)).toMatchObject({
      result: JSON.stringify({ value: 'b' }),
      expiresAt: Math.floor(T0 / 1000),
    });
  });

  it('keeps the checkpoint of a failed run for the retry', async () => {
    const { guard } = setup();
    await expect(
      guard.run(SLOT, async (run) => {
        await run.saveCheckpoint({ page: 3 });
        throw new Error('page 3 failed');
      }),
    ).rejects.toThrow('page 3 failed');

    const resumed = await guard.run(SLOT, async (run) => run.loadCheckpoint());

    expect(resumed).toEqual({ ran: true, result: { page: 3 }, takeover: false });
  });

  it('reads no checkpoint when none was saved, and the last one saved by this run', async () => {
    const { guard } = setup();
    const result = await guard.run(SLOT, async (run) => {
      const before = await run.loadCheckpoint();
      await run.saveCheckpoint('a');
      await run.saveCheckpoint('b');
      return [before, await run.loadCheckpoint()];
    });
    expect(result).toEqual({ ran: true, result: [undefined, 'b'], takeover: false });
  });

  it('extends the lease, so a long run is not taken over', async () => {
    const { guard, advance, store } = setup();
    const gate = deferred();
    let extendedTo = 0;
    const first = guard.run(SLOT, async (run) => {
      advance(50_000);
      await run.extendLease();
      extendedTo = run.leaseExpiresAt();
      await gate.promise;
    });
    await settle();
    advance(20_000);

    expect(await guard.run(SLOT, () => undefined)).toEqual({
      ran: false,
      reason: 'in-progress',
      leaseExpiresAt: T0 + 110_000,
    });
    expect(extendedTo).toBe(T0 + 110_000);
    // The record lives its TTL past the extended lease end.
    expect(store.calls.find((call) => call.method === 'extendLease')?.args).toEqual([
      PK,
      expect.any(String),
      T0 + 110_000,
      (T0 + 110_000) / 1000 + 7 * 86_400,
    ]);
    expect(store.read('inbox', PK)).toMatchObject({
      leaseExpiresAt: T0 + 110_000,
      expiresAt: (T0 + 110_000) / 1000 + 7 * 86_400,
    });
    gate.resolve();
    expect(await first).toMatchObject({ ran: true });
  });

  it('still reports a finished run that lost its lease at the end, and logs it', async () => {
    const { guard, advance, logs } = setup();
    const gate = deferred();
    const first = guard.run(SLOT, async () => {
      await gate.promise;
      return 'late';
    });
    await settle();
    advance(60_001);
    await guard.run(SLOT, () => 'takeover');
    gate.resolve();

    expect(await first).toEqual({ ran: true, result: 'late', takeover: false });
    expect(logs.map((entry) => entry.message)).toContain(
      'The lease ended before the job run completed; another run took the slot over',
    );
  });

  it('reports a store failure to the caller without running the work', async () => {
    const { guard, store } = setup();
    store.failNext('claimLease', new EffectivelyOnceError('THROTTLED', 'slow down'));
    let ran = false;
    await expect(
      guard.run(SLOT, () => {
        ran = true;
      }),
    ).rejects.toMatchObject({ code: 'THROTTLED' });
    expect(ran).toBe(false);
  });

  it("skips a slot held by another payload's record by its status, and never runs over it", async () => {
    const { guard, store } = setup();
    const base = { pk: PK, fingerprint: 'other', consumer: 'reports', expiresAt: T0 / 1000 + 3600 };
    let effects = 0;
    const work = () => {
      effects += 1;
    };

    store.seed('inbox', { ...base, status: 'COMPLETED' });
    const completed = await guard.run(SLOT, work);
    store.seed('inbox', { ...base, status: 'IN_PROGRESS', owner: 'x', leaseExpiresAt: T0 - 1 });
    const inProgress = await guard.run(SLOT, work);

    expect(completed).toEqual({ ran: false, reason: 'completed' });
    expect(inProgress).toEqual({ ran: false, reason: 'in-progress', leaseExpiresAt: T0 - 1 });
    expect(effects).toBe(0);
    expect(store.read('inbox', PK)).toMatchObject({ fingerprint: 'other', owner: 'x' });
  });

  it('throws EXPIRED_RECORD when the store answers with an expired slot record', async () => {
    const { guard, store } = setup();
    const expired = slotClaim({ expiresAt: T0 / 1000, leaseExpiresAt: T0 + 1000 });
    vi.spyOn(store, 'claimLease').mockResolvedValueOnce({ kind: 'existing', record: expired });

    await expect(guard.run(SLOT, () => undefined)).rejects.toMatchObject({
      code: 'EXPIRED_RECORD',
      message: 'The store returned an expired job record; retry the run',
    });
  });

  it('answers a released claim that a takeover also met (another run claims it again) as in progress', async () => {
    const { guard, store } = setup();
    const released = slotClaim({ expiresAt: T0 / 1000 + 3600, leaseExpiresAt: 0 });
    vi.spyOn(store, 'claimLease')
      .mockResolvedValueOnce({ kind: 'existing', record: released })
      .mockResolvedValueOnce({ kind: 'existing', record: released });
    let effects = 0;

    const answer = await guard.run(SLOT, () => {
      effects += 1;
    });

    expect(answer).toEqual({ ran: false, reason: 'in-progress', leaseExpiresAt: 0 });
    expect(effects).toBe(0);
  });

  it('names the scoped key of a slot for operators', () => {
    expect(jobSlotKey('reports', SLOT)).toBe(PK);
  });

  it('rejects bad options and slots with the option, what was expected and what was given', async () => {
    const create = (extra: Record<string, unknown>) => () =>
      createJobGuard({ consumer: 'reports', store: createMemoryStore(), ...extra } as never);
    expect(create({ consumer: 'a#b' })).toThrow(
      'Expected `consumer` to be a name matching /^[A-Za-z0-9._:-]{1,100}$/, got `"a#b"`',
    );
    expect(create({ leaseMillis: 0 })).toThrow('Expected `leaseMillis` to be a positive integer, got `0`');
    expect(create({ ttlSeconds: -1 })).toThrow('Expected `ttlSeconds` to be a positive integer, got `-1`');
    // The default lease (15 minutes) against a TTL of 15 minutes: a lease as long as the TTL.
    expect(create({ ttlSeconds: 900 })).toThrow(
      expect.objectContaining({
        code: 'INVALID_OPTIONS',
        message: 'Expected `leaseMillis` to be shorter than `ttlSeconds` (900000 milliseconds), got `900000`',
      }) as Error,
    );
    expect(create({ leaseMillis: 899_999, ttlSeconds: 900 })).not.toThrow();
    expect(create({ store: { claimLease() {} } })).toThrow(
      'Expected `store` to be an object with `claimLease`, `complete`, `release`, `extendLease`, `insert`, `replace`, got `an object`',
    );
    expect(create({ clock: {} })).toThrow(
      'Expected `clock` to be a function returning epoch milliseconds, got `an object`',
    );
    expect(create({ logger: [] })).toThrow('Expected `logger` to be an object with `log`, got `an array`');
    expect(create({ logLevel: 'loud' })).toThrow(
      "Expected `logLevel` to be one of 'debug', 'info', 'warn', 'error', 'silent', got `\"loud\"`",
    );
    expect(() => createJobGuard(null as never)).toThrow('Expected `options` to be an object, got `null`');
    const { guard } = setup();
    await expect(guard.run({ job: 'has space', slot: 'x' }, () => 1)).rejects.toThrow(
      'Expected `job` to be a name matching',
    );
    await expect(guard.run({ job: 'report', slot: '' }, () => 1)).rejects.toMatchObject({
      code: 'MISSING_KEY',
    });
  });
});
