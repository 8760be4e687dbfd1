/**
 * This toolkit in each of its modes, doing the benchmark's business write. Each mode's handler
 * lives in its own module under `toolkit/`, so a handler bundle carries one mode, as a user's
 * would; this module picks one by name for the in-process measurements.
 */
import type { BatchHandler, BenchTables } from '../workload';
import { createAtomicHandler } from './toolkit/atomic';
import { createAtomicItemHandler } from './toolkit/atomic-item';
import { createAtomicMessageHandler } from './toolkit/atomic-message';
import type { ToolkitClients } from './toolkit/common';
import { createEntityHandler } from './toolkit/entity';
import { createEntityCachedHandler } from './toolkit/entity-cached';
import { createMarkerHandler } from './toolkit/marker';
import { createTwoPhaseHandler } from './toolkit/two-phase';

export type { ToolkitClients } from './toolkit/common';

/** The toolkit handlers the benchmark knows. */
export type ToolkitMode =
  | 'marker'
  | 'atomic'
  | 'atomic-message'
  | 'entity'
  | 'two-phase'
  | 'entity-cached'
  | 'atomic-item';

/** Each mode's handler: the module under `implementations/` and the factory it exports (for bundles). */
export const TOOLKIT_HANDLERS: Readonly<
  Record<
    ToolkitMode,
    {
      readonly module: string;
      readonly factory: string;
      readonly create: (clients: ToolkitClients, tables: BenchTables, quiet?: boolean) => BatchHandler;
    }
  >
> = {
  marker: { module: './toolkit/marker', factory: 'createMarkerHandler', create: createMarkerHandler },
  atomic: { module: './toolkit/atomic', factory: 'createAtomicHandler', create: createAtomicHandler },
  'atomic-message': {
    module: './toolkit/atomic-message',
    factory: 'createAtomicMessageHandler',
    create: createAtomicMessageHandler,
  },
  entity: { module: './toolkit/entity', factory: 'createEntityHandler', create: createEntityHandler },
  'two-phase': {
    module: './toolkit/two-phase',
    factory: 'createTwoPhaseHandler',
    create: createTwoPhaseHandler,
  },
  'atomic-item': {
    module: './toolkit/atomic-item',
    factory: 'createAtomicItemHandler',
    create: createAtomicItemHandler,
  },
  'entity-cached': {
    module: './toolkit/entity-cached',
    factory: 'createEntityCachedHandler',
    create: createEntityCachedHandler,
  },
};

/** Creates the toolkit's handler in `mode`. Throws `INVALID_OPTIONS` for a mode it does not accept. */
export function createToolkitHandler(
  mode: ToolkitMode,
  clients: ToolkitClients,
  tables: BenchTables,
  quiet = true,
): BatchHandler {
  return TOOLKIT_HANDLERS[mode].create(clients, tables, quiet);
}

/** True when the toolkit accepts `mode` (a row for a feature still being built stays listed, unavailable). */
export function isToolkitModeAvailable(
  mode: ToolkitMode,
  clients: ToolkitClients,
  tables: BenchTables,
): boolean {
  try {
    createToolkitHandler(mode, clients, tables);
    return true;
  } catch {
    return false;
  }
}
