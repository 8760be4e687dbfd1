/**
 * The construct in your own stack: one inbox table shared by two consumers, an order projector
 * on a FIFO queue in atomic mode and a refund handler in two-phase mode, with their business
 * table, alarms sent to an SNS topic, and cdk-nag's two packs checking the result at synth time.
 *
 * Synthesize it with `npx cdk synth --app "npx tsx examples/cdk-consumer-stack.ts"`; deploy it to
 * the local emulator with `npm run deploy:local -- --app "npx tsx examples/cdk-consumer-stack.ts"`.
 */
import * as path from 'node:path';
import { App, CfnOutput, Duration, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as sns from 'aws-cdk-lib/aws-sns';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import type { Construct } from 'constructs';
import { IdempotentConsumer, InboxTable } from 'effectively-once/construct';

export class OrdersStack extends Stack {
  constructor(scope: Construct, id: string, props?: StackProps) {
    super(scope, id, props);
    // One inbox table for every consumer: records are keyed by consumer name + dedup key.
    const inbox = new InboxTable(this, 'Inbox');
    const orders = new dynamodb.Table(this, 'Orders', {
      partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
      sortKey: { name: 'sk', type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    });
    const alarms = new sns.Topic(this, 'Alarms', { enforceSSL: true });

    const projector = new IdempotentConsumer(this, 'OrderProjector', {
      mode: 'atomic',
      entry: path.join(__dirname, 'sqs-order-projector.ts'),
      // Set it explicitly: it scopes every dedup key, so it must never change.
      consumerName: 'order-projector',
      fifo: true,
      table: inbox.table,
      // read + write + conditionCheck (the atomic default), on this table's ARN only.
      businessTables: [{ table: orders }],
      environment: { ORDERS_TABLE: orders.tableName },
      alarmTopic: alarms,
    });

    new IdempotentConsumer(this, 'Refunds', {
      mode: 'two-phase',
      entry: path.join(__dirname, 'sqs-two-phase.ts'),
      consumerName: 'refunds',
      table: inbox.table,
      // The two-phase lease defaults to the function timeout.
      timeout: Duration.seconds(30),
      environment: { PAYMENTS_URL: 'https://payments.example.com' },
      // Permanent failures go to the dead-letter queue at once, with their reason.
      deadLetterMode: 'direct',
      alarmTopic: alarms,
    });

    new CfnOutput(this, 'OrderEventsQueueUrl', { value: projector.queue.queueUrl });
    new CfnOutput(this, 'RecordTtl', { value: projector.recordTtl.toHumanString() });
  }
}

const app = new App();
new OrdersStack(app, 'OrdersStack');
// A finding of either pack fails the synth.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
