import * as path from 'node:path';
import {
  Annotations,
  CfnOutput,
  Duration,
  RemovalPolicy,
  Stack,
  type StackProps,
  Token,
  Validations,
} from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import { grantItemActions } from '../consumer-permissions';
import { IdempotentConsumer } from '../idempotent-consumer/construct';
import { IdempotentStreamConsumer } from '../idempotent-stream-consumer/construct';
import { InboxTable } from '../inbox-table';
import { Outbox } from '../outbox/construct';

/** Properties of the {@link ExampleStack}. */
export interface ExampleStackProps extends StackProps {
  /**
   * Shape the stack for the local emulator: FIFO queues get explicit `.fifo` names (the
   * emulator's CloudFormation drops `FifoQueue` otherwise), the duplicate-rate alarms are left
   * out (the emulator rejects metric-math alarms), the queues have no SSL-only policy (the
   * emulator serves plain HTTP, and with IAM enforced the policy would deny every call), and
   * everything that holds data is destroyed with the stack.
   *
   * @default false
   */
  readonly local?: boolean;

  /**
   * Directory holding the deployable handlers (`order-projector.ts`, `audit-recorder.ts`,
   * `payment-notifier.ts`, `order-summary-projector.ts`, `order-events-relay.ts`,
   * `shipment-scheduler.ts`).
   *
   * @default - `lambda/example` of this repository
   */
  readonly handlersDir?: string;

  /**
   * Base URL of the downstream service the payment notifier posts to
   * (`POST <downstreamUrl>/notifications`, with the `Idempotency-Key` header), passed to it as
   * `DOWNSTREAM_URL`. An absolute `http` or `https` URL. `bin/app.ts` reads it from the context
   * value `downstreamUrl` (`cdk deploy -c downstreamUrl=https://...`).
   *
   * On AWS, set it to a real endpoint that deduplicates on `Idempotency-Key`. The default is a
   * placeholder on the reserved `.invalid` domain, which never resolves: the stack deploys, and
   * every notification fails as a network error (retried, then dead-lettered by the redrive
   * policy) until it is set. A synth-time warning says so.
   *
   * @default 'https://downstream.invalid' ({@link PLACEHOLDER_DOWNSTREAM_URL})
   */
  readonly downstreamUrl?: string;

  /**
   * Function timeout of the payment notifier. It also sets the notifier's two-phase lease
   * (`EO_LEASE_MILLIS`) and its queue's visibility timeout (6 × this), that is how long a
   * notification that failed transiently (a 503 from the downstream) waits before SQS
   * delivers it again. The local stage uses a short one so that a retry comes back within a
   * demo run.
   *
   * @default Duration.seconds(30); Duration.seconds(5) in the local stage
   */
  readonly paymentNotifierTimeout?: Duration;

  /**
   * Crash the outbox relay once, after a publish and before its checkpoint, to show that the
   * event is published again with the same id and the shipment scheduler acknowledges the copy
   * as a duplicate. Creates the RelayCrashes table, where a conditional put of one marker item
   * makes it happen once across cold starts, grants the relay `dynamodb:PutItem` on it only, and
   * passes its name to the relay as `RELAY_CRASH_TABLE`. A demonstration, never for production.
   *
   * @default true in the local stage, false otherwise
   */
  readonly relayCrashOnce?: boolean;
}

/**
 * The `downstreamUrl` used when none is given: a name on the reserved `.invalid` domain
 * (RFC 2606), so a stack deployed without a real endpoint can never post to anyone.
 */
export const PLACEHOLDER_DOWNSTREAM_URL = 'https://downstream.invalid';

/** Consumer names of the example, fixed so that refactoring the stack never rescopes the dedup keys. */
export const EXAMPLE_CONSUMER_NAMES = Object.freeze({
  orderProjector: 'order-projector',
  auditRecorder: 'audit-recorder',
  paymentNotifier: 'payment-notifier',
  orderSummaryProjector: 'order-summary-projector',
  orderEventsRelay: 'order-events-relay',
  shipmentScheduler: 'shipment-scheduler',
});

const DEFAULT_PAYMENT_NOTIFIER_TIMEOUT = Duration.seconds(30);
// Six times this is the visibility timeout: a notification retried after a 503 comes back
// within half a minute on the emulator instead of three.
const LOCAL_PAYMENT_NOTIFIER_TIMEOUT = Duration.seconds(5);

/**
 * The example app: one inbox table shared by its consumers, an Orders table projected from a
 * FIFO queue in `atomic` mode (inbox record and order items in one transaction), an Audit
 * table written from a standard queue in `entity` mode (the audit item is its own marker; the
 * inbox table is only named in its environment), and a payment notifier on a standard queue in
 * `two-phase` mode, whose effect is outside DynamoDB: one `POST <downstreamUrl>/notifications`
 * per payment status, with the `Idempotency-Key` derived from the dedup key. All three send
 * messages that can never succeed straight to their dead-letter queue with the reason in
 * message attributes (`direct`). The Orders table's stream (`NEW_AND_OLD_IMAGES`) feeds an
 * order summary projector in `atomic` mode, which keeps the OrderSummaries read model (one
 * counter item per order status) through an `IdempotentStreamConsumer`.
 *
 * The order projector is the first service of a chain: when an order becomes `PAID` it emits
 * `OrderConfirmed` through an `Outbox` in the same transaction as the order writes; the outbox's
 * relay (`order-events-relay.ts`) publishes each new event to the standard queue of the
 * shipment scheduler, the second service, which keys on the `idempotency-key` attribute the
 * relay sets and writes one Shipments item per confirmed order in `entity` mode. A standard
 * queue, so that a re-published event reaches the consumer (a FIFO queue would drop it as a
 * resend of the same deduplication id) and is acknowledged there as a duplicate. The shipment
 * scheduler, too, dead-letters directly. In the local stage the relay crashes once after a
 * publish (`relayCrashOnce`), to show that re-publish.
 *
 * The table keys are the ones the deployable handlers write: Orders `pk` + `sk` (the order
 * item `ORDER#<orderId>`/`ORDER` and one `STATUS#<status>` item per transition), Audit `pk`
 * (the scoped dedup key of the CloudEvent), OrderSummaries `pk` (`STATUS#<status>`), Shipments
 * `pk` (`SHIPMENT#<orderId>`), the outbox table `pk` (the event id).
 *
 * @example
 * new ExampleStack(app, 'EffectivelyOnceExample', {
 *   local: app.node.tryGetContext('local') === 'true',
 *   downstreamUrl: 'https://notifications.example.com',
 * });
 */
export class ExampleStack extends Stack {
  /** The shared inbox table. */
  public readonly inbox: InboxTable;
  /** Orders table (partition key `pk`, sort key `sk`, as `order-projector.ts` writes it). */
  public readonly ordersTable: dynamodb.Table;
  /** Audit table (partition key `pk`, as `audit-recorder.ts` writes it). */
  public readonly auditTable: dynamodb.Table;
  /** The read model projected from the Orders stream (partition key `pk` = `STATUS#<status>`). */
  public readonly orderSummariesTable: dynamodb.Table;
  /** FIFO order events → Orders, `atomic` mode. */
  public readonly orderProjector: IdempotentConsumer;
  /** Standard audit events → Audit, `entity` mode. */
  public readonly auditRecorder: IdempotentConsumer;
  /** Standard payment events → the downstream service, `two-phase` mode. */
  public readonly paymentNotifier: IdempotentConsumer;
  /** The Orders table's stream → OrderSummaries, `atomic` mode. */
  public readonly orderSummaryProjector: IdempotentStreamConsumer;
  /** The downstream base URL the payment notifier posts to (`DOWNSTREAM_URL`). */
  public readonly downstreamUrl: string;
  /** Shipments table (partition key `pk` = `SHIPMENT#<orderId>`, as `shipment-scheduler.ts` writes it). */
  public readonly shipmentsTable: dynamodb.Table;
  /** `OrderConfirmed` events (published by the relay, standard queue) → Shipments, `entity` mode. */
  public readonly shipmentScheduler: IdempotentConsumer;
  /** The order projector's outbox: its table, and the relay to the shipment scheduler's queue. */
  public readonly orderEvents: Outbox;
  /** Where the relay's one crash is recorded, when `relayCrashOnce`. */
  public readonly relayCrashTable?: dynamodb.Table;

  constructor(scope: Construct, id: string, props: ExampleStackProps = {}) {
    super(scope, id, props);
    const local = props.local ?? false;
    const removalPolicy = local ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN;
    const handlersDir = props.handlersDir ?? path.join(__dirname, '..', '..', 'lambda', 'example');
    this.downstreamUrl = props.downstreamUrl ?? PLACEHOLDER_DOWNSTREAM_URL;
    checkDownstreamUrl(this.downstreamUrl);
    if (this.downstreamUrl === PLACEHOLDER_DOWNSTREAM_URL) {
      Annotations.of(this).addWarningV2(
        'effectively-once:placeholderDownstreamUrl',
        `The payment notifier posts to the placeholder \`${PLACEHOLDER_DOWNSTREAM_URL}\`, which never resolves: every notification fails and is retried until it is dead-lettered. Set \`downstreamUrl\` (context \`-c downstreamUrl=https://...\` with bin/app.ts) to a real endpoint that deduplicates on Idempotency-Key.`,
      );
    }
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
    this.ordersTable = businessTable(this, 'Orders', removalPolicy, {
      sortKey: 'sk',
      // Both images: the summary projector reads the new one, and the old one of a removal.
      stream: dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
    });
    this.auditTable = businessTable(this, 'Audit', removalPolicy);
    this.orderSummariesTable = businessTable(this, 'OrderSummaries', removalPolicy);

    this.shipmentsTable = businessTable(this, 'Shipments', removalPolicy);
    this.shipmentScheduler = new IdempotentConsumer(this, 'ShipmentScheduler', {
      mode: 'entity',
      entry: path.join(handlersDir, 'shipment-scheduler.ts'),
      consumerName: EXAMPLE_CONSUMER_NAMES.shipmentScheduler,
      table: this.inbox.table,
      businessTables: [{ table: this.shipmentsTable }],
      environment: { SHIPMENTS_TABLE: this.shipmentsTable.tableName },
      removalPolicy,
      ...consumerDefaults,
    });
    this.orderEvents = new Outbox(this, 'OrderEvents', {
      queue: this.shipmentScheduler.queue,
      relayEntry: path.join(handlersDir, 'order-events-relay.ts'),
      relayName: EXAMPLE_CONSUMER_NAMES.orderEventsRelay,
      removalPolicy,
      // The failed-publish alarm is built on metric math, which the emulator's CloudFormation
      // rejects (as for `duplicateRateAlarm`); the outbox's other alarms stay.
      failedPublishAlarm: !local,
    });
    if (props.relayCrashOnce ?? local) {
      this.relayCrashTable = businessTable(this, 'RelayCrashes', removalPolicy);
      // The relay only ever creates the one marker item: a put, nothing else.
      grantItemActions(this.orderEvents.relay, this.relayCrashTable, ['dynamodb:PutItem']);
      this.orderEvents.relay.addEnvironment('RELAY_CRASH_TABLE', this.relayCrashTable.tableName);
    }

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
      // `OrderConfirmed` goes into the outbox in the transaction of the order writes.
      outbox: this.orderEvents,
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

    this.paymentNotifier = new IdempotentConsumer(this, 'PaymentNotifier', {
      mode: 'two-phase',
      entry: path.join(handlersDir, 'payment-notifier.ts'),
      consumerName: EXAMPLE_CONSUMER_NAMES.paymentNotifier,
      table: this.inbox.table,
      // The lease defaults to the timeout: a claim is taken over only after the invocation that
      // holds it can no longer be running.
      timeout:
        props.paymentNotifierTimeout ??
        (local ? LOCAL_PAYMENT_NOTIFIER_TIMEOUT : DEFAULT_PAYMENT_NOTIFIER_TIMEOUT),
      environment: { DOWNSTREAM_URL: this.downstreamUrl },
      removalPolicy,
      ...consumerDefaults,
    });

    this.orderSummaryProjector = new IdempotentStreamConsumer(this, 'OrderSummaryProjector', {
      mode: 'atomic',
      entry: path.join(handlersDir, 'order-summary-projector.ts'),
      consumerName: EXAMPLE_CONSUMER_NAMES.orderSummaryProjector,
      sourceTable: this.ordersTable,
      table: this.inbox.table,
      businessTables: [{ table: this.orderSummariesTable }],
      environment: { ORDER_SUMMARIES_TABLE: this.orderSummariesTable.tableName },
      removalPolicy,
    });

    if (local) {
      const queues = [
        this.orderProjector,
        this.auditRecorder,
        this.paymentNotifier,
        this.shipmentScheduler,
      ].flatMap((consumer) => [consumer.queue, consumer.deadLetterQueue!]);
      queues.push(
        this.orderSummaryProjector.deadLetterQueue,
        this.orderSummaryProjector.onFailureQueue!,
        this.orderEvents.deadLetterQueue,
        this.orderEvents.onFailureQueue,
      );
      for (const queue of queues) {
        // The emulator speaks plain HTTP on loopback, and the main job runs it with IAM
        // enforced: the SSL-only queue policy would deny every call to the queue there.
        queue.node.tryRemoveChild('Policy');
        Validations.of(queue).acknowledge({
          id: 'AwsSolutions-SQS4',
          reason:
            'Local stage only: the emulator serves plain HTTP on 127.0.0.1; every other stage keeps the SSL-only queue policy.',
        });
      }
    }

    const outputs: Record<string, string> = {
      OrderEventsQueueUrl: this.orderProjector.queue.queueUrl,
      OrderEventsDeadLetterQueueUrl: this.orderProjector.deadLetterQueue!.queueUrl,
      AuditEventsQueueUrl: this.auditRecorder.queue.queueUrl,
      AuditEventsDeadLetterQueueUrl: this.auditRecorder.deadLetterQueue!.queueUrl,
      PaymentEventsQueueUrl: this.paymentNotifier.queue.queueUrl,
      PaymentEventsDeadLetterQueueUrl: this.paymentNotifier.deadLetterQueue!.queueUrl,
      InboxTableName: this.inbox.table.tableName,
      OrdersTableName: this.ordersTable.tableName,
      AuditTableName: this.auditTable.tableName,
      OrderProjectorFunctionName: this.orderProjector.handler.functionName,
      AuditRecorderFunctionName: this.auditRecorder.handler.functionName,
      PaymentNotifierFunctionName: this.paymentNotifier.handler.functionName,
      OrderProjectorConsumerName: this.orderProjector.consumerName,
      AuditRecorderConsumerName: this.auditRecorder.consumerName,
      PaymentNotifierConsumerName: this.paymentNotifier.consumerName,
      OrderSummariesTableName: this.orderSummariesTable.tableName,
      OrdersTableStreamArn: this.ordersTable.tableStreamArn!,
      OrderSummaryProjectorFunctionName: this.orderSummaryProjector.handler.functionName,
      OrderSummaryProjectorConsumerName: this.orderSummaryProjector.consumerName,
      OrderSummaryProjectorDeadLetterQueueUrl: this.orderSummaryProjector.deadLetterQueue.queueUrl,
      OutboxTableName: this.orderEvents.table.tableName,
      OutboxTableStreamArn: this.orderEvents.table.tableStreamArn!,
      OrderEventsRelayFunctionName: this.orderEvents.relay.functionName,
      OrderEventsRelayName: this.orderEvents.relayName,
      OutboxDeadLetterQueueUrl: this.orderEvents.deadLetterQueue.queueUrl,
      OutboxOnFailureQueueUrl: this.orderEvents.onFailureQueue.queueUrl,
      ShipmentEventsQueueUrl: this.shipmentScheduler.queue.queueUrl,
      ShipmentEventsDeadLetterQueueUrl: this.shipmentScheduler.deadLetterQueue!.queueUrl,
      ShipmentsTableName: this.shipmentsTable.tableName,
      ShipmentSchedulerFunctionName: this.shipmentScheduler.handler.functionName,
      ShipmentSchedulerConsumerName: this.shipmentScheduler.consumerName,
    };
    if (this.relayCrashTable) outputs.RelayCrashTableName = this.relayCrashTable.tableName;
    for (const [name, value] of Object.entries(outputs)) new CfnOutput(this, name, { value });
  }
}

/** Throws unless `url` is an absolute http(s) URL (tokens are left to deploy time). */
function checkDownstreamUrl(url: string): void {
  if (Token.isUnresolved(url)) return;
  const parsed = URL.canParse(url) ? new URL(url) : undefined;
  if (parsed?.protocol !== 'http:' && parsed?.protocol !== 'https:') {
    throw new Error(`Expected \`downstreamUrl\` to be an absolute http or https URL, got \`${url}\``);
  }
}

function businessTable(
  scope: Construct,
  id: string,
  removalPolicy: RemovalPolicy,
  options: { readonly sortKey?: string; readonly stream?: dynamodb.StreamViewType } = {},
): dynamodb.Table {
  const { sortKey, stream } = options;
  return new dynamodb.Table(scope, id, {
    partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
    sortKey: sortKey ? { name: sortKey, type: dynamodb.AttributeType.STRING } : undefined,
    stream,
    billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    encryption: dynamodb.TableEncryption.AWS_MANAGED,
    removalPolicy,
  });
}
