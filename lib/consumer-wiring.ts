/**
 * What both consumer constructs (`IdempotentConsumer`, `IdempotentStreamConsumer`) give the
 * function they wire, in one place: the `EO_` environment of the contract, built from the
 * construct's resolved settings, and the grants on the inbox, business and outbox tables; and
 * what a transport resolves from its props for `ConsumerBase` to wire (`ConsumerWiring`). The
 * transport's own grants (the queue, the on-failure destination) stay with each construct.
 */
import { type Acknowledgment, type Duration, Tokenization } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { type ConsumerMode, type DeadLetterMode, ENV, type LogLevel } from '../lambda/core/contract';
import {
  actionsForAccess,
  type BusinessTableAccess,
  defaultBusinessTableAccess,
  grantItemActions,
  INBOX_TABLE_ACTIONS,
  ownInboxRecordsCondition,
} from './consumer-permissions';
import type { PropsValidation } from './consumer-validation';
import type { Outbox } from './outbox/construct';

/** Log levels the runtime understands (`EO_LOG_LEVEL`): the contract's `LOG_LEVELS`. */
export type ConsumerLogLevel = LogLevel;

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

/** A construct's resolved settings that the runtime reads from the `EO_` environment. */
export interface ConsumerEnvironmentSettings {
  /** The mode the function is granted for (`EO_MODE`): a handler of another mode fails its cold start. */
  readonly mode: ConsumerMode;
  readonly consumerName: string;
  readonly recordTtl: Duration;
  readonly deadLetterMode: DeadLetterMode;
  /** Set only when the runtime sends dead letters itself (`direct`). */
  readonly deadLetterQueueUrl?: string;
  /** The largest message the dead-letter queue accepts, set only when the construct created it. */
  readonly deadLetterMaxMessageBytes?: number;
  readonly lease: Duration;
  readonly metricNamespace: string;
  readonly inboxTable?: dynamodb.ITable;
  readonly logLevel?: LogLevel;
  readonly completedCacheMaxEntries?: number;
  /** A fair queue's per-group metrics (`EO_GROUP_METRICS_MAX_GROUPS`). */
  readonly groupMetricsMaxGroups?: number;
  /** The outbox the handler emits to: its writer environment is added. */
  readonly outbox?: Outbox;
}

/** The `EO_` environment of the contract for `settings`: what the handler's options default to. */
export function consumerEnvironment(settings: ConsumerEnvironmentSettings): Record<string, string> {
  const environment: Record<string, string> = {
    [ENV.consumer]: settings.consumerName,
    [ENV.mode]: settings.mode,
    [ENV.ttlSeconds]: String(settings.recordTtl.toSeconds()),
    [ENV.deadLetterMode]: settings.deadLetterMode,
    [ENV.leaseMillis]: String(settings.lease.toMilliseconds()),
    [ENV.metricNamespace]: settings.metricNamespace,
  };
  if (settings.deadLetterQueueUrl !== undefined) {
    environment[ENV.deadLetterQueueUrl] = settings.deadLetterQueueUrl;
  }
  if (settings.deadLetterMaxMessageBytes !== undefined) {
    environment[ENV.deadLetterMaxMessageBytes] = Tokenization.stringifyNumber(
      settings.deadLetterMaxMessageBytes,
    );
  }
  if (settings.inboxTable) environment[ENV.inboxTable] = settings.inboxTable.tableName;
  if (settings.logLevel) environment[ENV.logLevel] = settings.logLevel;
  if (settings.groupMetricsMaxGroups !== undefined) {
    environment[ENV.groupMetricsMaxGroups] = Tokenization.stringifyNumber(settings.groupMetricsMaxGroups);
  }
  if (settings.completedCacheMaxEntries !== undefined) {
    environment[ENV.completedCacheMaxEntries] = Tokenization.stringifyNumber(
      settings.completedCacheMaxEntries,
    );
  }
  // The outbox the handler emits to: its table name, retention and destination.
  if (settings.outbox) Object.assign(environment, settings.outbox.writerEnvironment);
  return environment;
}

/** The tables a consumer's function works on, and how. */
export interface ConsumerTableGrants {
  readonly mode: ConsumerMode;
  readonly consumerName: string;
  /** The inbox table the function gets its mode's actions on (none in `entity` mode). */
  readonly inboxTable?: dynamodb.ITable;
  readonly businessTables?: readonly BusinessTable[];
  readonly outbox?: Outbox;
}

/**
 * Grants `grantee` exactly what its mode needs on the tables: the mode's inbox actions on the
 * consumer's own records only, each business table's access (by default the mode's), and a
 * put of new items on the outbox table (emitting writes outbox items in the transaction).
 */
export function grantConsumerTables(grantee: iam.IGrantable, tables: ConsumerTableGrants): void {
  tables.outbox?.grantWrite(grantee);
  if (tables.inboxTable) {
    // Scoped to this consumer's own records: a shared inbox table holds other consumers' too.
    grantItemActions(
      grantee,
      tables.inboxTable,
      INBOX_TABLE_ACTIONS[tables.mode],
      ownInboxRecordsCondition(tables.consumerName),
    );
  }
  for (const business of tables.businessTables ?? []) {
    const access = business.access ?? defaultBusinessTableAccess(tables.mode);
    grantItemActions(grantee, business.table, actionsForAccess(access));
  }
}

/** A queue where failures end, as `ConsumerBase` creates it: encrypted, SSL-only, with no redrive policy. */
export interface TerminalQueueOptions {
  /**
   * Physical name of the queue; a FIFO queue's name ends in `.fifo`.
   *
   * @default - a name generated by CloudFormation
   */
  readonly queueName?: string;

  /**
   * Whether the queue is FIFO.
   *
   * @default false
   */
  readonly fifo?: boolean;

  /** How long the queue keeps a message. */
  readonly retentionPeriod: Duration;

  /**
   * The largest message the queue accepts, in bytes (1,024 to 1,048,576).
   *
   * @default - SQS's largest, 1,048,576 bytes, for the dead-letter queue `ConsumerBase` creates;
   * otherwise not set (SQS's default)
   */
  readonly maxMessageSizeBytes?: number;

  /**
   * Customer-managed KMS key of the queue.
   *
   * @default - SQS-managed encryption (SSE-SQS)
   */
  readonly encryptionKey?: kms.IKey;

  /** The cdk-nag findings the queue acknowledges, each with its reason. */
  readonly acknowledgments: readonly Acknowledgment[];
}

/** Permission to read the source the event source mapping reads with the function's role. */
export interface SourceReadAccess {
  /** The actions the event source mapping calls. */
  readonly actions: readonly string[];

  /** The source's ARN, the only resource the actions are granted on. */
  readonly resourceArn: string;

  /**
   * The customer-managed key the source is encrypted with.
   *
   * @default - none: no KMS permission is granted
   */
  readonly encryptionKey?: kms.IKey;

  /**
   * The KMS actions granted on `encryptionKey`.
   *
   * @default - none
   */
  readonly encryptionKeyActions?: readonly string[];
}

/**
 * What a transport construct resolves from its own props, before anything is created, and
 * hands to `ConsumerBase`: the checks' findings, the durations it derived, the dead-letter
 * queue, the function to wire and the source's read permission.
 */
export interface ConsumerWiring {
  /** The construct's class name, named in the error that invalid props throw. */
  readonly constructName: string;

  /** Every failure and note the transport's checks found; failures throw before anything is created. */
  readonly validation: PropsValidation;

  /** The record TTL the runtime applies (`EO_TTL_SECONDS`). */
  readonly recordTtl: Duration;

  /** The two-phase lease (`EO_LEASE_MILLIS`). */
  readonly lease: Duration;

  /** How permanent failures reach the dead-letter queue (`EO_DEAD_LETTER_MODE`). */
  readonly deadLetterMode: DeadLetterMode;

  /**
   * The dead-letter queue given, or known for a given source.
   *
   * @default - the one `newDeadLetterQueue` describes, else none
   */
  readonly deadLetterQueue?: sqs.IQueue;

  /**
   * The dead-letter queue to create (`DeadLetterQueue`) when `deadLetterQueue` is not set.
   *
   * @default - none is created
   */
  readonly newDeadLetterQueue?: TerminalQueueOptions;

  /**
   * An existing function to wire instead of creating one from `entry`.
   *
   * @default - a function is created from `entry`
   */
  readonly handler?: lambda.IFunction;

  /**
   * Why the created function needs no Lambda dead-letter target (the reason of the
   * `Serverless-LambdaDLQ` acknowledgment): what invokes it, and where failed messages go.
   */
  readonly lambdaDeadLetterReason: string;

  /**
   * The warm throughput of the inbox table the construct creates (the capacity planner's).
   *
   * @default - none
   */
  readonly inboxWarmThroughput?: dynamodb.WarmThroughput;

  /**
   * How many message groups get per-group metrics (`EO_GROUP_METRICS_MAX_GROUPS`): a fair
   * queue's.
   *
   * @default - no per-group metrics
   */
  readonly groupMetricsMaxGroups?: number;

  /**
   * Permission to read the source, granted before any other, when the event source mapping
   * reads it with the function's role and grants nothing itself.
   *
   * @default - none: the event source grants its own access
   */
  readonly sourceReadAccess?: SourceReadAccess;
}
