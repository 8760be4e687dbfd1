/**
 * The README's stream samples (`examples/stream-*.ts`), imported as they are and run against the
 * emulator: the environment the construct would set is set first, then each module is loaded
 * (its SDK clients created at module scope, as in Lambda) and its handler run on records read
 * from a real stream with `GetRecords`. Their default logger and metrics write to standard
 * output, which is captured.
 */
import { randomBytes } from 'node:crypto';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import {
  CreateStreamCommand,
  DeleteStreamCommand,
  DescribeStreamCommand,
  KinesisClient,
  PutRecordsCommand,
} from '@aws-sdk/client-kinesis';
import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENV } from '../../lambda';
import { localAwsEnv } from '../../scripts/local-aws/harness';
import { readKinesisShard, readTableStream } from '../../scripts/support/stream-reader';
import { uniqueName } from '../support/aws';
import { captureStdout, createLocalResources, lambdaContext } from '../support/fixtures';
import { createStreamTable } from '../support/stream-fixtures';

const local = createLocalResources();
const admin = local.dynamoDbClient();
const kinesis = new KinesisClient(local.aws);
const streams = new DynamoDBStreamsClient(local.aws);
const run = randomBytes(3).toString('hex');
const inboxTable = uniqueName('eo-stream-examples-inbox');
const ordersTable = uniqueName('eo-stream-examples-orders');
const readModelTable = uniqueName('eo-stream-examples-read-model');
const sourceTable = uniqueName('eo-stream-examples-source');
const streamName = uniqueName('eo-stream-examples');
const savedEnv = { ...process.env };

beforeAll(async () => {
  await Promise.all([
    local.createTable(inboxTable),
    local.createTable(ordersTable, ['pk', 'sk']),
    local.createTable(readModelTable),
  ]);
  const { url } = await local.createQueue('eo-stream-examples-dlq');
  // What the construct sets on the deployed function; the examples' unconfigured SDK clients
  // then reach the local endpoint.
  Object.assign(process.env, localAwsEnv(local.aws), {
    [ENV.consumer]: 'stream-examples',
    [ENV.inboxTable]: inboxTable,
    [ENV.deadLetterMode]: 'direct',
    [ENV.deadLetterQueueUrl]: url,
    ORDERS_TABLE: ordersTable,
    READ_MODEL_TABLE: readModelTable,
  });
});

afterAll(async () => {
  process.env = savedEnv;
  await Promise.allSettled([
    admin.send(new DeleteTableCommand({ TableName: sourceTable })),
    kinesis.send(new DeleteStreamCommand({ StreamName: streamName })),
  ]);
  kinesis.destroy();
  streams.destroy();
  await local.dispose();
});

describe('README stream samples', () => {
  it("stream-kinesis-orders.ts writes each order once, a producer's second write being a duplicate", async () => {
    await kinesis.send(new CreateStreamCommand({ StreamName: streamName, ShardCount: 1 }));
    const { StreamDescription } = await kinesis.send(new DescribeStreamCommand({ StreamName: streamName }));
    const event = { eventId: `evt-${run}`, orderId: `o-${run}`, status: 'PAID' };
    const data = Buffer.from(JSON.stringify(event));
    for (const _write of [1, 2]) {
      await kinesis.send(
        new PutRecordsCommand({
          StreamName: streamName,
          Records: [{ PartitionKey: event.orderId, Data: data }],
        }),
      );
    }
    const records = await readKinesisShard(
      kinesis,
      StreamDescription!.StreamARN!,
      StreamDescription!.Shards![0]!.ShardId!,
    );
    const { handler } = await import('../../examples/stream-kinesis-orders');

    const { result, lines } = await captureStdout(() => handler({ Records: records }, lambdaContext()));

    expect(result).toEqual({ batchItemFailures: [] });
    expect(lines.filter((line) => line.outcome !== undefined).map(({ outcome }) => outcome)).toEqual([
      'duplicate',
    ]);
    expect(await local.readItem(ordersTable, { pk: `ORDER#${event.orderId}`, sk: 'ORDER' })).toEqual({
      pk: `ORDER#${event.orderId}`,
      sk: 'ORDER',
      status: 'PAID',
    });
  });

  it('stream-order-read-model.ts projects each change once and follows a delete', async () => {
    const streamArn = await createStreamTable(admin, sourceTable);
    const writer = local.documentClient();
    const kept = `order-kept-${run}`;
    const removed = `order-removed-${run}`;
    await writer.send(
      new PutCommand({ TableName: sourceTable, Item: { pk: kept, version: 1, status: 'NEW', total: 10 } }),
    );
    await writer.send(
      new PutCommand({ TableName: sourceTable, Item: { pk: kept, version: 2, status: 'PAID', total: 10 } }),
    );
    await writer.send(
      new PutCommand({ TableName: sourceTable, Item: { pk: removed, version: 1, status: 'NEW', total: 5 } }),
    );
    await writer.send(new DeleteCommand({ TableName: sourceTable, Key: { pk: removed } }));
    const records = await readTableStream(streams, streamArn);
    expect(records.map((record) => record.eventName)).toEqual(['INSERT', 'MODIFY', 'INSERT', 'REMOVE']);
    const { handler } = await import('../../examples/stream-order-read-model');

    const first = await captureStdout(() => handler({ Records: records }, lambdaContext()));
    // Re-reading the stream from TRIM_HORIZON is the replay: every change is a duplicate.
    const replay = await captureStdout(() => handler({ Records: records }, lambdaContext()));

    expect(first.result).toEqual({ batchItemFailures: [] });
    expect(replay.result).toEqual({ batchItemFailures: [] });
    expect(replay.lines.filter((line) => line.outcome !== undefined).map(({ outcome }) => outcome)).toEqual([
      'duplicate',
      'duplicate',
      'duplicate',
      'duplicate',
    ]);
    expect(await local.scanItems(readModelTable)).toEqual([
      { pk: kept, status: 'PAID', total: 10, version: 2 },
    ]);
  });
});
