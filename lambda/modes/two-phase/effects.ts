/**
 * One message in two-phase mode: the user's handler runs its effects through `effects.run`, and
 * every effect is claimed (`IN_PROGRESS`, with a lease and a random owner token), performed, then
 * completed or released, each write fenced by the owner token. The database decides every race.
 */
import { randomUUID } from 'node:crypto';
import { INBOX_STATUS } from '../../core/contract';
import { scopeKey } from '../../core/dedup-key';
import { deriveEffectKeys, type EffectKeys } from '../../core/effect-keys';
import { EffectivelyOnceError, errorFields } from '../../core/errors';
import { estimateItemSize, MAX_ITEM_BYTES } from '../../core/item-size';
import { claimExpiresAt } from '../../core/lease';
import { claimWithTakeover } from '../../core/lease-claim';
import type { LogEntry } from '../../core/logger';
import type { Message } from '../../core/message';
import type { ModeStepResult } from '../../core/mode';
import { type Outcome, outcomeOfError, outcomeOfExisting } from '../../core/outcome';
import type { InboxRecord, LeaseStore } from '../../core/store-port';
import { type Clock, expiresAt } from '../../core/time';
import { startHeartbeat } from './heartbeat';

/** What an effect receives: its name, its keys and an abort signal. */
export interface EffectContext extends EffectKeys {
  /** The effect's name; `undefined` for a message's unnamed effect. */
  readonly effect: string | undefined;
  /** The effect's inbox record key, `scopeKey(consumer, dedupKey, effect)`. */
  readonly scopedKey: string;
  /** Aborted when the heartbeat finds that another delivery took the claim over. */
  readonly signal: AbortSignal;
}

/** One effect: a call outside DynamoDB. */
export type Effect<T> = (context: EffectContext) => T | Promise<T>;

/**
 * Runs a message's effects in two-phase mode, each at most once per dedup key as far as the
 * inbox decides (and once downstream when the derived key is passed on).
 *
 * @example
 * handle: async (message, effects) => {
 *   const invoice = await effects.run('invoice', ({ idempotencyKey }) =>
 *     payments.createInvoice(message.body, { idempotencyKey }),
 *   );
 *   await effects.run('stock', ({ clientToken }) => stock.reserve(message.body.items, clientToken));
 * }
 */
export interface Effects {
  /**
   * Runs the effect `name` (recorded under `scopeKey(consumer, dedupKey, name)`) unless it
   * completed before. Returns the effect's result, or on a duplicate the stored result
   * (`storeResults`; else `undefined`). Rejects when the effect cannot run now (in progress
   * elsewhere, payload mismatch, stuck) or fails; the message then fails with that reason,
   * even if the handler catches the rejection. A name runs once per message.
   */
  run<T>(name: string, effect: Effect<T>): Promise<T | undefined>;
  /** Runs the message's one unnamed effect, recorded under the message's scoped key. */
  run<T>(effect: Effect<T>): Promise<T | undefined>;
}

/** Runs the effects of one message with `effects.run`. Its return value is ignored. */
export type TwoPhaseHandler<TBody, TRecord = unknown> = (
  message: Message<TBody, TRecord>,
  effects: Effects,
) => unknown;

/** The resolved settings of two-phase mode, for one invocation. */
export interface EffectsConfig<TBody, TRecord = unknown> {
  readonly handle: TwoPhaseHandler<TBody, TRecord>;
  readonly store: LeaseStore;
  readonly consumer: string;
  readonly ttlSeconds: number;
  readonly clock: Clock;
  /** The lease of this invocation's claims, milliseconds. */
  readonly leaseMillis: number;
  readonly heartbeat: boolean;
  readonly storeResults: boolean;
  readonly stuckAfterMillis: number;
  readonly maxTakeovers: number;
}

/** An effect that could not run or failed: the rejection the handler sees. */
interface Stopped {
  readonly ok: false;
  readonly error: unknown;
}

/** How one effect ended: its value (the stored one on a duplicate), or stopped. */
type EffectRun<T> = { readonly ok: true; readonly value: T | undefined } | Stopped;

/** What a claim found: the claim is this run's, the effect completed before, or it cannot run now. */
type Claim =
  | { readonly kind: 'claimed'; readonly record: InboxRecord }
  | { readonly kind: 'duplicate'; readonly result: unknown; readonly expiresAt: number }
  | { readonly kind: 'stopped'; readonly outcome: Outcome };

const LEASE_LOST: Outcome = {
  kind: 'retry',
  code: 'LEASE_LOST',
  reason: 'The lease ended and another delivery took the claim over',
};

/** The rejection `effects.run` gives the handler for an effect stopped by `outcome`. */
function rejectionOf(outcome: Outcome): EffectivelyOnceError {
  return 'code' in outcome
    ? new EffectivelyOnceError(outcome.code, outcome.reason)
    : new EffectivelyOnceError('IN_FLIGHT', 'The effect is in progress in another delivery');
}

/** The stored result as the effect returned it (JSON text in the record). */
function readResult(stored: unknown): unknown {
  if (typeof stored !== 'string') return stored;
  try {
    return JSON.parse(stored);
  } catch {
    return stored;
  }
}

/**
 * Processes one message in two-phase mode: runs the handler with `effects` and returns the
 * message's facts. Never throws. `processed` needs every effect the handler ran to have
 * completed; the first effect that could not run decides the outcome, whatever the handler did
 * with the rejection.
 */
export async function runEffects<TBody, TRecord>(
  config: EffectsConfig<TBody, TRecord>,
  message: Message<TBody, TRecord>,
  fingerprint: string,
): Promise<ModeStepResult> {
  const { store, clock, leaseMillis, consumer, ttlSeconds } = config;
  const names = new Set<string | undefined>();
  const runs: Promise<EffectRun<unknown>>[] = [];
  const logs: LogEntry[] = [];
  let takeovers = 0;
  let completed = 0;
  let duplicates = 0;
  /** The earliest `expiresAt` of the completed records the effects ran or found. */
  let completedExpiresAt = Number.MAX_SAFE_INTEGER;
  /** The first outcome that stopped an effect: it decides the message's outcome. */
  let stoppedBy: Outcome | undefined;

  /** Keeps `outcome` if it is the first to stop the message; the effect rejects with `error`. */
  const stop = (outcome: Outcome, error: unknown = rejectionOf(outcome)): Stopped => {
    stoppedBy ??= outcome;
    return { ok: false, error };
  };

  /**
   * Claims the effect's record, taking over a claim of the same payload whose lease ended
   * (`claimWithTakeover`, fenced by the owner seen, so a second taker finds the new live claim),
   * unless the claim is stuck (`stuckAfterMillis`, `maxTakeovers`).
   */
  async function claim(pk: string, name: string | undefined): Promise<Claim> {
    const now = clock();
    const leaseExpiresAt = now + leaseMillis;
    const record: InboxRecord = {
      pk,
      status: INBOX_STATUS.inProgress,
      fingerprint,
      // The claim lives its TTL past its lease end, whatever the lease: it never expires
      // mid-effect, and a crashed claim is taken over (or found stuck), never claimed afresh.
      expiresAt: claimExpiresAt(leaseExpiresAt, ttlSeconds),
      consumer,
      committedAt: now,
      owner: randomUUID(),
      leaseExpiresAt,
    };
    // A claim whose response was lost, retried by the SDK, meets its own owner token: the store
    // reports it inserted, so the effect runs now rather than after the lease ends.
    const claimed = await claimWithTakeover(store, record, now, {
      stuckAfterMillis: config.stuckAfterMillis,
      maxTakeovers: config.maxTakeovers,
    });
    if (claimed.kind === 'stuck') {
      return {
        kind: 'stopped',
        outcome: {
          kind: 'permanent',
          code: 'STUCK_IN_PROGRESS',
          reason: `In progress since ${new Date(claimed.since).toISOString()}, taken over ${claimed.takeovers} times`,
        },
      };
    }
    if (claimed.kind === 'inserted') {
      if (!claimed.takeover) return { kind: 'claimed', record };
      takeovers += 1;
      logs.push({
        level: 'warn',
        message: 'Lease ended: claim taken over',
        effect: name,
        takeovers: claimed.takeovers,
      });
      return { kind: 'claimed', record: { ...record, takeovers: claimed.takeovers } };
    }
    const existing = claimed.record;
    const outcome = outcomeOfExisting(existing, fingerprint, now);
    return outcome.kind === 'duplicate'
      ? { kind: 'duplicate', result: existing.result, expiresAt: existing.expiresAt }
      : { kind: 'stopped', outcome };
  }

  /**
   * The JSON text of `value` to store with the completed record (`storeResults`), or `undefined`:
   * without `storeResults`, or when it has no JSON form or would push the record past the item
   * size limit (logged; the effect is completed all the same, since it must never run again).
   */
  function resultToStore(value: unknown, record: InboxRecord, name: string | undefined): string | undefined {
    if (!config.storeResults || value === undefined) return undefined;
    let result: string | undefined;
    try {
      result = JSON.stringify(value);
    } catch {
      // No JSON form (a cycle, a bigint): completed without it below.
    }
    if (result !== undefined && estimateItemSize({ ...record, result }) <= MAX_ITEM_BYTES) return result;
    logs.push({
      level: 'warn',
      message: 'Effect result not stored: no JSON form, or over the item size limit',
      effect: name,
      code: 'ITEM_TOO_LARGE',
    });
    return undefined;
  }

  async function runEffect<T>(name: string | undefined, effect: Effect<T>): Promise<EffectRun<T>> {
    try {
      if (names.has(name) || typeof effect !== 'function') {
        const error = new EffectivelyOnceError('VALIDATION', `Effect \`${name}\` is not a function run once`);
        return stop(outcomeOfError(error, 'UNEXPECTED'), error);
      }
      names.add(name);
      const pk = name === undefined ? message.scopedKey : scopeKey(consumer, message.dedupKey, name);
      const claimed = await claim(pk, name);
      if (claimed.kind === 'stopped') return stop(claimed.outcome);
      if (claimed.kind === 'duplicate') {
        duplicates += 1;
        completedExpiresAt = Math.min(completedExpiresAt, claimed.expiresAt);
        return { ok: true, value: readResult(claimed.result) as T | undefined };
      }

      const { record } = claimed;
      const owner = record.owner!;
      const controller = new AbortController();
      const heartbeat = config.heartbeat
        ? startHeartbeat({
            store,
            clock,
            leaseMillis,
            ttlSeconds,
            pk,
            owner,
            onLost: () => controller.abort(stop(LEASE_LOST).error),
          })
        : undefined;
      let value: T;
      try {
        value = await effect({
          ...deriveEffectKeys(pk),
          effect: name,
          scopedKey: pk,
          signal: controller.signal,
        });
      } catch (error) {
        const failed = stop(outcomeOfError(error, 'HANDLER_FAILED'), error);
        // An extension still in flight would otherwise land after the release and revive the
        // claim until its new lease end; the store refuses to extend a released claim as well.
        await heartbeat?.stop();
        // Released, the retry runs the effect again, with the same derived keys. The effect may
        // have happened (its answer lost), so the claim keeps the payload's fingerprint: another
        // payload reusing the key is a mismatch, not a fresh claim.
        await store.release(pk, { owner }).catch((releaseError) => {
          logs.push({
            level: 'error',
            message: 'Releasing the claim failed: it is taken over when its lease ends',
            effect: name,
            ...errorFields(releaseError, 'UNEXPECTED'),
          });
        });
        return failed;
      }
      await heartbeat?.stop();
      const result = resultToStore(value, record, name);
      const completedUntil = expiresAt(clock(), ttlSeconds);
      const done = await store.complete(pk, owner, { expiresAt: completedUntil, result });
      if (done.kind !== 'ok') return stop(LEASE_LOST);
      completed += 1;
      completedExpiresAt = Math.min(completedExpiresAt, completedUntil);
      return { ok: true, value };
    } catch (error) {
      // The store (a claim, a completion) or the effect's key failed.
      return stop(outcomeOfError(error, 'UNEXPECTED'), error);
    }
  }

  const effects = {
    run<T>(nameOrEffect: string | Effect<T>, effect?: Effect<T>): Promise<T | undefined> {
      const run =
        typeof nameOrEffect === 'function'
          ? runEffect(undefined, nameOrEffect)
          : runEffect(nameOrEffect, effect!);
      runs.push(run);
      const answer = run.then((ended) => {
        if (ended.ok) return ended.value;
        throw ended.error;
      });
      // A rejection the handler never awaits must not crash the process: it decides the outcome.
      answer.catch(() => undefined);
      return answer;
    },
  } as Effects;

  let handlerOutcome: Outcome | undefined;
  try {
    await config.handle(message, effects);
  } catch (error) {
    handlerOutcome = outcomeOfError(error, 'HANDLER_FAILED');
  }
  // Effects the handler did not await decide the outcome all the same.
  for (let index = 0; index < runs.length; index++) await runs[index];
  const outcome: Outcome =
    stoppedBy ??
    handlerOutcome ??
    (completed === 0 && duplicates > 0 ? { kind: 'duplicate' } : { kind: 'processed' });
  // Completed records are final (only their owner could release them, and it completed them);
  // a message that ran no effect has no record to stand for it, so it is never reported done.
  const done = (outcome.kind === 'processed' || outcome.kind === 'duplicate') && completed + duplicates > 0;
  return done
    ? { outcome, logs, takeovers, completed: { expiresAt: completedExpiresAt } }
    : { outcome, logs, takeovers };
}
