/**
 * What the construct grants, against what a simulation's requests needed: every request the
 * runtime sends must be allowed by `IdempotentConsumer`'s (and `IdempotentStreamConsumer`'s)
 * grants in the seed's mode.
 */
import {
  BUSINESS_TABLE_ACTIONS,
  defaultBusinessTableAccess,
  INBOX_TABLE_ACTIONS,
} from '../../../lib/consumer-permissions';
import { OUTBOX_WRITER_ACTIONS } from '../../../lib/outbox/construct';
import type { Mode } from './simulation';

/**
 * The actions `used` (IAM actions by table) holds that the construct does not grant its function
 * in `mode` (inbox table: `INBOX_TABLE_ACTIONS`; business table: the default access; the outbox
 * table, for a consumer given `outbox`: what `Outbox` grants a writer), each as
 * `<action> on <table>`.
 */
export function ungrantedActions(
  options: {
    readonly mode: Mode;
    readonly inboxTable: string;
    readonly businessTable: string;
    readonly outboxTable?: string;
  },
  used: ReadonlyMap<string, ReadonlySet<string>>,
): string[] {
  const granted = new Map<string, readonly string[]>([
    [options.inboxTable, INBOX_TABLE_ACTIONS[options.mode]],
    [
      options.businessTable,
      defaultBusinessTableAccess(options.mode).flatMap((access) => BUSINESS_TABLE_ACTIONS[access]),
    ],
    ...(options.outboxTable === undefined ? [] : [[options.outboxTable, OUTBOX_WRITER_ACTIONS] as const]),
  ]);
  return [...used].flatMap(([table, actions]) =>
    [...actions]
      .filter((action) => !granted.get(table)?.includes(action))
      .map((action) => `${action} on ${table === options.inboxTable ? 'the inbox' : table}`),
  );
}
