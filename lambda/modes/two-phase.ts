/**
 * Two-phase mode, for effects outside DynamoDB (a payment API, an email): every effect is claimed
 * with a lease, performed, then completed or released (see `two-phase/effects.ts`). This module is
 * the mode's options: their defaults and their checks at creation.
 */
import { expectMethods, expectOption } from '../core/errors';
import { isLeaseWithinTtl } from '../core/lease';
import type { Mode } from '../core/mode';
import type { LeaseStore } from '../core/store-port';
import { type EffectsConfig, runEffects, type TwoPhaseHandler } from './two-phase/effects';

/** The shortest lease: also the floor of a lease derived from the invocation's remaining time. */
export const MIN_LEASE_MILLIS = 1000;
/** The lease without `leaseMillis` and without a Lambda context: Lambda's longest timeout. */
export const DEFAULT_LEASE_MILLIS = 15 * 60 * 1000;

/** The options of two-phase mode. */
export interface TwoPhaseOptions<TBody, TRecord = unknown> {
  /** Runs the message's effects with `effects.run`. Its return value is ignored. */
  readonly handle: TwoPhaseHandler<TBody, TRecord>;
  /**
   * How long a claim is valid, in milliseconds (at least 1000: a smaller value is taken for
   * seconds and rejected). Cover the longest effect plus the clock skew between instances: a
   * claim whose lease ended is taken over. Must be shorter than `ttlSeconds`
   * (`isLeaseWithinTtl`; `INVALID_OPTIONS` at creation otherwise). Whatever the lease, a claim's
   * record lives `ttlSeconds` past its lease end (`claimExpiresAt`), so it never expires
   * mid-effect. Keep it well below the queue's `visibilityTimeout × maxReceiveCount`: a crashed
   * claim is taken over only by a redelivery after its lease ended, and one that outlives every
   * receive is dead-lettered as in flight instead.
   * @default `EO_LEASE_MILLIS` through `createSqsHandler` and the middleware (the construct
   *   sets it to the function timeout); else the time the invocation has left when it starts,
   *   at least 1000; 15 minutes without a Lambda context; the visibility timeout in
   *   `createSqsWorker`
   */
  readonly leaseMillis?: number;
  /**
   * Extend the lease while an effect runs, every third of `leaseMillis`, moving the record's
   * `expiresAt` with it. When another delivery has taken the claim over, the effect's `signal`
   * is aborted. The heartbeat stops, and the extension in flight is awaited, before the claim is
   * completed or released, so a late extension never revives a released claim.
   * @default false; `true` in `createSqsWorker` while its visibility heartbeat is on
   */
  readonly heartbeat?: boolean;
  /**
   * Store each effect's result (its JSON form) with the completed record, so `effects.run`
   * returns it on a duplicate. A result that would push the record past DynamoDB's 400 KB item
   * limit, or that has no JSON form, is not stored (logged as `ITEM_TOO_LARGE`): the effect is
   * completed all the same, since it must never run again, and a duplicate gets `undefined`.
   * @default false
   */
  readonly storeResults?: boolean;
  /**
   * A claim in progress this long since its first claim is not taken over when its lease
   * ends: the message is dead-lettered as `STUCK_IN_PROGRESS` for a human, who checks the
   * effect downstream, then deletes the inbox record (or leaves it) and redrives.
   * @default no limit
   */
  readonly stuckAfterMillis?: number;
  /**
   * A claim already taken over this often is not taken over again (`STUCK_IN_PROGRESS`, as
   * with `stuckAfterMillis`); `0` never takes over.
   * @default no limit
   */
  readonly maxTakeovers?: number;
}

/** Checks an optional duration in milliseconds of at least a second; a smaller one is likely seconds. */
function expectMillis(field: string, value: unknown): void {
  if (value === undefined) return;
  expectOption(Number.isSafeInteger(value) && (value as number) > 0, field, 'a positive integer', value);
  expectOption(
    (value as number) >= MIN_LEASE_MILLIS,
    field,
    `milliseconds (at least ${MIN_LEASE_MILLIS}; for ${value} seconds use ${(value as number) * 1000})`,
    value,
  );
}

/**
 * Two-phase, for effects outside DynamoDB (a payment API, an email): each effect that `handle`
 * runs through `effects.run` is claimed (`IN_PROGRESS`, with a lease and a random owner token),
 * performed, then completed (or released when it throws), each under its own inbox record,
 * so after a partial failure only the unfinished effects run again. The message is
 * `processed` once every effect it ran completed, and a `duplicate` when all of them had.
 *
 * A claim whose lease ended (its invocation crashed or timed out) is taken over by the next
 * delivery with a new owner token (metric `Takeover`); the old owner can then neither
 * complete nor release it. The effect therefore runs at least once and, when the lease ends
 * mid-effect, possibly twice: pass the derived `idempotencyKey` (or `clientToken`,
 * `deduplicationId`) downstream so the second run is deduplicated there.
 *
 * Like atomic mode, code in `handle` outside `effects.run` runs on every delivery.
 * DynamoDB requests per effect: 2 on first delivery (claim, complete), 1 on a duplicate.
 *
 * @example
 * createSqsHandler<Order>({
 *   dedupKey: fromBody('orderId'),
 *   mode: twoPhase({
 *     storeResults: true,
 *     handle: async (message, effects) => {
 *       const invoice = await effects.run('invoice', ({ idempotencyKey }) =>
 *         payments.createInvoice(message.body, { headers: { 'Idempotency-Key': idempotencyKey } }),
 *       );
 *       await effects.run('stock', ({ clientToken }) => stock.reserve(message.body.items, clientToken));
 *     },
 *   }),
 * });
 */
export function twoPhase<TBody = unknown, TRecord = unknown>(
  options: TwoPhaseOptions<TBody, TRecord>,
): Mode<TBody, LeaseStore, TRecord> {
  return {
    name: 'two-phase',
    capability: 'lease',
    create({ store, consumer, ttlSeconds, clock, defaults }) {
      expectOption(
        typeof options === 'object' && options !== null,
        'twoPhase(options)',
        'an object',
        options,
      );
      const { handle, stuckAfterMillis, maxTakeovers } = options;
      expectOption(typeof handle === 'function', 'twoPhase.handle', 'a function', handle);
      expectMethods('store', store, ['claimLease', 'complete', 'release', 'extendLease']);
      // The lease the environment supplies (`EO_LEASE_MILLIS`, the worker's visibility timeout)
      // is checked as the option it stands for.
      const leaseMillis = options.leaseMillis ?? defaults.leaseMillis;
      expectMillis('twoPhase.leaseMillis', leaseMillis);
      expectOption(
        leaseMillis === undefined || isLeaseWithinTtl(leaseMillis, ttlSeconds),
        'twoPhase.leaseMillis',
        `shorter than \`ttlSeconds\` (${ttlSeconds * 1000} milliseconds)`,
        leaseMillis,
      );
      expectMillis('twoPhase.stuckAfterMillis', stuckAfterMillis);
      expectOption(
        maxTakeovers === undefined || (Number.isSafeInteger(maxTakeovers) && maxTakeovers >= 0),
        'twoPhase.maxTakeovers',
        'a non-negative integer',
        maxTakeovers,
      );
      const heartbeat = options.heartbeat ?? defaults.heartbeat ?? false;
      const storeResults = options.storeResults ?? false;
      expectOption(typeof heartbeat === 'boolean', 'twoPhase.heartbeat', 'a boolean', heartbeat);
      expectOption(typeof storeResults === 'boolean', 'twoPhase.storeResults', 'a boolean', storeResults);

      const config: Omit<EffectsConfig<TBody, TRecord>, 'leaseMillis'> = {
        handle,
        store,
        consumer,
        ttlSeconds,
        clock,
        heartbeat,
        storeResults,
        stuckAfterMillis: stuckAfterMillis ?? Number.POSITIVE_INFINITY,
        maxTakeovers: maxTakeovers ?? Number.POSITIVE_INFINITY,
      };
      return {
        process(message, { fingerprint, remainingMillis }) {
          // The lease is never zero or absent: by default it covers what is left of the invocation.
          const lease =
            leaseMillis ??
            (remainingMillis === undefined
              ? DEFAULT_LEASE_MILLIS
              : Math.max(MIN_LEASE_MILLIS, Math.floor(remainingMillis)));
          return runEffects({ ...config, leaseMillis: lease }, message, fingerprint);
        },
      };
    },
  };
}

export type { Effect, EffectContext, Effects, TwoPhaseHandler } from './two-phase/effects';
