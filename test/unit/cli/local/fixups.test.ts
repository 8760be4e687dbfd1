import { describe, expect, it } from 'vitest';
import {
  type CloudFormationTemplate,
  describeCheck,
  hasRedrivePolicy,
  planLocalFixups,
  ttlState,
} from '../../../../cli/local/fixup-plan';

const path = (value: string) => ({ 'aws:cdk:path': value });

/** Trimmed from the synthesized test/fixtures/deploy-app template, plus the shapes CDK emits elsewhere. */
const template: CloudFormationTemplate = {
  Resources: {
    DeadLetterQueue9F481546: {
      Type: 'AWS::SQS::Queue',
      Properties: { MessageRetentionPeriod: 1209600 },
      Metadata: path('DeployFixture/DeadLetterQueue/Resource'),
    },
    Queue4A7E3555: {
      Type: 'AWS::SQS::Queue',
      Properties: {
        RedrivePolicy: {
          deadLetterTargetArn: { 'Fn::GetAtt': ['DeadLetterQueue9F481546', 'Arn'] },
          maxReceiveCount: 2,
        },
        VisibilityTimeout: 30,
      },
      Metadata: path('DeployFixture/Queue/Resource'),
    },
    FifoQueueE5FF7273: {
      Type: 'AWS::SQS::Queue',
      Properties: { ContentBasedDeduplication: true, FifoQueue: true, QueueName: 'Fixture-orders.fifo' },
      Metadata: path('DeployFixture/FifoQueue/Resource'),
    },
    TableCD117FA1: {
      Type: 'AWS::DynamoDB::Table',
      Properties: {
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
      },
      Metadata: path('DeployFixture/Table/Resource'),
    },
    GlobalInbox: {
      Type: 'AWS::DynamoDB::GlobalTable',
      Properties: {
        Replicas: [
          { Region: 'eu-west-1', PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: false } },
          {
            Region: { Ref: 'AWS::Region' },
            PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true, RecoveryPeriodInDays: 7 },
          },
        ],
        TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
      },
    },
    LegacyQueue: {
      Type: 'AWS::SQS::Queue',
      Properties: {
        RedrivePolicy:
          '{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:shared-dlq","maxReceiveCount":"5"}',
        FifoQueue: 'true',
      },
    },
    ImportedDlqQueue: {
      Type: 'AWS::SQS::Queue',
      Properties: {
        RedrivePolicy: { deadLetterTargetArn: { 'Fn::ImportValue': 'SharedDlqArn' }, maxReceiveCount: 3 },
      },
    },
    TtlOffTable: {
      Type: 'AWS::DynamoDB::Table',
      Properties: {
        TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: false },
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: false },
      },
    },
    ConditionalTtlTable: {
      Type: 'AWS::DynamoDB::Table',
      Properties: {
        TimeToLiveSpecification: { 'Fn::If': ['IsProd', { AttributeName: 'ttl', Enabled: true }, {}] },
      },
    },
    ParameterTtlTable: {
      Type: 'AWS::DynamoDB::Table',
      Properties: { TimeToLiveSpecification: { AttributeName: { Ref: 'TtlAttribute' }, Enabled: true } },
    },
    Consumer8D6BE417: {
      Type: 'AWS::Lambda::Function',
      Properties: { Handler: 'index.handler', Runtime: 'nodejs22.x' },
    },
  },
};

describe('planLocalFixups', () => {
  it('plans a check for every property the emulator may drop, in template order', () => {
    expect(planLocalFixups(template, { region: 'us-east-1' })).toEqual({
      checks: [
        {
          kind: 'queue-redrive',
          logicalId: 'Queue4A7E3555',
          path: 'DeployFixture/Queue',
          deadLetterTarget: { logicalId: 'DeadLetterQueue9F481546' },
          maxReceiveCount: 2,
        },
        {
          kind: 'queue-fifo',
          logicalId: 'FifoQueueE5FF7273',
          path: 'DeployFixture/FifoQueue',
          contentBasedDeduplication: true,
        },
        {
          kind: 'table-ttl',
          logicalId: 'TableCD117FA1',
          path: 'DeployFixture/Table',
          attributeName: 'expiresAt',
        },
        {
          kind: 'table-pitr',
          logicalId: 'TableCD117FA1',
          path: 'DeployFixture/Table',
          recoveryPeriodInDays: undefined,
        },
        { kind: 'table-ttl', logicalId: 'GlobalInbox', path: 'GlobalInbox', attributeName: 'expiresAt' },
        { kind: 'table-pitr', logicalId: 'GlobalInbox', path: 'GlobalInbox', recoveryPeriodInDays: 7 },
        {
          kind: 'queue-redrive',
          logicalId: 'LegacyQueue',
          path: 'LegacyQueue',
          deadLetterTarget: { arn: 'arn:aws:sqs:us-east-1:000000000000:shared-dlq' },
          maxReceiveCount: 5,
        },
        {
          kind: 'queue-fifo',
          logicalId: 'LegacyQueue',
          path: 'LegacyQueue',
          contentBasedDeduplication: undefined,
        },
      ],
      unchecked: [
        {
          logicalId: 'ImportedDlqQueue',
          path: 'ImportedDlqQueue',
          property: 'RedrivePolicy',
          reason: 'deadLetterTargetArn is neither a literal ARN nor Fn::GetAtt Arn',
        },
        {
          logicalId: 'ConditionalTtlTable',
          path: 'ConditionalTtlTable',
          property: 'TimeToLiveSpecification',
          reason: 'its value comes from an intrinsic function (known only at deploy time)',
        },
        {
          logicalId: 'ParameterTtlTable',
          path: 'ParameterTtlTable',
          property: 'TimeToLiveSpecification',
          reason: 'AttributeName is not a literal string',
        },
      ],
    });
  });

  it("picks a global table's replica by its literal region", () => {
    const globalOnly: CloudFormationTemplate = {
      Resources: {
        Inbox: {
          Type: 'AWS::DynamoDB::GlobalTable',
          Properties: {
            Replicas: [
              { Region: 'eu-west-1' },
              { Region: 'us-east-1', PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true } },
            ],
          },
        },
      },
    };
    expect(planLocalFixups(globalOnly, { region: 'us-east-1' }).checks).toEqual([
      { kind: 'table-pitr', logicalId: 'Inbox', path: 'Inbox', recoveryPeriodInDays: undefined },
    ]);
    expect(planLocalFixups(globalOnly, { region: 'ap-south-1' }).checks).toEqual([]);
  });

  it('plans nothing for a template without resources', () => {
    expect(planLocalFixups({})).toEqual({ checks: [], unchecked: [] });
  });
});

describe('hasRedrivePolicy', () => {
  const wanted = { deadLetterTargetArn: 'arn:aws:sqs:us-east-1:000000000000:dlq', maxReceiveCount: 2 };

  it('accepts the same target and count, whether the count is a number or a string', () => {
    expect(hasRedrivePolicy(JSON.stringify(wanted), wanted)).toBe(true);
    expect(
      hasRedrivePolicy(
        '{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":"2"}',
        wanted,
      ),
    ).toBe(true);
  });

  it('rejects a missing, unparsable, retargeted or recounted policy', () => {
    expect(hasRedrivePolicy(undefined, wanted)).toBe(false);
    expect(hasRedrivePolicy('', wanted)).toBe(false);
    expect(hasRedrivePolicy('not json', wanted)).toBe(false);
    expect(hasRedrivePolicy(JSON.stringify({ ...wanted, deadLetterTargetArn: 'arn:other' }), wanted)).toBe(
      false,
    );
    expect(hasRedrivePolicy(JSON.stringify({ ...wanted, maxReceiveCount: 5 }), wanted)).toBe(false);
  });
});

describe('ttlState', () => {
  it('classifies DescribeTimeToLive answers against the declared attribute', () => {
    expect(ttlState({ TimeToLiveStatus: 'ENABLED', AttributeName: 'expiresAt' }, 'expiresAt')).toBe(
      'enabled',
    );
    expect(ttlState({ TimeToLiveStatus: 'ENABLING', AttributeName: 'expiresAt' }, 'expiresAt')).toBe(
      'enabled',
    );
    expect(ttlState({ TimeToLiveStatus: 'ENABLED', AttributeName: 'ttl' }, 'expiresAt')).toBe(
      'other-attribute',
    );
    expect(ttlState({ TimeToLiveStatus: 'DISABLED' }, 'expiresAt')).toBe('disabled');
    expect(ttlState(undefined, 'expiresAt')).toBe('disabled');
  });
});

describe('describeCheck', () => {
  it('names what the template declares', () => {
    const base = { logicalId: 'X', path: 'App/X' };
    expect(
      describeCheck({
        ...base,
        kind: 'queue-redrive',
        deadLetterTarget: { arn: 'arn:x' },
        maxReceiveCount: 3,
      }),
    ).toBe('redrive policy (maxReceiveCount 3)');
    expect(describeCheck({ ...base, kind: 'queue-fifo', contentBasedDeduplication: true })).toBe(
      'FIFO with content-based deduplication',
    );
    expect(describeCheck({ ...base, kind: 'table-ttl', attributeName: 'expiresAt' })).toBe(
      'TTL on `expiresAt`',
    );
    expect(describeCheck({ ...base, kind: 'table-pitr', recoveryPeriodInDays: undefined })).toBe(
      'point-in-time recovery',
    );
  });
});
