/**
 * Up-front checks of DynamoDB's request limits, so an oversize commit fails as a clear
 * permanent error before the round trip instead of as an opaque `ValidationException`.
 *
 * Sizes follow DynamoDB's documented sizing rules (attribute name bytes + value bytes; lists
 * and maps cost 3 bytes plus 1 byte per element; numbers 1 byte per two digits plus 1) and
 * round up wherever the rules are approximate.
 */
import { ENTITY_FINGERPRINT_ATTRIBUTE } from './contract';
import { EffectivelyOnceError } from './errors';
import type { EntityWrite, InboxRecord, TransactWriteAction } from './store-port';

/** Actions in one `TransactWriteItems`. */
export const MAX_TRANSACTION_ACTIONS = 100;
/** Business writes that fit next to the marker at index 0. */
export const MAX_BUSINESS_WRITES = MAX_TRANSACTION_ACTIONS - 1;
/** DynamoDB item size limit, bytes. */
export const MAX_ITEM_BYTES = 400 * 1024;
/** `TransactWriteItems` aggregate size limit, bytes. */
export const MAX_TRANSACTION_BYTES = 4 * 1024 * 1024;

/** Estimated stored size of one attribute value in bytes (conservative). */
export function estimateValueSize(value: unknown): number {
  if (value === undefined) return 0;
  if (value === null || typeof value === 'boolean') return 1;
  if (typeof value === 'string') return Buffer.byteLength(value, 'utf8');
  if (typeof value === 'number' || typeof value === 'bigint') {
    const text = String(value);
    // Digits only: an integer's text is its digits and maybe a sign.
    const digits = Number.isSafeInteger(value)
      ? text.length - (text[0] === '-' ? 1 : 0)
      : text.replace(/[^0-9]/g, '').length;
    return Math.min(21, Math.ceil(digits / 2) + 1);
  }
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) return value.byteLength;
  if (value instanceof Set) {
    let size = 0;
    for (const element of value) size += estimateValueSize(element);
    return size;
  }
  if (Array.isArray(value)) {
    let size = 3;
    for (const element of value) size += 1 + estimateValueSize(element);
    return size;
  }
  if (typeof value === 'object') return 3 + estimateItemSize(value as Record<string, unknown>, 1);
  return 0;
}

/**
 * Estimated stored size of an item in bytes: attribute names plus values.
 *
 * @param perAttribute extra bytes per attribute (1 inside a map, 0 at the top level)
 */
export function estimateItemSize(item: Readonly<Record<string, unknown>>, perAttribute = 0): number {
  let size = 0;
  for (const name in item) {
    const value = item[name];
    if (value === undefined || !Object.hasOwn(item, name)) continue;
    size += perAttribute + Buffer.byteLength(name, 'utf8') + estimateValueSize(value);
  }
  return size;
}

/**
 * Estimated size a write contributes to a transaction: a put's whole item; for an update,
 * delete or condition check the key plus the expression attribute values (the resulting item
 * of an update is unknown before the write).
 */
export function estimateWriteSize(write: TransactWriteAction): number {
  const body = (write.Put ?? write.Update ?? write.Delete ?? write.ConditionCheck ?? {}) as {
    Item?: Record<string, unknown>;
    Key?: Record<string, unknown>;
    ExpressionAttributeValues?: Record<string, unknown>;
  };
  return (
    estimateItemSize(body.Item ?? {}) +
    estimateItemSize(body.Key ?? {}) +
    estimateItemSize(body.ExpressionAttributeValues ?? {})
  );
}

/** `TOO_MANY_WRITES`: also thrown by the unit of work as the write past the limit is added. */
export function tooManyWrites(detail = ''): EffectivelyOnceError {
  return new EffectivelyOnceError(
    'TOO_MANY_WRITES',
    `A commit holds at most ${MAX_BUSINESS_WRITES} business writes next to the marker${detail}`,
  );
}

/** `TOO_MANY_WRITES` with the marker on a business item: also thrown by its unit of work. */
export function tooManyItemMarkerWrites(detail = ''): EffectivelyOnceError {
  return new EffectivelyOnceError(
    'TOO_MANY_WRITES',
    `A commit with the marker on a business item holds at most ${MAX_TRANSACTION_ACTIONS} writes${detail}`,
  );
}

/** `ITEM_TOO_LARGE` for `what`, estimated at `size` bytes. */
function itemTooLarge(what: string, size: number): EffectivelyOnceError {
  return new EffectivelyOnceError(
    'ITEM_TOO_LARGE',
    `${what} is about ${size} bytes; DynamoDB items are limited to ${MAX_ITEM_BYTES} bytes`,
  );
}

function describe(write: TransactWriteAction, index: number): string {
  const [kind, body] = Object.entries(write).find(([, value]) => value !== undefined) ?? ['unknown', {}];
  const table = (body as { TableName?: string }).TableName;
  return `Write ${index} (${kind}${table === undefined ? '' : ` on \`${table}\``})`;
}

/**
 * Throws a permanent error unless `writes` fit one transaction next to `record`:
 * `TOO_MANY_WRITES` above {@link MAX_BUSINESS_WRITES}, `ITEM_TOO_LARGE` for a write above
 * {@link MAX_ITEM_BYTES}, `TRANSACTION_TOO_LARGE` above {@link MAX_TRANSACTION_BYTES} in total.
 * Returns the commit's estimated bytes.
 */
export function assertCommitWithinLimits(
  record: InboxRecord,
  writes: readonly TransactWriteAction[],
): number {
  if (writes.length > MAX_BUSINESS_WRITES) throw tooManyWrites(`, got ${writes.length}`);
  return assertWritesWithinLimits(writes, estimateItemSize(record as unknown as Record<string, unknown>));
}

/**
 * Throws a permanent error unless `writes` fit one transaction with the marker on the put at
 * `markedIndex` (no inbox record): `TOO_MANY_WRITES` above {@link MAX_TRANSACTION_ACTIONS},
 * `ITEM_TOO_LARGE` for a write above {@link MAX_ITEM_BYTES} (the marked put counted with its
 * fingerprint attribute), `TRANSACTION_TOO_LARGE` above {@link MAX_TRANSACTION_BYTES} in total.
 * Returns the commit's estimated bytes.
 */
export function assertItemMarkerCommitWithinLimits(
  writes: readonly TransactWriteAction[],
  markedIndex: number,
  fingerprint: string,
): number {
  if (writes.length > MAX_TRANSACTION_ACTIONS) throw tooManyItemMarkerWrites(`, got ${writes.length}`);
  return assertWritesWithinLimits(writes, 0, markedIndex, fingerprintSize(fingerprint));
}

/** Bytes the fingerprint attribute adds to an item that is its own marker. */
function fingerprintSize(fingerprint: string): number {
  return ENTITY_FINGERPRINT_ATTRIBUTE.length + Buffer.byteLength(fingerprint, 'utf8');
}

/** Each write within an item, and all of them with `baseSize` (and `extra` at `extraIndex`) within a transaction. */
function assertWritesWithinLimits(
  writes: readonly TransactWriteAction[],
  baseSize: number,
  extraIndex = -1,
  extra = 0,
): number {
  let total = baseSize;
  writes.forEach((write, index) => {
    const size = estimateWriteSize(write) + (index === extraIndex ? extra : 0);
    if (size > MAX_ITEM_BYTES) throw itemTooLarge(describe(write, index), size);
    total += size;
  });
  if (total > MAX_TRANSACTION_BYTES) {
    throw new EffectivelyOnceError(
      'TRANSACTION_TOO_LARGE',
      `The commit is about ${total} bytes; a transaction is limited to ${MAX_TRANSACTION_BYTES} bytes`,
    );
  }
  return total;
}

/** Throws `ITEM_TOO_LARGE` unless the entity item, with its fingerprint attribute, fits one item. */
export function assertEntityWithinLimits(entity: EntityWrite, fingerprint: string): void {
  const size = estimateItemSize(entity.item) + fingerprintSize(fingerprint);
  if (size > MAX_ITEM_BYTES) throw itemTooLarge(`The entity item for \`${entity.tableName}\``, size);
}
