/**
 * Setup shared by the integration tests: clients, tables and queues on the local AWS endpoint
 * (each removed again by `dispose`), item reads and scans, queue depth and receives, polling
 * until a condition holds, a manual clock, DynamoDB faults injected on a real client, SQS
 * records and a context shaped the way Lambda delivers them, and captured logs.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import {
  CreateTableCommand,
  DeleteTableCommand,
  DynamoDBClient,
  type DynamoDBClientConfig,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import {
  ChangeMessageVisibilityBatchCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  type Message as QueueMessage,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { createJsonLogger } from '../../lambda/core/logger';
import type {
  LambdaContext,
  SqsBatchResponse,
  SqsMessageAttribute,
  SqsRecord,
} from '../../lambda/core/sqs-event';
import { manualClock as clockAt, type ManualClock } from '../unit/sqs-fixtures';
import { awsConfig, type LocalAwsConfig, uniqueName } from './aws';

/** What a test may set on a DynamoDB client of its own. */
export type DynamoDbClientConfig = Pick<DynamoDBClientConfig, 'maxAttempts' | 'endpoint'>;

/** A document client on `raw`, configured the way the store documents (`removeUndefinedValues`). */
export function createDocumentClient(raw: DynamoDBClient): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(raw, { marshallOptions: { removeUndefinedValues: true } });
}

/**
 * Creates the on-demand table `name` keyed by string attributes (`keys[0]` the partition key,
 * `keys[1]` the sort key), waits until it exists, and returns its name.
 */
export async function createTable(
  client: DynamoDBClient,
  name: string,
  keys: readonly string[] = ['pk'],
): Promise<string> {
  await client.send(
    new CreateTableCommand({
      TableName: name,
      KeySchema: keys.map((AttributeName, index) => ({
        AttributeName,
        KeyType: index === 0 ? 'HASH' : 'RANGE',
      })),
      AttributeDefinitions: keys.map((AttributeName) => ({ AttributeName, AttributeType: 'S' })),
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  await waitUntilTableExists({ client, maxWaitTime: 30 }, { TableName: name });
  return name;
}

/** Deletes the tables `names`, ignoring ones already gone. */
export async function deleteTables(client: DynamoDBClient, names: readonly string[]): Promise<void> {
  await Promise.allSettled(names.map((TableName) => client.send(new DeleteTableCommand({ TableName }))));
}

/** A queue created for a test: its URL and ARN. */
export interface TestQueue {
  /** The queue name, `.fifo` included. */
  readonly name: string;
  readonly url: string;
  readonly arn: string;
}

/** How {@link LocalResources.receive} receives. */
export interface ReceiveOptions {
  /** @default 10 */
  readonly maxMessages?: number;
  /** @default 1 */
  readonly waitTimeSeconds?: number;
}

/** The resources of one test file on the local endpoint. */
export interface LocalResources {
  readonly aws: LocalAwsConfig;
  /** One SQS client for the file, destroyed by `dispose`. */
  readonly sqs: SQSClient;
  /** A DynamoDB client of its own (its own connections); destroyed by `dispose`. */
  dynamoDbClient(config?: DynamoDbClientConfig): DynamoDBClient;
  /**
   * A document client of its own (its own connections), configured the way the store documents
   * (`removeUndefinedValues`); destroyed by `dispose`.
   */
  documentClient(config?: DynamoDbClientConfig): DynamoDBDocumentClient;
  /**
   * Creates the on-demand table `name` keyed by string attributes (`keys[0]` the partition key,
   * `keys[1]` the sort key), waits until it exists, and returns its name.
   */
  createTable(name: string, keys?: readonly string[]): Promise<string>;
  /**
   * Creates a queue named `uniqueName(prefix)` (with `.fifo` when `attributes.FifoQueue` is
   * `'true'`) with a 30-second visibility timeout unless `attributes` says otherwise.
   */
  createQueue(prefix: string, attributes?: Readonly<Record<string, string>>): Promise<TestQueue>;
  /** Reads an item by its key with a consistent read; `undefined` when absent. */
  readItem(tableName: string, key: Record<string, unknown>): Promise<Record<string, unknown> | undefined>;
  /** Every item of a table, read with consistent reads, in the order the scan returns them. */
  scanItems(tableName: string): Promise<Record<string, unknown>[]>;
  /** Messages on the queue, visible or in flight. */
  queueDepth(queueUrl: string): Promise<number>;
  /** One receive from the queue, with every message attribute and system attribute. */
  receive(queueUrl: string, options?: ReceiveOptions): Promise<QueueMessage[]>;
  /** Deletes every table and queue created here and destroys every client. */
  dispose(): Promise<void>;
}

/**
 * The resources of one test file. Create it at module scope; call `dispose` in `afterAll`
 * (deleting matters when `AWS_ENDPOINT_URL` points at a long-lived emulator).
 *
 * @example
 * const local = createLocalResources();
 * const client = local.documentClient();
 * const inboxTable = uniqueName('eo-inbox');
 * beforeAll(() => local.createTable(inboxTable));
 * afterAll(() => local.dispose());
 */
export function createLocalResources(): LocalResources {
  const aws = awsConfig();
  const rawClients: DynamoDBClient[] = [];
  const tables: string[] = [];
  const queueUrls: string[] = [];
  const sqs = new SQSClient(aws);
  const newRawClient = (config: DynamoDbClientConfig = {}) => {
    const raw = new DynamoDBClient({ ...aws, ...config });
    rawClients.push(raw);
    return raw;
  };
  const admin = newRawClient();
  const reader = DynamoDBDocumentClient.from(admin);

  return {
    aws,
    sqs,
    dynamoDbClient: newRawClient,
    documentClient: (config) => createDocumentClient(newRawClient(config)),
    async createTable(name, keys) {
      const created = createTable(admin, name, keys);
      tables.push(name);
      return created;
    },
    async createQueue(prefix, attributes = {}) {
      const fifo = attributes.FifoQueue === 'true';
      const name = `${uniqueName(prefix)}${fifo ? '.fifo' : ''}`;
      const { QueueUrl } = await sqs.send(
        new CreateQueueCommand({
          QueueName: name,
          Attributes: { VisibilityTimeout: '30', ...attributes },
        }),
      );
      queueUrls.push(QueueUrl!);
      const { Attributes } = await sqs.send(
        new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
      );
      return { name, url: QueueUrl!, arn: Attributes!.QueueArn! };
    },
    async readItem(tableName, key) {
      const { Item } = await reader.send(
        new GetCommand({ TableName: tableName, Key: key, ConsistentRead: true }),
      );
      return Item;
    },
    async scanItems(tableName) {
      const items: Record<string, unknown>[] = [];
      let ExclusiveStartKey: Record<string, unknown> | undefined;
      do {
        const page = await reader.send(
          new ScanCommand({ TableName: tableName, ConsistentRead: true, ExclusiveStartKey }),
        );
        items.push(...(page.Items ?? []));
        ExclusiveStartKey = page.LastEvaluatedKey;
      } while (ExclusiveStartKey);
      return items;
    },
    async queueDepth(queueUrl) {
      const { Attributes = {} } = await sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: queueUrl,
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
        }),
      );
      return (
        Number(Attributes.ApproximateNumberOfMessages) +
        Number(Attributes.ApproximateNumberOfMessagesNotVisible)
      );
    },
    async receive(queueUrl, { maxMessages = 10, waitTimeSeconds = 1 } = {}) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: maxMessages,
          WaitTimeSeconds: waitTimeSeconds,
          MessageAttributeNames: ['All'],
          MessageSystemAttributeNames: ['All'],
        }),
      );
      return Messages;
    },
    async dispose() {
      await Promise.allSettled([
        deleteTables(admin, tables.splice(0)),
        ...queueUrls.splice(0).map((QueueUrl) => sqs.send(new DeleteQueueCommand({ QueueUrl }))),
      ]);
      for (const client of rawClients.splice(0)) client.destroy();
      sqs.destroy();
    },
  };
}

export type { ManualClock };

/** A clock for injection that stands still at `start` (default: now) until the test moves it. */
export function manualClock(start = Date.now()): ManualClock {
  return clockAt(start);
}

/** How {@link waitFor} polls. */
export interface WaitForOptions {
  /** @default 30_000 */
  readonly timeoutMillis?: number;
  /** @default 100 */
  readonly intervalMillis?: number;
  /** What to add to the timeout error (for example a child process's output so far). */
  readonly detail?: () => string;
}

/**
 * Polls `probe` until it returns something other than `undefined` or `false`, and returns that;
 * fails naming `what` after `timeoutMillis`. For real time that must pass on a real service
 * (queues draining), never for a clock the test can inject.
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  { timeoutMillis = 30_000, intervalMillis = 100, detail }: WaitForOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMillis;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) {
      throw new Error(`Timed out waiting for ${what}${detail ? `; ${detail()}` : ''}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMillis));
  }
}

/** A DynamoDB error response, as the service would send it. */
export interface FakeError {
  readonly statusCode: number;
  readonly type: string;
  readonly body?: Record<string, unknown>;
}

/** A throttled request. */
export const THROTTLED: FakeError = { statusCode: 400, type: 'ThrottlingException' };

/**
 * Stands in for the server on a real client: when `faultFor` answers for a request (by
 * operation and the serialised request body), the request is not sent and the SDK
 * deserialises the fabricated error response instead, so the handler meets a genuine SDK
 * exception. Attach it after a request counter so injected responses are counted.
 */
export function injectFaults(
  client: DynamoDBDocumentClient,
  faultFor: (operation: string, requestBody: string) => FakeError | undefined,
): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const operation = (context.commandName ?? '').replace(/Command$/, '');
      const { body } = args.request as { body?: unknown };
      // JSON protocols serialise the body to bytes (a string in older SDK versions).
      const text = body instanceof Uint8Array ? new TextDecoder().decode(body) : String(body ?? '');
      const fault = faultFor(operation, text);
      if (!fault) return next(args);
      const payload = JSON.stringify({
        __type: `com.amazonaws.dynamodb.v20120810#${fault.type}`,
        message: `${fault.type} (injected)`,
        ...fault.body,
      });
      const response = {
        statusCode: fault.statusCode,
        headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'injected' },
        body: new TextEncoder().encode(payload),
      };
      return { response, output: undefined } as unknown as Awaited<ReturnType<typeof next>>;
    },
    { step: 'deserialize', priority: 'low', name: 'faultInjection' },
  );
}

/** The order event the integration tests' order projectors consume. */
export interface OrderEvent {
  readonly orderId: string;
  readonly status: string;
  readonly amount: number;
  readonly note?: string;
}

/** How {@link sqsRecord} builds a record. */
export interface SqsRecordOptions {
  readonly messageId?: string;
  /** Message attributes, string values. */
  readonly attributes?: Readonly<Record<string, string>>;
  /** Makes it a FIFO record of this message group. */
  readonly groupId?: string;
  readonly deduplicationId?: string;
  readonly receiveCount?: number;
  /** The body exactly as sent (default: the JSON of `body`). */
  readonly rawBody?: string;
  /** Epoch milliseconds when it was sent. @default now */
  readonly sentAt?: number;
  /** Name of the source queue, without `.fifo`. @default 'orders' */
  readonly queue?: string;
}

let fifoSequence = 18_000_000_000_000_000_000n;

/** One SQS record as Lambda's event source mapping delivers it. */
export function sqsRecord(body: unknown, options: SqsRecordOptions = {}): SqsRecord {
  const text = options.rawBody ?? JSON.stringify(body);
  const sentAt = options.sentAt ?? Date.now();
  const messageAttributes: Record<string, SqsMessageAttribute> = {};
  for (const [name, value] of Object.entries(options.attributes ?? {})) {
    messageAttributes[name] = {
      stringValue: value,
      stringListValues: [],
      binaryListValues: [],
      dataType: 'String',
    };
  }
  const fifo = options.groupId !== undefined;
  const { region } = awsConfig();
  return {
    messageId: options.messageId ?? randomUUID(),
    receiptHandle: randomBytes(96).toString('base64'),
    body: text,
    attributes: {
      ApproximateReceiveCount: String(options.receiveCount ?? 1),
      SentTimestamp: String(sentAt),
      SenderId: 'AROAEXAMPLEPRODUCER:order-service',
      ApproximateFirstReceiveTimestamp: String(sentAt + 4),
      ...(fifo
        ? {
            SequenceNumber: String(++fifoSequence),
            MessageGroupId: options.groupId,
            MessageDeduplicationId:
              options.deduplicationId ?? createHash('sha256').update(text).digest('hex'),
          }
        : {}),
    },
    messageAttributes,
    md5OfBody: createHash('md5').update(text).digest('hex'),
    eventSource: 'aws:sqs',
    eventSourceARN: `arn:aws:sqs:${region}:000000000000:${options.queue ?? 'orders'}${fifo ? '.fifo' : ''}`,
    awsRegion: region,
  };
}

/** The Lambda context of one invocation, with a minute left. */
export const lambdaContext = (functionName = 'order-projector'): LambdaContext => ({
  awsRequestId: randomUUID(),
  functionName,
  getRemainingTimeInMillis: () => 60_000,
});

/** A JSON-lines logger that keeps its lines (the real serialisation, captured). */
export function captureLogs() {
  const lines: string[] = [];
  return {
    logger: createJsonLogger((line) => lines.push(line)),
    lines,
    entries: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

/**
 * What the event source mapping does with a batch's response: delete the messages the response
 * did not name, and leave the named ones for redelivery. (Lambda waits for their visibility
 * timeout to end; here it is ended at once, to keep tests short.)
 */
export async function settleBatch(
  sqs: SQSClient,
  queueUrl: string,
  records: readonly SqsRecord[],
  response: SqsBatchResponse,
): Promise<void> {
  const failed = new Set(response.batchItemFailures.map((failure) => failure.itemIdentifier));
  const entries = (keep: boolean) =>
    records
      .filter((record) => failed.has(record.messageId) === keep)
      .map((record, index) => ({ Id: String(index), ReceiptHandle: record.receiptHandle! }));
  if (entries(false).length > 0) {
    await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries(false) }));
  }
  if (entries(true).length > 0) {
    await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: queueUrl,
        Entries: entries(true).map((entry) => ({ ...entry, VisibilityTimeout: 0 })),
      }),
    );
  }
}
