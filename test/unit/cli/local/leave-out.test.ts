import { describe, expect, it } from 'vitest';
import { describeLeftOut, leaveOutForEmulator } from '../../../../cli/local/leave-out';

const path = (value: string) => ({ 'aws:cdk:path': `${value}/Resource` });
/** `${name}` as CloudFormation's Fn::Sub writes a reference (not a TypeScript placeholder). */
const sub = (name: string) => `$\{${name}}`;

/** A consumer's monitoring as the constructs synthesize it, reduced to what matters here. */
const template = {
  Parameters: { BootstrapVersion: { Type: 'AWS::SSM::Parameter::Value<String>' } },
  Resources: {
    Queue: { Type: 'AWS::SQS::Queue', Metadata: path('Shop/Orders/Queue') },
    DuplicateRateAlarm: {
      Type: 'AWS::CloudWatch::Alarm',
      Metadata: path('Shop/Orders/DuplicateRateAlarm'),
      Properties: {
        Metrics: [{ Id: 'expr_1', Expression: 'duplicates / (processed + duplicates)' }],
        Threshold: 0.5,
      },
    },
    DeadLetterQueueAlarm: {
      Type: 'AWS::CloudWatch::Alarm',
      Metadata: path('Shop/Orders/DeadLetterQueueAlarm'),
      Properties: { MetricName: 'ApproximateNumberOfMessagesVisible', Threshold: 1 },
    },
    Dashboard: {
      Type: 'AWS::CloudWatch::Dashboard',
      Metadata: path('Shop/Orders/Dashboard'),
      Properties: {
        DashboardBody: {
          'Fn::Join': ['', ['{"alarms":["', { 'Fn::GetAtt': ['DuplicateRateAlarm', 'Arn'] }, '"]}']],
        },
      },
    },
    Composite: {
      Type: 'AWS::CloudWatch::CompositeAlarm',
      Properties: { AlarmRule: { 'Fn::Sub': `ALARM("${sub('DuplicateRateAlarm.Arn')}")` } },
    },
    Topic: {
      Type: 'AWS::SNS::Topic',
      DependsOn: ['DuplicateRateAlarm', 'Queue'],
      Properties: { DisplayName: { 'Fn::Sub': [sub('DuplicateRateAlarm'), { DuplicateRateAlarm: 'x' }] } },
    },
  },
  Outputs: {
    QueueUrl: { Value: { Ref: 'Queue' } },
    AlarmName: { Value: { Ref: 'DuplicateRateAlarm' } },
    CompositeArn: { Value: { 'Fn::GetAtt': 'Composite.Arn' } },
  },
};

describe('leaveOutForEmulator', () => {
  it('leaves out metric-math alarms, what refers to them, and outputs naming either', () => {
    const local = leaveOutForEmulator(template);

    expect(local.resources).toEqual([
      {
        logicalId: 'DuplicateRateAlarm',
        path: 'Shop/Orders/DuplicateRateAlarm',
        type: 'AWS::CloudWatch::Alarm',
        reason: 'metric-math-alarm',
      },
      {
        logicalId: 'Dashboard',
        path: 'Shop/Orders/Dashboard',
        type: 'AWS::CloudWatch::Dashboard',
        reason: 'refers-to-left-out',
      },
      {
        logicalId: 'Composite',
        path: 'Composite',
        type: 'AWS::CloudWatch::CompositeAlarm',
        reason: 'refers-to-left-out',
      },
    ]);
    expect(local.outputs).toEqual(['AlarmName', 'CompositeArn']);
    expect(local.template).toEqual({
      Parameters: template.Parameters,
      Resources: {
        Queue: template.Resources.Queue,
        DeadLetterQueueAlarm: template.Resources.DeadLetterQueueAlarm,
        // A Sub variable of its own that shares the alarm's name is not a reference; the dependency goes.
        Topic: {
          Type: 'AWS::SNS::Topic',
          DependsOn: ['Queue'],
          Properties: template.Resources.Topic.Properties,
        },
      },
      Outputs: { QueueUrl: template.Outputs.QueueUrl },
    });
  });

  it('returns a template without metric-math alarms as it is', () => {
    const plain = {
      Resources: { Queue: template.Resources.Queue },
      Outputs: { QueueUrl: template.Outputs.QueueUrl },
    };
    expect(leaveOutForEmulator(plain)).toEqual({ template: plain, resources: [], outputs: [] });
    expect(describeLeftOut([leaveOutForEmulator(plain)])).toBeUndefined();
  });
});

describe('describeLeftOut', () => {
  it('says in one line what every stack left out, and that it deploys on AWS', () => {
    const outbox = {
      Resources: {
        FailedPublishAlarm: {
          Type: 'AWS::CloudWatch::Alarm',
          Metadata: path('Shop/Events/FailedPublishAlarm'),
          Properties: { Metrics: [] },
        },
      },
    };
    expect(describeLeftOut([leaveOutForEmulator(template), leaveOutForEmulator(outbox)])).toBe(
      'Left out locally: 2 metric-math alarms the emulator rejects (Shop/Orders/DuplicateRateAlarm, ' +
        'Shop/Events/FailedPublishAlarm), what refers to them (Shop/Orders/Dashboard, Composite) and ' +
        '2 outputs naming them (AlarmName, CompositeArn); they deploy on AWS.',
    );
    expect(describeLeftOut([leaveOutForEmulator(outbox)])).toBe(
      'Left out locally: 1 metric-math alarm the emulator rejects (Shop/Events/FailedPublishAlarm); they deploy on AWS.',
    );
  });
});
