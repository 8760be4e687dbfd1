/**
 * One prepared message through its mode: build the inbox record, claim or commit, run the
 * user's handler, and turn what the store said into an outcome. The database is the only
 * arbiter: every write is conditional, nothing checks before it sets.
 */
import { randomUUID } from 'node:crypto';
import { INBOX_STATUS } from './contract';
import { EffectivelyOnceError, errorFields } from './errors';
import { assertCommitWithinLimits, assertEntityWithinLimits } from './item-size';
import type { LogEntry } from './logger';
import type { Message } from './message';
import type { Clock, ModeOptions } from './options';
import { type Outcome, outcomeOfError, outcomeOfExisting } from './outcome';
import type { EntityWrite, InboxRecord, InboxStore, InsertResult } from './store-port';
import { processTwoPhase } from './two-phase';
import { createUnitOfWork } from './unit-of-work';

/** What processing one message needs. */
export interface ProcessMessageDeps<TBody> {
  readonly store: InboxStore;
  readonly consumer: string;
  readonly ttlSeconds: number;
  readonly mode: ModeOptions<TBody>;
  /** Two-phase: the clock for the steps after the claim (completion, heartbeat). */
  readonly clock: Clock;
  /** Two-phase: the lease of this invocation's claims, milliseconds. */
  readonly leaseMillis: number;
  /** Logs an event of `message`; the caller adds the message's fields. */
  readonly log: (message: Message<TBody>, entry: LogEntry) => void;
  /** Two-phase: counts a claim taken over. */
  readonly onTakeover: () => void;
}

/** The inbox record of a completed message: `expiresAt = floor(now / 1000) + ttlSeconds`. */
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
    expiresAt: Math.floor(nowMillis / 1000) + ttlSeconds,
    consumer,
    committedAt: nowMillis,
  };
}

function outcomeOfInsert(result: InsertResult, fingerprint: string, nowMillis: number): Outcome {
  return result.kind === 'inserted'
    ? { kind: 'processed' }
    : outcomeOfExisting(result.record, fingerprint, nowMillis);
}

function assertEntity(entity: unknown): asserts entity is EntityWrite {
  const candidate = entity as Partial<EntityWrite> | null | undefined;
  const item = candidate?.item;
  const key = candidate?.keyAttribute;
  const keyType = typeof key === 'string' && typeof item === 'object' && item !== null && typeof item[key];
  const valid =
    typeof candidate?.tableName === 'string' &&
    candidate.tableName !== '' &&
    (keyType === 'string' || keyType === 'number' || keyType === 'bigint') &&
    item![key!] !== '';
  if (!valid) {
    throw new EffectivelyOnceError(
      'VALIDATION',
      'The entity-mode handler must return { tableName, keyAttribute, item } with the key attribute set in the item',
    );
  }
}

/**
 * Processes one prepared message at `nowMillis` and returns its outcome. Never throws: a failure
 * of the store or of the user's handler becomes a `retry` or `permanent` outcome.
 */
export async function processMessage<TBody>(
  message: Message<TBody>,
  fingerprint: string,
  nowMillis: number,
  deps: ProcessMessageDeps<TBody>,
): Promise<Outcome> {
  const { store, mode } = deps;
  const record = createInboxRecord(message.scopedKey, fingerprint, deps.consumer, nowMillis, deps.ttlSeconds);
  let stage: 'store' | 'handler' = 'handler';
  try {
    switch (mode.mode) {
      case 'marker': {
        stage = 'store';
        // A random owner token tells this claim from any other: when the put's response is lost
        // and the SDK retries it, the retry meets this very marker, which the store reports as
        // inserted, and the effect must still run.
        const owner = randomUUID();
        const result = await store.insert({ ...record, owner }, nowMillis);
        if (result.kind !== 'inserted') return outcomeOfInsert(result, fingerprint, nowMillis);
        try {
          stage = 'handler';
          await mode.handle(message);
          return { kind: 'processed' };
        } catch (error) {
          // Released, the retry runs the effect again; kept, it would be acknowledged. The effect may
          // have partly happened, so the key stays bound to this payload: another payload reusing
          // it is a mismatch, not a fresh claim. Fenced by this claim's owner token, not by the
          // fingerprint: a release retried by the SDK after another delivery of the same payload
          // claimed and completed the key must leave that delivery's marker alone.
          await store.release(record.pk, { owner, status: INBOX_STATUS.completed }).catch((releaseError) =>
            deps.log(message, {
              level: 'error',
              message: 'Releasing the marker failed: the retry will be acknowledged as a duplicate',
              outcome: 'retry',
              ...errorFields(releaseError, 'UNEXPECTED'),
            }),
          );
          throw error;
        }
      }
      case 'atomic': {
        const unitOfWork = createUnitOfWork(store);
        await mode.handle(message, unitOfWork);
        const writes = unitOfWork.writes;
        assertCommitWithinLimits(record, writes);
        stage = 'store';
        if (writes.length === 0)
          return outcomeOfInsert(await store.insert(record, nowMillis), fingerprint, nowMillis);
        const result = await store.commit(record, writes, nowMillis);
        if (result.kind === 'condition-failed') {
          // A version guard's condition failing means a newer version is stored: not an error.
          if (unitOfWork.guards.has(result.index)) return { kind: 'stale' };
          const detail = result.message ? `: ${result.message}` : '';
          return {
            kind: 'permanent',
            code: 'BUSINESS_CONDITION_FAILED',
            reason: `The condition of business write ${result.index} failed${detail}`,
          };
        }
        return result.kind === 'committed'
          ? { kind: 'processed' }
          : outcomeOfExisting(result.record, fingerprint, nowMillis);
      }
      case 'entity': {
        const entity = await mode.handle(message);
        assertEntity(entity);
        assertEntityWithinLimits(entity, fingerprint);
        stage = 'store';
        return outcomeOfInsert(
          await store.insertEntity(entity, fingerprint, nowMillis),
          fingerprint,
          nowMillis,
        );
      }
      case 'two-phase':
        return await processTwoPhase(message, fingerprint, deps);
    }
  } catch (error) {
    return outcomeOfError(error, stage === 'handler' ? 'HANDLER_FAILED' : 'UNEXPECTED');
  }
}
