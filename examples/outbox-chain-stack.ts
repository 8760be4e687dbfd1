/**
 * The chain's wiring: the order service emits into an `Outbox`, whose relay publishes to the
 * shipping service's queue. Synthesize it with
 * `npx cdk synth --app "npx tsx examples/outbox-chain-stack.ts"`.
 */
import * as path from 'node:path';
import { App, Stack, type StackProps } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import { IdempotentConsumer, Outbox } from 'effectively-once/construct';

export class OrderChainStack extends Stack {
  constructor(scope: Construct, id: string, props?: StackProps) {
    super(scope, id, props);
    const [orders, shipments] = ['OrdersTable', 'ShipmentsTable'].map(
      (name) =>
        new dynamodb.Table(this, name, {
          partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
          billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
          pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
        }),
    ) as [dynamodb.Table, dynamodb.Table];

    const shipping = new IdempotentConsumer(this, 'Shipping', {
      mode: 'atomic',
      entry: path.join(__dirname, 'outbox-shipping.ts'),
      consumerName: 'shipping',
      businessTables: [{ table: shipments }],
      environment: { SHIPMENTS_TABLE: shipments.tableName },
    });
    // The outbox table and its stream, the package's relay publishing to the shipping queue (with
    // the event id as `idempotency-key`), its dead-letter and on-failure queues, its alarms.
    const outbox = new Outbox(this, 'OrderEvents', {
      queue: shipping.queue,
      relayName: 'order-events-relay',
    });
    new IdempotentConsumer(this, 'Orders', {
      mode: 'atomic',
      entry: path.join(__dirname, 'outbox-order-confirmed.ts'),
      consumerName: 'orders',
      deadLetterMode: 'direct',
      businessTables: [{ table: orders }],
      environment: { ORDERS_TABLE: orders.tableName },
      // `dynamodb:PutItem` on the outbox table, and the `EO_OUTBOX_*` variables `atomic` emits to.
      outbox,
    });
  }
}

export const app = new App();
new OrderChainStack(app, 'OrderChainStack');
