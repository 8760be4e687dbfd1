/**
 * The toolkit in atomic mode committing each message on its own (`commit: 'message'`): one
 * `TransactWriteItems` per message, the messages side by side, as atomic mode did before batch
 * commit became its default.
 */
import type { BatchHandler, BenchTables } from '../../workload';
import { createAtomicHandler } from './atomic';
import type { ToolkitClients } from './common';

/** Creates the atomic-mode handler that commits each message in its own transaction. */
export function createAtomicMessageHandler(
  clients: ToolkitClients,
  tables: BenchTables,
  quiet = true,
): BatchHandler {
  return createAtomicHandler(clients, tables, quiet, 'message');
}
