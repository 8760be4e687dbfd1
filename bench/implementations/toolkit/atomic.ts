/**
 * The toolkit in atomic mode: the business item committed with the marker in one transaction.
 * By default (batch commit, once the toolkit has it) the messages that reach their commit
 * together share one `TransactWriteItems`; `commit: 'message'` gives each message its own.
 */
import { createSqsHandler } from '../../../lambda';
import { atomic } from '../../../lambda/modes/atomic';
import type { BatchHandler, BenchTables, OrderEvent } from '../../workload';
import { orderItemOf } from '../../workload';
import { commonOptions, type ToolkitClients } from './common';

/** How atomic mode commits a batch's messages: shared transactions, or one each. */
export type AtomicCommit = 'batch' | 'message';

/** Creates the atomic-mode handler; `commit` unset leaves the toolkit's default. */
export function createAtomicHandler(
  clients: ToolkitClients,
  tables: BenchTables,
  quiet = true,
  commit?: AtomicCommit,
): BatchHandler {
  // Held in a variable, not written as a literal: a toolkit without the `commit` option ignores
  // it at run time (it commits per message, its only behaviour), and a variable is not held to
  // the literal's excess-property check, so this type-checks before and after the option exists.
  const options = commit === undefined ? undefined : ({ marker: 'inbox', commit } as const);
  return createSqsHandler<OrderEvent>({
    ...commonOptions(clients, tables, quiet),
    mode: atomic((message, unitOfWork) => {
      unitOfWork.put({ TableName: tables.orders, Item: orderItemOf(message.body) });
    }, options),
  });
}
