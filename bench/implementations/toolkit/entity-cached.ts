/**
 * The toolkit in entity mode with the completed-record cache on: a duplicate of a message this
 * container completed is acknowledged from memory, with no request.
 */
import { createSqsHandler } from '../../../lambda';
import { entity } from '../../../lambda/modes/entity';
import type { BatchHandler, BenchTables, OrderEvent } from '../../workload';
import { orderItemOf } from '../../workload';
import { commonOptions, type ToolkitClients } from './common';

/** Entries the cache keeps: Powertools' local cache default (`maxLocalCacheSize`), for parity. */
const CACHE_ENTRIES = 1000;

/** Creates the entity-mode handler with the completed-record cache on. */
export function createEntityCachedHandler(
  clients: ToolkitClients,
  tables: BenchTables,
  quiet = true,
): BatchHandler {
  return createSqsHandler<OrderEvent>({
    ...commonOptions(clients, tables, quiet),
    completedCache: { maxEntries: CACHE_ENTRIES },
    mode: entity((message) => ({
      tableName: tables.orders,
      keyAttribute: 'pk',
      item: orderItemOf(message.body),
    })),
  });
}
