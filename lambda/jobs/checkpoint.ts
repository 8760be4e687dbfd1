/**
 * Checkpoints of a job run, kept in the inbox table through the store port's existing methods
 * only (`insert`, `release`): one record per job slot, under the effect name `checkpoint`,
 * holding `{ value }` as JSON text in its `result`.
 *
 * - Load: a conditional insert of an empty placeholder; a stored checkpoint stops it and comes
 *   back in the same round trip.
 * - Save: release the record this run last saw (guarded by its fingerprint, a token unique to
 *   this run and save), then insert the new one. If another run wrote in between, the insert
 *   finds its record and the save reports the loss instead of overwriting.
 *
 * A crash between the release and the insert loses the checkpoint (the next run starts from
 * the beginning): checkpoints shorten a resumed run, they never decide whether work happened.
 */
import { INBOX_STATUS } from '../core/contract';
import { sha256Hex } from '../core/fingerprint';
import type { Clock } from '../core/options';
import type { InboxRecord, InboxStore } from '../core/store-port';

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
  /** Deletes the checkpoint this run last saw (after the job completed). */
  clear(): Promise<void>;
}

/** What a checkpoint needs. */
export interface CheckpointOptions {
  readonly store: InboxStore;
  /** The checkpoint record's partition key. */
  readonly pk: string;
  readonly consumer: string;
  /** The run's owner token; makes every fingerprint this run writes unique. */
  readonly owner: string;
  readonly clock: Clock;
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

  const record = (nowMillis: number, result?: string): InboxRecord => ({
    pk,
    status: INBOX_STATUS.completed,
    fingerprint: sha256Hex(`${owner}:${sequence++}`),
    expiresAt: Math.floor(nowMillis / 1000) + ttlSeconds,
    consumer,
    committedAt: nowMillis,
    ...(result === undefined ? {} : { result }),
  });

  const load = async (): Promise<unknown> => {
    if (loaded !== undefined) return loaded.value;
    const nowMillis = clock();
    const placeholder = record(nowMillis);
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

  return {
    load,
    async save(value) {
      if (current === undefined) await load();
      await store.release(pk, { fingerprint: current! });
      const nowMillis = clock();
      const next = record(nowMillis, JSON.stringify({ value }));
      const answer = await store.insert(next, nowMillis);
      if (answer.kind === 'existing') return 'lost-ownership';
      current = next.fingerprint;
      loaded = { value: unwrap(next.result) };
      return 'saved';
    },
    async clear() {
      if (current !== undefined) await store.release(pk, { fingerprint: current });
    },
  };
}
