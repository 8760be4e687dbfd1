/**
 * The Kafka construct sample (`examples/cdk-kafka-consumer-stack.ts`, shown in docs/kafka.md) as
 * written: synthesized in a fresh app, its event source mapping pinned, and nothing found by
 * cdk-nag's AwsSolutions and Serverless packs. It is not deployed: the local emulator runs no
 * Kafka event source mapping.
 */
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { KafkaOrdersStack } from '../../examples/cdk-kafka-consumer-stack';
import { nagFindings } from './support';

const CLUSTER_ARN =
  'arn:aws:kafka:us-east-1:111122223333:cluster/orders/0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d-1';

describe('the Kafka construct sample', () => {
  const app = new App();
  const stack = new KafkaOrdersStack(app, 'KafkaOrdersStack', { clusterArn: CLUSTER_ARN });
  const template = Template.fromStack(stack);

  it('maps the topic in provisioned mode with partial batch responses, its consumer group named after the consumer, records given up on after half the retention', () => {
    const mappings = Object.values(template.findResources('AWS::Lambda::EventSourceMapping'));
    expect(mappings).toHaveLength(1);
    expect(mappings[0]!.Properties).toMatchObject({
      EventSourceArn: CLUSTER_ARN,
      Topics: ['orders'],
      AmazonManagedKafkaEventSourceConfig: { ConsumerGroupId: 'kafka-orders' },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ProvisionedPollerConfig: { MinimumPollers: 1, MaximumPollers: 200 },
      MaximumRecordAgeInSeconds: 129_600,
    });
  });

  it('passes cdk-nag with nothing unacknowledged', () => {
    expect(nagFindings(app)).toEqual([]);
  });
});
