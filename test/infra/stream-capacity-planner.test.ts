/**
 * The capacity planner of `IdempotentStreamConsumer` (`expectedPeakMessagesPerSecond`): the warm
 * throughput of the inbox table it creates, a Kinesis stream's shards × `parallelizationFactor`
 * against the rate (a shard's records one at a time), and the sources whose concurrency is not
 * known at synth time.
 */
import * as path from 'node:path';
import { Template } from 'aws-cdk-lib/assertions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import { describe, expect, it } from 'vitest';
import { IdempotentStreamConsumer, type IdempotentStreamConsumerProps } from '../../lib';
import { newStack, notesOf } from './support';

const STREAM_FIXTURE_ENTRY = path.join(__dirname, 'fixtures', 'stream-handler.ts');

type Source = Pick<IdempotentStreamConsumerProps, 'stream' | 'sourceTable'>;

/** One atomic stream consumer of the source `source` makes, and what synth says. */
function synth(
  source: (stack: ReturnType<typeof newStack>['stack']) => Source,
  props: Partial<IdempotentStreamConsumerProps> = {},
) {
  const { stack } = newStack();
  const consumer = new IdempotentStreamConsumer(stack, 'Consumer', {
    mode: 'atomic',
    entry: STREAM_FIXTURE_ENTRY,
    ...source(stack),
    ...props,
  });
  return { consumer, template: Template.fromStack(stack), ...notesOf(stack) };
}

const twoShards = (stack: ReturnType<typeof newStack>['stack']): Source => ({
  stream: new kinesis.Stream(stack, 'Events', {
    shardCount: 2,
    encryption: kinesis.StreamEncryption.MANAGED,
  }),
});

describe('IdempotentStreamConsumer capacity planner', () => {
  it('warns when a Kinesis stream has too few shards × parallelizationFactor, one record at a time each', () => {
    const { consumer, template, warnings, infos } = synth(twoShards, {
      expectedPeakMessagesPerSecond: 3_000,
    });
    expect(consumer.capacityPlan).toMatchObject({ invocationsNeeded: 74, concurrencyLimit: 2 });
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      WarmThroughput: { WriteUnitsPerSecond: 6_000 },
    });
    expect(warnings).toEqual([
      "The event source runs at most 2 concurrent invocations (2 shards × `parallelizationFactor` 1); one invocation carries 41.1 messages a second (one message at a time, 24.4 ms each, atomic mode's modelled p50), so the expected peak of 3,000 messages a second needs at least 74. Raise the limit, or expect a backlog at the peak (the model counts DynamoDB request time only, so the real need is higher).",
    ]);
    expect(infos).toContain(
      'The inbox table is created with a warm throughput of 6,000 write units a second: 3,000 messages a second × 2 write units a message in atomic mode = 6,000 write units a second at the expected peak, above the 4,000 a new on-demand table absorbs.',
    );
  });

  it('counts parallelizationFactor batches a shard', () => {
    const { consumer, warnings } = synth(twoShards, {
      expectedPeakMessagesPerSecond: 800,
      parallelizationFactor: 10,
    });
    expect(consumer.capacityPlan).toMatchObject({ invocationsNeeded: 20, concurrencyLimit: 20 });
    expect(warnings).toEqual([]);
  });

  it('names the concurrency a DynamoDB stream needs without checking it (its shards are not known at synth time)', () => {
    const { infos } = synth(
      (stack) => ({
        sourceTable: new dynamodb.Table(stack, 'Orders', {
          partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
          stream: dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
        }),
      }),
      { expectedPeakMessagesPerSecond: 500 },
    );
    expect(infos).toContain(
      "The event source's concurrency was not checked (a DynamoDB stream's shards are DynamoDB's and not known at synth time): one invocation carries 41.1 messages a second (one message at a time, 24.4 ms each, atomic mode's modelled p50), so the expected peak of 500 messages a second needs at least 13 concurrent invocations.",
    );
  });

  it('refuses an expected peak that is not a positive number', () => {
    const { stack } = newStack();
    expect(
      () =>
        new IdempotentStreamConsumer(stack, 'Consumer', {
          mode: 'atomic',
          entry: STREAM_FIXTURE_ENTRY,
          ...twoShards(stack),
          expectedPeakMessagesPerSecond: -5,
        }),
    ).toThrow(
      'Expected `expectedPeakMessagesPerSecond` to be a positive number of messages a second, got `-5`',
    );
  });
});
