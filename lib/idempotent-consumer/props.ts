/**
 * The props of an `IdempotentConsumer`, with their defaults. The values of `mode`, `deadLetterMode`
 * and `logLevel` are the shared contract's lists (`lambda/core/contract.ts`), which the runtime
 * reads back from the environment the construct sets.
 */
import type { Duration, RemovalPolicy } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { ConsumerMode, DeadLetterMode as ContractDeadLetterMode } from '../../lambda/core/contract';
import type { BusinessTable, ConsumerLogLevel } from '../consumer-wiring';
import type { ManagedInstances } from '../managed-instances';
import type { Outbox } from '../outbox/construct';

/**
 * Where a message that can never succeed (malformed, missing key, payload mismatch) goes.
 *
 * - `redrive`: the handler reports it as a batch item failure until SQS moves it to the
 *   dead-letter queue after `maxReceiveCount` receives.
 * - `direct`: the handler sends it to the dead-letter queue itself, with the reason as message
 *   attributes, and acknowledges it at once (needs `sqs:SendMessage` on the DLQ).
 */
export type DeadLetterMode = ContractDeadLetterMode;

/** The pollers of an SQS event source in provisioned mode (`IdempotentConsumerProps.provisionedPollers`). */
export interface ProvisionedPollers {
  /**
   * The fewest pollers (2-200): always running, and billed.
   *
   * @default 2
   */
  readonly minimum?: number;

  /**
   * The most pollers (2-2000), each running up to 10 concurrent invocations.
   *
   * @default 200
   */
  readonly maximum?: number;
}

/** Properties of an `IdempotentConsumer`. */
export interface IdempotentConsumerProps {
  /**
   * How the handler records processed messages. It decides which DynamoDB actions the
   * function gets; it must match the mode the handler code uses.
   *
   * | mode        | inbox table                                              | business tables |
   * |-------------|----------------------------------------------------------|-----------------|
   * | `marker`    | PutItem, GetItem, UpdateItem                             | `access`        |
   * | `atomic`    | PutItem, GetItem                                         | `access`        |
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
   * Function memory, in MiB (128-10240; with `managedInstances` at least 2048, and 2048 when not
   * set). Only with `entry`.
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
   * Runs the created function on Lambda Managed Instances: attached to this capacity provider,
   * many invocations at once in one Node.js process (the runtime keeps each invocation's batch
   * response, log lines and metrics its own; the completed-record cache is shared by the
   * process's invocations). Lambda requires Node.js 22 or later and at least 2048 MiB of memory,
   * which becomes `memorySize`'s default; a smaller `memorySize`, an older `runtime` or an
   * `architecture` the provider does not launch throws. Only with `entry`; a given `handler` is
   * attached by its owner (`capacityProvider.addFunction`).
   *
   * @default - the function runs on Lambda's default compute, one invocation per environment
   */
  readonly managedInstances?: ManagedInstances;

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
   * Turns on the runtime's completed-record cache with this many entries, 1 to 10000
   * (`EO_COMPLETED_CACHE_MAX_ENTRIES`, the handler's `completedCache.maxEntries`): a duplicate
   * of a message this execution environment completed is acknowledged with no DynamoDB request
   * (metric `CacheHit`). An inbox record deleted by hand, or deleted or overwritten by another
   * consumer process, is not seen until the entry leaves the cache.
   *
   * @default - off: every message asks the store
   */
  readonly completedCacheMaxEntries?: number;

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
   * Marks the queue as a fair queue: a standard queue whose producers set `MessageGroupId` per
   * tenant. The runtime then writes per-group `Duplicate` and `InFlight` metrics (dimensions
   * `Consumer` and `MessageGroup`, `EO_GROUP_METRICS_MAX_GROUPS`), so a tenant whose producer
   * retries in a storm shows by name. A fair queue keeps no order, and the runtime treats its
   * groups so whether or not it is marked. A FIFO queue throws.
   *
   * @default false
   */
  readonly fairQueue?: boolean;

  /**
   * With `fairQueue`: how many message groups of one execution environment get a `MessageGroup`
   * value of their own (1-1000); later groups are counted as `(other)`. Each value is two custom
   * CloudWatch metrics once counted, so this bounds the cost per execution environment.
   *
   * @default 100
   */
  readonly maxMetricGroups?: number;

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
   * Most concurrent invocations the event source starts (2-1000). Not with `provisionedPollers`
   * (AWS makes them mutually exclusive).
   *
   * @default - no limit beyond the account's concurrency
   */
  readonly maxConcurrency?: number;

  /**
   * Runs the event source in provisioned mode with dedicated pollers, from `minimum` (2-200,
   * default 2) to `maximum` (2-2000, default 200); each poller runs up to 10 concurrent
   * invocations, which the capacity planner counts (`expectedPeakMessagesPerSecond`). Provisioned
   * pollers are billed while they run, the minimum always. Not with `maxConcurrency` (AWS makes
   * them mutually exclusive).
   *
   * @default - standard mode: Lambda scales the pollers itself
   */
  readonly provisionedPollers?: ProvisionedPollers;

  /**
   * The most messages a second the queue is expected to deliver at its peak. The capacity
   * planner then computes the write rate of the inbox and business tables from the mode's write
   * units per message (entity 1, marker 2, atomic 4, two-phase 3), gives the inbox table it
   * creates a warm throughput above the 4,000 write units a second a new on-demand table absorbs,
   * and warns at synth, naming the numbers, where a given table, a FIFO message group or the
   * event source's concurrency cannot carry the rate at the mode's modelled latency. Warm
   * throughput only goes up (DynamoDB cannot lower it, and charges for raising it): keep this at
   * the highest rate deployed. See docs/capacity.md.
   *
   * @default - no planning: no warm throughput, no capacity warnings
   */
  readonly expectedPeakMessagesPerSecond?: number;

  /**
   * How many message groups of the FIFO queue the peak is spread over, evenly: the planner warns
   * when one group's share exceeds what a group carries (one message at a time). Only with
   * `expectedPeakMessagesPerSecond` on a FIFO queue.
   *
   * @default - unknown: the planner warns when the peak needs more than one group, naming how many
   */
  readonly expectedMessageGroups?: number;

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
   * The outbox the handler emits events to (`unitOfWork.emit`, `atomic` mode only): the
   * function gets `dynamodb:PutItem` on the outbox table only (no read, no delete) and the
   * outbox's writer environment (`EO_OUTBOX_TABLE_NAME`, `EO_OUTBOX_RETENTION_SECONDS`,
   * `EO_OUTBOX_DESTINATION_KIND`, `EO_OUTBOX_DESTINATION_FIFO`, `EO_OUTBOX_DESTINATION_FAIR`).
   *
   * @default - no outbox
   */
  readonly outbox?: Outbox;

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
