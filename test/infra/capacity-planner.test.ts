/**
 * The capacity planner of `IdempotentConsumer` (`expectedPeakMessagesPerSecond`): the warm
 * throughput of the inbox table it creates, the warnings with their numbers for each mode, a FIFO
 * queue and a rate above a table's quota, provisioned pollers, the refused values, and the worked
 * example of docs/capacity.md.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CfnParameter } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import { describe, expect, it } from 'vitest';
import { IdempotentConsumer, type IdempotentConsumerProps, MODE_CAPACITY } from '../../lib';
import { FIXTURE_ENTRY, newStack, notesOf } from './support';

/** An on-demand table keyed by `pk`, with the given extra props. */
function onDemandTable(
  scope: Construct,
  id: string,
  props: Partial<dynamodb.TableProps> = {},
): dynamodb.Table {
  return new dynamodb.Table(scope, id, {
    partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
    billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
    ...props,
  });
}

/** One consumer with an `Orders` business table in a fresh stack, and what synth says. */
function synth(props: Partial<IdempotentConsumerProps> & Pick<IdempotentConsumerProps, 'mode'>) {
  const { stack } = newStack();
  const orders = onDemandTable(stack, 'Orders');
  const consumer = new IdempotentConsumer(stack, 'Consumer', {
    entry: FIXTURE_ENTRY,
    businessTables: [{ table: orders }],
    ...props,
  });
  const { warnings, infos } = notesOf(stack);
  return {
    stack,
    consumer,
    template: Template.fromStack(stack),
    warnings,
    infos: infos.filter((text) => text.includes('warm')),
  };
}

/** The `WarmThroughput` of every table in the template, by logical id prefix. */
function warmThroughputs(template: Template): Record<string, unknown> {
  const tables = template.findResources('AWS::DynamoDB::Table');
  return Object.fromEntries(
    Object.entries(tables).map(([id, table]) => [
      id.replace(/[0-9A-F]{8}$/, ''),
      table.Properties.WarmThroughput,
    ]),
  );
}

const ORDERS_RATE_WARNING = (rate: string, units: number, mode: string, total: string, warm: number) =>
  `The business table \`TestStack/Orders\` takes ${rate} messages a second × ${units} write unit${units === 1 ? '' : 's'} a message in ${mode} mode = ${total} write units a second at the expected peak, above the 4,000 a new on-demand table absorbs (it then at most doubles its previous peak within 30 minutes, throttling writes meanwhile). The construct did not create this table, so it sets no warm throughput on it: give it \`warmThroughput: { writeUnitsPerSecond: ${warm} }\`, or make sure it has served that rate before.`;

describe('IdempotentConsumer capacity planner', () => {
  it('atomic mode at 3,000 messages a second: 12,000 write units, 6,000 warm on the inbox table, a warning for the business table and the concurrency', () => {
    const { consumer, template, warnings, infos } = synth({
      mode: 'atomic',
      expectedPeakMessagesPerSecond: 3_000,
      maxConcurrency: 5,
    });
    expect(consumer.capacityPlan).toMatchObject({
      writeUnitsPerMessage: 4,
      writeUnitsPerSecond: 12_000,
      invocationsNeeded: 10,
      concurrencyLimit: 5,
      messageGroupsNeeded: 74,
    });
    expect(warmThroughputs(template)).toEqual({
      Orders: undefined,
      ConsumerInboxTable: { WriteUnitsPerSecond: 6_000 },
    });
    expect(warnings).toEqual([
      ORDERS_RATE_WARNING('3,000', 2, 'atomic', '6,000', 6_000),
      "The event source runs at most 5 concurrent invocations (`maxConcurrency` 5); one invocation carries 328.1 messages a second (10 messages side by side in 30.5 ms, atomic mode's modelled p50), so the expected peak of 3,000 messages a second needs at least 10. Raise the limit, or expect a backlog at the peak (the model counts DynamoDB request time only, so the real need is higher).",
    ]);
    expect(infos).toEqual([
      'The inbox table is created with a warm throughput of 6,000 write units a second: 3,000 messages a second × 2 write units a message in atomic mode = 6,000 write units a second at the expected peak, above the 4,000 a new on-demand table absorbs.',
    ]);
  });

  it('entity mode at 5,000 messages a second: no inbox table, a warning naming 5,000 write units on the business table', () => {
    const { template, warnings, infos } = synth({ mode: 'entity', expectedPeakMessagesPerSecond: 5_000 });
    expect(warmThroughputs(template)).toEqual({ Orders: undefined });
    expect(warnings).toEqual([ORDERS_RATE_WARNING('5,000', 1, 'entity', '5,000', 5_000)]);
    expect(infos).toEqual([]);
  });

  it('marker mode at 3,000 messages a second: 3,000 write units on each table, which a new table absorbs: no warm throughput, no warning', () => {
    const { consumer, template, warnings } = synth({ mode: 'marker', expectedPeakMessagesPerSecond: 3_000 });
    expect(consumer.capacityPlan?.tables.map((table) => table.writeUnitsPerSecond)).toEqual([3_000, 3_000]);
    expect(warmThroughputs(template)).toEqual({ Orders: undefined, ConsumerInboxTable: undefined });
    expect(warnings).toEqual([]);
  });

  it('two-phase mode at 2,500 messages a second: 5,000 warm on the inbox table (claim and completion), 2,500 on the business table', () => {
    const { template, warnings, infos } = synth({ mode: 'two-phase', expectedPeakMessagesPerSecond: 2_500 });
    expect(warmThroughputs(template)).toEqual({
      Orders: undefined,
      ConsumerInboxTable: { WriteUnitsPerSecond: 5_000 },
    });
    expect(warnings).toEqual([]);
    expect(infos).toEqual([
      'The inbox table is created with a warm throughput of 5,000 write units a second: 2,500 messages a second × 2 write units a message in two-phase mode = 5,000 write units a second at the expected peak, above the 4,000 a new on-demand table absorbs.',
    ]);
  });

  it('above the 40,000 write units a second of a table quota: warm throughput at the rate and a quota warning for each table', () => {
    const { template, warnings } = synth({ mode: 'atomic', expectedPeakMessagesPerSecond: 25_000 });
    expect(warmThroughputs(template)).toEqual({
      Orders: undefined,
      ConsumerInboxTable: { WriteUnitsPerSecond: 50_000 },
    });
    expect(warnings).toEqual([
      "The inbox table takes 25,000 messages a second × 2 write units a message in atomic mode = 50,000 write units a second at the expected peak, above DynamoDB's default quota of 40,000 write units a second per on-demand table: raise the table-level write throughput quota through Service Quotas before the peak, or writes are throttled.",
      ORDERS_RATE_WARNING('25,000', 2, 'atomic', '50,000', 50_000),
      "The business table `TestStack/Orders` takes 25,000 messages a second × 2 write units a message in atomic mode = 50,000 write units a second at the expected peak, above DynamoDB's default quota of 40,000 write units a second per on-demand table: raise the table-level write throughput quota through Service Quotas before the peak, or writes are throttled.",
    ]);
  });

  it('a FIFO queue: warns with the message groups the peak needs, and checks the rate per group when they are given', () => {
    const fifoAt500 = (mode: IdempotentConsumerProps['mode'], expectedMessageGroups?: number) =>
      synth({ mode, fifo: true, expectedPeakMessagesPerSecond: 500, expectedMessageGroups });
    const unknown = fifoAt500('atomic');
    expect(unknown.warnings).toEqual([
      "A FIFO message group carries at most 41.1 messages a second (one message at a time, 24.4 ms a message at atomic mode's modelled p50), so the expected peak of 500 messages a second needs at least 13 message groups busy at once, evenly loaded; a group above 41.1 messages a second falls behind. Set `expectedMessageGroups` to the number of groups the producers spread messages over to check it.",
    ]);
    const tooFew = fifoAt500('atomic', 10);
    expect(tooFew.warnings).toEqual([
      "Each of the 10 FIFO message groups takes 500 / 10 = 50 messages a second at the expected peak, above the 41.1 one group carries (one message at a time, 24.4 ms a message at atomic mode's modelled p50): its backlog grows. Spread the messages over at least 13 message groups.",
    ]);
    const enough = fifoAt500('entity', 4);
    expect(enough.warnings).toEqual([]);
  });

  it('does not check a concurrency limit that is a token', () => {
    const { stack } = newStack();
    const limit = new CfnParameter(stack, 'Limit', { type: 'Number' }).valueAsNumber;
    const consumer = new IdempotentConsumer(stack, 'Consumer', {
      mode: 'atomic',
      entry: FIXTURE_ENTRY,
      maxConcurrency: limit,
      expectedPeakMessagesPerSecond: 3_000,
    });
    expect(consumer.capacityPlan?.concurrencyLimit).toBe(Number.POSITIVE_INFINITY);
    Annotations.fromStack(stack).hasNoWarning('*', Match.stringLikeRegexp('concurrent invocations'));
  });

  it('plans nothing without an expected peak', () => {
    const { consumer, template, warnings } = synth({ mode: 'atomic' });
    expect(consumer.capacityPlan).toBeUndefined();
    expect(warmThroughputs(template)).toEqual({ Orders: undefined, ConsumerInboxTable: undefined });
    expect(warnings).toEqual([]);
  });

  it('warns for a given inbox table without warm throughput, not for one pre-warmed to the rate', () => {
    const { stack } = newStack();
    const cold = onDemandTable(stack, 'Cold', { timeToLiveAttribute: 'expiresAt' });
    const warm = onDemandTable(stack, 'Warm', {
      timeToLiveAttribute: 'expiresAt',
      warmThroughput: { writeUnitsPerSecond: 10_000 },
    });
    const common = { mode: 'marker', entry: FIXTURE_ENTRY, expectedPeakMessagesPerSecond: 8_000 } as const;
    new IdempotentConsumer(stack, 'OnCold', { ...common, table: cold });
    new IdempotentConsumer(stack, 'OnWarm', { ...common, table: warm });
    const annotations = Annotations.fromStack(stack);
    annotations.hasWarning(
      '/TestStack/OnCold',
      Match.stringLikeRegexp(
        'The inbox table `TestStack/Cold` you passed takes 8,000 messages a second × 1 write unit a message in marker mode = 8,000 write units a second',
      ),
    );
    annotations.hasNoWarning('/TestStack/OnWarm', Match.anyValue());
  });

  it('sums the write units of a table given as the inbox table and as a business table', () => {
    const { stack } = newStack();
    const single = onDemandTable(stack, 'Single', { timeToLiveAttribute: 'expiresAt' });
    const consumer = new IdempotentConsumer(stack, 'Consumer', {
      mode: 'atomic',
      entry: FIXTURE_ENTRY,
      table: single,
      businessTables: [{ table: single }],
      expectedPeakMessagesPerSecond: 1_500,
    });
    expect(
      consumer.capacityPlan?.tables.map(({ label, writeUnitsPerSecond }) => ({ label, writeUnitsPerSecond })),
    ).toEqual([{ label: 'table `TestStack/Single` (inbox and business table)', writeUnitsPerSecond: 6_000 }]);
  });

  describe('provisioned pollers', () => {
    it('sets the event source in provisioned mode, AWS defaults for what is not given', () => {
      const { template } = synth({ mode: 'atomic', provisionedPollers: { maximum: 50 } });
      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        ProvisionedPollerConfig: { MinimumPollers: 2, MaximumPollers: 50 },
        ScalingConfig: Match.absent(),
      });
    });

    it('counts 10 invocations a poller in the plan', () => {
      const { consumer, warnings } = synth({
        mode: 'atomic',
        provisionedPollers: { minimum: 2, maximum: 2 },
        expectedPeakMessagesPerSecond: 3_000,
      });
      expect(consumer.capacityPlan?.concurrencyLimit).toBe(20);
      expect(warnings).toContain(ORDERS_RATE_WARNING('3,000', 2, 'atomic', '6,000', 6_000));
      const many = synth({
        mode: 'atomic',
        provisionedPollers: { maximum: 2 },
        expectedPeakMessagesPerSecond: 10_000,
      });
      expect(many.warnings).toContain(
        "The event source runs at most 20 concurrent invocations (`provisionedPollers.maximum` 2 × 10 invocations a poller); one invocation carries 328.1 messages a second (10 messages side by side in 30.5 ms, atomic mode's modelled p50), so the expected peak of 10,000 messages a second needs at least 31. Raise the limit, or expect a backlog at the peak (the model counts DynamoDB request time only, so the real need is higher).",
      );
    });
  });

  describe('refuses', () => {
    const refused = (props: Partial<IdempotentConsumerProps>, message: string) => {
      const { stack } = newStack();
      expect(
        () => new IdempotentConsumer(stack, 'Consumer', { mode: 'atomic', entry: FIXTURE_ENTRY, ...props }),
      ).toThrow(`[TestStack/Consumer] ${message}`);
    };

    it('provisioned pollers with maxConcurrency', () => {
      refused(
        { provisionedPollers: { minimum: 2, maximum: 10 }, maxConcurrency: 50 },
        'Expected `provisionedPollers` or `maxConcurrency`, not both: AWS makes provisioned mode and maximum concurrency mutually exclusive on an SQS event source',
      );
    });

    it.each([
      [{ minimum: 1 }, 'Expected `provisionedPollers.minimum` to be an integer from 2 to 200, got `1`'],
      [
        { minimum: 201, maximum: 500 },
        'Expected `provisionedPollers.minimum` to be an integer from 2 to 200, got `201`',
      ],
      [
        { maximum: 2_001 },
        'Expected `provisionedPollers.maximum` to be an integer from 2 to 2000, got `2001`',
      ],
      [{ maximum: 2.5 }, 'Expected `provisionedPollers.maximum` to be an integer from 2 to 2000, got `2.5`'],
      [
        { minimum: 20, maximum: 10 },
        'Expected `provisionedPollers.minimum` (20) to be at most `provisionedPollers.maximum` (10)',
      ],
    ])('provisioned pollers %j', (provisionedPollers, message) => {
      refused({ provisionedPollers }, message);
    });

    it.each([
      [-1, '-1'],
      [0, '0'],
      [Number.NaN, 'NaN'],
      [Number.POSITIVE_INFINITY, 'Infinity'],
    ])('an expected peak of %s messages a second', (rate, shown) => {
      refused(
        { expectedPeakMessagesPerSecond: rate },
        `Expected \`expectedPeakMessagesPerSecond\` to be a positive number of messages a second, got \`${shown}\``,
      );
    });

    it('message groups that are not a positive integer, on a standard queue, or without an expected peak', () => {
      refused(
        { fifo: true, expectedPeakMessagesPerSecond: 100, expectedMessageGroups: 0 },
        'Expected `expectedMessageGroups` to be a positive integer, got `0`',
      );
      refused(
        { expectedPeakMessagesPerSecond: 100, expectedMessageGroups: 4 },
        'Expected `expectedMessageGroups` only on a FIFO queue',
      );
      refused(
        { fifo: true, expectedMessageGroups: 4 },
        'Expected `expectedMessageGroups` only with `expectedPeakMessagesPerSecond`',
      );
    });
  });

  describe('docs/capacity.md', () => {
    const page = readFileSync(join(__dirname, '..', '..', 'docs', 'capacity.md'), 'utf8');
    const shown = (value: number) => value.toLocaleString('en-US', { maximumFractionDigits: 1 });

    it('shows each mode as the planner has it', () => {
      for (const [mode, figures] of Object.entries(MODE_CAPACITY)) {
        const row = page.split('\n').find((line) => line.startsWith(`| \`${mode}\``));
        expect(
          row
            ?.split('|')
            .slice(2, -1)
            .map((cell) => cell.trim()),
        ).toEqual([
          String(figures.inboxWriteUnits),
          String(figures.businessWriteUnits),
          String(figures.inboxWriteUnits + figures.businessWriteUnits),
          String(figures.messageMillis),
          shown(1000 / figures.messageMillis),
          String(figures.batchOfTenMillis),
          shown(10_000 / figures.batchOfTenMillis),
        ]);
      }
    });

    it('computes the worked example as the page says', () => {
      const { stack } = newStack('OrdersStack');
      const orders = onDemandTable(stack, 'Orders');
      const consumer = new IdempotentConsumer(stack, 'OrderEvents', {
        mode: 'atomic',
        entry: FIXTURE_ENTRY,
        businessTables: [{ table: orders }],
        maxConcurrency: 5,
        expectedPeakMessagesPerSecond: 3_000,
      });
      const sample = page.match(/^```ts\n([\s\S]*?)^```$/m)?.[1] ?? '';
      for (const line of [
        "mode: 'atomic',",
        'businessTables: [{ table: orders }],',
        'maxConcurrency: 5,',
        'expectedPeakMessagesPerSecond: 3_000,',
      ]) {
        expect(sample).toContain(line);
      }
      const plan = consumer.capacityPlan!;
      const [inbox, business] = plan.tables;
      const atomic = MODE_CAPACITY.atomic;
      for (const figure of [
        `3,000 messages a second × ${plan.writeUnitsPerMessage} = **${shown(plan.writeUnitsPerSecond)} write units a second**`,
        `3,000 × 2 = ${shown(inbox!.writeUnitsPerSecond)}\n  on the inbox table and 3,000 × 2 = ${shown(business!.writeUnitsPerSecond)} on \`Orders\``,
        `its warm throughput to **${shown(inbox!.warmThroughput!.writeUnitsPerSecond!)} write units a second**`,
        `10 × 1,000 / ${atomic.batchOfTenMillis} = **${shown(plan.messagesPerSecondPerInvocation)} messages a second**`,
        `rounded up **${plan.invocationsNeeded} concurrent invocations**`,
        `3,000 × ${atomic.messageMillis} / 1,000 = 73.1,\n  rounded up **${plan.messageGroupsNeeded} message groups**`,
      ]) {
        expect(page).toContain(figure);
      }
      const annotations = Annotations.fromStack(stack);
      const printed = [
        ...annotations
          .findWarning('*', Match.anyValue())
          .map((message) => `[Warning at ${message.id}] ${message.entry.data}`),
        ...annotations
          .findInfo('*', Match.anyValue())
          .map((message) => `[Info at ${message.id}] ${message.entry.data}`),
      ];
      const output = page.match(/^```text\n([\s\S]*?)^```$/m)?.[1] ?? '';
      expect(output.trimEnd().split('\n')).toEqual(printed);
    });
  });
});
