/** The toolkit in entity mode: the business item is the marker (one conditional put). */
import { createSqsHandler } from '../../../lambda';
import { entity } from '../../../lambda/modes/entity';
import type { BatchHandler, BenchTables, OrderEvent } from '../../workload';
import { orderItemOf } from '../../workload';
import { commonOptions, type ToolkitClients } from './common';

/** Creates the entity-mode handler. */
export function createEntityHandler(
  clients: ToolkitClients,
  tables: BenchTables,
  quiet = true,
): BatchHandler {
  return createSqsHandler<OrderEvent>({
    ...commonOptions(clients, tables, quiet),
    mode: entity((message) => ({
      tableName: tables.orders,
      keyAttribute: 'pk',
      item: orderItemOf(message.body),
    })),
  });
}
