/**
 * `createDynamoDbStreamHandler` (from `effectively-once/streams`) against the emulator over HTTP:
 * a real table with a `NEW_AND_OLD_IMAGES` stream, its records read with `GetRecords` (turned
 * into the Lambda event shape) and projected into a read model with the inbox record in one
 * transaction, and a real SQS dead-letter queue. Re-reading the stream from `TRIM_HORIZON` is the
 * replay.
 */
import { randomBytes } from 'node:crypto';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createDynamoDbStore,
  createSqsDeadLetterSender,
  DEAD_LETTER_ATTRIBUTES,
  type Message,
} from '../../lambda';
import { atomic } from '../../lambda/modes/atomic';
import {
  createDynamoDbStreamHandler,
  type DynamoDbChange,
  type DynamoDbStreamRecord,
  fromKeysAndVersion,
  STREAM_DEAD_LETTER_FORMAT,
  type StreamDeadLetterBody,
} from '../../lambda/streams';
import { readTableStream } from '../../scripts/support/stream-reader';
import { uniqueName } from '../support/aws';
import { captureLogger, createLocalResources, lambdaContext, type TestQueue } from '../support/fixtures';
import { createStreamTable } from '../support/stream-fixtures';

interface Order {
  readonly pk: string;
  readonly version: number;
  readonly status: string;
}

const local = createLocalResources();
const admin = local.dynamoDbClient();
const writer = local.documentClient();
const streams = new DynamoDBStreamsClient(local.aws);
const inboxTable = uniqueName('eo-ddb-streams-inbox');
const readModel = uniqueName('eo-ddb-streams-read-model');
const sourceTables: string[] = [];
const runId = randomBytes(3).toString('hex');
let deadLetterQueue: TestQueue;

beforeAll(async () => {
  await Promise.all([local.createTable(inboxTable), local.createTable(readModel)]);
  deadLetterQueue = await local.createQueue('eo-ddb-streams-dlq');
});

afterAll(async () => {
  await Promise.allSettled(
    sourceTables.map((TableName) => admin.send(new DeleteTableCommand({ TableName }))),
  );
  streams.destroy();
  await local.dispose();
});

/** A new orders table with a `NEW_AND_OLD_IMAGES` stream; returns its name and stream ARN. */
async function createOrdersTable(): Promise<{ name: string; streamArn: string }> {
  const name = uniqueName('eo-orders');
  sourceTables.push(name);
  return { name, streamArn: await createStreamTable(admin, name) };
}

const write = (tableName: string, item: Order) =>
  writer.send(new PutCommand({ TableName: tableName, Item: item }));

/** A projection of orders into the read model; it throws (a retry) for the order versions in `failing`. */
function projection(failing: Set<string> = new Set()) {
  const logger = captureLogger();
  const handler = createDynamoDbStreamHandler<DynamoDbChange<Order>>({
    consumer: 'order-read-model',
    dedupKey: fromKeysAndVersion('version'),
    mode: atomic((message: Message<DynamoDbChange<Order>>, unitOfWork) => {
      const order = message.body.newImage!;
      if (failing.has(`${order.pk}@${order.version}`)) throw new Error('read model unavailable');
      unitOfWork.put({
        TableName: readModel,
        Item: { pk: order.pk, status: order.status, version: order.version },
      });
    }),
    store: createDynamoDbStore({ client: local.documentClient(), tableName: inboxTable }),
    deadLetterSender: createSqsDeadLetterSender({ client: local.sqs, queueUrl: deadLetterQueue.url }),
    environment: {},
    logger,
    logLevel: 'debug',
    metrics: false,
  });
  const run = (records: readonly DynamoDbStreamRecord[]) => handler({ Records: records }, lambdaContext());
  const outcomes = () => logger.entries.map(({ outcome, code }) => ({ outcome, code }));
  return { run, outcomes };
}

const checkpoint = (...sequenceNumbers: string[]) => ({
  batchItemFailures: sequenceNumbers.map((itemIdentifier) => ({ itemIdentifier })),
});

describe('createDynamoDbStreamHandler on the emulator', () => {
  it('checkpoints at a failed change, runs none after it, and the re-read from TRIM_HORIZON acknowledges the projected ones as duplicates', async () => {
    const table = await createOrdersTable();
    const pk = `order-${runId}`;
    await write(table.name, { pk, version: 1, status: 'NEW' });
    await write(table.name, { pk, version: 2, status: 'PAID' });
    await write(table.name, { pk, version: 3, status: 'SHIPPED' });
    const records = await readTableStream(streams, table.streamArn);
    expect(records.map((record) => record.eventName)).toEqual(['INSERT', 'MODIFY', 'MODIFY']);

    const broken = projection(new Set([`${pk}@2`]));
    expect(await broken.run(records)).toEqual(checkpoint(records[1]!.dynamodb.SequenceNumber));
    expect(await local.readItem(readModel, { pk })).toEqual({ pk, status: 'NEW', version: 1 });
    expect(broken.outcomes()).toEqual([
      { outcome: 'processed', code: undefined },
      { outcome: 'retry', code: 'HANDLER_FAILED' },
      { outcome: 'retry', code: 'GROUP_BLOCKED' },
    ]);

    const fixed = projection();
    expect(await fixed.run(await readTableStream(streams, table.streamArn))).toEqual(checkpoint());
    expect(fixed.outcomes()).toEqual([
      { outcome: 'duplicate', code: undefined },
      { outcome: 'processed', code: undefined },
      { outcome: 'processed', code: undefined },
    ]);
    expect(await local.readItem(readModel, { pk })).toEqual({ pk, status: 'SHIPPED', version: 3 });
  });

  it('dead-letters a second write under the same version with a different payload, and projects the next change', async () => {
    const table = await createOrdersTable();
    const pk = `order-reused-${runId}`;
    await write(table.name, { pk, version: 1, status: 'NEW' });
    await write(table.name, { pk, version: 2, status: 'PAID' });
    // A writer that forgot to raise the version.
    await write(table.name, { pk, version: 2, status: 'REFUNDED' });
    await write(table.name, { pk, version: 3, status: 'SHIPPED' });

    const { run, outcomes } = projection();
    const records = await readTableStream(streams, table.streamArn);
    const response = await run(records);

    expect(response).toEqual(checkpoint());
    expect(outcomes()).toEqual([
      { outcome: 'processed', code: undefined },
      { outcome: 'processed', code: undefined },
      { outcome: 'mismatch', code: 'PAYLOAD_MISMATCH' },
      { outcome: 'processed', code: undefined },
    ]);
    expect(await local.readItem(readModel, { pk })).toEqual({ pk, status: 'SHIPPED', version: 3 });
    const [deadLetter, ...others] = await local.receive(deadLetterQueue.url);
    expect(others).toEqual([]);
    const reused = records[2]!;
    const envelope = JSON.parse(deadLetter!.Body!) as StreamDeadLetterBody;
    expect(envelope).toEqual({
      format: STREAM_DEAD_LETTER_FORMAT,
      source: {
        eventSource: 'aws:dynamodb',
        eventSourceArn: table.streamArn,
        sequenceNumber: reused.dynamodb.SequenceNumber,
        eventId: reused.eventID,
        arrivalTime: reused.dynamodb.ApproximateCreationDateTime,
        eventName: 'MODIFY',
        keys: { pk: { S: pk } },
      },
      reason: expect.stringContaining('different payload'),
      code: 'PAYLOAD_MISMATCH',
      data: expect.objectContaining({ encoding: 'utf-8' }),
    });
    // The data is the record's `dynamodb` field as delivered: both images, typed.
    const change = JSON.parse((envelope.data as { value: string }).value);
    expect(change).toEqual(reused.dynamodb);
    expect(change).toMatchObject({
      Keys: { pk: { S: pk } },
      NewImage: { pk: { S: pk }, version: { N: '2' }, status: { S: 'REFUNDED' } },
      OldImage: { pk: { S: pk }, version: { N: '2' }, status: { S: 'PAID' } },
    });
    expect(deadLetter?.MessageAttributes?.[DEAD_LETTER_ATTRIBUTES.code]?.StringValue).toBe(
      'PAYLOAD_MISMATCH',
    );
    expect(deadLetter?.MessageAttributes?.[DEAD_LETTER_ATTRIBUTES.dedupKey]?.StringValue).toBe(
      `${pk}:MODIFY:2`,
    );
  });
});
