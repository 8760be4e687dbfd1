/**
 * The capacity planner's input from an `IdempotentStreamConsumer`'s props: the expected peak, the
 * tables, and the event source's concurrency where it is known at synth time (a Kinesis stream of
 * this app in provisioned mode: its shards × `parallelizationFactor`). A shard's records run in
 * order, one at a time. `undefined` without a usable `expectedPeakMessagesPerSecond`.
 */
import { Stack, Token } from 'aws-cdk-lib';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import {
  type CapacityInput,
  type EventSourceConcurrency,
  plannedRate,
  plannedTables,
} from '../capacity-planner';
import { isKnownNumber } from '../consumer-validation';
import { DEFAULT_PARALLELIZATION_FACTOR } from './defaults';
import type { IdempotentStreamConsumerProps } from './props';

/** The planner's input for `props`, or `undefined` when there is nothing to plan. */
export function streamCapacityInput(props: IdempotentStreamConsumerProps): CapacityInput | undefined {
  const rate = plannedRate(props.expectedPeakMessagesPerSecond);
  if (rate === undefined) return undefined;
  return {
    mode: props.mode,
    messagesPerSecond: rate,
    messagesSideBySide: 1,
    fifo: false,
    concurrency: streamConcurrency(props),
    tables: plannedTables(props),
  };
}

/** Shards × `parallelizationFactor` where the shards are known; `unknown`, with why, otherwise. */
function streamConcurrency(props: IdempotentStreamConsumerProps): EventSourceConcurrency {
  if (props.kafka) {
    return {
      kind: 'unknown',
      reason:
        "a Kafka topic's partitions are not known at synth time; each partition runs one batch at a time",
    };
  }
  if (props.sourceTable) {
    return {
      kind: 'unknown',
      reason: "a DynamoDB stream's shards are DynamoDB's and not known at synth time",
    };
  }
  const shards = knownShards(props.stream);
  const factor = props.parallelizationFactor ?? DEFAULT_PARALLELIZATION_FACTOR;
  if (shards === undefined || !isKnownNumber(factor)) {
    return {
      kind: 'unknown',
      reason: "the Kinesis stream's shard count is not known at synth time (on-demand, imported, or a token)",
    };
  }
  return { kind: 'shards', shards, parallelizationFactor: factor };
}

/** The shard count of a provisioned Kinesis stream of this app. */
function knownShards(stream: kinesis.IStream | undefined): number | undefined {
  if (!(stream instanceof kinesis.Stream)) return undefined;
  const cfn = stream.node.defaultChild as kinesis.CfnStream;
  const stack = Stack.of(stream);
  const mode = stack.resolve(cfn.streamModeDetails) as { streamMode?: string } | undefined;
  if (mode?.streamMode === kinesis.StreamMode.ON_DEMAND) return undefined;
  const shards = stack.resolve(cfn.shardCount) as unknown;
  return typeof shards === 'number' && !Token.isUnresolved(shards) ? shards : undefined;
}
