import * as fs from 'node:fs';
import * as path from 'node:path';
import { Duration, Token } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { ENV, INBOX_ATTRIBUTES, OUTBOX_ATTRIBUTES, OUTBOX_ENV } from '../../lambda/core/contract';
import {
  EXAMPLE_CONSUMER_NAMES,
  ExampleStack,
  type ExampleStackProps,
  PLACEHOLDER_DOWNSTREAM_URL,
} from '../../lib/example/example-stack';
import { allow, FIXTURE_EXAMPLE_HANDLERS, logicalId, nagFindings, newApp, permissionsOf } from './support';

const REAL_HANDLERS = path.join(__dirname, '..', '..', 'lambda', 'example');
const realHandlersExist = [
  'order-projector.ts',
  'audit-recorder.ts',
  'payment-notifier.ts',
  'order-summary-projector.ts',
  'order-events-relay.ts',
  'shipment-scheduler.ts',
].every((file) => fs.existsSync(path.join(REAL_HANDLERS, file)));

function synthExample(
  local: boolean,
  handlersDir = FIXTURE_EXAMPLE_HANDLERS,
  props: Omit<ExampleStackProps, 'local' | 'handlersDir'> = {},
) {
  const app = newApp();
  const stack = new ExampleStack(app, 'EffectivelyOnceExample', { local, handlersDir, ...props });
  return { app, stack, template: Template.fromStack(stack) };
}

/** The environment variables of a consumer's function in a template. */
function environmentOf(template: Template, consumer: { handler: Parameters<typeof logicalId>[0] }) {
  return template.findResources('AWS::Lambda::Function')[logicalId(consumer.handler)]?.Properties.Environment
    .Variables as Record<string, unknown>;
}

describe('ExampleStack', () => {
  const { app, stack, template } = synthExample(false);

  it('shares one inbox table and keys the Orders, Audit, OrderSummaries, Shipments and outbox tables as the handlers write them', () => {
    template.resourceCountIs('AWS::DynamoDB::Table', 6);
    const tables = template.findResources('AWS::DynamoDB::Table');
    expect(tables[logicalId(stack.inbox.table)]?.Properties.KeySchema).toEqual([
      { AttributeName: INBOX_ATTRIBUTES.pk, KeyType: 'HASH' },
    ]);
    expect(tables[logicalId(stack.ordersTable)]?.Properties.KeySchema).toEqual([
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ]);
    expect(tables[logicalId(stack.auditTable)]?.Properties.KeySchema).toEqual([
      { AttributeName: 'pk', KeyType: 'HASH' },
    ]);
    expect(tables[logicalId(stack.orderSummariesTable)]?.Properties.KeySchema).toEqual([
      { AttributeName: 'pk', KeyType: 'HASH' },
    ]);
    expect(tables[logicalId(stack.shipmentsTable)]?.Properties.KeySchema).toEqual([
      { AttributeName: 'pk', KeyType: 'HASH' },
    ]);
    expect(tables[logicalId(stack.orderEvents.table)]?.Properties.KeySchema).toEqual([
      { AttributeName: OUTBOX_ATTRIBUTES.pk, KeyType: 'HASH' },
    ]);
    expect(stack.relayCrashTable).toBeUndefined();
    for (const table of Object.values(tables)) {
      expect(table.DeletionPolicy).toBe('Retain');
      expect(table.Properties.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
    }
  });

  it('projects FIFO order events in atomic mode into the Orders table', () => {
    const { orderProjector } = stack;
    expect(orderProjector.mode).toBe('atomic');
    expect(orderProjector.queue.fifo).toBe(true);
    expect(orderProjector.deadLetterQueue?.fifo).toBe(true);
    const fn = template.findResources('AWS::Lambda::Function')[logicalId(orderProjector.handler)];
    expect(fn?.Properties.Environment.Variables).toMatchObject({
      ORDERS_TABLE: { Ref: logicalId(stack.ordersTable) },
      [ENV.inboxTable]: { Ref: logicalId(stack.inbox.table) },
      [ENV.consumer]: EXAMPLE_CONSUMER_NAMES.orderProjector,
    });
    const permissions = permissionsOf(template, orderProjector.role!);
    expect(permissions).toEqual(
      expect.arrayContaining([
        ...allow(['dynamodb:GetItem', 'dynamodb:PutItem'], stack.inbox.table),
        ...allow(['dynamodb:ConditionCheckItem', 'dynamodb:UpdateItem'], stack.ordersTable),
      ]),
    );
    expect(permissions.some((line) => line.includes(logicalId(stack.auditTable)))).toBe(false);
  });

  it('emits OrderConfirmed from the order projector into the outbox: its writer environment, and PutItem on the outbox table only', () => {
    const { orderProjector, orderEvents } = stack;
    expect(environmentOf(template, orderProjector)).toMatchObject({
      [OUTBOX_ENV.tableName]: { Ref: logicalId(orderEvents.table) },
      [OUTBOX_ENV.destinationKind]: 'sqs',
      [OUTBOX_ENV.destinationFifo]: 'false',
    });
    expect(
      permissionsOf(template, orderProjector.role!).filter((line) =>
        line.includes(logicalId(orderEvents.table)),
      ),
    ).toEqual(allow(['dynamodb:PutItem'], orderEvents.table));
  });

  it('relays the outbox with the example relay to the shipment scheduler’s standard queue, and never crashes it outside the local stage', () => {
    const { orderEvents, shipmentScheduler } = stack;
    expect(orderEvents.destinationKind).toBe('sqs');
    expect(orderEvents.fifo).toBe(false);
    expect(orderEvents.relayName).toBe(EXAMPLE_CONSUMER_NAMES.orderEventsRelay);
    const relay = template.findResources('AWS::Lambda::Function')[logicalId(orderEvents.relay)];
    const variables = relay?.Properties.Environment.Variables as Record<string, unknown>;
    expect(variables).toMatchObject({
      [OUTBOX_ENV.destinationQueueUrl]: { Ref: logicalId(shipmentScheduler.queue) },
      [ENV.consumer]: EXAMPLE_CONSUMER_NAMES.orderEventsRelay,
      [ENV.deadLetterQueueUrl]: { Ref: logicalId(orderEvents.deadLetterQueue) },
    });
    expect(variables.RELAY_CRASH_TABLE).toBeUndefined();
    expect(
      permissionsOf(template, orderEvents.role).filter(
        (line) => line.includes('dynamodb:') && !line.includes('Stream'),
      ),
    ).toEqual([]);
    expect(permissionsOf(template, orderEvents.role)).toEqual(
      expect.arrayContaining(allow(['sqs:SendMessage'], shipmentScheduler.queue)),
    );
  });

  it('schedules shipments from the relayed events in entity mode into the Shipments table only', () => {
    const { shipmentScheduler } = stack;
    expect(shipmentScheduler.mode).toBe('entity');
    expect(shipmentScheduler.queue.fifo).toBe(false);
    expect(environmentOf(template, shipmentScheduler)).toMatchObject({
      SHIPMENTS_TABLE: { Ref: logicalId(stack.shipmentsTable) },
      [ENV.consumer]: EXAMPLE_CONSUMER_NAMES.shipmentScheduler,
    });
    const dynamo = permissionsOf(template, shipmentScheduler.role!).filter((line) =>
      line.includes('dynamodb:'),
    );
    expect(dynamo).toEqual(
      allow(
        ['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
        stack.shipmentsTable,
      ),
    );
  });

  it('records audit events from a standard queue in entity mode into the Audit table only', () => {
    const { auditRecorder } = stack;
    expect(auditRecorder.mode).toBe('entity');
    expect(auditRecorder.queue.fifo).toBe(false);
    const fn = template.findResources('AWS::Lambda::Function')[logicalId(auditRecorder.handler)];
    expect(fn?.Properties.Environment.Variables).toMatchObject({
      AUDIT_TABLE: { Ref: logicalId(stack.auditTable) },
      [ENV.consumer]: EXAMPLE_CONSUMER_NAMES.auditRecorder,
    });
    // The handlers read EO_INBOX_TABLE in every mode; entity mode grants nothing on it.
    expect(fn?.Properties.Environment.Variables[ENV.inboxTable]).toEqual({
      Ref: logicalId(stack.inbox.table),
    });
    const dynamo = permissionsOf(template, auditRecorder.role!).filter((line) => line.includes('dynamodb:'));
    expect(dynamo).toEqual(
      allow(
        ['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
        stack.auditTable,
      ),
    );
  });

  it('notifies payments from a standard queue in two-phase mode, with exactly the claim actions on the inbox table', () => {
    const { paymentNotifier } = stack;
    expect(paymentNotifier.mode).toBe('two-phase');
    expect(paymentNotifier.queue.fifo).toBe(false);
    expect(paymentNotifier.inboxTable).toBe(stack.inbox.table);
    expect(environmentOf(template, paymentNotifier)).toEqual({
      NODE_OPTIONS: '--enable-source-maps',
      DOWNSTREAM_URL: PLACEHOLDER_DOWNSTREAM_URL,
      [ENV.consumer]: EXAMPLE_CONSUMER_NAMES.paymentNotifier,
      [ENV.mode]: 'two-phase',
      [ENV.inboxTable]: { Ref: logicalId(stack.inbox.table) },
      // The whole dead-letter path: 4 + 14 + 14 days (redrive allowance), + 1 day
      [ENV.ttlSeconds]: String(33 * 24 * 3600),
      [ENV.deadLetterMode]: 'direct',
      [ENV.deadLetterQueueUrl]: { Ref: logicalId(paymentNotifier.deadLetterQueue!) },
      [ENV.deadLetterMaxMessageBytes]: '1048576',
      // The lease is the function timeout: a claim is taken over only once its holder is gone.
      [ENV.leaseMillis]: '30000',
      [ENV.metricNamespace]: 'EffectivelyOnce',
    });
    const dynamo = permissionsOf(template, paymentNotifier.role!).filter((line) =>
      line.includes('dynamodb:'),
    );
    expect(dynamo).toEqual(
      allow(['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'], stack.inbox.table),
    );
    const fn = template.findResources('AWS::Lambda::Function')[logicalId(paymentNotifier.handler)];
    expect(fn?.Properties.Timeout).toBe(30);
    const queue = template.findResources('AWS::SQS::Queue')[logicalId(paymentNotifier.queue)];
    expect(queue?.Properties.VisibilityTimeout).toBe(180);
  });

  it('warns that the payment notifier posts to a placeholder until downstreamUrl is set', () => {
    expect(stack.downstreamUrl).toBe('https://downstream.invalid');
    const warnings = Annotations.fromStack(stack).findWarning(
      '*',
      Match.stringLikeRegexp('placeholder `https://downstream\\.invalid`'),
    );
    expect(warnings).toHaveLength(1);
  });

  it('gives the Orders table a stream with both images, projected in atomic mode into OrderSummaries only', () => {
    const { orderSummaryProjector } = stack;
    const tables = template.findResources('AWS::DynamoDB::Table');
    expect(tables[logicalId(stack.ordersTable)]?.Properties.StreamSpecification).toEqual({
      StreamViewType: 'NEW_AND_OLD_IMAGES',
    });
    expect(orderSummaryProjector.mode).toBe('atomic');
    expect(orderSummaryProjector.consumerName).toBe(EXAMPLE_CONSUMER_NAMES.orderSummaryProjector);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: logicalId(orderSummaryProjector.handler) },
      EventSourceArn: { 'Fn::GetAtt': [logicalId(stack.ordersTable), 'StreamArn'] },
      StartingPosition: 'TRIM_HORIZON',
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    expect(environmentOf(template, orderSummaryProjector)).toMatchObject({
      ORDER_SUMMARIES_TABLE: { Ref: logicalId(stack.orderSummariesTable) },
      [ENV.inboxTable]: { Ref: logicalId(stack.inbox.table) },
      [ENV.consumer]: EXAMPLE_CONSUMER_NAMES.orderSummaryProjector,
      [ENV.deadLetterMode]: 'direct',
      [ENV.deadLetterQueueUrl]: { Ref: logicalId(orderSummaryProjector.deadLetterQueue) },
    });
    const permissions = permissionsOf(template, orderSummaryProjector.role);
    expect(permissions).toEqual(
      expect.arrayContaining([
        ...allow(['dynamodb:GetItem', 'dynamodb:PutItem'], stack.inbox.table),
        ...allow(['dynamodb:ConditionCheckItem', 'dynamodb:UpdateItem'], stack.orderSummariesTable),
      ]),
    );
    // It reads the Orders table through its stream only, and writes no other business table.
    const tableLines = permissions.filter((line) => !line.includes('StreamArn'));
    for (const table of [stack.ordersTable, stack.auditTable]) {
      expect(tableLines.some((line) => line.includes(logicalId(table)))).toBe(false);
    }
  });

  it('outputs queue URLs, table names, function names and consumer names', () => {
    expect(Object.keys(template.toJSON().Outputs).sort()).toEqual([
      'AuditEventsDeadLetterQueueUrl',
      'AuditEventsQueueUrl',
      'AuditRecorderConsumerName',
      'AuditRecorderFunctionName',
      'AuditTableName',
      'InboxTableName',
      'OrderEventsDeadLetterQueueUrl',
      'OrderEventsQueueUrl',
      'OrderEventsRelayFunctionName',
      'OrderEventsRelayName',
      'OrderProjectorConsumerName',
      'OrderProjectorFunctionName',
      'OrderSummariesTableName',
      'OrderSummaryProjectorConsumerName',
      'OrderSummaryProjectorDeadLetterQueueUrl',
      'OrderSummaryProjectorFunctionName',
      'OrdersTableName',
      'OrdersTableStreamArn',
      'OutboxDeadLetterQueueUrl',
      'OutboxOnFailureQueueUrl',
      'OutboxTableName',
      'OutboxTableStreamArn',
      'PaymentEventsDeadLetterQueueUrl',
      'PaymentEventsQueueUrl',
      'PaymentNotifierConsumerName',
      'PaymentNotifierFunctionName',
      'ShipmentEventsDeadLetterQueueUrl',
      'ShipmentEventsQueueUrl',
      'ShipmentSchedulerConsumerName',
      'ShipmentSchedulerFunctionName',
      'ShipmentsTableName',
    ]);
    template.hasOutput('OrderEventsQueueUrl', { Value: { Ref: logicalId(stack.orderProjector.queue) } });
  });

  it('dead-letters directly from every consumer, so the reason travels with the message', () => {
    for (const consumer of [
      stack.orderProjector,
      stack.auditRecorder,
      stack.paymentNotifier,
      stack.shipmentScheduler,
    ]) {
      expect(consumer.deadLetterMode).toBe('direct');
      const fn = template.findResources('AWS::Lambda::Function')[logicalId(consumer.handler)];
      expect(fn?.Properties.Environment.Variables).toMatchObject({
        [ENV.deadLetterMode]: 'direct',
        [ENV.deadLetterQueueUrl]: { Ref: logicalId(consumer.deadLetterQueue!) },
      });
      expect(permissionsOf(template, consumer.role!)).toEqual(
        expect.arrayContaining(allow(['sqs:SendMessage'], consumer.deadLetterQueue!)),
      );
    }
  });

  it('creates the duplicate-rate alarms (metric math) outside the local stage', () => {
    expect(stack.orderProjector.duplicateRateAlarm).toBeDefined();
    expect(stack.auditRecorder.duplicateRateAlarm).toBeDefined();
    expect(stack.paymentNotifier.duplicateRateAlarm).toBeDefined();
    expect(stack.shipmentScheduler.duplicateRateAlarm).toBeDefined();
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm'));
    // Four per SQS consumer, five for the stream consumer (iterator age, errors, on-failure
    // queue, dead-letter queue, mismatches), five for the outbox (iterator age, event age,
    // failed publishes, on-failure queue, dead-letter queue).
    expect(stack.orderSummaryProjector.alarms).toHaveLength(5);
    expect(stack.orderEvents.alarms).toHaveLength(5);
    expect(alarms).toHaveLength(26);
    // The duplicate rates and the outbox's failed publishes.
    expect(alarms.filter((alarm) => alarm.Properties.Metrics !== undefined)).toHaveLength(5);
  });

  it('leaves FIFO queue names to CloudFormation outside the local stage', () => {
    const queues = template.findResources('AWS::SQS::Queue');
    for (const queue of Object.values(queues)) expect(queue.Properties.QueueName).toBeUndefined();
  });

  it('has no unacknowledged cdk-nag findings', () => {
    expect(nagFindings(app)).toEqual([]);
  });

  it('keeps an SSL-only policy on every queue outside the local stage', () => {
    const policies = Object.values(template.findResources('AWS::SQS::QueuePolicy'));
    // Two queues per SQS consumer; the on-failure and dead-letter queues of the stream consumer
    // and of the outbox.
    expect(policies).toHaveLength(12);
    for (const policy of policies) {
      expect(JSON.stringify(policy.Properties.PolicyDocument)).toContain('"aws:SecureTransport":"false"');
    }
  });
});

describe('ExampleStack in the local stage', () => {
  const { app, stack, template } = synthExample(true);

  it('has no SSL-only queue policy (the emulator serves plain HTTP and may enforce IAM), acknowledged for cdk-nag', () => {
    template.resourceCountIs('AWS::SQS::QueuePolicy', 0);
    expect(nagFindings(app)).toEqual([]);
  });

  it('names FIFO queues explicitly with the .fifo suffix', () => {
    const queues = template.findResources('AWS::SQS::Queue');
    expect(queues[logicalId(stack.orderProjector.queue)]?.Properties).toMatchObject({
      FifoQueue: true,
      QueueName: 'EffectivelyOnceExample-order-events.fifo',
    });
    expect(queues[logicalId(stack.orderProjector.deadLetterQueue!)]?.Properties).toMatchObject({
      FifoQueue: true,
      QueueName: 'EffectivelyOnceExample-order-events-dlq.fifo',
    });
  });

  it('leaves out the metric-math alarms the emulator rejects, and keeps the others', () => {
    expect(stack.orderProjector.duplicateRateAlarm).toBeUndefined();
    expect(stack.auditRecorder.duplicateRateAlarm).toBeUndefined();
    expect(stack.paymentNotifier.duplicateRateAlarm).toBeUndefined();
    expect(stack.shipmentScheduler.duplicateRateAlarm).toBeUndefined();
    // The outbox keeps four: only its failed-publish alarm is built on metric math.
    expect(stack.orderEvents.failedPublishAlarm).toBeUndefined();
    expect(stack.orderEvents.alarms).toEqual([
      stack.orderEvents.iteratorAgeAlarm,
      stack.orderEvents.eventAgeAlarm,
      stack.orderEvents.onFailureAlarm,
      stack.orderEvents.deadLetterQueueAlarm,
    ]);
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm'));
    expect(alarms).toHaveLength(21);
    for (const alarm of alarms) expect(alarm.Properties.Metrics).toBeUndefined();
  });

  it('crashes the relay once: RELAY_CRASH_TABLE names the RelayCrashes table, where the relay may only put', () => {
    const { orderEvents, relayCrashTable } = stack;
    expect(relayCrashTable).toBeDefined();
    const tables = template.findResources('AWS::DynamoDB::Table');
    expect(tables[logicalId(relayCrashTable!)]?.Properties.KeySchema).toEqual([
      { AttributeName: 'pk', KeyType: 'HASH' },
    ]);
    const relay = template.findResources('AWS::Lambda::Function')[logicalId(orderEvents.relay)];
    expect(relay?.Properties.Environment.Variables.RELAY_CRASH_TABLE).toEqual({
      Ref: logicalId(relayCrashTable!),
    });
    expect(
      permissionsOf(template, orderEvents.role).filter((line) => line.includes(logicalId(relayCrashTable!))),
    ).toEqual(allow(['dynamodb:PutItem'], relayCrashTable!));
    template.hasOutput('RelayCrashTableName', { Value: { Ref: logicalId(relayCrashTable!) } });
  });

  it('leaves the crash out when relayCrashOnce is false', () => {
    const { stack: calm, template: calmTemplate } = synthExample(true, FIXTURE_EXAMPLE_HANDLERS, {
      relayCrashOnce: false,
    });
    expect(calm.relayCrashTable).toBeUndefined();
    calmTemplate.resourceCountIs('AWS::DynamoDB::Table', 6);
    const relay = calmTemplate.findResources('AWS::Lambda::Function')[logicalId(calm.orderEvents.relay)];
    expect(relay?.Properties.Environment.Variables.RELAY_CRASH_TABLE).toBeUndefined();
  });

  it('gives the payment notifier a 5 s timeout and lease, so a retried notification is back within 30 s', () => {
    const { paymentNotifier } = stack;
    const fn = template.findResources('AWS::Lambda::Function')[logicalId(paymentNotifier.handler)];
    expect(fn?.Properties.Timeout).toBe(5);
    expect(environmentOf(template, paymentNotifier)[ENV.leaseMillis]).toBe('5000');
    const queue = template.findResources('AWS::SQS::Queue')[logicalId(paymentNotifier.queue)];
    expect(queue?.Properties.VisibilityTimeout).toBe(30);
  });

  it('destroys tables and log groups with the stack', () => {
    for (const type of ['AWS::DynamoDB::Table', 'AWS::Logs::LogGroup']) {
      for (const resource of Object.values(template.findResources(type))) {
        expect(resource.DeletionPolicy, type).toBe('Delete');
      }
    }
  });
});

describe('ExampleStack downstream and payment notifier props', () => {
  it('passes a given downstreamUrl to the payment notifier as DOWNSTREAM_URL, without a warning', () => {
    const { stack, template } = synthExample(true, FIXTURE_EXAMPLE_HANDLERS, {
      downstreamUrl: 'http://127.0.0.1:8080',
    });
    expect(environmentOf(template, stack.paymentNotifier).DOWNSTREAM_URL).toBe('http://127.0.0.1:8080');
    expect(Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('placeholder'))).toEqual([]);
  });

  it('accepts a token for downstreamUrl and leaves it to deploy time', () => {
    const url = Token.asString({ 'Fn::ImportValue': 'NotificationsUrl' });
    const { stack, template } = synthExample(false, FIXTURE_EXAMPLE_HANDLERS, { downstreamUrl: url });
    expect(environmentOf(template, stack.paymentNotifier).DOWNSTREAM_URL).toEqual({
      'Fn::ImportValue': 'NotificationsUrl',
    });
  });

  it.each(['notifications.example.com', 'ftp://files.example.com', ''])(
    'rejects the downstreamUrl `%s` at synth time',
    (downstreamUrl) => {
      expect(() => synthExample(false, FIXTURE_EXAMPLE_HANDLERS, { downstreamUrl })).toThrow(
        `Expected \`downstreamUrl\` to be an absolute http or https URL, got \`${downstreamUrl}\``,
      );
    },
  );

  it('uses a given paymentNotifierTimeout for the function, the lease and the visibility timeout', () => {
    const { stack, template } = synthExample(true, FIXTURE_EXAMPLE_HANDLERS, {
      paymentNotifierTimeout: Duration.seconds(10),
    });
    const fn = template.findResources('AWS::Lambda::Function')[logicalId(stack.paymentNotifier.handler)];
    expect(fn?.Properties.Timeout).toBe(10);
    expect(stack.paymentNotifier.lease.toSeconds()).toBe(10);
    const queue = template.findResources('AWS::SQS::Queue')[logicalId(stack.paymentNotifier.queue)];
    expect(queue?.Properties.VisibilityTimeout).toBe(60);
  });
});

describe.runIf(realHandlersExist)('ExampleStack with the deployable handlers', () => {
  it('bundles lambda/example and passes cdk-nag', () => {
    const { app, template } = synthExample(false, REAL_HANDLERS);
    template.resourceCountIs('AWS::Lambda::Function', 6);
    expect(nagFindings(app)).toEqual([]);
  });
});
