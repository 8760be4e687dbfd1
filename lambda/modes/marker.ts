/**
 * Marker mode: the marker is stored first, then the user's handler performs the effect; when the
 * handler throws, the marker is released so a retry runs the effect again.
 */
import { randomUUID } from 'node:crypto';
import { INBOX_STATUS } from '../core/contract';
import { errorFields, expectMethods, expectOption } from '../core/errors';
import { createInboxRecord, outcomeOfInsert } from '../core/inbox-record';
import type { LogEntry } from '../core/logger';
import type { Message } from '../core/message';
import type { Mode } from '../core/mode';
import { outcomeOfError } from '../core/outcome';
import type { InsertResult, MarkerStore } from '../core/store-port';

/** Performs the effect of one message. Its return value is ignored. */
export type MarkerHandler<TBody, TRecord = unknown> = (message: Message<TBody, TRecord>) => unknown;

/**
 * Marker mode: the marker is stored first, then `handle` runs; if `handle` throws, the marker
 * is released so a retry can run. This is at-most-once for the effect: a crash after the
 * marker and before `handle` finishes, or a concurrent delivery of the same key acknowledged
 * as a duplicate while a first delivery is still running and then fails, leaves the marker
 * without the effect. Use it for naturally idempotent effects; use atomic mode (or two-phase)
 * where the effect must happen. One request per message (two when `handle` throws).
 *
 * @example
 * createSqsHandler<Invoice>({
 *   dedupKey: fromBody('invoiceId'),
 *   mode: marker(async (message) => mailer.send(message.body)),
 * });
 */
export function marker<TBody = unknown, TRecord = unknown>(
  handle: MarkerHandler<TBody, TRecord>,
): Mode<TBody, MarkerStore, TRecord> {
  return {
    name: 'marker',
    capability: 'marker',
    create({ store, consumer, ttlSeconds }) {
      expectOption(typeof handle === 'function', 'marker(handle)', 'a function', handle);
      expectMethods('store', store, ['insert', 'release']);
      return {
        async process(message, { fingerprint, nowMillis }) {
          const logs: LogEntry[] = [];
          const record = createInboxRecord(message.scopedKey, fingerprint, consumer, nowMillis, ttlSeconds);
          // A random owner token tells this claim from any other: when the put's response is lost
          // and the SDK retries it, the retry meets this very marker, which the store reports as
          // inserted, and the effect must still run.
          const owner = randomUUID();
          let inserted: InsertResult;
          try {
            inserted = await store.insert({ ...record, owner }, nowMillis);
          } catch (error) {
            return { outcome: outcomeOfError(error, 'UNEXPECTED'), logs, takeovers: 0 };
          }
          if (inserted.kind !== 'inserted') {
            return { outcome: outcomeOfInsert(inserted, fingerprint, nowMillis), logs, takeovers: 0 };
          }
          try {
            await handle(message);
            // Final only now: a marker met by another delivery (a duplicate above) may still be
            // released if its effect fails, so only this claim's success is reported completed.
            return {
              outcome: { kind: 'processed' },
              logs,
              takeovers: 0,
              completed: { expiresAt: record.expiresAt },
            };
          } catch (error) {
            // Released, the retry runs the effect again; kept, it would be acknowledged. The effect
            // may have partly happened, so the key stays bound to this payload: another payload
            // reusing it is a mismatch, not a fresh claim. Fenced by this claim's owner token, not
            // by the fingerprint: a release retried by the SDK after another delivery of the same
            // payload claimed and completed the key must leave that delivery's marker alone.
            await store
              .release(record.pk, { owner, status: INBOX_STATUS.completed })
              .catch((releaseError) => {
                logs.push({
                  level: 'error',
                  message: 'Releasing the marker failed: the retry will be acknowledged as a duplicate',
                  outcome: 'retry',
                  ...errorFields(releaseError, 'UNEXPECTED'),
                });
              });
            return { outcome: outcomeOfError(error, 'HANDLER_FAILED'), logs, takeovers: 0 };
          }
        },
      };
    },
  };
}
