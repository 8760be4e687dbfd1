/**
 * The AWS adapter of `outbox redrive`: reads the relay's configuration, the outbox table (never
 * writes it) and the on-failure queue. Publishing is the relay's own code (`lambda/outbox`).
 */

import {
  type AttributeValue,
  type DynamoDBClient,
  GetItemCommand,
  ScanCommand,
} from '@aws-sdk/client-dynamodb';
import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { OUTBOX_ATTRIBUTES } from '../../lambda/core/contract';
import type { Environment } from '../../lambda/core/environment';
import { call } from '../replay/aws';
import { ReplayError } from '../replay/errors';

/** One outbox item as DynamoDB returns it. */
export type OutboxItem = Record<string, AttributeValue>;

/** Settings of the SDK clients: the command line's endpoint and region, when given. */
export interface ClientConfig {
  readonly endpoint?: string;
  readonly region?: string;
}

/**
 * The environment variables of the relay function `functionName` (`GetFunctionConfiguration`).
 * The Lambda client is an optional peer dependency of the package, loaded only here.
 */
export async function readFunctionEnvironment(
  functionName: string,
  config: ClientConfig,
): Promise<Environment> {
  let lambda: typeof import('@aws-sdk/client-lambda');
  try {
    lambda = await import('@aws-sdk/client-lambda');
  } catch (error) {
    throw new ReplayError(
      'CONFIGURATION',
      '`--relay` reads the function with @aws-sdk/client-lambda, which is not installed: ' +
        '`npm install --save-dev @aws-sdk/client-lambda`, or pass `--table` and the destination instead.',
      { cause: error },
    );
  }
  const client = new lambda.LambdaClient(config);
  try {
    const configuration = await call({ action: 'GetFunctionConfiguration', functionName }, () =>
      client.send(new lambda.GetFunctionConfigurationCommand({ FunctionName: functionName })),
    );
    return configuration.Environment?.Variables ?? {};
  } finally {
    client.destroy();
  }
}

/** The outbox item of event `id`, read consistently; `undefined` when the table has none. */
export async function readOutboxItem(
  dynamodb: DynamoDBClient,
  table: string,
  id: string,
): Promise<OutboxItem | undefined> {
  const { Item } = await call({ action: 'GetItem', table }, () =>
    dynamodb.send(
      new GetItemCommand({
        TableName: table,
        Key: { [OUTBOX_ATTRIBUTES.pk]: { S: id } },
        ConsistentRead: true,
      }),
    ),
  );
  return Item;
}

/**
 * The outbox items whose `createdAt` is from `fromMillis` to `toMillis` (both included): a `Scan`
 * of the whole table with a filter, following `LastEvaluatedKey`. It reads (and is billed for)
 * every item of the table, whatever the filter keeps.
 */
export async function scanCreatedBetween(
  dynamodb: DynamoDBClient,
  table: string,
  fromMillis: number,
  toMillis: number,
): Promise<OutboxItem[]> {
  const items: OutboxItem[] = [];
  let startKey: OutboxItem | undefined;
  do {
    const page = await call({ action: 'Scan', table }, () =>
      dynamodb.send(
        new ScanCommand({
          TableName: table,
          FilterExpression: '#createdAt BETWEEN :from AND :to',
          ExpressionAttributeNames: { '#createdAt': OUTBOX_ATTRIBUTES.createdAt },
          ExpressionAttributeValues: { ':from': { N: String(fromMillis) }, ':to': { N: String(toMillis) } },
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
        }),
      ),
    );
    items.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
  } while (startKey !== undefined);
  return items;
}

/**
 * How long a received on-failure message stays hidden from other readers while the command works
 * on it: 15 minutes. A message the command leaves is made visible again at once.
 */
const HOLD_SECONDS = 900;

/**
 * Every message of the on-failure queue, received until a receive brings nothing new. Each stays
 * hidden for 15 minutes unless deleted or released.
 */
export async function receiveAll(sqs: SQSClient, queueUrl: string): Promise<Message[]> {
  const messages = new Map<string, Message>();
  for (;;) {
    const { Messages = [] } = await call({ action: 'ReceiveMessage', queueUrl }, () =>
      sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 1,
          VisibilityTimeout: HOLD_SECONDS,
        }),
      ),
    );
    const fresh = Messages.filter((message) => !messages.has(message.MessageId ?? ''));
    if (fresh.length === 0) return [...messages.values()];
    for (const message of fresh) messages.set(message.MessageId ?? '', message);
  }
}

/** Deletes a received message. */
export async function deleteMessage(sqs: SQSClient, queueUrl: string, message: Message): Promise<void> {
  await call({ action: 'DeleteMessage', queueUrl }, () =>
    sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle })),
  );
}

/** Makes a received message visible again at once, for the next reader. */
export async function releaseMessage(sqs: SQSClient, queueUrl: string, message: Message): Promise<void> {
  await call({ action: 'ChangeMessageVisibility', queueUrl }, () =>
    sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: queueUrl,
        ReceiptHandle: message.ReceiptHandle,
        VisibilityTimeout: 0,
      }),
    ),
  );
}
