import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { App, Duration, Stack, Validations } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { IdempotentConsumer, InboxTable } from '../../lib';
import { ExampleStack } from '../../lib/example/example-stack';
import {
  acknowledgments,
  FIXTURE_ENTRY,
  FIXTURE_EXAMPLE_HANDLERS,
  nagFindings,
  newApp,
  newStack,
} from './support';

/** Every way of configuring the construct that changes which resources or permissions it creates. */
function buildVariants(stack: Stack): void {
  const key = new kms.Key(stack, 'Key', { enableKeyRotation: true });
  const inbox = new InboxTable(stack, 'Inbox', { encryptionKey: key });
  const orders = new dynamodb.Table(stack, 'Orders', {
    partitionKey: { name: 'orderId', type: dynamodb.AttributeType.STRING },
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
  });
  const topic = new sns.Topic(stack, 'Alarms', { masterKey: key, enforceSSL: true });
  new IdempotentConsumer(stack, 'Marker', { mode: 'marker', entry: FIXTURE_ENTRY });
  new IdempotentConsumer(stack, 'AtomicFifo', {
    mode: 'atomic',
    entry: FIXTURE_ENTRY,
    fifo: true,
    contentBasedDeduplication: true,
    queueEncryptionKey: key,
    table: inbox.table,
    businessTables: [{ table: orders }],
    deadLetterMode: 'direct',
    alarmTopic: topic,
  });
  new IdempotentConsumer(stack, 'TwoPhase', {
    mode: 'two-phase',
    entry: FIXTURE_ENTRY,
    table: inbox.table,
    timeout: Duration.minutes(2),
    tracing: lambda.Tracing.ACTIVE,
  });
  new IdempotentConsumer(stack, 'Entity', {
    mode: 'entity',
    entry: FIXTURE_ENTRY,
    businessTables: [{ table: orders }],
  });
  new IdempotentConsumer(stack, 'ManagedInstances', {
    mode: 'two-phase',
    entry: FIXTURE_ENTRY,
    managedInstances: {
      capacityProvider: lambda.CapacityProvider.fromCapacityProviderArn(
        stack,
        'CapacityProvider',
        'arn:aws:lambda:eu-west-1:123456789012:capacity-provider:consumers',
      ),
    },
  });
  const dlq = new sqs.Queue(stack, 'OwnDlq', { enforceSSL: true, retentionPeriod: Duration.days(14) });
  Validations.of(dlq).acknowledge({
    id: 'Serverless-SQSRedrivePolicy',
    reason: 'It is a dead-letter queue.',
  });
  const queue = new sqs.Queue(stack, 'OwnQueue', {
    enforceSSL: true,
    visibilityTimeout: Duration.minutes(3),
    deadLetterQueue: { queue: dlq, maxReceiveCount: 5 },
  });
  new IdempotentConsumer(stack, 'GivenQueue', {
    mode: 'marker',
    entry: FIXTURE_ENTRY,
    queue,
    consumerName: 'given',
  });
}

describe('cdk-nag AwsSolutions and Serverless packs', () => {
  let app: App;
  beforeAll(() => {
    app = newApp();
    buildVariants(new Stack(app, 'Variants'));
  });

  it('find nothing unacknowledged on every variant of the construct', () => {
    expect(nagFindings(app)).toEqual([]);
  });

  it('acknowledge only findings the construct explains, each with a written reason', () => {
    const found = acknowledgments(app).filter(({ path }) => !path.endsWith('/OwnDlq'));
    expect(found.length).toBeGreaterThan(0);
    for (const { rule, reason } of found) {
      expect(reason.trim().length, rule).toBeGreaterThan(40);
    }
    expect([...new Set(found.map(({ rule }) => rule))].sort()).toEqual([
      'AwsSolutions-IAM5[Resource::*]',
      'Serverless-LambdaDLQ',
      'Serverless-LambdaEventSourceMappingDestination',
      'Serverless-LambdaTracing',
      'Serverless-SQSRedrivePolicy',
    ]);
  });

  it('acknowledges the X-Ray wildcard only on a role whose function traces', () => {
    const wildcard = acknowledgments(app).filter(({ rule }) => rule === 'AwsSolutions-IAM5[Resource::*]');
    expect(wildcard.map(({ path }) => path)).toEqual(['Variants/TwoPhase/Role']);
  });

  it('do report findings on resources outside the construct (the checks are live)', () => {
    const { app: control, stack } = newStack('Control');
    new sqs.Queue(stack, 'Plain');
    const rules = nagFindings(control).map(({ rule }) => rule);
    expect(rules).toEqual(
      expect.arrayContaining(['AwsSolutions-SQS3', 'AwsSolutions-SQS4', 'Serverless-SQSRedrivePolicy']),
    );
  });
});

/** Synthesizes `app` with both packs registered as plugins; returns the violations of its report. */
function pluginViolations(app: App): { plugin: string; rule: string }[] {
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
  let directory = app.outdir;
  try {
    directory = app.synth().directory;
  } catch {
    // A failed validation throws after writing the report.
  }
  const report = JSON.parse(fs.readFileSync(path.join(directory, 'validation-report.json'), 'utf8'));
  return report.pluginReports.flatMap((plugin: { pluginName: string; violations?: { ruleName: string }[] }) =>
    (plugin.violations ?? []).map((violation) => ({ plugin: plugin.pluginName, rule: violation.ruleName })),
  );
}

describe('the nag packs registered as validation plugins, as bin/app.ts does', () => {
  it('fail the synth of a non-compliant resource (the report is live)', () => {
    const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'eo-control-'));
    try {
      const app = new App({ outdir, builtinCloudFormationValidation: false });
      new sqs.Queue(new Stack(app, 'Control'), 'Plain');
      expect(pluginViolations(app).map(({ rule }) => rule)).toContain('AwsSolutions-SQS4');
    } finally {
      fs.rmSync(outdir, { recursive: true, force: true });
    }
  });

  it('find nothing in the example app, and neither do the built-in CloudFormation checks', () => {
    const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'eo-example-'));
    try {
      const app = new App({ outdir });
      new ExampleStack(app, 'EffectivelyOnceExample', { handlersDir: FIXTURE_EXAMPLE_HANDLERS });
      expect(pluginViolations(app)).toEqual([]);
    } finally {
      fs.rmSync(outdir, { recursive: true, force: true });
    }
  });
});
