import { Annotations, type Duration, Names, RemovalPolicy, Validations } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kinesis from 'aws-cdk-lib/aws-kinesis';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { type ConsumerMode, DEFAULT_METRIC_NAMESPACE, METRICS } from '../../lambda/core/contract';
import { DEFAULT_MEMORY_SIZE, DEFAULT_TIMEOUT } from '../consumer-defaults';
import { createConsumerFunction } from '../consumer-function';
import { consumerMetric, duplicateRate } from '../consumer-monitoring';
import {
  DYNAMODB_STREAM_READ_ACTIONS,
  KINESIS_STREAM_READ_ACTIONS,
  QUEUE_KEY_SEND_ACTIONS,
  STREAM_KEY_READ_ACTIONS,
  TOPIC_KEY_PUBLISH_ACTIONS,
} from '../consumer-permissions';
import { assertNoFailures } from '../consumer-validation';
import { consumerEnvironment, grantConsumerTables } from '../consumer-wiring';
import { InboxTable } from '../inbox-table';
import {
  DEFAULT_ITERATOR_AGE_THRESHOLD,
  DEFAULT_PARALLELIZATION_FACTOR,
  DEFAULT_RETRY_ATTEMPTS,
  DEFAULT_STREAM_BATCH_SIZE,
  STREAM_QUEUE_RETENTION,
} from './defaults';
import { createStreamConsumerAlarms, createStreamConsumerDashboard, iteratorAgeMetric } from './monitoring';
import type { IdempotentStreamConsumerProps } from './props';
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
export class IdempotentStreamConsumer extends Construct implements iam.IGrantable {
  /** The Kinesis stream consumed, when the source is one. */
  public readonly stream?: kinesis.IStream;
  /** The DynamoDB table whose stream is consumed, when the source is one. */
  public readonly sourceTable?: dynamodb.ITable;
  /** The ARN the event source mapping reads: the Kinesis stream's, or the table's stream's. */
  public readonly eventSourceArn: string;
  /** The queue receiving the batches the event source gives up on, unless `onFailureTopic` is set. */
  public readonly onFailureQueue?: sqs.IQueue;
  /** The topic receiving the batches the event source gives up on, when given. */
  public readonly onFailureTopic?: sns.ITopic;
  /** The queue the runtime sends permanent failures to, with their reason. */
  public readonly deadLetterQueue: sqs.IQueue;
  /** The inbox table (in `entity` mode only a given one, with no permissions on it). */
  public readonly inboxTable?: dynamodb.ITable;
  /** The function created from `entry`. */
  public readonly handler: lambda.Function;
  /** The function's role. */
  public readonly role: iam.IRole;
  /** The function's log group. */
  public readonly logGroup: logs.ILogGroup;
  /** The event source mapping from the stream to the function. */
  public readonly eventSourceMapping: lambda.EventSourceMapping;
  /** The consumer name that scopes every dedup key. */
  public readonly consumerName: string;
  /** The consumer mode. */
  public readonly mode: ConsumerMode;
  /** The record TTL the runtime applies. */
  public readonly recordTtl: Duration;
  /** The replay window the default record TTL is derived from. */
  public readonly replayWindow: Duration;
  /** The oldest record the event source delivers. */
  public readonly maxRecordAge: Duration;
  /** The two-phase lease. */
  public readonly lease: Duration;
  /** The metric namespace. */
  public readonly metricNamespace: string;
  /** The `EO_` environment variables the construct gives the function. */
  public readonly environment: Readonly<Record<string, string>>;
  /** Alarm on Lambda's `IteratorAge` reaching `iteratorAgeThreshold`. */
  public readonly iteratorAgeAlarm?: cloudwatch.Alarm;
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

  /** The principal that holds the function's permissions. */
  public get grantPrincipal(): iam.IPrincipal {
    return this.handler.grantPrincipal;
  }

  constructor(scope: Construct, id: string, props: IdempotentStreamConsumerProps) {
    super(scope, id);
    // Every prop is checked before anything is created, and every failure is reported at once.
    const timing = resolveStreamTiming(props);
    const validation = validateStreamConsumerProps(props, timing);
    assertNoFailures(this.node.path, 'IdempotentStreamConsumer', validation.failures);
    for (const note of validation.notes) {
      if (note.kind === 'warning') Annotations.of(this).addWarningV2(note.id, note.message);
      else Annotations.of(this).addInfo(note.message);
    }

    this.mode = props.mode;
    this.metricNamespace = props.metricNamespace ?? DEFAULT_METRIC_NAMESPACE;
    this.consumerName =
      props.consumerName ??
      Names.uniqueResourceName(this, { maxLength: 100, separator: '-', allowedSpecialCharacters: '-._:' });
    this.stream = props.stream;
    this.sourceTable = props.sourceTable;
    // Validated: exactly one source, and a table with a stream.
    this.eventSourceArn = props.stream
      ? props.stream.streamArn
      : (props.sourceTable?.tableStreamArn as string);
    this.maxRecordAge = timing.maxRecordAge;
    this.replayWindow = timing.replay.window;
    this.recordTtl = timing.recordTtl;
    this.lease = timing.lease;

    // Where failures go: the event source's on-failure destination and the runtime's DLQ.
    this.onFailureTopic = props.onFailureTopic;
    this.onFailureQueue = props.onFailureTopic
      ? undefined
      : (props.onFailureQueue ?? this.createTerminalQueue('OnFailureQueue', props));
    this.deadLetterQueue = props.deadLetterQueue ?? this.createTerminalQueue('DeadLetterQueue', props);

    // Inbox table.
    this.inboxTable = props.table ?? this.createInboxTable(props);

    // Environment of the contract. A stream has no redrive: the runtime sends permanent
    // failures to the dead-letter queue itself (`direct`), with their reason.
    const environment = consumerEnvironment({
      consumerName: this.consumerName,
      recordTtl: this.recordTtl,
      deadLetterMode: 'direct',
      deadLetterQueueUrl: this.deadLetterQueue.queueUrl,
      lease: this.lease,
      metricNamespace: this.metricNamespace,
      inboxTable: this.inboxTable,
      logLevel: props.logLevel,
      completedCacheMaxEntries: props.completedCacheMaxEntries,
      outbox: props.outbox,
    });
    this.environment = Object.freeze(environment);

    // Function.
    const created = createConsumerFunction(this, {
      entry: props.entry,
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
        'The function is invoked synchronously by the stream event source mapping, never asynchronously, so a Lambda dead-letter target would never receive anything. Batches the event source gives up on go to its on-failure destination, permanent failures to the dead-letter queue.',
    });
    this.handler = created.handler;
    this.role = created.role;
    this.logGroup = created.logGroup;

    this.grantAccess(props);

    // Event source with partial batch responses: a reported sequence number is the checkpoint.
    const onFailureArn = this.onFailureTopic ? this.onFailureTopic.topicArn : this.onFailureQueue?.queueArn;
    this.eventSourceMapping = new lambda.EventSourceMapping(this, 'EventSourceMapping', {
      target: this.handler,
      eventSourceArn: this.eventSourceArn,
      startingPosition: props.startingPosition ?? lambda.StartingPosition.TRIM_HORIZON,
      startingPositionTimestamp: props.startingPositionTimestamp,
      batchSize: props.batchSize ?? DEFAULT_STREAM_BATCH_SIZE,
      maxBatchingWindow: props.maxBatchingWindow,
      parallelizationFactor: props.parallelizationFactor ?? DEFAULT_PARALLELIZATION_FACTOR,
      bisectBatchOnError: props.bisectBatchOnError ?? true,
      retryAttempts: props.retryAttempts ?? DEFAULT_RETRY_ATTEMPTS,
      maxRecordAge: this.maxRecordAge,
      reportBatchItemFailures: true,
      // The grant is made above, with exact actions: the destination only names its ARN.
      onFailure: { bind: () => ({ destination: onFailureArn as string }) },
    });

    // Alarms and dashboard.
    if (props.createAlarms ?? true) {
      const alarms = createStreamConsumerAlarms(this, this.monitored(), {
        iteratorAgeThreshold: props.iteratorAgeThreshold ?? DEFAULT_ITERATOR_AGE_THRESHOLD,
        alarmTopic: props.alarmTopic,
      });
      this.iteratorAgeAlarm = alarms.iteratorAgeAlarm;
      this.errorsAlarm = alarms.errorsAlarm;
      this.onFailureAlarm = alarms.onFailureAlarm;
      this.deadLetterQueueAlarm = alarms.deadLetterQueueAlarm;
      this.mismatchAlarm = alarms.mismatchAlarm;
      this.alarms = alarms.all;
    } else {
      this.alarms = Object.freeze([]);
    }
    if (props.dashboard ?? true) {
      this.dashboard = createStreamConsumerDashboard(this, this.monitored(), this.alarms);
    }
  }

  /** A metric of the runtime's Embedded Metric Format output for this consumer (Sum over 5 minutes). */
  public metric(metricName: string, props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return consumerMetric(this, metricName, props);
  }

  /** Records processed for the first time. */
  public metricProcessed(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.metric(METRICS.processed, props);
  }

  /** Records acknowledged as duplicates of a completed record (replays from a checkpoint, producer retries). */
  public metricDuplicate(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.metric(METRICS.duplicate, props);
  }

  /** Records whose dedup key was recorded with a different payload (dead-lettered). */
  public metricMismatch(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.metric(METRICS.mismatch, props);
  }

  /** Records reported as batch item failures, so the event source retries from their checkpoint. */
  public metricRetry(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.metric(METRICS.retry, props);
  }

  /** Records that failed permanently (dead-lettered with a reason). */
  public metricPermanent(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.metric(METRICS.permanent, props);
  }

  /** Duplicates acknowledged from the completed-record cache, with no request (`completedCacheMaxEntries`). */
  public metricCacheHit(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.metric(METRICS.cacheHit, props);
  }

  /** Share of duplicates among processed and duplicate records, 0 when there were none. */
  public metricDuplicateRate(props?: cloudwatch.MathExpressionOptions): cloudwatch.MathExpression {
    return duplicateRate(this, props);
  }

  /** Lambda's `IteratorAge` of the function (Maximum over 1 minute): how far behind its stream it is. */
  public metricIteratorAge(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return iteratorAgeMetric(this, props);
  }

  private monitored() {
    return {
      consumerName: this.consumerName,
      metricNamespace: this.metricNamespace,
      mode: this.mode,
      recordTtl: this.recordTtl,
      maxRecordAge: this.maxRecordAge,
      handler: this.handler,
      onFailureQueue: this.onFailureQueue,
      onFailureTopic: this.onFailureTopic,
      deadLetterQueue: this.deadLetterQueue,
    };
  }

  /**
   * A queue where failures end: encrypted (the given key, else SSE-SQS), SSL-only, keeping
   * messages 14 days, with no redrive policy of its own.
   */
  private createTerminalQueue(id: string, props: IdempotentStreamConsumerProps): sqs.IQueue {
    const queue = new sqs.Queue(this, id, {
      retentionPeriod: STREAM_QUEUE_RETENTION,
      encryption: props.queueEncryptionKey ? sqs.QueueEncryption.KMS : sqs.QueueEncryption.SQS_MANAGED,
      encryptionMasterKey: props.queueEncryptionKey,
      enforceSSL: true,
    });
    Validations.of(queue).acknowledge({
      id: 'Serverless-SQSRedrivePolicy',
      reason:
        'This queue is where failures of the stream consumer end (on-failure records of the event source, or permanent failures with their reason): messages wait here until an operator acts on them. A redrive policy on it would move them out of sight.',
    });
    Validations.of(queue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        'This queue is itself the dead-letter destination of the stream consumer (the event source mapping or the handler sends to it, not a queue redrive policy, so cdk-nag cannot see it is one). A dead-letter queue of it would move failures out of sight.',
    });
    return queue;
  }

  /** The inbox table the construct creates when none is given: none in `entity` mode. */
  private createInboxTable(props: IdempotentStreamConsumerProps): dynamodb.ITable | undefined {
    if (this.mode === 'entity') return undefined;
    return new InboxTable(this, 'Inbox', {
      encryptionKey: props.tableEncryptionKey,
      removalPolicy: props.removalPolicy,
    }).table;
  }

  private grantAccess(props: IdempotentStreamConsumerProps): void {
    // Reading the source, with the actions the event source mapping calls, on its ARN only.
    if (props.stream) {
      iam.Grant.addToPrincipal({
        grantee: this.handler,
        actions: [...KINESIS_STREAM_READ_ACTIONS],
        resourceArns: [props.stream.streamArn],
      });
      props.stream.encryptionKey?.grant(this.handler, ...STREAM_KEY_READ_ACTIONS);
    } else if (props.sourceTable) {
      iam.Grant.addToPrincipal({
        grantee: this.handler,
        actions: [...DYNAMODB_STREAM_READ_ACTIONS],
        resourceArns: [this.eventSourceArn],
      });
      props.sourceTable.encryptionKey?.grant(this.handler, ...STREAM_KEY_READ_ACTIONS);
    }
    grantConsumerTables(this.handler, {
      mode: this.mode,
      consumerName: this.consumerName,
      inboxTable: this.inboxTable,
      businessTables: props.businessTables,
      outbox: props.outbox,
    });
    // The runtime sends permanent failures; the event source sends on-failure records with
    // the function's role.
    for (const queue of [this.deadLetterQueue, this.onFailureQueue]) {
      if (!queue) continue;
      queue.grant(this.handler, 'sqs:SendMessage');
      queue.encryptionMasterKey?.grant(this.handler, ...QUEUE_KEY_SEND_ACTIONS);
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
