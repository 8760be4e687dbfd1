import { CfnParameter, Duration, RemovalPolicy, Token } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  CONSUMER_MODES,
  CONSUMER_NAME_PATTERN,
  DEAD_LETTER_MODES,
  DEFAULT_DEADLINE_MARGIN_MILLIS,
  DEFAULT_METRIC_NAMESPACE,
  ENV,
  INBOX_ATTRIBUTES,
  LOG_LEVELS,
  METRIC_DIMENSION_CONSUMER,
  METRICS,
} from '../../lambda/core/contract';
import { NAME_PATTERN, scopeKey } from '../../lambda/core/dedup-key';
import { readConstructSettings } from '../../lambda/core/environment';
import { DEFAULT_DEADLINE_MARGIN_MILLIS as RUNTIME_DEFAULT_DEADLINE_MARGIN_MILLIS } from '../../lambda/core/options';
import { IdempotentConsumer, type IdempotentConsumerProps, InboxTable } from '../../lib';
import { INBOX_TABLE_ACTIONS, inboxKeyPatterns } from '../../lib/consumer-permissions';
import { allow, FIXTURE_ENTRY, logicalId, newStack, permissionsOf } from './support';

const SQS_CONSUME = [
  'sqs:ChangeMessageVisibility',
  'sqs:DeleteMessage',
  'sqs:GetQueueAttributes',
  'sqs:GetQueueUrl',
  'sqs:ReceiveMessage',
];
const LOG_WRITE = ['logs:CreateLogStream', 'logs:PutLogEvents'];

/** One consumer in a fresh stack, with its template and annotations. */
function synth(props: Partial<IdempotentConsumerProps> = {}) {
  const { app, stack } = newStack();
  const consumer = new IdempotentConsumer(stack, 'Consumer', {
    mode: 'marker',
    ...(props.handler ? {} : { entry: FIXTURE_ENTRY }),
    ...props,
  } as IdempotentConsumerProps);
  return {
    app,
    stack,
    consumer,
    template: Template.fromStack(stack),
    annotations: Annotations.fromStack(stack),
  };
}

function expectThrow(props: Partial<IdempotentConsumerProps>, message: string | RegExp) {
  const { stack } = newStack();
  expect(
    () =>
      new IdempotentConsumer(stack, 'Consumer', {
        mode: 'marker',
        entry: FIXTURE_ENTRY,
        ...props,
      } as IdempotentConsumerProps),
  ).toThrow(message);
}

/** The error `create` throws (fails the test when it throws none). */
function errorOf(create: () => unknown): unknown {
  try {
    create();
  } catch (error) {
    return error;
  }
  throw new Error('Expected an error, got none');
}

function environmentOf(template: Template, consumer: IdempotentConsumer): Record<string, unknown> {
  const fn = template.findResources('AWS::Lambda::Function')[logicalId(consumer.handler)];
  return fn?.Properties.Environment.Variables;
}

describe('IdempotentConsumer with default props', () => {
  let built: ReturnType<typeof synth>;
  beforeAll(() => {
    built = synth();
  });

  it('creates a standard queue that redrives to its dead-letter queue after 5 receives', () => {
    const { template, consumer } = built;
    template.resourceCountIs('AWS::SQS::Queue', 2);
    template.hasResourceProperties('AWS::SQS::Queue', {
      RedrivePolicy: {
        deadLetterTargetArn: { 'Fn::GetAtt': [logicalId(consumer.deadLetterQueue!), 'Arn'] },
        maxReceiveCount: 5,
      },
      MessageRetentionPeriod: Duration.days(4).toSeconds(),
      FifoQueue: Match.absent(),
    });
  });

  it('keeps dead letters 14 days, and takes messages up to SQS’s largest, 1 MiB, set explicitly', () => {
    const queue = built.template.findResources('AWS::SQS::Queue')[logicalId(built.consumer.deadLetterQueue!)];
    expect(queue?.Properties).toEqual({
      MessageRetentionPeriod: 1_209_600,
      MaximumMessageSize: 1_048_576,
      SqsManagedSseEnabled: true,
    });
  });

  it('encrypts both queues with SSE-SQS and denies every request without TLS', () => {
    const { template, consumer } = built;
    for (const queue of [consumer.queue, consumer.deadLetterQueue!]) {
      const properties = template.findResources('AWS::SQS::Queue')[logicalId(queue)]?.Properties;
      expect(properties.SqsManagedSseEnabled).toBe(true);
      template.hasResourceProperties('AWS::SQS::QueuePolicy', {
        Queues: [{ Ref: logicalId(queue) }],
        PolicyDocument: {
          Statement: [
            {
              Action: 'sqs:*',
              Effect: 'Deny',
              Principal: { AWS: '*' },
              Condition: { Bool: { 'aws:SecureTransport': 'false' } },
              Resource: { 'Fn::GetAtt': [logicalId(queue), 'Arn'] },
            },
          ],
        },
      });
    }
  });

  it('sets the visibility timeout to 6 × the function timeout', () => {
    built.template.hasResourceProperties('AWS::SQS::Queue', { VisibilityTimeout: 180 });
    built.template.hasResourceProperties('AWS::Lambda::Function', { Timeout: 30 });
  });

  it('creates an inbox table keyed and expiring as the contract says, with PITR and on-demand billing', () => {
    built.template.resourceCountIs('AWS::DynamoDB::Table', 1);
    built.template.hasResource('AWS::DynamoDB::Table', {
      Properties: {
        KeySchema: [{ AttributeName: INBOX_ATTRIBUTES.pk, KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: INBOX_ATTRIBUTES.pk, AttributeType: 'S' }],
        BillingMode: 'PAY_PER_REQUEST',
        TimeToLiveSpecification: { AttributeName: INBOX_ATTRIBUTES.expiresAt, Enabled: true },
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        SSESpecification: { SSEEnabled: true },
      },
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
    });
  });

  it('creates an ARM64 Node.js 24 function with explicit memory, timeout and log group', () => {
    const { template, consumer } = built;
    template.hasResourceProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      MemorySize: 256,
      Timeout: 30,
      Handler: 'index.handler',
      LoggingConfig: { LogGroup: { Ref: logicalId(consumer.logGroup!) } },
      Role: { 'Fn::GetAtt': [logicalId(consumer.role!), 'Arn'] },
      TracingConfig: Match.absent(),
    });
    template.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 30 });
  });

  it('gives the function a role without managed policies', () => {
    built.template.hasResourceProperties('AWS::IAM::Role', {
      AssumeRolePolicyDocument: {
        Statement: [
          { Action: 'sts:AssumeRole', Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' } },
        ],
      },
      ManagedPolicyArns: Match.absent(),
    });
  });

  it('maps the queue to the function with partial batch responses and batches of 10', () => {
    const { template, consumer } = built;
    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 1);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [logicalId(consumer.queue), 'Arn'] },
      FunctionName: { Ref: logicalId(consumer.handler) },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BatchSize: 10,
      MaximumBatchingWindowInSeconds: Match.absent(),
      ScalingConfig: Match.absent(),
    });
    expect(consumer.eventSourceMapping.eventSourceMappingId).toBe(consumer.eventSource.eventSourceMappingId);
  });

  it('sets the contract environment variables and nothing else but NODE_OPTIONS', () => {
    const { template, consumer } = built;
    expect(environmentOf(template, consumer)).toEqual({
      NODE_OPTIONS: '--enable-source-maps',
      [ENV.inboxTable]: { Ref: logicalId(consumer.inboxTable!) },
      [ENV.consumer]: consumer.consumerName,
      [ENV.mode]: 'marker',
      [ENV.ttlSeconds]: String(Duration.days(33).toSeconds()),
      [ENV.deadLetterMode]: 'redrive',
      [ENV.leaseMillis]: '30000',
      [ENV.metricNamespace]: DEFAULT_METRIC_NAMESPACE,
    });
  });

  it('derives a valid consumer name from the stack and construct path', () => {
    expect(built.consumer.consumerName).toMatch(/^TestStack-Consumer-[0-9A-F]{8}$/);
    expect(built.consumer.consumerName).toMatch(/^[A-Za-z0-9._:-]{1,100}$/);
  });

  it('grants exactly the marker actions on the inbox table, consumption on the queue and writes to its log group', () => {
    const { template, consumer } = built;
    expect(permissionsOf(template, consumer.role!)).toEqual(
      [
        ...allow(['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'], consumer.inboxTable!),
        ...allow(SQS_CONSUME, consumer.queue),
        ...allow(LOG_WRITE, consumer.logGroup!),
      ].sort(),
    );
  });

  it('derives the record TTL from the whole dead-letter path: max(4 + 14 + 14 days, 3 hours) + 1 day', () => {
    expect(built.consumer.redeliveryWindow.toDays()).toBe(32);
    expect(built.consumer.recordTtl.toDays()).toBe(33);
    built.annotations.hasNoWarning('*', Match.anyValue());
  });

  it('creates the four alarms without actions', () => {
    const { template, consumer } = built;
    template.resourceCountIs('AWS::CloudWatch::Alarm', 4);
    expect(consumer.alarms).toHaveLength(4);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Namespace: 'AWS/SQS',
      Dimensions: [
        { Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(consumer.deadLetterQueue!), 'QueueName'] } },
      ],
      Statistic: 'Maximum',
      Period: 60,
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 1,
      TreatMissingData: 'ignore',
      AlarmActions: Match.absent(),
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: METRICS.mismatch,
      Namespace: DEFAULT_METRIC_NAMESPACE,
      Dimensions: [{ Name: METRIC_DIMENSION_CONSUMER, Value: consumer.consumerName }],
      Statistic: 'Sum',
      Period: 60,
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'notBreaching',
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'ApproximateAgeOfOldestMessage',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(consumer.queue), 'QueueName'] } }],
      Statistic: 'Maximum',
      Threshold: 900,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Threshold: 0.25,
      EvaluationPeriods: 3,
      DatapointsToAlarm: 3,
      TreatMissingData: 'notBreaching',
      Metrics: Match.arrayWith([
        Match.objectLike({
          Expression: 'IF((FILL(p, 0) + FILL(d, 0)) > 0, FILL(d, 0) / (FILL(p, 0) + FILL(d, 0)), 0)',
        }),
        Match.objectLike({
          Id: 'p',
          MetricStat: Match.objectLike({ Metric: Match.objectLike({ MetricName: METRICS.processed }) }),
        }),
        Match.objectLike({
          Id: 'd',
          MetricStat: Match.objectLike({ Metric: Match.objectLike({ MetricName: METRICS.duplicate }) }),
        }),
      ]),
    });
  });

  it('creates a dashboard with every outcome, the DLQ depth and the age of the oldest message', () => {
    const { template } = built;
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    const body = JSON.stringify(Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0]);
    for (const name of [
      ...Object.values(METRICS),
      'ApproximateNumberOfMessagesVisible',
      'ApproximateAgeOfOldestMessage',
    ]) {
      expect(body).toContain(`\\"${name}\\"`);
    }
  });

  it('exposes metrics in the contract namespace with the consumer dimension', () => {
    const { consumer } = built;
    const helpers = {
      [METRICS.processed]: consumer.metricProcessed(),
      [METRICS.duplicate]: consumer.metricDuplicate(),
      [METRICS.inFlight]: consumer.metricInFlight(),
      [METRICS.mismatch]: consumer.metricMismatch(),
      [METRICS.stale]: consumer.metricStale(),
      [METRICS.retry]: consumer.metricRetry(),
      [METRICS.permanent]: consumer.metricPermanent(),
      [METRICS.takeover]: consumer.metricTakeover(),
      [METRICS.cacheHit]: consumer.metricCacheHit(),
    };
    for (const [name, metric] of Object.entries(helpers)) {
      expect(metric.metricName).toBe(name);
      expect(metric.namespace).toBe(DEFAULT_METRIC_NAMESPACE);
      expect(metric.dimensions).toEqual({ [METRIC_DIMENSION_CONSUMER]: consumer.consumerName });
      expect(metric.statistic).toBe('Sum');
    }
  });
});

describe('IdempotentConsumer queue options', () => {
  it('creates a FIFO queue and a FIFO dead-letter queue', () => {
    const { template, consumer } = synth({ fifo: true });
    const queues = template.findResources('AWS::SQS::Queue');
    expect(queues[logicalId(consumer.queue)]?.Properties).toMatchObject({ FifoQueue: true });
    expect(queues[logicalId(consumer.queue)]?.Properties.ContentBasedDeduplication).toBeUndefined();
    expect(queues[logicalId(consumer.deadLetterQueue!)]?.Properties).toMatchObject({ FifoQueue: true });
  });

  it('turns on content-based deduplication only on the source FIFO queue when asked', () => {
    const { template, consumer } = synth({
      fifo: true,
      contentBasedDeduplication: true,
      queueName: 'orders.fifo',
    });
    const queues = template.findResources('AWS::SQS::Queue');
    expect(queues[logicalId(consumer.queue)]?.Properties).toMatchObject({
      FifoQueue: true,
      ContentBasedDeduplication: true,
      QueueName: 'orders.fifo',
    });
    expect(
      queues[logicalId(consumer.deadLetterQueue!)]?.Properties.ContentBasedDeduplication,
    ).toBeUndefined();
  });

  it('encrypts both queues with a customer-managed key and lets the function decrypt', () => {
    const { stack } = newStack();
    const key = new kms.Key(stack, 'Key');
    const consumer = new IdempotentConsumer(stack, 'Consumer', {
      mode: 'marker',
      entry: FIXTURE_ENTRY,
      queueEncryptionKey: key,
    });
    const template = Template.fromStack(stack);
    for (const queue of [consumer.queue, consumer.deadLetterQueue!]) {
      expect(template.findResources('AWS::SQS::Queue')[logicalId(queue)]?.Properties.KmsMasterKeyId).toEqual({
        'Fn::GetAtt': [logicalId(key), 'Arn'],
      });
    }
    expect(permissionsOf(template, consumer.role!)).toContain(`Allow kms:Decrypt ${logicalId(key)}.Arn`);
  });

  it('applies batch size, batching window and maximum concurrency to the event source', () => {
    const { template } = synth({
      batchSize: 100,
      maxBatchingWindow: Duration.seconds(20),
      maxConcurrency: 5,
    });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      BatchSize: 100,
      MaximumBatchingWindowInSeconds: 20,
      ScalingConfig: { MaximumConcurrency: 5 },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    // 6 × 30 s + 20 s batching window
    template.hasResourceProperties('AWS::SQS::Queue', { VisibilityTimeout: 200 });
  });

  it('uses a given dead-letter queue for the created queue', () => {
    const { stack } = newStack();
    const dlq = new sqs.Queue(stack, 'Dlq', { retentionPeriod: Duration.days(10) });
    const consumer = new IdempotentConsumer(stack, 'Consumer', {
      mode: 'marker',
      entry: FIXTURE_ENTRY,
      deadLetterQueue: dlq,
      maxReceiveCount: 8,
    });
    const template = Template.fromStack(stack);
    template.resourceCountIs('AWS::SQS::Queue', 2);
    template.hasResourceProperties('AWS::SQS::Queue', {
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [logicalId(dlq), 'Arn'] }, maxReceiveCount: 8 },
    });
    expect(consumer.deadLetterQueue).toBe(dlq);
    // 4 days + 10 days + 14 days of redrive allowance, + 1 day
    expect(consumer.recordTtl.toDays()).toBe(29);
  });

  it('consumes a given queue, keeps its settings and finds its dead-letter queue', () => {
    const { stack } = newStack();
    const dlq = new sqs.Queue(stack, 'Dlq');
    const queue = new sqs.Queue(stack, 'Queue', {
      visibilityTimeout: Duration.minutes(5),
      retentionPeriod: Duration.days(2),
      deadLetterQueue: { queue: dlq, maxReceiveCount: 4 },
    });
    const consumer = new IdempotentConsumer(stack, 'Consumer', {
      mode: 'marker',
      entry: FIXTURE_ENTRY,
      queue,
    });
    const template = Template.fromStack(stack);
    template.resourceCountIs('AWS::SQS::Queue', 2);
    expect(consumer.queue).toBe(queue);
    expect(consumer.deadLetterQueue).toBe(dlq);
    // DLQ retention defaults to SQS's 4 days: max(2 + 4 + 14 days, 3 hours) + 1 day
    expect(consumer.recordTtl.toDays()).toBe(21);
    expect(consumer.deadLetterQueueAlarm).toBeDefined();
  });

  it('warns when an imported queue has no known dead-letter queue, and covers 14 days in it and in a DLQ it cannot see', () => {
    const { stack } = newStack();
    const queue = sqs.Queue.fromQueueArn(stack, 'Queue', 'arn:aws:sqs:eu-west-1:123456789012:orders');
    const consumer = new IdempotentConsumer(stack, 'Consumer', {
      mode: 'marker',
      entry: FIXTURE_ENTRY,
      queue,
    });
    Annotations.fromStack(stack).hasWarning(
      '/TestStack/Consumer',
      Match.stringLikeRegexp('no dead-letter queue'),
    );
    expect(consumer.deadLetterQueue).toBeUndefined();
    expect(consumer.deadLetterQueueAlarm).toBeUndefined();
    // Its redrive policy cannot be read: 14 days + an assumed 14-day DLQ + 14 days, + 1 day
    expect(consumer.redeliveryWindow.toDays()).toBe(42);
    expect(consumer.recordTtl.toDays()).toBe(43);
    expect(consumer.alarms).toHaveLength(3);
  });

  it('counts neither a dead-letter queue nor a redrive for a queue of this app that has none', () => {
    const { stack } = newStack();
    const queue = new sqs.Queue(stack, 'Queue', {
      visibilityTimeout: Duration.minutes(3),
      retentionPeriod: Duration.days(2),
    });
    const consumer = new IdempotentConsumer(stack, 'Consumer', {
      mode: 'marker',
      entry: FIXTURE_ENTRY,
      queue,
    });
    expect(consumer.redeliveryWindow.toDays()).toBe(2);
    expect(consumer.recordTtl.toDays()).toBe(3);
  });

  it('assumes 14 days for an imported dead-letter queue', () => {
    const { stack } = newStack();
    const dlq = sqs.Queue.fromQueueArn(stack, 'Dlq', 'arn:aws:sqs:eu-west-1:123456789012:orders-dlq');
    const consumer = new IdempotentConsumer(stack, 'Consumer', {
      mode: 'marker',
      entry: FIXTURE_ENTRY,
      deadLetterQueue: dlq,
      retentionPeriod: Duration.days(1),
    });
    // 1 day + 14 days + 14 days of redrive allowance
    expect(consumer.redeliveryWindow.toDays()).toBe(29);
  });
});

describe('IdempotentConsumer visibility timeout rule', () => {
  it('throws when visibilityTimeout is below 6 × the function timeout, naming both', () => {
    expectThrow(
      { visibilityTimeout: Duration.minutes(2), timeout: Duration.seconds(30) },
      '`visibilityTimeout` (2 minutes) must be at least 6 × the function timeout (30 seconds) = 3 minutes',
    );
  });

  it('counts the batching window in the rule', () => {
    expectThrow(
      { visibilityTimeout: Duration.minutes(3), maxBatchingWindow: Duration.seconds(30) },
      '`visibilityTimeout` (3 minutes) must be at least 6 × the function timeout (30 seconds) + maxBatchingWindow (30 seconds) = 3 minutes 30 seconds',
    );
  });

  it('throws when a given queue hides messages for less than 6 × the function timeout', () => {
    const { stack } = newStack();
    const queue = new sqs.Queue(stack, 'Queue', { visibilityTimeout: Duration.seconds(60) });
    expect(
      () =>
        new IdempotentConsumer(stack, 'Consumer', {
          mode: 'marker',
          entry: FIXTURE_ENTRY,
          queue,
          deadLetterMode: 'redrive',
        }),
    ).toThrow(
      'The visibility timeout of `queue` (1 minute) must be at least 6 × the function timeout (30 seconds)',
    );
  });

  it('accepts a visibility timeout of exactly 6 × the timeout', () => {
    const { template } = synth({ visibilityTimeout: Duration.minutes(6), timeout: Duration.minutes(1) });
    template.hasResourceProperties('AWS::SQS::Queue', { VisibilityTimeout: 360 });
  });

  it('skips the rule when the visibility timeout is a token', () => {
    const { stack } = newStack();
    const seconds = new CfnParameter(stack, 'Visibility', { type: 'Number' }).valueAsNumber;
    expect(Token.isUnresolved(seconds)).toBe(true);
    expect(
      () =>
        new IdempotentConsumer(stack, 'Consumer', {
          mode: 'marker',
          entry: FIXTURE_ENTRY,
          visibilityTimeout: Duration.seconds(seconds),
        }),
    ).not.toThrow();
  });
});

describe('IdempotentConsumer permissions per mode', () => {
  it('grants atomic mode PutItem and GetItem on the inbox table (no ConditionCheckItem: a commit puts its marker), and the business table actions', () => {
    const { stack } = newStack();
    const orders = new dynamodb.Table(stack, 'Orders', {
      partitionKey: { name: 'orderId', type: dynamodb.AttributeType.STRING },
    });
    const consumer = new IdempotentConsumer(stack, 'Consumer', {
      mode: 'atomic',
      entry: FIXTURE_ENTRY,
      businessTables: [{ table: orders }],
    });
    expect(permissionsOf(Template.fromStack(stack), consumer.role!)).toEqual(
      [
        ...allow(['dynamodb:GetItem', 'dynamodb:PutItem'], consumer.inboxTable!),
        ...allow(
          [
            'dynamodb:ConditionCheckItem',
            'dynamodb:DeleteItem',
            'dynamodb:GetItem',
            'dynamodb:PutItem',
            'dynamodb:UpdateItem',
          ],
          orders,
        ),
        ...allow(SQS_CONSUME, consumer.queue),
        ...allow(LOG_WRITE, consumer.logGroup!),
      ].sort(),
    );
  });

  it('grants two-phase mode PutItem, GetItem and UpdateItem on the inbox table (no DeleteItem: a released claim is kept)', () => {
    const { template, consumer } = synth({ mode: 'two-phase' });
    expect(permissionsOf(template, consumer.role!)).toEqual(
      [
        ...allow(['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'], consumer.inboxTable!),
        ...allow(SQS_CONSUME, consumer.queue),
        ...allow(LOG_WRITE, consumer.logGroup!),
      ].sort(),
    );
  });

  it('creates no inbox table in entity mode and grants only on the business tables', () => {
    const { stack } = newStack();
    const audit = new dynamodb.Table(stack, 'Audit', {
      partitionKey: { name: 'auditId', type: dynamodb.AttributeType.STRING },
    });
    const reference = new dynamodb.Table(stack, 'Reference', {
      partitionKey: { name: 'id', type: dynamodb.AttributeType.STRING },
    });
    const consumer = new IdempotentConsumer(stack, 'Consumer', {
      mode: 'entity',
      entry: FIXTURE_ENTRY,
      businessTables: [{ table: audit }, { table: reference, access: ['read'] }],
    });
    const template = Template.fromStack(stack);
    template.resourceCountIs('AWS::DynamoDB::Table', 2);
    expect(consumer.inboxTable).toBeUndefined();
    expect(environmentOf(template, consumer)[ENV.inboxTable]).toBeUndefined();
    expect(permissionsOf(template, consumer.role!)).toEqual(
      [
        ...allow(
          ['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
          audit,
        ),
        ...allow(['dynamodb:GetItem'], reference),
        ...allow(SQS_CONSUME, consumer.queue),
        ...allow(LOG_WRITE, consumer.logGroup!),
      ].sort(),
    );
  });

  it('names a given inbox table in entity mode without granting anything on it', () => {
    const { stack } = newStack();
    const inbox = new InboxTable(stack, 'Inbox');
    const audit = new dynamodb.Table(stack, 'Audit', {
      partitionKey: { name: 'auditId', type: dynamodb.AttributeType.STRING },
    });
    const consumer = new IdempotentConsumer(stack, 'Consumer', {
      mode: 'entity',
      entry: FIXTURE_ENTRY,
      table: inbox.table,
      businessTables: [{ table: audit }],
    });
    const template = Template.fromStack(stack);
    expect(environmentOf(template, consumer)[ENV.inboxTable]).toEqual({ Ref: logicalId(inbox.table) });
    expect(
      permissionsOf(template, consumer.role!).some((line) => line.includes(logicalId(inbox.table))),
    ).toBe(false);
  });

  it('grants the KMS actions of customer-managed table keys', () => {
    const { stack } = newStack();
    const key = new kms.Key(stack, 'Key');
    const readKey = new kms.Key(stack, 'ReadKey');
    const reference = new dynamodb.Table(stack, 'Reference', {
      partitionKey: { name: 'id', type: dynamodb.AttributeType.STRING },
      encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: readKey,
    });
    const consumer = new IdempotentConsumer(stack, 'Consumer', {
      mode: 'marker',
      entry: FIXTURE_ENTRY,
      tableEncryptionKey: key,
      businessTables: [{ table: reference, access: ['read'] }],
    });
    const template = Template.fromStack(stack);
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [{ AttributeName: INBOX_ATTRIBUTES.pk, KeyType: 'HASH' }],
      SSESpecification: {
        SSEEnabled: true,
        SSEType: 'KMS',
        KMSMasterKeyId: { 'Fn::GetAtt': [logicalId(key), 'Arn'] },
      },
    });
    const permissions = permissionsOf(template, consumer.role!);
    expect(permissions.filter((line) => line.includes(' kms:'))).toEqual(
      [
        ...allow(['kms:Decrypt', 'kms:DescribeKey', 'kms:Encrypt', 'kms:GenerateDataKey'], key),
        ...allow(['kms:Decrypt', 'kms:DescribeKey'], readKey),
      ].sort(),
    );
  });

  it('grants sqs:SendMessage on the dead-letter queue only in direct mode, and sets its URL', () => {
    const { template, consumer } = synth({ deadLetterMode: 'direct' });
    const permissions = permissionsOf(template, consumer.role!);
    expect(permissions.filter((line) => line.includes('sqs:SendMessage'))).toEqual(
      allow(['sqs:SendMessage'], consumer.deadLetterQueue!),
    );
    expect(environmentOf(template, consumer)).toMatchObject({
      [ENV.deadLetterMode]: 'direct',
      [ENV.deadLetterQueueUrl]: { Ref: logicalId(consumer.deadLetterQueue!) },
    });
  });

  it('tells the function in direct mode the largest message the dead-letter queue it created takes', () => {
    const { template, consumer } = synth({ deadLetterMode: 'direct' });
    expect(environmentOf(template, consumer)).toMatchObject({ [ENV.deadLetterMaxMessageBytes]: '1048576' });
  });

  it('leaves a given dead-letter queue’s size alone and unsaid, and says nothing in redrive mode', () => {
    const { stack } = newStack();
    const dlq = new sqs.Queue(stack, 'Dlq');
    const direct = new IdempotentConsumer(stack, 'Direct', {
      mode: 'marker',
      entry: FIXTURE_ENTRY,
      deadLetterQueue: dlq,
      deadLetterMode: 'direct',
    });
    const redrive = new IdempotentConsumer(stack, 'Redrive', { mode: 'marker', entry: FIXTURE_ENTRY });
    const template = Template.fromStack(stack);
    const given = template.findResources('AWS::SQS::Queue')[logicalId(dlq)];
    expect(given).toBeDefined();
    expect(given?.Properties?.MaximumMessageSize).toBeUndefined();
    for (const consumer of [direct, redrive]) {
      expect(Object.keys(environmentOf(template, consumer))).not.toContain(ENV.deadLetterMaxMessageBytes);
    }
  });

  it('grants GenerateDataKey and Decrypt on the dead-letter queue key in direct mode', () => {
    const { stack } = newStack();
    const key = new kms.Key(stack, 'Key');
    const consumer = new IdempotentConsumer(stack, 'Consumer', {
      mode: 'marker',
      entry: FIXTURE_ENTRY,
      queueEncryptionKey: key,
      deadLetterMode: 'direct',
    });
    const kmsLines = permissionsOf(Template.fromStack(stack), consumer.role!).filter((line) =>
      line.includes(' kms:'),
    );
    // kms:Decrypt appears twice: to receive from the queue and to send to the DLQ.
    expect(kmsLines).toEqual([...allow(['kms:Decrypt', 'kms:Decrypt', 'kms:GenerateDataKey'], key)].sort());
  });

  it('never grants wildcard actions', () => {
    const { template, consumer } = synth({ mode: 'two-phase', deadLetterMode: 'direct' });
    for (const line of permissionsOf(template, consumer.role!)) {
      expect(line).not.toMatch(/\*/);
    }
  });

  it('adds the X-Ray actions when tracing is active', () => {
    const { template, consumer } = synth({ tracing: lambda.Tracing.ACTIVE });
    template.hasResourceProperties('AWS::Lambda::Function', { TracingConfig: { Mode: 'Active' } });
    expect(permissionsOf(template, consumer.role!)).toEqual(
      expect.arrayContaining(['Allow xray:PutTelemetryRecords *', 'Allow xray:PutTraceSegments *']),
    );
  });
});

describe('IdempotentConsumer with shared and existing resources', () => {
  it('lets several consumers share one InboxTable, each with its own consumer name', () => {
    const { stack } = newStack();
    const inbox = new InboxTable(stack, 'Inbox');
    const first = new IdempotentConsumer(stack, 'First', {
      mode: 'marker',
      entry: FIXTURE_ENTRY,
      table: inbox.table,
      consumerName: 'first',
    });
    const second = new IdempotentConsumer(stack, 'Second', {
      mode: 'two-phase',
      entry: FIXTURE_ENTRY,
      table: inbox.table,
      consumerName: 'second',
    });
    const template = Template.fromStack(stack);
    template.resourceCountIs('AWS::DynamoDB::Table', 1);
    expect(environmentOf(template, first)).toMatchObject({
      [ENV.inboxTable]: { Ref: logicalId(inbox.table) },
      [ENV.consumer]: 'first',
    });
    expect(environmentOf(template, second)).toMatchObject({
      [ENV.inboxTable]: { Ref: logicalId(inbox.table) },
      [ENV.consumer]: 'second',
    });
    // Each role gets its own mode's actions on the shared table.
    const onInbox = (consumer: IdempotentConsumer) =>
      permissionsOf(template, consumer.role!).filter((line) => line.includes(logicalId(inbox.table)));
    expect(onInbox(first)).toEqual(allow(INBOX_TABLE_ACTIONS.marker, inbox.table).sort());
    expect(onInbox(second)).toEqual(allow(INBOX_TABLE_ACTIONS['two-phase'], inbox.table).sort());
  });

  it('creates an InboxTable with a customer-managed key and the chosen removal policy', () => {
    const { stack } = newStack();
    const key = new kms.Key(stack, 'Key');
    new InboxTable(stack, 'Inbox', {
      encryptionKey: key,
      removalPolicy: RemovalPolicy.DESTROY,
      tableName: 'inbox',
    });
    Template.fromStack(stack).hasResource('AWS::DynamoDB::Table', {
      Properties: Match.objectLike({
        TableName: 'inbox',
        TimeToLiveSpecification: { AttributeName: INBOX_ATTRIBUTES.expiresAt, Enabled: true },
        SSESpecification: {
          SSEEnabled: true,
          SSEType: 'KMS',
          KMSMasterKeyId: { 'Fn::GetAtt': [logicalId(key), 'Arn'] },
        },
      }),
      DeletionPolicy: 'Delete',
    });
  });

  it('rejects a table whose partition key is not the contract pk', () => {
    const { stack } = newStack();
    const table = new dynamodb.Table(stack, 'Wrong', {
      partitionKey: { name: 'id', type: dynamodb.AttributeType.STRING },
    });
    expect(
      () => new IdempotentConsumer(stack, 'Consumer', { mode: 'marker', entry: FIXTURE_ENTRY, table }),
    ).toThrow(
      `Expected the inbox \`table\` to have only the String partition key \`${INBOX_ATTRIBUTES.pk}\`, got id (HASH)`,
    );
  });

  it('rejects a table that expires another attribute', () => {
    const { stack } = newStack();
    const table = new dynamodb.Table(stack, 'Wrong', {
      partitionKey: { name: INBOX_ATTRIBUTES.pk, type: dynamodb.AttributeType.STRING },
      timeToLiveAttribute: 'ttl',
    });
    expect(
      () => new IdempotentConsumer(stack, 'Consumer', { mode: 'marker', entry: FIXTURE_ENTRY, table }),
    ).toThrow(
      `Expected the inbox \`table\` TTL attribute to be \`${INBOX_ATTRIBUTES.expiresAt}\`, got \`"ttl"\``,
    );
  });

  it('warns when a given inbox table has no TTL', () => {
    const { stack } = newStack();
    const table = new dynamodb.Table(stack, 'NoTtl', {
      partitionKey: { name: INBOX_ATTRIBUTES.pk, type: dynamodb.AttributeType.STRING },
    });
    new IdempotentConsumer(stack, 'Consumer', { mode: 'marker', entry: FIXTURE_ENTRY, table });
    Annotations.fromStack(stack).hasWarning('/TestStack/Consumer', Match.stringLikeRegexp('has no TTL'));
  });

  it('accepts an imported table and grants on its ARN', () => {
    const { stack } = newStack();
    const table = dynamodb.Table.fromTableName(stack, 'Imported', 'shared-inbox');
    const consumer = new IdempotentConsumer(stack, 'Consumer', {
      mode: 'marker',
      entry: FIXTURE_ENTRY,
      table,
    });
    const permissions = permissionsOf(Template.fromStack(stack), consumer.role!);
    expect(permissions.filter((line) => line.includes('dynamodb:'))).toHaveLength(3);
    expect(permissions.find((line) => line.includes('dynamodb:PutItem'))).toContain('table/shared-inbox');
  });

  it('wires a given function: environment, event source and grants, no role or log group of its own', () => {
    const { stack } = newStack();
    const handler = new lambda.Function(stack, 'Handler', {
      runtime: lambda.Runtime.NODEJS_24_X,
      handler: 'index.handler',
      code: lambda.Code.fromInline('exports.handler = async () => ({ batchItemFailures: [] });'),
      timeout: Duration.seconds(20),
      environment: { OWN: 'value' },
    });
    const consumer = new IdempotentConsumer(stack, 'Consumer', {
      mode: 'two-phase',
      handler,
      consumerName: 'given',
    });
    const template = Template.fromStack(stack);
    expect(consumer.handler).toBe(handler);
    expect(consumer.role).toBeUndefined();
    expect(consumer.logGroup).toBeUndefined();
    template.resourceCountIs('AWS::Lambda::Function', 1);
    expect(environmentOf(template, consumer)).toMatchObject({
      OWN: 'value',
      [ENV.consumer]: 'given',
      [ENV.leaseMillis]: '20000',
    });
    // 6 × 20 s
    template.hasResourceProperties('AWS::SQS::Queue', { VisibilityTimeout: 120 });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: logicalId(handler) },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    expect(permissionsOf(template, handler.role!)).toEqual(
      expect.arrayContaining(allow(['dynamodb:UpdateItem'], consumer.inboxTable!)),
    );
  });

  it('warns that the environment of an imported function cannot be set', () => {
    const { stack } = newStack();
    const handler = lambda.Function.fromFunctionAttributes(stack, 'Handler', {
      functionArn: 'arn:aws:lambda:eu-west-1:123456789012:function:consumer',
      role: undefined,
      sameEnvironment: true,
    });
    const consumer = new IdempotentConsumer(stack, 'Consumer', { mode: 'marker', handler });
    Annotations.fromStack(stack).hasWarning('/TestStack/Consumer', Match.stringLikeRegexp(ENV.consumer));
    // An unknown timeout is taken as the Lambda maximum, the safe side for the lease and the queue.
    expect(consumer.lease.toMinutes()).toBe(15);
    Template.fromStack(stack).hasResourceProperties('AWS::SQS::Queue', { VisibilityTimeout: 5400 });
  });

  it('notifies an alarm topic from every alarm', () => {
    const { stack } = newStack();
    const topic = new sns.Topic(stack, 'Topic');
    new IdempotentConsumer(stack, 'Consumer', { mode: 'marker', entry: FIXTURE_ENTRY, alarmTopic: topic });
    const alarms = Object.values(Template.fromStack(stack).findResources('AWS::CloudWatch::Alarm'));
    expect(alarms).toHaveLength(4);
    for (const alarm of alarms) expect(alarm.Properties.AlarmActions).toEqual([{ Ref: logicalId(topic) }]);
  });

  it('leaves out only the metric-math duplicate-rate alarm when duplicateRateAlarm is false', () => {
    const { template, consumer } = synth({ duplicateRateAlarm: false });
    template.resourceCountIs('AWS::CloudWatch::Alarm', 3);
    expect(consumer.duplicateRateAlarm).toBeUndefined();
    expect(consumer.alarms).toEqual([
      consumer.deadLetterQueueAlarm,
      consumer.mismatchAlarm,
      consumer.ageOfOldestMessageAlarm,
    ]);
    for (const alarm of Object.values(template.findResources('AWS::CloudWatch::Alarm'))) {
      expect(alarm.Properties.Metrics).toBeUndefined();
      expect(alarm.Properties.MetricName).toEqual(expect.any(String));
    }
    // The dashboard still graphs the duplicate rate.
    const [dashboard] = Object.values(template.findResources('AWS::CloudWatch::Dashboard'));
    expect(JSON.stringify(dashboard?.Properties.DashboardBody)).toContain('Duplicate rate');
  });

  it('creates no alarms or dashboard when switched off', () => {
    const { template, consumer } = synth({ createAlarms: false, dashboard: false });
    template.resourceCountIs('AWS::CloudWatch::Alarm', 0);
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 0);
    expect(consumer.alarms).toEqual([]);
    expect(consumer.dashboard).toBeUndefined();
  });
});

describe('IdempotentConsumer record TTL', () => {
  it('covers 3 × the producer retry horizon when it is the longest term', () => {
    const { consumer, template } = synth({
      retentionPeriod: Duration.days(2),
      deadLetterRetentionPeriod: Duration.days(3),
      redriveAllowance: Duration.days(1),
      producerRetryHorizon: Duration.days(3),
    });
    // 3 × 3 days beats 2 + 3 + 1 days
    expect(consumer.redeliveryWindow.toDays()).toBe(9);
    expect(consumer.recordTtl.toDays()).toBe(10);
    expect(environmentOf(template, consumer)[ENV.ttlSeconds]).toBe(String(Duration.days(10).toSeconds()));
  });

  it('derives the same whole-path TTL for a FIFO queue, whose move to the DLQ resets the enqueue time', () => {
    const { consumer, template } = synth({ fifo: true });
    expect(consumer.redeliveryWindow.toDays()).toBe(32);
    expect(consumer.recordTtl.toDays()).toBe(33);
    expect(environmentOf(template, consumer)[ENV.ttlSeconds]).toBe(String(Duration.days(33).toSeconds()));
  });

  it('adds the declared redriveAllowance after the queue and dead-letter retentions', () => {
    const { consumer, template } = synth({
      retentionPeriod: Duration.days(2),
      deadLetterRetentionPeriod: Duration.days(7),
      redriveAllowance: Duration.days(3),
    });
    expect(consumer.redeliveryWindow.toDays()).toBe(12);
    expect(consumer.recordTtl.toDays()).toBe(13);
    expect(environmentOf(template, consumer)[ENV.ttlSeconds]).toBe(String(Duration.days(13).toSeconds()));
  });

  it('warns at synth time when recordTtl is shorter than the whole redelivery path, naming each term', () => {
    const { annotations, consumer } = synth({ recordTtl: Duration.days(15) });
    expect(consumer.recordTtl.toDays()).toBe(15);
    expect(annotations.findWarning('/TestStack/Consumer', Match.anyValue()).map((w) => w.entry.data)).toEqual(
      [
        '`recordTtl` (15 days) is shorter than the redelivery window (32 days: the longer of queue retention 4 days + dead-letter queue retention 14 days + redriveAllowance 14 days = 32 days and 3 × producerRetryHorizon 3 hours). A message redelivered or redriven after its inbox record expired is processed again. Set `recordTtl` to at least 32 days, or leave it unset (default 33 days). [ack: effectively-once:recordTtlShorterThanRedeliveryWindow]',
      ],
    );
  });

  it('does not warn when recordTtl covers the redelivery window', () => {
    const { annotations } = synth({ recordTtl: Duration.days(32) });
    annotations.hasNoWarning('*', Match.anyValue());
  });

  it('sets the lease from its prop and warns when it is shorter than the timeout in two-phase mode', () => {
    const { annotations, consumer, template } = synth({ mode: 'two-phase', lease: Duration.seconds(10) });
    expect(environmentOf(template, consumer)[ENV.leaseMillis]).toBe('10000');
    annotations.hasWarning(
      '/TestStack/Consumer',
      Match.stringLikeRegexp(
        '`lease` \\(10 seconds\\) is shorter than the function timeout \\(30 seconds\\)',
      ),
    );
  });
});

describe('IdempotentConsumer other environment', () => {
  it('merges the user environment and sets namespace and log level from props', () => {
    const { template, consumer } = synth({
      environment: { ORDERS_TABLE: 'orders', NODE_OPTIONS: '--max-old-space-size=200' },
      metricNamespace: 'Shop/Consumers',
      logLevel: 'debug',
      consumerName: 'orders:projector.v1',
    });
    expect(environmentOf(template, consumer)).toMatchObject({
      ORDERS_TABLE: 'orders',
      NODE_OPTIONS: '--max-old-space-size=200',
      [ENV.metricNamespace]: 'Shop/Consumers',
      [ENV.logLevel]: 'debug',
      [ENV.consumer]: 'orders:projector.v1',
    });
    expect(consumer.metricDuplicate().namespace).toBe('Shop/Consumers');
  });

  it('turns the completed-record cache on through EO_COMPLETED_CACHE_MAX_ENTRIES, which the runtime reads back', () => {
    const { template, consumer } = synth({ completedCacheMaxEntries: 2500 });
    const variable = environmentOf(template, consumer)[ENV.completedCacheMaxEntries];

    expect(variable).toBe('2500');
    expect(
      readConstructSettings({ [ENV.completedCacheMaxEntries]: variable as string }).completedCacheMaxEntries,
    ).toBe(2500);
    expect(consumer.metricCacheHit().metricName).toBe(METRICS.cacheHit);
  });

  it('sets no cache variable by default: the cache is off', () => {
    const { template, consumer } = synth();
    expect(environmentOf(template, consumer)[ENV.completedCacheMaxEntries]).toBeUndefined();
  });
});

describe('IdempotentConsumer prop validation', () => {
  it.each([
    [
      { entry: undefined },
      'Expected exactly one of `entry` (a handler file to bundle) and `handler` (an existing function), got neither',
    ],
    [
      { consumerName: 'has space' },
      "Expected `consumerName` to be 1-100 characters of A-Z, a-z, 0-9, '.', '_', ':', '-', got `\"has space\"`",
    ],
    [{ consumerName: 'a#b' }, 'got `"a#b"`'],
    [{ consumerName: 'x'.repeat(101) }, 'Expected `consumerName`'],
    [
      { environment: { [ENV.consumer]: 'sneaky' } },
      `Expected \`environment\` not to set \`${ENV.consumer}\`: the construct sets it from \`consumerName\``,
    ],
    [{ environment: { [ENV.ttlSeconds]: '1' } }, 'the construct sets it from `recordTtl`'],
    [{ contentBasedDeduplication: true }, 'Expected `contentBasedDeduplication` only with `fifo: true`'],
    [
      { fifo: true, queueName: 'orders' },
      "Expected `queueName` to be up to 80 characters of A-Z, a-z, 0-9, '-', '_' ending in '.fifo' (FIFO queue), got `\"orders\"`",
    ],
    [{ batchSize: 11 }, 'Expected `batchSize` to be an integer from 1 to 10, got `11`'],
    [{ memorySize: 100 }, 'Expected `memorySize` to be an integer from 128 to 10240, got `100`'],
    [{ maxReceiveCount: 0 }, 'Expected `maxReceiveCount` to be an integer from 1 to 1000, got `0`'],
    [
      { timeout: Duration.minutes(16) },
      'Expected `timeout` to be from 1 second to 15 minutes, got `16 minutes`',
    ],
    [
      { retentionPeriod: Duration.days(15) },
      'Expected `retentionPeriod` to be from 1 minute to 14 days, got `15 days`',
    ],
    [{ duplicateRateThreshold: 1.5 }, 'Expected `duplicateRateThreshold` to be in (0, 1], got `1.5`'],
    [
      { duplicateRateAlarm: false, duplicateRateThreshold: 0.5 },
      'Expected no `duplicateRateThreshold` with `duplicateRateAlarm: false`',
    ],
    [{ metricNamespace: 'AWS/Lambda' }, 'Expected `metricNamespace`'],
    [
      { mode: 'entity' },
      'Expected `businessTables` to hold at least one table with `write` access in `entity` mode',
    ],
    [
      { mode: 'exactly-once' },
      "Expected `mode` to be one of 'marker', 'atomic', 'entity', 'two-phase', got `\"exactly-once\"`",
    ],
    [
      { deadLetterMode: 'drop' },
      "Expected `deadLetterMode` to be one of 'redrive', 'direct', got `\"drop\"`",
    ],
    [
      { logLevel: 'verbose' },
      "Expected `logLevel` to be one of 'debug', 'info', 'warn', 'error', 'silent', got `\"verbose\"`",
    ],
    [
      { completedCacheMaxEntries: 0 },
      'Expected `completedCacheMaxEntries` to be an integer from 1 to 10000, got `0`',
    ],
    [
      { completedCacheMaxEntries: 10_001 },
      'Expected `completedCacheMaxEntries` to be an integer from 1 to 10000, got `10001`',
    ],
    [
      { environment: { [ENV.completedCacheMaxEntries]: '5' } },
      'the construct sets it from `completedCacheMaxEntries`',
    ],
  ] as [Partial<IdempotentConsumerProps>, string][])('rejects %j', (props, message) => {
    expectThrow(props, message);
  });

  it('rejects both entry and handler', () => {
    const { stack } = newStack();
    const handler = lambda.Function.fromFunctionName(stack, 'Fn', 'existing');
    expectThrow({ handler }, 'got both');
  });

  it('rejects function props with a given handler instead of ignoring them', () => {
    const { stack } = newStack();
    const handler = lambda.Function.fromFunctionName(stack, 'Fn', 'existing');
    expect(
      () =>
        new IdempotentConsumer(stack, 'Consumer', {
          mode: 'marker',
          handler,
          memorySize: 512,
          timeout: Duration.seconds(10),
        }),
    ).toThrow('Expected no `memorySize`, `timeout` with a given `handler`: configure your function');
  });

  it('rejects queue props with an existing queue instead of ignoring them', () => {
    const { stack } = newStack();
    const queue = sqs.Queue.fromQueueArn(stack, 'Queue', 'arn:aws:sqs:eu-west-1:123456789012:orders');
    expectThrow(
      { queue, fifo: true, maxReceiveCount: 3 } as never,
      'Expected no `fifo`, `maxReceiveCount` with an existing `queue`',
    );
  });

  it('rejects a dead-letter queue that is not the given queue’s own', () => {
    const { stack } = newStack();
    const own = new sqs.Queue(stack, 'Own');
    const other = new sqs.Queue(stack, 'Other');
    const queue = new sqs.Queue(stack, 'Queue', {
      visibilityTimeout: Duration.minutes(3),
      deadLetterQueue: { queue: own, maxReceiveCount: 5 },
    });
    expect(
      () =>
        new IdempotentConsumer(stack, 'Consumer', {
          mode: 'marker',
          entry: FIXTURE_ENTRY,
          queue,
          deadLetterQueue: other,
        }),
    ).toThrow(
      'Expected `deadLetterQueue` to be the dead-letter queue of `queue` (TestStack/Own), got TestStack/Other',
    );
  });

  it('rejects a standard dead-letter queue for a FIFO queue', () => {
    const { stack } = newStack();
    const dlq = new sqs.Queue(stack, 'Dlq');
    expect(
      () =>
        new IdempotentConsumer(stack, 'Consumer', {
          mode: 'marker',
          entry: FIXTURE_ENTRY,
          fifo: true,
          deadLetterQueue: dlq,
        }),
    ).toThrow('Expected a FIFO `deadLetterQueue` for a FIFO queue, got a standard queue');
  });

  it('rejects direct dead-lettering without a known dead-letter queue', () => {
    const { stack } = newStack();
    const queue = sqs.Queue.fromQueueArn(stack, 'Queue', 'arn:aws:sqs:eu-west-1:123456789012:orders');
    expectThrow(
      { queue, deadLetterMode: 'direct' } as never,
      'Expected a `deadLetterQueue` with `deadLetterMode: direct`',
    );
  });

  it('rejects a table encryption key in entity mode, where no inbox table is created', () => {
    const { stack } = newStack();
    const audit = new dynamodb.Table(stack, 'Audit', {
      partitionKey: { name: 'auditId', type: dynamodb.AttributeType.STRING },
    });
    expect(
      () =>
        new IdempotentConsumer(stack, 'Consumer', {
          mode: 'entity',
          entry: FIXTURE_ENTRY,
          tableEncryptionKey: new kms.Key(stack, 'Key'),
          businessTables: [{ table: audit }],
        }),
    ).toThrow('Expected no `tableEncryptionKey` in `entity` mode');
  });

  it('rejects an empty or unknown business table access', () => {
    const { stack } = newStack();
    const audit = new dynamodb.Table(stack, 'Audit', {
      partitionKey: { name: 'auditId', type: dynamodb.AttributeType.STRING },
    });
    expect(
      () =>
        new IdempotentConsumer(stack, 'Consumer', {
          mode: 'marker',
          entry: FIXTURE_ENTRY,
          businessTables: [{ table: audit, access: [] }],
        }),
    ).toThrow(
      "Expected `businessTables[0].access` to be a non-empty list of 'read', 'write', 'conditionCheck', got an empty list",
    );
    expect(
      () =>
        new IdempotentConsumer(stack, 'Other', {
          mode: 'marker',
          entry: FIXTURE_ENTRY,
          businessTables: [{ table: audit, access: ['read', 'delete' as never] }],
        }),
    ).toThrow(
      "Expected `businessTables[0].access[1]` to be one of 'read', 'write', 'conditionCheck', got `\"delete\"`",
    );
  });

  it('fails synth with one error naming all three of three distinct bad values', () => {
    const { stack } = newStack();
    const create = () =>
      new IdempotentConsumer(stack, 'Consumer', {
        mode: 'marker',
        entry: FIXTURE_ENTRY,
        consumerName: 'has space',
        batchSize: 11,
        retentionPeriod: Duration.days(15),
      });
    const failures = [
      "Expected `consumerName` to be 1-100 characters of A-Z, a-z, 0-9, '.', '_', ':', '-', got `\"has space\"`",
      'Expected `batchSize` to be an integer from 1 to 10, got `11`',
      'Expected `retentionPeriod` to be from 1 minute to 14 days, got `15 days`',
    ];
    expect(errorOf(create)).toMatchObject({
      name: 'InvalidPropsError',
      code: 'INVALID_OPTIONS',
      failures,
      message: `[TestStack/Consumer] 3 problems with the props of IdempotentConsumer:\n${failures.map((failure) => `- ${failure}`).join('\n')}`,
    });
  });

  it('collects the rules between props (lease, timeouts, queues) with the single-prop checks', () => {
    const { stack } = newStack();
    const queue = sqs.Queue.fromQueueArn(stack, 'Queue', 'arn:aws:sqs:eu-west-1:123456789012:orders');
    const create = () =>
      new IdempotentConsumer(stack, 'Consumer', {
        mode: 'two-phase',
        entry: FIXTURE_ENTRY,
        queue,
        deadLetterMode: 'direct',
        timeout: Duration.seconds(2),
        recordTtl: Duration.seconds(1),
        memorySize: 100,
      });
    expect(errorOf(create)).toMatchObject({
      failures: [
        'Expected `memorySize` to be an integer from 128 to 10240, got `100`',
        'Expected a `deadLetterQueue` with `deadLetterMode: direct`: the queue you passed has no known DLQ',
        "`timeout` (2 seconds) must be longer than the runtime's deadline margin (`deadlineMarginMillis`, default 2 seconds): the batch processor starts no message once less than the margin is left, so the function would process nothing",
        'The default lease (the function timeout, or 15 minutes when it is unknown) (2 seconds) must be shorter than `recordTtl` (1 second) in two-phase mode: a claim must never outlive its record, and the runtime rejects `leaseMillis` >= `ttlSeconds` at cold start',
      ],
    });
  });

  it('throws a single failure as the sentence itself, and creates nothing when the props are invalid', () => {
    const { stack } = newStack();
    expect(
      () => new IdempotentConsumer(stack, 'Consumer', { mode: 'marker', entry: FIXTURE_ENTRY, batchSize: 0 }),
    ).toThrow('[TestStack/Consumer] Expected `batchSize` to be an integer from 1 to 10, got `0`');
    expect(stack.node.findChild('Consumer').node.children).toEqual([]);
  });

  it('skips validation of unresolved tokens', () => {
    const { stack } = newStack();
    const name = new CfnParameter(stack, 'Name').valueAsString;
    const memory = new CfnParameter(stack, 'Memory', { type: 'Number' }).valueAsNumber;
    expect(
      () =>
        new IdempotentConsumer(stack, 'Consumer', {
          mode: 'marker',
          entry: FIXTURE_ENTRY,
          consumerName: name,
          memorySize: memory,
        }),
    ).not.toThrow();
  });

  it('warns when maxReceiveCount leaves transient failures too few retries', () => {
    const { annotations } = synth({ maxReceiveCount: 1 });
    annotations.hasWarning('/TestStack/Consumer', Match.stringLikeRegexp('`maxReceiveCount` is 1'));
  });
});

describe('IdempotentConsumer function timeout and the runtime deadline margin', () => {
  it('throws when the timeout is at or below the deadline margin, naming both', () => {
    expect(DEFAULT_DEADLINE_MARGIN_MILLIS).toBe(2000);
    for (const seconds of [1, 2]) {
      expectThrow(
        { timeout: Duration.seconds(seconds) },
        `[TestStack/Consumer] \`timeout\` (${seconds} second${seconds === 1 ? '' : 's'}) must be longer than the runtime's deadline margin (\`deadlineMarginMillis\`, default 2 seconds): the batch processor starts no message once less than the margin is left, so the function would process nothing`,
      );
    }
  });

  it('accepts a timeout just above the deadline margin', () => {
    const { template } = synth({ timeout: Duration.seconds(3) });
    template.hasResourceProperties('AWS::Lambda::Function', { Timeout: 3 });
  });

  it('throws for a given function whose timeout is at or below the deadline margin', () => {
    const { stack } = newStack();
    const handler = new lambda.Function(stack, 'Handler', {
      runtime: lambda.Runtime.NODEJS_24_X,
      handler: 'index.handler',
      code: lambda.Code.fromInline('exports.handler = async () => ({ batchItemFailures: [] });'),
      timeout: Duration.seconds(2),
    });
    expect(() => new IdempotentConsumer(stack, 'Consumer', { mode: 'marker', handler })).toThrow(
      "[TestStack/Consumer] The timeout of `handler` (2 seconds) must be longer than the runtime's deadline margin",
    );
  });

  it('mirrors the batch processor default margin in the contract', () => {
    expect(DEFAULT_DEADLINE_MARGIN_MILLIS).toBe(RUNTIME_DEFAULT_DEADLINE_MARGIN_MILLIS);
  });
});

describe('IdempotentConsumer contract values shared with the runtime', () => {
  it('accepts exactly the dead-letter modes and log levels the runtime reads back from the environment', () => {
    for (const deadLetterMode of DEAD_LETTER_MODES) {
      const settings = readConstructSettings({
        [ENV.deadLetterMode]: deadLetterMode,
        [ENV.deadLetterQueueUrl]: 'https://sqs.eu-west-1.amazonaws.com/123456789012/dlq',
      });
      expect(settings.deadLetter).toBe(deadLetterMode);
    }
    for (const logLevel of LOG_LEVELS) {
      expect(readConstructSettings({ [ENV.logLevel]: logLevel }).logLevel).toBe(logLevel);
    }
    expect(() => readConstructSettings({ [ENV.logLevel]: 'verbose' })).toThrow(
      "Expected `EO_LOG_LEVEL` to be one of 'debug', 'info', 'warn', 'error', 'silent', got `\"verbose\"`",
    );
    expect(() => readConstructSettings({ [ENV.completedCacheMaxEntries]: '10001' })).toThrow(
      'Expected `EO_COMPLETED_CACHE_MAX_ENTRIES` to be an integer from 1 to 10000, got `"10001"`',
    );
    expect(() => readConstructSettings({ [ENV.deadLetterMode]: 'drop' })).toThrow(
      "Expected `EO_DEAD_LETTER_MODE` to be one of 'redrive', 'direct', got `\"drop\"`",
    );
  });

  it('checks consumer names with the pattern the runtime checks them with', () => {
    expect(CONSUMER_NAME_PATTERN.source).toBe(NAME_PATTERN.source);
    expect(CONSUMER_NAME_PATTERN.flags).toBe(NAME_PATTERN.flags);
  });

  it('grants on the inbox table for exactly the contract modes', () => {
    expect(Object.keys(INBOX_TABLE_ACTIONS)).toEqual([...CONSUMER_MODES]);
  });
});

describe('IdempotentConsumer two-phase lease rules', () => {
  it('throws when recordTtl is shorter than the lease, as the runtime does at cold start', () => {
    expectThrow(
      { mode: 'two-phase', lease: Duration.minutes(15), recordTtl: Duration.minutes(10) },
      '[TestStack/Consumer] `lease` (15 minutes) must be shorter than `recordTtl` (10 minutes) in two-phase mode: a claim must never outlive its record, and the runtime rejects `leaseMillis` >= `ttlSeconds` at cold start',
    );
  });

  it('throws when recordTtl equals the default lease, the function timeout', () => {
    expectThrow(
      { mode: 'two-phase', recordTtl: Duration.seconds(30) },
      '[TestStack/Consumer] The default lease (the function timeout, or 15 minutes when it is unknown) (30 seconds) must be shorter than `recordTtl` (30 seconds) in two-phase mode',
    );
  });

  it('accepts a recordTtl shorter than the lease outside two-phase mode, where no lease is taken', () => {
    const { consumer } = synth({ mode: 'marker', recordTtl: Duration.seconds(10) });
    expect(consumer.recordTtl.toSeconds()).toBe(10);
  });

  it('warns when the lease outlasts the last redelivery, visibilityTimeout × (maxReceiveCount - 1), so a crashed claim is dead-lettered first', () => {
    const { annotations } = synth({ mode: 'two-phase', lease: Duration.minutes(13) });
    expect(annotations.findWarning('/TestStack/Consumer', Match.anyValue()).map((w) => w.entry.data)).toEqual(
      [
        "The two-phase lease (13 minutes) is longer than the queue's visibility timeout (3 minutes) × (maxReceiveCount (5) - 1) = 12 minutes, when the last delivery of a message comes after the one whose invocation crashed holding its claim: every later delivery meets a live lease, and SQS moves the message to the dead-letter queue before any delivery may take the claim over. Shorten `lease`, or raise the visibility timeout or maxReceiveCount. [ack: effectively-once:leaseOutlivesRedelivery]",
      ],
    );
  });

  it('does not warn when the lease ends exactly as the last redelivery becomes possible', () => {
    const { annotations } = synth({ mode: 'two-phase', lease: Duration.minutes(12) });
    annotations.hasNoWarning('*', Match.anyValue());
  });

  it('reads visibility timeout and maxReceiveCount of a given queue of this app for the lease warning', () => {
    const { stack } = newStack();
    const dlq = new sqs.Queue(stack, 'Dlq');
    const queue = new sqs.Queue(stack, 'Queue', {
      visibilityTimeout: Duration.minutes(4),
      deadLetterQueue: { queue: dlq, maxReceiveCount: 2 },
    });
    new IdempotentConsumer(stack, 'Consumer', {
      mode: 'two-phase',
      entry: FIXTURE_ENTRY,
      queue,
      lease: Duration.minutes(5),
    });
    Annotations.fromStack(stack).hasWarning(
      '/TestStack/Consumer',
      Match.stringLikeRegexp(
        "The two-phase lease \\(5 minutes\\) is longer than the queue's visibility timeout \\(4 minutes\\) × \\(maxReceiveCount \\(2\\) - 1\\) = 4 minutes,",
      ),
    );
  });

  it('skips the lease warning when the given queue is imported', () => {
    const { stack } = newStack();
    const queue = sqs.Queue.fromQueueArn(stack, 'Queue', 'arn:aws:sqs:eu-west-1:123456789012:orders');
    const dlq = sqs.Queue.fromQueueArn(stack, 'Dlq', 'arn:aws:sqs:eu-west-1:123456789012:orders-dlq');
    new IdempotentConsumer(stack, 'Consumer', {
      mode: 'two-phase',
      entry: FIXTURE_ENTRY,
      queue,
      deadLetterQueue: dlq,
      lease: Duration.hours(2),
    });
    Annotations.fromStack(stack).hasNoWarning('*', Match.anyValue());
  });
});

/** The statements of `role`'s inline policies that name `table`'s ARN, as synthesized. */
function statementsOn(template: Template, role: iam.IRole, table: dynamodb.ITable): unknown[] {
  const roleId = logicalId(role);
  const tableArn = { 'Fn::GetAtt': [logicalId(table), 'Arn'] };
  return Object.values(template.findResources('AWS::IAM::Policy'))
    .filter((policy) =>
      ((policy.Properties.Roles ?? []) as { Ref?: string }[]).some((ref) => ref.Ref === roleId),
    )
    .flatMap((policy) => policy.Properties.PolicyDocument.Statement as Record<string, unknown>[])
    .filter((statement) => JSON.stringify([statement.Resource].flat()).includes(JSON.stringify(tableArn)));
}

describe('IdempotentConsumer inbox access scoped to the consumer’s own records', () => {
  it('conditions every inbox statement on the consumer’s own key prefixes, in every mode that uses the inbox', () => {
    for (const mode of ['marker', 'atomic', 'two-phase'] as const) {
      const { template, consumer } = synth({ mode, consumerName: 'billing' });
      expect({ mode, statements: statementsOn(template, consumer.role!, consumer.inboxTable!) }).toEqual({
        mode,
        statements: [
          {
            Action: [...INBOX_TABLE_ACTIONS[mode]],
            Condition: {
              'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['billing#*', 'billing/*'] },
            },
            Effect: 'Allow',
            Resource: { 'Fn::GetAtt': [logicalId(consumer.inboxTable!), 'Arn'] },
          },
        ],
      });
    }
  });

  it('gives each consumer of a shared inbox table its own prefixes and leaves business tables unconditioned', () => {
    const { stack } = newStack();
    const inbox = new InboxTable(stack, 'Inbox');
    const orders = new dynamodb.Table(stack, 'Orders', {
      partitionKey: { name: 'orderId', type: dynamodb.AttributeType.STRING },
    });
    const projector = new IdempotentConsumer(stack, 'Projector', {
      mode: 'atomic',
      entry: FIXTURE_ENTRY,
      table: inbox.table,
      consumerName: 'order-projector',
      businessTables: [{ table: orders }],
    });
    const notifier = new IdempotentConsumer(stack, 'Notifier', {
      mode: 'two-phase',
      entry: FIXTURE_ENTRY,
      table: inbox.table,
      consumerName: 'payment-notifier',
    });
    const template = Template.fromStack(stack);
    const keysOf = (consumer: IdempotentConsumer) =>
      statementsOn(template, consumer.role!, inbox.table).map(
        (statement) => (statement as { Condition: unknown }).Condition,
      );
    expect(keysOf(projector)).toEqual([
      { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['order-projector#*', 'order-projector/*'] } },
    ]);
    expect(keysOf(notifier)).toEqual([
      { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['payment-notifier#*', 'payment-notifier/*'] } },
    ]);
    expect(statementsOn(template, projector.role!, orders)).toEqual([
      {
        Action: [
          'dynamodb:GetItem',
          'dynamodb:PutItem',
          'dynamodb:UpdateItem',
          'dynamodb:DeleteItem',
          'dynamodb:ConditionCheckItem',
        ],
        Effect: 'Allow',
        Resource: { 'Fn::GetAtt': [logicalId(orders), 'Arn'] },
      },
    ]);
  });

  it('scopes the derived consumer name the same way', () => {
    const { template, consumer } = synth();
    const [statement] = statementsOn(template, consumer.role!, consumer.inboxTable!) as {
      Condition: unknown;
    }[];
    expect(statement!.Condition).toEqual({
      'ForAllValues:StringLike': {
        'dynamodb:LeadingKeys': [`${consumer.consumerName}#*`, `${consumer.consumerName}/*`],
      },
    });
  });

  it('matches exactly the keys scopeKey builds for the consumer, effects and hashed keys included', () => {
    const patterns = inboxKeyPatterns('billing').map(
      (pattern) => new RegExp(`^${pattern.replaceAll('.', '\\.').replaceAll('*', '.*')}$`),
    );
    const matches = (key: string) => patterns.some((pattern) => pattern.test(key));
    expect(
      [
        scopeKey('billing', 'order-1'),
        scopeKey('billing', 'order-1', 'send-invoice'),
        scopeKey('billing', 'x'.repeat(2000)),
      ].map(matches),
    ).toEqual([true, true, true]);
    expect(
      [
        scopeKey('billing-eu', 'order-1'),
        scopeKey('billing.v2', 'order-1', 'send-invoice'),
        scopeKey('shipping', 'billing#order-1'),
      ].map(matches),
    ).toEqual([false, false, false]);
  });
});
