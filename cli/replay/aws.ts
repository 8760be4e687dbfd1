/**
 * The AWS adapter of the replay tool: the only module that calls SQS and DynamoDB and
 * the only one that knows AWS error names. Plain SDK v3 calls, nothing
 * emulator-specific, so it works against AWS and any compatible endpoint.
 */

import { DescribeTableCommand, type DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import {
  GetQueueAttributesCommand,
  SendMessageBatchCommand,
  type SendMessageBatchRequestEntry,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { QueueCounters } from './drain';
import { ReplayError } from './errors';
import type { QueueKind } from './send-plan';
import type { Item } from './snapshot';

/** Attempts for batch entries that SQS failed on its side (not the sender's fault). */
const SEND_ATTEMPTS = 3;

/** The SDK client settings of a command: its `--endpoint-url` and `--region`, when given. */
export interface CommandClientConfig {
  readonly endpoint?: string;
  readonly region?: string;
}

/**
 * The settings of a command's SDK clients from its `--endpoint-url` and `--region`. With an
 * endpoint override (the option, or `AWS_ENDPOINT_URL_SQS` / `AWS_ENDPOINT_URL`), SQS requests go
 * to that endpoint rather than to the queue URL's host: an emulator answers queue URLs with a
 * host of its own (`localhost` for `127.0.0.1`), and the SDK would otherwise warn on every call
 * that the two differ.
 */
export function commandClientConfig(
  options: { readonly endpointUrl?: string; readonly region?: string },
  env: NodeJS.ProcessEnv = process.env,
): {
  readonly common: CommandClientConfig;
  readonly sqs: CommandClientConfig & { useQueueUrlAsEndpoint?: boolean };
} {
  const common: CommandClientConfig = {
    ...(options.endpointUrl === undefined ? {} : { endpoint: options.endpointUrl }),
    ...(options.region === undefined ? {} : { region: options.region }),
  };
  const overridden = [options.endpointUrl, env.AWS_ENDPOINT_URL_SQS, env.AWS_ENDPOINT_URL].some(
    (value) => value !== undefined && value !== '',
  );
  return { common, sqs: overridden ? { ...common, useQueueUrlAsEndpoint: false } : common };
}

/** What the replay needs to know about a queue before sending to it. */
export interface QueueDescription extends QueueKind {
  /** `VisibilityTimeout`: how long a received message stays hidden before it is delivered again. */
  readonly visibilityTimeoutSeconds: number;
  /** `maxReceiveCount` of the redrive policy; `undefined` without a dead-letter queue. */
  readonly maxReceiveCount: number | undefined;
}

/** Whether the queue is FIFO and deduplicates by content, and its redrive timing. */
export async function describeQueue(sqs: SQSClient, queueUrl: string): Promise<QueueDescription> {
  const { Attributes: attributes = {} } = await call({ action: 'GetQueueAttributes', queueUrl }, () =>
    sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: queueUrl,
        AttributeNames: ['FifoQueue', 'ContentBasedDeduplication', 'VisibilityTimeout', 'RedrivePolicy'],
      }),
    ),
  );
  return {
    fifo: attributes.FifoQueue === 'true',
    contentBasedDeduplication: attributes.ContentBasedDeduplication === 'true',
    visibilityTimeoutSeconds: Number(attributes.VisibilityTimeout ?? 30),
    maxReceiveCount: maxReceiveCountOf(attributes.RedrivePolicy),
  };
}

function maxReceiveCountOf(redrivePolicy: string | undefined): number | undefined {
  if (!redrivePolicy) return undefined;
  try {
    const count = Number((JSON.parse(redrivePolicy) as { maxReceiveCount?: unknown }).maxReceiveCount);
    return Number.isInteger(count) && count > 0 ? count : undefined;
  } catch {
    return undefined;
  }
}

/** The queue's approximate visible, in-flight and delayed counts. */
export async function readQueueCounters(sqs: SQSClient, queueUrl: string): Promise<QueueCounters> {
  const { Attributes: attributes = {} } = await call({ action: 'GetQueueAttributes', queueUrl }, () =>
    sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: queueUrl,
        AttributeNames: [
          'ApproximateNumberOfMessages',
          'ApproximateNumberOfMessagesNotVisible',
          'ApproximateNumberOfMessagesDelayed',
        ],
      }),
    ),
  );
  return {
    visible: Number(attributes.ApproximateNumberOfMessages ?? 0),
    inFlight: Number(attributes.ApproximateNumberOfMessagesNotVisible ?? 0),
    delayed: Number(attributes.ApproximateNumberOfMessagesDelayed ?? 0),
  };
}

/**
 * Sends one planned batch. Entries SQS failed on its side are sent again (up to 3
 * attempts); entries it refused as the sender's fault fail the replay.
 *
 * @throws {ReplayError} `SEND_FAILED` naming each refused entry's line, SQS code and message.
 */
export async function sendBatch(
  sqs: SQSClient,
  queueUrl: string,
  entries: readonly SendMessageBatchRequestEntry[],
): Promise<void> {
  let pending = [...entries];
  for (let attempt = 1; pending.length > 0; attempt++) {
    const response = await call({ action: 'SendMessageBatch', queueUrl }, () =>
      sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: pending })),
    );
    const failed = response.Failed ?? [];
    const refused = failed.filter((failure) => failure.SenderFault || attempt === SEND_ATTEMPTS);
    if (refused.length > 0) {
      const lines = refused.map((failure) =>
        `${(failure.Id ?? '?').replace('line-', 'line ')}: ${failure.Code}: ${failure.Message ?? ''}`.trim(),
      );
      throw new ReplayError('SEND_FAILED', `SQS refused messages of the log:\n  ${lines.join('\n  ')}`);
    }
    const retry = new Set(failed.map((failure) => failure.Id));
    pending = pending.filter((entry) => retry.has(entry.Id));
  }
}

/** The key attribute names of a table: partition key, then sort key if any. */
export async function describeKeyAttributes(dynamodb: DynamoDBClient, table: string): Promise<string[]> {
  const { Table: description } = await call({ action: 'DescribeTable', table }, () =>
    dynamodb.send(new DescribeTableCommand({ TableName: table })),
  );
  const schema = description?.KeySchema ?? [];
  const partition = schema.find((element) => element.KeyType === 'HASH')?.AttributeName;
  const sort = schema.find((element) => element.KeyType === 'RANGE')?.AttributeName;
  if (partition === undefined)
    throw new ReplayError('AWS', `DescribeTable returned no partition key for table ${table}.`);
  return sort === undefined ? [partition] : [partition, sort];
}

/**
 * Every item of a table: a full `Scan` with strongly consistent reads, following
 * `LastEvaluatedKey` until the end. `onPage` receives the running item count.
 */
export async function scanTable(
  dynamodb: DynamoDBClient,
  table: string,
  onPage?: (itemsSoFar: number) => void,
): Promise<Item[]> {
  const items: Item[] = [];
  let startKey: Item | undefined;
  do {
    const page = await call({ action: 'Scan', table }, () =>
      dynamodb.send(new ScanCommand({ TableName: table, ConsistentRead: true, ExclusiveStartKey: startKey })),
    );
    items.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
    onPage?.(items.length);
  } while (startKey !== undefined);
  return items;
}

/** What an AWS call was about, to word its failure. */
export interface CallContext {
  readonly action: string;
  readonly queueUrl?: string;
  readonly table?: string;
  /** A Lambda function's name or ARN. */
  readonly functionName?: string;
}

const CONNECTION_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
]);

/**
 * Classifies an error thrown by an SDK call into a `ReplayError` with a message for the
 * person running the tool. Errors that are not from AWS or the network (bugs) are
 * returned unchanged, so they keep their stack.
 */
export function toReplayError(error: unknown, context: CallContext): unknown {
  if (typeof error !== 'object' || error === null) return error;
  const { name, code, message } = error as { name?: unknown; code?: unknown; message?: unknown };
  const text = typeof message === 'string' ? message : String(error);
  const what =
    context.table !== undefined
      ? `table ${context.table}`
      : context.functionName !== undefined
        ? `function ${context.functionName}`
        : `queue ${context.queueUrl}`;

  if (name === 'ReplayError') return error;
  if ((typeof code === 'string' && CONNECTION_CODES.has(code)) || name === 'TimeoutError') {
    return new ReplayError('CONNECTION', `Cannot reach the endpoint for ${what} (${text}).`, {
      cause: error,
    });
  }
  if (name === 'CredentialsProviderError') {
    return new ReplayError('CONFIGURATION', `No AWS credentials found (${text}).`, { cause: error });
  }
  if (text === 'Region is missing') {
    return new ReplayError('CONFIGURATION', 'No AWS region: pass --region or set AWS_REGION.', {
      cause: error,
    });
  }
  if (
    name === 'QueueDoesNotExist' ||
    name === 'AWS.SimpleQueueService.NonExistentQueue' ||
    name === 'ResourceNotFoundException'
  ) {
    return new ReplayError('NOT_FOUND', `The ${what} does not exist (${context.action}: ${name}).`, {
      cause: error,
    });
  }
  if ('$metadata' in error || '$fault' in error) {
    return new ReplayError('AWS', `${context.action} on ${what} failed: ${String(name)}: ${text}`, {
      cause: error,
    });
  }
  return error;
}

/** Runs one SDK call, turning its failure into a `ReplayError` ({@link toReplayError}). */
export async function call<T>(context: CallContext, send: () => Promise<T>): Promise<T> {
  try {
    return await send();
  } catch (error) {
    throw toReplayError(error, context);
  }
}
