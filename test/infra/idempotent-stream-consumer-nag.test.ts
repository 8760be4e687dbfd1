import * as path from 'node:path';
import { type App, Stack } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import { beforeAll, describe, expect, it } from 'vitest';
import { IdempotentStreamConsumer, InboxTable } from '../../lib';
import { acknowledgments, nagFindings, newApp } from './support';

const STREAM_FIXTURE_ENTRY = path.join(__dirname, 'fixtures', 'stream-handler.ts');

/** A stack with both sources and every variant that changes the stream consumer's resources or grants. */
function buildStreamVariants(stack: Stack): void {
  const key = new kms.Key(stack, 'Key', { enableKeyRotation: true });
  const inbox = new InboxTable(stack, 'Inbox', { encryptionKey: key });
  // AwsSolutions-KDS3 asks for the AWS-managed key on a stream.
  const events = new kinesis.Stream(stack, 'Events', { encryption: kinesis.StreamEncryption.MANAGED });
  const orders = new dynamodb.Table(stack, 'Orders', {
    partitionKey: { name: 'orderId', type: dynamodb.AttributeType.STRING },
    stream: dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
  });
  const readModel = new dynamodb.Table(stack, 'ReadModel', {
    partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
  });
  const topic = new sns.Topic(stack, 'Alarms', { masterKey: key, enforceSSL: true });
  const failures = new sns.Topic(stack, 'Failures', { masterKey: key, enforceSSL: true });

  new IdempotentStreamConsumer(stack, 'KinesisMarker', {
    mode: 'marker',
    entry: STREAM_FIXTURE_ENTRY,
    stream: events,
  });
  new IdempotentStreamConsumer(stack, 'TableAtomic', {
    mode: 'atomic',
    entry: STREAM_FIXTURE_ENTRY,
    sourceTable: orders,
    table: inbox.table,
    businessTables: [{ table: readModel }],
    queueEncryptionKey: key,
    alarmTopic: topic,
  });
  new IdempotentStreamConsumer(stack, 'KinesisTwoPhase', {
    mode: 'two-phase',
    entry: STREAM_FIXTURE_ENTRY,
    stream: events,
    table: inbox.table,
    onFailureTopic: failures,
    tracing: lambda.Tracing.ACTIVE,
  });
  new IdempotentStreamConsumer(stack, 'TableEntity', {
    mode: 'entity',
    entry: STREAM_FIXTURE_ENTRY,
    sourceTable: orders,
    businessTables: [{ table: readModel, access: ['write'] }],
  });
}

describe('cdk-nag AwsSolutions and Serverless packs on the stream consumer', () => {
  let app: App;
  beforeAll(() => {
    app = newApp();
    buildStreamVariants(new Stack(app, 'StreamVariants'));
  });

  it('find nothing unacknowledged on a stack with a Kinesis stream and a DynamoDB table stream', () => {
    expect(nagFindings(app)).toEqual([]);
  });

  it('acknowledge only findings the construct explains, each with a written reason, on its own resources', () => {
    const found = acknowledgments(app);
    for (const { rule, reason } of found) expect(reason.trim().length, rule).toBeGreaterThan(40);
    expect([...new Set(found.map(({ rule }) => rule))].sort()).toEqual([
      'AwsSolutions-IAM5[Resource::*]',
      'AwsSolutions-SQS3',
      'Serverless-LambdaDLQ',
      'Serverless-LambdaTracing',
      'Serverless-SQSRedrivePolicy',
    ]);
    expect(
      found.filter(({ rule }) => rule === 'AwsSolutions-IAM5[Resource::*]').map(({ path }) => path),
    ).toEqual(['StreamVariants/KinesisTwoPhase/Role']);
    const queuePaths = found.filter(({ rule }) => rule === 'AwsSolutions-SQS3').map(({ path }) => path);
    expect(queuePaths.sort()).toEqual([
      'StreamVariants/KinesisMarker/DeadLetterQueue',
      'StreamVariants/KinesisMarker/OnFailureQueue',
      'StreamVariants/KinesisTwoPhase/DeadLetterQueue',
      'StreamVariants/TableAtomic/DeadLetterQueue',
      'StreamVariants/TableAtomic/OnFailureQueue',
      'StreamVariants/TableEntity/DeadLetterQueue',
      'StreamVariants/TableEntity/OnFailureQueue',
    ]);
  });
});
