import * as path from 'node:path';
import { CfnOutput, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import { IdempotentConsumer } from './idempotent-consumer';
import { InboxTable } from './inbox-table';

/** Properties of the {@link ExampleStack}. */
export interface ExampleStackProps extends StackProps {
  /**
   * Shape the stack for the local emulator: FIFO queues get explicit `.fifo` names (the
   * emulator's CloudFormation drops `FifoQueue` otherwise), the duplicate-rate alarms are left
   * out (the emulator rejects metric-math alarms), and everything that holds data is destroyed
   * with the stack.
   *
   * @default false
   */
  readonly local?: boolean;

  /**
   * Directory holding the deployable handlers (`order-projector.ts`, `audit-recorder.ts`).
   *
   * @default - `lambda/handlers` of this repository
   */
  readonly handlersDir?: string;
}

/** Consumer names of the example, fixed so that refactoring the stack never rescopes the dedup keys. */
export const EXAMPLE_CONSUMER_NAMES = Object.freeze({
  orderProjector: 'order-projector',
  auditRecorder: 'audit-recorder',
});

/**
 * The example app: one inbox table shared by both consumers, an Orders table projected from a
 * FIFO queue in `atomic` mode (inbox record and order items in one transaction), and an Audit
 * table written from a standard queue in `entity` mode (the audit item is its own marker; the
 * inbox table is only named in its environment). Both send messages that can never succeed
 * straight to their dead-letter queue with the reason in message attributes (`direct`).
 *
 * The table keys are the ones the deployable handlers write: Orders `pk` + `sk` (the order
 * item `ORDER#<orderId>`/`ORDER` and one `STATUS#<status>` item per transition), Audit `pk`
 * (the scoped dedup key of the CloudEvent).
 *
 * @example
 * new ExampleStack(app, 'EffectivelyOnceExample', { local: app.node.tryGetContext('local') === 'true' });
 */
export class ExampleStack extends Stack {
  /** The shared inbox table. */
  public readonly inbox: InboxTable;
  /** Orders table (partition key `pk`, sort key `sk`, as `order-projector.ts` writes it). */
  public readonly ordersTable: dynamodb.Table;
  /** Audit table (partition key `pk`, as `audit-recorder.ts` writes it). */
  public readonly auditTable: dynamodb.Table;
  /** FIFO order events → Orders, `atomic` mode. */
  public readonly orderProjector: IdempotentConsumer;
  /** Standard audit events → Audit, `entity` mode. */
  public readonly auditRecorder: IdempotentConsumer;

  constructor(scope: Construct, id: string, props: ExampleStackProps = {}) {
    super(scope, id, props);
    const local = props.local ?? false;
    const removalPolicy = local ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN;
    const handlersDir = props.handlersDir ?? path.join(__dirname, '..', 'lambda', 'handlers');
    const consumerDefaults = {
      // The handlers send a message that can never succeed (malformed, missing key, payload
      // mismatch) to the dead-letter queue themselves, with its reason in message attributes,
      // and acknowledge it. With redrive it would come back until `maxReceiveCount` (5 receives,
      // 3 minutes apart), blocking its FIFO message group all that time, and its reason would be
      // in the logs only. The redrive policy stays, as the backstop for messages that keep
      // failing for other reasons.
      deadLetterMode: 'direct',
      // MiniStack's CloudFormation rejects alarms built on metric math ("Properties.Metrics
      // (metric math) is not supported") and rolls the whole stack back; the duplicate-rate
      // alarm is the only such alarm, so only the local stage goes without it.
      duplicateRateAlarm: !local,
    } as const;

    this.inbox = new InboxTable(this, 'Inbox', { removalPolicy });
    this.ordersTable = businessTable(this, 'Orders', removalPolicy, 'sk');
    this.auditTable = businessTable(this, 'Audit', removalPolicy);

    this.orderProjector = new IdempotentConsumer(this, 'OrderProjector', {
      mode: 'atomic',
      entry: path.join(handlersDir, 'order-projector.ts'),
      consumerName: EXAMPLE_CONSUMER_NAMES.orderProjector,
      fifo: true,
      // The emulator's CloudFormation only makes a queue FIFO when its name ends in `.fifo`.
      queueName: local ? `${this.stackName}-order-events.fifo` : undefined,
      deadLetterQueueName: local ? `${this.stackName}-order-events-dlq.fifo` : undefined,
      table: this.inbox.table,
      businessTables: [{ table: this.ordersTable }],
      environment: { ORDERS_TABLE: this.ordersTable.tableName },
      removalPolicy,
      ...consumerDefaults,
    });

    this.auditRecorder = new IdempotentConsumer(this, 'AuditRecorder', {
      mode: 'entity',
      entry: path.join(handlersDir, 'audit-recorder.ts'),
      consumerName: EXAMPLE_CONSUMER_NAMES.auditRecorder,
      table: this.inbox.table,
      businessTables: [{ table: this.auditTable }],
      environment: { AUDIT_TABLE: this.auditTable.tableName },
      removalPolicy,
      ...consumerDefaults,
    });

    const outputs: Record<string, string> = {
      OrderEventsQueueUrl: this.orderProjector.queue.queueUrl,
      OrderEventsDeadLetterQueueUrl: this.orderProjector.deadLetterQueue!.queueUrl,
      AuditEventsQueueUrl: this.auditRecorder.queue.queueUrl,
      AuditEventsDeadLetterQueueUrl: this.auditRecorder.deadLetterQueue!.queueUrl,
      InboxTableName: this.inbox.table.tableName,
      OrdersTableName: this.ordersTable.tableName,
      AuditTableName: this.auditTable.tableName,
      OrderProjectorFunctionName: this.orderProjector.handler.functionName,
      AuditRecorderFunctionName: this.auditRecorder.handler.functionName,
      OrderProjectorConsumerName: this.orderProjector.consumerName,
      AuditRecorderConsumerName: this.auditRecorder.consumerName,
    };
    for (const [name, value] of Object.entries(outputs)) new CfnOutput(this, name, { value });
  }
}

function businessTable(
  scope: Construct,
  id: string,
  removalPolicy: RemovalPolicy,
  sortKey?: string,
): dynamodb.Table {
  return new dynamodb.Table(scope, id, {
    partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
    sortKey: sortKey ? { name: sortKey, type: dynamodb.AttributeType.STRING } : undefined,
    billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    encryption: dynamodb.TableEncryption.AWS_MANAGED,
    removalPolicy,
  });
}
