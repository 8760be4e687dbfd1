/**
 * Table snapshots in a canonical form, so two scans of the same data compare equal
 * whatever order the service returned items, map entries or set members in. Pure.
 */

import type { AttributeValue } from '@aws-sdk/client-dynamodb';

/** A DynamoDB item as `Scan` returns it (DynamoDB JSON). */
export type Item = Record<string, AttributeValue>;

/** Every item of one table at one moment, in a stable order. */
export interface TableSnapshot {
  /** The table's name. */
  readonly table: string;
  /** The partition key attribute name, then the sort key attribute name if the table has one. */
  readonly keyAttributes: readonly string[];
  /** Canonical items (see `normaliseValue`), sorted by key. */
  readonly items: readonly Item[];
}

/**
 * Builds a snapshot from scanned items: each item canonicalised, then sorted by partition
 * key and sort key (numbers numerically, strings and binaries by code unit and byte).
 */
export function createTableSnapshot(
  table: string,
  keyAttributes: readonly string[],
  items: readonly Item[],
): TableSnapshot {
  const canonical = items.map(normaliseItem);
  canonical.sort((a, b) => compareKeys(a, b, keyAttributes));
  return { table, keyAttributes: [...keyAttributes], items: canonical };
}

/** The key attributes of an item, in key schema order. */
export function itemKey(item: Item, keyAttributes: readonly string[]): Item {
  const key: Item = {};
  for (const name of keyAttributes) {
    const value = item[name];
    if (value !== undefined) key[name] = value;
  }
  return key;
}

/** A string that identifies an item by its key: equal keys give equal strings. */
export function keyId(item: Item, keyAttributes: readonly string[]): string {
  return JSON.stringify(keyAttributes.map((name) => toPlain(item[name])));
}

/** Canonicalises every attribute of an item (see `normaliseValue`), attribute names sorted. */
export function normaliseItem(item: Item): Item {
  const result: Item = {};
  for (const name of Object.keys(item).sort(compareStrings)) {
    result[name] = normaliseValue(item[name]!);
  }
  return result;
}

/**
 * Canonical form of a value: map entries sorted by name, set members sorted (numbers
 * numerically), recursively. Lists keep their order, which is data.
 */
export function normaliseValue(value: AttributeValue): AttributeValue {
  if (value.M !== undefined) return { M: normaliseItem(value.M) };
  if (value.L !== undefined) return { L: value.L.map(normaliseValue) };
  if (value.SS !== undefined) return { SS: [...value.SS].sort(compareStrings) };
  if (value.NS !== undefined) return { NS: [...value.NS].sort(compareNumbers) };
  if (value.BS !== undefined) return { BS: [...value.BS].sort(compareBytes) };
  return value;
}

/** Orders two items by their key attributes, in key schema order. */
export function compareKeys(a: Item, b: Item, keyAttributes: readonly string[]): number {
  for (const name of keyAttributes) {
    const order = compareScalars(a[name], b[name]);
    if (order !== 0) return order;
  }
  return 0;
}

/** Orders key values: by type (B, N, S), then numbers numerically, strings and binaries lexically. */
function compareScalars(a: AttributeValue | undefined, b: AttributeValue | undefined): number {
  const rank = (value: AttributeValue | undefined): number =>
    value === undefined
      ? 0
      : value.B !== undefined
        ? 1
        : value.N !== undefined
          ? 2
          : value.S !== undefined
            ? 3
            : 4;
  const byType = rank(a) - rank(b);
  if (byType !== 0 || a === undefined || b === undefined) return byType;
  if (a.N !== undefined && b.N !== undefined) return compareNumbers(a.N, b.N);
  if (a.S !== undefined && b.S !== undefined) return compareStrings(a.S, b.S);
  if (a.B !== undefined && b.B !== undefined) return compareBytes(a.B, b.B);
  return compareStrings(JSON.stringify(toPlain(a)), JSON.stringify(toPlain(b)));
}

/** Code unit order; deterministic and locale-free. */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Numeric order of DynamoDB number strings; equal doubles fall back to the text, so the order is total. */
export function compareNumbers(a: string, b: string): number {
  const difference = Number(a) - Number(b);
  return difference < 0 ? -1 : difference > 0 ? 1 : compareStrings(a, b);
}

/** Unsigned byte order. */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  return Buffer.compare(
    Buffer.from(a.buffer, a.byteOffset, a.byteLength),
    Buffer.from(b.buffer, b.byteOffset, b.byteLength),
  );
}

/** A JSON-safe form of a value (binaries as base64), for identities and fallbacks. */
function toPlain(value: AttributeValue | undefined): unknown {
  if (value === undefined) return null;
  if (value.B !== undefined) return { B: Buffer.from(value.B).toString('base64') };
  if (value.BS !== undefined) return { BS: value.BS.map((bytes) => Buffer.from(bytes).toString('base64')) };
  if (value.M !== undefined) {
    return { M: Object.fromEntries(Object.entries(value.M).map(([name, inner]) => [name, toPlain(inner)])) };
  }
  if (value.L !== undefined) return { L: value.L.map(toPlain) };
  return value;
}
