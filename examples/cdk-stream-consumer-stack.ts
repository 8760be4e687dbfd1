/**
 * The stream consumer construct in your own stack: a DynamoDB Streams projection of an orders
 * table into a read model, and a Kinesis consumer of order events, sharing one inbox table, with
 * alarms sent to an SNS topic and cdk-nag's two packs checking the result at synth time. The
 * entries are the stream handler samples above.
 *
 * Synthesize it with `npx cdk synth --app "npx tsx examples/cdk-stream-consumer-stack.ts"`.
 */
import * as path from 'node:path';
import { App, CfnOutput, Duration, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import * as sns from 'aws-cdk-lib/aws-sns';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import type { Construct } from 'constructs';
import { IdempotentStreamConsumer, InboxTable } from 'effectively-once/construct';

export class OrderStreamsStack extends Stack {
  constructor(scope: Construct, id: string, props?: StackProps) {
    super(scope, id, props);
    const inbox = new InboxTable(this, 'Inbox');
    const alarms = new sns.Topic(this, 'Alarms', { enforceSSL: true });

    // The orders table streams every change with both images; the projection keys a change by
    // the order's key, the event name and its `version` attribute.
    const orders = new dynamodb.Table(this, 'Orders', {
      partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      stream: dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    });
    const readModel = new dynamodb.Table(this, 'OrderReadModel', {
      partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    });
    const projection = new IdempotentStreamConsumer(this, 'OrderProjection', {
      mode: 'atomic',
      entry: path.join(__dirname, 'stream-order-read-model.ts'),
      // Set it explicitly: it scopes every dedup key, so it must never change.
      consumerName: 'order-projection',
      sourceTable: orders,
      table: inbox.table,
      // read + write + conditionCheck (the atomic default), on this table's ARN only.
      businessTables: [{ table: readModel }],
      environment: { READ_MODEL_TABLE: readModel.tableName },
      alarmTopic: alarms,
    });

    // Order events on a Kinesis stream kept 7 days: maxRecordAge defaults to 3.5 days, and the
    // record TTL to 7 days + 1 day.
    const events = new kinesis.Stream(this, 'OrderEvents', {
      retentionPeriod: Duration.days(7),
      encryption: kinesis.StreamEncryption.MANAGED,
    });
    const eventsTable = new dynamodb.Table(this, 'OrdersByEvent', {
      partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
      sortKey: { name: 'sk', type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    });
    const consumer = new IdempotentStreamConsumer(this, 'OrderEventsConsumer', {
      mode: 'atomic',
      entry: path.join(__dirname, 'stream-kinesis-orders.ts'),
      consumerName: 'order-events',
      stream: events,
      table: inbox.table,
      businessTables: [{ table: eventsTable }],
      environment: { ORDERS_TABLE: eventsTable.tableName },
      // Two batches of each shard at once; records of one partition key stay in order.
      parallelizationFactor: 2,
      alarmTopic: alarms,
    });

    new CfnOutput(this, 'ProjectionDeadLetterQueueUrl', { value: projection.deadLetterQueue.queueUrl });
    new CfnOutput(this, 'EventsRecordTtl', { value: consumer.recordTtl.toHumanString() });
  }
}

const app = new App();
new OrderStreamsStack(app, 'OrderStreamsStack');
// A finding of either pack fails the synth.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
