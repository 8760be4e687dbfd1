/**
 * The lease heartbeat of a two-phase effect: while the effect runs, the claim's lease is extended
 * every third of the lease, moving the record's `expiresAt` with it.
 */
import { claimExpiresAt } from '../../core/lease';
import type { LeaseStore } from '../../core/store-port';
import type { Clock } from '../../core/time';

/** What the heartbeat of one claim needs. */
export interface HeartbeatTarget {
  readonly store: Pick<LeaseStore, 'extendLease'>;
  readonly clock: Clock;
  readonly leaseMillis: number;
  readonly ttlSeconds: number;
  /** The claim's inbox record key and owner token. */
  readonly pk: string;
  readonly owner: string;
  /** Called when an extension finds that the owner lost the claim (taken over, released, gone). */
  readonly onLost: () => void;
}

/** A running heartbeat. */
export interface Heartbeat {
  /** Ends the beats and waits for the extensions in flight. */
  stop(): Promise<void>;
}

/**
 * Starts extending the lease of `target.owner`'s claim. `stop` ends the beats and waits for the
 * extensions in flight, so none lands after the release or completion that follows; an
 * extension that finds the claim lost after `stop` is not reported.
 */
export function startHeartbeat(target: HeartbeatTarget): Heartbeat {
  const { store, clock, leaseMillis, ttlSeconds, pk, owner, onLost } = target;
  let beating = true;
  const inFlight = new Set<Promise<void>>();
  const beat = () => {
    const next = clock() + leaseMillis;
    const extension = store.extendLease(pk, owner, next, claimExpiresAt(next, ttlSeconds)).then(
      (extended) => {
        if (extended.kind !== 'ok' && beating) onLost();
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
