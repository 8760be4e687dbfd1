/**
 * Human and machine renderings of a double-tap result. Pure.
 */

import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { Difference } from './diff';
import type { Item, TableSnapshot } from './snapshot';

/** What the renderings need from a result. */
export interface ReplaySummary {
  /** Messages in the log (sent once per replay). */
  readonly messages: number;
  /** The tables after the first replay. */
  readonly firstSnapshot: readonly TableSnapshot[];
  /** The tables after the second replay. */
  readonly secondSnapshot: readonly TableSnapshot[];
  /** What the second replay changed; empty when the consumer is idempotent. */
  readonly differences: readonly Difference[];
}

/** Options of `formatDifferences`. */
export interface FormatOptions {
  /**
   * Longest rendering of one value, in characters; longer ones are cut with a note of
   * how much was left out.
   * @default 200
   */
  readonly maxValueLength?: number;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Renders differences for people, grouped by item:
 *
 * ```text
 * orders {pk: "order-1"}
 *   ~ processedAt: 1700000000123 -> 1700000000456
 *   + retries: 1
 * orders {pk: "order-9"}
 *   + item added: {pk: "order-9", total: 3}
 * ```
 *
 * `~` marks a changed value, `+` an added one, `-` a removed one. Returns `No differences.`
 * for an empty list.
 */
export function formatDifferences(differences: readonly Difference[], options: FormatOptions = {}): string {
  if (differences.length === 0) return 'No differences.';
  const max = options.maxValueLength ?? 200;
  const value = (attribute: AttributeValue | undefined): string => truncate(formatValue(attribute), max);
  const lines: string[] = [];
  let heading = '';
  for (const difference of differences) {
    const itemHeading = `${difference.table} ${formatItem(difference.key)}`;
    if (itemHeading !== heading) {
      lines.push(itemHeading);
      heading = itemHeading;
    }
    switch (difference.change) {
      case 'item-added':
        lines.push(`  + item added: ${value(difference.after)}`);
        break;
      case 'item-removed':
        lines.push(`  - item removed: ${value(difference.before)}`);
        break;
      case 'added':
        lines.push(`  + ${difference.path}: ${value(difference.after)}`);
        break;
      case 'removed':
        lines.push(`  - ${difference.path}: ${value(difference.before)}`);
        break;
      case 'changed':
        lines.push(`  ~ ${difference.path}: ${value(difference.before)} -> ${value(difference.after)}`);
        break;
    }
  }
  return lines.join('\n');
}

/**
 * The one-line verdict, for example
 * `PASS: replaying 3 messages a second time changed nothing in table orders (2 items).` or
 * `FAIL: replaying 3 messages a second time changed 2 items and added 1 item in table orders (4 differences).`
 */
export function formatVerdict(summary: ReplaySummary): string {
  const replay = `replaying ${count(summary.messages, 'message')} a second time`;
  const { differences } = summary;
  if (differences.length === 0) {
    const names = summary.secondSnapshot.map((snapshot) => snapshot.table);
    const items = summary.secondSnapshot.reduce((total, snapshot) => total + snapshot.items.length, 0);
    return `PASS: ${replay} changed nothing in ${tables(names)} (${count(items, 'item')}).`;
  }
  const changedItems = new Set<string>();
  let added = 0;
  let removed = 0;
  for (const difference of differences) {
    if (difference.change === 'item-added') added++;
    else if (difference.change === 'item-removed') removed++;
    else changedItems.add(`${difference.table}\u0000${JSON.stringify(difference.key, base64Binary)}`);
  }
  const effects = [
    changedItems.size > 0 ? `changed ${count(changedItems.size, 'item')}` : '',
    added > 0 ? `added ${count(added, 'item')}` : '',
    removed > 0 ? `removed ${count(removed, 'item')}` : '',
  ].filter((effect) => effect !== '');
  const names = [...new Set(differences.map((difference) => difference.table))];
  return `FAIL: ${replay} ${list(effects)} in ${tables(names)} (${count(differences.length, 'difference')}).`;
}

/**
 * The `--json` report: verdict, counts per table and every difference, values in
 * DynamoDB JSON (binaries as base64, as the AWS CLI prints them). Ends with a newline.
 */
export function formatJsonReport(summary: ReplaySummary): string {
  const secondCounts = new Map(
    summary.secondSnapshot.map((snapshot) => [snapshot.table, snapshot.items.length]),
  );
  const report = {
    changed: summary.differences.length > 0,
    verdict: formatVerdict(summary),
    messages: summary.messages,
    tables: summary.firstSnapshot.map((snapshot) => ({
      table: snapshot.table,
      itemsAfterFirstReplay: snapshot.items.length,
      itemsAfterSecondReplay: secondCounts.get(snapshot.table) ?? 0,
    })),
    differences: summary.differences,
  };
  return `${JSON.stringify(report, base64Binary, 2)}\n`;
}

/**
 * Renders a DynamoDB value compactly: strings quoted, numbers bare, maps `{a: 1}`, lists
 * `[1, 2]`, sets `<<"a", "b">>` (PartiQL's notation), binaries `<base64 AAEC>`.
 */
export function formatValue(value: AttributeValue | undefined): string {
  if (value === undefined) return '(none)';
  if (value.S !== undefined) return JSON.stringify(value.S);
  if (value.N !== undefined) return value.N;
  if (value.BOOL !== undefined) return String(value.BOOL);
  if (value.NULL !== undefined) return 'null';
  if (value.B !== undefined) return formatBinary(value.B);
  if (value.SS !== undefined) return `<<${value.SS.map((member) => JSON.stringify(member)).join(', ')}>>`;
  if (value.NS !== undefined) return `<<${value.NS.join(', ')}>>`;
  if (value.BS !== undefined) return `<<${value.BS.map(formatBinary).join(', ')}>>`;
  if (value.L !== undefined) return `[${value.L.map(formatValue).join(', ')}]`;
  if (value.M !== undefined) return formatItem(value.M);
  return JSON.stringify(value);
}

/** Renders an item or a key: `{pk: "order-1", sk: 2}`. */
export function formatItem(item: Item): string {
  const entries = Object.entries(item).map(
    ([name, inner]) => `${IDENTIFIER.test(name) ? name : JSON.stringify(name)}: ${formatValue(inner)}`,
  );
  return `{${entries.join(', ')}}`;
}

function formatBinary(bytes: Uint8Array): string {
  return `<base64 ${Buffer.from(bytes).toString('base64')}>`;
}

function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}... (${text.length - max} more characters)`;
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

function tables(names: readonly string[]): string {
  return `${names.length === 1 ? 'table' : 'tables'} ${names.join(', ')}`;
}

function list(parts: readonly string[]): string {
  if (parts.length <= 1) return parts.join('');
  return `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}`;
}

function base64Binary(_name: string, value: unknown): unknown {
  return value instanceof Uint8Array ? Buffer.from(value).toString('base64') : value;
}
