/**
 * What the construct grants, against what a simulation's requests needed, both ways: every
 * request the runtime sends must be allowed by `IdempotentConsumer`'s (and
 * `IdempotentStreamConsumer`'s) grants in the seed's mode, and every action granted on a table
 * the runtime owns (the inbox table, the outbox table) must be one some request needed.
 */
import {
  BUSINESS_TABLE_ACTIONS,
  defaultBusinessTableAccess,
  INBOX_TABLE_ACTIONS,
} from '../../../lib/consumer-permissions';
import { OUTBOX_WRITER_ACTIONS } from '../../../lib/outbox/construct';
import type { Mode } from './simulation';

/** The tables of a consumer in a simulation, by the names the simulation gave them. */
export interface GrantTables {
  readonly mode: Mode;
  readonly inboxTable: string;
  readonly businessTable: string;
  /** The outbox table, for a consumer given `outbox`. */
  readonly outboxTable?: string;
}

/**
 * The actions the construct grants its function in `mode`, by table: the inbox table
 * `INBOX_TABLE_ACTIONS`, the business table its default access, the outbox table (for a consumer
 * given `outbox`) what `Outbox` grants a writer.
 */
export function grantedActions(options: GrantTables): Map<string, readonly string[]> {
  return new Map<string, readonly string[]>([
    [options.inboxTable, INBOX_TABLE_ACTIONS[options.mode]],
    [
      options.businessTable,
      defaultBusinessTableAccess(options.mode).flatMap((access) => BUSINESS_TABLE_ACTIONS[access]),
    ],
    ...(options.outboxTable === undefined ? [] : [[options.outboxTable, OUTBOX_WRITER_ACTIONS] as const]),
  ]);
}

function tableLabel(options: GrantTables, table: string): string {
  if (table === options.inboxTable) return 'the inbox';
  if (table === options.outboxTable) return 'the outbox';
  return table;
}

/**
 * The actions `used` (IAM actions by table) holds that the construct does not grant its function
 * in `mode` (see `grantedActions`), each as `<action> on <table>`.
 */
export function ungrantedActions(
  options: GrantTables,
  used: ReadonlyMap<string, ReadonlySet<string>>,
  granted: ReadonlyMap<string, readonly string[]> = grantedActions(options),
): string[] {
  return [...used].flatMap(([table, actions]) =>
    [...actions]
      .filter((action) => !granted.get(table)?.includes(action))
      .map((action) => `${action} on ${tableLabel(options, table)}`),
  );
}

/**
 * The actions the construct grants on the tables the runtime owns (the inbox and the outbox)
 * that no request in `used` needed, each as `<action> on <table>`: a grant no outcome uses is
 * one too many. `used` should be the union over runs that reach every outcome of the mode. The
 * business table is left out: what is done there is the handler's (its `access` is the user's
 * choice, `read` and `write` by default), not the runtime's.
 */
export function unusedGrants(
  options: GrantTables,
  used: ReadonlyMap<string, ReadonlySet<string>>,
  granted: ReadonlyMap<string, readonly string[]> = grantedActions(options),
): string[] {
  const owned = [options.inboxTable, ...(options.outboxTable === undefined ? [] : [options.outboxTable])];
  return owned.flatMap((table) =>
    (granted.get(table) ?? [])
      .filter((action) => !used.get(table)?.has(action))
      .map((action) => `${action} on ${tableLabel(options, table)}`),
  );
}

/** Adds every action of `from` (IAM actions by table) to `into`. */
export function mergeActions(
  into: Map<string, Set<string>>,
  from: ReadonlyMap<string, ReadonlySet<string>>,
): void {
  for (const [table, actions] of from) {
    const set = into.get(table) ?? new Set<string>();
    for (const action of actions) set.add(action);
    into.set(table, set);
  }
}
