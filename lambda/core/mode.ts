/**
 * The port between the engine and a mode. The engine (`batch-processor.ts`) prepares each message,
 * schedules it, logs its outcome and answers the batch; a mode (one module per mode under
 * `lambda/modes/`) decides what one prepared message does against the store. The engine knows
 * no mode: it asks the mode for its name, the store capability it needs, a processor built from
 * the common settings, and, per message, the facts of its step.
 */
import type { OutboxDestinationKind } from './contract';
import { expectOption } from './errors';
import type { LogEntry } from './logger';
import type { Message } from './message';
import type { Outcome } from './outcome';
import type { Clock } from './time';

/** The name of a mode, as logs, metrics and the construct's `mode` setting spell it. */
export type ModeName = 'marker' | 'atomic' | 'entity' | 'two-phase';

/**
 * The store capability a mode needs (the ports in `store-port.ts`): `entity` needs no inbox
 * table, every other capability does.
 */
export type StoreCapability = 'marker' | 'atomic' | 'entity' | 'lease';

/**
 * Defaults an entry point's environment supplies to a mode; a mode's own option wins over them.
 * Only two-phase reads them today.
 */
export interface ModeDefaults {
  /**
   * The lease of a claim: `EO_LEASE_MILLIS` through `createSqsHandler` (the construct sets the
   * function timeout), the visibility timeout in `createSqsWorker`.
   */
  readonly leaseMillis?: number;
  /** Extend leases while an effect runs: `true` in `createSqsWorker` while its visibility heartbeat is on. */
  readonly heartbeat?: boolean;
  /**
   * The outbox atomic mode's `unitOfWork.emit` writes to: `EO_OUTBOX_TABLE_NAME` and
   * `EO_OUTBOX_RETENTION_SECONDS`, which the construct's `outbox` prop sets.
   */
  readonly outbox?: OutboxDefaults;
}

/** The outbox the construct configured (see {@link ModeDefaults.outbox}). */
export interface OutboxDefaults {
  /** The outbox table `emit` puts items in. */
  readonly tableName: string;
  /** Seconds an outbox item is kept. */
  readonly retentionSeconds?: number;
  /** Where the relay publishes, whose size limit an event must fit. */
  readonly destinationKind?: OutboxDestinationKind;
  /** The `Source` of the relay's EventBridge entries (`eventbridge` only), counted in their size. */
  readonly eventSource?: string;
  /** Whether the relay's queue or topic is FIFO: each event's group id must be one it takes. */
  readonly destinationFifo?: boolean;
  /** Whether the relay's queue is a fair queue: each event's group id must be one SQS takes. */
  readonly destinationFair?: boolean;
}

/** What a mode is created with: the store and the settings common to every mode, validated. */
export interface ModeSettings<TStore> {
  /** The store, not yet checked: the mode checks it has the methods of its capability. */
  readonly store: TStore;
  /** Consumer name, unscoped. */
  readonly consumer: string;
  /** Inbox record lifetime, seconds. */
  readonly ttlSeconds: number;
  /** The clock every step reads, epoch milliseconds. */
  readonly clock: Clock;
  /** The entry point's defaults for the mode's own options. */
  readonly defaults: ModeDefaults;
}

/** What the engine knows of one message's step. */
export interface ModeStepInput {
  /** SHA-256 hex of the message's canonical payload. */
  readonly fingerprint: string;
  /** Epoch milliseconds when the message started. */
  readonly nowMillis: number;
  /** The time the invocation had left when it started; `undefined` without a Lambda context. */
  readonly remainingMillis: number | undefined;
}

/**
 * The facts of one message's step, returned with its outcome: the log entries of the step (the
 * engine adds the message's fields and logs them before the outcome's line), the claims it
 * took over (metric `Takeover`) and, when the message is done for good, the record that says so.
 */
export interface ModeStepResult {
  /** What happened to the message. */
  readonly outcome: Outcome;
  /** The step's own log entries, logged before the outcome's line. */
  readonly logs: readonly LogEntry[];
  /** Claims the step took over after their lease ended. */
  readonly takeovers: number;
  /**
   * Set only with a `processed` or `duplicate` outcome whose record is final: one this step
   * completed (marker: after the effect succeeded; atomic: committed; entity: inserted;
   * two-phase: every effect completed), or an existing record it read as completed that nothing
   * will release. Never for a claim in progress or released, nor for another delivery's marker
   * (released if its effect fails). The completed-record cache keeps such messages until
   * `expiresAt` (epoch seconds; `Number.MAX_SAFE_INTEGER` for a record that never expires).
   */
  readonly completed?: {
    /** When the record expires, epoch seconds. */
    readonly expiresAt: number;
  };
}

/** A mode ready to process messages. */
export interface ModeProcessor<TBody, TRecord = unknown> {
  /**
   * Processes one prepared message and returns its facts. Never throws: a failure of the store
   * or of the user's handler is a `retry` or `permanent` outcome.
   */
  process(message: Message<TBody, TRecord>, input: ModeStepInput): Promise<ModeStepResult>;
  /**
   * A processor for the messages of one batch (one invocation), whose steps may share requests
   * (atomic mode's batch commit). When present, the engine calls it once per batch and sends
   * that batch's messages through the processor it returns, so two invocations interleaved in
   * one process never share a request.
   */
  forBatch?(): ModeProcessor<TBody, TRecord>;
}

/**
 * A mode, as the factories `marker`, `atomic`, `entity` and `twoPhase` return it. `TStore` is the
 * store port the mode needs.
 */
export interface Mode<TBody = unknown, TStore = unknown, TRecord = unknown> {
  /** The mode's name, as logs, metrics and the construct spell it. */
  readonly name: ModeName;
  /** The store port the mode needs. */
  readonly capability: StoreCapability;
  /**
   * Validates the mode's own options against `settings` and returns the processor. Throws
   * `INVALID_OPTIONS` naming the option: a bad option fails the cold start.
   */
  create(settings: ModeSettings<TStore>): ModeProcessor<TBody, TRecord>;
}

/** The facts of a step that only has an outcome. */
export function stepResult(outcome: Outcome, logs: readonly LogEntry[] = []): ModeStepResult {
  return { outcome, logs, takeovers: 0 };
}

/**
 * The facts of a step whose record, expiring at `expiresAt` (epoch seconds), is final: marked
 * `completed` when `outcome` is `processed` or `duplicate`, else the outcome alone.
 *
 * @example
 * completedStep(outcomeOfInsert(inserted, fingerprint, nowMillis), record.expiresAt);
 */
export function completedStep(outcome: Outcome, expiresAt: number): ModeStepResult {
  return outcome.kind === 'processed' || outcome.kind === 'duplicate'
    ? { outcome, logs: [], takeovers: 0, completed: { expiresAt } }
    : stepResult(outcome);
}

/** Throws `INVALID_OPTIONS` unless `value` is a mode made by one of the four factories. */
export function expectMode(value: unknown): asserts value is Mode<unknown, unknown, unknown> {
  const candidate = value as Partial<Mode> | null | undefined;
  expectOption(
    typeof candidate === 'object' && candidate !== null && typeof candidate.create === 'function',
    'mode',
    'a mode: `marker(handle)`, `atomic(handle)`, `entity(handle)` or `twoPhase({ handle })`',
    value,
  );
}
