/**
 * The quickstart's stack: one `IdempotentConsumer` (queue, dead-letter queue, inbox table,
 * function, grants, alarms) and the business table its handler writes.
 */
import * as path from 'node:path';
import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import { IdempotentConsumer } from 'effectively-once/construct';

export class MyAppStack extends Stack {
  constructor(scope: Construct, id: string, props?: StackProps) {
    super(scope, id, props);
    const totals = new dynamodb.Table(this, 'Totals', {
      partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    });

    const orders = new IdempotentConsumer(this, 'Orders', {
      mode: 'atomic',
      entry: path.join(__dirname, '..', 'lambda', 'orders.ts'),
      // It scopes every dedup key: set it once and never change it.
      consumerName: 'order-totals',
      // A permanent failure goes to the dead-letter queue at once, with its reason.
      deadLetterMode: 'direct',
      businessTables: [{ table: totals }],
      environment: { TOTALS_TABLE: totals.tableName },
    });

    new CfnOutput(this, 'QueueUrl', { value: orders.queue.queueUrl });
    new CfnOutput(this, 'DeadLetterQueueUrl', { value: orders.deadLetterQueue?.queueUrl ?? '' });
    new CfnOutput(this, 'InboxTableName', { value: orders.inboxTable?.tableName ?? '' });
    new CfnOutput(this, 'TotalsTableName', { value: totals.tableName });
    new CfnOutput(this, 'LogGroupName', { value: orders.logGroup?.logGroupName ?? '' });
  }
}
