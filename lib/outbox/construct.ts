import { Annotations, Duration, Names, RemovalPolicy, Tokenization, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import {
  DEFAULT_METRIC_NAMESPACE,
  ENV,
  OUTBOX_ATTRIBUTES,
  OUTBOX_ENV,
  OUTBOX_RELAY_METRICS,
  type OutboxDestinationKind,
} from '../../lambda/core/contract';
import { createConsumerFunction } from '../consumer-function';
import { consumerMetric, createConsumerDashboard } from '../consumer-monitoring';
import {
  DYNAMODB_STREAM_READ_ACTIONS,
  grantItemActions,
  QUEUE_KEY_SEND_ACTIONS,
  STREAM_KEY_READ_ACTIONS,
  TOPIC_KEY_PUBLISH_ACTIONS,
} from '../consumer-permissions';
import { assertNoFailures } from '../consumer-validation';
import {
  DEFAULT_RELAY_BATCH_SIZE,
  DEFAULT_RELAY_EVENT_AGE_THRESHOLD,
  DEFAULT_RELAY_ITERATOR_AGE_THRESHOLD,
  DEFAULT_RELAY_MEMORY_SIZE,
  DEFAULT_RELAY_RETRY_ATTEMPTS,
  defaultRelayEntry,
  FAILED_PUBLISH_THRESHOLD,
  OUTBOX_DEAD_LETTER_RETENTION,
} from './defaults';
import type { OutboxProps } from './props';
import { resolveOutboxTiming } from './timing';
import { validateOutboxProps } from './validation';

/** The only action a writer is granted on the outbox table: a put of a new item (in a transaction). */
export const OUTBOX_WRITER_ACTIONS: readonly string[] = Object.freeze(['dynamodb:PutItem']);

/** The action the relay is granted on each destination kind, on that destination's ARN only. */
export const OUTBOX_PUBLISH_ACTIONS: Readonly<Record<OutboxDestinationKind, string>> = Object.freeze({
  sqs: 'sqs:SendMessage',
  eventbridge: 'events:PutEvents',
  sns: 'sns:Publish',
});

/**
 * The transactional outbox: a table that writers put events into in the same
 * `TransactWriteItems` as their business writes, and a relay that publishes each new item to
 * one destination (an SQS queue, standard, fair or FIFO; an EventBridge bus; an SNS topic).
 *
 * - The table: partition key `OUTBOX_ATTRIBUTES.pk` (the event id), on-demand, encrypted (an
 *   AWS-managed key unless `tableEncryptionKey`), point-in-time recovery, TTL on
 *   `OUTBOX_ATTRIBUTES.expiresAt`, and a stream with `NEW_IMAGE`.
 * - The relay: a function bundled by the local esbuild (`relayEntry`, by default the package's
 *   relay handler) on a DynamoDB stream event source that delivers inserts only (a filter drops
 *   the removals TTL makes), reports partial batch failures by sequence number, bisects failing
 *   batches, retries up to `retryAttempts` within `maxRecordAge`, and sends the batches it gives
 *   up on to an on-failure queue. Events that can never be published (the runtime decides) go
 *   to the dead-letter queue with their reason.
 * - Grants with exact actions: the relay reads the table's stream and publishes with
 *   `sqs:SendMessage`, `events:PutEvents` or `sns:Publish` on its destination only (with the
 *   KMS actions of a queue's or topic's customer-managed key); a writer gets
 *   `dynamodb:PutItem` on the table only (`grantWrite`): no read, no delete.
 * - Alarms: the relay's iterator age, its event age (commit to publish, p99), failed publishes,
 *   the on-failure queue and the dead-letter queue depth; a dashboard (`dashboard`).
 * - Retention (`retention`): see `deriveOutboxRetention`. The on-failure queue keeps a record
 *   `onFailureRetention` (4 days), the dead-letter queue 14 days.
 *
 * Every prop is checked before anything is created: invalid props throw one error (code
 * `INVALID_OPTIONS`) listing every failure. cdk-nag (AwsSolutions and Serverless packs) reports
 * nothing; the acknowledgments, each with its reason, are those of the relay function (as for
 * `IdempotentStreamConsumer`) and `Serverless-SQSRedrivePolicy` and `AwsSolutions-SQS3` on the
 * two terminal queues it creates.
 *
 * @example
 * const shipping = new IdempotentConsumer(this, 'Shipping', { mode: 'entity', ... });
 * const outbox = new Outbox(this, 'OrderEvents', { queue: shipping.queue });
 * new IdempotentConsumer(this, 'Orders', { mode: 'atomic', entry: 'src/orders.ts', outbox });
 */
export class Outbox extends Construct {
  /** The outbox table, with its stream. */
  public readonly table: dynamodb.Table;
  /** The relay function. */
  public readonly relay: lambda.Function;
  /** The relay's role. */
  public readonly role: iam.IRole;
  /** The relay's log group. */
  public readonly logGroup: logs.ILogGroup;
  /** The event source mapping from the table's stream to the relay. */
  public readonly eventSourceMapping: lambda.EventSourceMapping;
  /** The queue receiving the batches the event source gives up on. */
  public readonly onFailureQueue: sqs.IQueue;
  /** The queue the relay sends unpublishable events to, with their reason. */
  public readonly deadLetterQueue: sqs.IQueue;
  /** Where the relay publishes. */
  public readonly destinationKind: OutboxDestinationKind;
  /** The destination's ARN. */
  public readonly destinationArn: string;
  /** Whether the destination is a FIFO queue or topic. */
  public readonly fifo: boolean;
  /**
   * Whether the destination is a fair queue, or a topic feeding fair queues (`fairQueue`): each
   * event's entity, else its type, is its `MessageGroupId`.
   */
  public readonly fairQueue: boolean;
  /** The relay's name, the `Consumer` dimension of its metrics. */
  public readonly relayName: string;
  /** The `Source` of the events the relay puts on an EventBridge bus; absent for a queue or topic. */
  public readonly eventSource?: string;
  /** How long an outbox item lives. */
  public readonly retention: Duration;
  /** How long the on-failure queue keeps the record of a batch given up on. */
  public readonly onFailureRetention: Duration;
  /** The oldest record the relay's event source delivers. */
  public readonly maxRecordAge: Duration;
  /** The metric namespace of the relay. */
  public readonly metricNamespace: string;
  /** The `EO_` variables a writer needs (`EO_OUTBOX_TABLE_NAME`, retention, destination kind, FIFO, fair, EventBridge source). */
  public readonly writerEnvironment: Readonly<Record<string, string>>;
  /** The `EO_` variables the relay is given. */
  public readonly relayEnvironment: Readonly<Record<string, string>>;
  /** Alarm on the relay's `IteratorAge` reaching `iteratorAgeThreshold`. */
  public readonly iteratorAgeAlarm?: cloudwatch.Alarm;
  /** Alarm on the p99 of the relay's `EventAge` over 5 minutes reaching `eventAgeThreshold`. */
  public readonly eventAgeAlarm?: cloudwatch.Alarm;
  /** Alarm on failed publishes (the relay's `Retry` and `Permanent` outcomes and function errors; > 0), unless `failedPublishAlarm: false`. */
  public readonly failedPublishAlarm?: cloudwatch.Alarm;
  /** Alarm on messages in the on-failure queue (> 0). */
  public readonly onFailureAlarm?: cloudwatch.Alarm;
  /** Alarm on messages in the dead-letter queue (> 0). */
  public readonly deadLetterQueueAlarm?: cloudwatch.Alarm;
  /** Every alarm the construct created. */
  public readonly alarms: readonly cloudwatch.Alarm[];
  /** The dashboard, unless `dashboard: false`. */
  public readonly dashboard?: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: OutboxProps) {
    super(scope, id);
    const relayEntry = props.relayEntry ?? defaultRelayEntry();
    const timing = resolveOutboxTiming(props);
    const validation = validateOutboxProps(props, relayEntry, timing);
    assertNoFailures(this.node.path, 'Outbox', validation.failures);
    for (const note of validation.notes) {
      if (note.kind === 'warning') Annotations.of(this).addWarningV2(note.id, note.message);
      else Annotations.of(this).addInfo(note.message);
    }

    const destination = describeDestination(props);
    this.destinationKind = destination.kind;
    this.destinationArn = destination.arn;
    this.fifo = destination.fifo;
    this.fairQueue = props.fairQueue === true;
    this.retention = timing.retention;
    this.onFailureRetention = timing.onFailureRetention;
    this.maxRecordAge = timing.maxRecordAge;
    this.metricNamespace = props.metricNamespace ?? DEFAULT_METRIC_NAMESPACE;
    this.relayName =
      props.relayName ??
      Names.uniqueResourceName(this, { maxLength: 100, separator: '-', allowedSpecialCharacters: '-._:' });
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;

    this.table = new dynamodb.Table(this, 'Table', {
      partitionKey: { name: OUTBOX_ATTRIBUTES.pk, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: OUTBOX_ATTRIBUTES.expiresAt,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: props.tableEncryptionKey
        ? dynamodb.TableEncryption.CUSTOMER_MANAGED
        : dynamodb.TableEncryption.AWS_MANAGED,
      encryptionKey: props.tableEncryptionKey,
      // The relay publishes the item as written; it never needs the old image.
      stream: dynamodb.StreamViewType.NEW_IMAGE,
      removalPolicy,
    });
    this.onFailureQueue = this.createTerminalQueue('OnFailureQueue', props, this.onFailureRetention);
    this.deadLetterQueue = this.createTerminalQueue('DeadLetterQueue', props, OUTBOX_DEAD_LETTER_RETENTION);

    this.eventSource = props.eventBus ? (props.eventSource ?? this.relayName) : undefined;
    this.writerEnvironment = Object.freeze({
      [OUTBOX_ENV.tableName]: this.table.tableName,
      [OUTBOX_ENV.retentionSeconds]: Tokenization.stringifyNumber(this.retention.toSeconds()),
      [OUTBOX_ENV.destinationKind]: this.destinationKind,
      [OUTBOX_ENV.destinationFifo]: String(this.fifo),
      [OUTBOX_ENV.destinationFair]: String(this.fairQueue),
      // The writer counts the entry's Source in its size, so it reads the relay's.
      ...(this.eventSource === undefined ? {} : { [OUTBOX_ENV.eventSource]: this.eventSource }),
    });
    const relayEnvironment: Record<string, string> = {
      ...this.writerEnvironment,
      [OUTBOX_ENV.destinationArn]: this.destinationArn,
      [ENV.consumer]: this.relayName,
      [ENV.deadLetterMode]: 'direct',
      [ENV.deadLetterQueueUrl]: this.deadLetterQueue.queueUrl,
      [ENV.metricNamespace]: this.metricNamespace,
    };
    if (props.queue) relayEnvironment[OUTBOX_ENV.destinationQueueUrl] = props.queue.queueUrl;
    if (props.logLevel) relayEnvironment[ENV.logLevel] = props.logLevel;
    this.relayEnvironment = Object.freeze(relayEnvironment);

    const created = createConsumerFunction(this, {
      entry: relayEntry,
      // The relay keeps no inbox record: the receiving side dedups on the event id.
      mode: 'marker',
      roleDescription: `Outbox relay ${this.node.path} (publishes to ${this.destinationKind})`,
      runtime: props.runtime,
      architecture: props.architecture,
      memorySize: props.relayMemorySize ?? DEFAULT_RELAY_MEMORY_SIZE,
      timeout: timing.relayTimeout,
      contractEnvironment: relayEnvironment,
      logRetention: props.logRetention,
      removalPolicy,
      tracing: props.tracing,
      lambdaDeadLetterReason:
        'The relay is invoked synchronously by the outbox table stream event source mapping, never asynchronously, so a Lambda dead-letter target would never receive anything. Batches the event source gives up on go to its on-failure queue, unpublishable events to the dead-letter queue.',
    });
    this.relay = created.handler;
    this.role = created.role;
    this.logGroup = created.logGroup;
    this.grantRelay(props);

    this.eventSourceMapping = new lambda.EventSourceMapping(this, 'EventSourceMapping', {
      target: this.relay,
      eventSourceArn: this.table.tableStreamArn as string,
      startingPosition: lambda.StartingPosition.TRIM_HORIZON,
      batchSize: props.batchSize ?? DEFAULT_RELAY_BATCH_SIZE,
      bisectBatchOnError: true,
      retryAttempts: props.retryAttempts ?? DEFAULT_RELAY_RETRY_ATTEMPTS,
      maxRecordAge: this.maxRecordAge,
      reportBatchItemFailures: true,
      // Only new events: the removals TTL makes (and any rewrite) are never published.
      filters: [lambda.FilterCriteria.filter({ eventName: lambda.FilterRule.isEqual('INSERT') })],
      // The grant is made above, with the exact action: the destination only names its ARN.
      onFailure: { bind: () => ({ destination: this.onFailureQueue.queueArn }) },
    });

    if (props.createAlarms ?? true) {
      this.iteratorAgeAlarm = this.alarm(
        'IteratorAgeAlarm',
        {
          description: `Outbox relay ${this.relayName} is more than ${(props.iteratorAgeThreshold ?? DEFAULT_RELAY_ITERATOR_AGE_THRESHOLD).toHumanString()} behind its writers: it is failing, throttled or too slow. Events older than ${this.maxRecordAge.toHumanString()} go to the on-failure queue unpublished.`,
          metric: this.metricIteratorAge(),
          threshold: (props.iteratorAgeThreshold ?? DEFAULT_RELAY_ITERATOR_AGE_THRESHOLD).toMilliseconds(),
        },
        props.alarmTopic,
      );
      const eventAgeThreshold = props.eventAgeThreshold ?? DEFAULT_RELAY_EVENT_AGE_THRESHOLD;
      this.eventAgeAlarm = this.alarm(
        'EventAgeAlarm',
        {
          description: `Events of outbox relay ${this.relayName} reach their ${this.destinationKind} destination more than ${eventAgeThreshold.toHumanString()} after their commit (p99 over 5 minutes): the stream, retries or the relay's backlog delay them.`,
          metric: this.metricEventAge(),
          threshold: eventAgeThreshold.toMilliseconds(),
        },
        props.alarmTopic,
      );
      if (props.failedPublishAlarm ?? true) {
        this.failedPublishAlarm = this.alarm(
          'FailedPublishAlarm',
          {
            description: `Outbox relay ${this.relayName} failed to publish events to its ${this.destinationKind} destination (retried from their checkpoint, dead-lettered, or the invocation failed).`,
            metric: this.metricFailedPublishes(),
            threshold: FAILED_PUBLISH_THRESHOLD,
          },
          props.alarmTopic,
        );
      }
      this.onFailureAlarm = this.alarm(
        'OnFailureAlarm',
        {
          description: `The event source of outbox relay ${this.relayName} gave up on a batch: its sequence number range is in the on-failure queue; republish those events from the outbox table.`,
          metric: this.onFailureQueue.metricApproximateNumberOfMessagesVisible({
            statistic: cloudwatch.Stats.MAXIMUM,
            period: Duration.minutes(1),
          }),
          threshold: 1,
        },
        props.alarmTopic,
      );
      this.deadLetterQueueAlarm = this.alarm(
        'DeadLetterQueueAlarm',
        {
          description: `Outbox relay ${this.relayName} dead-lettered events it can never publish, each with its reason.`,
          metric: this.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
            statistic: cloudwatch.Stats.MAXIMUM,
            period: Duration.minutes(1),
          }),
          threshold: 1,
        },
        props.alarmTopic,
      );
      this.alarms = Object.freeze(
        [
          this.iteratorAgeAlarm,
          this.eventAgeAlarm,
          this.failedPublishAlarm,
          this.onFailureAlarm,
          this.deadLetterQueueAlarm,
        ].filter((alarm): alarm is cloudwatch.Alarm => alarm !== undefined),
      );
    } else {
      this.alarms = Object.freeze([]);
    }
    if (props.dashboard ?? true) this.dashboard = this.createDashboard();
  }

  /**
   * Lets `grantee` write events: `dynamodb:PutItem` on the outbox table only (a transaction's
   * put is authorised as one), with the KMS actions of a customer-managed table key. No read,
   * no update, no delete. A function also needs `writerEnvironment`.
   */
  public grantWrite(grantee: iam.IGrantable): void {
    grantItemActions(grantee, this.table, OUTBOX_WRITER_ACTIONS);
  }

  /** Lambda's `IteratorAge` of the relay (Maximum per minute). */
  public metricIteratorAge(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.relay.metric('IteratorAge', {
      statistic: cloudwatch.Stats.MAXIMUM,
      period: Duration.minutes(1),
      ...props,
    });
  }

  /**
   * The relay's `EventAge`: for each published event, the relay's clock at publish less the
   * item's `createdAt`, milliseconds (p99 over 5 minutes unless `props` say otherwise).
   */
  public metricEventAge(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.metric(OUTBOX_RELAY_METRICS.eventAge, { statistic: cloudwatch.Stats.p(99), ...props });
  }

  /** A metric of the relay's Embedded Metric Format output (Sum over 5 minutes). */
  public metric(metricName: string, props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return consumerMetric(
      { consumerName: this.relayName, metricNamespace: this.metricNamespace },
      metricName,
      props,
    );
  }

  /**
   * Failed publishes over 5 minutes: events the relay reported back for retry (`Retry`) or
   * dead-lettered (`Permanent`), plus failed invocations (Lambda `Errors`).
   */
  public metricFailedPublishes(): cloudwatch.MathExpression {
    return new cloudwatch.MathExpression({
      expression: 'FILL(retry, 0) + FILL(permanent, 0) + FILL(errors, 0)',
      usingMetrics: {
        retry: this.metric(OUTBOX_RELAY_METRICS.retry),
        permanent: this.metric(OUTBOX_RELAY_METRICS.permanent),
        errors: this.relay.metricErrors({ statistic: cloudwatch.Stats.SUM, period: Duration.minutes(5) }),
      },
      label: 'Failed publishes',
      period: Duration.minutes(5),
    });
  }

  private alarm(
    id: string,
    options: { description: string; metric: cloudwatch.IMetric; threshold: number },
    topic: sns.ITopic | undefined,
  ): cloudwatch.Alarm {
    const alarm = new cloudwatch.Alarm(this, id, {
      alarmDescription: options.description,
      metric: options.metric,
      threshold: options.threshold,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    if (topic) alarm.addAlarmAction(new cloudwatchActions.SnsAction(topic));
    return alarm;
  }

  /**
   * The relay's dashboard: its outcomes and event age in place of a consumer's, the iterator
   * age, the on-failure and dead-letter depths, the function's health and the alarms' status.
   */
  private createDashboard(): cloudwatch.Dashboard {
    const period = Duration.minutes(1);
    const depth = (queue: sqs.IQueue, label: string) =>
      queue.metricApproximateNumberOfMessagesVisible({ period, statistic: cloudwatch.Stats.MAXIMUM, label });
    return createConsumerDashboard(
      this,
      { consumerName: this.relayName, metricNamespace: this.metricNamespace, handler: this.relay },
      {
        header: `# Outbox relay ${this.relayName}\nPublishes to ${this.destinationKind}; items kept ${this.retention.toHumanString()}, records older than ${this.maxRecordAge.toHumanString()} given up on, on-failure records kept ${this.onFailureRetention.toHumanString()}.`,
        outcomeWidgets: [
          new cloudwatch.GraphWidget({
            title: 'Outcomes',
            left: [
              this.metric(OUTBOX_RELAY_METRICS.published, { period, label: 'Published' }),
              this.metric(OUTBOX_RELAY_METRICS.retry, { period, label: 'Retry' }),
              this.metric(OUTBOX_RELAY_METRICS.permanent, { period, label: 'Permanent' }),
            ],
            width: 12,
          }),
          new cloudwatch.GraphWidget({
            title: 'Event age (commit to publish)',
            left: [
              this.metricEventAge({ period, statistic: cloudwatch.Stats.p(50), label: 'p50' }),
              this.metricEventAge({ period, label: 'p99' }),
              this.metricEventAge({ period, statistic: cloudwatch.Stats.MAXIMUM, label: 'Maximum' }),
            ],
            width: 12,
          }),
        ],
        transportWidgets: [
          new cloudwatch.GraphWidget({ title: 'Iterator age', left: [this.metricIteratorAge()], width: 8 }),
          new cloudwatch.GraphWidget({
            title: 'On-failure and dead letters',
            left: [depth(this.onFailureQueue, 'On-failure'), depth(this.deadLetterQueue, 'Dead letters')],
            width: 8,
          }),
        ],
        alarms: this.alarms,
      },
    );
  }

  /** A queue where the relay's failures end: encrypted, SSL-only, kept `retentionPeriod`, no redrive of its own. */
  private createTerminalQueue(id: string, props: OutboxProps, retentionPeriod: Duration): sqs.IQueue {
    const queue = new sqs.Queue(this, id, {
      retentionPeriod,
      encryption: props.queueEncryptionKey ? sqs.QueueEncryption.KMS : sqs.QueueEncryption.SQS_MANAGED,
      encryptionMasterKey: props.queueEncryptionKey,
      enforceSSL: true,
    });
    Validations.of(queue).acknowledge({
      id: 'Serverless-SQSRedrivePolicy',
      reason:
        'This queue is where the outbox relay failures end (on-failure records of the event source, or unpublishable events with their reason): messages wait here until an operator republishes the events from the outbox table. A redrive policy on it would move them out of sight.',
    });
    Validations.of(queue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        'This queue is itself the dead-letter destination of the outbox relay (the event source mapping or the relay sends to it, not a queue redrive policy, so cdk-nag cannot see it is one). A dead-letter queue of it would move failures out of sight.',
    });
    return queue;
  }

  private grantRelay(props: OutboxProps): void {
    iam.Grant.addToPrincipal({
      grantee: this.relay,
      actions: [...DYNAMODB_STREAM_READ_ACTIONS],
      resourceArns: [this.table.tableStreamArn as string],
    });
    props.tableEncryptionKey?.grant(this.relay, ...STREAM_KEY_READ_ACTIONS);
    iam.Grant.addToPrincipal({
      grantee: this.relay,
      actions: [OUTBOX_PUBLISH_ACTIONS[this.destinationKind]],
      resourceArns: [this.destinationArn],
    });
    props.queue?.encryptionMasterKey?.grant(this.relay, ...QUEUE_KEY_SEND_ACTIONS);
    props.topic?.masterKey?.grant(this.relay, ...TOPIC_KEY_PUBLISH_ACTIONS);
    for (const queue of [this.deadLetterQueue, this.onFailureQueue]) {
      queue.grant(this.relay, 'sqs:SendMessage');
      queue.encryptionMasterKey?.grant(this.relay, ...QUEUE_KEY_SEND_ACTIONS);
    }
  }
}

/** The one destination of validated props. */
function describeDestination(props: OutboxProps): {
  kind: OutboxDestinationKind;
  arn: string;
  fifo: boolean;
} {
  if (props.queue) return { kind: 'sqs', arn: props.queue.queueArn, fifo: props.queue.fifo };
  if (props.topic) return { kind: 'sns', arn: props.topic.topicArn, fifo: props.topic.fifo };
  const bus = props.eventBus as events.IEventBus;
  return { kind: 'eventbridge', arn: bus.eventBusArn, fifo: false };
}
