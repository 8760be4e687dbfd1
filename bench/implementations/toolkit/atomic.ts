/** The toolkit in atomic mode: the business item committed with the marker in one transaction. */
import { createSqsHandler } from '../../../lambda';
import { atomic } from '../../../lambda/modes/atomic';
import type { BatchHandler, BenchTables, OrderEvent } from '../../workload';
import { orderItemOf } from '../../workload';
import { commonOptions, type ToolkitClients } from './common';

/** Creates the atomic-mode handler. */
export function createAtomicHandler(
  clients: ToolkitClients,
  tables: BenchTables,
  quiet = true,
): BatchHandler {
  return createSqsHandler<OrderEvent>({
    ...commonOptions(clients, tables, quiet),
    mode: atomic((message, unitOfWork) => {
      unitOfWork.put({ TableName: tables.orders, Item: orderItemOf(message.body) });
    }),
  });
}
