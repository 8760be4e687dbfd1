/**
 * The completed inbox record of a message (marker and atomic modes), and what the store's answer
 * to its insert means for the message.
 */
import { INBOX_STATUS } from './contract';
import { type Outcome, outcomeOfExisting } from './outcome';
import type { InboxRecord, InsertResult } from './store-port';
import { expiresAt } from './time';

/** The inbox record of a completed message: `expiresAt = expiresAt(nowMillis, ttlSeconds)`. */
export function createInboxRecord(
  scopedKey: string,
  fingerprint: string,
  consumer: string,
  nowMillis: number,
  ttlSeconds: number,
): InboxRecord {
  return {
    pk: scopedKey,
    status: INBOX_STATUS.completed,
    fingerprint,
    expiresAt: expiresAt(nowMillis, ttlSeconds),
    consumer,
    committedAt: nowMillis,
  };
}

/** The outcome of an insert: `processed` when it inserted, else what the existing record means. */
export function outcomeOfInsert(result: InsertResult, fingerprint: string, nowMillis: number): Outcome {
  return result.kind === 'inserted'
    ? { kind: 'processed' }
    : outcomeOfExisting(result.record, fingerprint, nowMillis);
}
