/**
 * `IdempotentStreamConsumer` on a Kafka topic: an Amazon MSK cluster (IAM access control or a
 * SASL/SCRAM secret) and a self-managed cluster (in a VPC, with a secret). Pins the event source
 * mapping's properties (provisioned mode, partial batch responses, bisection, retries, record
 * age, on-failure destination, topic, consumer group, access configurations), the role's exact
 * grants, the offset-lag alarm, the record TTL from the topic's retention, cdk-nag, and the
 * refusals of the `kafka` prop.
 */
import * as path from 'node:path';
import { CfnParameter, Duration, type Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { describe, expect, it } from 'vitest';
import { ENV } from '../../lambda/core/contract';
import {
  IdempotentStreamConsumer,
  type IdempotentStreamConsumerProps,
  KAFKA_VPC_ACTIONS,
  type KafkaTopicSource,
  MSK_CLUSTER_ACTIONS,
  MSK_IAM_ACTIONS,
} from '../../lib';
import { INBOX_TABLE_ACTIONS } from '../../lib/consumer-permissions';
import { acknowledgments, allow, logicalId, nagFindings, newStack, permissionsOf } from './support';

const STREAM_FIXTURE_ENTRY = path.join(__dirname, 'fixtures', 'stream-handler.ts');
const CLUSTER_ARN =
  'arn:aws:kafka:us-east-1:123456789012:cluster/orders/0a1b2c3d-0000-0000-0000-000000000000-1';
const LOG_WRITE = ['logs:CreateLogStream', 'logs:PutLogEvents'];

type Props = Partial<IdempotentStreamConsumerProps>;

function synth(kafka: (stack: Stack) => KafkaTopicSource, props: Props = {}) {
  const { app, stack } = newStack();
  const consumer = new IdempotentStreamConsumer(stack, 'Consumer', {
    mode: 'atomic',
    entry: STREAM_FIXTURE_ENTRY,
    consumerName: 'orders-from-kafka',
    kafka: kafka(stack),
    ...props,
  } as IdempotentStreamConsumerProps);
  return { app, stack, consumer, template: Template.fromStack(stack) };
}

function mappingOf(template: Template): Record<string, unknown> {
  const mappings = Object.values(template.findResources('AWS::Lambda::EventSourceMapping'));
  expect(mappings).toHaveLength(1);
  return mappings[0]!.Properties;
}

function failuresOf(kafka: Partial<KafkaTopicSource>, props: Props = {}): readonly string[] {
  const { stack } = newStack();
  try {
    new IdempotentStreamConsumer(stack, 'Consumer', {
      mode: 'atomic',
      entry: STREAM_FIXTURE_ENTRY,
      kafka: kafka as KafkaTopicSource,
      ...props,
    } as IdempotentStreamConsumerProps);
  } catch (error) {
    return (error as { failures?: readonly string[] }).failures ?? [(error as Error).message];
  }
  return [];
}

describe('IdempotentStreamConsumer on an MSK topic with IAM access control', () => {
  const built = synth(() => ({ clusterArn: CLUSTER_ARN, topic: 'orders' }));

  it('maps the topic in provisioned mode with partial batch responses, bisect, bounded retries and record age, joining the consumer group named after the consumer', () => {
    const { template, consumer } = built;
    expect(mappingOf(template)).toEqual({
      EventSourceArn: CLUSTER_ARN,
      FunctionName: { Ref: logicalId(consumer.handler) },
      Topics: ['orders'],
      AmazonManagedKafkaEventSourceConfig: { ConsumerGroupId: 'orders-from-kafka' },
      ProvisionedPollerConfig: { MinimumPollers: 1, MaximumPollers: 200 },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      StartingPosition: 'TRIM_HORIZON',
      BatchSize: 100,
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: 10_000,
      // Half the topic's default retention of 7 days.
      MaximumRecordAgeInSeconds: 302_400,
      DestinationConfig: {
        OnFailure: { Destination: { 'Fn::GetAtt': [logicalId(consumer.onFailureQueue!), 'Arn'] } },
      },
    });
    expect(consumer.eventSourceArn).toBe(CLUSTER_ARN);
  });

  it('grants the cluster calls, the IAM data-plane actions on the cluster, the topic and the group, and the VPC calls, nothing else', () => {
    const { template, consumer } = built;
    const topicArn =
      'arn:aws:kafka:us-east-1:123456789012:topic/orders/0a1b2c3d-0000-0000-0000-000000000000-1/orders';
    const groupArn =
      'arn:aws:kafka:us-east-1:123456789012:group/orders/0a1b2c3d-0000-0000-0000-000000000000-1/orders-from-kafka';
    expect(permissionsOf(template, consumer.role)).toEqual(
      [
        ...allow(MSK_CLUSTER_ACTIONS, CLUSTER_ARN),
        ...allow(MSK_IAM_ACTIONS.cluster, CLUSTER_ARN),
        ...allow(MSK_IAM_ACTIONS.topic, topicArn),
        ...allow(MSK_IAM_ACTIONS.group, groupArn),
        ...allow(KAFKA_VPC_ACTIONS, '*'),
        ...allow(INBOX_TABLE_ACTIONS.atomic, consumer.inboxTable!),
        ...allow(['sqs:SendMessage'], consumer.onFailureQueue!),
        ...allow(['sqs:SendMessage'], consumer.deadLetterQueue),
        ...allow(LOG_WRITE, `${logicalId(consumer.logGroup)}.Arn`),
      ].sort(),
    );
  });

  it('alarms on OffsetLag, not IteratorAge, and derives the record TTL from the topic retention', () => {
    const { template, consumer } = built;
    expect(consumer.iteratorAgeAlarm).toBeUndefined();
    const alarm = template.findResources('AWS::CloudWatch::Alarm')[logicalId(consumer.offsetLagAlarm!)]!;
    expect(alarm.Properties).toMatchObject({
      MetricName: 'OffsetLag',
      Threshold: 10_000,
      Statistic: 'Maximum',
    });
    expect(JSON.stringify(template.findResources('AWS::CloudWatch::Alarm'))).not.toContain('IteratorAge');
    // The record TTL covers a re-read of the whole topic: at least its 7-day retention.
    const variables =
      template.findResources('AWS::Lambda::Function')[logicalId(consumer.handler)]!.Properties.Environment
        .Variables;
    expect(Number(variables[ENV.ttlSeconds])).toBeGreaterThanOrEqual(7 * 24 * 3600);
  });

  it('reports nothing unacknowledged to cdk-nag, acknowledging the VPC calls on Resource::* with a reason', () => {
    expect(nagFindings(built.app)).toEqual([]);
    const iam5 = acknowledgments(built.app).filter(({ rule }) => rule === 'AwsSolutions-IAM5[Resource::*]');
    expect(iam5).toHaveLength(1);
    expect(iam5[0]!.reason).toContain('ec2:CreateNetworkInterface');
  });
});

describe('IdempotentStreamConsumer on an MSK cluster known only at deploy time', () => {
  it('derives the topic and group ARNs from the cluster ARN token with Fn::Split and Fn::Join', () => {
    const { template, consumer } = synth((stack) => ({
      clusterArn: new CfnParameter(stack, 'ClusterArn').valueAsString,
      topic: 'orders',
    }));
    const resources = permissionsOf(template, consumer.role)
      .filter((line) => line.includes('kafka-cluster:ReadData') || line.includes('kafka-cluster:AlterGroup'))
      .map((line) => JSON.parse(line.split(' ').slice(2).join(' ')) as { 'Fn::Join': [string, unknown[]] });
    expect(resources).toHaveLength(2);
    const joined = resources.map((resource) => JSON.stringify(resource['Fn::Join'][1]));
    expect(joined.some((parts) => parts.includes(':topic/') && parts.includes('/orders'))).toBe(true);
    expect(joined.some((parts) => parts.includes(':group/') && parts.includes('/orders-from-kafka'))).toBe(
      true,
    );
    for (const parts of joined) expect(parts).toContain(':cluster/');
  });
});

describe('IdempotentStreamConsumer on Kafka with a secret', () => {
  it('authenticates to MSK with SASL/SCRAM-512 from the secret: the secret readable, no IAM data-plane actions', () => {
    const { template, consumer } = synth(
      (stack) => ({
        clusterArn: CLUSTER_ARN,
        topic: 'orders',
        consumerGroupId: 'orders-group',
        secret: new secretsmanager.Secret(stack, 'Credentials'),
      }),
      { offsetLagThreshold: 500, retryAttempts: 5, maxRecordAge: Duration.hours(1) },
    );
    const mapping = mappingOf(template);
    expect(mapping).toMatchObject({
      AmazonManagedKafkaEventSourceConfig: { ConsumerGroupId: 'orders-group' },
      SourceAccessConfigurations: [
        { Type: 'SASL_SCRAM_512_AUTH', URI: { Ref: expect.stringMatching(/Credentials/) } },
      ],
      MaximumRetryAttempts: 5,
      MaximumRecordAgeInSeconds: 3600,
    });
    const secretId = (mapping.SourceAccessConfigurations as { URI: { Ref: string } }[])[0]!.URI.Ref;
    const permissions = permissionsOf(template, consumer.role);
    expect(permissions).toContain(`Allow secretsmanager:GetSecretValue ${secretId}`);
    expect(permissions.filter((line) => line.includes('kafka-cluster:'))).toEqual([]);
    const alarm = template.findResources('AWS::CloudWatch::Alarm')[logicalId(consumer.offsetLagAlarm!)]!;
    expect(alarm.Properties.Threshold).toBe(500);
  });

  it('reaches a self-managed cluster in a VPC with its brokers, authentication, subnets and security groups, no MSK actions', () => {
    const { app, template, consumer } = synth((stack) => ({
      bootstrapServers: ['b-1.kafka.internal:9096', 'b-2.kafka.internal:9096'],
      topic: 'payments.v1',
      secret: new secretsmanager.Secret(stack, 'Credentials'),
      authentication: 'SASL_SCRAM_256_AUTH',
      vpcSubnetIds: ['subnet-0a', 'subnet-0b'],
      securityGroupIds: ['sg-0c'],
      provisionedPollers: { minimum: 2, maximum: 4 },
      retention: Duration.days(3),
    }));
    const mapping = mappingOf(template);
    expect(mapping.EventSourceArn).toBeUndefined();
    expect(mapping).toMatchObject({
      SelfManagedEventSource: {
        Endpoints: { KafkaBootstrapServers: ['b-1.kafka.internal:9096', 'b-2.kafka.internal:9096'] },
      },
      SelfManagedKafkaEventSourceConfig: { ConsumerGroupId: 'orders-from-kafka' },
      Topics: ['payments.v1'],
      ProvisionedPollerConfig: { MinimumPollers: 2, MaximumPollers: 4 },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      MaximumRecordAgeInSeconds: 129_600,
    });
    expect(
      (mapping.SourceAccessConfigurations as { Type: string; URI: unknown }[]).map(({ Type, URI }) => [
        Type,
        URI,
      ]),
    ).toEqual([
      ['SASL_SCRAM_256_AUTH', expect.anything()],
      ['VPC_SUBNET', 'subnet:subnet-0a'],
      ['VPC_SUBNET', 'subnet:subnet-0b'],
      ['VPC_SECURITY_GROUP', 'security_group:sg-0c'],
    ]);
    const permissions = permissionsOf(template, consumer.role);
    expect(permissions.filter((line) => /kafka(-cluster)?:/.test(line))).toEqual([]);
    expect(permissions).toEqual(expect.arrayContaining(allow(KAFKA_VPC_ACTIONS, '*')));
    expect(consumer.eventSourceArn).toBeUndefined();
    // The test's own secret has no rotation (AwsSolutions-SMG4): nothing of the construct's is found.
    expect(nagFindings(app).filter(({ paths }) => paths.some((at) => at.includes('/Consumer')))).toEqual([]);
  });

  it('asks a self-managed cluster outside a VPC for no VPC actions and acknowledges nothing on Resource::*', () => {
    const { app, template, consumer } = synth(() => ({
      bootstrapServers: ['kafka.example.com:9092', '10.0.0.7:9092', '[2001:db8::7]:9092'],
      topic: 'orders',
    }));
    expect(mappingOf(template).SelfManagedEventSource).toEqual({
      Endpoints: { KafkaBootstrapServers: ['kafka.example.com:9092', '10.0.0.7:9092', '[2001:db8::7]:9092'] },
    });
    expect(permissionsOf(template, consumer.role).filter((line) => line.startsWith('Allow ec2:'))).toEqual(
      [],
    );
    expect(acknowledgments(app).filter(({ rule }) => rule.startsWith('AwsSolutions-IAM5'))).toEqual([]);
    expect(nagFindings(app)).toEqual([]);
  });
});

describe('IdempotentStreamConsumer refuses a Kafka source it cannot wire', () => {
  it('names every failure of the kafka prop at once', () => {
    const failures = failuresOf(
      {
        topic: 'orders/v1',
        clusterArn: CLUSTER_ARN,
        bootstrapServers: ['broker'],
        consumerGroupId: 'a group',
        authentication: 'PLAIN' as never,
        vpcSubnetIds: ['subnet-0a'],
        provisionedPollers: { minimum: 5, maximum: 2 },
      },
      { parallelizationFactor: 2, iteratorAgeThreshold: Duration.minutes(5) },
    );
    const expected = [
      /kafka\.topic/,
      /exactly one of `kafka\.clusterArn`.*both/,
      /host:port/,
      /kafka\.consumerGroupId/,
      /kafka\.authentication` to be one of/,
      /`kafka\.authentication` only with `kafka\.secret`/,
      /only for a self-managed cluster/,
      /both `kafka\.vpcSubnetIds` and `kafka\.securityGroupIds`/,
      /minimum` \(5\) to be at most `maximum` \(2\)/,
      /no `parallelizationFactor` with a Kafka source/,
      /`offsetLagThreshold`, not `iteratorAgeThreshold`/,
    ];
    for (const pattern of expected)
      expect(
        failures.some((failure) => pattern.test(failure)),
        String(pattern),
      ).toBe(true);
  });

  it('refuses two sources, offsetLagThreshold without Kafka, and AT_TIMESTAMP without its timestamp', () => {
    const stream = (stack: Stack) => new kinesis.Stream(stack, 'Events');
    const { stack } = newStack();
    expect(
      () =>
        new IdempotentStreamConsumer(stack, 'Consumer', {
          mode: 'marker',
          entry: STREAM_FIXTURE_ENTRY,
          kafka: { clusterArn: CLUSTER_ARN, topic: 'orders' },
          stream: stream(stack),
        }),
    ).toThrow(/exactly one of `stream`/);
    const other = newStack().stack;
    expect(
      () =>
        new IdempotentStreamConsumer(other, 'Consumer', {
          mode: 'marker',
          entry: STREAM_FIXTURE_ENTRY,
          stream: stream(other),
          offsetLagThreshold: 10,
        }),
    ).toThrow(/`offsetLagThreshold` only with a Kafka source/);
    expect(
      failuresOf(
        { clusterArn: CLUSTER_ARN, topic: 'orders' },
        { startingPosition: lambda.StartingPosition.AT_TIMESTAMP },
      ),
    ).toEqual([expect.stringMatching(/startingPositionTimestamp/)]);
  });
});
