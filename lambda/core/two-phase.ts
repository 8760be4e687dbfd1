/**
 * Two-phase mode, for effects outside DynamoDB: every effect is claimed (`IN_PROGRESS`, with a
 * lease and a random owner token), performed, then completed or released, each write fenced
 * by the owner token. The database decides every race; see `TwoPhaseModeOptions`.
 */
import { randomUUID } from 'node:crypto';
import { INBOX_STATUS } from './contract';
import { scopeKey } from './dedup-key';
import { EffectivelyOnceError, errorFields } from './errors';
import { sha256Hex } from './fingerprint';
import { estimateItemSize, MAX_ITEM_BYTES } from './item-size';
import { claimExpiresAt } from './lease';
import type { Message } from './message';
import type { TwoPhaseModeOptions } from './options';
import { type Outcome, outcomeOfError, outcomeOfExisting } from './outcome';
import type { ProcessMessageDeps } from './process-message';
import type { InboxRecord } from './store-port';

/**
 * Keys for downstream calls, derived from an effect's scoped key: the same on every
 * redelivery and after a takeover, different for every consumer, dedup key and effect.
 */
export interface EffectKeys {
  /** For an HTTP `Idempotency-Key` header: SHA-256 of the scoped key, 64 lowercase hex digits. */
  readonly idempotencyKey: string;
  /**
   * For an SQS FIFO `MessageDeduplicationId` (at most 128 characters): the same 64 hex digits.
   */
  readonly deduplicationId: string;
  /**
   * For an AWS client token (`ClientToken`, `ClientRequestToken`; at most 36 characters for
   * DynamoDB, 64 for most services): the first 128 bits of the hash in UUID form (version 8).
   */
  readonly clientToken: string;
}

/**
 * Derives the downstream keys of the effect whose inbox record key is `scopedKey` (what
 * `scopeKey(consumer, dedupKey, effect)` returns). In two-phase mode the effect context
 * carries them already; use this where the effect runs elsewhere, for example in an HTTP
 * handler.
 *
 * @example
 * const { idempotencyKey, clientToken } = deriveEffectKeys(scopeKey('billing', 'order-1', 'charge'));
 * await fetch(paymentsUrl, { method: 'POST', headers: { 'Idempotency-Key': idempotencyKey }, body });
 * await dynamoDb.send(new TransactWriteCommand({ TransactItems, ClientRequestToken: clientToken }));
 */
export function deriveEffectKeys(scopedKey: string): EffectKeys {
  const hex = sha256Hex(scopedKey);
  // RFC 9562: version 8 (custom) in the 13th digit, variant 10 in the top bits of the 17th.
  const variant = ((Number.parseInt(hex[16]!, 16) & 3) | 8).toString(16);
  return {
    idempotencyKey: hex,
    deduplicationId: hex,
    clientToken: `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`,
  };
}

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

const LEASE_LOST: Outcome = {
  kind: 'retry',
  code: 'LEASE_LOST',
  reason: 'The lease ended and another delivery took the claim over',
};

const seconds = (millis: number): number => Math.floor(millis / 1000);

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
 * message's outcome. Never throws. `processed` needs every effect the handler ran to have
 * completed; the first effect that could not run decides the outcome, whatever the handler
 * did with the rejection.
 */
export async function processTwoPhase<TBody>(
  message: Message<TBody>,
  fingerprint: string,
  deps: ProcessMessageDeps<TBody>,
): Promise<Outcome> {
  const { store, clock, leaseMillis, log, consumer, ttlSeconds } = deps;
  const mode = deps.mode as TwoPhaseModeOptions<TBody>;
  const names = new Set<string | undefined>();
  const runs: Promise<unknown>[] = [];
  let failure: Outcome | undefined;
  let completed = 0;
  let duplicates = 0;

  /** Keeps the first outcome that stops the message, as the error the handler sees. */
  const block = (outcome: Outcome): EffectivelyOnceError => {
    failure ??= outcome;
    return 'code' in outcome
      ? new EffectivelyOnceError(outcome.code, outcome.reason)
      : new EffectivelyOnceError('IN_FLIGHT', 'The effect is in progress in another delivery');
  };

  /**
   * Extends the lease of `owner`'s claim every third of the lease, moving `expiresAt` with it;
   * aborts `controller` when another delivery took the claim over. `stop` ends the beats and
   * waits for the extensions in flight, so none lands after the release or completion that
   * follows.
   */
  function startHeartbeat(pk: string, owner: string, controller: AbortController) {
    let beating = true;
    const inFlight = new Set<Promise<void>>();
    const beat = () => {
      const next = clock() + leaseMillis;
      const extension = store.extendLease(pk, owner, next, claimExpiresAt(next, ttlSeconds)).then(
        (extended) => {
          if (extended.kind !== 'ok' && beating) controller.abort(block(LEASE_LOST));
        },
        // A failed extension is tried again at the next beat; the lease still runs.
        () => undefined,
      );
      inFlight.add(extension);
      void extension.finally(() => inFlight.delete(extension));
    };
    const timer = setInterval(beat, Math.ceil(leaseMillis / 3));
    return {
      async stop(): Promise<void> {
        beating = false;
        clearInterval(timer);
        await Promise.all(inFlight);
      },
    };
  }

  async function runEffect<T>(name: string | undefined, effect: Effect<T>): Promise<T | undefined> {
    try {
      if (names.has(name) || typeof effect !== 'function') {
        throw new EffectivelyOnceError('VALIDATION', `Effect \`${name}\` is not a function run once`);
      }
      names.add(name);
      const pk = name === undefined ? message.scopedKey : scopeKey(consumer, message.dedupKey, name);
      const now = clock();
      const leaseExpiresAt = now + leaseMillis;
      let record: InboxRecord = {
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
      let takeover: { owner: string } | undefined;
      for (;;) {
        // A claim whose response was lost, retried by the SDK, meets its own owner token: the
        // store reports it inserted, so the effect runs now rather than after the lease ends.
        const claimed = await store.claimLease(record, now, takeover);
        if (claimed.kind === 'inserted') {
          if (claimed.takeover) {
            deps.onTakeover();
            log(message, {
              level: 'warn',
              message: 'Lease ended: claim taken over',
              effect: name,
              takeovers: record.takeovers,
            });
          }
          break;
        }
        const existing = claimed.record;
        const outcome = outcomeOfExisting(existing, fingerprint, now);
        if (outcome.kind === 'duplicate') {
          duplicates += 1;
          return readResult(existing.result) as T | undefined;
        }
        // Only a claim seen with an ended lease is taken over, and only once per run: the
        // takeover is fenced by the owner seen, so a second taker finds the new live claim.
        if (outcome.kind !== 'in-flight' || takeover || existing.leaseExpiresAt! >= now) throw block(outcome);
        const takeovers = existing.takeovers ?? 0;
        const since = existing.committedAt ?? now;
        if (
          takeovers >= (mode.maxTakeovers ?? Infinity) ||
          now - since >= (mode.stuckAfterMillis ?? Infinity)
        ) {
          throw block({
            kind: 'permanent',
            code: 'STUCK_IN_PROGRESS',
            reason: `In progress since ${new Date(since).toISOString()}, taken over ${takeovers} times`,
          });
        }
        record = { ...record, committedAt: since, takeovers: takeovers + 1 };
        takeover = { owner: existing.owner ?? '' };
      }

      const owner = record.owner!;
      const controller = new AbortController();
      const heartbeat = mode.heartbeat === true ? startHeartbeat(pk, owner, controller) : undefined;
      let value: T;
      try {
        value = await effect({
          ...deriveEffectKeys(pk),
          effect: name,
          scopedKey: pk,
          signal: controller.signal,
        });
      } catch (error) {
        failure ??= outcomeOfError(error, 'HANDLER_FAILED');
        // An extension still in flight would otherwise land after the release and revive the
        // claim until its new lease end; the store refuses to extend a released claim as well.
        await heartbeat?.stop();
        // Released, the retry runs the effect again, with the same derived keys. The effect may
        // have happened (its answer lost), so the claim keeps the payload's fingerprint: another
        // payload reusing the key is a mismatch, not a fresh claim.
        await store.release(pk, { owner }).catch((releaseError) =>
          log(message, {
            level: 'error',
            message: 'Releasing the claim failed: it is taken over when its lease ends',
            effect: name,
            ...errorFields(releaseError, 'UNEXPECTED'),
          }),
        );
        throw error;
      }
      await heartbeat?.stop();
      let result: string | undefined;
      if (mode.storeResults && value !== undefined) {
        try {
          result = JSON.stringify(value);
        } catch {
          // No JSON form (a cycle, a bigint): completed without it below.
        }
        if (result === undefined || estimateItemSize({ ...record, result }) > MAX_ITEM_BYTES) {
          result = undefined;
          log(message, {
            level: 'warn',
            message: 'Effect result not stored: no JSON form, or over the item size limit',
            effect: name,
            code: 'ITEM_TOO_LARGE',
          });
        }
      }
      const done = await store.complete(pk, owner, { expiresAt: seconds(clock()) + ttlSeconds, result });
      if (done.kind !== 'ok') throw block(LEASE_LOST);
      completed += 1;
      return value;
    } catch (error) {
      failure ??= outcomeOfError(error, 'UNEXPECTED');
      throw error;
    }
  }

  const effects = {
    run<T>(nameOrEffect: string | Effect<T>, effect?: Effect<T>) {
      const run =
        typeof nameOrEffect === 'function'
          ? runEffect(undefined, nameOrEffect)
          : runEffect(nameOrEffect, effect!);
      runs.push(run.catch(() => undefined));
      return run;
    },
  } as Effects;

  let outcome: Outcome | undefined;
  try {
    await mode.handle(message, effects);
  } catch (error) {
    outcome = outcomeOfError(error, 'HANDLER_FAILED');
  }
  // Effects the handler did not await decide the outcome all the same.
  for (let index = 0; index < runs.length; index++) await runs[index];
  return (
    failure ?? outcome ?? (completed === 0 && duplicates > 0 ? { kind: 'duplicate' } : { kind: 'processed' })
  );
}
