/**
 * Reading the deployable handlers' environment: the only place in the runtime that reads
 * `process.env`. Variable names come from `ENV` in the shared contract, so the construct that
 * sets them and the handlers that read them cannot drift.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ENV } from '../core/contract';
import type { DeadLetterMode } from '../core/dead-letter';
import { EffectivelyOnceError } from '../core/errors';
import type { LogLevel } from '../core/logger';
import { createSqsDeadLetterSender } from '../sqs/dead-letter-sender';
import type { SqsHandlerOptions } from '../sqs-handler';

/** The environment a deployable handler reads. */
export type HandlerEnvironment = Readonly<Record<string, string | undefined>>;

/** Reads a required variable; a missing or empty one is a configuration error at cold start. */
export function requireEnv(name: string, env: HandlerEnvironment = process.env): string {
  const value = env[name];
  if (value === undefined || value.trim() === '') {
    throw new EffectivelyOnceError(
      'INVALID_OPTIONS',
      `Expected environment variable \`${name}\` to be set, got \`${String(value)}\``,
    );
  }
  return value;
}

/** Reads an optional positive integer; anything else is a configuration error at start-up. */
export function optionalInteger(name: string, env: HandlerEnvironment = process.env): number | undefined {
  const value = env[name];
  if (value === undefined || value === '') return undefined;
  if (!/^\d+$/.test(value)) {
    throw new EffectivelyOnceError(
      'INVALID_OPTIONS',
      `Expected environment variable \`${name}\` to be a positive integer, got \`${value}\``,
    );
  }
  return Number(value);
}

/** The toolkit settings from `EO_*` variables (validated again, with the rest, by the core). */
export interface ToolkitEnvironment {
  readonly inboxTable: string;
  readonly consumer: string;
  readonly ttlSeconds: number | undefined;
  readonly deadLetter: DeadLetterMode;
  readonly deadLetterQueueUrl: string | undefined;
  readonly logLevel: LogLevel | undefined;
  readonly metricNamespace: string | undefined;
  /** Two-phase lease, milliseconds (the construct sets the function timeout); pass it as `leaseMillis`. */
  readonly leaseMillis: number | undefined;
}

/** Reads `EO_INBOX_TABLE`, `EO_CONSUMER`, `EO_TTL_SECONDS`, `EO_DEAD_LETTER_MODE`, `EO_DEAD_LETTER_QUEUE_URL`, `EO_LOG_LEVEL`, `EO_METRIC_NAMESPACE`, `EO_LEASE_MILLIS`. */
export function readToolkitEnvironment(env: HandlerEnvironment = process.env): ToolkitEnvironment {
  const deadLetter = (env[ENV.deadLetterMode] || 'redrive') as DeadLetterMode;
  return {
    inboxTable: requireEnv(ENV.inboxTable, env),
    consumer: requireEnv(ENV.consumer, env),
    ttlSeconds: optionalInteger(ENV.ttlSeconds, env),
    deadLetter,
    deadLetterQueueUrl:
      deadLetter === 'direct' ? requireEnv(ENV.deadLetterQueueUrl, env) : env[ENV.deadLetterQueueUrl],
    logLevel: (env[ENV.logLevel] || undefined) as LogLevel | undefined,
    metricNamespace: env[ENV.metricNamespace] || undefined,
    leaseMillis: optionalInteger(ENV.leaseMillis, env),
  };
}

/** The SDK clients a deployable handler needs; create them once, at module scope. */
export interface HandlerClients {
  readonly dynamoDb: DynamoDBDocumentClient;
  /** Present only when dead letters are sent directly. */
  readonly sqs: SQSClient | undefined;
}

/** Creates the SDK clients for `environment` (the document client drops `undefined` values). */
export function createHandlerClients(environment: ToolkitEnvironment): HandlerClients {
  return {
    dynamoDb: DynamoDBDocumentClient.from(new DynamoDBClient({}), {
      marshallOptions: { removeUndefinedValues: true },
    }),
    sqs: environment.deadLetter === 'direct' ? new SQSClient({}) : undefined,
  };
}

/** The toolkit part of a handler's options, from the environment and the module-scope clients. */
export function toolkitOptions(
  environment: ToolkitEnvironment,
  clients: HandlerClients,
): Pick<
  SqsHandlerOptions,
  | 'consumer'
  | 'client'
  | 'tableName'
  | 'ttlSeconds'
  | 'deadLetter'
  | 'deadLetterSender'
  | 'logLevel'
  | 'metricNamespace'
> {
  return {
    consumer: environment.consumer,
    client: clients.dynamoDb,
    tableName: environment.inboxTable,
    ttlSeconds: environment.ttlSeconds,
    deadLetter: environment.deadLetter,
    deadLetterSender:
      clients.sqs && environment.deadLetterQueueUrl
        ? createSqsDeadLetterSender({ client: clients.sqs, queueUrl: environment.deadLetterQueueUrl })
        : undefined,
    logLevel: environment.logLevel,
    metricNamespace: environment.metricNamespace,
  };
}
