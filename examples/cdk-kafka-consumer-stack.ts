/**
 * The stream consumer construct on a Kafka topic of an Amazon MSK cluster with IAM access control:
 * the Kafka sample above as the handler, its orders table, the inbox table, alarms sent to an SNS
 * topic, and cdk-nag's two packs checking the result at synth time. The cluster's ARN comes from
 * the CDK context (`-c mskClusterArn=...`).
 *
 * Synthesize it with
 * `npx cdk synth --app "npx tsx examples/cdk-kafka-consumer-stack.ts" -c mskClusterArn=<arn>`.
 */
import * as path from 'node:path';
import { App, CfnOutput, Duration, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as sns from 'aws-cdk-lib/aws-sns';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import type { Construct } from 'constructs';
import { IdempotentStreamConsumer } from 'effectively-once/construct';

export interface KafkaOrdersStackProps extends StackProps {
  /** The MSK cluster whose `orders` topic the consumer reads. */
  readonly clusterArn: string;
}

export class KafkaOrdersStack extends Stack {
  constructor(scope: Construct, id: string, props: KafkaOrdersStackProps) {
    super(scope, id, props);
    const alarms = new sns.Topic(this, 'Alarms', { enforceSSL: true });
    const orders = new dynamodb.Table(this, 'Orders', {
      partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
      sortKey: { name: 'sk', type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    });
    const consumer = new IdempotentStreamConsumer(this, 'KafkaOrders', {
      mode: 'atomic',
      entry: path.join(__dirname, 'kafka-orders.ts'),
      // Set it explicitly: it scopes every dedup key, and names the consumer group.
      consumerName: 'kafka-orders',
      // No secret: IAM access control, the role granted on this cluster, topic and group only.
      // The topic keeps records 3 days: maxRecordAge defaults to 1.5 days.
      kafka: { clusterArn: props.clusterArn, topic: 'orders', retention: Duration.days(3) },
      businessTables: [{ table: orders }],
      environment: { ORDERS_TABLE: orders.tableName },
      alarmTopic: alarms,
    });

    new CfnOutput(this, 'DeadLetterQueueUrl', { value: consumer.deadLetterQueue.queueUrl });
    new CfnOutput(this, 'RecordTtl', { value: consumer.recordTtl.toHumanString() });
  }
}

const app = new App();
new KafkaOrdersStack(app, 'KafkaOrdersStack', {
  clusterArn:
    app.node.tryGetContext('mskClusterArn') ??
    'arn:aws:kafka:us-east-1:111122223333:cluster/orders/0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d-1',
});
// A finding of either pack fails the synth.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
