import { Annotations, type Duration, Names, RemovalPolicy, Validations } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import {
  type ConsumerMode,
  DEFAULT_METRIC_NAMESPACE,
  type DeadLetterMode,
  METRICS,
} from '../../lambda/core/contract';
import { DEFAULT_MEMORY_SIZE, DEFAULT_TIMEOUT, WARNING_PREFIX } from '../consumer-defaults';
import { createConsumerFunction } from '../consumer-function';
import { consumerMetric, duplicateRate } from '../consumer-monitoring';
import { QUEUE_KEY_SEND_ACTIONS } from '../consumer-permissions';
import { assertNoFailures } from '../consumer-validation';
import { consumerEnvironment, grantConsumerTables } from '../consumer-wiring';
import { InboxTable } from '../inbox-table';
import { SQS_DEFAULT_RETENTION } from '../record-ttl';
import {
  DEFAULT_AGE_THRESHOLD,
  DEFAULT_BATCH_SIZE,
  DEFAULT_DEAD_LETTER_RETENTION,
  DEFAULT_DUPLICATE_RATE_THRESHOLD,
  DEFAULT_MAX_RECEIVE_COUNT,
} from './defaults';
import { createQueueConsumerAlarms, createQueueConsumerDashboard } from './monitoring';
import type { IdempotentConsumerProps } from './props';
import { knownDeadLetterQueue, resolveTiming } from './timing';
import { validateConsumerProps } from './validation';

/**
 * An idempotent SQS → Lambda → DynamoDB consumer: the queue and its dead-letter queue, the
 * inbox table, the function with exactly the permissions its mode needs, the event source
 * with partial batch responses, the alarms and a dashboard.
 *
 * Every resource can be passed in instead of created (`queue`, `deadLetterQueue`, `table`,
 * `handler`). The record TTL is derived from the queue settings (see `recordTtl`).
 *
 * Every prop is checked before anything is created, unresolved tokens skipped: invalid props
 * throw one error (code `INVALID_OPTIONS`) listing every failure, each naming the prop, what
 * was expected and what was given. Risky but allowed choices draw synth-time warnings with ids
 * `effectively-once:<rule>` (for example `effectively-once:leaseOutlivesRedelivery`).
 *
 * cdk-nag (AwsSolutions and Serverless packs) reports nothing on the construct. The findings
 * it acknowledges (`Validations.of(...).acknowledge`), each with its reason, on its own
 * resources only: `Serverless-LambdaDLQ` on the function (invoked synchronously by the event
 * source, never asynchronously), `Serverless-LambdaEventSourceMappingDestination` on the event
 * source mapping (SQS mappings have no on-failure destination; the redrive policy is one),
 * `Serverless-SQSRedrivePolicy` on the dead-letter queue it creates (a DLQ of a DLQ would hide
 * dead letters), `Serverless-LambdaTracing` while tracing is off, and with active tracing
 * `AwsSolutions-IAM5[Resource::*]` on the role (X-Ray has no resource-level permissions).
 *
 * @example
 * const inbox = new InboxTable(this, 'Inbox');
 * const orders = new dynamodb.Table(this, 'Orders', {
 *   partitionKey: { name: 'orderId', type: dynamodb.AttributeType.STRING },
 * });
 * const consumer = new IdempotentConsumer(this, 'OrderEvents', {
 *   mode: 'atomic',
 *   entry: 'src/handlers/order-projector.ts',
 *   consumerName: 'order-projector',
 *   fifo: true,
 *   table: inbox.table,
 *   businessTables: [{ table: orders }],
 *   environment: { ORDERS_TABLE: orders.tableName },
 *   alarmTopic: topic,
 * });
 * new CfnOutput(this, 'QueueUrl', { value: consumer.queue.queueUrl });
 */
export class IdempotentConsumer extends Construct implements iam.IGrantable {
  /** The queue the function consumes. */
  public readonly queue: sqs.IQueue;
  /** The dead-letter queue, when one is created or known. */
  public readonly deadLetterQueue?: sqs.IQueue;
  /** The inbox table (in `entity` mode only a given one, with no permissions on it). */
  public readonly inboxTable?: dynamodb.ITable;
  /** The function (created from `entry`, or the given `handler`). */
  public readonly handler: lambda.IFunction;
  /** The role the construct created for the function (undefined with a given `handler`). */
  public readonly role?: iam.IRole;
  /** The function's log group (undefined with a given `handler`). */
  public readonly logGroup?: logs.ILogGroup;
  /** The SQS event source bound to the function. */
  public readonly eventSource: SqsEventSource;
  /** The event source mapping the event source created. */
  public readonly eventSourceMapping: lambda.EventSourceMapping;
  /** The consumer name that scopes every dedup key. */
  public readonly consumerName: string;
  /** The consumer mode. */
  public readonly mode: ConsumerMode;
  /** The dead-letter mode. */
  public readonly deadLetterMode: DeadLetterMode;
  /** The record TTL the runtime applies. */
  public readonly recordTtl: Duration;
  /** The redelivery window the default record TTL is derived from. */
  public readonly redeliveryWindow: Duration;
  /** The two-phase lease. */
  public readonly lease: Duration;
  /** The metric namespace. */
  public readonly metricNamespace: string;
  /** The `EO_` environment variables the construct gives the function. */
  public readonly environment: Readonly<Record<string, string>>;
  /** Alarm on messages visible in the dead-letter queue (> 0), when there is a known DLQ. */
  public readonly deadLetterQueueAlarm?: cloudwatch.Alarm;
  /** Alarm on payload mismatches (same dedup key, different payload; > 0). */
  public readonly mismatchAlarm?: cloudwatch.Alarm;
  /** Alarm on the age of the oldest message in the queue. */
  public readonly ageOfOldestMessageAlarm?: cloudwatch.Alarm;
  /** Alarm on a sustained high share of duplicates, unless `duplicateRateAlarm: false`. */
  public readonly duplicateRateAlarm?: cloudwatch.Alarm;
  /** Every alarm the construct created. */
  public readonly alarms: readonly cloudwatch.Alarm[];
  /** The dashboard, unless `dashboard: false`. */
  public readonly dashboard?: cloudwatch.Dashboard;

  /** The principal that holds the function's permissions. */
  public get grantPrincipal(): iam.IPrincipal {
    return this.handler.grantPrincipal;
  }

  constructor(scope: Construct, id: string, props: IdempotentConsumerProps) {
    super(scope, id);
    // Every prop is checked before anything is created, and every failure is reported at once.
    const timing = resolveTiming(props);
    const validation = validateConsumerProps(props, timing);
    assertNoFailures(this.node.path, 'IdempotentConsumer', validation.failures);
    for (const note of validation.notes) {
      if (note.kind === 'warning') Annotations.of(this).addWarningV2(note.id, note.message);
      else Annotations.of(this).addInfo(note.message);
    }

    this.mode = props.mode;
    this.deadLetterMode = props.deadLetterMode ?? 'redrive';
    this.metricNamespace = props.metricNamespace ?? DEFAULT_METRIC_NAMESPACE;
    this.consumerName =
      props.consumerName ??
      Names.uniqueResourceName(this, { maxLength: 100, separator: '-', allowedSpecialCharacters: '-._:' });
    this.redeliveryWindow = timing.redelivery.window;
    this.recordTtl = timing.recordTtl;
    this.lease = timing.lease;

    // Queue and dead-letter queue.
    const { queue, deadLetterQueue } = this.resolveQueues(props, timing.visibilityTimeout);
    this.queue = queue;
    this.deadLetterQueue = deadLetterQueue;

    // Inbox table.
    this.inboxTable = props.table ?? this.createInboxTable(props);

    // Environment of the contract.
    const environment = consumerEnvironment({
      consumerName: this.consumerName,
      recordTtl: this.recordTtl,
      deadLetterMode: this.deadLetterMode,
      // The runtime sends dead letters itself only in `direct` mode.
      deadLetterQueueUrl:
        this.deadLetterMode === 'direct' && deadLetterQueue ? deadLetterQueue.queueUrl : undefined,
      lease: this.lease,
      metricNamespace: this.metricNamespace,
      inboxTable: this.inboxTable,
      logLevel: props.logLevel,
      completedCacheMaxEntries: props.completedCacheMaxEntries,
      outbox: props.outbox,
    });
    this.environment = Object.freeze(environment);

    // Function.
    if (props.handler) {
      this.handler = props.handler;
      this.applyEnvironment(props.handler, environment);
    } else {
      const created = this.createFunction(props, environment);
      this.handler = created.handler;
      this.role = created.role;
      this.logGroup = created.logGroup;
    }

    this.grantAccess(props);

    // Event source with partial batch responses.
    this.eventSource = new SqsEventSource(queue, {
      batchSize: props.batchSize ?? DEFAULT_BATCH_SIZE,
      maxBatchingWindow: props.maxBatchingWindow,
      maxConcurrency: props.maxConcurrency,
      reportBatchItemFailures: true,
    });
    this.handler.addEventSource(this.eventSource);
    this.eventSourceMapping = this.findEventSourceMapping();
    Validations.of(this.eventSourceMapping).acknowledge({
      id: 'Serverless-LambdaEventSourceMappingDestination',
      reason:
        'SQS event source mappings do not support on-failure destinations. Messages that keep failing are moved to the dead-letter queue by the queue redrive policy, or sent there directly by the handler in direct dead-letter mode.',
    });

    // Alarms and dashboard.
    if (props.createAlarms ?? true) {
      const alarms = createQueueConsumerAlarms(this, this, {
        ageOfOldestMessageThreshold: props.ageOfOldestMessageThreshold ?? DEFAULT_AGE_THRESHOLD,
        duplicateRateThreshold:
          (props.duplicateRateAlarm ?? true)
            ? (props.duplicateRateThreshold ?? DEFAULT_DUPLICATE_RATE_THRESHOLD)
            : undefined,
        alarmTopic: props.alarmTopic,
      });
      this.deadLetterQueueAlarm = alarms.deadLetterQueueAlarm;
      this.mismatchAlarm = alarms.mismatchAlarm;
      this.ageOfOldestMessageAlarm = alarms.ageOfOldestMessageAlarm;
      this.duplicateRateAlarm = alarms.duplicateRateAlarm;
      this.alarms = alarms.all;
    } else {
      this.alarms = Object.freeze([]);
    }
    if (props.dashboard ?? true) this.dashboard = createQueueConsumerDashboard(this, this, this.alarms);
  }

  /** A metric of the runtime's Embedded Metric Format output for this consumer (Sum over 5 minutes). */
  public metric(metricName: string, props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return consumerMetric(this, metricName, props);
  }

  /** Messages processed for the first time. */
  public metricProcessed(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.metric(METRICS.processed, props);
  }

  /** Messages acknowledged as duplicates of a completed record. */
  public metricDuplicate(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.metric(METRICS.duplicate, props);
  }

  /** Messages whose dedup key another delivery held in progress (retried later). */
  public metricInFlight(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.metric(METRICS.inFlight, props);
  }

  /** Messages whose dedup key was recorded with a different payload (dead-lettered). */
  public metricMismatch(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.metric(METRICS.mismatch, props);
  }

  /** Messages rejected as older than the state they would change. */
  public metricStale(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.metric(METRICS.stale, props);
  }

  /** Messages reported as batch item failures to be retried. */
  public metricRetry(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.metric(METRICS.retry, props);
  }

  /** Messages that failed permanently (dead-lettered with a reason). */
  public metricPermanent(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.metric(METRICS.permanent, props);
  }

  /** Two-phase claims taken over after their lease expired. */
  public metricTakeover(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.metric(METRICS.takeover, props);
  }

  /** Duplicates acknowledged from the completed-record cache, with no request (`completedCacheMaxEntries`). */
  public metricCacheHit(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.metric(METRICS.cacheHit, props);
  }

  /** Share of duplicates among processed and duplicate messages, 0 when there were none. */
  /** Share of duplicates among processed and duplicate messages, 0 when there were none. */
  public metricDuplicateRate(props?: cloudwatch.MathExpressionOptions): cloudwatch.MathExpression {
    return duplicateRate(this, props);
  }

  /**
   * The given queue with the dead-letter queue known for it, or a created queue redriving to
   * the given or a created dead-letter queue. The props were validated: a given dead-letter
   * queue matches the queue, and `direct` has one.
   */
  private resolveQueues(
    props: IdempotentConsumerProps,
    visibilityTimeout: Duration | undefined,
  ): { queue: sqs.IQueue; deadLetterQueue?: sqs.IQueue } {
    if (props.queue) return { queue: props.queue, deadLetterQueue: knownDeadLetterQueue(props) };

    const fifo = props.fifo ?? false;
    const encryption = props.queueEncryptionKey ? sqs.QueueEncryption.KMS : sqs.QueueEncryption.SQS_MANAGED;
    let deadLetterQueue = props.deadLetterQueue;
    if (!deadLetterQueue) {
      deadLetterQueue = new sqs.Queue(this, 'DeadLetterQueue', {
        queueName: props.deadLetterQueueName,
        fifo: fifo || undefined,
        retentionPeriod: props.deadLetterRetentionPeriod ?? DEFAULT_DEAD_LETTER_RETENTION,
        encryption,
        encryptionMasterKey: props.queueEncryptionKey,
        enforceSSL: true,
      });
      Validations.of(deadLetterQueue).acknowledge({
        id: 'Serverless-SQSRedrivePolicy',
        reason:
          'This queue is the dead-letter queue of the consumer queue: messages wait here, with their failure reason, until an operator redrives them. A redrive policy on it would move dead letters out of sight.',
      });
    }
    const queue = new sqs.Queue(this, 'Queue', {
      queueName: props.queueName,
      fifo: fifo || undefined,
      contentBasedDeduplication: props.contentBasedDeduplication,
      visibilityTimeout,
      retentionPeriod: props.retentionPeriod ?? SQS_DEFAULT_RETENTION,
      encryption,
      encryptionMasterKey: props.queueEncryptionKey,
      enforceSSL: true,
      deadLetterQueue: {
        queue: deadLetterQueue,
        maxReceiveCount: props.maxReceiveCount ?? DEFAULT_MAX_RECEIVE_COUNT,
      },
    });
    return { queue, deadLetterQueue };
  }

  /** The inbox table the construct creates when none is given: none in `entity` mode. */
  private createInboxTable(props: IdempotentConsumerProps): dynamodb.ITable | undefined {
    if (this.mode === 'entity') return undefined;
    return new InboxTable(this, 'Inbox', {
      encryptionKey: props.tableEncryptionKey,
      removalPolicy: props.removalPolicy,
    }).table;
  }

  private createFunction(
    props: IdempotentConsumerProps,
    environment: Record<string, string>,
  ): { handler: lambda.IFunction; role: iam.IRole; logGroup: logs.ILogGroup } {
    return createConsumerFunction(this, {
      entry: props.entry as string,
      mode: this.mode,
      runtime: props.runtime,
      architecture: props.architecture,
      memorySize: props.memorySize ?? DEFAULT_MEMORY_SIZE,
      timeout: props.timeout ?? DEFAULT_TIMEOUT,
      environment: props.environment,
      contractEnvironment: environment,
      logRetention: props.logRetention,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
      tracing: props.tracing,
      lambdaDeadLetterReason:
        'The function is invoked synchronously by the SQS event source mapping, never asynchronously, so a Lambda dead-letter target would never receive anything. Failed messages go to the queue dead-letter queue.',
    });
  }

  private applyEnvironment(handler: lambda.IFunction, environment: Record<string, string>): void {
    if (handler instanceof lambda.Function) {
      for (const [name, value] of Object.entries(environment)) handler.addEnvironment(name, value);
      return;
    }
    Annotations.of(this).addWarningV2(
      `${WARNING_PREFIX}:environmentNotApplied`,
      `The \`handler\` you passed is not a lambda.Function of this app, so its environment cannot be set. Give it these variables: ${Object.keys(environment).join(', ')} (values in \`consumer.environment\`).`,
    );
  }

  private grantAccess(props: IdempotentConsumerProps): void {
    grantConsumerTables(this.handler, {
      mode: this.mode,
      consumerName: this.consumerName,
      inboxTable: this.inboxTable,
      businessTables: props.businessTables,
      outbox: props.outbox,
    });
    if (this.deadLetterMode === 'direct' && this.deadLetterQueue) {
      this.deadLetterQueue.grant(this.handler, 'sqs:SendMessage');
      this.deadLetterQueue.encryptionMasterKey?.grant(this.handler, ...QUEUE_KEY_SEND_ACTIONS);
    }
  }

  private findEventSourceMapping(): lambda.EventSourceMapping {
    const id = this.eventSource.eventSourceMappingId;
    const mapping = this.handler.node.children.find(
      (child): child is lambda.EventSourceMapping =>
        child instanceof lambda.EventSourceMapping && child.eventSourceMappingId === id,
    );
    if (!mapping) throw new Error(`[${this.node.path}] The SQS event source created no event source mapping`);
    return mapping;
  }
}
