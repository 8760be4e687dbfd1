/**
 * A lease claim with takeover, over the store port's `claimLease`, shared by the job guard and
 * the HTTP idempotency wrapper: claim the key; if a live `IN_PROGRESS` claim whose lease has
 * ended holds it (its run crashed), take it over, fenced by the owner token that was seen, so
 * two runs that both saw the same stale claim cannot both take it over.
 */
import { INBOX_STATUS } from '../core/contract';
import type { InboxRecord, InboxStore, InsertResult } from '../core/store-port';

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
 * Claims `record` (`IN_PROGRESS`, with `owner` and `leaseExpiresAt`) at `nowMillis`. A claim
 * whose lease has ended is taken over with a second `claimLease` naming the owner that was seen.
 * One request, two for a takeover.
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
  if (first.kind === 'inserted' || !isLeaseEnded(first.record, nowMillis)) return first;
  const second = await store.claimLease(record, nowMillis, { owner: first.record.owner! });
  return second.kind === 'inserted' ? { kind: 'inserted', takeover: true } : second;
}
