/**
 * A fair queue: a standard queue whose producers set `MessageGroupId` per tenant. SQS keeps no
 * order for it (the runtime already treats its groups as unordered); marking the queue fair turns
 * on the runtime's per-group `Duplicate` and `InFlight` metrics (`EO_GROUP_METRICS_MAX_GROUPS`).
 */
import { MAX_GROUP_METRICS_GROUPS } from '../../lambda/core/contract';
import { checkInteger, type Fail } from '../consumer-validation';

/**
 * `maxMetricGroups` when not set: the message groups of one execution environment that get a
 * `MessageGroup` value of their own. Each value is two custom metrics once counted.
 */
export const DEFAULT_MAX_METRIC_GROUPS = 100;

/** The props the fair-queue checks read. */
export interface FairQueueSettings {
  readonly fairQueue?: boolean;
  readonly maxMetricGroups?: number;
  readonly fifo?: boolean;
  readonly queue?: { readonly fifo: boolean };
}

/**
 * Fails for a fair FIFO queue (a fair queue is a standard one: a FIFO queue's groups keep order
 * and have no fairness to mark), and for `maxMetricGroups` without `fairQueue` or out of range.
 */
export function checkFairQueue(props: FairQueueSettings, fail: Fail): void {
  if (!props.fairQueue) {
    if (props.maxMetricGroups !== undefined) fail('Expected no `maxMetricGroups` without `fairQueue: true`');
    return;
  }
  if (props.fifo || props.queue?.fifo) {
    fail(
      'Expected a standard queue with `fairQueue: true`, got a FIFO queue: a fair queue is a standard queue whose producers set `MessageGroupId`',
    );
  }
  checkInteger('maxMetricGroups', props.maxMetricGroups, 1, MAX_GROUP_METRICS_GROUPS, fail);
}

/** `EO_GROUP_METRICS_MAX_GROUPS` for these props: undefined unless the queue is marked fair. */
export function groupMetricsMaxGroups(props: FairQueueSettings): number | undefined {
  return props.fairQueue ? (props.maxMetricGroups ?? DEFAULT_MAX_METRIC_GROUPS) : undefined;
}
