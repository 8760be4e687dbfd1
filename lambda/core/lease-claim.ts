/**
 * A claim with a lease, and its takeover once the lease ended: the one way every entry point
 * that holds a key while it works (two-phase effects, job slots, HTTP keys) claims it, over the
 * `LeaseStore` port.
 *
 * Claim the key; if a live `IN_PROGRESS` claim of the same fingerprint whose lease has ended
 * holds it (its run crashed), take it over, fenced by the owner token that was seen, so two runs
 * that both saw the same stale claim cannot both take it over. A claim of another fingerprint is
 * never taken over: its effect may have happened. A claim released after a failure keeps its
 * fingerprint (lease end `0`): the same payload claims it again at once (the store does, in the
 * first request), another payload meets it as a live record.
 *
 * With a `TakeoverPolicy`, each takeover counts (`takeovers`) and keeps the time of the first
 * claim (`committedAt`), and a claim taken over too often or in progress for too long is
 * reported `stuck` instead of being taken over again: a human decides.
 */
import { randomUUID } from 'node:crypto';
import { INBOX_STATUS } from './contract';
import { claimExpiresAt, isLeaseEnded } from './lease';
import type { FencedResult, InboxRecord, LeaseStore } from './store-port';
import { expiresAt } from './time';

/** What a claim found. */
export type LeaseClaimResult =
  /**
   * The key is this claim's. `takeover` when it replaced a crashed run's claim (the store may
   * answer `false` for a first claim); with a `TakeoverPolicy`, a takeover also says how often
   * the claim has been taken over, this takeover included (`takeovers`).
   */
  | { readonly kind: 'inserted'; readonly takeover?: boolean; readonly takeovers?: number }
  /** A live record holds the key: a running claim, a completed record, or another payload's. */
  | { readonly kind: 'existing'; readonly record: InboxRecord };

/**
 * What a claim under a `TakeoverPolicy` found: as `LeaseClaimResult`, or a crashed claim of the
 * same fingerprint that the policy refuses to take over (`stuck`): taken over `takeovers` times
 * already, or in progress since `since` (epoch milliseconds of its first claim) for
 * `stuckAfterMillis` or longer.
 */
export type PolicyClaimResult =
  | LeaseClaimResult
  | {
      readonly kind: 'stuck';
      readonly record: InboxRecord;
      readonly takeovers: number;
      readonly since: number;
    };

/**
 * When a crashed claim is taken over no more (two-phase mode's `maxTakeovers` and
 * `stuckAfterMillis`). Giving a policy, even an empty one, also counts takeovers on the record
 * (`takeovers`) and keeps the first claim's `committedAt` across them.
 */
export interface TakeoverPolicy {
  /**
   * A claim first made this long ago (its `committedAt`) is stuck.
   * @default no limit
   */
  readonly stuckAfterMillis?: number;
  /**
   * A claim already taken over this many times is stuck.
   * @default no limit
   */
  readonly maxTakeovers?: number;
}

/**
 * Claims `record` (`IN_PROGRESS`, with `owner` and `leaseExpiresAt`) at `nowMillis`. A claim of
 * the same fingerprint whose lease has ended is taken over with a second `claimLease` naming the
 * owner that was seen (unless `policy` finds it stuck); a claim of another fingerprint is never
 * taken over, it comes back as the existing record, as does the live claim a concurrent taker
 * won. One request, two for a takeover.
 *
 * A claim whose response was lost, retried by the SDK, meets its own owner token: the store
 * reports it `inserted`, so the run goes on now rather than after its own lease ends.
 *
 * @example
 * const claimed = await claimWithTakeover(store, record, clock());
 * if (claimed.kind === 'existing') return skip(claimed.record);
 */
export function claimWithTakeover(
  store: Pick<LeaseStore, 'claimLease'>,
  record: InboxRecord,
  nowMillis: number,
): Promise<LeaseClaimResult>;
export function claimWithTakeover(
  store: Pick<LeaseStore, 'claimLease'>,
  record: InboxRecord,
  nowMillis: number,
  policy: TakeoverPolicy | undefined,
): Promise<PolicyClaimResult>;
export async function claimWithTakeover(
  store: Pick<LeaseStore, 'claimLease'>,
  record: InboxRecord,
  nowMillis: number,
  policy?: TakeoverPolicy,
): Promise<PolicyClaimResult> {
  const first = await store.claimLease(record, nowMillis);
  if (first.kind === 'inserted') return first;
  const seen = first.record;
  if (seen.fingerprint !== record.fingerprint || !isLeaseEnded(seen, nowMillis)) return first;
  if (policy === undefined) {
    const second = await store.claimLease(record, nowMillis, { owner: seen.owner! });
    return second.kind === 'inserted' ? { kind: 'inserted', takeover: true } : second;
  }

  const takeovers = seen.takeovers ?? 0;
  const since = seen.committedAt ?? nowMillis;
  if (
    takeovers >= (policy.maxTakeovers ?? Number.POSITIVE_INFINITY) ||
    nowMillis - since >= (policy.stuckAfterMillis ?? Number.POSITIVE_INFINITY)
  ) {
    return { kind: 'stuck', record: seen, takeovers, since };
  }
  // The count and the first claim's time carry over, so the policy sees every takeover since.
  const takenOver: InboxRecord = { ...record, committedAt: since, takeovers: takeovers + 1 };
  const second = await store.claimLease(takenOver, nowMillis, { owner: seen.owner! });
  return second.kind === 'inserted' ? { kind: 'inserted', takeover: true, takeovers: takeovers + 1 } : second;
}

/** The key a run claims with a lease, and how long its record lives. */
export interface LeaseTarget {
  /** The scoped key of the inbox record. */
  readonly pk: string;
  /** What must match for another claim of the key to be the same run again. */
  readonly fingerprint: string;
  /** Consumer name, unscoped. */
  readonly consumer: string;
  /** How long the claim (and each extension) holds the key before another run may take it over. */
  readonly leaseMillis: number;
  /**
   * Lifetime of the record (`expiresAt`): past the lease end while in progress
   * (`claimExpiresAt`), from the completion once completed.
   */
  readonly ttlSeconds: number;
}

/**
 * One run's claim of a key with a lease: its owner token fences `complete`, `release` and
 * `extend`, each refused once another run took the claim over. Created per run; `claim` once,
 * `extend` while working, then `complete` or `release`.
 */
export interface LeaseClaim<TClaimResult extends PolicyClaimResult = LeaseClaimResult> {
  /** The random owner token of this run's claim. */
  readonly owner: string;
  /** Epoch milliseconds when the lease of the claim ends: moved forward by each `extend` that holds. */
  readonly leaseExpiresAt: number;
  /** Claims the key, taking over a crashed run of the same fingerprint (see `claimWithTakeover`). */
  claim(): Promise<TClaimResult>;
  /**
   * Moves the lease end to `nowMillis + leaseMillis`, and `expiresAt` with it (the record
   * outlives its lease, see `claimExpiresAt`); never backwards. `lost-ownership` once another
   * run took the claim over, or it was released or completed.
   */
  extend(nowMillis: number): Promise<FencedResult>;
  /** Marks the claim completed with an optional result, `expiresAt` counted from `nowMillis`. */
  complete(nowMillis: number, result?: unknown): Promise<FencedResult>;
  /**
   * Releases the claim after a failed run, keeping it bound to its fingerprint (lease end `0`):
   * a retry of the same run claims it again in one request, another one meets a live record.
   */
  release(): Promise<FencedResult>;
}

/** The store capability a `LeaseClaim` uses. */
export type LeaseClaimStore = Pick<LeaseStore, 'claimLease' | 'complete' | 'release' | 'extendLease'>;

/**
 * Creates the claim of `target` by a new owner, its lease running from `nowMillis`; `policy`
 * as for `claimWithTakeover`.
 *
 * @example
 * const lease = createLeaseClaim(store, { pk, fingerprint, consumer, leaseMillis, ttlSeconds }, clock());
 * const claimed = await lease.claim();
 * if (claimed.kind !== 'inserted') return skip(claimed.record);
 * try {
 *   await work();
 * } catch (error) {
 *   await lease.release();
 *   throw error;
 * }
 * await lease.complete(clock());
 */
export function createLeaseClaim(store: LeaseClaimStore, target: LeaseTarget, nowMillis: number): LeaseClaim;
export function createLeaseClaim(
  store: LeaseClaimStore,
  target: LeaseTarget,
  nowMillis: number,
  policy: TakeoverPolicy | undefined,
): LeaseClaim<PolicyClaimResult>;
export function createLeaseClaim(
  store: LeaseClaimStore,
  target: LeaseTarget,
  nowMillis: number,
  policy?: TakeoverPolicy,
): LeaseClaim<PolicyClaimResult> {
  const { pk, fingerprint, consumer, leaseMillis, ttlSeconds } = target;
  const owner = randomUUID();
  let leaseExpiresAt = nowMillis + leaseMillis;
  const record: InboxRecord = {
    pk,
    status: INBOX_STATUS.inProgress,
    fingerprint,
    // The claim lives its TTL past its lease end: the key never looks free while this run
    // works, and a crashed run's claim is taken over (or found stuck), never claimed afresh.
    expiresAt: claimExpiresAt(leaseExpiresAt, ttlSeconds),
    consumer,
    committedAt: nowMillis,
    leaseExpiresAt,
    owner,
  };
  return {
    owner,
    get leaseExpiresAt() {
      return leaseExpiresAt;
    },
    claim: () => claimWithTakeover(store, record, nowMillis, policy),
    async extend(extendedAt) {
      const next = extendedAt + leaseMillis;
      // The TTL moves with the lease: the record never expires while its lease runs.
      const answer = await store.extendLease(pk, owner, next, claimExpiresAt(next, ttlSeconds));
      // An older extension answering after a newer one never moves the lease end back.
      if (answer.kind === 'ok') leaseExpiresAt = Math.max(leaseExpiresAt, next);
      return answer;
    },
    complete(completedAt, result) {
      const update = { expiresAt: expiresAt(completedAt, ttlSeconds) };
      return store.complete(pk, owner, result === undefined ? update : { ...update, result });
    },
    // The run may have had its effect before it failed, so the key stays bound to its fingerprint.
    release: () => store.release(pk, { owner }),
  };
}
