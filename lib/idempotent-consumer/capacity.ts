/**
 * The capacity planner's input from an `IdempotentConsumer`'s props: the expected peak, the
 * queue (FIFO, message groups), the event source's batch size and concurrency (`maxConcurrency`,
 * provisioned pollers) and the tables. `undefined` without a usable `expectedPeakMessagesPerSecond`
 * (unset, an unresolved token, or invalid: validation reports that).
 */
import { Token } from 'aws-cdk-lib';
import {
  type CapacityInput,
  type EventSourceConcurrency,
  plannedRate,
  plannedTables,
  RUNTIME_DEFAULT_CONCURRENCY,
} from '../capacity-planner';
import { isKnownNumber } from '../consumer-validation';
import { DEFAULT_BATCH_SIZE, SQS_POLLERS } from './defaults';
import type { IdempotentConsumerProps } from './props';

/** The planner's input for `props`, or `undefined` when there is nothing to plan. */
export function queueCapacityInput(props: IdempotentConsumerProps): CapacityInput | undefined {
  const rate = plannedRate(props.expectedPeakMessagesPerSecond);
  if (rate === undefined) return undefined;
  const batchSize = isKnownNumber(props.batchSize) ? props.batchSize : DEFAULT_BATCH_SIZE;
  const groups = props.expectedMessageGroups;
  return {
    mode: props.mode,
    messagesPerSecond: rate,
    messagesSideBySide: Math.min(batchSize, RUNTIME_DEFAULT_CONCURRENCY),
    fifo: props.queue ? props.queue.fifo : props.fifo === true,
    messageGroups: isKnownNumber(groups) && Number.isInteger(groups) && groups > 0 ? groups : undefined,
    concurrency: eventSourceConcurrency(props),
    tables: plannedTables(props),
  };
}

/** What bounds the event source's concurrency; `unknown` when that is a token. */
function eventSourceConcurrency(props: IdempotentConsumerProps): EventSourceConcurrency {
  const { maxConcurrency, provisionedPollers: pollers } = props;
  if (maxConcurrency !== undefined) {
    return isKnownNumber(maxConcurrency)
      ? { kind: 'maxConcurrency', maxConcurrency }
      : { kind: 'unknown', reason: '`maxConcurrency` is a token' };
  }
  if (!pollers) return { kind: 'default' };
  const minimum = pollers.minimum ?? SQS_POLLERS.minimum.default;
  const maximum = pollers.maximum ?? SQS_POLLERS.maximum.default;
  if (Token.isUnresolved(minimum) || Token.isUnresolved(maximum)) {
    return { kind: 'unknown', reason: '`provisionedPollers` is a token' };
  }
  return { kind: 'provisionedPollers', minimum, maximum };
}
