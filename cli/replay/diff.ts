/**
 * Field-level differences between two snapshots of the same tables. Pure.
 */

import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import {
  compareKeys,
  compareStrings,
  type Item,
  itemKey,
  keyId,
  normaliseValue,
  type TableSnapshot,
} from './snapshot';

/**
 * How a value differs between the first and the second snapshot.
 * - `item-added` / `item-removed`: a whole item appeared or disappeared (`path` is `''`).
 * - `added` / `removed`: an attribute, map entry or list element appeared or disappeared.
 * - `changed`: a value at `path` differs (including a change of type).
 */
export type ChangeKind = 'item-added' | 'item-removed' | 'added' | 'removed' | 'changed';

/** One difference between the state after the first replay and after the second. */
export interface Difference {
  /** The table the item is in. */
  readonly table: string;
  /** The key attributes of the item (DynamoDB JSON). */
  readonly key: Item;
  /** What changed between the replays. */
  readonly change: ChangeKind;
  /**
   * Where in the item: `processedAt`, `address.city`, `lines[2].qty`; names that are not
   * plain identifiers are quoted, `["order.id"]`. Empty for `item-added` and `item-removed`.
   */
  readonly path: string;
  /** The value after the first replay; absent for `item-added` and `added`. Whole items are `{ M: item }`. */
  readonly before?: AttributeValue;
  /** The value after the second replay; absent for `item-removed` and `removed`. */
  readonly after?: AttributeValue;
}

/**
 * Every difference between two snapshots of the same tables, table by table (in the
 * order of `first`), item by item in key order, attribute by attribute in name order.
 * A table present in only one of the snapshots contributes all its items as added or removed.
 */
export function diffSnapshots(
  first: readonly TableSnapshot[],
  second: readonly TableSnapshot[],
): Difference[] {
  const seconds = new Map(second.map((snapshot) => [snapshot.table, snapshot]));
  const differences: Difference[] = [];
  for (const before of first) {
    const after = seconds.get(before.table) ?? { ...before, items: [] };
    differences.push(...diffTable(before, after));
    seconds.delete(before.table);
  }
  for (const after of seconds.values()) differences.push(...diffTable({ ...after, items: [] }, after));
  return differences;
}

/** Every difference between two snapshots of one table (see `diffSnapshots`). */
export function diffTable(first: TableSnapshot, second: TableSnapshot): Difference[] {
  const keys = first.keyAttributes;
  const afterById = new Map(second.items.map((item) => [keyId(item, keys), item]));
  const beforeIds = new Set(first.items.map((item) => keyId(item, keys)));
  const differences: Difference[] = [];

  const entries: Array<{ before?: Item; after?: Item }> = [
    ...first.items.map((before) => {
      const after = afterById.get(keyId(before, keys));
      return after === undefined ? { before } : { before, after };
    }),
    ...second.items.filter((after) => !beforeIds.has(keyId(after, keys))).map((after) => ({ after })),
  ];
  entries.sort((a, b) => compareKeys((a.before ?? a.after)!, (b.before ?? b.after)!, keys));

  for (const { before, after } of entries) {
    const key = itemKey((before ?? after)!, keys);
    const at = { table: first.table, key };
    if (before === undefined)
      differences.push({ ...at, change: 'item-added', path: '', after: { M: after! } });
    else if (after === undefined)
      differences.push({ ...at, change: 'item-removed', path: '', before: { M: before } });
    else diffMaps(before, after, '', (change) => differences.push({ ...at, ...change }));
  }
  return differences;
}

type Change = Pick<Difference, 'change' | 'path' | 'before' | 'after'>;

function diffMaps(before: Item, after: Item, path: string, report: (change: Change) => void): void {
  const names = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort(compareStrings);
  for (const name of names) {
    diffValues(before[name], after[name], joinName(path, name), report);
  }
}

function diffValues(
  before: AttributeValue | undefined,
  after: AttributeValue | undefined,
  path: string,
  report: (change: Change) => void,
): void {
  if (before === undefined && after === undefined) return;
  if (before === undefined) {
    report({ change: 'added', path, after: after! });
  } else if (after === undefined) {
    report({ change: 'removed', path, before });
  } else if (before.M !== undefined && after.M !== undefined) {
    diffMaps(before.M, after.M, path, report);
  } else if (before.L !== undefined && after.L !== undefined) {
    const length = Math.max(before.L.length, after.L.length);
    for (let index = 0; index < length; index++) {
      diffValues(before.L[index], after.L[index], `${path}[${index}]`, report);
    }
  } else if (!isSameValue(before, after)) {
    report({ change: 'changed', path, before, after });
  }
}

/** Equality of two non-container values of any type; sets compare as sets. */
function isSameValue(a: AttributeValue, b: AttributeValue): boolean {
  return canonicalText(normaliseValue(a)) === canonicalText(normaliseValue(b));
}

function canonicalText(value: AttributeValue): string {
  return JSON.stringify(value, (_name, inner: unknown) =>
    inner instanceof Uint8Array ? Buffer.from(inner).toString('base64') : inner,
  );
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Appends an attribute or map entry name to a path, quoting names that are not plain identifiers. */
export function joinName(path: string, name: string): string {
  if (!IDENTIFIER.test(name)) return `${path}[${JSON.stringify(name)}]`;
  return path === '' ? name : `${path}.${name}`;
}
