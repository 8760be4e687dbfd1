/**
 * Lease and TTL math shared by every claim with a lease (two-phase effects, job slots, HTTP
 * keys): how long an in-progress record lives, and which leases a TTL can hold.
 *
 * The design: **an in-progress claim lives `ttlSeconds` past the end of its lease.** The claim
 * and every lease extension write `expiresAt = claimExpiresAt(leaseExpiresAt, ttlSeconds)` in
 * the same request as the lease end, so the record can never expire while its lease runs, and a
 * crashed claim stays visible (to be taken over, counted against `maxTakeovers`, or reported as
 * stuck) for the whole redelivery path after its lease ended. A completed record lives
 * `ttlSeconds` from its completion.
 *
 * Clock skew: lease ends are written from the owner's clock and compared with the clock of the
 * delivery that would take the claim over. A taker whose clock runs `S` ahead takes a claim over
 * `S` early, so choose a lease longer than the longest effect plus the skew between instances
 * (NTP-synchronised hosts, as Lambda's, stay within milliseconds; we design for less than a
 * second, the shortest lease). TTLs are compared in seconds, and the `ttlSeconds` margin past
 * the lease end dwarfs any skew.
 */
import { INBOX_STATUS } from './contract';
import type { InboxRecord } from './store-port';
import { isExpired } from './time';

/**
 * `expiresAt` (epoch seconds) of an in-progress claim whose lease ends at `leaseExpiresAt`
 * (epoch milliseconds): `ttlSeconds` after the lease end, rounded up to the second.
 *
 * @example
 * claimExpiresAt(1_700_000_030_500, 3600); // 1_700_003_631
 */
export function claimExpiresAt(leaseExpiresAt: number, ttlSeconds: number): number {
  return Math.ceil(leaseExpiresAt / 1000) + ttlSeconds;
}

/**
 * The rule every entry point applies to a configured lease at creation, and the construct
 * mirrors at synth: a lease must be shorter than the record's TTL (`leaseMillis <
 * ttlSeconds * 1000`). The TTL covers the redelivery path, and a claim is taken over only by a
 * redelivery after its lease ends; a lease as long as the TTL leaves no redelivery to do it.
 * A lease derived at run time (the invocation's remaining time) is not checked: the record
 * outlives any lease anyway (`claimExpiresAt`).
 *
 * @example
 * isLeaseWithinTtl(30_000, 3600); // true
 * isLeaseWithinTtl(3_600_000, 3600); // false
 */
export function isLeaseWithinTtl(leaseMillis: number, ttlSeconds: number): boolean {
  return leaseMillis < ttlSeconds * 1000;
}

/**
 * True when `record` is a live claim whose lease ended before `nowMillis`: its run crashed, and
 * a claim fenced by its `owner` may take it over (see `claimWithTakeover`). A released claim
 * (lease end `0`) is one too; the store lets the same payload claim it without a takeover.
 *
 * @example
 * isLeaseEnded({ ...claim, leaseExpiresAt: 1_700_000_030_000 }, 1_700_000_030_001); // true
 */
export function isLeaseEnded(record: InboxRecord, nowMillis: number): boolean {
  return (
    record.status === INBOX_STATUS.inProgress &&
    typeof record.owner === 'string' &&
    typeof record.leaseExpiresAt === 'number' &&
    record.leaseExpiresAt < nowMillis &&
    !isExpired(record.expiresAt, nowMillis)
  );
}
