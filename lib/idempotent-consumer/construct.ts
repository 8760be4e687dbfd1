import { type Duration, Validations } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { METRIC_DIMENSION_CONSUMER, METRIC_DIMENSION_MESSAGE_GROUP } from '../../lambda/core/contract';
import { type CapacityPlan, planning } from '../capacity-planner';
import { ConsumerBase } from '../consumer-base';
import { SQS_DEFAULT_RETENTION } from '../record-ttl';
import { queueCapacityInput } from './capacity';
import {
  DEFAULT_AGE_THRESHOLD,
  DEFAULT_BATCH_SIZE,
  DEFAULT_DEAD_LETTER_RETENTION,
  DEFAULT_DUPLICATE_RATE_THRESHOLD,
  DEFAULT_MAX_RECEIVE_COUNT,
  SQS_POLLERS,
} from './defaults';
import { groupMetricsMaxGroups } from './fair-queue';
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
export class IdempotentConsumer extends ConsumerBase {
  /** The queue the function consumes. */
  public readonly queue: sqs.IQueue;
  /** The SQS event source bound to the function. */
  public readonly eventSource: SqsEventSource;
  /** The event source mapping the event source created. */
  public readonly eventSourceMapping: lambda.EventSourceMapping;
  /** The redelivery window the default record TTL is derived from. */
  public readonly redeliveryWindow: Duration;
  /**
   * The capacity planner's figures for `expectedPeakMessagesPerSecond` (tables' write rates,
   * warm throughput, invocations and message groups needed); undefined without it.
   */
  public readonly capacityPlan?: CapacityPlan;
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

  constructor(scope: Construct, id: string, props: IdempotentConsumerProps) {
    // Every prop is checked before anything is created, and every failure is reported at once.
    const timing = resolveTiming(props);
    const capacity = planning(queueCapacityInput(props));
    super(scope, id, props, {
      constructName: 'IdempotentConsumer',
      validation: validateConsumerProps(props, timing, capacity),
      inboxWarmThroughput: capacity?.plan.tables.find((table) => table.created)?.warmThroughput,
      recordTtl: timing.recordTtl,
      lease: timing.lease,
      deadLetterMode: props.deadLetterMode ?? 'redrive',
      // A given queue keeps its own redrive policy: its DLQ is known, never created. The props
      // were validated: a given dead-letter queue matches the queue, and `direct` has one.
      deadLetterQueue: props.queue ? knownDeadLetterQueue(props) : props.deadLetterQueue,
      newDeadLetterQueue: props.queue
        ? undefined
        : {
            queueName: props.deadLetterQueueName,
            fifo: props.fifo,
            retentionPeriod: props.deadLetterRetentionPeriod ?? DEFAULT_DEAD_LETTER_RETENTION,
            encryptionKey: props.queueEncryptionKey,
            acknowledgments: [
              {
                id: 'Serverless-SQSRedrivePolicy',
                reason:
                  'This queue is the dead-letter queue of the consumer queue: messages wait here, with their failure reason, until an operator redrives them. A redrive policy on it would move dead letters out of sight.',
              },
            ],
          },
      handler: props.handler,
      groupMetricsMaxGroups: groupMetricsMaxGroups(props),
      lambdaDeadLetterReason:
        'The function is invoked synchronously by the SQS event source mapping, never asynchronously, so a Lambda dead-letter target would never receive anything. Failed messages go to the queue dead-letter queue.',
    });
    this.redeliveryWindow = timing.redelivery.window;
    this.capacityPlan = capacity?.plan;
    this.queue = props.queue ?? this.createQueue(props, timing.visibilityTimeout);

    // Event source with partial batch responses.
    this.eventSource = new SqsEventSource(this.queue, {
      batchSize: props.batchSize ?? DEFAULT_BATCH_SIZE,
      maxBatchingWindow: props.maxBatchingWindow,
      maxConcurrency: props.maxConcurrency,
      provisionedPollerConfig: props.provisionedPollers && {
        minimumPollers: props.provisionedPollers.minimum ?? SQS_POLLERS.minimum.default,
        maximumPollers: props.provisionedPollers.maximum ?? SQS_POLLERS.maximum.default,
      },
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

  /**
   * A fair queue's per-group metric (`Duplicate` or `InFlight`, see `fairQueue`) of one message
   * group, or of `(other)` for the groups beyond `maxMetricGroups` (Sum over 5 minutes).
   */
  public metricOfMessageGroup(
    metricName: string,
    messageGroup: string,
    props?: cloudwatch.MetricOptions,
  ): cloudwatch.Metric {
    return this.metric(metricName, props).with({
      dimensionsMap: {
        [METRIC_DIMENSION_CONSUMER]: this.consumerName,
        [METRIC_DIMENSION_MESSAGE_GROUP]: messageGroup,
      },
    });
  }

  /** The queue the construct creates when none is given, redriving to the dead-letter queue. */
  private createQueue(props: IdempotentConsumerProps, visibilityTimeout: Duration | undefined): sqs.IQueue {
    return new sqs.Queue(this, 'Queue', {
      queueName: props.queueName,
      fifo: props.fifo || undefined,
      contentBasedDeduplication: props.contentBasedDeduplication,
      visibilityTimeout,
      retentionPeriod: props.retentionPeriod ?? SQS_DEFAULT_RETENTION,
      encryption: props.queueEncryptionKey ? sqs.QueueEncryption.KMS : sqs.QueueEncryption.SQS_MANAGED,
      encryptionMasterKey: props.queueEncryptionKey,
      enforceSSL: true,
      deadLetterQueue: {
        // Without a given queue the base has the given or the created dead-letter queue.
        queue: this.deadLetterQueue as sqs.IQueue,
        maxReceiveCount: props.maxReceiveCount ?? DEFAULT_MAX_RECEIVE_COUNT,
      },
    });
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
