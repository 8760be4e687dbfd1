/**
 * Keys for downstream calls, derived from an effect's scoped key: the same on every redelivery
 * and after a takeover, different for every consumer, dedup key and effect.
 */
import { sha256Hex } from './fingerprint';

/** The keys of one effect for the services it calls. */
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
