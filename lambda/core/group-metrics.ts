/**
 * Per-group metrics of a fair queue: a standard queue whose producers set `MessageGroupId` per
 * tenant. Each invocation writes, for every message group with a duplicate or an in-flight
 * message among its messages, one Embedded Metric Format line with dimensions `Consumer` and
 * `MessageGroup` and the metrics `Duplicate` and `InFlight`, so a tenant whose producer retries
 * in a storm, or whose messages keep meeting their own in-flight copies, shows by name.
 *
 * Cardinality is bounded: CloudWatch bills every distinct dimension value as metrics of its own
 * (two here), so only the first `maxGroups` groups an execution environment counts get their own
 * `MessageGroup` value; every later group is counted under `(other)`. Groups with nothing to count
 * in an invocation write nothing.
 */
import {
  MAX_GROUP_METRICS_GROUPS,
  METRIC_DIMENSION_MESSAGE_GROUP,
  METRICS,
  OTHER_MESSAGE_GROUPS,
} from './contract';
import { expectBoundedCountOption } from './errors';
import type { LineWriter } from './logger';
import { embeddedMetricLine, type MetricsContext } from './metrics';
import type { OutcomeKind } from './outcome';

/** Options of a fair queue's per-group metrics. */
export interface GroupMetricsOptions {
  /**
   * How many message groups get a `MessageGroup` value of their own in this execution
   * environment, 1 to 1000; later groups are counted as `(other)`.
   */
  readonly maxGroups: number;
}

/** Throws `INVALID_OPTIONS` unless `value` is `undefined` or valid {@link GroupMetricsOptions}. */
export function expectGroupMetricsOptions(value: unknown): asserts value is GroupMetricsOptions | undefined {
  expectBoundedCountOption('groupMetrics', 'maxGroups', MAX_GROUP_METRICS_GROUPS, value);
}

/** One invocation's per-group counts. */
export interface GroupTally {
  /** Counts one message's outcome under its group; a message without a group is not counted. */
  add(groupId: string | undefined, kind: OutcomeKind): void;
  /** Writes one line per group with a duplicate or an in-flight message. */
  publish(context: MetricsContext): void;
}

/** The per-group metrics of one handler: which groups have a value of their own, and the writer. */
export interface GroupMetrics {
  /** A fresh tally for one invocation. */
  tally(): GroupTally;
}

/**
 * Creates the per-group metrics of one handler, writing to `write` in `namespace`. The groups
 * with a value of their own are remembered for the handler's life (its execution environment).
 *
 * @example
 * const groups = createGroupMetrics({ maxGroups: 100 }, 'Orders', writeStdoutLine);
 * const tally = groups.tally();
 * tally.add('tenant-a', 'duplicate');
 * tally.publish({ consumer: 'orders', timestampMillis: Date.now() });
 */
export function createGroupMetrics(
  options: GroupMetricsOptions,
  namespace: string,
  write: LineWriter,
): GroupMetrics {
  expectGroupMetricsOptions(options);
  const named = new Set<string>();
  // Updated synchronously, so invocations interleaved in one process agree on which groups are named.
  const dimensionOf = (groupId: string): string => {
    if (named.has(groupId)) return groupId;
    if (named.size >= options.maxGroups) return OTHER_MESSAGE_GROUPS;
    named.add(groupId);
    return groupId;
  };
  return {
    tally() {
      const counts = new Map<string, { duplicate: number; inFlight: number }>();
      return {
        add(groupId, kind) {
          if (groupId === undefined || (kind !== 'duplicate' && kind !== 'in-flight')) return;
          const group = dimensionOf(groupId);
          const count = counts.get(group) ?? { duplicate: 0, inFlight: 0 };
          if (kind === 'duplicate') count.duplicate += 1;
          else count.inFlight += 1;
          counts.set(group, count);
        },
        publish(context) {
          for (const [group, count] of counts) {
            const values = { [METRICS.duplicate]: count.duplicate, [METRICS.inFlight]: count.inFlight };
            write(
              embeddedMetricLine(namespace, context, values, {}, { [METRIC_DIMENSION_MESSAGE_GROUP]: group }),
            );
          }
        },
      };
    },
  };
}
