/**
 * The implementations compared, and how one "container" of each is built: its DynamoDB clients
 * (one for the deduplication layer, one for the user's own writes, so requests can be told
 * apart) and its handler, created once like a Lambda cold start.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DEFAULT_CONCURRENCY } from '../../lambda/core/options';
import type { BatchSchedule } from '../latency-model';
import type { BatchHandler, BenchTables, ClientRole } from '../workload';
import { createBareHandler } from './bare';
import { documentClient } from './document-client';
import { createHandWrittenHandler, type HandWrittenMode, type MirrorFingerprint } from './hand-written';
import { createPowertoolsHandler, type PowertoolsVariant } from './powertools';
import { createToolkitHandler, isToolkitModeAvailable, type ToolkitMode } from './toolkit';

/** One implementation under comparison. */
export interface Implementation {
  /** Stable id, used in the JSON output. */
  readonly id: string;
  /** Display name. */
  readonly label: string;
  readonly kind: 'bare' | 'toolkit' | 'powertools' | 'hand-written';
  /** The toolkit mode it runs (`kind: 'toolkit'`). */
  readonly mode?: ToolkitMode;
  /** The calls a hand-written baseline makes (`kind: 'hand-written'`). */
  readonly handWritten?: HandWrittenMode;
  /**
   * The toolkit modes a hand-written baseline may make the same calls as, the likeliest first
   * (`sameCallsBaseline` checks the traces to choose).
   */
  readonly sameCallsAs?: readonly ToolkitMode[];
  /** The Powertools configuration (`kind: 'powertools'`). */
  readonly powertools?: PowertoolsVariant;
  /**
   * A toolkit feature this row shows, for the targets that depend on it (a row whose toolkit
   * mode is not in this build is reported unavailable and those targets "not measured").
   */
  readonly feature?: ToolkitFeature;
  /** Only measured for CPU (the baselines of DESIGN.md's "same calls" CPU target). */
  readonly cpuOnly?: boolean;
  /** How it runs the records of a batch, for the latency model. */
  readonly schedule: BatchSchedule;
}

/** Toolkit features that targets depend on. */
export type ToolkitFeature = 'marker-on-business-item' | 'completed-record-cache';

/** The toolkit's engine: `concurrency` records at a time, FIFO groups in order (`lambda/core/batch-processor.ts`). */
const TOOLKIT_SCHEDULE: BatchSchedule = {
  concurrency: DEFAULT_CONCURRENCY,
  fifo: 'per-group',
  basis: `the toolkit's default \`concurrency\` (${DEFAULT_CONCURRENCY}, lambda/core/options.ts); FIFO groups in order, groups side by side`,
};

/** `Promise.all` over the batch; on FIFO, written to keep each group in order. */
const HAND_WRITTEN_SCHEDULE: BatchSchedule = {
  concurrency: Number.POSITIVE_INFINITY,
  fifo: 'per-group',
  basis:
    'every record at once (`Promise.all`); on a FIFO queue assumed written to keep each group in order, groups side by side',
};

/** One shared transaction per round of records: every record, or on FIFO the next of each group. */
const HAND_WRITTEN_BATCH_SCHEDULE: BatchSchedule = {
  concurrency: Number.POSITIVE_INFINITY,
  fifo: 'per-group',
  basis:
    "one TransactWriteItems for the batch's records (at most 100 actions each); on a FIFO queue one per round, " +
    'the next record of every group (modelled from its batch traces)',
};

/** `processPartialResponse` with `BatchProcessor`; on FIFO, `SqsFifoPartialProcessorAsync`. */
const POWERTOOLS_SCHEDULE: BatchSchedule = {
  concurrency: Number.POSITIVE_INFINITY,
  fifo: 'one-at-a-time',
  basis:
    'BatchProcessor: every record at once (`processInParallel` defaults to true); on a FIFO queue ' +
    'SqsFifoPartialProcessorAsync, which its docs prescribe for FIFO: one record at a time in batch order',
};

/** Every implementation the benchmark knows, in display order. */
export const IMPLEMENTATIONS: readonly Implementation[] = [
  { id: 'bare', label: 'bare handler (no dedup)', kind: 'bare', schedule: HAND_WRITTEN_SCHEDULE },
  {
    id: 'marker',
    label: 'effectively-once marker only',
    kind: 'toolkit',
    mode: 'marker',
    schedule: TOOLKIT_SCHEDULE,
  },
  {
    id: 'atomic',
    label: 'effectively-once atomic',
    kind: 'toolkit',
    mode: 'atomic',
    schedule: TOOLKIT_SCHEDULE,
  },
  {
    id: 'atomic-message',
    label: 'effectively-once atomic, per-message commit',
    kind: 'toolkit',
    mode: 'atomic-message',
    schedule: TOOLKIT_SCHEDULE,
  },
  {
    id: 'atomic-item',
    label: 'effectively-once atomic, marker on the business item',
    kind: 'toolkit',
    mode: 'atomic-item',
    feature: 'marker-on-business-item',
    schedule: TOOLKIT_SCHEDULE,
  },
  {
    id: 'entity',
    label: 'effectively-once entity',
    kind: 'toolkit',
    mode: 'entity',
    schedule: TOOLKIT_SCHEDULE,
  },
  {
    id: 'two-phase',
    label: 'effectively-once two-phase',
    kind: 'toolkit',
    mode: 'two-phase',
    schedule: TOOLKIT_SCHEDULE,
  },
  {
    id: 'entity-cached',
    label: 'effectively-once entity, completed-record cache on',
    kind: 'toolkit',
    mode: 'entity-cached',
    feature: 'completed-record-cache',
    schedule: TOOLKIT_SCHEDULE,
  },
  {
    id: 'powertools',
    label: 'Powertools idempotency (payload validation, no cache)',
    kind: 'powertools',
    powertools: { validatePayload: true, useLocalCache: false },
    schedule: POWERTOOLS_SCHEDULE,
  },
  {
    id: 'powertools-local-cache',
    label: 'Powertools idempotency, local cache on',
    kind: 'powertools',
    powertools: { validatePayload: true, useLocalCache: true },
    schedule: POWERTOOLS_SCHEDULE,
  },
  {
    id: 'powertools-no-validation',
    label: 'Powertools idempotency, no payload validation (its default)',
    kind: 'powertools',
    powertools: { validatePayload: false, useLocalCache: false },
    schedule: POWERTOOLS_SCHEDULE,
  },
  {
    id: 'manual-marker',
    label: 'hand-written, same calls as marker only',
    kind: 'hand-written',
    handWritten: 'marker',
    sameCallsAs: ['marker'],
    cpuOnly: true,
    schedule: HAND_WRITTEN_SCHEDULE,
  },
  {
    id: 'manual-atomic-batch',
    label: 'hand-written, same calls as atomic with batch commit (one transaction for the batch)',
    kind: 'hand-written',
    handWritten: 'atomic-batch',
    sameCallsAs: ['atomic'],
    cpuOnly: true,
    schedule: HAND_WRITTEN_BATCH_SCHEDULE,
  },
  {
    id: 'manual-atomic',
    label: 'hand-written, same calls as atomic with per-message commit',
    kind: 'hand-written',
    handWritten: 'atomic',
    sameCallsAs: ['atomic-message', 'atomic'],
    cpuOnly: true,
    schedule: HAND_WRITTEN_SCHEDULE,
  },
  {
    id: 'manual-atomic-item',
    label: 'hand-written, same calls as atomic with the marker on the business item',
    kind: 'hand-written',
    handWritten: 'atomic-item',
    sameCallsAs: ['atomic-item'],
    cpuOnly: true,
    schedule: HAND_WRITTEN_SCHEDULE,
  },
  {
    id: 'manual-entity',
    label: 'hand-written, same calls as entity',
    kind: 'hand-written',
    handWritten: 'entity',
    sameCallsAs: ['entity'],
    cpuOnly: true,
    schedule: HAND_WRITTEN_SCHEDULE,
  },
];

/**
 * The hand-written baseline making the same calls as a toolkit row, if there is one. Where
 * several may (atomic mode's default commit is per batch once the toolkit has batch commit, per
 * message before), `makesSameCalls` picks the one whose traced requests match; without it, or
 * when none matches, the likeliest.
 */
export function sameCallsBaseline(
  implementation: Implementation,
  makesSameCalls?: (baseline: Implementation) => boolean,
): Implementation | undefined {
  if (implementation.kind !== 'toolkit') return undefined;
  const candidates = IMPLEMENTATIONS.filter(
    (candidate) =>
      candidate.kind === 'hand-written' && candidate.sameCallsAs?.includes(implementation.mode!) === true,
  );
  return candidates.find((candidate) => makesSameCalls?.(candidate) ?? true) ?? candidates[0];
}

/** A built implementation: its handler and its two raw clients. */
export interface Container {
  readonly handler: BatchHandler;
  readonly clients: Readonly<Record<ClientRole, DynamoDBClient>>;
}

/** How a container is built: the toolkit's logging off (`quiet`, the default), a mirror's fingerprint. */
export interface ContainerOptions {
  readonly quiet?: boolean;
  /** What a hand-written baseline fingerprints (`body` unless set). */
  readonly mirrorFingerprint?: MirrorFingerprint;
}

/** Builds one container of `implementation` over two fresh clients from `makeClient`. */
export function createContainer(
  implementation: Implementation,
  makeClient: (role: ClientRole) => DynamoDBClient,
  tables: BenchTables,
  options: ContainerOptions = {},
): Container {
  const clients = { dedup: makeClient('dedup'), business: makeClient('business') };
  const business = documentClient(clients.business);
  let handler: BatchHandler;
  switch (implementation.kind) {
    case 'bare':
      handler = createBareHandler(business, tables);
      break;
    case 'powertools':
      handler = createPowertoolsHandler(
        { persistence: clients.dedup, business },
        tables,
        implementation.powertools,
      );
      break;
    case 'hand-written':
      handler = createHandWrittenHandler(
        implementation.handWritten!,
        business,
        tables,
        options.mirrorFingerprint,
      );
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
