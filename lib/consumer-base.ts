/**
 * `ConsumerBase`, what both consumer constructs are built on, and the props it reads. What a
 * transport resolves for it (`ConsumerWiring`) is in `./consumer-wiring.ts`.
 */
import { Annotations, type Duration, Names, RemovalPolicy, Validations } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import {
  type ConsumerMode,
  DEFAULT_METRIC_NAMESPACE,
  type DeadLetterMode,
  METRICS,
} from '../lambda/core/contract';
import {
  DEAD_LETTER_MAX_MESSAGE_BYTES,
  DEFAULT_MEMORY_SIZE,
  DEFAULT_TIMEOUT,
  WARNING_PREFIX,
} from './consumer-defaults';
import { createConsumerFunction } from './consumer-function';
import { consumerMetric, duplicateRate } from './consumer-monitoring';
import { QUEUE_KEY_SEND_ACTIONS } from './consumer-permissions';
import { assertNoFailures } from './consumer-validation';
import {
  type ConsumerWiring,
  consumerEnvironment,
  grantConsumerTables,
  type SourceReadAccess,
  type TerminalQueueOptions,
} from './consumer-wiring';
import type { IdempotentConsumerProps } from './idempotent-consumer/props';
import { InboxTable } from './inbox-table';
import { MANAGED_INSTANCES_MIN_MEMORY_SIZE } from './managed-instances';

/**
 * The props every consumer construct has, whatever its transport, and which `ConsumerBase`
 * wires: the mode and consumer name, the created function's settings, the inbox, business and
 * outbox tables, and the runtime's log level, completed-record cache and metric namespace. Each
 * transport's props declare them with what they mean for that transport
 * (`IdempotentConsumerProps`, `IdempotentStreamConsumerProps`); the types are the SQS
 * consumer's, which every transport's props must match.
 */
export type ConsumerBaseProps = Pick<
  IdempotentConsumerProps,
  | 'mode'
  | 'consumerName'
  | 'entry'
  | 'memorySize'
  | 'timeout'
  | 'runtime'
  | 'architecture'
  | 'environment'
  | 'logRetention'
  | 'tracing'
  | 'logLevel'
  | 'completedCacheMaxEntries'
  | 'table'
  | 'tableEncryptionKey'
  | 'removalPolicy'
  | 'businessTables'
  | 'outbox'
  | 'metricNamespace'
  | 'managedInstances'
>;

/**
 * What every consumer construct shares, whatever its transport: the consumer's identity (mode,
 * name, record TTL, lease, metric namespace), the dead-letter queue, the inbox table, the function
 * with the `EO_` environment of the contract, the grants (the source, the tables, the dead-letter
 * queue), and the outcome metrics of the runtime's Embedded Metric Format output.
 *
 * A transport construct (`IdempotentConsumer`, `IdempotentStreamConsumer`) checks its own props,
 * resolves what this base needs into a `ConsumerWiring`, and then adds what only it has: its
 * event source, its own grants, its alarms and its dashboard.
 */
export abstract class ConsumerBase extends Construct implements iam.IGrantable {
  /** The consumer name that scopes every dedup key. */
  public readonly consumerName: string;
  /** The consumer mode. */
  public readonly mode: ConsumerMode;
  /** How permanent failures reach the dead-letter queue. */
  public readonly deadLetterMode: DeadLetterMode;
  /** The record TTL the runtime applies. */
  public readonly recordTtl: Duration;
  /** The two-phase lease. */
  public readonly lease: Duration;
  /** The metric namespace. */
  public readonly metricNamespace: string;
  /** The `EO_` environment variables the construct gives the function. */
  public readonly environment: Readonly<Record<string, string>>;
  /** The dead-letter queue, when one is created or known. */
  public readonly deadLetterQueue?: sqs.IQueue;
  /** The inbox table (in `entity` mode only a given one, with no permissions on it). */
  public readonly inboxTable?: dynamodb.ITable;
  /** The function (created from `entry`, or the given one). */
  public readonly handler: lambda.IFunction;
  /** The role the construct created for the function (undefined with a given function). */
  public readonly role?: iam.IRole;
  /** The function's log group (undefined with a given function). */
  public readonly logGroup?: logs.ILogGroup;

  /** The principal that holds the function's permissions. */
  public get grantPrincipal(): iam.IPrincipal {
    return this.handler.grantPrincipal;
  }

  /**
   * Checks the transport's findings (every failure throws at once, before anything is created),
   * then creates the dead-letter queue, the inbox table and the function, and grants it the
   * source, the tables and the dead-letter queue.
   */
  protected constructor(scope: Construct, id: string, props: ConsumerBaseProps, wiring: ConsumerWiring) {
    super(scope, id);
    assertNoFailures(this.node.path, wiring.constructName, wiring.validation.failures);
    for (const note of wiring.validation.notes) {
      if (note.kind === 'warning') Annotations.of(this).addWarningV2(note.id, note.message);
      else Annotations.of(this).addInfo(note.message);
    }

    this.mode = props.mode;
    this.deadLetterMode = wiring.deadLetterMode;
    this.metricNamespace = props.metricNamespace ?? DEFAULT_METRIC_NAMESPACE;
    this.consumerName =
      props.consumerName ??
      Names.uniqueResourceName(this, { maxLength: 100, separator: '-', allowedSpecialCharacters: '-._:' });
    this.recordTtl = wiring.recordTtl;
    this.lease = wiring.lease;

    // The runtime is told the size of a dead-letter queue the construct creates, set explicitly
    // (SQS's largest by default); a given queue's size is its owner's and stays unknown.
    const created = wiring.deadLetterQueue ? undefined : wiring.newDeadLetterQueue;
    const deadLetterMaxMessageBytes =
      created && (created.maxMessageSizeBytes ?? DEAD_LETTER_MAX_MESSAGE_BYTES);
    this.deadLetterQueue =
      wiring.deadLetterQueue ??
      (created &&
        createTerminalQueue(this, 'DeadLetterQueue', {
          ...created,
          maxMessageSizeBytes: deadLetterMaxMessageBytes,
        }));
    this.inboxTable = props.table ?? this.createInboxTable(props, wiring.inboxWarmThroughput);

    // The runtime sends dead letters itself only in `direct` mode.
    const sendsDeadLetters = this.deadLetterMode === 'direct' && this.deadLetterQueue !== undefined;
    const environment = consumerEnvironment({
      mode: this.mode,
      consumerName: this.consumerName,
      recordTtl: this.recordTtl,
      deadLetterMode: this.deadLetterMode,
      deadLetterQueueUrl: sendsDeadLetters ? this.deadLetterQueue?.queueUrl : undefined,
      deadLetterMaxMessageBytes: sendsDeadLetters ? deadLetterMaxMessageBytes : undefined,
      lease: this.lease,
      metricNamespace: this.metricNamespace,
      inboxTable: this.inboxTable,
      logLevel: props.logLevel,
      completedCacheMaxEntries: props.completedCacheMaxEntries,
      groupMetricsMaxGroups: wiring.groupMetricsMaxGroups,
      outbox: props.outbox,
    });
    this.environment = Object.freeze(environment);

    if (wiring.handler) {
      this.handler = wiring.handler;
      this.applyEnvironment(wiring.handler, environment);
    } else {
      const created = createConsumerFunction(this, {
        entry: props.entry as string,
        mode: this.mode,
        runtime: props.runtime,
        architecture: props.architecture,
        memorySize:
          props.memorySize ??
          (props.managedInstances ? MANAGED_INSTANCES_MIN_MEMORY_SIZE : DEFAULT_MEMORY_SIZE),
        timeout: props.timeout ?? DEFAULT_TIMEOUT,
        environment: props.environment,
        contractEnvironment: environment,
        logRetention: props.logRetention,
        removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
        tracing: props.tracing,
        lambdaDeadLetterReason: wiring.lambdaDeadLetterReason,
        managedInstances: props.managedInstances,
      });
      this.handler = created.handler;
      this.role = created.role;
      this.logGroup = created.logGroup;
    }

    this.grantAccess(props, wiring.sourceReadAccess);
  }

  /** A metric of the runtime's Embedded Metric Format output for this consumer (Sum over 5 minutes). */
  public metric(metricName: string, props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return consumerMetric(this, metricName, props);
  }

  /** Messages processed for the first time. */
  public metricProcessed(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.metric(METRICS.processed, props);
  }

  /** Messages acknowledged as duplicates of a completed record (redeliveries, replays, producer retries). */
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

  /**
   * Messages reported as batch item failures to be retried (a queue delivers them again; a
   * stream's event source resumes from their checkpoint).
   */
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
  public metricDuplicateRate(props?: cloudwatch.MathExpressionOptions): cloudwatch.MathExpression {
    return duplicateRate(this, props);
  }

  /** The inbox table the construct creates when none is given: none in `entity` mode. */
  private createInboxTable(
    props: ConsumerBaseProps,
    warmThroughput: dynamodb.WarmThroughput | undefined,
  ): dynamodb.ITable | undefined {
    if (this.mode === 'entity') return undefined;
    return new InboxTable(this, 'Inbox', {
      encryptionKey: props.tableEncryptionKey,
      removalPolicy: props.removalPolicy,
      warmThroughput,
    }).table;
  }

  /** Sets the environment on a given function, or says which variables it needs when it cannot. */
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

  /**
   * Grants, in this order: reading the source (with the actions its event source mapping calls,
   * on its ARN only), what the mode needs on the tables, and sending to the dead-letter queue
   * when the runtime sends dead letters itself (`direct`).
   */
  private grantAccess(props: ConsumerBaseProps, source: SourceReadAccess | undefined): void {
    if (source) {
      iam.Grant.addToPrincipal({
        grantee: this.handler,
        actions: [...source.actions],
        resourceArns: [source.resourceArn],
      });
      source.encryptionKey?.grant(this.handler, ...(source.encryptionKeyActions ?? []));
    }
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
}

/**
 * Creates, in `scope`, a queue where failures end: encrypted (the given key, else SSE-SQS),
 * SSL-only, with no redrive policy of its own, acknowledging the given cdk-nag findings.
 */
export function createTerminalQueue(scope: Construct, id: string, options: TerminalQueueOptions): sqs.Queue {
  const queue = new sqs.Queue(scope, id, {
    queueName: options.queueName,
    fifo: options.fifo || undefined,
    retentionPeriod: options.retentionPeriod,
    maxMessageSizeBytes: options.maxMessageSizeBytes,
    encryption: options.encryptionKey ? sqs.QueueEncryption.KMS : sqs.QueueEncryption.SQS_MANAGED,
    encryptionMasterKey: options.encryptionKey,
    enforceSSL: true,
  });
  for (const acknowledgment of options.acknowledgments) Validations.of(queue).acknowledge(acknowledgment);
  return queue;
}
