/**
 * Metrics: one count per outcome, published once per invocation. The default sink writes one
 * CloudWatch Embedded Metric Format line, so no API call is made.
 */
import { DEFAULT_METRIC_NAMESPACE, METRIC_DIMENSION_CONSUMER, METRICS } from './contract';
import { type LineWriter, type LogEntry, writeStdoutLine } from './logger';

/**
 * Messages per outcome in one invocation; each message is counted exactly once in one of
 * `processed` to `permanent`. `takeover` counts two-phase claims taken over, and `cacheHit` the
 * duplicates the completed-record cache answered without a request (events, not messages: the
 * message is counted by its outcome too).
 */
export interface OutcomeCounts {
  /** Messages processed (metric `Processed`). */
  processed: number;
  /** Messages acknowledged as duplicates (`Duplicate`). */
  duplicate: number;
  /** Messages retried because another delivery holds their key (`InFlight`). */
  inFlight: number;
  /** Messages dead-lettered for a payload mismatch (`Mismatch`). */
  mismatch: number;
  /** Messages older than their stored item, acknowledged (`Stale`). */
  stale: number;
  /** Messages retried after a transient failure (`Retry`). */
  retry: number;
  /** Messages dead-lettered after a permanent failure (`Permanent`). */
  permanent: number;
  /** Two-phase claims taken over (`Takeover`). */
  takeover: number;
  /** Duplicates answered from the completed-record cache, without a request (`CacheHit`). */
  cacheHit: number;
}

/** Creates all-zero counts (a literal: every invocation creates one). */
export function createOutcomeCounts(): OutcomeCounts {
  return {
    processed: 0,
    duplicate: 0,
    inFlight: 0,
    mismatch: 0,
    stale: 0,
    retry: 0,
    permanent: 0,
    takeover: 0,
    cacheHit: 0,
  };
}

/** What a metrics line says of the invocation it counts. */
export interface MetricsContext {
  /** The consumer, the metrics' `Consumer` dimension. */
  readonly consumer: string;
  /** When the counts were measured. */
  readonly timestampMillis: number;
  /** The invocation's Lambda request id, when there is a Lambda context (a property, not a dimension). */
  readonly requestId?: string;
}

/** Where the counts of one invocation go. */
export interface MetricsSink {
  /**
   * Publishes the counts of one invocation of `context.consumer`, measured at
   * `context.timestampMillis`; an error it throws is logged, never rethrown.
   */
  publish(counts: Readonly<OutcomeCounts>, context: MetricsContext): void;
}

/**
 * Publishes one invocation's counts. A sink that throws is logged (`Publishing metrics failed`),
 * never rethrown: metrics never fail the work they count.
 */
export function publishCounts(
  metrics: MetricsSink,
  counts: Readonly<OutcomeCounts>,
  context: MetricsContext,
  log: (entry: LogEntry) => void,
): void {
  try {
    metrics.publish(counts, context);
  } catch (error) {
    log({
      level: 'error',
      message: 'Publishing metrics failed',
      consumer: context.consumer,
      errorName: (error as Error)?.name,
    });
  }
}

/** Options of {@link createEmfMetricsSink}. */
export interface EmfMetricsSinkOptions {
  /** @default 'EffectivelyOnce' (`DEFAULT_METRIC_NAMESPACE`) */
  readonly namespace?: string;
  /** @default writes to standard output */
  readonly write?: LineWriter;
}

/**
 * A sink writing one Embedded Metric Format line per invocation: every outcome count (zeros
 * included, so alarms see data), dimension `Consumer`, unit `Count`.
 *
 * @example
 * const metrics = createEmfMetricsSink({ namespace: 'Orders' });
 */
export function createEmfMetricsSink(options: EmfMetricsSinkOptions = {}): MetricsSink {
  const namespace = options.namespace ?? DEFAULT_METRIC_NAMESPACE;
  const write = options.write ?? writeStdoutLine;
  const names = Object.keys(createOutcomeCounts()) as (keyof OutcomeCounts)[];
  return {
    publish(counts, context) {
      const values = Object.fromEntries(names.map((name) => [METRICS[name], counts[name]]));
      write(embeddedMetricLine(namespace, context, values));
    },
  };
}

/**
 * One Embedded Metric Format line: each of `values` (metric name to count, zeros included, so
 * alarms see data, or to an array of at most 100 values) in `namespace`, dimension `Consumer`,
 * unit `Count` unless `units` names another; `context.requestId`, when given, as the property
 * `requestId` (no dimension: one value per invocation would be a metric per invocation). The
 * `dimensions` follow `Consumer` in the one dimension set.
 */
export function embeddedMetricLine(
  namespace: string,
  context: MetricsContext,
  values: Readonly<Record<string, number | readonly number[]>>,
  units: Readonly<Record<string, string>> = {},
  dimensions: Readonly<Record<string, string>> = {},
): string {
  const line: Record<string, unknown> = {
    _aws: {
      Timestamp: context.timestampMillis,
      CloudWatchMetrics: [
        {
          Namespace: namespace,
          Dimensions: [[METRIC_DIMENSION_CONSUMER, ...Object.keys(dimensions)]],
          Metrics: Object.keys(values).map((name) => ({ Name: name, Unit: units[name] ?? 'Count' })),
        },
      ],
    },
    [METRIC_DIMENSION_CONSUMER]: context.consumer,
    ...dimensions,
  };
  if (context.requestId !== undefined) line.requestId = context.requestId;
  for (const [name, value] of Object.entries(values)) line[name] = value;
  return JSON.stringify(line);
}
