import { Template } from 'aws-cdk-lib/assertions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { ENV } from '../../lambda/core/contract';
import { IdempotentConsumer, type IdempotentConsumerProps } from '../../lib';
import { FIXTURE_ENTRY, logicalId, newStack } from './support';

/** A consumer in a fresh stack, and its function's environment. */
function build(props: Partial<IdempotentConsumerProps> = {}) {
  const { stack } = newStack();
  const consumer = new IdempotentConsumer(stack, 'Consumer', {
    mode: 'marker',
    entry: FIXTURE_ENTRY,
    ...props,
  } as IdempotentConsumerProps);
  const fn = Template.fromStack(stack).findResources('AWS::Lambda::Function')[logicalId(consumer.handler)];
  return { consumer, variables: fn!.Properties.Environment.Variables as Record<string, string> };
}

function expectThrow(props: Partial<IdempotentConsumerProps>, message: string) {
  expect(() => build(props)).toThrow(message);
}

describe('IdempotentConsumer with a fair queue', () => {
  it('turns on per-group metrics for 100 groups by default, in the environment and the construct', () => {
    const { consumer, variables } = build({ fairQueue: true });

    expect(variables[ENV.groupMetricsMaxGroups]).toBe('100');
    expect(consumer.environment[ENV.groupMetricsMaxGroups]).toBe('100');
  });

  it('passes maxMetricGroups, and nothing without fairQueue', () => {
    expect(build({ fairQueue: true, maxMetricGroups: 25 }).variables[ENV.groupMetricsMaxGroups]).toBe('25');
    expect(build().variables).not.toHaveProperty(ENV.groupMetricsMaxGroups);
    expect(build({ fairQueue: false }).variables).not.toHaveProperty(ENV.groupMetricsMaxGroups);
  });

  it('marks a given standard queue fair', () => {
    const { stack } = newStack();
    const queue = sqs.Queue.fromQueueArn(stack, 'Tenants', 'arn:aws:sqs:eu-west-1:123456789012:tenants');
    const consumer = new IdempotentConsumer(stack, 'Consumer', {
      mode: 'marker',
      entry: FIXTURE_ENTRY,
      queue,
      fairQueue: true,
    });

    expect(consumer.environment[ENV.groupMetricsMaxGroups]).toBe('100');
  });

  it('refuses a FIFO queue, created or given', () => {
    const message =
      'Expected a standard queue with `fairQueue: true`, got a FIFO queue: a fair queue is a standard queue whose producers set `MessageGroupId`';
    expectThrow({ fairQueue: true, fifo: true }, message);
    const { stack } = newStack();
    const queue = new sqs.Queue(stack, 'Orders', { fifo: true, enforceSSL: true });
    expect(
      () =>
        new IdempotentConsumer(stack, 'Consumer', {
          mode: 'marker',
          entry: FIXTURE_ENTRY,
          queue,
          fairQueue: true,
        }),
    ).toThrow(message);
  });

  it('refuses maxMetricGroups without fairQueue or outside 1-1000, and EO_GROUP_METRICS_MAX_GROUPS in environment', () => {
    expectThrow({ maxMetricGroups: 10 }, 'Expected no `maxMetricGroups` without `fairQueue: true`');
    for (const value of [0, 1001, 2.5]) {
      expectThrow(
        { fairQueue: true, maxMetricGroups: value },
        `Expected \`maxMetricGroups\` to be an integer from 1 to 1000, got \`${value}\``,
      );
    }
    expectThrow({ environment: { [ENV.groupMetricsMaxGroups]: '5' } }, '`fairQueue` (`maxMetricGroups`)');
  });

  it('gives the metric of one message group, by name or (other)', () => {
    const { consumer } = build({ fairQueue: true, consumerName: 'tenants', metricNamespace: 'Shop' });
    const metric = consumer.metricOfMessageGroup('Duplicate', 'tenant-42');

    expect({
      namespace: metric.namespace,
      metricName: metric.metricName,
      dimensions: metric.dimensions,
      statistic: metric.statistic,
      period: metric.period.toMinutes(),
    }).toEqual({
      namespace: 'Shop',
      metricName: 'Duplicate',
      dimensions: { Consumer: 'tenants', MessageGroup: 'tenant-42' },
      statistic: 'Sum',
      period: 5,
    });
    expect(consumer.metricOfMessageGroup('InFlight', '(other)').dimensions).toEqual({
      Consumer: 'tenants',
      MessageGroup: '(other)',
    });
  });
});
