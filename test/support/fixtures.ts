/**
 * Setup shared by the integration tests: clients, tables and queues on the local AWS endpoint
 * (each removed again by `dispose`), item reads, a manual clock, DynamoDB faults injected on a
 * real client, SQS records and a context shaped the way Lambda delivers them, and captured logs.
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
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { createJsonLogger } from '../../lambda/core/logger';
import type { LambdaContext, SqsMessageAttribute, SqsRecord } from '../../lambda/core/sqs-event';
import { awsConfig, type LocalAwsConfig, uniqueName } from './aws';

/** A queue created for a test: its URL and ARN. */
export interface TestQueue {
  readonly url: string;
  readonly arn: string;
}

/** The resources of one test file on the local endpoint. */
export interface LocalResources {
  readonly aws: LocalAwsConfig;
  /** One SQS client for the file, destroyed by `dispose`. */
  readonly sqs: SQSClient;
  /** A DynamoDB client of its own (its own connections); destroyed by `dispose`. */
  dynamoDbClient(config?: Pick<DynamoDBClientConfig, 'maxAttempts'>): DynamoDBClient;
  /**
   * A document client of its own (its own connections), configured the way the store documents
   * (`removeUndefinedValues`); destroyed by `dispose`.
   */
  documentClient(config?: Pick<DynamoDBClientConfig, 'maxAttempts'>): DynamoDBDocumentClient;
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
  const newRawClient = (config: Pick<DynamoDBClientConfig, 'maxAttempts'> = {}) => {
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
    documentClient: (config) =>
      DynamoDBDocumentClient.from(newRawClient(config), {
        marshallOptions: { removeUndefinedValues: true },
      }),
    async createTable(name, keys = ['pk']) {
      await admin.send(
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
      tables.push(name);
      await waitUntilTableExists({ client: admin, maxWaitTime: 30 }, { TableName: name });
      return name;
    },
    async createQueue(prefix, attributes = {}) {
      const fifo = attributes.FifoQueue === 'true';
      const { QueueUrl } = await sqs.send(
        new CreateQueueCommand({
          QueueName: `${uniqueName(prefix)}${fifo ? '.fifo' : ''}`,
          Attributes: { VisibilityTimeout: '30', ...attributes },
        }),
      );
      queueUrls.push(QueueUrl!);
      const { Attributes } = await sqs.send(
        new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
      );
      return { url: QueueUrl!, arn: Attributes!.QueueArn! };
    },
    async readItem(tableName, key) {
      const { Item } = await reader.send(
        new GetCommand({ TableName: tableName, Key: key, ConsistentRead: true }),
      );
      return Item;
    },
    async dispose() {
      await Promise.allSettled([
        ...tables.splice(0).map((TableName) => admin.send(new DeleteTableCommand({ TableName }))),
        ...queueUrls.splice(0).map((QueueUrl) => sqs.send(new DeleteQueueCommand({ QueueUrl }))),
      ]);
      for (const client of rawClients.splice(0)) client.destroy();
      sqs.destroy();
    },
  };
}

/** A clock for injection that stands still until `advance` moves it. */
export interface ManualClock {
  (): number;
  advance(millis: number): void;
}

/** A manual clock starting at `start` (default: now). */
export function manualClock(start = Date.now()): ManualClock {
  let now = start;
  const clock = (() => now) as ManualClock;
  clock.advance = (millis) => {
    now += millis;
  };
  return clock;
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
