import { type Duration, Validations } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kinesis from 'aws-cdk-lib/aws-kinesis';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { type CapacityPlan, planning } from '../capacity-planner';
import { ConsumerBase, createTerminalQueue } from '../consumer-base';
import {
  DYNAMODB_STREAM_READ_ACTIONS,
  KINESIS_STREAM_READ_ACTIONS,
  QUEUE_KEY_SEND_ACTIONS,
  STREAM_KEY_READ_ACTIONS,
  TOPIC_KEY_PUBLISH_ACTIONS,
} from '../consumer-permissions';
import type { SourceReadAccess, TerminalQueueOptions } from '../consumer-wiring';
import { streamCapacityInput } from './capacity';
import {
  DEFAULT_ITERATOR_AGE_THRESHOLD,
  DEFAULT_OFFSET_LAG_THRESHOLD,
  DEFAULT_PARALLELIZATION_FACTOR,
  DEFAULT_RETRY_ATTEMPTS,
  DEFAULT_STREAM_BATCH_SIZE,
  STREAM_QUEUE_RETENTION,
} from './defaults';
import { grantKafkaSource, kafkaMappingOptions, usesVpc } from './kafka';
import {
  createStreamConsumerAlarms,
  createStreamConsumerDashboard,
  iteratorAgeMetric,
  offsetLagMetric,
} from './monitoring';
import type { IdempotentStreamConsumerProps, KafkaTopicSource } from './props';
import { resolveStreamTiming } from './timing';
import { validateStreamConsumerProps } from './validation';

/**
 * An idempotent Kinesis or DynamoDB Streams → Lambda → DynamoDB consumer: the function with
 * exactly the permissions its mode needs, the event source mapping with partial batch
 * responses (the runtime reports the sequence number of the first record to retry, and the
 * event source resumes from that checkpoint), bisection on function errors, bounded retries and
 * record age, an on-failure destination for the batches the event source gives up on, a
 * dead-letter queue for the runtime's permanent failures, the inbox table, the record TTL
 * derived from the stream's retention, the alarms and a dashboard.
 *
 * A poison record never blocks its shard forever: a permanent failure is dead-lettered at once
 * with its reason; a record that keeps failing transiently is retried until `retryAttempts` or
 * `maxRecordAge` runs out, then its batch's shard and sequence number range goes to the
 * on-failure destination (alarmed) and the shard moves on.
 *
 * Every prop is checked before anything is created, unresolved tokens skipped: invalid props
 * throw one error (code `INVALID_OPTIONS`) listing every failure. Risky but allowed choices
 * draw synth-time warnings with ids `effectively-once:<rule>`.
 *
 * cdk-nag (AwsSolutions and Serverless packs) reports nothing on the construct. It
 * acknowledges, each with its reason and on its own resources only: `Serverless-LambdaDLQ` on
 * the function (invoked synchronously by the event source), `Serverless-SQSRedrivePolicy` and
 * `AwsSolutions-SQS3` on the on-failure and dead-letter queues it creates (terminal queues: a
 * DLQ of them would move failures out of sight), `Serverless-LambdaTracing` while tracing is
 * off, and with active tracing `AwsSolutions-IAM5[Resource::*]` on the role.
 *
 * @example
 * const orders = new dynamodb.Table(this, 'Orders', {
 *   partitionKey: { name: 'orderId', type: dynamodb.AttributeType.STRING },
 *   stream: dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
 * });
 * const readModel = new dynamodb.Table(this, 'OrderSummaries', {
 *   partitionKey: { name: 'customerId', type: dynamodb.AttributeType.STRING },
 * });
 * new IdempotentStreamConsumer(this, 'OrderProjection', {
 *   mode: 'atomic',
 *   entry: 'src/handlers/order-projection.ts',
 *   consumerName: 'order-projection',
 *   sourceTable: orders,
 *   businessTables: [{ table: readModel }],
 *   environment: { READ_MODEL_TABLE: readModel.tableName },
 *   alarmTopic: topic,
 * });
 */
export class IdempotentStreamConsumer extends ConsumerBase {
  /** The Kinesis stream consumed, when the source is one. */
  public readonly stream?: kinesis.IStream;
  /** The DynamoDB table whose stream is consumed, when the source is one. */
  public readonly sourceTable?: dynamodb.ITable;
  /** The Kafka topic consumed, when the source is one. */
  public readonly kafka?: KafkaTopicSource;
  /**
   * The ARN the event source mapping reads: the Kinesis stream's, the table's stream's, or the
   * MSK cluster's; `undefined` for a self-managed Kafka cluster.
   */
  public readonly eventSourceArn?: string;
  /** The queue receiving the batches the event source gives up on, unless `onFailureTopic` is set. */
  public readonly onFailureQueue?: sqs.IQueue;
  /** The topic receiving the batches the event source gives up on, when given. */
  public readonly onFailureTopic?: sns.ITopic;
  // The base's fields, narrowed: a stream consumer always creates its function from `entry`
  // and always has a dead-letter queue (given or created).
  /** The queue the runtime sends permanent failures to, with their reason. */
  declare public readonly deadLetterQueue: sqs.IQueue;
  /** The function created from `entry`. */
  declare public readonly handler: lambda.Function;
  /** The function's role. */
  declare public readonly role: iam.IRole;
  /** The function's log group. */
  declare public readonly logGroup: logs.ILogGroup;
  /** The event source mapping from the stream to the function. */
  public readonly eventSourceMapping: lambda.EventSourceMapping;
  /** The replay window the default record TTL is derived from. */
  public readonly replayWindow: Duration;
  /**
   * The capacity planner's figures for `expectedPeakMessagesPerSecond` (tables' write rates,
   * warm throughput, invocations needed); undefined without it.
   */
  public readonly capacityPlan?: CapacityPlan;
  /** The oldest record the event source delivers. */
  public readonly maxRecordAge: Duration;
  /** Alarm on Lambda's `IteratorAge` reaching `iteratorAgeThreshold` (a Kinesis or DynamoDB stream). */
  public readonly iteratorAgeAlarm?: cloudwatch.Alarm;
  /** Alarm on Lambda's `OffsetLag` reaching `offsetLagThreshold` (a Kafka topic). */
  public readonly offsetLagAlarm?: cloudwatch.Alarm;
  /** Alarm on function errors (> 0 in a minute). */
  public readonly errorsAlarm?: cloudwatch.Alarm;
  /** Alarm on messages in the on-failure queue, or published to the on-failure topic (> 0). */
  public readonly onFailureAlarm?: cloudwatch.Alarm;
  /** Alarm on messages visible in the dead-letter queue (> 0). */
  public readonly deadLetterQueueAlarm?: cloudwatch.Alarm;
  /** Alarm on payload mismatches (same dedup key, different payload; > 0). */
  public readonly mismatchAlarm?: cloudwatch.Alarm;
  /** Every alarm the construct created. */
  public readonly alarms: readonly cloudwatch.Alarm[];
  /** The dashboard, unless `dashboard: false`. */
  public readonly dashboard?: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: IdempotentStreamConsumerProps) {
    // Every prop is checked before anything is created, and every failure is reported at once.
    const timing = resolveStreamTiming(props);
    const capacity = planning(streamCapacityInput(props));
    // Validated: exactly one source, and a table with a stream.
    const eventSourceArn = props.stream
      ? props.stream.streamArn
      : props.sourceTable
        ? (props.sourceTable.tableStreamArn as string)
        : props.kafka?.clusterArn;
    super(scope, id, props, {
      constructName: 'IdempotentStreamConsumer',
      validation: validateStreamConsumerProps(props, timing, capacity),
      inboxWarmThroughput: capacity?.plan.tables.find((table) => table.created)?.warmThroughput,
      recordTtl: timing.recordTtl,
      lease: timing.lease,
      // A stream has no redrive: the runtime sends permanent failures to the dead-letter queue
      // itself, with their reason.
      deadLetterMode: 'direct',
      deadLetterQueue: props.deadLetterQueue,
      newDeadLetterQueue: terminalQueueOptions(props),
      lambdaDeadLetterReason:
        'The function is invoked synchronously by the stream event source mapping, never asynchronously, so a Lambda dead-letter target would never receive anything. Batches the event source gives up on go to its on-failure destination, permanent failures to the dead-letter queue.',
      // A Kafka source's grants depend on its cluster and authentication: made below.
      sourceReadAccess: props.kafka ? undefined : sourceReadAccess(props, eventSourceArn as string),
    });
    this.stream = props.stream;
    this.sourceTable = props.sourceTable;
    this.kafka = props.kafka;
    this.eventSourceArn = eventSourceArn;
    this.maxRecordAge = timing.maxRecordAge;
    this.replayWindow = timing.replay.window;
    this.capacityPlan = capacity?.plan;

    // Where the event source sends the batches it gives up on.
    this.onFailureTopic = props.onFailureTopic;
    this.onFailureQueue = props.onFailureTopic
      ? undefined
      : (props.onFailureQueue ?? createTerminalQueue(this, 'OnFailureQueue', terminalQueueOptions(props)));
    this.grantOnFailureDestination();

    // A Kafka source: the topic's settings and the role's grants for its cluster.
    const consumerGroupId = props.kafka?.consumerGroupId ?? this.consumerName;
    if (props.kafka) {
      grantKafkaSource(this.handler, props.kafka, consumerGroupId);
      if (usesVpc(props.kafka)) {
        Validations.of(this.role).acknowledge({
          id: 'AwsSolutions-IAM5[Resource::*]',
          reason:
            'The event source mapping reaches the Kafka cluster in its VPC through network interfaces it manages with the function role: ec2:CreateNetworkInterface, ec2:DeleteNetworkInterface and the ec2:Describe* calls it makes (network interfaces, VPCs, subnets, security groups) have no resource-level permissions. Every other statement of this role names its resources.',
        });
      }
    }

    // Event source with partial batch responses: a reported sequence number (a Kafka partition
    // and offset) is the checkpoint.
    const onFailureArn = this.onFailureTopic ? this.onFailureTopic.topicArn : this.onFailureQueue?.queueArn;
    this.eventSourceMapping = new lambda.EventSourceMapping(this, 'EventSourceMapping', {
      target: this.handler,
      ...(props.kafka
        ? kafkaMappingOptions(props.kafka, consumerGroupId)
        : { eventSourceArn: this.eventSourceArn }),
      startingPosition: props.startingPosition ?? lambda.StartingPosition.TRIM_HORIZON,
      startingPositionTimestamp: props.startingPositionTimestamp,
      batchSize: props.batchSize ?? DEFAULT_STREAM_BATCH_SIZE,
      maxBatchingWindow: props.maxBatchingWindow,
      ...(props.kafka
        ? {}
        : { parallelizationFactor: props.parallelizationFactor ?? DEFAULT_PARALLELIZATION_FACTOR }),
      bisectBatchOnError: props.bisectBatchOnError ?? true,
      retryAttempts: props.retryAttempts ?? DEFAULT_RETRY_ATTEMPTS,
      maxRecordAge: this.maxRecordAge,
      reportBatchItemFailures: true,
      // The grant is made above, with exact actions: the destination only names its ARN.
      onFailure: { bind: () => ({ destination: onFailureArn as string }) },
    });

    // Alarms and dashboard.
    if (props.createAlarms ?? true) {
      const alarms = createStreamConsumerAlarms(this, this, {
        lag: props.kafka
          ? { metric: 'OffsetLag', threshold: props.offsetLagThreshold ?? DEFAULT_OFFSET_LAG_THRESHOLD }
          : {
              metric: 'IteratorAge',
              threshold: props.iteratorAgeThreshold ?? DEFAULT_ITERATOR_AGE_THRESHOLD,
            },
        alarmTopic: props.alarmTopic,
      });
      if (props.kafka) this.offsetLagAlarm = alarms.lagAlarm;
      else this.iteratorAgeAlarm = alarms.lagAlarm;
      this.errorsAlarm = alarms.errorsAlarm;
      this.onFailureAlarm = alarms.onFailureAlarm;
      this.deadLetterQueueAlarm = alarms.deadLetterQueueAlarm;
      this.mismatchAlarm = alarms.mismatchAlarm;
      this.alarms = alarms.all;
    } else {
      this.alarms = Object.freeze([]);
    }
    if (props.dashboard ?? true) this.dashboard = createStreamConsumerDashboard(this, this, this.alarms);
  }

  /** Lambda's `IteratorAge` of the function (Maximum over 1 minute): how far behind its stream it is. */
  public metricIteratorAge(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return iteratorAgeMetric(this, props);
  }

  /** Lambda's `OffsetLag` of the function (Maximum over 1 minute): how many records of its Kafka topic wait. */
  public metricOffsetLag(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return offsetLagMetric(this, props);
  }

  /** The event source sends on-failure records with the function's role. */
  private grantOnFailureDestination(): void {
    if (this.onFailureQueue) {
      this.onFailureQueue.grant(this.handler, 'sqs:SendMessage');
      this.onFailureQueue.encryptionMasterKey?.grant(this.handler, ...QUEUE_KEY_SEND_ACTIONS);
    }
    if (this.onFailureTopic) {
      iam.Grant.addToPrincipal({
        grantee: this.handler,
        actions: ['sns:Publish'],
        resourceArns: [this.onFailureTopic.topicArn],
      });
      this.onFailureTopic.masterKey?.grant(this.handler, ...TOPIC_KEY_PUBLISH_ACTIONS);
    }
  }
}

/**
 * The queues where failures end (on-failure and dead-letter) when the construct creates them:
 * encrypted (`queueEncryptionKey`, else SSE-SQS), SSL-only, keeping messages 14 days.
 */
function terminalQueueOptions(props: IdempotentStreamConsumerProps): TerminalQueueOptions {
  return {
    retentionPeriod: STREAM_QUEUE_RETENTION,
    encryptionKey: props.queueEncryptionKey,
    acknowledgments: [
      {
        id: 'Serverless-SQSRedrivePolicy',
        reason:
          'This queue is where failures of the stream consumer end (on-failure records of the event source, or permanent failures with their reason): messages wait here until an operator acts on them. A redrive policy on it would move them out of sight.',
      },
      {
        id: 'AwsSolutions-SQS3',
        reason:
          'This queue is itself the dead-letter destination of the stream consumer (the event source mapping or the handler sends to it, not a queue redrive policy, so cdk-nag cannot see it is one). A dead-letter queue of it would move failures out of sight.',
      },
    ],
  };
}

/** Reading the source, with the actions the event source mapping calls, on its ARN only. */
function sourceReadAccess(props: IdempotentStreamConsumerProps, eventSourceArn: string): SourceReadAccess {
  const encryptionKey = props.stream ? props.stream.encryptionKey : props.sourceTable?.encryptionKey;
  return {
    actions: props.stream ? KINESIS_STREAM_READ_ACTIONS : DYNAMODB_STREAM_READ_ACTIONS,
    resourceArn: eventSourceArn,
    encryptionKey,
    encryptionKeyActions: STREAM_KEY_READ_ACTIONS,
  };
}
