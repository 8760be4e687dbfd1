import * as path from 'node:path';
import { Duration, type Stack, Token } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_METRIC_NAMESPACE,
  ENV,
  METRIC_DIMENSION_CONSUMER,
  METRICS,
  OUTBOX_ENV,
} from '../../lambda/core/contract';
import { readConstructSettings } from '../../lambda/core/environment';
import {
  DYNAMODB_STREAM_READ_ACTIONS,
  IdempotentStreamConsumer,
  type IdempotentStreamConsumerProps,
  InboxTable,
  KINESIS_STREAM_READ_ACTIONS,
  Outbox,
} from '../../lib';
import { INBOX_TABLE_ACTIONS, inboxKeyPatterns } from '../../lib/consumer-permissions';
import { allow, logicalId, newStack, permissionsOf } from './support';

/** The stand-in for the stream runtime's handlers. */
const STREAM_FIXTURE_ENTRY = path.join(__dirname, 'fixtures', 'stream-handler.ts');

const LOG_WRITE = ['logs:CreateLogStream', 'logs:PutLogEvents'];

type Source = 'kinesis' | 'dynamodb';

type Props = Partial<IdempotentStreamConsumerProps>;
type PropsIn = Props | ((stack: Stack) => Props);

/**
 * One stream consumer in a fresh stack, reading a Kinesis stream or a table's stream unless
 * the props (given, or made in the stack) name a source.
 */
function synth(given: PropsIn = {}, source: Source = 'kinesis') {
  const { app, stack } = newStack();
  const props = typeof given === 'function' ? given(stack) : given;
  const sourceProps: Props =
    props.stream || props.sourceTable
      ? {}
      : source === 'kinesis'
        ? kinesisStream(stack)
        : {
            sourceTable: new dynamodb.Table(stack, 'Orders', {
              partitionKey: { name: 'orderId', type: dynamodb.AttributeType.STRING },
              stream: dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
            }),
          };
  const consumer = new IdempotentStreamConsumer(stack, 'Consumer', {
    mode: 'marker',
    entry: STREAM_FIXTURE_ENTRY,
    ...sourceProps,
    ...props,
  } as IdempotentStreamConsumerProps);
  return {
    app,
    stack,
    consumer,
    template: Template.fromStack(stack),
    annotations: Annotations.fromStack(stack),
  };
}

/** The error constructing a consumer with `props` in a stack with a Kinesis stream throws. */
function errorOf(
  props: (stack: ReturnType<typeof newStack>['stack']) => Partial<IdempotentStreamConsumerProps>,
) {
  const { stack } = newStack();
  try {
    new IdempotentStreamConsumer(stack, 'Consumer', {
      mode: 'marker',
      entry: STREAM_FIXTURE_ENTRY,
      ...props(stack),
    } as IdempotentStreamConsumerProps);
  } catch (error) {
    return error as { code?: string; failures?: readonly string[]; message: string };
  }
  throw new Error('Expected an error, got none');
}

/** A Kinesis stream in `stack`, as the `stream` prop. */
function kinesisStream(stack: Stack): Props {
  return { stream: new kinesis.Stream(stack, 'Events', { encryption: kinesis.StreamEncryption.MANAGED }) };
}

function mappingOf(template: Template): Record<string, unknown> {
  const mappings = Object.values(template.findResources('AWS::Lambda::EventSourceMapping'));
  expect(mappings).toHaveLength(1);
  return mappings[0]!.Properties;
}

function environmentOf(template: Template, consumer: IdempotentStreamConsumer): Record<string, unknown> {
  const fn = template.findResources('AWS::Lambda::Function')[logicalId(consumer.handler)];
  return fn?.Properties.Environment.Variables;
}

describe('IdempotentStreamConsumer on a Kinesis stream with default props', () => {
  let built: ReturnType<typeof synth>;
  beforeAll(() => {
    built = synth();
  });

  it('maps the stream to the function with partial batch responses, bisect, bounded retries and record age, from TRIM_HORIZON', () => {
    const { template, consumer } = built;
    expect(mappingOf(template)).toEqual({
      EventSourceArn: { 'Fn::GetAtt': [logicalId(consumer.stream!), 'Arn'] },
      FunctionName: { Ref: logicalId(consumer.handler) },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      StartingPosition: 'TRIM_HORIZON',
      BatchSize: 100,
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: 10_000,
      MaximumRecordAgeInSeconds: 43_200,
      ParallelizationFactor: 1,
      DestinationConfig: {
        OnFailure: { Destination: { 'Fn::GetAtt': [logicalId(consumer.onFailureQueue!), 'Arn'] } },
      },
    });
  });

  it('creates the on-failure queue and the dead-letter queue encrypted, SSL-only, keeping messages 14 days, the dead-letter queue taking up to 1 MiB', () => {
    const { template, consumer } = built;
    template.resourceCountIs('AWS::SQS::Queue', 2);
    for (const queue of [consumer.onFailureQueue!, consumer.deadLetterQueue]) {
      // Only the runtime's dead letters carry records' data: its largest message is set explicitly.
      const size = queue === consumer.deadLetterQueue ? { MaximumMessageSize: 1_048_576 } : {};
      expect(template.findResources('AWS::SQS::Queue')[logicalId(queue)]?.Properties).toEqual({
        MessageRetentionPeriod: 1_209_600,
        ...size,
        SqsManagedSseEnabled: true,
      });
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

  it('sets the contract environment, with direct dead letters to its dead-letter queue, and nothing else but NODE_OPTIONS', () => {
    const { template, consumer } = built;
    expect(environmentOf(template, consumer)).toEqual({
      NODE_OPTIONS: '--enable-source-maps',
      [ENV.consumer]: consumer.consumerName,
      [ENV.mode]: 'marker',
      [ENV.inboxTable]: { Ref: logicalId(consumer.inboxTable!) },
      [ENV.ttlSeconds]: String(Duration.days(2).toSeconds()),
      [ENV.deadLetterMode]: 'direct',
      [ENV.deadLetterQueueUrl]: { Ref: logicalId(consumer.deadLetterQueue) },
      [ENV.deadLetterMaxMessageBytes]: '1048576',
      [ENV.leaseMillis]: '30000',
      [ENV.metricNamespace]: DEFAULT_METRIC_NAMESPACE,
    });
    expect(consumer.environment).toEqual(
      expect.objectContaining({ [ENV.deadLetterMode]: 'direct', [ENV.ttlSeconds]: '172800' }),
    );
  });

  it('passes an environment the runtime reads back as direct dead-lettering to that queue', () => {
    const settings = readConstructSettings({
      [ENV.consumer]: 'orders',
      [ENV.ttlSeconds]: built.consumer.environment[ENV.ttlSeconds],
      [ENV.deadLetterMode]: built.consumer.environment[ENV.deadLetterMode],
      [ENV.deadLetterQueueUrl]: 'https://sqs.eu-west-1.amazonaws.com/123456789012/dlq',
    });
    expect(settings).toEqual({
      consumer: 'orders',
      ttlSeconds: 172_800,
      deadLetter: 'direct',
      deadLetterQueueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/dlq',
    });
  });

  it('grants exactly the stream reads on the stream ARN, the marker actions on its own inbox records, and sends to both queues', () => {
    const { template, consumer } = built;
    expect(permissionsOf(template, consumer.role)).toEqual(
      [
        ...allow(KINESIS_STREAM_READ_ACTIONS, consumer.stream!),
        ...allow(INBOX_TABLE_ACTIONS.marker, consumer.inboxTable!),
        ...allow(['sqs:SendMessage'], consumer.onFailureQueue!),
        ...allow(['sqs:SendMessage'], consumer.deadLetterQueue),
        ...allow(LOG_WRITE, `${logicalId(consumer.logGroup)}.Arn`),
      ].sort(),
    );
    expect([...KINESIS_STREAM_READ_ACTIONS].sort()).toEqual([
      'kinesis:DescribeStream',
      'kinesis:DescribeStreamSummary',
      'kinesis:GetRecords',
      'kinesis:GetShardIterator',
      'kinesis:ListShards',
    ]);
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Action: [...INBOX_TABLE_ACTIONS.marker],
            Condition: {
              'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': inboxKeyPatterns(consumer.consumerName) },
            },
          }),
        ]),
      },
    });
  });

  it('derives the record TTL from the stream retention: min(24 h, 12 h) + max(24 h - 12 h, 3 h) + 1 day = 2 days', () => {
    expect(built.consumer.maxRecordAge.toHours()).toBe(12);
    expect(built.consumer.replayWindow.toHours()).toBe(24);
    expect(built.consumer.recordTtl.toDays()).toBe(2);
  });

  it('creates the five alarms without actions: iterator age, errors, on-failure, dead letters, mismatches', () => {
    const { template, consumer } = built;
    template.resourceCountIs('AWS::CloudWatch::Alarm', 5);
    const alarms = template.findResources('AWS::CloudWatch::Alarm');
    const props = (alarm: { node: { defaultChild?: unknown } } | undefined) =>
      alarms[logicalId(alarm as never)]?.Properties;
    expect(props(consumer.iteratorAgeAlarm)).toEqual(
      expect.objectContaining({
        Namespace: 'AWS/Lambda',
        MetricName: 'IteratorAge',
        Dimensions: [{ Name: 'FunctionName', Value: { Ref: logicalId(consumer.handler) } }],
        Statistic: 'Maximum',
        Period: 60,
        Threshold: 900_000,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
      }),
    );
    expect(props(consumer.errorsAlarm)).toEqual(
      expect.objectContaining({
        Namespace: 'AWS/Lambda',
        MetricName: 'Errors',
        Statistic: 'Sum',
        Period: 60,
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
      }),
    );
    for (const [alarm, queue] of [
      [consumer.onFailureAlarm, consumer.onFailureQueue!],
      [consumer.deadLetterQueueAlarm, consumer.deadLetterQueue],
    ] as const) {
      expect(props(alarm)).toEqual(
        expect.objectContaining({
          Namespace: 'AWS/SQS',
          MetricName: 'ApproximateNumberOfMessagesVisible',
          Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(queue), 'QueueName'] } }],
          Statistic: 'Maximum',
          Threshold: 0,
          ComparisonOperator: 'GreaterThanThreshold',
          TreatMissingData: 'ignore',
        }),
      );
    }
    expect(props(consumer.mismatchAlarm)).toEqual(
      expect.objectContaining({
        Namespace: DEFAULT_METRIC_NAMESPACE,
        MetricName: METRICS.mismatch,
        Dimensions: [{ Name: METRIC_DIMENSION_CONSUMER, Value: consumer.consumerName }],
        Threshold: 0,
      }),
    );
    for (const alarm of Object.values(alarms)) expect(alarm.Properties.AlarmActions).toBeUndefined();
    expect(consumer.alarms).toHaveLength(5);
  });

  it('creates a dashboard with the outcomes, the iterator age and both failure queues', () => {
    const { template } = built;
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    const body = JSON.stringify(Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0]);
    for (const text of ['Stream consumer', 'IteratorAge', 'On-failure and dead letters', METRICS.duplicate]) {
      expect(body).toContain(text);
    }
  });

  it('exposes the iterator age and outcome metrics with the consumer dimension', () => {
    const { consumer } = built;
    expect(consumer.metricIteratorAge().metricName).toBe('IteratorAge');
    expect(consumer.metricDuplicate().dimensions).toEqual({
      [METRIC_DIMENSION_CONSUMER]: consumer.consumerName,
    });
  });
});

describe('IdempotentStreamConsumer on a DynamoDB table stream', () => {
  let built: ReturnType<typeof synth>;
  beforeAll(() => {
    built = synth({}, 'dynamodb');
  });

  it('reads the table stream ARN and grants the stream reads on it only', () => {
    const { template, consumer } = built;
    const tableId = logicalId(consumer.sourceTable!);
    expect(mappingOf(template)).toEqual(
      expect.objectContaining({
        EventSourceArn: { 'Fn::GetAtt': [tableId, 'StreamArn'] },
        StartingPosition: 'TRIM_HORIZON',
        MaximumRecordAgeInSeconds: 43_200,
      }),
    );
    expect(permissionsOf(template, consumer.role)).toEqual(
      [
        ...allow(DYNAMODB_STREAM_READ_ACTIONS, `${tableId}.StreamArn`),
        ...allow(INBOX_TABLE_ACTIONS.marker, consumer.inboxTable!),
        ...allow(['sqs:SendMessage'], consumer.onFailureQueue!),
        ...allow(['sqs:SendMessage'], consumer.deadLetterQueue),
        ...allow(LOG_WRITE, `${logicalId(consumer.logGroup)}.Arn`),
      ].sort(),
    );
    expect([...DYNAMODB_STREAM_READ_ACTIONS].sort()).toEqual([
      'dynamodb:DescribeStream',
      'dynamodb:GetRecords',
      'dynamodb:GetShardIterator',
      'dynamodb:ListStreams',
    ]);
  });

  it('takes the 24-hour DynamoDB Streams retention for the record TTL', () => {
    expect(built.consumer.maxRecordAge.toHours()).toBe(12);
    expect(built.consumer.recordTtl.toDays()).toBe(2);
  });

  it('warns when the table stream carries only keys, since the fingerprint cannot cover the change', () => {
    const { stack } = newStack();
    const sourceTable = new dynamodb.Table(stack, 'Keys', {
      partitionKey: { name: 'id', type: dynamodb.AttributeType.STRING },
      stream: dynamodb.StreamViewType.KEYS_ONLY,
    });
    new IdempotentStreamConsumer(stack, 'Consumer', {
      mode: 'marker',
      entry: STREAM_FIXTURE_ENTRY,
      sourceTable,
    });
    Annotations.fromStack(stack).hasWarning(
      '/TestStack/Consumer',
      Match.stringLikeRegexp('carries only the keys \\(`KEYS_ONLY`\\).*effectively-once:keysOnlyStream'),
    );
  });

  it('grants Decrypt on the key of a table encrypted with a customer-managed key', () => {
    const { stack } = newStack();
    const key = new kms.Key(stack, 'Key');
    const sourceTable = new dynamodb.Table(stack, 'Orders', {
      partitionKey: { name: 'id', type: dynamodb.AttributeType.STRING },
      stream: dynamodb.StreamViewType.NEW_IMAGE,
      encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: key,
    });
    const consumer = new IdempotentStreamConsumer(stack, 'Consumer', {
      mode: 'marker',
      entry: STREAM_FIXTURE_ENTRY,
      sourceTable,
    });
    expect(permissionsOf(Template.fromStack(stack), consumer.role)).toContain(
      `Allow kms:Decrypt ${logicalId(key)}.Arn`,
    );
  });
});

describe('IdempotentStreamConsumer event source settings', () => {
  it('applies batch size, window, parallelization, bisect, retries, record age and starting position', () => {
    const { template } = synth({
      batchSize: 500,
      maxBatchingWindow: Duration.seconds(20),
      parallelizationFactor: 4,
      bisectBatchOnError: false,
      retryAttempts: 50,
      maxRecordAge: Duration.hours(2),
      startingPosition: lambda.StartingPosition.AT_TIMESTAMP,
      startingPositionTimestamp: 1_764_547_200,
    });
    expect(mappingOf(template)).toEqual(
      expect.objectContaining({
        BatchSize: 500,
        MaximumBatchingWindowInSeconds: 20,
        ParallelizationFactor: 4,
        BisectBatchOnFunctionError: false,
        MaximumRetryAttempts: 50,
        MaximumRecordAgeInSeconds: 7200,
        StartingPosition: 'AT_TIMESTAMP',
        StartingPositionTimestamp: 1_764_547_200,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
      }),
    );
  });

  it('derives maxRecordAge as half a raised Kinesis retention, and at most 7 days', () => {
    expect(synth().consumer.maxRecordAge.toHours()).toBe(12);
    const { stack } = newStack();
    const fourDays = new kinesis.Stream(stack, 'FourDays', { retentionPeriod: Duration.days(4) });
    const year = new kinesis.Stream(stack, 'Year', { retentionPeriod: Duration.days(365) });
    const a = new IdempotentStreamConsumer(stack, 'A', {
      mode: 'marker',
      entry: STREAM_FIXTURE_ENTRY,
      stream: fourDays,
    });
    const b = new IdempotentStreamConsumer(stack, 'B', {
      mode: 'marker',
      entry: STREAM_FIXTURE_ENTRY,
      stream: year,
    });
    expect(a.maxRecordAge.toDays()).toBe(2);
    // 2 days + max(4 - 2 days, 3 hours) + 1 day.
    expect(a.recordTtl.toDays()).toBe(5);
    expect(b.maxRecordAge.toDays()).toBe(7);
    // 7 days + (365 - 7 days) + 1 day: a range named by an on-failure record can be re-read all year.
    expect(b.recordTtl.toDays()).toBe(366);
  });

  it('bounds the TTL by maxRecordAge when no replay after the event source gives up is declared', () => {
    const { consumer } = synth({ maxRecordAge: Duration.hours(1), replayAllowance: Duration.seconds(0) });
    // 1 hour + max(0, 3 × 1 hour) + 1 day.
    expect(consumer.replayWindow.toHours()).toBe(4);
    expect(consumer.recordTtl.toHours()).toBe(28);
  });

  it('assumes the 365-day Kinesis maximum for an imported stream, and 12 hours for its maxRecordAge', () => {
    const { stack } = newStack();
    const stream = kinesis.Stream.fromStreamArn(
      stack,
      'Imported',
      'arn:aws:kinesis:eu-west-1:123456789012:stream/orders',
    );
    const consumer = new IdempotentStreamConsumer(stack, 'Consumer', {
      mode: 'marker',
      entry: STREAM_FIXTURE_ENTRY,
      stream,
    });
    expect(consumer.maxRecordAge.toHours()).toBe(12);
    expect(consumer.recordTtl.toDays()).toBe(366);
    expect(permissionsOf(Template.fromStack(stack), consumer.role)).toEqual(
      expect.arrayContaining(
        allow(KINESIS_STREAM_READ_ACTIONS, 'arn:aws:kinesis:eu-west-1:123456789012:stream/orders'),
      ),
    );
  });

  it('grants Decrypt on the customer-managed key of a stream', () => {
    const { stack } = newStack();
    const key = new kms.Key(stack, 'Key');
    const stream = new kinesis.Stream(stack, 'Events', {
      encryption: kinesis.StreamEncryption.KMS,
      encryptionKey: key,
    });
    const consumer = new IdempotentStreamConsumer(stack, 'Consumer', {
      mode: 'marker',
      entry: STREAM_FIXTURE_ENTRY,
      stream,
    });
    expect(permissionsOf(Template.fromStack(stack), consumer.role)).toContain(
      `Allow kms:Decrypt ${logicalId(key)}.Arn`,
    );
  });

  it('warns when maxRecordAge reaches the retention, so an on-failure range could no longer be read', () => {
    const { annotations } = synth({ maxRecordAge: Duration.hours(24) });
    annotations.hasWarning(
      '/TestStack/Consumer',
      Match.stringLikeRegexp(
        '`maxRecordAge` \\(1 day\\) is not below the stream.s retention \\(1 day\\).*maxRecordAgeOutlivesRetention',
      ),
    );
  });

  it('warns when the iterator-age alarm would fire only after records are given up on', () => {
    const { annotations } = synth({ maxRecordAge: Duration.minutes(10) });
    annotations.hasWarning(
      '/TestStack/Consumer',
      Match.stringLikeRegexp(
        '`iteratorAgeThreshold` \\(15 minutes\\) is not below `maxRecordAge` \\(10 minutes\\)',
      ),
    );
  });

  it('warns when recordTtl is shorter than the replay window, naming each term', () => {
    const { annotations } = synth({ recordTtl: Duration.hours(6) });
    annotations.hasWarning(
      '/TestStack/Consumer',
      Match.stringLikeRegexp(
        'shorter than the replay window \\(1 day: min\\(stream retention 1 day, maxRecordAge 12 hours\\) = 12 hours, plus the longer of replayAllowance \\(until the record leaves the stream\\) 12 hours and 3 × producerRetryHorizon 3 hours\\)',
      ),
    );
  });
});

describe('IdempotentStreamConsumer failure destinations', () => {
  it('sends on-failure records to a given SNS topic, alarms on its publishes and grants sns:Publish', () => {
    let topic: sns.Topic | undefined;
    const { template, consumer } = synth((stack) => {
      topic = new sns.Topic(stack, 'Failures', { enforceSSL: true });
      return { onFailureTopic: topic };
    });
    expect(consumer.onFailureQueue).toBeUndefined();
    expect(mappingOf(template).DestinationConfig).toEqual({
      OnFailure: { Destination: { Ref: logicalId(topic!) } },
    });
    template.resourceCountIs('AWS::SQS::Queue', 1);
    expect(permissionsOf(template, consumer.role)).toEqual(
      [
        ...allow(KINESIS_STREAM_READ_ACTIONS, consumer.stream!),
        ...allow(INBOX_TABLE_ACTIONS.marker, consumer.inboxTable!),
        `Allow sns:Publish ${logicalId(topic!)}`,
        ...allow(['sqs:SendMessage'], consumer.deadLetterQueue),
        ...allow(LOG_WRITE, `${logicalId(consumer.logGroup)}.Arn`),
      ].sort(),
    );
    const alarm = template.findResources('AWS::CloudWatch::Alarm')[logicalId(consumer.onFailureAlarm!)];
    expect(alarm?.Properties).toEqual(
      expect.objectContaining({
        Namespace: 'AWS/SNS',
        MetricName: 'NumberOfMessagesPublished',
        Statistic: 'Sum',
        Threshold: 0,
        TreatMissingData: 'notBreaching',
      }),
    );
  });

  it('grants exactly kms:GenerateDataKey and kms:Decrypt on the key of an encrypted on-failure topic', () => {
    let key: kms.Key | undefined;
    const { template, consumer } = synth((stack) => {
      key = new kms.Key(stack, 'Key');
      return { onFailureTopic: new sns.Topic(stack, 'Failures', { masterKey: key }) };
    });
    const kmsGrants = permissionsOf(template, consumer.role).filter((line) => line.includes(' kms:'));
    expect(kmsGrants).toEqual(allow(['kms:Decrypt', 'kms:GenerateDataKey'], key!));
  });

  it('uses given on-failure and dead-letter queues, and grants the KMS send actions of their keys', () => {
    const { stack } = newStack();
    const key = new kms.Key(stack, 'Key');
    const onFailureQueue = new sqs.Queue(stack, 'OnFailure', { encryptionMasterKey: key });
    const deadLetterQueue = new sqs.Queue(stack, 'Dlq');
    const consumer = new IdempotentStreamConsumer(stack, 'Consumer', {
      mode: 'marker',
      entry: STREAM_FIXTURE_ENTRY,
      stream: new kinesis.Stream(stack, 'Events'),
      onFailureQueue,
      deadLetterQueue,
    });
    const template = Template.fromStack(stack);
    expect(consumer.onFailureQueue).toBe(onFailureQueue);
    expect(consumer.deadLetterQueue).toBe(deadLetterQueue);
    template.resourceCountIs('AWS::SQS::Queue', 2);
    expect(permissionsOf(template, consumer.role)).toEqual(
      expect.arrayContaining([
        ...allow(['sqs:SendMessage'], onFailureQueue),
        ...allow(['sqs:SendMessage'], deadLetterQueue),
        ...allow(['kms:Decrypt', 'kms:GenerateDataKey'], key),
      ]),
    );
  });

  it('leaves a given dead-letter queue’s size alone and does not tell the function one', () => {
    const { stack } = newStack();
    const deadLetterQueue = new sqs.Queue(stack, 'Dlq');
    const consumer = new IdempotentStreamConsumer(stack, 'Consumer', {
      mode: 'marker',
      entry: STREAM_FIXTURE_ENTRY,
      stream: new kinesis.Stream(stack, 'Events'),
      deadLetterQueue,
    });
    const template = Template.fromStack(stack);
    const queues = template.findResources('AWS::SQS::Queue');
    for (const queue of [deadLetterQueue, consumer.onFailureQueue!]) {
      expect(queues[logicalId(queue)]).toBeDefined();
      expect(queues[logicalId(queue)]?.Properties?.MaximumMessageSize).toBeUndefined();
    }
    expect(Object.keys(environmentOf(template, consumer))).not.toContain(ENV.deadLetterMaxMessageBytes);
  });

  it('encrypts the queues it creates with a given key', () => {
    let key: kms.Key | undefined;
    const { template } = synth((stack) => {
      key = new kms.Key(stack, 'Key');
      return { queueEncryptionKey: key };
    });
    const queues = Object.values(template.findResources('AWS::SQS::Queue'));
    expect(queues).toHaveLength(2);
    for (const queue of queues) {
      expect(queue.Properties.KmsMasterKeyId).toEqual({ 'Fn::GetAtt': [logicalId(key!), 'Arn'] });
    }
  });

  it('notifies an alarm topic from every alarm, and creates none or no dashboard when switched off', () => {
    let topic: sns.Topic | undefined;
    const notified = synth((stack) => {
      topic = new sns.Topic(stack, 'Alarms');
      return { alarmTopic: topic };
    });
    const alarms = Object.values(notified.template.findResources('AWS::CloudWatch::Alarm'));
    expect(alarms).toHaveLength(5);
    for (const alarm of alarms) expect(alarm.Properties.AlarmActions).toEqual([{ Ref: logicalId(topic!) }]);
    const quiet = synth({ createAlarms: false, dashboard: false });
    quiet.template.resourceCountIs('AWS::CloudWatch::Alarm', 0);
    quiet.template.resourceCountIs('AWS::CloudWatch::Dashboard', 0);
    expect(quiet.consumer.alarms).toEqual([]);
  });
});

describe('IdempotentStreamConsumer completed-record cache', () => {
  it('turns the cache on through EO_COMPLETED_CACHE_MAX_ENTRIES, and rejects a size outside 1-10000', () => {
    const { template, consumer } = synth({ completedCacheMaxEntries: 500 });
    expect(environmentOf(template, consumer)[ENV.completedCacheMaxEntries]).toBe('500');
    expect(readConstructSettings({ [ENV.completedCacheMaxEntries]: '500' })).toEqual({
      completedCacheMaxEntries: 500,
    });
    expect(
      errorOf((stack) => ({ ...kinesisStream(stack), completedCacheMaxEntries: 10_001 })).failures,
    ).toEqual(['Expected `completedCacheMaxEntries` to be an integer from 1 to 10000, got `10001`']);
  });
});

describe('IdempotentStreamConsumer modes and tables', () => {
  it('grants atomic mode its inbox actions and the business table actions with conditionCheck', () => {
    const { stack } = newStack();
    const readModel = new dynamodb.Table(stack, 'ReadModel', {
      partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
    });
    const consumer = new IdempotentStreamConsumer(stack, 'Consumer', {
      mode: 'atomic',
      entry: STREAM_FIXTURE_ENTRY,
      stream: new kinesis.Stream(stack, 'Events'),
      businessTables: [{ table: readModel }],
    });
    const permissions = permissionsOf(Template.fromStack(stack), consumer.role);
    expect(permissions).toEqual(
      expect.arrayContaining([
        ...allow(INBOX_TABLE_ACTIONS.atomic, consumer.inboxTable!),
        ...allow(
          [
            'dynamodb:GetItem',
            'dynamodb:PutItem',
            'dynamodb:UpdateItem',
            'dynamodb:DeleteItem',
            'dynamodb:ConditionCheckItem',
          ],
          readModel,
        ),
      ]),
    );
  });

  it('creates no inbox table in entity mode and sets no EO_INBOX_TABLE', () => {
    const { stack } = newStack();
    const items = new dynamodb.Table(stack, 'Items', {
      partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
    });
    const consumer = new IdempotentStreamConsumer(stack, 'Consumer', {
      mode: 'entity',
      entry: STREAM_FIXTURE_ENTRY,
      stream: new kinesis.Stream(stack, 'Events'),
      businessTables: [{ table: items, access: ['write'] }],
    });
    expect(consumer.inboxTable).toBeUndefined();
    expect(consumer.environment[ENV.inboxTable]).toBeUndefined();
    Template.fromStack(stack).resourceCountIs('AWS::DynamoDB::Table', 1);
  });

  it('shares a given InboxTable with its own consumer name and key prefixes', () => {
    const { stack } = newStack();
    const inbox = new InboxTable(stack, 'Inbox');
    const consumer = new IdempotentStreamConsumer(stack, 'Consumer', {
      mode: 'two-phase',
      entry: STREAM_FIXTURE_ENTRY,
      consumerName: 'order-projection',
      stream: new kinesis.Stream(stack, 'Events'),
      table: inbox.table,
      lease: Duration.minutes(1),
    });
    const template = Template.fromStack(stack);
    template.resourceCountIs('AWS::DynamoDB::Table', 1);
    expect(consumer.environment[ENV.leaseMillis]).toBe('60000');
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Action: [...INBOX_TABLE_ACTIONS['two-phase']],
            Condition: {
              'ForAllValues:StringLike': {
                'dynamodb:LeadingKeys': ['order-projection#*', 'order-projection/*'],
              },
            },
          }),
        ]),
      },
    });
  });
});

describe('IdempotentStreamConsumer prop validation', () => {
  it('lists every failure at once: batch size, parallelization factor, retries and record age out of range', () => {
    const error = errorOf((stack) => ({
      ...kinesisStream(stack),
      parallelizationFactor: 11,
      maxRecordAge: Duration.seconds(59),
      retryAttempts: 10_001,
      batchSize: 0,
    }));
    expect(error.code).toBe('INVALID_OPTIONS');
    expect(error.failures).toEqual([
      'Expected `batchSize` to be an integer from 1 to 10000, got `0`',
      'Expected `parallelizationFactor` to be an integer from 1 to 10, got `11`',
      'Expected `retryAttempts` to be an integer from 0 to 10000, got `10001`',
      'Expected `maxRecordAge` to be from 1 minute to 7 days, got `59 seconds`',
    ]);
    expect(error.message).toBe(
      `[TestStack/Consumer] 4 problems with the props of IdempotentStreamConsumer:\n${error.failures!.map((failure) => `- ${failure}`).join('\n')}`,
    );
  });

  it('rejects a record age above 7 days', () => {
    const error = errorOf((stack) => ({ ...kinesisStream(stack), maxRecordAge: Duration.seconds(604_801) }));
    expect(error.failures).toEqual([
      'Expected `maxRecordAge` to be from 1 minute to 7 days, got `7 days 1 second`',
    ]);
  });

  it('accepts the limits themselves: 60 s and 7 days of record age, 10,000 retries, factor 10', () => {
    for (const maxRecordAge of [Duration.seconds(60), Duration.seconds(604_800)]) {
      const { consumer } = synth({
        maxRecordAge,
        retryAttempts: 10_000,
        parallelizationFactor: 10,
        iteratorAgeThreshold: Duration.seconds(60),
      });
      expect(consumer.maxRecordAge.toSeconds()).toBe(maxRecordAge.toSeconds());
    }
  });

  it('rejects neither or both sources, and a table without a stream', () => {
    expect(errorOf(() => ({})).failures).toEqual([
      'Expected exactly one of `stream` (a Kinesis data stream), `sourceTable` (a DynamoDB table with a stream) and `kafka` (a Kafka topic), got none',
    ]);
    const error = errorOf((stack) => ({
      ...kinesisStream(stack),
      sourceTable: new dynamodb.Table(stack, 'Plain', {
        partitionKey: { name: 'id', type: dynamodb.AttributeType.STRING },
      }),
    }));
    expect(error.failures).toEqual([
      'Expected exactly one of `stream` (a Kinesis data stream), `sourceTable` (a DynamoDB table with a stream) and `kafka` (a Kafka topic), got 2',
      'Expected `sourceTable` to have a stream, got TestStack/Plain without one: create it with `stream: dynamodb.StreamViewType.NEW_AND_OLD_IMAGES` (or import it with `tableStreamArn`)',
    ]);
  });

  it('rejects two on-failure destinations, AT_TIMESTAMP without a timestamp or on a DynamoDB stream, and a stray timestamp', () => {
    const both = errorOf((stack) => ({
      ...kinesisStream(stack),
      onFailureQueue: new sqs.Queue(stack, 'Q'),
      onFailureTopic: new sns.Topic(stack, 'T'),
      startingPosition: lambda.StartingPosition.AT_TIMESTAMP,
    }));
    expect(both.failures).toEqual([
      'Expected at most one of `onFailureQueue` and `onFailureTopic`, got both',
      'Expected a `startingPositionTimestamp` with `startingPosition: AT_TIMESTAMP`',
    ]);
    const table = errorOf((stack) => ({
      sourceTable: new dynamodb.Table(stack, 'Orders', {
        partitionKey: { name: 'id', type: dynamodb.AttributeType.STRING },
        stream: dynamodb.StreamViewType.NEW_IMAGE,
      }),
      startingPosition: lambda.StartingPosition.AT_TIMESTAMP,
      startingPositionTimestamp: 1,
    }));
    expect(table.failures).toEqual([
      'Expected `startingPosition` to be `TRIM_HORIZON` or `LATEST` for a DynamoDB stream, got `AT_TIMESTAMP` (Kinesis and Kafka only)',
    ]);
    expect(errorOf((stack) => ({ ...kinesisStream(stack), startingPositionTimestamp: 1 })).failures).toEqual([
      'Expected `startingPositionTimestamp` only with `startingPosition: AT_TIMESTAMP`',
    ]);
  });

  it('rejects the shared props as the SQS construct does: mode, names, EO_ variables, entity tables, timeout', () => {
    const error = errorOf((stack) => ({
      ...kinesisStream(stack),
      mode: 'exactly-once' as never,
      consumerName: 'orders#1',
      environment: { [ENV.deadLetterQueueUrl]: 'https://example.com' },
      timeout: Duration.seconds(2),
    }));
    expect(error.failures).toEqual([
      "Expected `mode` to be one of 'marker', 'atomic', 'entity', 'two-phase', got `\"exactly-once\"`",
      "Expected `consumerName` to be 1-100 characters of A-Z, a-z, 0-9, '.', '_', ':', '-', got `\"orders#1\"`",
      'Expected `environment` not to set `EO_DEAD_LETTER_QUEUE_URL`: the construct sets it from `deadLetterQueue`',
      "`timeout` (2 seconds) must be longer than the runtime's deadline margin (`deadlineMarginMillis`, default 2 seconds): the batch processor starts no record once less than the margin is left, so the function would process nothing",
    ]);
    expect(errorOf((stack) => ({ ...kinesisStream(stack), mode: 'entity' })).failures).toEqual([
      'Expected `businessTables` to hold at least one table with `write` access in `entity` mode',
    ]);
  });

  it('rejects a queue key when it creates no queue', () => {
    const error = errorOf((stack) => ({
      ...kinesisStream(stack),
      onFailureTopic: new sns.Topic(stack, 'T'),
      deadLetterQueue: new sqs.Queue(stack, 'D'),
      queueEncryptionKey: new kms.Key(stack, 'K'),
    }));
    expect(error.failures).toEqual([
      'Expected no `queueEncryptionKey` with an existing on-failure destination and `deadLetterQueue`: the construct creates no queue; configure the queues you pass',
    ]);
  });

  it('throws in two-phase mode when the lease is not shorter than the record TTL, and warns when shorter than the timeout', () => {
    const error = errorOf((stack) => ({
      ...kinesisStream(stack),
      mode: 'two-phase',
      recordTtl: Duration.minutes(10),
      lease: Duration.minutes(10),
    }));
    expect(error.failures).toEqual([
      '`lease` (10 minutes) must be shorter than `recordTtl` (10 minutes) in two-phase mode: a claim must never outlive its record, and the runtime rejects `leaseMillis` >= `ttlSeconds` at cold start',
    ]);
    const { annotations } = synth({ mode: 'two-phase', lease: Duration.seconds(10) });
    annotations.hasWarning('/TestStack/Consumer', Match.stringLikeRegexp('leaseShorterThanTimeout'));
  });

  it('creates nothing when the props are invalid', () => {
    const { stack } = newStack();
    expect(
      () =>
        new IdempotentStreamConsumer(stack, 'Consumer', {
          mode: 'marker',
          entry: STREAM_FIXTURE_ENTRY,
          batchSize: 0,
        } as IdempotentStreamConsumerProps),
    ).toThrow();
    expect(stack.node.tryFindChild('Consumer')?.node.children.length ?? 0).toBe(0);
  });

  it('skips validation of unresolved tokens', () => {
    const { template } = synth({
      batchSize: Token.asNumber({ Ref: 'BatchSize' }),
      parallelizationFactor: Token.asNumber({ Ref: 'Factor' }),
    });
    expect(mappingOf(template)).toEqual(
      expect.objectContaining({ BatchSize: { Ref: 'BatchSize' }, ParallelizationFactor: { Ref: 'Factor' } }),
    );
  });
});

describe('IdempotentStreamConsumer with an outbox', () => {
  const RELAY_FIXTURE_ENTRY = path.join(__dirname, 'fixtures', 'outbox-relay.ts');

  /** An outbox publishing to a queue in `stack`. */
  function outboxIn(stack: Stack): Outbox {
    return new Outbox(stack, 'Outbox', {
      relayEntry: RELAY_FIXTURE_ENTRY,
      queue: new sqs.Queue(stack, 'Shipping'),
    });
  }

  it("grants dynamodb:PutItem on the outbox table only and hands the function the writer's environment", () => {
    let outbox: Outbox | undefined;
    const { template, consumer } = synth((stack) => {
      outbox = outboxIn(stack);
      return { mode: 'atomic', consumerName: 'order-projection', outbox };
    }, 'dynamodb');
    const outboxId = logicalId(outbox!.table);
    expect(permissionsOf(template, consumer.role).filter((line) => line.includes(outboxId))).toEqual([
      `Allow dynamodb:PutItem ${outboxId}.Arn`,
    ]);
    expect(consumer.environment).toMatchObject(outbox!.writerEnvironment);
    expect(Object.keys(consumer.environment)).not.toContain(OUTBOX_ENV.destinationArn);
    expect(Object.keys(consumer.environment)).not.toContain(OUTBOX_ENV.destinationQueueUrl);
  });

  it('rejects an outbox outside atomic mode, and EO_OUTBOX_* names in environment, together', () => {
    const error = errorOf((stack) => ({
      ...kinesisStream(stack),
      mode: 'marker',
      outbox: outboxIn(stack),
      environment: { [OUTBOX_ENV.retentionSeconds]: '60' },
    }));
    expect(error.failures).toEqual([
      'Expected `outbox` only in `atomic` mode (events are emitted in the transaction of the business writes), got mode `"marker"`',
      'Expected `environment` not to set `EO_OUTBOX_RETENTION_SECONDS`: the construct sets it from `outbox`',
    ]);
  });
});
