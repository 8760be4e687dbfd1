/**
 * An `Outbox` publishing to a fair queue (`fairQueue: true`), directly or through a standard SNS
 * topic: the relay and its writers are told (`EO_OUTBOX_DESTINATION_FAIR`), and a FIFO queue or
 * topic, or a bus, marked fair is refused at synth with the construct's other failures.
 */
import * as path from 'node:path';
import type { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as events from 'aws-cdk-lib/aws-events';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { IConstruct } from 'constructs';
import { describe, expect, it } from 'vitest';
import { ENV, OUTBOX_ENV } from '../../lambda/core/contract';
import { IdempotentConsumer, Outbox, type OutboxProps } from '../../lib';
import { FIXTURE_ENTRY, logicalId, newStack } from './support';

/** The stand-in for the package's relay handler. */
const RELAY_FIXTURE_ENTRY = path.join(__dirname, 'fixtures', 'outbox-relay.ts');

/** The failures constructing an outbox with `props` throws. */
function failuresOf(props: (stack: Stack) => Partial<OutboxProps>): readonly string[] {
  const { stack } = newStack();
  try {
    new Outbox(stack, 'Outbox', { relayEntry: RELAY_FIXTURE_ENTRY, ...props(stack) });
  } catch (error) {
    expect((error as { code?: string }).code).toBe('INVALID_OPTIONS');
    return (error as { failures: readonly string[] }).failures;
  }
  throw new Error('expected the outbox to throw');
}

const FIFO_FAILURE =
  'Expected a standard queue with `fairQueue: true`, got a FIFO queue: a FIFO queue already groups by `MessageGroupId` and keeps order; a fair queue is a standard one';
const FIFO_TOPIC_FAILURE =
  'Expected a standard topic with `fairQueue: true`, got a FIFO topic: a FIFO topic already groups by `MessageGroupId` for its FIFO queues; a standard topic forwards the group id to its SQS standard subscriptions, the fair queues';
const NOT_A_QUEUE_FAILURE =
  '`fairQueue` marks an SQS queue as fair, or an SNS topic as feeding fair queues: give it only with `queue` or `topic`';

describe('Outbox with fairQueue', () => {
  it('tells the relay and every writer the queue is fair, beside the receiving consumer marked fair', () => {
    const { stack } = newStack();
    const tenants = new IdempotentConsumer(stack, 'Tenants', {
      mode: 'marker',
      entry: FIXTURE_ENTRY,
      fairQueue: true,
    });
    const outbox = new Outbox(stack, 'Outbox', {
      relayEntry: RELAY_FIXTURE_ENTRY,
      queue: tenants.queue,
      fairQueue: true,
    });
    const orders = new IdempotentConsumer(stack, 'Orders', { mode: 'atomic', entry: FIXTURE_ENTRY, outbox });

    expect(outbox.fairQueue).toBe(true);
    expect(outbox.fifo).toBe(false);
    expect(outbox.writerEnvironment[OUTBOX_ENV.destinationFair]).toBe('true');
    expect(outbox.relayEnvironment[OUTBOX_ENV.destinationFair]).toBe('true');
    expect(orders.environment[OUTBOX_ENV.destinationFair]).toBe('true');
    const functions = Template.fromStack(stack).findResources('AWS::Lambda::Function');
    const variablesOf = (fn: IConstruct) =>
      functions[logicalId(fn)]?.Properties.Environment.Variables as Record<string, unknown>;
    expect(variablesOf(outbox.relay)).toMatchObject({
      [OUTBOX_ENV.destinationKind]: 'sqs',
      [OUTBOX_ENV.destinationFifo]: 'false',
      [OUTBOX_ENV.destinationFair]: 'true',
    });
    expect(variablesOf(orders.handler)).toMatchObject({ [OUTBOX_ENV.destinationFair]: 'true' });
    // The receiving consumer's per-group metrics, which its own fairQueue turns on.
    expect(tenants.environment[ENV.groupMetricsMaxGroups]).toBe('100');
  });

  it("is false by default, written as 'false' for every destination", () => {
    const { stack } = newStack();
    const destinations: Partial<OutboxProps>[] = [
      { queue: new sqs.Queue(stack, 'Queue') },
      { topic: new sns.Topic(stack, 'Topic') },
      { eventBus: new events.EventBus(stack, 'Bus') },
    ];
    destinations.forEach((destination, index) => {
      const outbox = new Outbox(stack, `Outbox${index}`, { relayEntry: RELAY_FIXTURE_ENTRY, ...destination });
      expect(outbox.fairQueue).toBe(false);
      expect(outbox.writerEnvironment[OUTBOX_ENV.destinationFair]).toBe('false');
      expect(outbox.relayEnvironment[OUTBOX_ENV.destinationFair]).toBe('false');
    });
  });

  it('takes a standard queue given by ARN', () => {
    const { stack } = newStack();
    const outbox = new Outbox(stack, 'Outbox', {
      relayEntry: RELAY_FIXTURE_ENTRY,
      queue: sqs.Queue.fromQueueArn(stack, 'Tenants', 'arn:aws:sqs:eu-west-1:123456789012:tenants'),
      fairQueue: true,
    });
    expect(outbox.relayEnvironment[OUTBOX_ENV.destinationFair]).toBe('true');
  });

  it('refuses a FIFO queue, created or given by ARN', () => {
    expect(
      failuresOf((stack) => ({ queue: new sqs.Queue(stack, 'Tenants', { fifo: true }), fairQueue: true })),
    ).toEqual([FIFO_FAILURE]);
    expect(
      failuresOf((stack) => ({
        queue: sqs.Queue.fromQueueArn(stack, 'Tenants', 'arn:aws:sqs:eu-west-1:123456789012:tenants.fifo'),
        fairQueue: true,
      })),
    ).toEqual([FIFO_FAILURE]);
  });

  it('tells the relay of a standard topic it feeds fair queues, and refuses a FIFO topic', () => {
    const { stack } = newStack();
    const outbox = new Outbox(stack, 'Outbox', {
      relayEntry: RELAY_FIXTURE_ENTRY,
      topic: new sns.Topic(stack, 'Events'),
      fairQueue: true,
    });
    expect(outbox.fairQueue).toBe(true);
    expect(outbox.relayEnvironment).toMatchObject({
      [OUTBOX_ENV.destinationKind]: 'sns',
      [OUTBOX_ENV.destinationFifo]: 'false',
      [OUTBOX_ENV.destinationFair]: 'true',
    });
    expect(outbox.writerEnvironment[OUTBOX_ENV.destinationFair]).toBe('true');
    expect(
      failuresOf((stack) => ({ topic: new sns.Topic(stack, 'Ordered', { fifo: true }), fairQueue: true })),
    ).toEqual([FIFO_TOPIC_FAILURE]);
  });

  it('refuses a bus destination, listing the failure with the others', () => {
    expect(
      failuresOf((stack) => ({
        eventBus: new events.EventBus(stack, 'Bus'),
        fairQueue: true,
        relayName: 'has spaces',
        batchSize: 0,
      })),
    ).toEqual([
      NOT_A_QUEUE_FAILURE,
      "Expected `relayName` to be 1-100 characters of A-Z, a-z, 0-9, '.', '_', ':', '-', got `\"has spaces\"`",
      'Expected `batchSize` to be an integer from 1 to 1000, got `0`',
    ]);
  });

  it('refuses EO_OUTBOX_DESTINATION_FAIR set by hand on a consumer: the construct sets it from `outbox`', () => {
    const { stack } = newStack();
    expect(
      () =>
        new IdempotentConsumer(stack, 'Orders', {
          mode: 'atomic',
          entry: FIXTURE_ENTRY,
          environment: { [OUTBOX_ENV.destinationFair]: 'true' },
        }),
    ).toThrow(
      'Expected `environment` not to set `EO_OUTBOX_DESTINATION_FAIR`: the construct sets it from `outbox`',
    );
  });
});
