/**
 * The toolkit in atomic mode with the marker on the business item (`marker: 'item'`): the order
 * item the message creates carries the marker's condition and fingerprint, and the transaction
 * has no inbox record.
 */
import { createSqsHandler } from '../../../lambda';
import { atomic } from '../../../lambda/modes/atomic';
import type { BatchHandler, BenchTables, OrderEvent } from '../../workload';
import { orderItemOf } from '../../workload';
import { commonOptions, type ToolkitClients } from './common';

/** Creates the atomic-mode handler whose order item is its marker. */
export function createAtomicItemHandler(
  clients: ToolkitClients,
  tables: BenchTables,
  quiet = true,
): BatchHandler {
  return createSqsHandler<OrderEvent>({
    ...commonOptions(clients, tables, quiet),
    mode: atomic(
      (message, unitOfWork) => {
        unitOfWork.putAsMarker({
          TableName: tables.orders,
          Item: orderItemOf(message.body),
          keyAttribute: 'pk',
        });
      },
      { marker: 'item' },
    ),
  });
}
