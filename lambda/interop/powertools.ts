/**
 * Powertools for AWS Lambda (TypeScript) as the toolkit's logger and metrics sink. Declared
 * structurally: the package never imports Powertools, and any object with the same methods fits
 * (a Powertools `Logger` child, a test double).
 */
import { METRICS } from '../core/contract';
import type { LogEntry, Logger } from '../core/logger';
import type { MetricsSink, OutcomeCounts } from '../core/metrics';

/** The methods of a Powertools `Logger` that the adapter calls, one per level. */
export interface PowertoolsLoggerLike {
  /** Logs `message` at debug level with `attributes` as extra keys. */
  debug(message: string, attributes: Record<string, unknown>): void;
  /** Logs `message` at info level with `attributes` as extra keys. */
  info(message: string, attributes: Record<string, unknown>): void;
  /** Logs `message` at warn level with `attributes` as extra keys. */
  warn(message: string, attributes: Record<string, unknown>): void;
  /** Logs `message` at error level with `attributes` as extra keys. */
  error(message: string, attributes: Record<string, unknown>): void;
}

/**
 * The toolkit's log lines through a Powertools `Logger`: each entry's `message` at its `level`,
 * its other fields (consumer, dedup key or its hash, message id, outcome, code; never a body)
 * as extra keys next to the Logger's own (service, cold start, request id, X-Ray trace id).
 * The toolkit's `logLevel` filters first, then the Logger's own level.
 *
 * @example
 * import { Logger } from '@aws-lambda-powertools/logger';
 *
 * const powertools = new Logger({ serviceName: 'orders' });
 * export const handler = createSqsHandler({
 *   // ...
 *   logger: createPowertoolsLogger(powertools),
 * });
 */
export function createPowertoolsLogger(logger: PowertoolsLoggerLike): Logger {
  return {
    log: ({ level, message, ...attributes }: LogEntry) => logger[level](message, attributes),
  };
}

/** The method of a Powertools `Metrics` that the adapter calls. */
export interface PowertoolsMetricsLike {
  /** Stores one metric value until the instance flushes (`publishStoredMetrics`, `logMetrics`). */
  addMetric(name: string, unit: 'Count', value: number): unknown;
}

/**
 * The toolkit's outcome counts into a Powertools `Metrics` instance: every count (zeros included,
 * so alarms see data) as a `Count` metric named as `METRICS` names it (`Processed`, `Duplicate`,
 * ...), in that instance's namespace and with its dimensions, written in its one Embedded Metric
 * Format line when it flushes: by the `logMetrics` middy middleware, the `logMetrics` decorator or
 * `publishStoredMetrics()`. Nothing is written before the flush.
 *
 * No `Consumer` dimension is added: a dimension added to the instance would apply to every
 * metric it holds, the handler's own included. The construct's alarms and dashboard read the
 * `Consumer` dimension of the toolkit's own sink (`createEmfMetricsSink`, the default); keep that
 * sink where they are used.
 *
 * @example
 * import { Metrics } from '@aws-lambda-powertools/metrics';
 *
 * const powertools = new Metrics({ namespace: 'Orders', serviceName: 'orders' });
 * export const handler = createSqsHandler({
 *   // ...
 *   metrics: createPowertoolsMetricsSink(powertools),
 * });
 */
export function createPowertoolsMetricsSink(metrics: PowertoolsMetricsLike): MetricsSink {
  const names = Object.keys(METRICS) as (keyof OutcomeCounts)[];
  return {
    publish: (counts) => {
      for (const name of names) metrics.addMetric(METRICS[name], 'Count', counts[name]);
    },
  };
}
