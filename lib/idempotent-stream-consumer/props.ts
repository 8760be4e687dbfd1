/**
 * The props of an `IdempotentStreamConsumer`, with their defaults. Mode, consumer name, table,
 * TTL, lease, namespace and log level reach the runtime through the same `EO_*` environment as
 * the SQS construct's (`lambda/core/contract.ts`).
 */
import type { Duration, RemovalPolicy } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as kinesis from 'aws-cdk-lib/aws-kinesis';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { ConsumerMode } from '../../lambda/core/contract';
import type { BusinessTable, ConsumerLogLevel } from '../consumer-wiring';
import type { ManagedInstances } from '../managed-instances';
import type { Outbox } from '../outbox/construct';

/** Properties of an `IdempotentStreamConsumer`. */
export interface IdempotentStreamConsumerProps {
  /**
   * How the handler records processed records. It decides which DynamoDB actions the function
   * gets, exactly as for `IdempotentConsumer`; it must match the mode the handler code uses.
   */
  readonly mode: ConsumerMode;

  /**
   * Path to the handler's TypeScript or JavaScript entry file. The construct bundles it with
   * the local esbuild (never Docker), the AWS SDK included, as minified CommonJS with a source
   * map.
   */
  readonly entry: string;

  /**
   * The Kinesis data stream to consume. Exactly one of `stream`, `sourceTable` and `kafka`.
   *
   * @default - no Kinesis stream; `sourceTable` must be set
   */
  readonly stream?: kinesis.IStream;

  /**
   * The DynamoDB table whose stream to consume (`tableStreamArn` must be set: create the table
   * with `stream`, for example `dynamodb.StreamViewType.NEW_AND_OLD_IMAGES`). Exactly one of
   * `stream`, `sourceTable` and `kafka`.
   *
   * @default - no DynamoDB table; `stream` must be set
   */
  readonly sourceTable?: dynamodb.ITable;

  /**
   * A Kafka topic to consume, on an Amazon MSK cluster or a self-managed Apache Kafka cluster
   * (the handler is `createKafkaHandler`, from `effectively-once/kafka`). Exactly one of
   * `stream`, `sourceTable` and `kafka`.
   *
   * @default - no Kafka topic; `stream` or `sourceTable` must be set
   */
  readonly kafka?: KafkaTopicSource;

  /**
   * Name that scopes every dedup key of this consumer (`EO_CONSUMER`), so consumers sharing an
   * inbox table never suppress each other. 1-100 characters of `A-Z a-z 0-9 . _ : -`. Set it
   * explicitly so that moving the construct in the tree cannot change it.
   *
   * @default - derived from the stack name and construct path, with a hash suffix
   */
  readonly consumerName?: string;

  /**
   * Function memory, in MiB (128-10240; with `managedInstances` at least 2048, and 2048 when not
   * set).
   *
   * @default 256
   */
  readonly memorySize?: number;

  /**
   * Function timeout (at most 15 minutes), longer than the runtime's default deadline margin
   * (2 seconds).
   *
   * @default Duration.seconds(30)
   */
  readonly timeout?: Duration;

  /**
   * Function runtime.
   *
   * @default lambda.Runtime.NODEJS_24_X
   */
  readonly runtime?: lambda.Runtime;

  /**
   * Function architecture.
   *
   * @default lambda.Architecture.ARM_64
   */
  readonly architecture?: lambda.Architecture;

  /**
   * Extra environment variables for the function. The `EO_` variables of the contract are set
   * from this construct's props; setting one here throws.
   *
   * @default - only the `EO_` variables (and `NODE_OPTIONS=--enable-source-maps`)
   */
  readonly environment?: Record<string, string>;

  /**
   * Retention of the function's log group.
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
   * (`EO_COMPLETED_CACHE_MAX_ENTRIES`), as for `IdempotentConsumer`: a record this execution
   * environment completed, replayed from a checkpoint or after a bisect, is acknowledged with no
   * DynamoDB request (metric `CacheHit`).
   *
   * @default - off: every record asks the store
   */
  readonly completedCacheMaxEntries?: number;

  /**
   * Runs the created function on Lambda Managed Instances: attached to this capacity provider,
   * many invocations at once in one Node.js process (each invocation's batch response, log lines
   * and metrics stay its own). Lambda requires Node.js 22 or later and at least 2048 MiB of
   * memory, which becomes `memorySize`'s default; a smaller `memorySize`, an older `runtime` or
   * an `architecture` the provider does not launch throws.
   *
   * @default - the function runs on Lambda's default compute, one invocation per environment
   */
  readonly managedInstances?: ManagedInstances;

  /**
   * X-Ray tracing. Active tracing grants `xray:PutTraceSegments` and
   * `xray:PutTelemetryRecords` on `*` (X-Ray has no resource-level permissions).
   *
   * @default lambda.Tracing.DISABLED
   */
  readonly tracing?: lambda.Tracing;

  /**
   * Where the event source starts reading a shard it has no checkpoint for. `TRIM_HORIZON`
   * reads every record the stream still holds, so nothing written before the mapping exists is
   * skipped (the inbox acknowledges records processed before as duplicates). `AT_TIMESTAMP`
   * needs `startingPositionTimestamp` and a Kinesis `stream`.
   *
   * @default lambda.StartingPosition.TRIM_HORIZON
   */
  readonly startingPosition?: lambda.StartingPosition;

  /**
   * With `startingPosition: AT_TIMESTAMP`: the time to start reading from, Unix seconds.
   *
   * @default - none
   */
  readonly startingPositionTimestamp?: number;

  /**
   * Records per invocation (1-10000).
   *
   * @default 100
   */
  readonly batchSize?: number;

  /**
   * How long to gather records before invoking (at most 5 minutes).
   *
   * @default - no batching window
   */
  readonly maxBatchingWindow?: Duration;

  /**
   * Batches processed from each shard at once (1-10). Records with the same partition key (for
   * a DynamoDB table, the same item) are still processed in order. Not for a Kafka source (a
   * partition is processed one batch at a time).
   *
   * @default 1
   */
  readonly parallelizationFactor?: number;

  /**
   * The most records a second the source is expected to deliver at its peak. The capacity
   * planner then computes the write rate of the inbox and business tables from the mode's write
   * units per message (entity 1, marker 2, atomic 4, two-phase 3), gives the inbox table it
   * creates a warm throughput above the 4,000 write units a second a new on-demand table absorbs,
   * and warns at synth, naming the numbers, where a given table cannot take the rate, or where a
   * Kinesis stream of this app has too few shards × `parallelizationFactor` to carry it (a
   * shard's records run one at a time, at the mode's modelled latency; a DynamoDB stream's
   * shards and a Kafka topic's partitions are not known at synth time, so an info note names the
   * concurrency needed instead). Warm throughput only goes up: keep this at the highest rate
   * deployed. See docs/capacity.md.
   *
   * @default - no planning: no warm throughput, no capacity warnings
   */
  readonly expectedPeakMessagesPerSecond?: number;

  /**
   * Whether the event source splits a batch in two and retries each half when the function
   * fails (throws or times out), so a record that crashes the function is isolated and the
   * records around it proceed. A retryable outcome is reported as a batch item failure with its
   * sequence number instead, and the event source resumes from that checkpoint.
   *
   * @default true
   */
  readonly bisectBatchOnError?: boolean;

  /**
   * Retries of a failed batch before the event source sends it to the on-failure destination
   * and moves on (0-10000). Permanent failures never retry (the runtime dead-letters them with
   * their reason), so only transient ones (throttling, conflicts, a live lease held elsewhere)
   * reach this limit; the default lets `maxRecordAge` bound how long a shard can be held up.
   *
   * @default 10000
   */
  readonly retryAttempts?: number;

  /**
   * The oldest record the event source delivers (60 seconds to 7 days); an older one goes to
   * the on-failure destination with its batch. Below the stream's retention, so an operator
   * can still re-read the range an on-failure record names; at or above it draws a warning.
   *
   * @default - half the stream's retention, at most 7 days: 12 hours for DynamoDB Streams and
   * for a Kinesis stream with the default 24-hour retention (or an unknown one)
   */
  readonly maxRecordAge?: Duration;

  /**
   * An existing queue to receive the event source's on-failure records (the shard and sequence
   * number range of each batch it gave up on, never the records' data). Not with
   * `onFailureTopic`.
   *
   * @default - an encrypted, SSL-only queue is created, keeping messages 14 days
   */
  readonly onFailureQueue?: sqs.IQueue;

  /**
   * An SNS topic to receive the event source's on-failure records instead of a queue. Not with
   * `onFailureQueue`.
   *
   * @default - none; an on-failure queue is used
   */
  readonly onFailureTopic?: sns.ITopic;

  /**
   * An existing queue for the runtime's permanent failures (malformed record, missing key, same
   * key with a different payload): the handler sends each there with its reason as message
   * attributes (`EO_DEAD_LETTER_MODE=direct`, `EO_DEAD_LETTER_QUEUE_URL`) and moves on.
   *
   * @default - an encrypted, SSL-only queue is created, keeping messages 14 days
   */
  readonly deadLetterQueue?: sqs.IQueue;

  /**
   * Customer-managed KMS key for the queues the construct creates (on-failure and
   * dead-letter). The function gets `kms:GenerateDataKey` and `kms:Decrypt` to send to them.
   *
   * @default - SQS-managed encryption (SSE-SQS)
   */
  readonly queueEncryptionKey?: kms.IKey;

  /**
   * An existing inbox table, so several consumers can share one (see `InboxTable`).
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
   * Business tables the handler writes, with explicit access, as for `IdempotentConsumer`.
   * `entity` mode needs at least one table with `write` access.
   *
   * @default - none
   */
  readonly businessTables?: readonly BusinessTable[];

  /**
   * The outbox the handler emits events to (`unitOfWork.emit`, `atomic` mode only), as for
   * `IdempotentConsumer`: `dynamodb:PutItem` on the outbox table only and the outbox's writer
   * environment. An event's id derives from the record's scoped dedup key, so a record read
   * again from its checkpoint, or replayed, never mints a second identity.
   *
   * @default - no outbox
   */
  readonly outbox?: Outbox;

  /**
   * How long an inbox record lives (`EO_TTL_SECONDS`). The default covers every way a copy of a
   * record can arrive: min(stream retention, `maxRecordAge`) + the longer of `replayAllowance`
   * and 3 × `producerRetryHorizon`, plus one day. With the defaults (24-hour retention, 12-hour
   * `maxRecordAge`) that is 12 hours + max(12 hours, 3 hours) + 1 day = 2 days. An unknown
   * Kinesis retention (an imported stream, or a token) is taken as 365 days, the Kinesis
   * maximum. Shorter than that window draws a warning; in `two-phase` mode it must be longer
   * than the `lease`.
   *
   * @default - derived from the stream and event source settings as described above
   */
  readonly recordTtl?: Duration;

  /**
   * How long producers keep writing the same record again (a retried `PutRecords` writes a new
   * record with the same data). The default record TTL covers three times this.
   *
   * @default Duration.hours(1)
   */
  readonly producerRetryHorizon?: Duration;

  /**
   * How long after the event source gives up on a record (past `maxRecordAge`, or out of
   * retries) it can still be replayed, for example by re-reading the range an on-failure record
   * names, or from an archive. The default record TTL covers min(stream retention,
   * `maxRecordAge`) + this.
   *
   * @default - until the record leaves the stream: the stream's retention - min(retention, `maxRecordAge`)
   */
  readonly replayAllowance?: Duration;

  /**
   * Two-phase mode: how long an in-progress claim stays valid before another delivery may take
   * it over (`EO_LEASE_MILLIS`). Shorter than the function timeout warns; at least as long as
   * `recordTtl` throws. A retry that meets a live lease is reported from its checkpoint again,
   * and each such retry counts against `retryAttempts`.
   *
   * @default - the function timeout
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
   * Whether to create the alarms (iterator age, function errors, on-failure destination,
   * dead letters, payload mismatches).
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
   * Lambda's `IteratorAge` (the age of the last record of each batch when the function received
   * it; maximum over a minute) that raises the iterator-age alarm: the consumer falls behind its
   * stream.
   * At or above `maxRecordAge` draws a warning, since records are then given up on before it
   * fires.
   *
   * @default Duration.minutes(15)
   */
  readonly iteratorAgeThreshold?: Duration;

  /**
   * With a Kafka source (which has no `IteratorAge`): Lambda's `OffsetLag` (records written to
   * the topic and not yet processed by the consumer group; maximum over a minute) that raises the
   * offset-lag alarm.
   *
   * @default 10000
   */
  readonly offsetLagThreshold?: number;

  /**
   * Whether to create a CloudWatch dashboard with every outcome metric, the iterator age, the
   * on-failure and dead-letter depths and the function's health.
   *
   * @default true
   */
  readonly dashboard?: boolean;
}

/** How a self-managed Kafka cluster authenticates the event source with its `secret`. */
export type KafkaAuthentication =
  | 'SASL_SCRAM_512_AUTH'
  | 'SASL_SCRAM_256_AUTH'
  | 'BASIC_AUTH'
  | 'CLIENT_CERTIFICATE_TLS_AUTH';

/**
 * A Kafka topic an `IdempotentStreamConsumer` consumes. The event source mapping runs in
 * provisioned mode (Kafka's partial batch responses, bisection, retries, record age and
 * on-failure destination need it), reports the offset each partition resumes from, and joins
 * the consumer group `consumerGroupId`.
 */
export interface KafkaTopicSource {
  /** The topic (1 to 249 characters of `A-Z a-z 0-9 . _ -`). */
  readonly topic: string;

  /**
   * Amazon MSK: the cluster's ARN. Exactly one of `clusterArn` and `bootstrapServers`.
   *
   * @default - none; `bootstrapServers` must be set
   */
  readonly clusterArn?: string;

  /**
   * A self-managed Apache Kafka cluster: its brokers, `host:port` each. Exactly one of
   * `clusterArn` and `bootstrapServers`.
   *
   * @default - none; `clusterArn` must be set
   */
  readonly bootstrapServers?: readonly string[];

  /**
   * The consumer group the event source joins (1 to 200 characters of `A-Z a-z 0-9 - / * : _ + = . @`).
   *
   * @default - the consumer name
   */
  readonly consumerGroupId?: string;

  /**
   * The Secrets Manager secret the event source authenticates with: SASL/SCRAM-512 credentials
   * on MSK; on a self-managed cluster, the credentials or certificate `authentication` names.
   * The function's role may read it (`secretsmanager:GetSecretValue`, and its key's decrypt).
   *
   * @default - on MSK, IAM access control: the role gets `kafka-cluster:Connect` on the cluster,
   * `DescribeTopic` and `ReadData` on the topic, `DescribeGroup` and `AlterGroup` on the group;
   * on a self-managed cluster, no authentication
   */
  readonly secret?: secretsmanager.ISecret;

  /**
   * How a self-managed cluster authenticates with `secret`.
   *
   * @default 'SASL_SCRAM_512_AUTH'
   */
  readonly authentication?: KafkaAuthentication;

  /**
   * A self-managed cluster in a VPC: the subnets the event source connects from. With
   * `securityGroupIds`, both or neither.
   *
   * @default - the cluster is reached over the internet
   */
  readonly vpcSubnetIds?: readonly string[];

  /**
   * A self-managed cluster in a VPC: the security groups of the event source's network interfaces.
   *
   * @default - the cluster is reached over the internet
   */
  readonly securityGroupIds?: readonly string[];

  /**
   * How long the topic keeps records (its `retention.ms`): the default `maxRecordAge` is half of
   * it, and the record TTL covers a re-read of the whole topic.
   *
   * @default Duration.days(7) (Kafka's default `log.retention.hours`, 168)
   */
  readonly retention?: Duration;

  /**
   * The event source's pollers in provisioned mode, from `minimum` to `maximum` (1 to 2,000 each).
   *
   * @default - 1 to 200 (AWS's defaults)
   */
  readonly provisionedPollers?: {
    /** The fewest pollers. */
    readonly minimum?: number;
    /** The most pollers. */
    readonly maximum?: number;
  };
}
