/**
 * A stream consumer end to end on the emulator: `streams-function-handler.ts` bundled with the
 * AWS SDK (as the emulator needs, see docs/local-aws-streams.md), deployed as a Lambda function
 * with the construct's `EO_*` settings, and fed by a Kinesis event source mapping from
 * `TRIM_HORIZON`. The emulator's mappings ignore `batchItemFailures`, so this test covers what
 * they do honour: a producer's duplicate write is a duplicate and a reused key with a different
 * payload reaches the dead-letter queue; the checkpoint itself is tested on records read with
 * `GetRecords` (`streams-kinesis.test.ts`).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  CreateStreamCommand,
  DeleteStreamCommand,
  DescribeStreamCommand,
  KinesisClient,
  PutRecordsCommand,
} from '@aws-sdk/client-kinesis';
import {
  CreateEventSourceMappingCommand,
  CreateFunctionCommand,
  DeleteEventSourceMappingCommand,
  DeleteFunctionCommand,
  LambdaClient,
} from '@aws-sdk/client-lambda';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEAD_LETTER_ATTRIBUTES, ENV } from '../../lambda';
import { STREAM_DEAD_LETTER_FORMAT } from '../../lambda/streams';
import { uniqueName } from '../support/aws';
import { createLocalResources, type TestQueue, waitFor } from '../support/fixtures';

const root = resolve(__dirname, '../..');
const local = createLocalResources();
const kinesis = new KinesisClient(local.aws);
const lambda = new LambdaClient(local.aws);
const inboxTable = uniqueName('eo-fn-streams-inbox');
const ordersTable = uniqueName('eo-fn-streams-orders');
const streamName = uniqueName('eo-fn-orders');
const functionName = uniqueName('eo-fn-stream-consumer');
const runId = randomBytes(3).toString('hex');
const workDir = mkdtempSync(join(tmpdir(), 'eo-streams-function-'));
let deadLetterQueue: TestQueue;
let mappingId: string | undefined;

/** The handler bundled as CommonJS with the AWS SDK inside, zipped as `index.js`. */
async function handlerZip(): Promise<Buffer> {
  await build({
    entryPoints: [join(__dirname, 'streams-function-handler.ts')],
    outfile: join(workDir, 'index.js'),
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    tsconfig: join(root, 'tsconfig.json'),
    logLevel: 'silent',
  });
  const zip = join(workDir, 'function.zip');
  // Python is already a requirement of the emulator; its zipfile module writes the archive.
  execFileSync('python3', [
    '-c',
    'import sys, zipfile\nwith zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z: z.write(sys.argv[2], "index.js")',
    zip,
    join(workDir, 'index.js'),
  ]);
  return readFileSync(zip);
}

beforeAll(async () => {
  await Promise.all([local.createTable(inboxTable), local.createTable(ordersTable)]);
  deadLetterQueue = await local.createQueue('eo-fn-streams-dlq');
  await kinesis.send(new CreateStreamCommand({ StreamName: streamName, ShardCount: 1 }));
  const { StreamDescription } = await kinesis.send(new DescribeStreamCommand({ StreamName: streamName }));
  await lambda.send(
    new CreateFunctionCommand({
      FunctionName: functionName,
      Runtime: 'nodejs22.x',
      Handler: 'index.handler',
      Role: 'arn:aws:iam::000000000000:role/stream-consumer',
      Code: { ZipFile: await handlerZip() },
      Timeout: 30,
      Environment: {
        Variables: {
          [ENV.consumer]: 'order-stream',
          [ENV.inboxTable]: inboxTable,
          [ENV.deadLetterMode]: 'direct',
          [ENV.deadLetterQueueUrl]: deadLetterQueue.url,
          [ENV.logLevel]: 'warn',
          ORDERS_TABLE: ordersTable,
        },
      },
    }),
  );
  const mapping = await lambda.send(
    new CreateEventSourceMappingCommand({
      FunctionName: functionName,
      EventSourceArn: StreamDescription!.StreamARN,
      StartingPosition: 'TRIM_HORIZON',
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    }),
  );
  mappingId = mapping.UUID;
}, 60_000);

afterAll(async () => {
  if (mappingId !== undefined) await lambda.send(new DeleteEventSourceMappingCommand({ UUID: mappingId }));
  await Promise.allSettled([
    lambda.send(new DeleteFunctionCommand({ FunctionName: functionName })),
    kinesis.send(new DeleteStreamCommand({ StreamName: streamName })),
  ]);
  lambda.destroy();
  kinesis.destroy();
  rmSync(workDir, { recursive: true, force: true });
  await local.dispose();
});

describe('a deployed Kinesis consumer behind an event source mapping', () => {
  it("processes a producer's duplicate write once and sends a reused key with a different payload to the dead-letter queue", async () => {
    const paid = { eventId: `evt-${runId}`, orderId: `order-${runId}`, status: 'PAID' };
    const reused = { ...paid, status: 'REFUNDED' };
    const put = (...events: object[]) =>
      kinesis.send(
        new PutRecordsCommand({
          StreamName: streamName,
          Records: events.map((event) => ({
            PartitionKey: paid.orderId,
            Data: Buffer.from(JSON.stringify(event)),
          })),
        }),
      );
    await put(paid);
    // The producer retries a write whose answer it lost, then reuses the event id by mistake.
    await put(paid, reused);

    const [deadLetter] = await waitFor('the dead letter', async () => {
      const messages = await local.receive(deadLetterQueue.url);
      return messages.length > 0 ? messages : undefined;
    });

    // The stream dead letter: the record's coordinates, and its data whole (UTF-8 text).
    expect(JSON.parse(deadLetter!.Body!)).toMatchObject({
      format: STREAM_DEAD_LETTER_FORMAT,
      source: { eventSource: 'aws:kinesis', partitionKey: paid.orderId },
      code: 'PAYLOAD_MISMATCH',
      data: { encoding: 'utf-8', value: JSON.stringify(reused) },
    });
    expect(deadLetter?.MessageAttributes?.[DEAD_LETTER_ATTRIBUTES.code]?.StringValue).toBe(
      'PAYLOAD_MISMATCH',
    );
    expect(await local.readItem(ordersTable, { pk: paid.orderId })).toEqual({
      pk: paid.orderId,
      status: 'PAID',
    });
    const inbox = await local.scanItems(inboxTable);
    expect(inbox.map((item) => item.pk)).toEqual([`order-stream#${paid.eventId}`]);
    expect(await local.queueDepth(deadLetterQueue.url)).toBe(1);
  });
});
