/**
 * The engine behind every entry point: a transport's messages → prepared messages → scheduled
 * processing → dead letters (through the transport's writer) → one log line per non-trivial
 * outcome → one metrics line → one result per message, which the transport turns into its own
 * batch response.
 */
import { createCompletedCache } from './completed-cache';
import { DEADLINE_MARGIN_MAX_SHARE } from './contract';
import { ERROR_CODES, isEffectivelyOnceError } from './errors';
import { sha256Hex } from './fingerprint';
import { createGroupMetrics } from './group-metrics';
import type { InboundMessage, LambdaContext, MessageResult } from './inbound-message';
import { createJsonLogger, createLevelLog, isLevelEnabled, type LogEntry, writeStdoutLine } from './logger';
import { type Prepared, prepareMessage } from './message';
import { createEmfMetricsSink, createOutcomeCounts, publishCounts } from './metrics';
import type { ModeDefaults, ModeStepResult } from './mode';
import { type BatchProcessorOptions, resolveOptions } from './options';
import { type Outcome, type OutcomeKind, outcomeOfError, reasonOf } from './outcome';
import { runWithDependencies } from './scheduler';

/** The level and message of each outcome's log line. */
const LOG: Readonly<Record<OutcomeKind, { readonly level: LogEntry['level']; readonly message: string }>> = {
  processed: { level: 'debug', message: 'Message processed' },
  duplicate: { level: 'info', message: 'Duplicate message acknowledged' },
  stale: { level: 'info', message: 'Stale message acknowledged: a newer version is stored' },
  'in-flight': { level: 'warn', message: 'Dedup key in flight in another delivery; retrying later' },
  mismatch: { level: 'error', message: 'Dedup key reused with a different payload' },
  retry: { level: 'warn', message: 'Message failed; retrying later' },
  permanent: { level: 'error', message: 'Message failed permanently' },
};

/**
 * The deadline margin of one invocation: `marginMillis`, but at most
 * {@link DEADLINE_MARGIN_MAX_SHARE} (half) of the time the invocation has left when it starts,
 * rounded down. So a function whose timeout is at or below the margin still starts records
 * (with 1.5 s left and a 2 s margin, records start during the first 750 ms) instead of reporting
 * every record as `DEADLINE`, on every delivery, until the messages are dead-lettered. With no
 * time left (0 or less), the margin is 0 and nothing starts.
 *
 * @example
 * deadlineMarginFor(2000, 60_000); // 2000
 * deadlineMarginFor(2000, 1500);   // 750
 */
export function deadlineMarginFor(marginMillis: number, remainingMillis: number): number {
  return Math.min(marginMillis, Math.floor(Math.max(0, remainingMillis) * DEADLINE_MARGIN_MAX_SHARE));
}

/**
 * When an invocation stops starting work: `nowMillis` plus the time it has left, less the margin
 * (`deadlineMarginFor`); `Infinity` without a remaining time (no Lambda context).
 */
export function invocationDeadline(
  nowMillis: number,
  remainingMillis: number | undefined,
  marginMillis: number,
): number {
  if (remainingMillis === undefined || Number.isNaN(remainingMillis)) return Infinity;
  return nowMillis + remainingMillis - deadlineMarginFor(marginMillis, remainingMillis);
}

/** How a dead-lettered message left the queue, as logged in the `deadLetter` field. */
type DeadLetterResult = 'redrive' | 'sent' | 'send-failed';

/**
 * The engine of an entry point: processes one batch of a transport's messages and answers one
 * result per message, in batch order. The transport turns the results into its own batch
 * response (an SQS partial batch response, a stream's checkpoint).
 */
export type BatchProcessor<TRecord = unknown> = (
  messages: readonly InboundMessage<TRecord>[],
  context?: LambdaContext,
) => Promise<MessageResult[]>;

/**
 * Creates the engine over an injected store and clock. Options are validated once, here; a bad
 * option throws `INVALID_OPTIONS` at cold start. The engine knows no transport: each entry point
 * maps its event into `InboundMessage`s and the results into its batch response.
 *
 * Within a batch, messages of one ordering group (`InboundMessage.orderingGroup`: a FIFO queue's
 * message group, a stream's shard) run in order and, once one is not acknowledged, the later
 * ones are retried without running (`GROUP_BLOCKED`). Messages sharing a scoped key run one after
 * the other, in batch order, each through the store, so the effect runs once and the later
 * message is a duplicate (or a mismatch) by the store's answer.
 *
 * Messages that have not started `deadlineMarginMillis` before the Lambda timeout are retried
 * (`DEADLINE`) without running; the margin is capped at half the invocation's remaining time
 * (`deadlineMarginFor`), so every invocation with time left starts messages.
 *
 * With `completedCache`, a message found there (same scoped key and fingerprint, not expired) is
 * acknowledged as a duplicate without running its mode: no request, its line says
 * `cache: 'hit'`, metrics `Duplicate` and `CacheHit`. The cache is this engine's own, created
 * here, and it learns only what a mode reports final (`ModeStepResult.completed`).
 *
 * Everything an invocation changes lives in that invocation's call: the engine's own state
 * (options, log, metrics sink, mode, cache) is read-only or, for the cache, updated
 * synchronously, so invocations interleaved in one process (Lambda Managed Instances) never
 * mix their results, log lines or counts.
 *
 * Failures are logged and, with a `deadLetterWriter`, dead-lettered with the toolkit's reason,
 * the error's class and its `code`; the message of an error thrown by user code (or a library it
 * calls) only with `logErrorMessages`. Without a writer a permanent failure is not acknowledged:
 * the transport's own redrive moves it.
 *
 * The engine knows no mode: `options.mode` (`marker(...)`, `atomic(...)`, `entity(...)`,
 * `twoPhase(...)`) checks its own options and the store here, and `modeDefaults` are what the
 * entry point's environment supplies to it (`EO_LEASE_MILLIS`, the worker's visibility timeout).
 *
 * @example
 * const processBatch = createBatchProcessor({
 *   consumer: 'billing',
 *   dedupKey: fromBody('invoiceId'),
 *   mode: marker(async (message) => sendInvoice(message.body)),
 *   store,
 *   clock: Date.now,
 * });
 * const results = await processBatch([{ id: 'm-1', text: '{"invoiceId":"i-1"}', attributes: {}, record: undefined }]);
 */
export function createBatchProcessor<TBody = unknown, TStore = unknown, TRecord = unknown>(
  options: BatchProcessorOptions<TBody, TStore, TRecord>,
  modeDefaults: ModeDefaults = {},
): BatchProcessor<TRecord> {
  const config = resolveOptions(options);
  const { clock, consumer } = config;
  const logger = config.logger ?? createJsonLogger();
  const metrics =
    config.metrics === false
      ? undefined
      : (config.metrics ?? createEmfMetricsSink({ namespace: config.metricNamespace }));
  const mode = config.mode.create({
    store: config.store,
    consumer,
    ttlSeconds: config.ttlSeconds,
    clock,
    defaults: modeDefaults,
  });
  const log = createLevelLog(logger, config.logLevel);
  // One per handler instance: a warm environment remembers what it completed across invocations.
  const cache = config.completedCache === undefined ? undefined : createCompletedCache(config.completedCache);
  // A fair queue's per-group lines, next to the metrics line (none when metrics are off).
  const groups =
    config.groupMetrics === undefined || metrics === undefined
      ? undefined
      : createGroupMetrics(config.groupMetrics, config.metricNamespace, writeStdoutLine);

  const keyFields = (scopedKey: string | undefined): Record<string, string> => {
    if (scopedKey === undefined) return {};
    return config.logKeys === 'hash' ? { scopedKeyHash: sha256Hex(scopedKey) } : { scopedKey };
  };

  const deadLetter = async (
    inbound: InboundMessage<TRecord>,
    prepared: Prepared<TBody, TRecord>,
    outcome: Outcome & { kind: 'mismatch' | 'permanent' },
  ): Promise<DeadLetterResult> => {
    if (config.deadLetterWriter === undefined) return 'redrive';
    const dedupKey = prepared.ok ? prepared.message.dedupKey : prepared.dedupKey;
    await config.deadLetterWriter({
      message: inbound,
      reason: reasonOf(outcome, config.logErrorMessages),
      code: outcome.code,
      consumer,
      ...(dedupKey === undefined ? {} : { dedupKey }),
    });
    return 'sent';
  };

  return async (records, context) => {
    const remaining = context?.getRemainingTimeInMillis?.();
    // The time the invocation has left when it starts; modes may derive a lease from it.
    const remainingMillis = typeof remaining === 'number' ? remaining : undefined;
    const deadline = invocationDeadline(clock(), remainingMillis, config.deadlineMarginMillis);
    const prepared = records.map((record) => prepareMessage(record, config, context));
    // The batch's own processor, where the mode shares requests among its messages.
    const processor = mode.forBatch?.() ?? mode;

    const lastOfGroup = new Map<string, number>();
    const lastOfKey = new Map<string, number>();
    const groupPrevious: (number | undefined)[] = [];
    const dependencies = records.map((record, index) => {
      const list: number[] = [];
      const group = record.orderingGroup;
      if (group !== undefined) {
        const previous = lastOfGroup.get(group);
        groupPrevious[index] = previous;
        if (previous !== undefined) list.push(previous);
        lastOfGroup.set(group, index);
      }
      const current = prepared[index]!;
      if (current.ok) {
        // The second record with a key waits for the first, so the store answers it as a duplicate.
        const previous = lastOfKey.get(current.message.scopedKey);
        if (previous !== undefined && previous !== groupPrevious[index]) list.push(previous);
        lastOfKey.set(current.message.scopedKey, index);
      }
      return list;
    });

    const acknowledged = records.map(() => false);
    const outcomes: Outcome[] = [];
    const counts = createOutcomeCounts();
    const groupTally = groups?.tally();
    // Lines go to standard output directly, where Lambda tags none with its invocation: on
    // managed instances, invocations running at once share one log stream, so each line and the
    // metrics line name their own.
    const requestId = context?.awsRequestId;
    const invocationFields = requestId === undefined ? {} : { requestId };
    // The fields every line of a message carries, built only when something is logged.
    const fieldsOf = (
      messageId: string,
      { scopedKey, correlationId }: { readonly scopedKey?: string; readonly correlationId: string },
    ) => ({ consumer, ...invocationFields, ...keyFields(scopedKey), messageId, correlationId });
    const settle = async (index: number): Promise<void> => {
      const record = records[index]!;
      const current = prepared[index]!;

      const previous = groupPrevious[index];
      const now = clock();
      let outcome: Outcome;
      let cacheHit = false;
      if (previous !== undefined && !acknowledged[previous]) {
        outcome = {
          kind: 'retry',
          code: 'GROUP_BLOCKED',
          reason: 'An earlier message of the same message group failed in this batch',
        };
      } else if (now >= deadline) {
        outcome = { kind: 'retry', code: 'DEADLINE', reason: 'Not started: too close to the Lambda timeout' };
      } else if (current.ok && cache?.has(current.message.scopedKey, current.fingerprint, now)) {
        outcome = { kind: 'duplicate' };
        cacheHit = true;
        counts.cacheHit += 1;
      } else if (current.ok) {
        let result: ModeStepResult;
        try {
          const { message, fingerprint } = current;
          result = await processor.process(message, { fingerprint, nowMillis: now, remainingMillis });
        } catch (error) {
          // A mode that throws (it should not) is a retry.
          result = { outcome: outcomeOfError(error, 'UNEXPECTED'), logs: [], takeovers: 0 };
        }
        counts.takeover += result.takeovers;
        for (const entry of result.logs) log({ ...entry, ...fieldsOf(record.id, current.message) });
        outcome = result.outcome;
        const done = outcome.kind === 'processed' || outcome.kind === 'duplicate';
        if (cache !== undefined && result.completed !== undefined && done) {
          // Read at the end of the step: an `expiresAt` that passed meanwhile is not kept.
          cache.remember(current.message.scopedKey, current.fingerprint, result.completed.expiresAt, clock());
        }
      } else {
        outcome = outcomeOfError(current.error, 'MALFORMED_BODY');
      }

      let ack = outcome.kind === 'processed' || outcome.kind === 'duplicate' || outcome.kind === 'stale';
      let deadLetterResult: DeadLetterResult | undefined;
      let deadLetterError: unknown;
      if (outcome.kind === 'mismatch' || outcome.kind === 'permanent') {
        try {
          deadLetterResult = await deadLetter(record, current, outcome);
        } catch (error) {
          deadLetterResult = 'send-failed';
          deadLetterError = error;
        }
        ack = deadLetterResult === 'sent';
      }
      acknowledged[index] = ack;
      outcomes[index] = outcome;
      counts[outcome.kind === 'in-flight' ? 'inFlight' : outcome.kind] += 1;
      groupTally?.add(record.groupId, outcome.kind);

      const line = LOG[outcome.kind];
      // A configuration error met at run time (missing table, access denied) needs a human.
      const level = 'code' in outcome && ERROR_CODES[outcome.code] === 'configuration' ? 'error' : line.level;
      if (!isLevelEnabled(level, config.logLevel)) return;
      const entry: Record<string, unknown> = {
        level,
        message: line.message,
        ...fieldsOf(record.id, current.ok ? current.message : current),
        outcome: outcome.kind,
        ...(cacheHit ? { cache: 'hit' } : {}),
      };
      if ('code' in outcome) {
        entry.code = outcome.code;
        if (outcome.errorName !== undefined) entry.errorName = outcome.errorName;
        if (outcome.errorCode !== undefined) entry.errorCode = outcome.errorCode;
        entry.reason = reasonOf(outcome, config.logErrorMessages);
      } else if (outcome.kind === 'in-flight') {
        entry.code = 'IN_FLIGHT';
      }
      if (deadLetterResult !== undefined) entry.deadLetter = deadLetterResult;
      if (deadLetterError !== undefined) {
        entry.deadLetterCode = isEffectivelyOnceError(deadLetterError)
          ? deadLetterError.code
          : 'DEAD_LETTER_FAILED';
        entry.deadLetterErrorName = (deadLetterError as Error | undefined)?.name;
      }
      log(entry as unknown as LogEntry);
    };

    await runWithDependencies(dependencies, config.concurrency, settle);

    if (metrics !== undefined) {
      const metricsContext = { consumer, timestampMillis: clock(), ...invocationFields };
      publishCounts(metrics, counts, metricsContext, log);
      groupTally?.publish(metricsContext);
    }

    return records.map((_record, index) => ({
      outcome: outcomes[index]!,
      acknowledged: acknowledged[index]!,
    }));
  };
}
