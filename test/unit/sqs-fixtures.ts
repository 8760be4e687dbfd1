/**
 * Builders shared by the unit tests: SQS records and events, a fixed clock, handler options over
 * a memory store, capturing log and metrics sinks, outcome counts and totals, and property checks that
 * print their seed.
 */
import fc from 'fast-check';
import { fromBody } from '../../lambda/core/dedup-key';
import { PermanentError } from '../../lambda/core/errors';
import type { LogEntry, Logger } from '../../lambda/core/logger';
import type { Message } from '../../lambda/core/message';
import { createOutcomeCounts, type MetricsSink, type OutcomeCounts } from '../../lambda/core/metrics';
import type { CommonOptions } from '../../lambda/core/options';
import type { SqsEvent, SqsMessageAttribute, SqsRecord } from '../../lambda/core/sqs-event';
import { type MarkerHandler, marker } from '../../lambda/modes/marker';
import type {
  SqsHandlerEnvironmentOptions,
  SqsHandlerOptions,
  SqsHandlerStoreOptions,
} from '../../lambda/sqs-handler';
import { type OutcomeTotals, zeroOutcomeTotals } from '../../scripts/main-job/observations';
import { createMemoryStore } from '../support/memory-store';

/** Epoch milliseconds every test starts at (2026-01-01T00:00:00Z). */
export const T0 = Date.UTC(2026, 0, 1);

/**
 * A record with a JSON body; `attributes` are message attributes (string values). A record with
 * a `groupId` comes from the FIFO queue `orders.fifo`, unless `queue` names another (a fair queue
 * is a standard queue whose records carry a group id).
 */
export function sqsRecord(
  messageId: string,
  body: unknown,
  options: {
    readonly attributes?: Readonly<Record<string, string>>;
    readonly groupId?: string;
    readonly deduplicationId?: string;
    readonly rawBody?: string;
    /** The source queue's name. @default 'orders.fifo' with a `groupId`, else 'orders' */
    readonly queue?: string;
  } = {},
): SqsRecord {
  const messageAttributes: Record<string, SqsMessageAttribute> = {};
  for (const [name, value] of Object.entries(options.attributes ?? {})) {
    messageAttributes[name] = { stringValue: value, dataType: 'String' };
  }
  return {
    messageId,
    receiptHandle: `rh-${messageId}`,
    body: options.rawBody ?? JSON.stringify(body),
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: String(T0),
      ...(options.groupId === undefined ? {} : { MessageGroupId: options.groupId }),
      ...(options.deduplicationId === undefined ? {} : { MessageDeduplicationId: options.deduplicationId }),
    },
    messageAttributes,
    eventSource: 'aws:sqs',
    eventSourceARN: `arn:aws:sqs:us-east-1:000000000000:${options.queue ?? (options.groupId === undefined ? 'orders' : 'orders.fifo')}`,
    awsRegion: 'us-east-1',
  };
}

/** An SQS event of `records`. */
export function sqsEvent(...records: SqsRecord[]): SqsEvent {
  return { Records: records };
}

/** A clock the test moves by hand. */
export interface ManualClock {
  (): number;
  advance(millis: number): void;
  set(millis: number): void;
}

/** A clock fixed at `start` until moved. */
export function manualClock(start = T0): ManualClock {
  let now = start;
  const clock = (() => now) as ManualClock;
  clock.advance = (millis) => {
    now += millis;
  };
  clock.set = (millis) => {
    now = millis;
  };
  return clock;
}

/** A logger that keeps its entries. */
export function captureLogger(): Logger & { readonly entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  return { entries, log: (entry) => entries.push(entry) };
}

/** A metrics sink that keeps what was published. */
export function captureMetrics(): MetricsSink & {
  readonly published: { counts: OutcomeCounts; consumer: string }[];
} {
  const published: { counts: OutcomeCounts; consumer: string }[] = [];
  return {
    published,
    publish: (counts, { consumer }) => published.push({ counts: { ...counts }, consumer }),
  };
}

/** Counts with every outcome zero except `partial`. */
export function counts(partial: Partial<OutcomeCounts>): OutcomeCounts {
  return { ...createOutcomeCounts(), ...partial };
}

/** Outcome totals of the main job's observations, every one zero except `partial`. */
export function outcomeTotals(partial: Partial<OutcomeTotals>): OutcomeTotals {
  return { ...zeroOutcomeTotals(), ...partial };
}

/** The body of the messages {@link outcomeHandlerOptions} handles: `outcome` picks what happens. */
export interface OutcomeEvent {
  readonly id?: string;
  readonly outcome?: 'ok' | 'throw' | 'permanent';
}

/**
 * Options of a marker-mode handler over a fresh memory store, keyed by the body's `id`, at
 * {@link T0}, silent and without metrics; its handler throws a transient error for
 * `outcome: 'throw'` and a `PermanentError` for `outcome: 'permanent'`.
 */
export function outcomeHandlerOptions({
  handle,
  ...overrides
}: Partial<CommonOptions<OutcomeEvent> & SqsHandlerStoreOptions & SqsHandlerEnvironmentOptions> & {
  /** Replaces the marker handler. */
  readonly handle?: MarkerHandler<OutcomeEvent>;
} = {}): SqsHandlerOptions<OutcomeEvent> {
  return {
    consumer: 'orders',
    dedupKey: fromBody('id'),
    mode: marker(
      handle ??
        ((message: Message<OutcomeEvent>) => {
          if (message.body.outcome === 'throw') throw new Error('transient');
          if (message.body.outcome === 'permanent') throw new PermanentError('never');
        }),
    ),
    store: createMemoryStore(),
    clock: () => T0,
    logLevel: 'silent',
    metrics: false,
    ...overrides,
  } as SqsHandlerOptions<OutcomeEvent>;
}

/** A promise with its resolver, to hold a handler until the test lets it go. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/** Runs a property; on failure the error names the seed and path, so the run can be replayed. */
export function check<Ts extends unknown[]>(
  property: fc.IProperty<Ts> | fc.IAsyncProperty<Ts>,
  parameters: fc.Parameters<Ts> = {},
): Promise<void> | void {
  return fc.assert(property as fc.IAsyncProperty<Ts>, {
    ...parameters,
    reporter: (details) => {
      if (details.failed) {
        throw new Error(
          `Property failed; replay with { seed: ${details.seed}, path: '${details.counterexamplePath}' }\n${fc.defaultReportMessage(details)}`,
        );
      }
    },
  });
}
