import * as path from 'node:path';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import { describe, expect, it } from 'vitest';
import { DEFAULT_METRIC_NAMESPACE, METRIC_DIMENSION_CONSUMER, METRICS } from '../../lambda/core/contract';
import { ConsumerBase, IdempotentConsumer, IdempotentStreamConsumer } from '../../lib';
import { FIXTURE_ENTRY, newStack } from './support';

const STREAM_FIXTURE_ENTRY = path.join(__dirname, 'fixtures', 'stream-handler.ts');

/** An SQS consumer and a Kinesis stream consumer side by side in one stack. */
function bothConsumers() {
  const { stack } = newStack();
  const queueConsumer = new IdempotentConsumer(stack, 'Queue', {
    mode: 'marker',
    entry: FIXTURE_ENTRY,
    consumerName: 'queue-consumer',
  });
  const streamConsumer = new IdempotentStreamConsumer(stack, 'Stream', {
    mode: 'marker',
    entry: STREAM_FIXTURE_ENTRY,
    consumerName: 'stream-consumer',
    stream: new kinesis.Stream(stack, 'Orders'),
  });
  return { queueConsumer, streamConsumer };
}

describe('ConsumerBase', () => {
  it('is the base of both consumer constructs, each granting through its own function', () => {
    const { queueConsumer, streamConsumer } = bothConsumers();

    for (const consumer of [queueConsumer, streamConsumer]) {
      expect(consumer).toBeInstanceOf(ConsumerBase);
      expect(consumer.grantPrincipal).toBe(consumer.handler.grantPrincipal);
    }
  });

  it('gives both consumers a helper for every outcome metric of the contract, keyed by their own name', () => {
    const { queueConsumer, streamConsumer } = bothConsumers();

    for (const consumer of [queueConsumer, streamConsumer]) {
      for (const [key, metricName] of Object.entries(METRICS)) {
        // `processed` is read by `metricProcessed`, `cacheHit` by `metricCacheHit`, ...
        const helper = `metric${key.charAt(0).toUpperCase()}${key.slice(1)}` as keyof ConsumerBase;
        const metric = (consumer[helper] as () => cloudwatch.Metric).call(consumer);
        expect({
          helper,
          namespace: metric.namespace,
          metricName: metric.metricName,
          dimensions: metric.dimensions,
        }).toEqual({
          helper,
          namespace: DEFAULT_METRIC_NAMESPACE,
          metricName,
          dimensions: { [METRIC_DIMENSION_CONSUMER]: consumer.consumerName },
        });
      }
    }
  });

  it('says how each consumer dead-letters: redrive by default for a queue, always direct for a stream', () => {
    const { queueConsumer, streamConsumer } = bothConsumers();

    expect(queueConsumer.deadLetterMode).toBe('redrive');
    expect(streamConsumer.deadLetterMode).toBe('direct');
  });
});
