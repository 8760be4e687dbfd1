/**
 * The one fixture module of the tests. Builders: SQS records and events shaped the way Lambda
 * delivers them, a Lambda context, a manual clock, handler options over a memory store, outcome
 * counts and totals, a deferred promise, property checks that print their seed, and capturing
 * log and metrics sinks. For the tests on the local AWS endpoint: clients, tables and queues
 * (each removed again by `dispose`), item reads and scans, queue depth and receives, polling
 * until a condition holds, DynamoDB faults injected on a real client, and what the event source
 * mapping does with a batch response.
 */
import { createHash, randomUUID } from 'node:crypto';
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
import fc from 'fast-check';
import { vi } from 'vitest';
import { fromBody } from '../../lambda/core/dedup-key';
import { PermanentError } from '../../lambda/core/errors';
import type { InboundMessage } from '../../lambda/core/inbound-message';
import { createJsonLogger, type LogEntry, type Logger } from '../../lambda/core/logger';
import type { Message } from '../../lambda/core/message';
import { createOutcomeCounts, type MetricsSink, type OutcomeCounts } from '../../lambda/core/metrics';
import { type MarkerHandler, marker } from '../../lambda/modes/marker';
import type {
  LambdaContext,
  SqsBatchResponse,
  SqsEvent,
  SqsMessageAttribute,
  SqsRecord,
} from '../../lambda/sqs/sqs-event';
import { type SqsHandlerOptions, sqsInboundMessage } from '../../lambda/sqs/sqs-handler';
import { type OutcomeTotals, zeroOutcomeTotals } from '../../scripts/main-job/observations';
import { awsConfig, type LocalAwsConfig, uniqueName } from './aws';
import { createMemoryStore } from './memory-store';

/** Epoch milliseconds every test starts at (2026-01-01T00:00:00Z). */
export const T0 = Date.UTC(2026, 0, 1);

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

/** A clock the test moves by hand. */
export interface ManualClock {
  (): number;
  advance(millis: number): void;
  set(millis: number): void;
}

/**
 * A clock for injection that stands still at `start` until the test moves it. Tests on the local
 * endpoint pass `Date.now()`, so what they write is current for the emulator too.
 */
export function manualClock(start = T0): ManualClock {
  let now = start;
  const clock = (() => now) as ManualClock;
  clock.advance = (millis) => {
    now += millis;
  };
  clock.set = (millis) => {
    now = millis;
  };
  return clock;
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
  /** Message attributes, string values. */
  readonly attributes?: Readonly<Record<string, string>>;
  /** Message attributes exactly as delivered (binary and list values too), added to `attributes`. */
  readonly messageAttributes?: Readonly<Record<string, SqsMessageAttribute>>;
  /**
   * The `MessageGroupId`: with it the record comes from the FIFO queue `orders.fifo` (and gets a
   * `SequenceNumber`), unless `queue` names another (a fair queue is a standard queue whose
   * records carry a group id).
   */
  readonly groupId?: string;
  /** The `MessageDeduplicationId`. @default none */
  readonly deduplicationId?: string;
  /** The `ApproximateReceiveCount`. @default 1 */
  readonly receiveCount?: number;
  /** The body exactly as sent. @default the JSON of `body` */
  readonly rawBody?: string;
  /** Epoch milliseconds when it was sent. @default T0 */
  readonly sentAt?: number;
  /** The source queue's name. @default 'orders.fifo' with a `groupId`, else 'orders' */
  readonly queue?: string;
}

let fifoSequence = 18_000_000_000_000_000_000n;

/**
 * One SQS record as Lambda's event source mapping delivers it: the message `messageId` with a
 * JSON body (or `rawBody`). Everything else is fixed unless `options` says otherwise, so two calls
 * with the same arguments build the same record (FIFO sequence numbers aside). Tests on the
 * local endpoint pass `randomUUID()` where a fresh message is meant.
 */
export function sqsRecord(messageId: string, body: unknown, options: SqsRecordOptions = {}): SqsRecord {
  const text = options.rawBody ?? JSON.stringify(body);
  const sentAt = options.sentAt ?? T0;
  // Built from entries, so any name (`__proto__` too) is an own property, as in Lambda's event.
  const messageAttributes: Record<string, SqsMessageAttribute> = Object.fromEntries([
    ...Object.entries(options.attributes ?? {}).map(([name, value]): [string, SqsMessageAttribute] => [
      name,
      { stringValue: value, stringListValues: [], binaryListValues: [], dataType: 'String' },
    ]),
    ...Object.entries(options.messageAttributes ?? {}),
  ]);
  const grouped = options.groupId !== undefined;
  const queue = options.queue ?? (grouped ? 'orders.fifo' : 'orders');
  return {
    messageId,
    receiptHandle: `rh-${messageId}`,
    body: text,
    attributes: {
      ApproximateReceiveCount: String(options.receiveCount ?? 1),
      SentTimestamp: String(sentAt),
      SenderId: 'AROAEXAMPLEPRODUCER:order-service',
      ApproximateFirstReceiveTimestamp: String(sentAt + 4),
      ...(grouped ? { SequenceNumber: String(++fifoSequence), MessageGroupId: options.groupId } : {}),
      ...(options.deduplicationId === undefined ? {} : { MessageDeduplicationId: options.deduplicationId }),
    },
    messageAttributes,
    md5OfBody: createHash('md5').update(text).digest('hex'),
    eventSource: 'aws:sqs',
    eventSourceARN: `arn:aws:sqs:us-east-1:000000000000:${queue}`,
    awsRegion: 'us-east-1',
  };
}

/** An SQS event of `records`. */
export function sqsEvent(...records: SqsRecord[]): SqsEvent {
  return { Records: records };
}

/**
 * The record Lambda would deliver for `message`, as `LocalResources.receive` returned it (every
 * attribute requested): its id, its body exactly as sent and its String message attributes, from
 * the queue named `queue` (by default the one `sqsRecord` names).
 */
export function sqsRecordFromMessage(message: QueueMessage, queue?: string): SqsRecord {
  return sqsRecord(message.MessageId!, undefined, {
    rawBody: message.Body!,
    ...(queue === undefined ? {} : { queue }),
    attributes: Object.fromEntries(
      Object.entries(message.MessageAttributes ?? {}).map(([name, value]) => [name, value.StringValue!]),
    ),
  });
}

/**
 * Receives from `queueUrl` until `count` messages came (or ten receives), deleting none: each
 * message is received once, in the order the queue gave them.
 */
export async function receiveMessages(
  local: LocalResources,
  queueUrl: string,
  count: number,
): Promise<QueueMessage[]> {
  const received: QueueMessage[] = [];
  for (let attempt = 0; attempt < 10 && received.length < count; attempt++) {
    received.push(...(await local.receive(queueUrl)));
  }
  return received;
}

/** The Lambda context of one invocation, with a minute left. */
export const lambdaContext = (functionName = 'order-projector'): LambdaContext => ({
  awsRequestId: randomUUID(),
  functionName,
  getRemainingTimeInMillis: () => 60_000,
});

/**
 * A JSON-lines logger that keeps its lines (the real serialisation, captured). `textWithout`
 * joins them with each of `known` replaced by `<known>`: message ids, random test keys and
 * fingerprints may hold any run of digits by chance, so a search for a body's own digits
 * (`not.toContain('4111')`) leaves them out rather than fail on one now and then.
 */
export function captureLogs() {
  const lines: string[] = [];
  return {
    logger: createJsonLogger((line) => lines.push(line)),
    lines,
    entries: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>),
    textWithout: (known: readonly (string | undefined)[]) =>
      known.reduce<string>(
        (text, value) => (value ? text.replaceAll(value, '<known>') : text),
        lines.join('\n'),
      ),
  };
}

/**
 * Runs `run` with standard output captured (what a handler built from the environment writes:
 * its JSON log lines and Embedded Metric Format lines), and returns its result with every line
 * written, parsed.
 */
export async function captureStdout<T>(
  run: () => Promise<T>,
): Promise<{ result: T; lines: Record<string, unknown>[] }> {
  const written: string[] = [];
  const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    written.push(String(chunk));
    return true;
  });
  const result = await run().finally(() => write.mockRestore());
  const lines = written
    .join('')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { result, lines };
}

/**
 * Invokes `handler` with one record `m-1` whose body is `rawBody` (not what its parser accepts),
 * with standard output captured. A malformed body needs no store call, so a handler built from
 * the environment (with its own DynamoDB client) can be invoked without I/O.
 */
export function invokeWithMalformedBody(
  handler: (event: SqsEvent, context: LambdaContext) => Promise<SqsBatchResponse>,
  rawBody: string,
): Promise<{ result: SqsBatchResponse; lines: Record<string, unknown>[] }> {
  return captureStdout(() => handler(sqsEvent(sqsRecord('m-1', undefined, { rawBody })), lambdaContext()));
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

/** A logger that keeps its entries. */
export function captureLogger(): Logger & { readonly entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  return { entries, log: (entry) => entries.push(entry) };
}

/** A metrics sink that keeps what was published. */
export function captureMetrics(): MetricsSink & {
  readonly published: { counts: OutcomeCounts; consumer: string; requestId?: string }[];
} {
  const published: { counts: OutcomeCounts; consumer: string; requestId?: string }[] = [];
  return {
    published,
    publish: (counts, { consumer, requestId }) =>
      published.push({ counts: { ...counts }, consumer, ...(requestId === undefined ? {} : { requestId }) }),
  };
}

/** Counts with every outcome zero except `partial`. */
export function counts(partial: Partial<OutcomeCounts>): OutcomeCounts {
  return { ...createOutcomeCounts(), ...partial };
}

/** Outcome totals of the main job's observations, every one zero except `partial`. */
export function outcomeTotals(partial: Partial<OutcomeTotals>): OutcomeTotals {
  return { ...zeroOutcomeTotals(), ...partial };
}

/** The body of the messages {@link outcomeHandlerOptions} handles: `outcome` picks what happens. */
export interface OutcomeEvent {
  readonly id?: string;
  readonly outcome?: 'ok' | 'throw' | 'permanent';
}

/**
 * Options of a marker-mode handler over a fresh memory store, keyed by the body's `id`, at
 * {@link T0}, silent and without metrics; its handler throws a transient error for
 * `outcome: 'throw'` and a `PermanentError` for `outcome: 'permanent'`.
 */
export function outcomeHandlerOptions({
  handle,
  ...overrides
}: Partial<SqsHandlerOptions<OutcomeEvent>> & {
  /** Replaces the marker handler. */
  readonly handle?: MarkerHandler<OutcomeEvent>;
} = {}): SqsHandlerOptions<OutcomeEvent> {
  return {
    consumer: 'orders',
    dedupKey: fromBody('id'),
    mode: marker(
      handle ??
        ((message: Message<OutcomeEvent>) => {
          if (message.body.outcome === 'throw') throw new Error('transient');
          if (message.body.outcome === 'permanent') throw new PermanentError('never');
        }),
    ),
    store: createMemoryStore(),
    clock: () => T0,
    logLevel: 'silent',
    metrics: false,
    ...overrides,
  } as SqsHandlerOptions<OutcomeEvent>;
}

/** A promise with its settlers, to hold a handler (or a store call) until the test lets it go. */
export function deferred<T = void>(): {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
} {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((done, fail) => {
    resolve = done;
    reject = fail;
  });
  return { promise, resolve, reject };
}

/** Runs a property; on failure the error names the seed and path, so the run can be replayed. */
export function check<Ts extends unknown[]>(
  property: fc.IProperty<Ts> | fc.IAsyncProperty<Ts>,
  parameters: fc.Parameters<Ts> = {},
): Promise<void> | void {
  return fc.assert(property as fc.IAsyncProperty<Ts>, {
    ...parameters,
    reporter: (details) => {
      if (details.failed) {
        throw new Error(
          `Property failed; replay with { seed: ${details.seed}, path: '${details.counterexamplePath}' }\n${fc.defaultReportMessage(details)}`,
        );
      }
    },
  });
}

/**
 * The arguments a key source is called with for an SQS record: the record, the parsed body and
 * the engine's message of the record.
 */
export function keyArgs<TBody>(
  record: SqsRecord,
  body: TBody,
): [SqsRecord, TBody, InboundMessage<SqsRecord>] {
  return [record, body, sqsInboundMessage(record)];
}
