/**
 * A lease claim with takeover, over the store port's `claimLease`, shared by the job guard and
 * the HTTP idempotency wrapper: claim the key; if a live `IN_PROGRESS` claim of the same
 * fingerprint whose lease has ended holds it (its run crashed), take it over, fenced by the
 * owner token that was seen, so two runs that both saw the same stale claim cannot both take it
 * over. A claim released after a failure keeps its fingerprint (lease end `0`): the same payload
 * claims it again at once, another payload meets it as a live record.
 */
import { randomUUID } from 'node:crypto';
import { INBOX_STATUS } from '../core/contract';
import { claimExpiresAt } from '../core/lease';
import type { FencedResult, InboxRecord, InboxStore, InsertResult } from '../core/store-port';

/** What a claim found: inserted (`takeover` when it replaced a crashed run's claim), or the live record. */
export type LeaseClaimResult = InsertResult & { readonly takeover?: boolean };

/** True when `record` is a live claim whose lease ended before `nowMillis`. */
export function isLeaseEnded(record: InboxRecord, nowMillis: number): boolean {
  return (
    record.status === INBOX_STATUS.inProgress &&
    typeof record.owner === 'string' &&
    typeof record.leaseExpiresAt === 'number' &&
    record.leaseExpiresAt < nowMillis &&
    record.expiresAt > Math.floor(nowMillis / 1000)
  );
}

/**
 * Claims `record` (`IN_PROGRESS`, with `owner` and `leaseExpiresAt`) at `nowMillis`. A claim of
 * the same fingerprint whose lease has ended is taken over with a second `claimLease` naming the
 * owner that was seen; a claim of another fingerprint is never taken over (its effect may have
 * happened), it comes back as the existing record. One request, two for a takeover.
 *
 * @example
 * const claimed = await claimWithTakeover(store, record, clock());
 * if (claimed.kind === 'existing') return skip(claimed.record);
 */
export async function claimWithTakeover(
  store: Pick<InboxStore, 'claimLease'>,
  record: InboxRecord,
  nowMillis: number,
): Promise<LeaseClaimResult> {
  const first = await store.claimLease(record, nowMillis);
  if (
    first.kind === 'inserted' ||
    first.record.fingerprint !== record.fingerprint ||
    !isLeaseEnded(first.record, nowMillis)
  ) {
    return first;
  }
  const second = await store.claimLease(record, nowMillis, { owner: first.record.owner! });
  return second.kind === 'inserted' ? { kind: 'inserted', takeover: true } : second;
}

/** The key a run claims with a lease, and how long its record lives. */
export interface LeaseTarget {
  /** The scoped key of the inbox record. */
  readonly pk: string;
  /** What must match for another claim of the key to be the same run again. */
  readonly fingerprint: string;
  /** Consumer name, unscoped. */
  readonly consumer: string;
  /** How long the claim holds the key before another run may take it over. */
  readonly leaseMillis: number;
  /**
   * Lifetime of the record (`expiresAt`): past the lease end while in progress
   * (`claimExpiresAt`), from the completion once completed.
   */
  readonly ttlSeconds: number;
}

/**
 * One run's claim of a key with a lease: its owner token fences `complete` and `release` (and
 * the job guard's lease extension), each refused once another run took the claim over.
 * Created per run; `claim` once, then `complete` or `release`.
 */
export interface LeaseClaim {
  /** The random owner token of this run's claim. */
  readonly owner: string;
  /** Epoch milliseconds when the lease of the claim ends. */
  readonly leaseExpiresAt: number;
  /** Claims the key, taking over a crashed run of the same fingerprint (see `claimWithTakeover`). */
  claim(): Promise<LeaseClaimResult>;
  /** Marks the claim completed with an optional result, `expiresAt` counted from `nowMillis`. */
  complete(nowMillis: number, result?: unknown): Promise<FencedResult>;
  /**
   * Releases the claim after a failed run, keeping it bound to its fingerprint (lease end `0`):
   * a retry of the same run claims it again in one request, another one meets a live record.
   */
  release(): Promise<FencedResult>;
}

/**
 * Creates the claim of `target` by a new owner, its lease running from `nowMillis`.
 *
 * @example
 * const lease = createLeaseClaim(store, { pk, fingerprint, consumer, leaseMillis, ttlSeconds }, clock());
 * const claimed = await lease.claim();
 * if (claimed.kind === 'existing') return skip(claimed.record);
 * try {
 *   await work();
 * } catch (error) {
 *   await lease.release();
 *   throw error;
 * }
 * await lease.complete(clock());
 */
export function createLeaseClaim(
  store: Pick<InboxStore, 'claimLease' | 'complete' | 'release'>,
  target: LeaseTarget,
  nowMillis: number,
): LeaseClaim {
  const { pk, fingerprint, consumer, leaseMillis, ttlSeconds } = target;
  const owner = randomUUID();
  const leaseExpiresAt = nowMillis + leaseMillis;
  const record: InboxRecord = {
    pk,
    status: INBOX_STATUS.inProgress,
    fingerprint,
    // The claim lives its TTL past its lease end: the key never looks free while this run
    // works, and a crashed run's claim is taken over, never claimed afresh.
    expiresAt: claimExpiresAt(leaseExpiresAt, ttlSeconds),
    consumer,
    committedAt: nowMillis,
    leaseExpiresAt,
    owner,
  };
  return {
    owner,
    leaseExpiresAt,
    claim: () => claimWithTakeover(store, record, nowMillis),
    complete(completedAt, result) {
      const expiresAt = Math.floor(completedAt / 1000) + ttlSeconds;
      return store.complete(pk, owner, result === undefined ? { expiresAt } : { expiresAt, result });
    },
    // The run may have had its effect before it failed, so the key stays bound to its fingerprint.
    release: () => store.release(pk, { owner }),
  };
}
