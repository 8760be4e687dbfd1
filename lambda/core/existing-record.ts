/**
 * One reading of an existing inbox record: what the record that stopped a claim or an insert
 * means for a message (or a job slot, or an HTTP request) with a given fingerprint. Every entry
 * point maps its own answer from this reading (an outcome, a 409 or a replay, a skipped run), so
 * the rules are decided once. Pure: the caller passes the time.
 */
import { INBOX_STATUS } from './contract';
import { isLeaseEnded } from './lease';
import type { InboxRecord } from './store-port';
import { isExpired } from './time';

/** The lease end of a claim released keeping its fingerprint (see `LeaseStore.release`). */
const RELEASED_LEASE_END = 0;

/** What an existing record means. */
export type ExistingRecordReading =
  /**
   * Its `expiresAt` has passed: it counts as absent, but only the database may decide that the
   * key is free (DynamoDB deletes expired items late), so the caller retries.
   */
  | { readonly kind: 'expired' }
  /**
   * Another payload holds the key: `storedFingerprint` differs from the caller's (an entity item
   * written by something else carries `''`). Decided before the status: the same key with
   * another payload is a mismatch whether or not its first run is still going.
   */
  | { readonly kind: 'mismatch'; readonly storedFingerprint: string }
  /** The same payload completed: its stored `result` (as stored; `undefined` when none). */
  | { readonly kind: 'completed'; readonly result: unknown }
  /** A live claim of the same payload, its lease running until `leaseExpiresAt` (when the record has one). */
  | { readonly kind: 'in-flight'; readonly leaseExpiresAt: number | undefined }
  /**
   * A claim of the same payload whose lease ended at `leaseExpiresAt`: its run crashed, and a
   * claim fenced by its `owner` may take it over (see `claimWithTakeover`).
   */
  | { readonly kind: 'lease-ended'; readonly owner: string; readonly leaseExpiresAt: number }
  /**
   * A claim of the same payload released after a failure (lease end `0`): the store lets the
   * same payload claim it again at once, so meeting it means a race with another claim of it.
   */
  | { readonly kind: 'released' };

/**
 * Reads `record` for a caller with `fingerprint` at `nowMillis`, in this order: expired, another
 * fingerprint (`mismatch`), `COMPLETED` (`completed`), then an `IN_PROGRESS` claim: released
 * (lease end `0`), lease ended (may be taken over), else in flight.
 *
 * @example
 * readExistingRecord(claimed.record, fingerprint, clock());
 * // { kind: 'in-flight', leaseExpiresAt: 1_767_232_830_000 }
 */
export function readExistingRecord(
  record: InboxRecord,
  fingerprint: string,
  nowMillis: number,
): ExistingRecordReading {
  if (isExpired(record.expiresAt, nowMillis)) return { kind: 'expired' };
  if (record.fingerprint !== fingerprint) {
    return { kind: 'mismatch', storedFingerprint: record.fingerprint };
  }
  if (record.status !== INBOX_STATUS.inProgress) return { kind: 'completed', result: record.result };
  if (record.leaseExpiresAt === RELEASED_LEASE_END) return { kind: 'released' };
  if (isLeaseEnded(record, nowMillis)) {
    return { kind: 'lease-ended', owner: record.owner!, leaseExpiresAt: record.leaseExpiresAt! };
  }
  return { kind: 'in-flight', leaseExpiresAt: record.leaseExpiresAt };
}
