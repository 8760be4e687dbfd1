import * as path from 'node:path';
import { type App, Stack } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import { beforeAll, describe, expect, it } from 'vitest';
import { IdempotentConsumer, Outbox } from '../../lib';
import { acknowledgments, FIXTURE_ENTRY, nagFindings, newApp } from './support';

const RELAY_FIXTURE_ENTRY = path.join(__dirname, 'fixtures', 'outbox-relay.ts');

/**
 * A stack with an outbox per destination kind (standard and FIFO queue, bus, topic), with
 * customer-managed keys and active tracing, and a consumer writing to one.
 */
function buildOutboxVariants(stack: Stack): void {
  const key = new kms.Key(stack, 'Key', { enableKeyRotation: true });
  // The destination queues are downstream consumers' queues (the chain the outbox is for).
  const queue = new IdempotentConsumer(stack, 'Shipping', {
    mode: 'marker',
    entry: FIXTURE_ENTRY,
    queueEncryptionKey: key,
  }).queue;
  const fifo = new IdempotentConsumer(stack, 'ShippingFifo', {
    mode: 'marker',
    entry: FIXTURE_ENTRY,
    fifo: true,
  }).queue;
  const topic = new sns.Topic(stack, 'Events', { masterKey: key, enforceSSL: true });
  const bus = new events.EventBus(stack, 'Bus');

  const toQueue = new Outbox(stack, 'ToQueue', {
    relayEntry: RELAY_FIXTURE_ENTRY,
    queue,
    tableEncryptionKey: key,
  });
  new Outbox(stack, 'ToFifoQueue', { relayEntry: RELAY_FIXTURE_ENTRY, queue: fifo, queueEncryptionKey: key });
  new Outbox(stack, 'ToBus', { relayEntry: RELAY_FIXTURE_ENTRY, eventBus: bus, alarmTopic: topic });
  new Outbox(stack, 'ToTopic', { relayEntry: RELAY_FIXTURE_ENTRY, topic, tracing: lambda.Tracing.ACTIVE });
  // The package's own relay handler (no relayEntry).
  new Outbox(stack, 'WithShippedRelay', { eventBus: bus });
  new IdempotentConsumer(stack, 'Orders', { mode: 'atomic', entry: FIXTURE_ENTRY, outbox: toQueue });
}

describe('cdk-nag AwsSolutions and Serverless packs on the outbox', () => {
  let app: App;
  beforeAll(() => {
    app = newApp();
    buildOutboxVariants(new Stack(app, 'OutboxVariants'));
    // Bundling the shipped relay (the SDK clients of three destinations) takes a few seconds.
  }, 60_000);

  it('find nothing unacknowledged on a stack with each destination kind and a consumer writing to an outbox', () => {
    expect(nagFindings(app)).toEqual([]);
  });

  it('acknowledge only findings the construct explains, each with a written reason, on its own resources', () => {
    const found = acknowledgments(app).filter(({ path }) => path.startsWith('OutboxVariants/To'));
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
    ).toEqual(['OutboxVariants/ToTopic/Role']);
    const queuePaths = found.filter(({ rule }) => rule === 'AwsSolutions-SQS3').map(({ path }) => path);
    expect(queuePaths.sort()).toEqual(
      ['ToBus', 'ToFifoQueue', 'ToQueue', 'ToTopic'].flatMap((outbox) => [
        `OutboxVariants/${outbox}/DeadLetterQueue`,
        `OutboxVariants/${outbox}/OnFailureQueue`,
      ]),
    );
  });
});
