/**
 * The construct's contract as defaults of a handler's options: what `IdempotentConsumer` set
 * in the `EO_*` variables fills every option the caller left out, and the SDK clients the
 * handler needs are created once per cold start (module scope), not once per handler. The
 * environment is passed in; `createSqsHandler` passes `process.env` unless given another.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { CompletedCacheOptions } from './core/completed-cache';
import { assertAgreesWithConstruct, type Environment, readConstructSettings } from './core/environment';
import type { GroupMetricsOptions } from './core/group-metrics';
import type { LogLevel } from './core/logger';
import type { ModeDefaults } from './core/mode';
import type { DeadLetterMode, DeadLetterSender } from './dead-letter/dead-letter-message';
import { createSqsDeadLetterSender } from './dead-letter/sqs-dead-letter-sender';

let documentClient: DynamoDBDocumentClient | undefined;
let sqsClient: SQSClient | undefined;
const deadLetterSenders = new Map<string, DeadLetterSender>();

/**
 * The default document client: one per cold start, shared by every handler of the module
 * graph, dropping `undefined` values (optional fields of a business item).
 */
export function defaultDocumentClient(): DynamoDBDocumentClient {
  documentClient ??= DynamoDBDocumentClient.from(new DynamoDBClient({}), {
    marshallOptions: { removeUndefinedValues: true },
  });
  return documentClient;
}

/** The default dead-letter sender to `queueUrl`: one SQS client and one sender per cold start. */
export function defaultDeadLetterSender(queueUrl: string): DeadLetterSender {
  let sender = deadLetterSenders.get(queueUrl);
  if (sender === undefined) {
    sqsClient ??= new SQSClient({});
    sender = createSqsDeadLetterSender({ client: sqsClient, queueUrl });
    deadLetterSenders.set(queueUrl, sender);
  }
  return sender;
}

/** The options of a handler that the construct's settings fill (`SqsHandlerOptions` has them all). */
export interface ConstructOptions {
  readonly consumer?: string;
  readonly tableName?: string;
  readonly store?: unknown;
  readonly client?: DynamoDBDocumentClient;
  readonly ttlSeconds?: number;
  readonly deadLetter?: DeadLetterMode;
  readonly deadLetterSender?: DeadLetterSender;
  readonly metricNamespace?: string;
  readonly logLevel?: LogLevel;
  readonly completedCache?: CompletedCacheOptions;
  readonly groupMetrics?: GroupMetricsOptions;
}

/**
 * `options` with the construct's settings from `environment` filling what it leaves out:
 * `consumer` (`EO_CONSUMER`), `tableName` (`EO_INBOX_TABLE`), `ttlSeconds` (`EO_TTL_SECONDS`),
 * `deadLetter` (`EO_DEAD_LETTER_MODE`) and, for `direct`, a `deadLetterSender` to
 * `EO_DEAD_LETTER_QUEUE_URL`, `metricNamespace`
 * (`EO_METRIC_NAMESPACE`), `logLevel` (`EO_LOG_LEVEL`), `completedCache`
 * (`EO_COMPLETED_CACHE_MAX_ENTRIES`) and `groupMetrics` (`EO_GROUP_METRICS_MAX_GROUPS`); and, without a `store`, the default
 * document client. An explicit option wins, except that a `consumer` or `tableName` other than
 * the construct's throws `INVALID_OPTIONS`, as does a malformed variable. Applying it twice
 * gives the same options.
 */
export function applyConstructEnvironment<TOptions extends ConstructOptions>(
  options: TOptions,
  environment: Environment,
): TOptions {
  // Not an object: left to the option checks, which say so.
  if (typeof options !== 'object' || options === null) return options;
  const settings = readConstructSettings(environment);
  assertAgreesWithConstruct(options, settings);
  const deadLetter = options.deadLetter ?? settings.deadLetter;
  const directQueueUrl = deadLetter === 'direct' ? settings.deadLetterQueueUrl : undefined;
  return {
    ...options,
    consumer: options.consumer ?? settings.consumer,
    tableName: options.tableName ?? settings.tableName,
    client: options.client ?? (options.store === undefined ? defaultDocumentClient() : undefined),
    ttlSeconds: options.ttlSeconds ?? settings.ttlSeconds,
    deadLetter,
    deadLetterSender:
      options.deadLetterSender ??
      (directQueueUrl === undefined ? undefined : defaultDeadLetterSender(directQueueUrl)),
    metricNamespace: options.metricNamespace ?? settings.metricNamespace,
    logLevel: options.logLevel ?? settings.logLevel,
    completedCache:
      options.completedCache ??
      (settings.completedCacheMaxEntries === undefined
        ? undefined
        : { maxEntries: settings.completedCacheMaxEntries }),
    groupMetrics:
      options.groupMetrics ??
      (settings.groupMetricsMaxGroups === undefined
        ? undefined
        : { maxGroups: settings.groupMetricsMaxGroups }),
  };
}

/**
 * The defaults the construct's settings in `environment` supply to a mode: the lease of a
 * two-phase claim (`EO_LEASE_MILLIS`, the function timeout) and the outbox atomic mode emits to
 * (`EO_OUTBOX_TABLE_NAME`, `EO_OUTBOX_RETENTION_SECONDS`, `EO_OUTBOX_DESTINATION_KIND`,
 * `EO_OUTBOX_EVENT_SOURCE`, `EO_OUTBOX_DESTINATION_FIFO`, `EO_OUTBOX_DESTINATION_FAIR`). A mode's own
 * option wins.
 */
export function constructModeDefaults(environment: Environment): ModeDefaults {
  const {
    leaseMillis,
    outboxTableName,
    outboxRetentionSeconds,
    outboxDestinationKind,
    outboxEventSource,
    outboxDestinationFifo,
    outboxDestinationFair,
  } = readConstructSettings(environment);
  return {
    ...(leaseMillis === undefined ? {} : { leaseMillis }),
    ...(outboxTableName === undefined
      ? {}
      : {
          outbox: {
            tableName: outboxTableName,
            ...(outboxRetentionSeconds === undefined ? {} : { retentionSeconds: outboxRetentionSeconds }),
            ...(outboxDestinationKind === undefined ? {} : { destinationKind: outboxDestinationKind }),
            ...(outboxEventSource === undefined ? {} : { eventSource: outboxEventSource }),
            ...(outboxDestinationFifo === undefined ? {} : { destinationFifo: outboxDestinationFifo }),
            ...(outboxDestinationFair === undefined ? {} : { destinationFair: outboxDestinationFair }),
          },
        }),
  };
}
