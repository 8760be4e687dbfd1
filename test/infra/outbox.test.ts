import * as fs from 'node:fs';
import * as path from 'node:path';
import { Duration, type Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { ENV, OUTBOX_ATTRIBUTES, OUTBOX_ENV } from '../../lambda/core/contract';
import {
  DYNAMODB_STREAM_READ_ACTIONS,
  deriveOutboxRetention,
  IdempotentConsumer,
  INBOX_TABLE_ACTIONS,
  Outbox,
  type OutboxProps,
} from '../../lib';
import { QUEUE_KEY_SEND_ACTIONS, TABLE_KEY_WRITE_ACTIONS } from '../../lib/consumer-permissions';
import { defaultRelayEntry } from '../../lib/outbox/defaults';
import { allow, FIXTURE_ENTRY, logicalId, newStack, permissionsOf } from './support';

/** The stand-in for the package's relay handler. */
const RELAY_FIXTURE_ENTRY = path.join(__dirname, 'fixtures', 'outbox-relay.ts');

const LOG_WRITE = ['logs:CreateLogStream', 'logs:PutLogEvents'];

type PropsIn = Partial<OutboxProps> | ((stack: Stack) => Partial<OutboxProps>);

/** One outbox in a fresh stack, publishing to a standard queue unless the props name a destination. */
function synth(given: PropsIn = {}) {
  const { app, stack } = newStack();
  const props = typeof given === 'function' ? given(stack) : given;
  const destination =
    props.queue || props.eventBus || props.topic ? {} : { queue: new sqs.Queue(stack, 'Shipping') };
  const outbox = new Outbox(stack, 'Outbox', { relayEntry: RELAY_FIXTURE_ENTRY, ...destination, ...props });
  return {
    app,
    stack,
    outbox,
    template: Template.fromStack(stack),
    annotations: Annotations.fromStack(stack),
  };
}

/** The error constructing an outbox with `props` throws. */
function errorOf(props: (stack: Stack) => OutboxProps): {
  code?: string;
  failures?: string[];
  message: string;
} {
  const { stack } = newStack();
  try {
    new Outbox(stack, 'Outbox', props(stack));
  } catch (error) {
    return error as { code?: string; failures?: string[]; message: string };
  }
  throw new Error('expected the outbox to throw');
}

describe('Outbox table', () => {
  it('creates the table keyed by the event id, encrypted, with PITR, TTL on the contract attribute and a NEW_IMAGE stream', () => {
    const { template } = synth();
    template.resourceCountIs('AWS::DynamoDB::Table', 1);
    template.hasResource('AWS::DynamoDB::Table', {
      Properties: {
        KeySchema: [{ AttributeName: OUTBOX_ATTRIBUTES.pk, KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: OUTBOX_ATTRIBUTES.pk, AttributeType: 'S' }],
        BillingMode: 'PAY_PER_REQUEST',
        TimeToLiveSpecification: { AttributeName: OUTBOX_ATTRIBUTES.expiresAt, Enabled: true },
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        SSESpecification: { SSEEnabled: true },
        StreamSpecification: { StreamViewType: 'NEW_IMAGE' },
      },
      DeletionPolicy: 'Retain',
    });
  });

  it('encrypts the table with a given customer-managed key', () => {
    const { template } = synth((stack) => ({ tableEncryptionKey: new kms.Key(stack, 'Key') }));
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      SSESpecification: { SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: Match.anyValue() },
    });
  });
});

describe('Outbox relay event source', () => {
  it('reads the table stream from the trim horizon, inserts only, with partial batch responses, bisect, retries, record age and an on-failure queue', () => {
    const { template, outbox } = synth();
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [logicalId(outbox.table), 'StreamArn'] },
      FunctionName: { Ref: logicalId(outbox.relay) },
      StartingPosition: 'TRIM_HORIZON',
      BatchSize: 100,
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: 10000,
      MaximumRecordAgeInSeconds: 43200,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      FilterCriteria: { Filters: [{ Pattern: '{"eventName":["INSERT"]}' }] },
      DestinationConfig: {
        OnFailure: { Destination: { 'Fn::GetAtt': [logicalId(outbox.onFailureQueue), 'Arn'] } },
      },
    });
  });

  it('passes batchSize, retryAttempts and maxRecordAge through', () => {
    const { template } = synth({ batchSize: 25, retryAttempts: 3, maxRecordAge: Duration.hours(2) });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      BatchSize: 25,
      MaximumRetryAttempts: 3,
      MaximumRecordAgeInSeconds: 7200,
    });
  });
});

describe('Outbox grants', () => {
  it('lets the relay read the stream, send to a queue destination and its two failure queues, and nothing else', () => {
    const { template, outbox, stack } = synth();
    const shipping = stack.node.findChild('Shipping') as sqs.Queue;
    expect(permissionsOf(template, outbox.role)).toEqual(
      [
        ...DYNAMODB_STREAM_READ_ACTIONS.map(
          (action) => `Allow ${action} ${logicalId(outbox.table)}.StreamArn`,
        ),
        ...allow(['sqs:SendMessage'], shipping),
        ...allow(['sqs:SendMessage'], outbox.deadLetterQueue),
        ...allow(['sqs:SendMessage'], outbox.onFailureQueue),
        ...allow(LOG_WRITE, outbox.logGroup),
      ].sort(),
    );
  });

  it('grants events:PutEvents on the bus only for an EventBridge destination', () => {
    const { template, outbox, stack } = synth((stack) => ({ eventBus: new events.EventBus(stack, 'Bus') }));
    const bus = stack.node.findChild('Bus') as events.EventBus;
    const lines = permissionsOf(template, outbox.role);
    expect(lines.filter((line) => !line.includes('dynamodb:') && !line.includes('logs:'))).toEqual(
      [
        ...allow(['events:PutEvents'], bus),
        ...allow(['sqs:SendMessage'], outbox.deadLetterQueue),
        ...allow(['sqs:SendMessage'], outbox.onFailureQueue),
      ].sort(),
    );
    expect(outbox.destinationKind).toBe('eventbridge');
  });

  it("gives the relay and writers of an EventBridge outbox the entries' Source: eventSource, else the relay's name", () => {
    const named = synth((stack) => ({ eventBus: new events.EventBus(stack, 'Bus'), eventSource: 'orders' }));
    const unnamed = synth((stack) => ({
      eventBus: new events.EventBus(stack, 'Bus'),
      relayName: 'order-relay',
    }));

    expect(named.outbox.eventSource).toBe('orders');
    expect(named.outbox.writerEnvironment[OUTBOX_ENV.eventSource]).toBe('orders');
    expect(named.outbox.relayEnvironment[OUTBOX_ENV.eventSource]).toBe('orders');
    expect(unnamed.outbox.writerEnvironment[OUTBOX_ENV.eventSource]).toBe('order-relay');
    expect(unnamed.outbox.relayEnvironment[OUTBOX_ENV.eventSource]).toBe('order-relay');
    named.template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ [OUTBOX_ENV.eventSource]: 'orders' }) },
    });
  });

  it('sets no event source for a queue or topic destination', () => {
    const { outbox } = synth();
    expect(outbox.eventSource).toBeUndefined();
    expect(Object.keys(outbox.relayEnvironment)).not.toContain(OUTBOX_ENV.eventSource);
    expect(Object.keys(outbox.writerEnvironment)).not.toContain(OUTBOX_ENV.eventSource);
  });

  it('grants sns:Publish on the topic only, with the KMS actions of its customer-managed key', () => {
    const { template, outbox, stack } = synth((stack) => ({
      topic: new sns.Topic(stack, 'Events', { masterKey: new kms.Key(stack, 'TopicKey') }),
    }));
    const topic = stack.node.findChild('Events') as sns.Topic;
    const key = stack.node.findChild('TopicKey') as kms.Key;
    const lines = permissionsOf(template, outbox.role);
    expect(lines).toContain(`Allow sns:Publish ${logicalId(topic)}`);
    expect(lines.filter((line) => line.includes('kms:'))).toEqual(
      allow(['kms:Decrypt', 'kms:GenerateDataKey'], key).sort(),
    );
  });

  it('grants the KMS send actions of a customer-managed destination queue key', () => {
    const { template, outbox, stack } = synth((stack) => ({
      queue: new sqs.Queue(stack, 'Encrypted', {
        encryption: sqs.QueueEncryption.KMS,
        encryptionMasterKey: new kms.Key(stack, 'QueueKey'),
      }),
    }));
    const key = stack.node.findChild('QueueKey') as kms.Key;
    expect(permissionsOf(template, outbox.role).filter((line) => line.includes('kms:'))).toEqual(
      allow(QUEUE_KEY_SEND_ACTIONS, key).sort(),
    );
  });
});

describe('Outbox environment', () => {
  it('gives the relay the table, retention, destination kind, ARN, queue URL, FIFO flag and dead-letter queue', () => {
    const { template, outbox, stack } = synth((stack) => ({
      queue: new sqs.Queue(stack, 'Shipping', { fifo: true }),
      relayName: 'order-events-relay',
      logLevel: 'debug',
    }));
    const shipping = stack.node.findChild('Shipping') as sqs.Queue;
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: {
          NODE_OPTIONS: '--enable-source-maps',
          [OUTBOX_ENV.tableName]: { Ref: logicalId(outbox.table) },
          [OUTBOX_ENV.retentionSeconds]: String(108 * 60 * 60),
          [OUTBOX_ENV.destinationKind]: 'sqs',
          [OUTBOX_ENV.destinationFifo]: 'true',
          [OUTBOX_ENV.destinationArn]: { 'Fn::GetAtt': [logicalId(shipping), 'Arn'] },
          [OUTBOX_ENV.destinationQueueUrl]: { Ref: logicalId(shipping) },
          [ENV.consumer]: 'order-events-relay',
          [ENV.deadLetterMode]: 'direct',
          [ENV.deadLetterQueueUrl]: { Ref: logicalId(outbox.deadLetterQueue) },
          [ENV.metricNamespace]: 'EffectivelyOnce',
          [ENV.logLevel]: 'debug',
        },
      },
    });
  });

  it('names a topic destination by ARN, with its FIFO flag and no queue URL', () => {
    const { outbox } = synth((stack) => ({ topic: new sns.Topic(stack, 'Events') }));
    expect(Object.keys(outbox.relayEnvironment)).not.toContain(OUTBOX_ENV.destinationQueueUrl);
    expect(outbox.relayEnvironment[OUTBOX_ENV.destinationKind]).toBe('sns');
    expect(outbox.relayEnvironment[OUTBOX_ENV.destinationFifo]).toBe('false');
  });
});

/** The `MessageRetentionPeriod` of `queue` in `template`, seconds. */
function retentionPeriodOf(template: Template, queue: sqs.IQueue): unknown {
  return template.findResources('AWS::SQS::Queue')[logicalId(queue)]?.Properties.MessageRetentionPeriod;
}

describe('Outbox retention', () => {
  const DAY = 24 * 60 * 60;
  const HOUR = 60 * 60;
  it.each([
    {
      case: 'defaults: maxRecordAge bounds the retries, the on-failure queue keeps 4 days',
      age: 12 * HOUR,
      retries: 10000,
      timeout: 30,
      queue: 4 * DAY,
      giveUp: 12 * HOUR,
      retention: 108 * HOUR,
    },
    {
      case: 'few retries end before maxRecordAge',
      age: 12 * HOUR,
      retries: 2,
      timeout: 30,
      queue: 4 * DAY,
      giveUp: 90,
      retention: 4 * DAY + 90,
    },
    {
      case: 'no retry: one attempt',
      age: HOUR,
      retries: 0,
      timeout: 900,
      queue: 4 * DAY,
      giveUp: 900,
      retention: 4 * DAY + 900,
    },
    {
      case: 'the longest record age and on-failure retention',
      age: DAY,
      retries: 10000,
      timeout: 60,
      queue: 14 * DAY,
      giveUp: DAY,
      retention: 15 * DAY,
    },
    {
      case: 'an on-failure queue shorter than stream + allowance: the floor holds',
      age: 600,
      retries: 9,
      timeout: 60,
      queue: 60,
      giveUp: 600,
      retention: DAY + 600 + DAY,
    },
  ])(
    'is max(24 h + G + 1 day, G + onFailureRetention), G = min(maxRecordAge, (retryAttempts + 1) × timeout): $case',
    ({ age, retries, timeout, queue, giveUp, retention }) => {
      const derived = deriveOutboxRetention({
        maxRecordAge: Duration.seconds(age),
        retryAttempts: retries,
        relayTimeout: Duration.seconds(timeout),
        onFailureRetention: Duration.seconds(queue),
      });
      expect(derived.giveUpHorizon.toSeconds()).toBe(giveUp);
      expect(derived.floor.toSeconds()).toBe(DAY + giveUp + DAY);
      expect(derived.onFailureHorizon.toSeconds()).toBe(giveUp + queue);
      expect(derived.retention.toSeconds()).toBe(retention);
    },
  );

  it('explains both terms with their numbers', () => {
    const derived = deriveOutboxRetention({
      maxRecordAge: Duration.hours(12),
      retryAttempts: 10000,
      relayTimeout: Duration.seconds(30),
      onFailureRetention: Duration.days(4),
    });
    expect(derived.explanation).toBe(
      'the longer of stream retention 1 day + relay give-up horizon 12 hours (the shorter of maxRecordAge and (retryAttempts + 1) × relay timeout) + operator allowance 1 day = 2 days 12 hours, and relay give-up horizon 12 hours + on-failure queue retention 4 days = 4 days 12 hours',
    );
  });

  it('keeps on-failure records 4 days and items 108 hours by default, and dead letters 14 days', () => {
    const { template, outbox } = synth();
    expect(outbox.onFailureRetention.toSeconds()).toBe(4 * DAY);
    expect(outbox.retention.toSeconds()).toBe(108 * HOUR);
    expect(outbox.writerEnvironment[OUTBOX_ENV.retentionSeconds]).toBe(String(108 * HOUR));
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ [OUTBOX_ENV.retentionSeconds]: String(108 * HOUR) }) },
    });
    expect(retentionPeriodOf(template, outbox.onFailureQueue)).toBe(4 * DAY);
    expect(retentionPeriodOf(template, outbox.deadLetterQueue)).toBe(14 * DAY);
  });

  it('keeps items the give-up horizon past a longer onFailureRetention', () => {
    const { template, outbox } = synth({ onFailureRetention: Duration.days(14) });
    expect(retentionPeriodOf(template, outbox.onFailureQueue)).toBe(14 * DAY);
    expect(outbox.writerEnvironment[OUTBOX_ENV.retentionSeconds]).toBe(String(14 * DAY + 12 * HOUR));
  });

  it('applies the derived retention from the relay props, or the given one', () => {
    expect(synth({ retryAttempts: 2 }).outbox.retention.toSeconds()).toBe(4 * DAY + 90);
    const given = synth({ retention: Duration.days(7) });
    expect(given.outbox.writerEnvironment[OUTBOX_ENV.retentionSeconds]).toBe(String(7 * DAY));
    given.annotations.hasNoWarning('*', Match.anyValue());
  });

  it('warns, naming the numbers, when a given retention is shorter than the give-up horizon + on-failure queue retention', () => {
    const { annotations } = synth({ retention: Duration.hours(60) });
    const warnings = annotations.findWarning('*', Match.anyValue());
    expect(warnings.map(({ entry }) => entry.data)).toEqual([
      "`retention` (2 days 12 hours) is shorter than the relay's give-up horizon 12 hours + on-failure queue retention 4 days = 4 days 12 hours: an on-failure record would name events the table no longer holds. Lengthen `retention` or shorten `onFailureRetention`. [ack: effectively-once:outboxRetentionShorterThanOnFailureRecords]",
    ]);
  });

  it('also warns when a given retention is shorter than stream retention + give-up horizon + operator allowance', () => {
    const { annotations } = synth({ retention: Duration.hours(30), onFailureRetention: Duration.days(1) });
    const warnings = annotations.findWarning('*', Match.anyValue());
    expect(warnings.map(({ entry }) => entry.data)).toEqual([
      "`retention` (1 day 6 hours) is shorter than the relay's give-up horizon 12 hours + on-failure queue retention 1 day = 1 day 12 hours: an on-failure record would name events the table no longer holds. Lengthen `retention` or shorten `onFailureRetention`. [ack: effectively-once:outboxRetentionShorterThanOnFailureRecords]",
      "`retention` (1 day 6 hours) is shorter than stream retention 1 day + the relay's give-up horizon 12 hours + operator allowance 1 day = 2 days 12 hours: an event the relay gave up on can expire before an operator republishes it from the table. [ack: effectively-once:outboxRetentionShorterThanDerived]",
    ]);
  });
});

describe('Outbox alarms', () => {
  it('alarms on iterator age, event age, failed publishes, the on-failure queue and the dead-letter queue, notifying the topic', () => {
    const { template, outbox } = synth((stack) => ({ alarmTopic: new sns.Topic(stack, 'Alarms') }));
    expect(outbox.alarms).toHaveLength(5);
    template.resourceCountIs('AWS::CloudWatch::Alarm', 5);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'IteratorAge',
      Namespace: 'AWS/Lambda',
      Statistic: 'Maximum',
      Threshold: 300_000,
      AlarmActions: [{ Ref: Match.stringLikeRegexp('^Alarms') }],
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Metrics: Match.arrayWith([
        Match.objectLike({ Expression: 'FILL(retry, 0) + FILL(permanent, 0) + FILL(errors, 0)' }),
      ]),
      Threshold: 1,
    });
    for (const queue of [outbox.onFailureQueue, outbox.deadLetterQueue]) {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(queue), 'QueueName'] } }],
        Threshold: 1,
      });
    }
  });

  it('leaves out only the metric-math failed-publish alarm with failedPublishAlarm: false (a local emulator rejects metric math)', () => {
    const { template, outbox } = synth({ failedPublishAlarm: false });
    expect(outbox.failedPublishAlarm).toBeUndefined();
    expect(outbox.alarms).toEqual([
      outbox.iteratorAgeAlarm,
      outbox.eventAgeAlarm,
      outbox.onFailureAlarm,
      outbox.deadLetterQueueAlarm,
    ]);
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm'));
    expect(alarms).toHaveLength(4);
    for (const alarm of alarms) expect(alarm.Properties.Metrics).toBeUndefined();
  });

  it("alarms on the p99 of the relay's EventAge over 5 minutes reaching 5 minutes, missing data not breaching", () => {
    const { template, outbox } = synth((stack) => ({
      alarmTopic: new sns.Topic(stack, 'Alarms'),
      relayName: 'order-events-relay',
    }));
    expect(outbox.eventAgeAlarm).toBeDefined();
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'EffectivelyOnce',
      MetricName: 'EventAge',
      ExtendedStatistic: 'p99',
      Dimensions: [{ Name: 'Consumer', Value: 'order-events-relay' }],
      Period: 300,
      EvaluationPeriods: 1,
      Threshold: 300_000,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
      AlarmActions: [{ Ref: Match.stringLikeRegexp('^Alarms') }],
    });
  });

  it('takes the event-age threshold from eventAgeThreshold', () => {
    const { template } = synth({ eventAgeThreshold: Duration.seconds(30) });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'EventAge', Threshold: 30_000 });
  });

  it('warns when an age threshold is not below maxRecordAge, which no published event passes', () => {
    const { annotations } = synth({
      maxRecordAge: Duration.minutes(10),
      iteratorAgeThreshold: Duration.minutes(15),
      eventAgeThreshold: Duration.minutes(10),
    });
    expect(annotations.findWarning('*', Match.anyValue()).map(({ entry }) => entry.data)).toEqual([
      '`iteratorAgeThreshold` (15 minutes) is not below `maxRecordAge` (10 minutes): events are given up on before the iterator-age alarm fires. [ack: effectively-once:iteratorAgeAlarmAfterMaxRecordAge]',
      '`eventAgeThreshold` (10 minutes) is not below `maxRecordAge` (10 minutes): no event that old is published, so the event-age alarm never fires. [ack: effectively-once:eventAgeAlarmAfterMaxRecordAge]',
    ]);
    expect(
      synth({
        maxRecordAge: Duration.minutes(10),
        eventAgeThreshold: Duration.minutes(10),
        createAlarms: false,
      }).annotations.findWarning('*', Match.anyValue()),
    ).toEqual([]);
  });

  it('creates no alarm with createAlarms: false', () => {
    const { template, outbox } = synth({ createAlarms: false });
    template.resourceCountIs('AWS::CloudWatch::Alarm', 0);
    expect(outbox.alarms).toEqual([]);
  });
});

describe('Outbox dashboard', () => {
  /** The dashboard's widgets, its body's tokens resolved to their logical ids. */
  function widgetsOf(template: Template): { type: string; properties: Record<string, unknown> }[] {
    const dashboards = Object.values(template.findResources('AWS::CloudWatch::Dashboard'));
    expect(dashboards).toHaveLength(1);
    const body = dashboards[0]?.Properties.DashboardBody as { 'Fn::Join': [string, unknown[]] };
    const text = body['Fn::Join'][1]
      .map((part) => (typeof part === 'string' ? part : JSON.stringify(part).replace(/"/g, "'")))
      .join('');
    return JSON.parse(text).widgets;
  }

  it("shows the relay's outcomes, event age p50/p99/max, iterator age, on-failure and dead-letter depths, function health and alarms", () => {
    const { template, outbox } = synth({ relayName: 'order-events-relay' });
    expect(outbox.dashboard).toBeDefined();
    const widgets = widgetsOf(template);
    const titled = (title: string) => widgets.find((widget) => widget.properties.title === title)?.properties;
    expect(widgets.map((widget) => widget.properties.title ?? widget.type)).toEqual([
      'text',
      'Outcomes',
      'Event age (commit to publish)',
      'Iterator age',
      'On-failure and dead letters',
      'Function',
      'Alarms',
    ]);
    const relayMetric = (name: string, label: string, stat: string) => [
      'EffectivelyOnce',
      name,
      'Consumer',
      'order-events-relay',
      { label, period: 60, stat },
    ];
    expect(titled('Outcomes')?.metrics).toEqual([
      relayMetric('Published', 'Published', 'Sum'),
      relayMetric('Retry', 'Retry', 'Sum'),
      relayMetric('Permanent', 'Permanent', 'Sum'),
    ]);
    expect(titled('Event age (commit to publish)')?.metrics).toEqual([
      relayMetric('EventAge', 'p50', 'p50'),
      relayMetric('EventAge', 'p99', 'p99'),
      relayMetric('EventAge', 'Maximum', 'Maximum'),
    ]);
    expect(titled('Alarms')?.alarms).toHaveLength(outbox.alarms.length);
  });

  it('creates no dashboard with dashboard: false', () => {
    const { template, outbox } = synth({ dashboard: false });
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 0);
    expect(outbox.dashboard).toBeUndefined();
  });

  it('shows no alarm status without alarms', () => {
    const widgets = widgetsOf(synth({ createAlarms: false }).template);
    expect(widgets.map((widget) => widget.properties.title ?? widget.type)).not.toContain('Alarms');
  });
});

describe('Outbox validation', () => {
  it('lists every failure together in one INVALID_OPTIONS error', () => {
    const error = errorOf((stack) => ({
      queue: new sqs.Queue(stack, 'A'),
      topic: new sns.Topic(stack, 'B'),
      relayEntry: 'does/not/exist.ts',
      relayName: 'has spaces',
      batchSize: 0,
      retryAttempts: -1,
      relayMemorySize: 64,
      maxRecordAge: Duration.hours(25),
      relayTimeout: Duration.seconds(1),
      retention: Duration.seconds(0),
      iteratorAgeThreshold: Duration.seconds(10),
      onFailureRetention: Duration.days(15),
      eventAgeThreshold: Duration.millis(500),
      metricNamespace: 'AWS/Lambda',
      logLevel: 'loud' as OutboxProps['logLevel'],
    }));
    expect(error.code).toBe('INVALID_OPTIONS');
    expect(error.failures).toEqual([
      'Expected exactly one destination of `queue` (SQS), `eventBus` (EventBridge) and `topic` (SNS), got 2',
      'Expected `relayEntry` to be an existing handler file, got `"does/not/exist.ts"`',
      "Expected `relayName` to be 1-100 characters of A-Z, a-z, 0-9, '.', '_', ':', '-', got `\"has spaces\"`",
      "Expected `metricNamespace` to be 1-255 characters of A-Z, a-z, 0-9, '.', '-', '_', '/', '#', ':', ' ' not starting with 'AWS/', got `\"AWS/Lambda\"`",
      "Expected `logLevel` to be one of 'debug', 'info', 'warn', 'error', 'silent', got `\"loud\"`",
      'Expected `relayMemorySize` to be an integer from 128 to 10240, got `64`',
      'Expected `batchSize` to be an integer from 1 to 1000, got `0`',
      'Expected `retryAttempts` to be an integer from 0 to 10000, got `-1`',
      'Expected `maxRecordAge` to be from 1 minute to 1 day, got `1 day 1 hour`',
      'Expected `retention` to be at least 1 second, got `0 seconds`',
      'Expected `onFailureRetention` to be from 1 minute to 14 days, got `15 days`',
      'Expected `iteratorAgeThreshold` to be at least 1 minute, got `10 seconds`',
      'Expected `eventAgeThreshold` to be at least 1 second, got `500 millis`',
      "`relayTimeout` (1 second) must be longer than the runtime's deadline margin (2 seconds): the relay would publish nothing",
    ]);
    expect(error.message).toMatch(/^\[TestStack\/Outbox\] 14 problems with the props of Outbox:\n- /);
  });

  it('rejects an eventSource without eventBus, or one EventBridge does not take', () => {
    expect(
      errorOf((stack) => ({
        relayEntry: RELAY_FIXTURE_ENTRY,
        queue: new sqs.Queue(stack, 'A'),
        eventSource: 'orders',
      })).failures,
    ).toEqual(['`eventSource` is the `Source` of EventBridge entries: give it only with `eventBus`']);
    expect(
      errorOf((stack) => ({
        relayEntry: RELAY_FIXTURE_ENTRY,
        eventBus: new events.EventBus(stack, 'Bus'),
        eventSource: 'aws.orders',
      })).failures,
    ).toEqual([
      'Expected `eventSource` to be 1-256 characters not starting with \'aws.\', got `"aws.orders"`',
    ]);
  });

  it('requires a destination', () => {
    expect(errorOf(() => ({ relayEntry: RELAY_FIXTURE_ENTRY })).failures).toEqual([
      'Expected exactly one destination of `queue` (SQS), `eventBus` (EventBridge) and `topic` (SNS), got none',
    ]);
  });

  it("uses the package's relay handler, which exists, when no relayEntry is given", () => {
    const entry = defaultRelayEntry();
    expect(path.relative(path.join(__dirname, '..', '..'), entry)).toBe(
      path.join('lambda', 'outbox', 'relay-handler.ts'),
    );
    expect(fs.existsSync(entry)).toBe(true);
  });
});

describe('IdempotentConsumer with an outbox', () => {
  function consumerWithOutbox(tableKey = false) {
    const { stack } = newStack();
    const key = tableKey ? new kms.Key(stack, 'OutboxKey') : undefined;
    const outbox = new Outbox(stack, 'Outbox', {
      relayEntry: RELAY_FIXTURE_ENTRY,
      topic: new sns.Topic(stack, 'Events', { fifo: true }),
      tableEncryptionKey: key,
    });
    const consumer = new IdempotentConsumer(stack, 'Orders', {
      mode: 'atomic',
      entry: FIXTURE_ENTRY,
      consumerName: 'orders',
      outbox,
    });
    return { stack, outbox, consumer, key, template: Template.fromStack(stack) };
  }

  it('grants the consumer dynamodb:PutItem on the outbox table only: no read, no delete', () => {
    const { template, outbox, consumer } = consumerWithOutbox();
    const lines = permissionsOf(template, consumer.role!);
    const outboxId = logicalId(outbox.table);
    expect(lines.filter((line) => line.includes(outboxId))).toEqual([
      `Allow dynamodb:PutItem ${outboxId}.Arn`,
    ]);
    const inboxId = logicalId(consumer.inboxTable!);
    expect(lines.filter((line) => line.includes(inboxId))).toEqual(
      allow(INBOX_TABLE_ACTIONS.atomic, consumer.inboxTable!).sort(),
    );
  });

  it('grants the KMS write actions of a customer-managed outbox table key', () => {
    const { template, consumer, key } = consumerWithOutbox(true);
    expect(permissionsOf(template, consumer.role!).filter((line) => line.includes('kms:'))).toEqual(
      allow(TABLE_KEY_WRITE_ACTIONS, key!).sort(),
    );
  });

  it("hands the consumer the outbox's writer environment and nothing of the relay's", () => {
    const { outbox, consumer } = consumerWithOutbox();
    expect(consumer.environment).toMatchObject({
      [OUTBOX_ENV.tableName]: outbox.table.tableName,
      [OUTBOX_ENV.retentionSeconds]: String(108 * 60 * 60),
      [OUTBOX_ENV.destinationKind]: 'sns',
      [OUTBOX_ENV.destinationFifo]: 'true',
    });
    expect(Object.keys(consumer.environment)).not.toContain(OUTBOX_ENV.destinationArn);
  });

  it("hands a consumer of an EventBridge outbox the entries' Source, which it counts in an event's size", () => {
    const { stack } = newStack();
    const outbox = new Outbox(stack, 'Outbox', {
      relayEntry: RELAY_FIXTURE_ENTRY,
      eventBus: new events.EventBus(stack, 'Bus'),
      eventSource: 'orders',
    });
    const consumer = new IdempotentConsumer(stack, 'Orders', {
      mode: 'atomic',
      entry: FIXTURE_ENTRY,
      outbox,
    });

    expect(consumer.environment).toMatchObject({
      [OUTBOX_ENV.destinationKind]: 'eventbridge',
      [OUTBOX_ENV.eventSource]: 'orders',
    });
  });

  it('rejects an outbox outside atomic mode, and EO_OUTBOX_* names in environment, together', () => {
    const { stack } = newStack();
    const outbox = new Outbox(stack, 'Outbox', {
      relayEntry: RELAY_FIXTURE_ENTRY,
      queue: new sqs.Queue(stack, 'Q'),
    });
    let failures: readonly string[] = [];
    try {
      new IdempotentConsumer(stack, 'Orders', {
        mode: 'marker',
        entry: FIXTURE_ENTRY,
        outbox,
        environment: { [OUTBOX_ENV.tableName]: 'mine' },
      });
    } catch (error) {
      failures = (error as { failures: readonly string[] }).failures;
    }
    expect(failures).toEqual([
      'Expected `outbox` only in `atomic` mode (events are emitted in the transaction of the business writes), got mode `"marker"`',
      'Expected `environment` not to set `EO_OUTBOX_TABLE_NAME`: the construct sets it from `outbox`',
    ]);
  });
});

describe('Outbox on a table with a stream of its own', () => {
  it('is a plain dynamodb.Table the writers can be granted on by hand', () => {
    const { outbox } = synth();
    expect(outbox.table).toBeInstanceOf(dynamodb.Table);
    expect(outbox.table.tableStreamArn).toBeDefined();
  });
});
