/**
 * Checkpoints of a job run, kept in the inbox table: one record per job slot, under the effect
 * name `checkpoint`, holding `{ value }` as JSON text in its `result`.
 *
 * - Load: a conditional insert of an empty placeholder; a stored checkpoint stops it and comes
 *   back in the same round trip.
 * - Save: one conditional `UpdateItem` (`replace`) that writes the new value, a new fingerprint
 *   and a new `expiresAt`, only while the record still carries the fingerprint this run last
 *   saw (a token unique to this run and save). If another run wrote in between, the condition
 *   fails and the save reports the loss instead of overwriting. Nothing is deleted first, so a
 *   crash at any point leaves either the old checkpoint or the new one.
 * - Clear: the same fenced write, expiring the record at once (reads treat it as absent; TTL
 *   reaps it).
 *
 * Checkpoints shorten a resumed run, they never decide whether work happened.
 */
import { INBOX_STATUS } from '../core/contract';
import { sha256Hex } from '../core/fingerprint';
import type { InboxRecord, LeaseStore, MarkerStore } from '../core/store-port';
import type { Clock } from '../core/time';
import { epochSeconds, expiresAt } from '../core/time';

/** The effect name scoping checkpoint records next to their job record. */
export const CHECKPOINT_EFFECT = 'checkpoint';

/** What a save found. */
export type CheckpointSaveResult = 'saved' | 'lost-ownership';

/** The checkpoint of one job slot, as seen by one run. */
export interface Checkpoint {
  /** The last saved value, `undefined` when none was saved. Read once, then cached. */
  load(): Promise<unknown>;
  /** Replaces the saved value; `lost-ownership` when another run has written since. */
  save(value: unknown): Promise<CheckpointSaveResult>;
  /** Expires the checkpoint this run last saw (after the job completed); nothing if it never loaded. */
  clear(): Promise<void>;
}

/** What a checkpoint needs. */
export interface CheckpointOptions {
  /** The store capability a checkpoint uses: an insert to load, a fenced replace to save. */
  readonly store: Pick<LeaseStore, 'replace'> & Pick<MarkerStore, 'insert'>;
  /** The checkpoint record's partition key. */
  readonly pk: string;
  /** The consumer name stored on the record. */
  readonly consumer: string;
  /** The run's owner token; makes every fingerprint this run writes unique. */
  readonly owner: string;
  /** The clock, epoch milliseconds. */
  readonly clock: Clock;
  /** How long the checkpoint record lives after each save, seconds. */
  readonly ttlSeconds: number;
}

function unwrap(result: unknown): unknown {
  if (typeof result !== 'string') return undefined;
  try {
    const parsed: unknown = JSON.parse(result);
    return typeof parsed === 'object' && parsed !== null && 'value' in parsed
      ? (parsed as { value: unknown }).value
      : undefined;
  } catch {
    return undefined;
  }
}

/** Creates the checkpoint of one job slot for one run. */
export function createCheckpoint(options: CheckpointOptions): Checkpoint {
  const { store, pk, consumer, owner, clock, ttlSeconds } = options;
  let sequence = 0;
  let current: string | undefined;
  let loaded: { value: unknown } | undefined;

  /** A fingerprint unique to this run and write: it tells this run's writes from any other's. */
  const token = () => sha256Hex(`${owner}:${sequence++}`);

  const load = async (): Promise<unknown> => {
    if (loaded !== undefined) return loaded.value;
    const nowMillis = clock();
    const placeholder: InboxRecord = {
      pk,
      status: INBOX_STATUS.completed,
      fingerprint: token(),
      expiresAt: expiresAt(nowMillis, ttlSeconds),
      consumer,
      committedAt: nowMillis,
    };
    const answer = await store.insert(placeholder, nowMillis);
    if (answer.kind === 'inserted') {
      current = placeholder.fingerprint;
      loaded = { value: undefined };
    } else {
      current = answer.record.fingerprint;
      loaded = { value: unwrap(answer.record.result) };
    }
    return loaded.value;
  };

  /** Replaces the checkpoint this run last saw in one fenced write; false when another run wrote since. */
  const replace = async (next: { expiresAt: number; result?: string }): Promise<boolean> => {
    if (current === undefined) await load();
    const fingerprint = token();
    const answer = await store.replace(pk, current!, { ...next, fingerprint });
    if (answer.kind !== 'ok') return false;
    current = fingerprint;
    return true;
  };

  return {
    load,
    async save(value) {
      const result = JSON.stringify({ value });
      if (!(await replace({ expiresAt: expiresAt(clock(), ttlSeconds), result }))) return 'lost-ownership';
      loaded = { value: unwrap(result) };
      return 'saved';
    },
    async clear() {
      // Expired now, the record reads as absent to every later load (TTL reaps it).
      if (current !== undefined) await replace({ expiresAt: epochSeconds(clock()) });
    },
  };
}
