import { Annotations, Duration, Names, RemovalPolicy, Stack, Token, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import {
  DEFAULT_DEADLINE_MARGIN_MILLIS,
  DEFAULT_METRIC_NAMESPACE,
  ENV,
  METRIC_DIMENSION_CONSUMER,
  METRICS,
} from '../lambda/core/contract';
import {
  actionsForAccess,
  type BusinessTableAccess,
  CONSUMER_MODES,
  type ConsumerMode,
  defaultBusinessTableAccess,
  grantItemActions,
  INBOX_TABLE_ACTIONS,
  ownInboxRecordsCondition,
  QUEUE_KEY_SEND_ACTIONS,
} from './consumer-permissions';
import { assertEsbuildInstalled } from './esbuild-check';
import { assertInboxTableShape, InboxTable } from './inbox-table';
import {
  DEFAULT_REDRIVE_ALLOWANCE,
  deriveRedeliveryWindow,
  knownMaxReceiveCount,
  knownQueueRetention,
  knownVisibilityTimeout,
  SQS_DEFAULT_RETENTION,
  SQS_MAX_RETENTION,
} from './record-ttl';

/**
 * Where a message that can never succeed (malformed, missing key, payload mismatch) goes.
 *
 * - `redrive`: the handler reports it as a batch item failure until SQS moves it to the
 *   dead-letter queue after `maxReceiveCount` receives.
 * - `direct`: the handler sends it to the dead-letter queue itself, with the reason as message
 *   attributes, and acknowledges it at once (needs `sqs:SendMessage` on the DLQ).
 */
export type DeadLetterMode = 'redrive' | 'direct';

/** Log levels the runtime understands (`EO_LOG_LEVEL`). */
export type ConsumerLogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

/** A business table the consumer writes, and what it may do with its items. */
export interface BusinessTable {
  /** The table. */
  readonly table: dynamodb.ITable;

  /**
   * What the consumer may do with the table's items: `read` grants `dynamodb:GetItem`;
   * `write` grants `dynamodb:PutItem`, `dynamodb:UpdateItem`, `dynamodb:DeleteItem`;
   * `conditionCheck` grants `dynamodb:ConditionCheckItem`. Always on the table ARN only.
   *
   * @default ['read', 'write'], plus 'conditionCheck' in `atomic` mode
   */
  readonly access?: readonly BusinessTableAccess[];
}

/** Properties of an {@link IdempotentConsumer}. */
export interface IdempotentConsumerProps {
  /**
   * How the handler records processed messages. It decides which DynamoDB actions the
   * function gets; it must match the mode the handler code uses.
   *
   * | mode        | inbox table                                              | business tables |
   * |-------------|----------------------------------------------------------|-----------------|
   * | `marker`    | PutItem, GetItem, UpdateItem                             | `access`        |
   * | `atomic`    | PutItem, GetItem, ConditionCheckItem                     | `access`        |
   * | `entity`    | none (no inbox table is created; a given `table` is only named in `EO_INBOX_TABLE`) | `access` (at least one table with `write`) |
   * | `two-phase` | PutItem, GetItem, UpdateItem                             | `access`        |
   */
  readonly mode: ConsumerMode;

  /**
   * Path to the handler's TypeScript or JavaScript entry file. The construct bundles it with
   * the local esbuild (never Docker), the AWS SDK included, as minified CommonJS with a
   * source map. Exactly one of `entry` and `handler`.
   *
   * @default - no entry; `handler` must be set
   */
  readonly entry?: string;

  /**
   * An existing function to use instead of bundling `entry`. The construct adds the event
   * source, the grants and (for a `lambda.Function`) the `EO_` environment variables to it.
   * Exactly one of `entry` and `handler`.
   *
   * @default - a function is created from `entry`
   */
  readonly handler?: lambda.IFunction;

  /**
   * Name that scopes every dedup key of this consumer (`EO_CONSUMER`), so consumers sharing
   * an inbox table never suppress each other. 1-100 characters of `A-Z a-z 0-9 . _ : -`.
   * Changing it makes every earlier record invisible to this consumer: set it explicitly so
   * that moving the construct in the tree cannot change it.
   *
   * @default - derived from the stack name and construct path, with a hash suffix
   */
  readonly consumerName?: string;

  /**
   * Function memory, in MiB (128-10240). Only with `entry`.
   *
   * @default 256
   */
  readonly memorySize?: number;

  /**
   * Function timeout (at most 15 minutes). It must be longer than the runtime's default
   * deadline margin (`deadlineMarginMillis`, 2 seconds): the batch processor starts no message
   * once less than the margin is left, so a shorter timeout throws. Only with `entry`.
   *
   * @default Duration.seconds(30)
   */
  readonly timeout?: Duration;

  /**
   * Function runtime. Only with `entry`.
   *
   * @default lambda.Runtime.NODEJS_24_X
   */
  readonly runtime?: lambda.Runtime;

  /**
   * Function architecture. Only with `entry`.
   *
   * @default lambda.Architecture.ARM_64
   */
  readonly architecture?: lambda.Architecture;

  /**
   * Extra environment variables for the function. The `EO_` variables of the contract are
   * set from this construct's props; setting one here throws. Only with `entry`.
   *
   * @default - only the `EO_` variables (and `NODE_OPTIONS=--enable-source-maps`)
   */
  readonly environment?: Record<string, string>;

  /**
   * Retention of the function's log group. Only with `entry`.
   *
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;

  /**
   * Runtime log level (`EO_LOG_LEVEL`).
   *
   * @default - not set; the runtime logs at `info`
   */
  readonly logLevel?: ConsumerLogLevel;

  /**
   * X-Ray tracing. Active tracing grants `xray:PutTraceSegments` and
   * `xray:PutTelemetryRecords` on `*` (X-Ray has no resource-level permissions). Only with
   * `entry`.
   *
   * @default lambda.Tracing.DISABLED
   */
  readonly tracing?: lambda.Tracing;

  /**
   * An existing queue to consume. Its own settings stay as they are: the queue props below
   * (`fifo`, `visibilityTimeout`, `retentionPeriod`, ...) then throw if set. When the queue is
   * defined in this app its visibility timeout is checked against the function timeout.
   *
   * @default - a queue is created
   */
  readonly queue?: sqs.IQueue;

  /**
   * Whether the created queue (and its dead-letter queue) is FIFO. Only without `queue`.
   *
   * @default false
   */
  readonly fifo?: boolean;

  /**
   * Whether the created FIFO queue derives deduplication ids from the message body. When
   * false, producers must send a `MessageDeduplicationId`. Only with `fifo: true`.
   *
   * @default false
   */
  readonly contentBasedDeduplication?: boolean;

  /**
   * Physical name of the created queue; a FIFO queue's name must end in `.fifo`. Only
   * without `queue`.
   *
   * @default - a name generated by CloudFormation
   */
  readonly queueName?: string;

  /**
   * Visibility timeout of the created queue; at least 6 × `timeout` + `maxBatchingWindow`
   * (AWS's guidance for Lambda event sources), otherwise the construct throws. Only without
   * `queue`.
   *
   * @default - 6 × `timeout` + `maxBatchingWindow`
   */
  readonly visibilityTimeout?: Duration;

  /**
   * How long the created queue keeps a message (60 seconds to 14 days). Only without `queue`.
   *
   * @default Duration.days(4)
   */
  readonly retentionPeriod?: Duration;

  /**
   * Customer-managed KMS key for the created queue and dead-letter queue. The function gets
   * `kms:Decrypt` to receive (and `kms:GenerateDataKey`, `kms:Decrypt` to send in `direct`
   * mode). Only without `queue`.
   *
   * @default - SQS-managed encryption (SSE-SQS)
   */
  readonly queueEncryptionKey?: kms.IKey;

  /**
   * An existing dead-letter queue. With a created queue, the queue redrives to it (FIFO
   * queues need a FIFO DLQ). With an existing `queue`, it must be that queue's DLQ.
   *
   * @default - created with the queue; with an existing `queue`, its own DLQ when it is a
   * `sqs.Queue` of this app, none otherwise
   */
  readonly deadLetterQueue?: sqs.IQueue;

  /**
   * Physical name of the created dead-letter queue; a FIFO queue's name must end in
   * `.fifo`. Only when the construct creates the dead-letter queue.
   *
   * @default - a name generated by CloudFormation
   */
  readonly deadLetterQueueName?: string;

  /**
   * How long the created dead-letter queue keeps a message (60 seconds to 14 days). Only
   * when the construct creates the dead-letter queue.
   *
   * @default Duration.days(14)
   */
  readonly deadLetterRetentionPeriod?: Duration;

  /**
   * Receives before SQS moves a message to the dead-letter queue (1-1000). Retries are how
   * transient failures and in-flight duplicates recover, so fewer than 3 draws a warning.
   * Only without `queue`.
   *
   * @default 5
   */
  readonly maxReceiveCount?: number;

  /**
   * How permanent failures reach the dead-letter queue (`EO_DEAD_LETTER_MODE`). `direct`
   * needs a dead-letter queue and grants `sqs:SendMessage` on it.
   *
   * @default 'redrive'
   */
  readonly deadLetterMode?: DeadLetterMode;

  /**
   * Messages per invocation: 1-10, or up to 10000 with a `maxBatchingWindow`.
   *
   * @default 10
   */
  readonly batchSize?: number;

  /**
   * How long to gather messages before invoking (at most 5 minutes; standard queues only).
   *
   * @default - no batching window
   */
  readonly maxBatchingWindow?: Duration;

  /**
   * Most concurrent invocations the event source starts (2-1000).
   *
   * @default - no limit beyond the account's concurrency
   */
  readonly maxConcurrency?: number;

  /**
   * An existing inbox table, so several consumers can share one (see `InboxTable`). When it
   * is defined in this app, its key schema and TTL attribute are checked against the
   * contract. In `entity` mode the business item is the marker: the table's name is still
   * passed in `EO_INBOX_TABLE` (`createSqsHandler` reads it in every mode), but no
   * permission on it is granted.
   *
   * @default - an `InboxTable` is created; none in `entity` mode
   */
  readonly table?: dynamodb.ITable;

  /**
   * Customer-managed KMS key for the created inbox table. Only without `table`.
   *
   * @default - an AWS-managed key
   */
  readonly tableEncryptionKey?: kms.IKey;

  /**
   * Removal policy of what holds data: the created inbox table and the function's log group.
   *
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;

  /**
   * Business tables the handler writes, with explicit access; the function gets exactly the
   * actions of that access on each table (and the KMS actions of a customer-managed key).
   * `entity` mode needs at least one table with `write` access.
   *
   * @default - none
   */
  readonly businessTables?: readonly BusinessTable[];

  /**
   * How long an inbox record lives (`EO_TTL_SECONDS`). A record that expires while a copy of
   * its message can still arrive lets that copy be processed again, so the default covers the
   * whole redelivery path: the longer of queue retention + dead-letter queue retention +
   * `redriveAllowance` (a FIFO queue resets the enqueue time on the move to its DLQ, and a
   * redrive creates a new message) and 3 × `producerRetryHorizon`, plus one day. With the
   * defaults that is max(4 + 14 + 14 days, 3 hours) + 1 day = 33 days. A retention that cannot
   * be known at synth time (an imported queue or DLQ, or a token) is taken as the SQS maximum
   * of 14 days, and an imported `queue` without a `deadLetterQueue` is assumed to have such a
   * DLQ. Setting a TTL shorter than the redelivery window draws a synth-time warning. In
   * `two-phase` mode it must be longer than the `lease`, otherwise the construct throws (the
   * runtime would reject it at cold start).
   *
   * @default - derived from the queue settings as described above
   */
  readonly recordTtl?: Duration;

  /**
   * How long producers keep resending the same message (their retry horizon). The default
   * record TTL covers three times this.
   *
   * @default Duration.hours(1)
   */
  readonly producerRetryHorizon?: Duration;

  /**
   * How long after leaving the dead-letter queue a message can still arrive: a redrive (the
   * console's, or `StartMessageMoveTask`) creates a new message in the queue it moves to, which
   * keeps it up to that queue's retention, and operators who keep dead letters elsewhere may
   * replay them later. The default record TTL covers queue retention + dead-letter queue
   * retention + this. Not counted without a dead-letter queue.
   *
   * @default Duration.days(14)
   */
  readonly redriveAllowance?: Duration;

  /**
   * Two-phase mode: how long an in-progress claim stays valid before another delivery may
   * take it over (`EO_LEASE_MILLIS`). A lease shorter than the function timeout lets a slow
   * invocation be taken over while it still runs, which draws a warning; so does a lease longer
   * than the queue's visibility timeout × (`maxReceiveCount` - 1), because the message of a
   * crashed claim then reaches the dead-letter queue before any delivery may take the claim
   * over. A lease at least as long as `recordTtl` throws (a claim must never outlive its record).
   *
   * @default - the function timeout (15 minutes when the timeout of a given `handler` is unknown)
   */
  readonly lease?: Duration;

  /**
   * CloudWatch namespace of the runtime's Embedded Metric Format metrics
   * (`EO_METRIC_NAMESPACE`) and of the metric helpers.
   *
   * @default 'EffectivelyOnce'
   */
  readonly metricNamespace?: string;

  /**
   * Whether to create the alarms (dead letters, payload mismatches, age of the oldest
   * message, duplicate rate).
   *
   * @default true
   */
  readonly createAlarms?: boolean;

  /**
   * SNS topic notified when an alarm fires.
   *
   * @default - alarms have no actions
   */
  readonly alarmTopic?: sns.ITopic;

  /**
   * Age of the oldest message in the queue that raises the backlog alarm.
   *
   * @default Duration.minutes(15)
   */
  readonly ageOfOldestMessageThreshold?: Duration;

  /**
   * Whether to create the duplicate-rate alarm (with `createAlarms`). It is the construct's
   * only alarm built on metric math (`duplicate / (processed + duplicate)`), and some local
   * emulators' CloudFormation rejects metric-math alarms (MiniStack: "Properties.Metrics
   * (metric math) is not supported"), rolling the whole stack back. Turn it off for such a
   * stage only; the other alarms and the dashboard's duplicate-rate graph stay.
   *
   * @default true
   */
  readonly duplicateRateAlarm?: boolean;

  /**
   * Share of duplicates, `duplicate / (processed + duplicate)` over five minutes, that raises
   * the duplicate-rate alarm when it holds for three periods in a row (0 < value <= 1).
   * Healthy consumers see few duplicates; a sustained high share means a producer retry
   * storm or a consumer that commits but fails to acknowledge. Not with
   * `duplicateRateAlarm: false`.
   *
   * @default 0.25
   */
  readonly duplicateRateThreshold?: number;

  /**
   * Whether to create a CloudWatch dashboard with every outcome metric, the queue backlog,
   * the dead-letter queue depth and the function's health.
   *
   * @default true
   */
  readonly dashboard?: boolean;
}

const CONSUMER_NAME_PATTERN = /^[A-Za-z0-9._:-]{1,100}$/;
const DEFAULT_TIMEOUT = Duration.seconds(30);
const DEFAULT_MEMORY_SIZE = 256;
const DEFAULT_MAX_RECEIVE_COUNT = 5;
const DEFAULT_BATCH_SIZE = 10;
const DEFAULT_DEAD_LETTER_RETENTION = Duration.days(14);
const DEFAULT_PRODUCER_RETRY_HORIZON = Duration.hours(1);
const DEFAULT_AGE_THRESHOLD = Duration.minutes(15);
const DEFAULT_DUPLICATE_RATE_THRESHOLD = 0.25;
const LAMBDA_DEFAULT_TIMEOUT = Duration.seconds(3);
const LAMBDA_MAX_TIMEOUT = Duration.minutes(15);
const VISIBILITY_FACTOR = 6;
const WARNING_PREFIX = 'effectively-once';

/** Props that configure the queue the construct creates; they throw with an existing `queue`. */
const QUEUE_CREATION_PROPS = [
  'fifo',
  'contentBasedDeduplication',
  'queueName',
  'visibilityTimeout',
  'retentionPeriod',
  'queueEncryptionKey',
  'maxReceiveCount',
] as const;

/** Props that configure the dead-letter queue the construct creates. */
const DEAD_LETTER_CREATION_PROPS = ['deadLetterQueueName', 'deadLetterRetentionPeriod'] as const;

/** Props that configure the function the construct creates; they throw with a given `handler`. */
const FUNCTION_CREATION_PROPS = [
  'memorySize',
  'timeout',
  'runtime',
  'architecture',
  'environment',
  'logRetention',
  'tracing',
] as const;

/** Which prop sets each environment variable of the contract, for error messages. */
const ENV_SOURCES: Readonly<Record<string, string>> = {
  [ENV.inboxTable]: '`table`',
  [ENV.consumer]: '`consumerName`',
  [ENV.ttlSeconds]: '`recordTtl`',
  [ENV.deadLetterMode]: '`deadLetterMode`',
  [ENV.deadLetterQueueUrl]: '`deadLetterQueue` with `deadLetterMode: direct`',
  [ENV.leaseMillis]: '`lease`',
  [ENV.metricNamespace]: '`metricNamespace`',
  [ENV.logLevel]: '`logLevel`',
};

/**
 * An idempotent SQS → Lambda → DynamoDB consumer: the queue and its dead-letter queue, the
 * inbox table, the function with exactly the permissions its mode needs, the event source
 * with partial batch responses, the alarms and a dashboard.
 *
 * Every resource can be passed in instead of created (`queue`, `deadLetterQueue`, `table`,
 * `handler`). The record TTL is derived from the queue settings (see `recordTtl`).
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
    this.validateProps(props);

    this.mode = props.mode;
    this.deadLetterMode = props.deadLetterMode ?? 'redrive';
    this.metricNamespace = props.metricNamespace ?? DEFAULT_METRIC_NAMESPACE;
    this.consumerName =
      props.consumerName ??
      Names.uniqueResourceName(this, { maxLength: 100, separator: '-', allowedSpecialCharacters: '-._:' });

    const functionTimeout = props.handler ? timeoutOf(props.handler) : (props.timeout ?? DEFAULT_TIMEOUT);
    this.checkDeadlineMargin(props, functionTimeout);

    // Queue and dead-letter queue.
    const { queue, deadLetterQueue } = this.resolveQueues(props, functionTimeout);
    this.queue = queue;
    this.deadLetterQueue = deadLetterQueue;
    this.checkVisibilityTimeout(props, functionTimeout);

    // Record TTL from the whole redelivery path.
    const derived = deriveRedeliveryWindow({
      queueRetention: this.queueRetention(props),
      deadLetterQueueRetention: this.deadLetterQueueRetention(props, deadLetterQueue),
      redriveAllowance: props.redriveAllowance ?? DEFAULT_REDRIVE_ALLOWANCE,
      producerRetryHorizon: props.producerRetryHorizon ?? DEFAULT_PRODUCER_RETRY_HORIZON,
    });
    this.redeliveryWindow = derived.window;
    this.recordTtl = props.recordTtl ?? derived.defaultRecordTtl;
    if (
      props.recordTtl &&
      !props.recordTtl.isUnresolved() &&
      props.recordTtl.toSeconds() < derived.window.toSeconds()
    ) {
      Annotations.of(this).addWarningV2(
        `${WARNING_PREFIX}:recordTtlShorterThanRedeliveryWindow`,
        `\`recordTtl\` (${props.recordTtl.toHumanString()}) is shorter than the redelivery window (${derived.window.toHumanString()}: ${derived.explanation}). A message redelivered or redriven after its inbox record expired is processed again. Set \`recordTtl\` to at least ${derived.window.toHumanString()}, or leave it unset (default ${derived.defaultRecordTtl.toHumanString()}).`,
      );
    }

    this.lease = props.lease ?? functionTimeout ?? LAMBDA_MAX_TIMEOUT;
    if (this.mode === 'two-phase') this.checkLease(props, functionTimeout, queue);

    // Inbox table.
    this.inboxTable = this.resolveInboxTable(props);

    // Environment of the contract.
    const environment: Record<string, string> = {
      [ENV.consumer]: this.consumerName,
      [ENV.ttlSeconds]: String(this.recordTtl.toSeconds()),
      [ENV.deadLetterMode]: this.deadLetterMode,
      [ENV.leaseMillis]: String(this.lease.toMilliseconds()),
      [ENV.metricNamespace]: this.metricNamespace,
    };
    if (this.inboxTable) environment[ENV.inboxTable] = this.inboxTable.tableName;
    if (this.deadLetterMode === 'direct' && deadLetterQueue) {
      environment[ENV.deadLetterQueueUrl] = deadLetterQueue.queueUrl;
    }
    if (props.logLevel) environment[ENV.logLevel] = props.logLevel;
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
    const alarms: cloudwatch.Alarm[] = [];
    if (props.createAlarms ?? true) {
      this.deadLetterQueueAlarm = deadLetterQueue
        ? this.createDeadLetterQueueAlarm(deadLetterQueue)
        : undefined;
      this.mismatchAlarm = this.createMismatchAlarm();
      this.ageOfOldestMessageAlarm = this.createAgeAlarm(
        props.ageOfOldestMessageThreshold ?? DEFAULT_AGE_THRESHOLD,
      );
      this.duplicateRateAlarm =
        (props.duplicateRateAlarm ?? true)
          ? this.createDuplicateRateAlarm(props.duplicateRateThreshold ?? DEFAULT_DUPLICATE_RATE_THRESHOLD)
          : undefined;
      for (const alarm of [
        this.deadLetterQueueAlarm,
        this.mismatchAlarm,
        this.ageOfOldestMessageAlarm,
        this.duplicateRateAlarm,
      ]) {
        if (!alarm) continue;
        if (props.alarmTopic) alarm.addAlarmAction(new cloudwatchActions.SnsAction(props.alarmTopic));
        alarms.push(alarm);
      }
    }
    this.alarms = Object.freeze(alarms);
    if (props.dashboard ?? true) this.dashboard = this.createDashboard();
  }

  /** A metric of the runtime's Embedded Metric Format output for this consumer (Sum over 5 minutes). */
  public metric(metricName: string, props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: this.metricNamespace,
      metricName,
      dimensionsMap: { [METRIC_DIMENSION_CONSUMER]: this.consumerName },
      statistic: cloudwatch.Stats.SUM,
      period: Duration.minutes(5),
      ...props,
    });
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

  /** Share of duplicates among processed and duplicate messages, 0 when there were none. */
  public metricDuplicateRate(props?: cloudwatch.MathExpressionOptions): cloudwatch.MathExpression {
    return new cloudwatch.MathExpression({
      expression: 'IF((FILL(p, 0) + FILL(d, 0)) > 0, FILL(d, 0) / (FILL(p, 0) + FILL(d, 0)), 0)',
      usingMetrics: { p: this.metricProcessed(), d: this.metricDuplicate() },
      label: 'Duplicate rate',
      period: Duration.minutes(5),
      ...props,
    });
  }

  private validateProps(props: IdempotentConsumerProps): void {
    const path = this.node.path;
    const fail = (message: string): never => {
      throw new Error(`[${path}] ${message}`);
    };
    if (!CONSUMER_MODES.includes(props.mode)) {
      fail(
        `Expected \`mode\` to be one of ${CONSUMER_MODES.map((m) => `'${m}'`).join(', ')}, got \`${props.mode}\``,
      );
    }
    if ((props.entry === undefined) === (props.handler === undefined)) {
      fail(
        props.entry === undefined
          ? 'Expected exactly one of `entry` (a handler file to bundle) and `handler` (an existing function), got neither'
          : 'Expected exactly one of `entry` (a handler file to bundle) and `handler` (an existing function), got both',
      );
    }
    if (props.handler)
      rejectSet(props, FUNCTION_CREATION_PROPS, 'with a given `handler`: configure your function', fail);
    if (props.queue) {
      rejectSet(props, QUEUE_CREATION_PROPS, 'with an existing `queue`: configure the queue you pass', fail);
      rejectSet(
        props,
        DEAD_LETTER_CREATION_PROPS,
        'with an existing `queue`: its dead-letter queue is configured on the queue you pass',
        fail,
      );
    }
    if (props.deadLetterQueue) {
      rejectSet(
        props,
        DEAD_LETTER_CREATION_PROPS,
        'with an existing `deadLetterQueue`: configure the queue you pass',
        fail,
      );
    }
    if (props.contentBasedDeduplication !== undefined && props.fifo !== true) {
      fail('Expected `contentBasedDeduplication` only with `fifo: true`');
    }
    if (props.deadLetterMode !== undefined && !['redrive', 'direct'].includes(props.deadLetterMode)) {
      fail(`Expected \`deadLetterMode\` to be 'redrive' or 'direct', got \`${props.deadLetterMode}\``);
    }
    if (props.consumerName !== undefined && !Token.isUnresolved(props.consumerName)) {
      if (!CONSUMER_NAME_PATTERN.test(props.consumerName)) {
        fail(
          `Expected \`consumerName\` to be 1-100 characters of A-Z, a-z, 0-9, '.', '_', ':', '-', got \`${props.consumerName}\``,
        );
      }
    }
    if (props.metricNamespace !== undefined && !Token.isUnresolved(props.metricNamespace)) {
      if (
        !/^[A-Za-z0-9._/#: -]{1,255}$/.test(props.metricNamespace) ||
        props.metricNamespace.startsWith('AWS/')
      ) {
        fail(
          `Expected \`metricNamespace\` to be 1-255 characters of A-Z, a-z, 0-9, '.', '-', '_', '/', '#', ':', ' ' not starting with 'AWS/', got \`${props.metricNamespace}\``,
        );
      }
    }
    checkInteger(fail, 'memorySize', props.memorySize, 128, 10240);
    checkInteger(fail, 'maxReceiveCount', props.maxReceiveCount, 1, 1000);
    checkInteger(fail, 'maxConcurrency', props.maxConcurrency, 2, 1000);
    const maxBatch = props.maxBatchingWindow ? 10000 : 10;
    checkInteger(fail, 'batchSize', props.batchSize, 1, maxBatch);
    checkDuration(fail, 'timeout', props.timeout, Duration.seconds(1), LAMBDA_MAX_TIMEOUT);
    checkDuration(fail, 'retentionPeriod', props.retentionPeriod, Duration.seconds(60), SQS_MAX_RETENTION);
    checkDuration(
      fail,
      'deadLetterRetentionPeriod',
      props.deadLetterRetentionPeriod,
      Duration.seconds(60),
      SQS_MAX_RETENTION,
    );
    checkDuration(
      fail,
      'visibilityTimeout',
      props.visibilityTimeout,
      Duration.seconds(0),
      Duration.hours(12),
    );
    checkDuration(
      fail,
      'maxBatchingWindow',
      props.maxBatchingWindow,
      Duration.seconds(0),
      Duration.minutes(5),
    );
    checkDuration(fail, 'recordTtl', props.recordTtl, Duration.seconds(1), undefined);
    checkDuration(fail, 'producerRetryHorizon', props.producerRetryHorizon, Duration.seconds(0), undefined);
    checkDuration(fail, 'redriveAllowance', props.redriveAllowance, Duration.seconds(0), undefined);
    checkDuration(fail, 'lease', props.lease, Duration.seconds(1), undefined);
    checkDuration(
      fail,
      'ageOfOldestMessageThreshold',
      props.ageOfOldestMessageThreshold,
      Duration.seconds(60),
      undefined,
    );
    if (props.duplicateRateThreshold !== undefined && !Token.isUnresolved(props.duplicateRateThreshold)) {
      if (!(props.duplicateRateThreshold > 0 && props.duplicateRateThreshold <= 1)) {
        fail(`Expected \`duplicateRateThreshold\` to be in (0, 1], got \`${props.duplicateRateThreshold}\``);
      }
    }
    if (props.duplicateRateAlarm === false && props.duplicateRateThreshold !== undefined) {
      fail('Expected no `duplicateRateThreshold` with `duplicateRateAlarm: false`');
    }
    if (props.environment) {
      const managed = new Set<string>(Object.values(ENV));
      for (const name of Object.keys(props.environment)) {
        if (managed.has(name)) {
          fail(
            `Expected \`environment\` not to set \`${name}\`: the construct sets it from ${ENV_SOURCES[name] ?? 'its props'}`,
          );
        }
      }
    }
    if (
      props.maxReceiveCount !== undefined &&
      !Token.isUnresolved(props.maxReceiveCount) &&
      props.maxReceiveCount < 3
    ) {
      Annotations.of(this).addWarningV2(
        `${WARNING_PREFIX}:lowMaxReceiveCount`,
        `\`maxReceiveCount\` is ${props.maxReceiveCount}: transient failures (throttling, conflicts, in-flight duplicates) recover by being received again, so a message can reach the dead-letter queue while it would still have succeeded. Use at least 3 (default ${DEFAULT_MAX_RECEIVE_COUNT}).`,
      );
    }
    if (props.mode === 'entity') {
      if (props.tableEncryptionKey) {
        fail(
          'Expected no `tableEncryptionKey` in `entity` mode: the business item is the marker and no inbox table is created',
        );
      }
      const writes = (props.businessTables ?? []).some((business) =>
        (business.access ?? defaultBusinessTableAccess('entity')).includes('write'),
      );
      if (!writes) {
        fail('Expected `businessTables` to hold at least one table with `write` access in `entity` mode');
      }
    }
    if (props.table && props.tableEncryptionKey) {
      fail('Expected no `tableEncryptionKey` with an existing `table`: configure the table you pass');
    }
    for (const [index, business] of (props.businessTables ?? []).entries()) {
      if (business.access === undefined) continue;
      const valid = ['read', 'write', 'conditionCheck'];
      if (business.access.length === 0 || business.access.some((access) => !valid.includes(access))) {
        fail(
          `Expected \`businessTables[${index}].access\` to be a non-empty list of 'read', 'write', 'conditionCheck', got \`${JSON.stringify(business.access)}\``,
        );
      }
    }
    for (const [prop, name] of [
      ['queueName', props.queueName],
      ['deadLetterQueueName', props.deadLetterQueueName],
    ] as const) {
      if (name === undefined || Token.isUnresolved(name)) continue;
      const fifo = props.fifo === true;
      const base = fifo ? name.replace(/\.fifo$/, '') : name;
      if (!/^[A-Za-z0-9_-]{1,75}$/.test(base) || (fifo && !name.endsWith('.fifo'))) {
        fail(
          `Expected \`${prop}\` to be up to 80 characters of A-Z, a-z, 0-9, '-', '_'${fifo ? " ending in '.fifo' (FIFO queue)" : ''}, got \`${name}\``,
        );
      }
    }
  }

  private resolveQueues(
    props: IdempotentConsumerProps,
    functionTimeout: Duration | undefined,
  ): { queue: sqs.IQueue; deadLetterQueue?: sqs.IQueue } {
    const fail = (message: string): never => {
      throw new Error(`[${this.node.path}] ${message}`);
    };
    if (props.queue) {
      const own = props.queue instanceof sqs.Queue ? props.queue.deadLetterQueue?.queue : undefined;
      if (own && props.deadLetterQueue && own !== props.deadLetterQueue) {
        fail(
          `Expected \`deadLetterQueue\` to be the dead-letter queue of \`queue\` (${own.node.path}), got ${props.deadLetterQueue.node.path}`,
        );
      }
      const deadLetterQueue = props.deadLetterQueue ?? own;
      if (!deadLetterQueue && (props.deadLetterMode ?? 'redrive') === 'direct') {
        fail(
          'Expected a `deadLetterQueue` with `deadLetterMode: direct`: the queue you passed has no known DLQ',
        );
      }
      if (!deadLetterQueue) {
        Annotations.of(this).addWarningV2(
          `${WARNING_PREFIX}:noDeadLetterQueue`,
          'The `queue` you passed has no dead-letter queue this construct knows of: a message that keeps failing is received again until its retention ends, and there is no dead-letter alarm. Give the queue a redrive policy and pass its DLQ as `deadLetterQueue`.',
        );
      }
      return { queue: props.queue, deadLetterQueue };
    }

    const fifo = props.fifo ?? false;
    const encryption = props.queueEncryptionKey ? sqs.QueueEncryption.KMS : sqs.QueueEncryption.SQS_MANAGED;
    let deadLetterQueue = props.deadLetterQueue;
    if (deadLetterQueue) {
      if (deadLetterQueue.fifo !== fifo) {
        fail(
          fifo
            ? 'Expected a FIFO `deadLetterQueue` for a FIFO queue, got a standard queue'
            : 'Expected a standard `deadLetterQueue` for a standard queue, got a FIFO queue',
        );
      }
    } else {
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
    const visibilityTimeout =
      props.visibilityTimeout ?? requiredVisibility(functionTimeout, props.maxBatchingWindow);
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

  private checkVisibilityTimeout(
    props: IdempotentConsumerProps,
    functionTimeout: Duration | undefined,
  ): void {
    const visibility = props.queue ? knownVisibilityTimeout(props.queue) : props.visibilityTimeout;
    if (!visibility || !functionTimeout) {
      // Only a created queue with its default visibility timeout lands here without a note:
      // that default is derived from the rule itself.
      if (props.queue || props.visibilityTimeout) {
        Annotations.of(this).addInfo(
          'The queue visibility timeout or the function timeout is not known at synth time, so the rule "visibility timeout >= 6 × function timeout + batching window" was not checked.',
        );
      }
      return;
    }
    const required = requiredVisibility(functionTimeout, props.maxBatchingWindow);
    if (visibility.isUnresolved() || required.isUnresolved()) return;
    if (visibility.toSeconds() < required.toSeconds()) {
      const source = props.queue ? 'The visibility timeout of `queue`' : '`visibilityTimeout`';
      const window = props.maxBatchingWindow
        ? ` + maxBatchingWindow (${props.maxBatchingWindow.toHumanString()})`
        : '';
      throw new Error(
        `[${this.node.path}] ${source} (${visibility.toHumanString()}) must be at least ${VISIBILITY_FACTOR} × the function timeout (${functionTimeout.toHumanString()})${window} = ${required.toHumanString()}, so a message is not delivered again while an invocation still processes it`,
      );
    }
  }

  /**
   * Throws when the function timeout leaves no time before the runtime's deadline margin: the
   * batch processor starts no message once less than the margin is left, so such a function
   * would answer every batch with retries and process nothing, ever.
   */
  private checkDeadlineMargin(props: IdempotentConsumerProps, functionTimeout: Duration | undefined): void {
    if (!functionTimeout || functionTimeout.isUnresolved()) return;
    const margin = Duration.millis(DEFAULT_DEADLINE_MARGIN_MILLIS);
    if (functionTimeout.toMilliseconds() > margin.toMilliseconds()) return;
    const source = props.handler ? 'The timeout of `handler`' : '`timeout`';
    throw new Error(
      `[${this.node.path}] ${source} (${functionTimeout.toHumanString()}) must be longer than the runtime's deadline margin (\`deadlineMarginMillis\`, default ${margin.toHumanString()}): the batch processor starts no message once less than the margin is left, so the function would process nothing`,
    );
  }

  /** How long the source queue keeps a message, the SQS maximum when that is unknown. */
  private queueRetention(props: IdempotentConsumerProps): Duration {
    const retention = props.queue
      ? knownQueueRetention(props.queue)
      : (props.retentionPeriod ?? SQS_DEFAULT_RETENTION);
    return retention === undefined ? SQS_MAX_RETENTION : concreteOr(retention, SQS_MAX_RETENTION);
  }

  /**
   * How long the dead-letter queue keeps a message, the SQS maximum when that is unknown;
   * `undefined` only when the queue is known to have no dead-letter queue. An imported queue's
   * redrive policy cannot be read at synth time, so it is assumed to have a DLQ.
   */
  private deadLetterQueueRetention(
    props: IdempotentConsumerProps,
    deadLetterQueue: sqs.IQueue | undefined,
  ): Duration | undefined {
    if (!deadLetterQueue) {
      const knownWithoutDeadLetterQueue = props.queue instanceof sqs.Queue;
      return knownWithoutDeadLetterQueue ? undefined : SQS_MAX_RETENTION;
    }
    return concreteOr(knownQueueRetention(deadLetterQueue) ?? SQS_MAX_RETENTION, SQS_MAX_RETENTION);
  }

  /**
   * The two-phase lease rules: shorter than the record TTL (the runtime's cold-start rule, so
   * synth fails the same way), no shorter than the function timeout, and no longer than the
   * queue keeps redelivering a crashed claim's message.
   */
  private checkLease(
    props: IdempotentConsumerProps,
    functionTimeout: Duration | undefined,
    queue: sqs.IQueue,
  ): void {
    const lease = this.lease;
    if (lease.isUnresolved()) return;
    if (!this.recordTtl.isUnresolved() && lease.toMilliseconds() >= this.recordTtl.toMilliseconds()) {
      const source = props.lease
        ? '`lease`'
        : 'The default lease (the function timeout, or 15 minutes when it is unknown)';
      throw new Error(
        `[${this.node.path}] ${source} (${lease.toHumanString()}) must be shorter than \`recordTtl\` (${this.recordTtl.toHumanString()}) in two-phase mode: a claim must never outlive its record, and the runtime rejects \`leaseMillis\` >= \`ttlSeconds\` at cold start`,
      );
    }
    if (props.lease && functionTimeout && !functionTimeout.isUnresolved()) {
      if (props.lease.toMilliseconds() < functionTimeout.toMilliseconds()) {
        Annotations.of(this).addWarningV2(
          `${WARNING_PREFIX}:leaseShorterThanTimeout`,
          `\`lease\` (${props.lease.toHumanString()}) is shorter than the function timeout (${functionTimeout.toHumanString()}): another delivery can take over a claim while the invocation that holds it is still running, and the effect runs twice.`,
        );
      }
    }
    const visibility = props.queue
      ? knownVisibilityTimeout(props.queue)
      : (props.visibilityTimeout ?? requiredVisibility(functionTimeout, props.maxBatchingWindow));
    const receives = props.queue
      ? knownMaxReceiveCount(queue)
      : (props.maxReceiveCount ?? DEFAULT_MAX_RECEIVE_COUNT);
    if (!visibility || visibility.isUnresolved() || receives === undefined || Token.isUnresolved(receives)) {
      return;
    }
    // The receive whose invocation crashed is the first of `receives`; the message comes back
    // one visibility timeout after each, and the receive after the last moves it to the DLQ.
    const lastRedelivery = Duration.seconds(visibility.toSeconds() * (receives - 1));
    if (lease.toMilliseconds() > lastRedelivery.toMilliseconds()) {
      Annotations.of(this).addWarningV2(
        `${WARNING_PREFIX}:leaseOutlivesRedelivery`,
        `The two-phase lease (${lease.toHumanString()}) is longer than the queue's visibility timeout (${visibility.toHumanString()}) × (maxReceiveCount (${receives}) - 1) = ${lastRedelivery.toHumanString()}, when the last delivery of a message comes after the one whose invocation crashed holding its claim: every later delivery meets a live lease, and SQS moves the message to the dead-letter queue before any delivery may take the claim over. Shorten \`lease\`, or raise the visibility timeout or maxReceiveCount.`,
      );
    }
  }

  private resolveInboxTable(props: IdempotentConsumerProps): dynamodb.ITable | undefined {
    if (props.table) {
      const ttl = assertInboxTableShape(this, props.table);
      if (ttl === 'missing') {
        Annotations.of(this).addWarningV2(
          `${WARNING_PREFIX}:inboxTableWithoutTtl`,
          'The inbox `table` you passed has no TTL: inbox records are never deleted. Enable TTL on the `expiresAt` attribute, or create the table with `new InboxTable(...)`.',
        );
      }
      return props.table;
    }
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
    const logGroup = new logs.LogGroup(this, 'LogGroup', {
      retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    });
    // An explicit role without AWSLambdaBasicExecutionRole: that managed policy allows writing
    // to every log group of the account, this one only to the function's own log group.
    const role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Idempotent consumer ${this.node.path} (${this.mode} mode)`,
    });
    logGroup.grantWrite(role);
    const tracing = props.tracing ?? lambda.Tracing.DISABLED;
    assertEsbuildInstalled(this.node.path, Stack.of(this).bundlingRequired);
    const handler = new nodejs.NodejsFunction(this, 'Function', {
      entry: props.entry,
      runtime: props.runtime ?? lambda.Runtime.NODEJS_24_X,
      architecture: props.architecture ?? lambda.Architecture.ARM_64,
      memorySize: props.memorySize ?? DEFAULT_MEMORY_SIZE,
      timeout: props.timeout ?? DEFAULT_TIMEOUT,
      role,
      logGroup,
      tracing,
      environment: {
        // The bundle ships a source map; a user's own NODE_OPTIONS wins.
        NODE_OPTIONS: '--enable-source-maps',
        ...props.environment,
        ...environment,
      },
      bundling: {
        // Bundle with the esbuild in node_modules; never fall back to Docker.
        forceDockerBundling: false,
        // Ship the AWS SDK in the bundle: a pinned version, and emulators that stub an
        // external SDK lose error details the runtime relies on.
        externalModules: [],
        format: nodejs.OutputFormat.CJS,
        minify: true,
        sourceMap: true,
      },
    });
    Validations.of(handler).acknowledge({
      id: 'Serverless-LambdaDLQ',
      reason:
        'The function is invoked synchronously by the SQS event source mapping, never asynchronously, so a Lambda dead-letter target would never receive anything. Failed messages go to the queue dead-letter queue.',
    });
    if (tracing === lambda.Tracing.ACTIVE) {
      Validations.of(role).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason:
          'Active tracing needs xray:PutTraceSegments and xray:PutTelemetryRecords, which do not support resource-level permissions. Every other statement of this role names its resources.',
      });
    } else {
      Validations.of(handler).acknowledge({
        id: 'Serverless-LambdaTracing',
        reason:
          'Tracing is opt-in through the tracing prop: per-message observability comes from the Embedded Metric Format outcome metrics and the structured logs (dedup key, correlation id), and active tracing would add X-Ray permissions on Resource::*.',
      });
    }
    return { handler, role, logGroup };
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
    if (this.inboxTable) {
      // Scoped to this consumer's own records: a shared inbox table holds other consumers' too.
      grantItemActions(
        this.handler,
        this.inboxTable,
        INBOX_TABLE_ACTIONS[this.mode],
        ownInboxRecordsCondition(this.consumerName),
      );
    }
    for (const business of props.businessTables ?? []) {
      const access = business.access ?? defaultBusinessTableAccess(this.mode);
      grantItemActions(this.handler, business.table, actionsForAccess(access));
    }
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

  private createDeadLetterQueueAlarm(deadLetterQueue: sqs.IQueue): cloudwatch.Alarm {
    return new cloudwatch.Alarm(this, 'DeadLetterQueueAlarm', {
      alarmDescription: `Messages are waiting in the dead-letter queue of consumer ${this.consumerName}: read their reason attributes, fix the cause, then redrive them.`,
      metric: deadLetterQueue.metricApproximateNumberOfMessagesVisible({
        statistic: cloudwatch.Stats.MAXIMUM,
        period: Duration.minutes(1),
      }),
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      // SQS stops publishing metrics for a queue with no activity; keep the last state
      // rather than clearing the alarm while dead letters still wait.
      treatMissingData: cloudwatch.TreatMissingData.IGNORE,
    });
  }

  private createMismatchAlarm(): cloudwatch.Alarm {
    return new cloudwatch.Alarm(this, 'MismatchAlarm', {
      alarmDescription: `Consumer ${this.consumerName} received a dedup key it had already recorded with a different payload: a producer reuses keys for different messages. The messages are in the dead-letter queue.`,
      metric: this.metricMismatch({ period: Duration.minutes(1) }),
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      // The runtime emits the metric only when a mismatch happens.
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
  }

  private createAgeAlarm(threshold: Duration): cloudwatch.Alarm {
    return new cloudwatch.Alarm(this, 'AgeOfOldestMessageAlarm', {
      alarmDescription: `The oldest message waiting for consumer ${this.consumerName} is older than ${threshold.toHumanString()}: the consumer is failing, throttled or too slow.`,
      metric: this.queue.metricApproximateAgeOfOldestMessage({
        statistic: cloudwatch.Stats.MAXIMUM,
        period: Duration.minutes(1),
      }),
      threshold: threshold.toSeconds(),
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      // No data means no activity on the queue, so no backlog.
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
  }

  private createDuplicateRateAlarm(threshold: number): cloudwatch.Alarm {
    return new cloudwatch.Alarm(this, 'DuplicateRateAlarm', {
      alarmDescription: `More than ${threshold * 100}% of the messages of consumer ${this.consumerName} were duplicates for 15 minutes: a producer retry storm, a replay, or a consumer that commits but does not acknowledge.`,
      metric: this.metricDuplicateRate(),
      threshold,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 3,
      datapointsToAlarm: 3,
      // No messages, no duplicates.
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
  }

  private createDashboard(): cloudwatch.Dashboard {
    const dashboard = new cloudwatch.Dashboard(this, 'Dashboard');
    const period = Duration.minutes(1);
    const outcomes = [
      this.metricProcessed({ period, label: 'Processed' }),
      this.metricDuplicate({ period, label: 'Duplicate' }),
      this.metricInFlight({ period, label: 'In flight' }),
      this.metricMismatch({ period, label: 'Mismatch' }),
      this.metricStale({ period, label: 'Stale' }),
      this.metricRetry({ period, label: 'Retry' }),
      this.metricPermanent({ period, label: 'Permanent' }),
      this.metricTakeover({ period, label: 'Takeover' }),
    ];
    const queueWidgets: cloudwatch.IWidget[] = [
      new cloudwatch.GraphWidget({
        title: 'Queue backlog',
        left: [
          this.queue.metricApproximateNumberOfMessagesVisible({
            period,
            statistic: cloudwatch.Stats.MAXIMUM,
          }),
        ],
        right: [
          this.queue.metricApproximateAgeOfOldestMessage({ period, statistic: cloudwatch.Stats.MAXIMUM }),
        ],
        width: 8,
      }),
    ];
    if (this.deadLetterQueue) {
      queueWidgets.push(
        new cloudwatch.GraphWidget({
          title: 'Dead-letter queue depth',
          left: [
            this.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
              period,
              statistic: cloudwatch.Stats.MAXIMUM,
            }),
          ],
          width: 8,
        }),
      );
    }
    dashboard.addWidgets(
      new cloudwatch.TextWidget({
        markdown: `# Consumer ${this.consumerName}\nMode \`${this.mode}\`, dead letters \`${this.deadLetterMode}\`, record TTL ${this.recordTtl.toHumanString()}.`,
        width: 24,
        height: 2,
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({ title: 'Outcomes', left: outcomes, width: 16, stacked: false }),
      new cloudwatch.GraphWidget({ title: 'Duplicate rate', left: [this.metricDuplicateRate()], width: 8 }),
    );
    dashboard.addWidgets(
      ...queueWidgets,
      new cloudwatch.GraphWidget({
        title: 'Function',
        left: [this.handler.metricErrors({ period }), this.handler.metricThrottles({ period })],
        right: [this.handler.metricDuration({ period, statistic: cloudwatch.Stats.p(99) })],
        width: 8,
      }),
    );
    if (this.alarms.length > 0) {
      dashboard.addWidgets(
        new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: [...this.alarms], width: 24 }),
      );
    }
    return dashboard;
  }
}

/** The timeout of a given function when it is known at synth time. */
function timeoutOf(handler: lambda.IFunction): Duration | undefined {
  if (!(handler instanceof lambda.Function)) return undefined;
  return handler.timeout ?? LAMBDA_DEFAULT_TIMEOUT;
}

/** `VISIBILITY_FACTOR × timeout + maxBatchingWindow`, the least visibility timeout allowed. */
function requiredVisibility(
  timeout: Duration | undefined,
  maxBatchingWindow: Duration | undefined,
): Duration {
  const base = timeout ?? LAMBDA_MAX_TIMEOUT;
  const seconds = base.toSeconds() * VISIBILITY_FACTOR + (maxBatchingWindow?.toSeconds() ?? 0);
  return Duration.seconds(seconds);
}

function concreteOr(duration: Duration, fallback: Duration): Duration {
  return duration.isUnresolved() ? fallback : duration;
}

function rejectSet<P extends object>(
  props: P,
  names: readonly (keyof P & string)[],
  context: string,
  fail: (message: string) => never,
): void {
  const set = names.filter((name) => props[name] !== undefined);
  if (set.length > 0) {
    fail(`Expected no ${set.map((name) => `\`${name}\``).join(', ')} ${context}`);
  }
}

function checkInteger(
  fail: (message: string) => never,
  name: string,
  value: number | undefined,
  min: number,
  max: number,
): void {
  if (value === undefined || Token.isUnresolved(value)) return;
  if (!Number.isInteger(value) || value < min || value > max) {
    fail(`Expected \`${name}\` to be an integer from ${min} to ${max}, got \`${value}\``);
  }
}

function checkDuration(
  fail: (message: string) => never,
  name: string,
  value: Duration | undefined,
  min: Duration,
  max: Duration | undefined,
): void {
  if (value === undefined || value.isUnresolved()) return;
  const seconds = value.toSeconds({ integral: false });
  if (seconds < min.toSeconds() || (max !== undefined && seconds > max.toSeconds())) {
    const range = max
      ? `from ${min.toHumanString()} to ${max.toHumanString()}`
      : `at least ${min.toHumanString()}`;
    fail(`Expected \`${name}\` to be ${range}, got \`${value.toHumanString()}\``);
  }
}
