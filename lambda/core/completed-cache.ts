/**
 * The completed-record cache: a bounded LRU, one per handler instance (created where the handler
 * is created, so once per execution environment, or once per worker thread of a Lambda Managed
 * Instance), of the messages this function completed, or found completed, with nothing left to
 * run. A duplicate found here is acknowledged without a request to the store.
 *
 * What it avoids of Powertools' `useLocalCache`:
 * - Never an in-progress, released or failed record: only a message whose mode reports it final
 *   (`ModeStepResult.completed`), so no environment gets stuck on a claim that later ends
 *   otherwise (Powertools once cached `INPROGRESS` records; marker mode's read of another
 *   delivery's marker is not cached for the same reason: that marker is released if its effect
 *   fails).
 * - The fingerprint is compared on every hit, and an entry is stored only once the store's answer
 *   matched it: a key reused with another payload is never acknowledged from the cache (Powertools
 *   validates no payload by default, and once cached a record before validating it). A different
 *   fingerprint misses, and the store decides (`PAYLOAD_MISMATCH` as without the cache).
 * - `expiresAt` is honoured with the injected clock, as the store's condition does: an expired
 *   entry is absent, and removed.
 * - Bounded memory per entry: the scoped key, the fingerprint and `expiresAt`, never a result.
 * - Safe under concurrent invocations in one process: every read and write is synchronous, no
 *   await sits between a lookup and its answer, and an entry is only ever added after the store
 *   answered, so interleaved invocations can only add final facts.
 *
 * What it trades: the store is not asked again while an entry lives. An inbox record (or entity
 * item) deleted by hand, or deleted or overwritten by another consumer process, is not seen until
 * the entry leaves the cache (evicted, expired, or a cold start): a message redriven to run again
 * after its record was deleted is acknowledged as a duplicate by a warm environment that has it.
 */
import { MAX_COMPLETED_CACHE_ENTRIES } from './contract';
import { expectBoundedCountOption } from './errors';
import { isExpired } from './time';

/** The options of the completed-record cache (`completedCache` of every SQS entry point). */
export interface CompletedCacheOptions {
  /**
   * How many completed messages to keep, from 1 to `MAX_COMPLETED_CACHE_ENTRIES`; the least
   * recently used one is evicted first.
   */
  readonly maxEntries: number;
}

/** One cached message: the payload it completed with and when its record expires. */
interface Entry {
  readonly fingerprint: string;
  /** Epoch seconds; `Number.MAX_SAFE_INTEGER` for a record that never expires. */
  readonly expiresAt: number;
}

/** A bounded LRU of completed messages, keyed by scoped dedup key. */
export interface CompletedCache {
  /**
   * True when `scopedKey` completed with `fingerprint` and its record has not expired at
   * `nowMillis`; the entry becomes the most recently used. An expired entry is removed; an
   * entry with another fingerprint is kept (the store decides that message).
   */
  has(scopedKey: string, fingerprint: string, nowMillis: number): boolean;
  /**
   * Keeps `scopedKey` as completed with `fingerprint` until `expiresAt` (epoch seconds), as the
   * most recently used entry, evicting the least recently used beyond `maxEntries`. An
   * `expiresAt` already past at `nowMillis` is not kept.
   */
  remember(scopedKey: string, fingerprint: string, expiresAt: number, nowMillis: number): void;
  /** Entries held now. */
  readonly size: number;
}

/** Throws `INVALID_OPTIONS` unless `value` is `undefined` or valid {@link CompletedCacheOptions}. */
export function expectCompletedCacheOptions(
  value: unknown,
): asserts value is CompletedCacheOptions | undefined {
  expectBoundedCountOption('completedCache', 'maxEntries', MAX_COMPLETED_CACHE_ENTRIES, value);
}

/**
 * Creates an empty completed-record cache holding at most `maxEntries` messages.
 *
 * @example
 * const cache = createCompletedCache({ maxEntries: 1000 });
 * cache.remember('billing#order-1', fingerprint, record.expiresAt, clock());
 * cache.has('billing#order-1', fingerprint, clock()); // true
 */
export function createCompletedCache(options: CompletedCacheOptions): CompletedCache {
  expectCompletedCacheOptions(options);
  const { maxEntries } = options;
  // A Map iterates in insertion order: re-inserting on use keeps the least recently used first.
  const entries = new Map<string, Entry>();
  return {
    has(scopedKey, fingerprint, nowMillis) {
      const entry = entries.get(scopedKey);
      if (entry === undefined) return false;
      if (isExpired(entry.expiresAt, nowMillis)) {
        entries.delete(scopedKey);
        return false;
      }
      if (entry.fingerprint !== fingerprint) return false;
      entries.delete(scopedKey);
      entries.set(scopedKey, entry);
      return true;
    },
    remember(scopedKey, fingerprint, expiresAt, nowMillis) {
      entries.delete(scopedKey);
      if (isExpired(expiresAt, nowMillis)) return;
      entries.set(scopedKey, { fingerprint, expiresAt });
      while (entries.size > maxEntries) {
        entries.delete(entries.keys().next().value as string);
      }
    },
    get size() {
      return entries.size;
    },
  };
}
