import type { Duration, RemovalPolicy } from 'aws-cdk-lib';
import type * as events from 'aws-cdk-lib/aws-events';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { LogLevel } from '../../lambda/core/contract';

/**
 * Props of an `Outbox`: exactly one destination (`queue`, `eventBus` or `topic`), and the
 * relay's settings.
 */
export interface OutboxProps {
  /**
   * The SQS queue the relay publishes to (`sqs:SendMessage`). A FIFO queue gets the event id
   * as `MessageDeduplicationId` and the entity as `MessageGroupId`.
   *
   * @default - none: exactly one of `queue`, `eventBus`, `topic`
   */
  readonly queue?: sqs.IQueue;

  /**
   * Marks `queue` as a fair queue: a standard queue whose messages name their tenant in
   * `MessageGroupId` (`EO_OUTBOX_DESTINATION_FAIR`, given to the relay and to writers). The relay
   * sends each event's entity (else its type) as the `MessageGroupId`, and writers refuse, before
   * the commit, an event whose group id SQS would refuse (1 to 128 ASCII letters, digits and
   * punctuation). With `topic`, a standard topic whose SQS subscriptions are fair queues: the
   * relay publishes the same group id, which SNS forwards to its SQS standard subscriptions only.
   * Only with a standard `queue` or `topic`. Mark the receiving `IdempotentConsumer`
   * `fairQueue: true` too, for its per-group metrics. Left `false`, the relay sends no group id
   * to a standard queue or topic, and SQS counts every event as a tenant of its own.
   *
   * @default false
   */
  readonly fairQueue?: boolean;

  /**
   * The EventBridge bus the relay publishes to (`events:PutEvents` on that bus).
   *
   * @default - none: exactly one of `queue`, `eventBus`, `topic`
   */
  readonly eventBus?: events.IEventBus;

  /**
   * The SNS topic the relay publishes to (`sns:Publish` on that topic), standard or FIFO.
   *
   * @default - none: exactly one of `queue`, `eventBus`, `topic`
   */
  readonly topic?: sns.ITopic;

  /**
   * The `Source` of the events the relay puts on `eventBus` (`EO_OUTBOX_EVENT_SOURCE`, given to
   * the relay and to writers, which count it in an entry's size): what the bus's rules match on.
   * 1-256 characters, not starting with `aws.`. Only with `eventBus`.
   *
   * @default - the relay's name (`relayName`)
   */
  readonly eventSource?: string;

  /**
   * The relay's handler file. The default is the relay the package ships
   * (`createOutboxRelay`); pass your own to wrap it.
   *
   * @default - the package's relay handler
   */
  readonly relayEntry?: string;

  /**
   * Name of the relay, the `Consumer` dimension of its metrics (`EO_CONSUMER`).
   *
   * @default - a name unique in the app, derived from the construct path
   */
  readonly relayName?: string;

  /**
   * How long an outbox item lives before DynamoDB's TTL deletes it (`EO_OUTBOX_RETENTION_SECONDS`,
   * read by the writer). A retention shorter than the give-up horizon G plus
   * `onFailureRetention` (an on-failure record would name events the table no longer holds), or
   * than the floor 24 hours + G + 1 day, draws a warning naming the numbers.
   *
   * @default - max(24 hours + G + 1 day, G + onFailureRetention), where
   * G = min(maxRecordAge, (retryAttempts + 1) × relayTimeout): 4 days 12 hours with the defaults
   */
  readonly retention?: Duration;

  /**
   * How long the on-failure queue keeps the record of a batch the event source gave up on (60
   * seconds to 14 days). The record names a sequence number range, not the events, so the
   * derived `retention` keeps every outbox item this long after the give-up horizon: the
   * default, SQS's 4 days, outlasts a long weekend after the on-failure alarm without keeping
   * every event two weeks. The dead-letter queue keeps its messages 14 days either way.
   *
   * @default Duration.days(4)
   */
  readonly onFailureRetention?: Duration;

  /**
   * Customer-managed KMS key for the outbox table; writers and the relay are granted its use.
   *
   * @default - an AWS-managed key
   */
  readonly tableEncryptionKey?: kms.IKey;

  /**
   * Customer-managed KMS key for the on-failure and dead-letter queues the outbox creates.
   *
   * @default - SSE-SQS
   */
  readonly queueEncryptionKey?: kms.IKey;

  /**
   * Removal policy of what holds data: the outbox table and the relay's log group.
   *
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;

  /**
   * The relay function's timeout: the longest one attempt at a batch takes.
   *
   * @default Duration.seconds(30)
   */
  readonly relayTimeout?: Duration;

  /**
   * The relay function's memory, MiB (128 to 10240).
   *
   * @default 256
   */
  readonly relayMemorySize?: number;

  /**
   * Lambda runtime of the relay.
   *
   * @default lambda.Runtime.NODEJS_24_X
   */
  readonly runtime?: lambda.Runtime;

  /**
   * Instruction set architecture of the relay.
   *
   * @default lambda.Architecture.ARM_64
   */
  readonly architecture?: lambda.Architecture;

  /**
   * Retention of the relay's log group.
   *
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;

  /**
   * The relay's log level (`EO_LOG_LEVEL`).
   *
   * @default - the runtime's default (`info`)
   */
  readonly logLevel?: LogLevel;

  /**
   * X-Ray tracing of the relay.
   *
   * @default lambda.Tracing.DISABLED
   */
  readonly tracing?: lambda.Tracing;

  /**
   * Most outbox records per relay invocation (1 to 1000).
   *
   * @default 100
   */
  readonly batchSize?: number;

  /**
   * The oldest outbox record the event source delivers (60 seconds to 24 hours, the stream's
   * retention); older ones go to the on-failure destination unpublished.
   *
   * @default Duration.hours(12)
   */
  readonly maxRecordAge?: Duration;

  /**
   * How often the event source retries a failing batch (0 to 10000), bisecting it on errors.
   * The default is as many as the event source allows: `maxRecordAge` is the bound.
   *
   * @default 10000
   */
  readonly retryAttempts?: number;

  /**
   * The metric namespace of the relay's Embedded Metric Format output (`EO_METRIC_NAMESPACE`).
   *
   * @default 'EffectivelyOnce'
   */
  readonly metricNamespace?: string;

  /**
   * Whether to create the alarms: relay iterator age, event age, failed publishes, on-failure
   * destination and dead-letter queue depth.
   *
   * @default true
   */
  readonly createAlarms?: boolean;

  /**
   * Whether to create a CloudWatch dashboard with the relay's outcomes, event age, iterator age,
   * on-failure and dead-letter depths, function health and alarm status.
   *
   * @default true
   */
  readonly dashboard?: boolean;

  /**
   * Whether to create the failed-publish alarm (with `createAlarms`). It is the outbox's only
   * alarm built on metric math (the relay's `Retry` + `Permanent` + Lambda `Errors`), and some
   * local emulators' CloudFormation rejects metric-math alarms (MiniStack: "Properties.Metrics
   * (metric math) is not supported"), rolling the whole stack back. Turn it off for such a stage
   * only; the iterator-age, on-failure and dead-letter alarms stay.
   *
   * @default true
   */
  readonly failedPublishAlarm?: boolean;

  /**
   * Topic every alarm notifies.
   *
   * @default - no notification
   */
  readonly alarmTopic?: sns.ITopic;

  /**
   * The relay's `IteratorAge` that fires the iterator-age alarm (at least 60 seconds): how far
   * behind its writers the relay may fall.
   *
   * @default Duration.minutes(5)
   */
  readonly iteratorAgeThreshold?: Duration;

  /**
   * The p99 of the relay's `EventAge` over 5 minutes that fires the event-age alarm (at least 1
   * second): how long after their commit events may reach the destination. At or above
   * `maxRecordAge` it warns: no event that old is published.
   *
   * @default Duration.minutes(5)
   */
  readonly eventAgeThreshold?: Duration;
}
