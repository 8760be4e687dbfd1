/** The toolkit in two-phase mode: claim, the user's own business write, complete. */
import { createSqsHandler } from '../../../lambda';
import { twoPhase } from '../../../lambda/modes/two-phase';
import type { BatchHandler, BenchTables, OrderEvent } from '../../workload';
import { businessWriter, commonOptions, type ToolkitClients } from './common';

/** Creates the two-phase handler. */
export function createTwoPhaseHandler(
  clients: ToolkitClients,
  tables: BenchTables,
  quiet = true,
): BatchHandler {
  const putBusinessItem = businessWriter(clients, tables);
  return createSqsHandler<OrderEvent>({
    ...commonOptions(clients, tables, quiet),
    // The effect outside the commit runs through `effects.run`: claim, effect, complete.
    mode: twoPhase({
      handle: (message, effects) => effects.run('order-item', () => putBusinessItem(message.body)),
    }),
  });
}
