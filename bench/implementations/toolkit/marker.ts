/** The toolkit in marker-only mode: the marker first, then the user's own business write. */
import { createSqsHandler } from '../../../lambda';
import { marker } from '../../../lambda/modes/marker';
import type { BatchHandler, BenchTables, OrderEvent } from '../../workload';
import { businessWriter, commonOptions, type ToolkitClients } from './common';

/** Creates the marker-mode handler. */
export function createMarkerHandler(
  clients: ToolkitClients,
  tables: BenchTables,
  quiet = true,
): BatchHandler {
  const putBusinessItem = businessWriter(clients, tables);
  return createSqsHandler<OrderEvent>({
    ...commonOptions(clients, tables, quiet),
    mode: marker((message) => putBusinessItem(message.body)),
  });
}
