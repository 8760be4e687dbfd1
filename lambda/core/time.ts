/**
 * Time as the store keeps it: DynamoDB TTL attributes are epoch seconds, everything else in the
 * toolkit is epoch milliseconds. The one place that converts between them.
 */

/** Epoch seconds of `millis`, rounded down: the second `millis` falls in. */
export function epochSeconds(millis: number): number {
  return Math.floor(millis / 1000);
}

/** The `expiresAt` (epoch seconds) of a record written at `nowMillis` that lives `ttlSeconds`. */
export function expiresAt(nowMillis: number, ttlSeconds: number): number {
  return epochSeconds(nowMillis) + ttlSeconds;
}

/**
 * True when a record with this `expiresAt` (epoch seconds) is expired at `nowMillis`: DynamoDB
 * deletes expired items late (often hours), so every read treats an expired record as absent.
 */
export function isExpired(expiresAtSeconds: number, nowMillis: number): boolean {
  return expiresAtSeconds <= epochSeconds(nowMillis);
}

/** Epoch milliseconds now. Injected so the core never reads the system clock itself. */
export type Clock = () => number;
