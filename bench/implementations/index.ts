/**
 * The implementations compared, and how one "container" of each is built: its DynamoDB clients
 * (one for the deduplication layer, one for the user's own writes, so requests can be told
 * apart) and its handler, created once like a Lambda cold start.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { BatchHandler, BenchTables } from '../workload';
import { createBareHandler } from './bare';
import { documentClient } from './document-client';
import { createHandWrittenHandler, type HandWrittenMode } from './hand-written';
import { createPowertoolsHandler } from './powertools';
import { createToolkitHandler, isToolkitModeAvailable, type ToolkitMode } from './toolkit';

/** One implementation under comparison. */
export interface Implementation {
  /** Stable id, used in the JSON output. */
  readonly id: string;
  /** Display name. */
  readonly label: string;
  readonly kind: 'bare' | 'toolkit' | 'powertools' | 'hand-written';
  readonly mode?: ToolkitMode;
  /** Only measured for CPU (the baselines of DESIGN.md's "same calls" CPU target). */
  readonly cpuOnly?: boolean;
}

/** Every implementation the benchmark knows, in display order. */
export const IMPLEMENTATIONS: readonly Implementation[] = [
  { id: 'bare', label: 'bare handler (no dedup)', kind: 'bare' },
  { id: 'marker', label: 'effectively-once marker only', kind: 'toolkit', mode: 'marker' },
  { id: 'atomic', label: 'effectively-once atomic', kind: 'toolkit', mode: 'atomic' },
  { id: 'entity', label: 'effectively-once entity', kind: 'toolkit', mode: 'entity' },
  { id: 'two-phase', label: 'effectively-once two-phase', kind: 'toolkit', mode: 'two-phase' },
  { id: 'powertools', label: 'Powertools idempotency', kind: 'powertools' },
  {
    id: 'manual-marker',
    label: 'hand-written, same calls as marker only',
    kind: 'hand-written',
    mode: 'marker',
    cpuOnly: true,
  },
  {
    id: 'manual-atomic',
    label: 'hand-written, same calls as atomic',
    kind: 'hand-written',
    mode: 'atomic',
    cpuOnly: true,
  },
  {
    id: 'manual-entity',
    label: 'hand-written, same calls as entity',
    kind: 'hand-written',
    mode: 'entity',
    cpuOnly: true,
  },
];

/** The hand-written baseline making the same calls as a toolkit mode, if there is one. */
export function sameCallsBaseline(implementation: Implementation): Implementation | undefined {
  if (implementation.kind !== 'toolkit') return undefined;
  return IMPLEMENTATIONS.find(
    (candidate) => candidate.kind === 'hand-written' && candidate.mode === implementation.mode,
  );
}

/** Who sent a request: the deduplication layer, or the user's own code. */
export type ClientRole = 'dedup' | 'business';

/** A built implementation: its handler and its two raw clients. */
export interface Container {
  readonly handler: BatchHandler;
  readonly clients: Readonly<Record<ClientRole, DynamoDBClient>>;
}

/** Builds one container of `implementation` over two fresh clients from `makeClient`. */
export function createContainer(
  implementation: Implementation,
  makeClient: (role: ClientRole) => DynamoDBClient,
  tables: BenchTables,
  options: { readonly quiet?: boolean } = {},
): Container {
  const clients = { dedup: makeClient('dedup'), business: makeClient('business') };
  const business = documentClient(clients.business);
  let handler: BatchHandler;
  switch (implementation.kind) {
    case 'bare':
      handler = createBareHandler(business, tables);
      break;
    case 'powertools':
      handler = createPowertoolsHandler({ persistence: clients.dedup, business }, tables);
      break;
    case 'hand-written':
      handler = createHandWrittenHandler(implementation.mode as HandWrittenMode, business, tables);
      break;
    case 'toolkit':
      handler = createToolkitHandler(
        implementation.mode!,
        { toolkit: documentClient(clients.dedup), business },
        tables,
        options.quiet ?? true,
      );
      break;
  }
  return { handler, clients };
}

/** The implementations this build of the toolkit supports (two-phase only once it exists). */
export function availableImplementations(
  makeClient: (role: ClientRole) => DynamoDBClient,
  tables: BenchTables,
): { readonly available: Implementation[]; readonly missing: Implementation[] } {
  const available: Implementation[] = [];
  const missing: Implementation[] = [];
  for (const implementation of IMPLEMENTATIONS) {
    const ok =
      implementation.kind !== 'toolkit' ||
      isToolkitModeAvailable(
        implementation.mode!,
        { toolkit: documentClient(makeClient('dedup')), business: documentClient(makeClient('business')) },
        tables,
      );
    (ok ? available : missing).push(implementation);
  }
  return { available, missing };
}
