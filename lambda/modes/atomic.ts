/**
 * Atomic (inbox) mode: the user's handler describes business writes on a unit of work, and they
 * are committed in one `TransactWriteItems` with the marker at index 0.
 */
import { expectMethods, expectOption } from '../core/errors';
import { createInboxRecord, outcomeOfInsert } from '../core/inbox-record';
import { assertCommitWithinLimits } from '../core/item-size';
import type { Message } from '../core/message';
import { completedStep, type Mode, type ModeStepResult, stepResult } from '../core/mode';
import { outcomeOfError, outcomeOfExisting } from '../core/outcome';
import type { AtomicStore, InboxRecord } from '../core/store-port';
import { createUnitOfWork, type GuardedUnitOfWork, type UnitOfWork } from './unit-of-work';

/** Describes the business writes of one message on `unitOfWork`. Its return value is ignored. */
export type AtomicHandler<TBody> = (message: Message<TBody>, unitOfWork: UnitOfWork) => unknown;

/**
 * Atomic (inbox) mode: `handle` describes business writes on a unit of work; they are committed
 * in one transaction with the marker at index 0. `handle` runs before the commit, also for a
 * message that turns out to be a duplicate, so it must only describe writes, never perform side
 * effects. With no writes, the marker alone is stored (one conditional put). One request per
 * message.
 *
 * @example
 * createSqsHandler<OrderEvent>({
 *   dedupKey: fromBody((order: OrderEvent) => [order.orderId, order.status]),
 *   mode: atomic((message, unitOfWork) => {
 *     unitOfWork.put({ TableName: 'Orders', Item: { pk: message.body.orderId, status: message.body.status } });
 *   }),
 * });
 */
export function atomic<TBody = unknown>(handle: AtomicHandler<TBody>): Mode<TBody, AtomicStore> {
  return {
    name: 'atomic',
    capability: 'atomic',
    create({ store, consumer, ttlSeconds }) {
      expectOption(typeof handle === 'function', 'atomic(handle)', 'a function', handle);
      // `putIfNewer` is needed only by a handler that calls it; the unit of work calls it then.
      expectMethods('store', store, ['insert', 'commit']);

      return {
        async process(message, { fingerprint, nowMillis }) {
          const record = createInboxRecord(message.scopedKey, fingerprint, consumer, nowMillis, ttlSeconds);
          const unitOfWork = createUnitOfWork(store);
          try {
            await handle(message, unitOfWork);
            assertCommitWithinLimits(record, unitOfWork.writes);
          } catch (error) {
            return stepResult(outcomeOfError(error, 'HANDLER_FAILED'));
          }
          try {
            return await commit(record, unitOfWork, fingerprint, nowMillis);
          } catch (error) {
            return stepResult(outcomeOfError(error, 'UNEXPECTED'));
          }
        },
      };

      /** Commits the marker with the writes (the marker alone without writes) and reads the answer. */
      async function commit(
        record: InboxRecord,
        unitOfWork: GuardedUnitOfWork,
        fingerprint: string,
        nowMillis: number,
      ): Promise<ModeStepResult> {
        const { writes } = unitOfWork;
        // A committed marker is final (nothing releases it), whether this step wrote it or met it.
        if (writes.length === 0) {
          const inserted = await store.insert(record, nowMillis);
          const stored = inserted.kind === 'inserted' ? record : inserted.record;
          return completedStep(outcomeOfInsert(inserted, fingerprint, nowMillis), stored.expiresAt);
        }
        const result = await store.commit(record, writes, nowMillis);
        if (result.kind === 'condition-failed') {
          // A version guard's condition failing means a newer version is stored: not an error.
          if (unitOfWork.guards.has(result.index)) return stepResult({ kind: 'stale' });
          const detail = result.message ? `: ${result.message}` : '';
          return stepResult({
            kind: 'permanent',
            code: 'BUSINESS_CONDITION_FAILED',
            reason: `The condition of business write ${result.index} failed${detail}`,
          });
        }
        return result.kind === 'committed'
          ? completedStep({ kind: 'processed' }, record.expiresAt)
          : completedStep(outcomeOfExisting(result.record, fingerprint, nowMillis), result.record.expiresAt);
      }
    },
  };
}
