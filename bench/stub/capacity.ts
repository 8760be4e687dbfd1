/**
 * DynamoDB capacity from the documented formula, computed by the stub for every request it
 * answers. Standard (on-demand: request units; provisioned: capacity units, same numbers):
 *
 * - item size = the sum of UTF-8 attribute name lengths and value sizes (String: UTF-8 bytes;
 *   Number: 1 byte per two significant digits + 1; Boolean/Null: 1; Binary: bytes;
 *   List/Map: 3 bytes + elements + 1 byte per element; sets: the elements);
 * - a write (PutItem, UpdateItem, DeleteItem) costs 1 write unit per started KB of the larger
 *   of the item before and after the write, at least 1;
 * - a write whose condition fails still costs 1 per started KB of the existing item, at least 1
 *   (AWS developer guide, "Capacity units consumed by conditional writes");
 * - every item of a committed `TransactWriteItems` costs 2x (prepare + commit);
 * - a cancelled `TransactWriteItems`: not documented; this benchmark charges the prepare phase
 *   only, 1x per item (an assumption, stated in the output);
 * - a strongly consistent read costs 1 read unit per started 4 KB, at least 1 (also when the
 *   item does not exist); an eventually consistent read half of that.
 */
import type { AttributeValue, Item } from './expressions';

/** The formula, as printed in the benchmark's output. */
export const CAPACITY_FORMULA =
  'write units = max(1, ceil(item KB)) per item written, using the larger of the item before and ' +
  'after; a failed condition costs max(1, ceil(existing item KB)); items of a committed ' +
  'TransactWriteItems cost 2x; a cancelled transaction is charged 1x per item (prepare only: ' +
  'undocumented, assumed); strongly consistent reads cost max(1, ceil(item KB / 4)) read units.';

function numberSize(text: string): number {
  const digits = text.replace(/^-/, '').replace('.', '').replace(/e.*$/i, '');
  const significant = digits.replace(/^0+/, '').replace(/0+$/, '');
  return Math.ceil(Math.max(significant.length, 1) / 2) + 1;
}

/** Size in bytes of one attribute value in wire form. */
export function valueSize(value: AttributeValue): number {
  const [type, content] = Object.entries(value)[0] ?? [];
  switch (type) {
    case 'S':
      return Buffer.byteLength(String(content), 'utf8');
    case 'N':
      return numberSize(String(content));
    case 'B':
      return typeof content === 'string' ? Buffer.from(content, 'base64').length : 0;
    case 'BOOL':
    case 'NULL':
      return 1;
    case 'SS':
      return (content as string[]).reduce((sum, s) => sum + Buffer.byteLength(s, 'utf8'), 0);
    case 'NS':
      return (content as string[]).reduce((sum, n) => sum + numberSize(n), 0);
    case 'L':
      return (content as AttributeValue[]).reduce((sum, element) => sum + 1 + valueSize(element), 3);
    case 'M':
      return 3 + itemSize(content as Item, 1);
    default:
      return 0;
  }
}

/** Size in bytes of an item in wire form (`perAttribute`: 1 inside a map, 0 at the top level). */
export function itemSize(item: Item | undefined, perAttribute = 0): number {
  if (!item) return 0;
  let size = 0;
  for (const [name, value] of Object.entries(item)) {
    size += perAttribute + Buffer.byteLength(name, 'utf8') + valueSize(value);
  }
  return size;
}

/** Write units of one standard write touching items of these sizes (before, after). */
export function writeUnits(...sizes: number[]): number {
  return Math.max(1, Math.ceil(Math.max(0, ...sizes) / 1024));
}

/** Write units of one item in a committed transaction. */
export function transactionalWriteUnits(...sizes: number[]): number {
  return 2 * writeUnits(...sizes);
}

/** Read units of one read of an item of `size` bytes (0: the item does not exist). */
export function readUnits(size: number, consistent: boolean): number {
  const units = Math.max(1, Math.ceil(size / 4096));
  return consistent ? units : units / 2;
}
