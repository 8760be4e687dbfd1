/**
 * The fair-queue outbox sample (`examples/outbox-fair-queue-stack.ts`, shown in docs/outbox.md) as
 * written: synthesized in a fresh app, the relay and the writer told the queue is fair, the
 * receiving consumer counting per tenant, and nothing found by cdk-nag's AwsSolutions and
 * Serverless packs. It is not deployed: `test/integration/outbox-fair-queue.test.ts` runs the
 * relay against a real standard queue on the emulator.
 */

import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { TenantReportsStack } from '../../examples/outbox-fair-queue-stack';
import { nagFindings } from './support';

describe('the fair-queue outbox sample', () => {
  const app = new App();
  const stack = new TenantReportsStack(app, 'TenantReportsStack');
  const template = Template.fromStack(stack);
  const environments = Object.values(template.findResources('AWS::Lambda::Function')).map(
    (resource) => (resource.Properties.Environment?.Variables ?? {}) as Record<string, unknown>,
  );
  const byConsumer = (consumer: string) =>
    environments.find((variables) => variables.EO_CONSUMER === consumer);

  it('tells the relay and the writer that the destination is a fair queue', () => {
    expect(byConsumer('report-events-relay')).toMatchObject({
      EO_OUTBOX_DESTINATION_KIND: 'sqs',
      EO_OUTBOX_DESTINATION_FIFO: 'false',
      EO_OUTBOX_DESTINATION_FAIR: 'true',
    });
    expect(byConsumer('report-requests')).toMatchObject({ EO_OUTBOX_DESTINATION_FAIR: 'true' });
  });

  it('marks the receiving queue fair: a standard queue, counted per tenant', () => {
    expect(byConsumer('report-builder')).toHaveProperty('EO_GROUP_METRICS_MAX_GROUPS');
    const queues = Object.values(template.findResources('AWS::SQS::Queue'));
    expect(queues.some((queue) => queue.Properties.FifoQueue === true)).toBe(false);
  });

  it('passes cdk-nag with nothing unacknowledged', () => {
    expect(nagFindings(app)).toEqual([]);
  });
});
