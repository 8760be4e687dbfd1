/**
 * Records per second end to end on the local emulator (`startLocalAws()`: MiniStack, or the
 * endpoint in `AWS_ENDPOINT_URL`): N messages are sent to a fresh SQS queue, then pollers
 * receive them in batches of 10, invoke the handler in-process with the Lambda event shape,
 * and delete the acknowledged messages of each batch response. The clock runs from the first
 * receive to the last delete. The emulator serialises requests and shares the machine's two
 * cores with the benchmark, so the figure mostly reflects requests per message; compare ratios
 * within one run, not absolute numbers.
 */
import {
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteQueueCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { SqsRecord } from '../../lambda';
import { type LocalAws, sdkClientConfig, startLocalAws } from '../../scripts/local-aws/harness';
import { attachRequestCounter, type RequestCounter } from '../../test/support/request-counter';
import { type Container, createContainer, type Implementation } from '../implementations';
import { type BenchTables, batchOf, benchContext, orderEvent, tableSchemas } from '../workload';

/** The emulator, its tables and an SQS client. */
export interface EmulatorRig {
  readonly aws: LocalAws;
  readonly tables: BenchTables;
  readonly sqs: SQSClient;
  readonly dynamoDb: DynamoDBClient;
  /** Deletes the tables and stops what `startLocalAws` started. */
  close(): Promise<void>;
}

/** One measurement on the emulator. */
export interface EmulatorSample {
  readonly recordsPerSecond: number;
  /** DynamoDB requests per message (first delivery, the SDK's own retries included). */
  readonly requestsPerMessage: number;
  /** Receives that returned at least one message. */
  readonly batches: number;
  /** Records reported as batch item failures (redelivered after the visibility timeout). */
  readonly failures: number;
  /**
   * Capacity units per message the emulator reported (`ReturnConsumedCapacity: 'TOTAL'` on
   * every request, the `ConsumedCapacity` of each answer summed); null when it reports none.
   */
  readonly consumedUnitsPerMessage: number | null;
}

async function createTable(client: DynamoDBClient, name: string, key: string): Promise<void> {
  await client.send(
    new CreateTableCommand({
      TableName: name,
      AttributeDefinitions: [{ AttributeName: key, AttributeType: 'S' }],
      KeySchema: [{ AttributeName: key, KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  for (let attempt = 0; attempt < 100; attempt++) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: name }));
    if (Table?.TableStatus === 'ACTIVE') return;
    await new Promise((done) => setTimeout(done, 100));
  }
  throw new Error(`Table ${name} did not become ACTIVE`);
}

/** Starts (or reuses) the local emulator and creates the benchmark's tables in it. */
export async function startEmulatorRig(run: string, log: (line: string) => void): Promise<EmulatorRig> {
  const aws = await startLocalAws({ log });
  const config = sdkClientConfig(aws);
  const dynamoDb = new DynamoDBClient(config);
  const tables: BenchTables = {
    inbox: `bench-inbox-${run}`,
    orders: `bench-orders-${run}`,
    powertools: `bench-idempotency-${run}`,
  };
  try {
    for (const [name, key] of Object.entries(tableSchemas(tables)))
      await createTable(dynamoDb, name, key[0]!);
  } catch (error) {
    await aws.stop();
    throw error;
  }
  return {
    aws,
    tables,
    sqs: new SQSClient(config),
    dynamoDb,
    async close() {
      if (!aws.started) {
        for (const name of Object.values(tables)) {
          await dynamoDb.send(new DeleteTableCommand({ TableName: name })).catch(() => undefined);
        }
      }
      await aws.stop();
    },
  };
}

/** A warm container of one implementation over clients of the emulator, with request counters. */
export interface EmulatorContainer {
  readonly implementation: Implementation;
  readonly container: Container;
  readonly counter: RequestCounter;
  readonly capacity: CapacityMeter;
}

/** Sums the capacity the endpoint reports for every request of some clients. */
export interface CapacityMeter {
  /** Units reported since the last reset; null when no answer carried `ConsumedCapacity`. */
  units(): number | null;
  reset(): void;
}

type ConsumedCapacity = { readonly CapacityUnits?: number };

/**
 * Asks for `ReturnConsumedCapacity: 'TOTAL'` on every request of `clients` and sums the
 * `ConsumedCapacity` of the answers (a transaction answers with one entry per table). Answers
 * that are errors (a failed condition) carry none and are not counted.
 */
export function attachCapacityMeter(...clients: readonly DynamoDBClient[]): CapacityMeter {
  let units = 0;
  let reported = false;
  for (const client of new Set(clients)) {
    client.middlewareStack.add(
      (next) => async (args) => {
        (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'TOTAL';
        const result = await next(args);
        const consumed = (result.output as { ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[] })
          .ConsumedCapacity;
        for (const entry of consumed === undefined ? [] : Array.isArray(consumed) ? consumed : [consumed]) {
          reported = true;
          units += entry.CapacityUnits ?? 0;
        }
        return result;
      },
      { step: 'initialize', name: 'benchCapacityMeter', override: true },
    );
  }
  return {
    units: () => (reported ? units : null),
    reset() {
      units = 0;
      reported = false;
    },
  };
}

/** Builds the container of `implementation` on the emulator and warms it with one batch. */
export async function createEmulatorContainer(
  rig: EmulatorRig,
  implementation: Implementation,
  run: string,
): Promise<EmulatorContainer> {
  const config = sdkClientConfig(rig.aws);
  const container = createContainer(implementation, () => new DynamoDBClient(config), rig.tables);
  const counter = attachRequestCounter(container.clients.dedup, container.clients.business);
  const capacity = attachCapacityMeter(container.clients.dedup, container.clients.business);
  await container.handler(batchOf(`${run}-warm-${implementation.id}`, 0, 10), benchContext());
  return { implementation, container, counter, capacity };
}

function toRecord(message: Message, queueArn: string): SqsRecord {
  return {
    messageId: message.MessageId!,
    receiptHandle: message.ReceiptHandle!,
    body: message.Body ?? '',
    attributes: { ApproximateReceiveCount: message.Attributes?.ApproximateReceiveCount ?? '1' },
    messageAttributes: {},
    md5OfBody: message.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: 'us-east-1',
  };
}

async function inParallel<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

/**
 * Sends `messages` fresh messages, then processes them with `pollers` concurrent pollers
 * (each like one Lambda instance) and returns records per second.
 */
export async function measureEmulator(
  rig: EmulatorRig,
  subject: EmulatorContainer,
  options: { readonly messages: number; readonly pollers: number; readonly run: string },
): Promise<EmulatorSample> {
  const { messages, pollers, run } = options;
  const queueName = `bench-${subject.implementation.id}-${run}`.replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 80);
  const { QueueUrl } = await rig.sqs.send(
    new CreateQueueCommand({ QueueName: queueName, Attributes: { VisibilityTimeout: '5' } }),
  );
  const queueUrl = QueueUrl!;
  const queueArn = `arn:aws:sqs:us-east-1:000000000000:${queueName}`;
  try {
    const chunks: number[] = [];
    for (let first = 0; first < messages; first += 10) chunks.push(first);
    await inParallel(chunks, 4, async (first) => {
      const entries = [];
      for (let n = first; n < Math.min(first + 10, messages); n++) {
        entries.push({ Id: String(n), MessageBody: JSON.stringify(orderEvent(run, n)) });
      }
      const { Failed } = await rig.sqs.send(
        new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }),
      );
      if (Failed?.length) throw new Error(`Sending failed for ${Failed.length} messages`);
    });

    subject.counter.reset();
    subject.capacity.reset();
    const context = benchContext();
    let done = 0;
    let batches = 0;
    let failures = 0;
    const started = process.hrtime.bigint();
    // The clock stops at the last delete, not when idle pollers return from their long poll.
    let finished = started;
    const deadline = Date.now() + 120_000;
    await Promise.all(
      Array.from({ length: pollers }, async () => {
        while (done < messages) {
          if (Date.now() > deadline) throw new Error(`Timed out with ${done}/${messages} processed`);
          const { Messages = [] } = await rig.sqs.send(
            new ReceiveMessageCommand({
              QueueUrl: queueUrl,
              MaxNumberOfMessages: 10,
              WaitTimeSeconds: 1,
              MessageSystemAttributeNames: ['ApproximateReceiveCount'],
            }),
          );
          if (Messages.length === 0) continue;
          batches += 1;
          const records = Messages.map((message) => toRecord(message, queueArn));
          const response = await subject.container.handler({ Records: records }, context);
          const failed = new Set(response.batchItemFailures.map((failure) => failure.itemIdentifier));
          failures += failed.size;
          const acknowledged = records.filter((record) => !failed.has(record.messageId));
          if (acknowledged.length > 0) {
            await rig.sqs.send(
              new DeleteMessageBatchCommand({
                QueueUrl: queueUrl,
                Entries: acknowledged.map((record, index) => ({
                  Id: String(index),
                  ReceiptHandle: record.receiptHandle!,
                })),
              }),
            );
          }
          done += acknowledged.length;
          if (done >= messages) finished = process.hrtime.bigint();
        }
      }),
    );
    const seconds = Number(finished - started) / 1e9;
    return {
      recordsPerSecond: messages / seconds,
      requestsPerMessage: subject.counter.total() / messages,
      batches,
      failures,
      consumedUnitsPerMessage: (() => {
        const units = subject.capacity.units();
        return units === null ? null : units / messages;
      })(),
    };
  } finally {
    await rig.sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl })).catch(() => undefined);
  }
}
