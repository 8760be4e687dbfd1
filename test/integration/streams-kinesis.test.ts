/**
 * `createKinesisHandler` (from `effectively-once/streams`) against the emulator over HTTP: real
 * Kinesis streams written with `PutRecords` and read with `GetRecords` (turned into the Lambda
 * event shape), the real DynamoDB inbox and business tables, and a real SQS dead-letter queue.
 * The emulator's event source mappings ignore `batchItemFailures` (docs/local-aws-streams.md), so
 * the handler is run on the records directly.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  CreateStreamCommand,
  DeleteStreamCommand,
  DescribeStreamCommand,
  KinesisClient,
  PutRecordsCommand,
} from '@aws-sdk/client-kinesis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createDynamoDbStore,
  createSqsDeadLetterSender,
  DEAD_LETTER_ATTRIBUTES,
  type Message,
  type UnitOfWork,
} from '../../lambda';
import { atomic } from '../../lambda/modes/atomic';
import {
  createKinesisHandler,
  fromData,
  type KinesisStreamRecord,
  STREAM_DEAD_LETTER_FORMAT,
  STREAM_RECORD_ATTRIBUTES,
} from '../../lambda/streams';
import { readKinesisShard } from '../../scripts/support/stream-reader';
import { uniqueName } from '../support/aws';
import {
  captureLogger,
  createLocalResources,
  lambdaContext,
  type TestQueue,
  waitFor,
} from '../support/fixtures';

interface OrderEvent {
  readonly eventId: string;
  readonly orderId: string;
  readonly status: string;
}

const local = createLocalResources();
const kinesis = new KinesisClient(local.aws);
const inboxTable = uniqueName('eo-streams-inbox');
const ordersTable = uniqueName('eo-streams-orders');
const streams: string[] = [];
const runId = randomBytes(3).toString('hex');
let deadLetterQueue: TestQueue;

beforeAll(async () => {
  await Promise.all([local.createTable(inboxTable), local.createTable(ordersTable)]);
  deadLetterQueue = await local.createQueue('eo-streams-dlq');
});

afterAll(async () => {
  await Promise.allSettled(
    streams.map((StreamName) =>
      kinesis.send(new DeleteStreamCommand({ StreamName, EnforceConsumerDeletion: true })),
    ),
  );
  kinesis.destroy();
  await local.dispose();
});

/** A new one-shard stream; returns its ARN and shard id. */
async function createStream(): Promise<{ name: string; arn: string; shardId: string }> {
  const name = uniqueName('eo-orders');
  streams.push(name);
  await kinesis.send(new CreateStreamCommand({ StreamName: name, ShardCount: 1 }));
  const { StreamDescription } = await waitFor('the stream to be active', async () => {
    const described = await kinesis.send(new DescribeStreamCommand({ StreamName: name }));
    return described.StreamDescription?.StreamStatus === 'ACTIVE' ? described : undefined;
  });
  return { name, arn: StreamDescription!.StreamARN!, shardId: StreamDescription!.Shards![0]!.ShardId! };
}

/** Writes `events` with one `PutRecords` call, each keyed by its order; returns the sequence numbers. */
async function put(streamName: string, ...events: OrderEvent[]): Promise<string[]> {
  const { Records = [], FailedRecordCount } = await kinesis.send(
    new PutRecordsCommand({
      StreamName: streamName,
      Records: events.map((event) => ({
        PartitionKey: event.orderId,
        Data: Buffer.from(JSON.stringify(event)),
      })),
    }),
  );
  expect(FailedRecordCount ?? 0).toBe(0);
  return Records.map((record) => record.SequenceNumber!);
}

const order = (label: string, status = 'PAID'): OrderEvent => ({
  eventId: `evt-${label}-${runId}`,
  orderId: `order-${label}-${runId}`,
  status,
});

/**
 * An atomic-mode Kinesis handler that writes each order to the orders table with its inbox
 * record; it throws (a retry) for the event ids in `failing`.
 */
function projector(failing: Set<string> = new Set()) {
  const logger = captureLogger();
  const handler = createKinesisHandler<OrderEvent>({
    consumer: 'order-stream',
    dedupKey: fromData('eventId'),
    mode: atomic((message: Message<OrderEvent>, unitOfWork: UnitOfWork) => {
      if (failing.has(message.body.eventId)) throw new Error('read model unavailable');
      unitOfWork.put({
        TableName: ordersTable,
        Item: { pk: message.body.orderId, status: message.body.status },
      });
    }),
    store: createDynamoDbStore({ client: local.documentClient(), tableName: inboxTable }),
    deadLetterSender: createSqsDeadLetterSender({ client: local.sqs, queueUrl: deadLetterQueue.url }),
    environment: {},
    logger,
    logLevel: 'debug',
    metrics: false,
  });
  const run = (records: readonly KinesisStreamRecord[]) => handler({ Records: records }, lambdaContext());
  const outcomes = () => logger.entries.map(({ messageId, outcome }) => ({ messageId, outcome }));
  return { run, outcomes, logger };
}

const checkpoint = (...sequenceNumbers: string[]) => ({
  batchItemFailures: sequenceNumbers.map((itemIdentifier) => ({ itemIdentifier })),
});

describe('createKinesisHandler on the emulator', () => {
  it('reports exactly the sequence number of a failure mid-shard, runs none of the later records, and the replay acknowledges the processed ones as duplicates', async () => {
    const stream = await createStream();
    const [first, failing, last] = [order('a1'), order('a2'), order('a3')];
    const sequenceNumbers = await put(stream.name, first, failing, last);
    const records = await readKinesisShard(kinesis, stream.arn, stream.shardId);
    expect(records.map((record) => record.kinesis.sequenceNumber)).toEqual(sequenceNumbers);

    const broken = projector(new Set([failing.eventId]));
    expect(await broken.run(records)).toEqual(checkpoint(sequenceNumbers[1]!));
    expect(await local.readItem(ordersTable, { pk: first.orderId })).toEqual({
      pk: first.orderId,
      status: 'PAID',
    });
    expect(await local.readItem(ordersTable, { pk: failing.orderId })).toBeUndefined();
    expect(await local.readItem(ordersTable, { pk: last.orderId })).toBeUndefined();
    expect(broken.logger.entries.map(({ outcome, code }) => ({ outcome, code }))).toEqual([
      { outcome: 'processed', code: undefined },
      { outcome: 'retry', code: 'HANDLER_FAILED' },
      { outcome: 'retry', code: 'GROUP_BLOCKED' },
    ]);

    // The fix is deployed and the shard is read again from the start of its retention.
    const fixed = projector();
    const replayed = await readKinesisShard(kinesis, stream.arn, stream.shardId);
    expect(await fixed.run(replayed)).toEqual(checkpoint());
    expect(fixed.outcomes()).toEqual([
      { messageId: `${stream.shardId}:${sequenceNumbers[0]}`, outcome: 'duplicate' },
      { messageId: `${stream.shardId}:${sequenceNumbers[1]}`, outcome: 'processed' },
      { messageId: `${stream.shardId}:${sequenceNumbers[2]}`, outcome: 'processed' },
    ]);
    expect(await local.readItem(ordersTable, { pk: last.orderId })).toEqual({
      pk: last.orderId,
      status: 'PAID',
    });
  });

  it("acknowledges a producer's second PutRecords of the same event (a new sequence number) as a duplicate", async () => {
    const stream = await createStream();
    const event = order('b1');
    const [firstWrite] = await put(stream.name, event);
    const [secondWrite] = await put(stream.name, event);
    expect(secondWrite).not.toBe(firstWrite);

    const { run, outcomes } = projector();
    const response = await run(await readKinesisShard(kinesis, stream.arn, stream.shardId));

    expect(response).toEqual(checkpoint());
    expect(outcomes()).toEqual([
      { messageId: `${stream.shardId}:${firstWrite}`, outcome: 'processed' },
      { messageId: `${stream.shardId}:${secondWrite}`, outcome: 'duplicate' },
    ]);
    const inbox = (await local.scanItems(inboxTable)).filter((item) =>
      String(item.pk).endsWith(event.eventId),
    );
    expect(inbox).toHaveLength(1);
  });

  it('sends a different payload under the same key to the dead-letter queue with the reason and where it came from, and moves the shard on', async () => {
    const stream = await createStream();
    const paid = order('c1');
    const reused = { ...paid, status: 'REFUNDED' };
    const next = order('c2');
    const sequenceNumbers = await put(stream.name, paid, reused, next);

    const { run } = projector();
    const response = await run(await readKinesisShard(kinesis, stream.arn, stream.shardId));

    expect(response).toEqual(checkpoint());
    expect(await local.readItem(ordersTable, { pk: paid.orderId })).toEqual({
      pk: paid.orderId,
      status: 'PAID',
    });
    expect(await local.readItem(ordersTable, { pk: next.orderId })).toEqual({
      pk: next.orderId,
      status: 'PAID',
    });
    const [deadLetter, ...others] = await local.receive(deadLetterQueue.url);
    expect(others).toEqual([]);
    const reusedData = Buffer.from(JSON.stringify(reused));
    expect(JSON.parse(deadLetter!.Body!)).toEqual({
      format: STREAM_DEAD_LETTER_FORMAT,
      source: {
        eventSource: 'aws:kinesis',
        eventSourceArn: stream.arn,
        shardId: stream.shardId,
        sequenceNumber: sequenceNumbers[1],
        eventId: `${stream.shardId}:${sequenceNumbers[1]}`,
        partitionKey: paid.orderId,
        arrivalTime: expect.any(Number),
      },
      reason: expect.stringContaining('different payload'),
      code: 'PAYLOAD_MISMATCH',
      data: {
        encoding: 'utf-8',
        value: JSON.stringify(reused),
        bytes: reusedData.byteLength,
        sha256: createHash('sha256').update(reusedData).digest('hex'),
      },
    });
    const attribute = (name: string) => deadLetter?.MessageAttributes?.[name]?.StringValue;
    expect({
      code: attribute(DEAD_LETTER_ATTRIBUTES.code),
      dedupKey: attribute(DEAD_LETTER_ATTRIBUTES.dedupKey),
      sourceMessageId: attribute(DEAD_LETTER_ATTRIBUTES.sourceMessageId),
      stream: attribute(STREAM_RECORD_ATTRIBUTES.eventSourceArn),
      shardId: attribute(STREAM_RECORD_ATTRIBUTES.shardId),
      sequenceNumber: attribute(STREAM_RECORD_ATTRIBUTES.sequenceNumber),
      partitionKey: attribute(STREAM_RECORD_ATTRIBUTES.partitionKey),
    }).toEqual({
      code: 'PAYLOAD_MISMATCH',
      dedupKey: paid.eventId,
      sourceMessageId: `${stream.shardId}:${sequenceNumbers[1]}`,
      stream: stream.arn,
      shardId: stream.shardId,
      sequenceNumber: sequenceNumbers[1],
      partitionKey: paid.orderId,
    });
    expect(attribute(DEAD_LETTER_ATTRIBUTES.reason)).toContain('different payload');
  });
});
