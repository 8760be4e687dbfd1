/**
 * The double-tap replay tool against the real local AWS endpoint over HTTP: the helper
 * (`doubleTap`) and the CLI as a child process. No Lambda polls these queues, so each test
 * runs an in-process consumer that applies a handler to DynamoDB while the tool runs.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  PutItemCommand,
  type TransactionCanceledException,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import {
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { build } from 'esbuild';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { doubleTap, formatDifferences, type ProgressEvent } from '../../cli/replay';
import { uniqueName } from '../support/aws';
import { createLocalResources } from '../support/fixtures';

const root = resolve(__dirname, '../..');
const fixtures = join(root, 'test/fixtures/replay');
const ordersLog = join(fixtures, 'orders.jsonl');

const local = createLocalResources();
const { aws, sqs } = local;
const dynamodb = local.dynamoDbClient();
const consumers: Consumer[] = [];
let queueUrl = '';

/** Drains fast: the emulator's counters are exact, so short polls are enough. */
const quickDrain = { pollIntervalMillis: 200, stablePolls: 3, timeoutSeconds: 30 } as const;

beforeAll(async () => {
  queueUrl = await createQueue('replay');
});

afterEach(async () => {
  await Promise.all(consumers.splice(0).map((consumer) => consumer.stop()));
});

afterAll(async () => {
  await Promise.all(consumers.splice(0).map((consumer) => consumer.stop()));
  await local.dispose();
});

describe('doubleTap', () => {
  it('names the timestamp a handler rewrites on every delivery', async () => {
    const orders = await createTable('replay-orders');
    startConsumer(async (order) => {
      await dynamodb.send(
        new PutItemCommand({
          TableName: orders,
          Item: {
            pk: { S: order.orderId },
            amount: { N: String(order.amount) },
            processedAt: { N: String(Date.now()) },
          },
        }),
      );
    });

    const result = await doubleTap({
      log: readFileSync(ordersLog, 'utf8'),
      queueUrl,
      tables: [orders],
      sqs,
      dynamodb,
      ...quickDrain,
    });

    expect(result.changed).toBe(true);
    expect(result.messages).toBe(3);
    expect(result.differences.map(({ table, key, change, path }) => ({ table, key, change, path }))).toEqual(
      ['o-1', 'o-2', 'o-3'].map((id) => ({
        table: orders,
        key: { pk: { S: id } },
        change: 'changed',
        path: 'processedAt',
      })),
    );
    for (const difference of result.differences) {
      expect(Number(difference.after?.N)).toBeGreaterThan(Number(difference.before?.N));
    }
  });

  it('names the counter a handler increments on every delivery, across several batches', async () => {
    const orders = await createTable('replay-orders');
    startConsumer(async (order) => {
      await dynamodb.send(
        new UpdateItemCommand({
          TableName: orders,
          Key: { pk: { S: order.orderId } },
          UpdateExpression: 'SET amount = :amount ADD deliveries :one',
          ExpressionAttributeValues: { ':amount': { N: String(order.amount) }, ':one': { N: '1' } },
        }),
      );
    });
    const log = Array.from({ length: 25 }, (_, index) => ({
      body: { orderId: `o-${String(index + 1).padStart(2, '0')}`, amount: index },
      attributes: { dedupKey: `o-${index + 1}#PAID` },
    }));

    const result = await doubleTap({ log, queueUrl, tables: [orders], sqs, dynamodb, ...quickDrain });

    expect(result.differences).toEqual(
      log.map(({ body }) => ({
        table: orders,
        key: { pk: { S: body.orderId } },
        change: 'changed',
        path: 'deliveries',
        before: { N: '1' },
        after: { N: '2' },
      })),
    );
    expect(result.firstSnapshot[0]?.items).toHaveLength(25);
  });

  it('finds no differences for an idempotent handler that commits its marker and business write in one transaction', async () => {
    const orders = await createTable('replay-orders');
    const inbox = await createTable('replay-inbox');
    startConsumer(idempotentHandler(orders, inbox));

    const result = await doubleTap({
      log: readFileSync(ordersLog, 'utf8'),
      queueUrl,
      tables: [orders, inbox],
      sqs,
      dynamodb,
      ...quickDrain,
    });

    expect(result.differences, formatDifferences(result.differences)).toEqual([]);
    expect(result.changed).toBe(false);
    expect(result.firstSnapshot.map((snapshot) => snapshot.items.length)).toEqual([3, 3]);
    expect(result.secondSnapshot).toEqual(result.firstSnapshot);
  });

  it('waits through a custom drain hook when nothing polls the queue, and reports progress without message bodies', async () => {
    const orders = await createTable('replay-orders');
    const handler = countingHandler(orders);
    const events: ProgressEvent[] = [];
    const drains: unknown[] = [];

    const result = await doubleTap({
      log: [{ body: { orderId: 'o-1', amount: 5, secret: 'card-4111' } }],
      queueUrl,
      tables: [orders],
      sqs,
      dynamodb,
      timeoutSeconds: 30,
      drain: async (context) => {
        drains.push(context);
        await consumeUntilEmpty(handler);
      },
      onProgress: (event) => events.push(event),
    });

    expect(result.differences.map(({ path, before, after }) => ({ path, before, after }))).toEqual([
      { path: 'deliveries', before: { N: '1' }, after: { N: '2' } },
    ]);
    expect(drains).toEqual([
      { pass: 1, queueUrl, messages: 1 },
      { pass: 2, queueUrl, messages: 1 },
    ]);
    const steps = events.map((event) =>
      event.phase === 'drained' ? { phase: 'drained', pass: event.pass } : event,
    );
    expect(steps).toEqual(
      [1, 2].flatMap((pass) => [
        { phase: 'send', pass, sent: 0, total: 1 },
        { phase: 'send', pass, sent: 1, total: 1 },
        { phase: 'drained', pass },
        { phase: 'snapshot', pass, table: orders, items: 0, complete: false },
        { phase: 'snapshot', pass, table: orders, items: 1, complete: false },
        { phase: 'snapshot', pass, table: orders, items: 1, complete: true },
      ]),
    );
    expect(JSON.stringify(events)).not.toContain('card-4111');
  });

  it('shows why FIFO replays wait: inside the deduplication window SQS drops the second replay', async () => {
    const fifoQueueUrl = await createQueue('replay', { FifoQueue: 'true' });
    const orders = await createTable('replay-orders');
    startConsumer(countingHandler(orders), fifoQueueUrl);

    const result = await doubleTap({
      log: readFileSync(join(fixtures, 'orders-fifo.jsonl'), 'utf8'),
      queueUrl: fifoQueueUrl,
      tables: [orders],
      sqs,
      dynamodb,
      ...quickDrain,
      // Deliberately not waiting: the counting handler then looks idempotent, which is wrong.
      dedupWindowSeconds: 0,
    });

    expect(result.firstSnapshot[0]?.items.map((item) => [item.pk?.S, item.deliveries?.N])).toEqual([
      ['o-1', '1'],
      ['o-2', '1'],
      ['o-3', '1'],
    ]);
    expect(result.differences).toEqual([]);
  });

  it('checks the queue and tables exist before sending anything', async () => {
    const missing = uniqueName('replay-missing');

    await expect(
      doubleTap({ log: [{ body: 'x' }], queueUrl, tables: [missing], sqs, dynamodb, ...quickDrain }),
    ).rejects.toMatchObject({
      name: 'ReplayError',
      code: 'NOT_FOUND',
      message: `The table ${missing} does not exist (DescribeTable: ResourceNotFoundException).`,
    });
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 0 }),
    );
    expect(Messages).toEqual([]);
  });
});

describe('doubleTap before the first replay', () => {
  it('fails fast with QUEUE_BUSY when the queue still holds messages, sending nothing', async () => {
    const busy = await createQueue('replay-busy');
    const orders = await createTable('replay-orders');
    await sqs.send(new SendMessageCommand({ QueueUrl: busy, MessageBody: 'backlog' }));

    await expect(
      doubleTap({ log: [{ body: 'x' }], queueUrl: busy, tables: [orders], sqs, dynamodb, ...quickDrain }),
    ).rejects.toMatchObject({
      name: 'ReplayError',
      code: 'QUEUE_BUSY',
      message:
        'The queue is not idle before the first replay: 1 visible, 0 in flight, 0 delayed. Those messages ' +
        'would mix into the replay; wait until the consumer has drained them (or purge a test queue) and run again.',
    });
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: busy, AttributeNames: ['ApproximateNumberOfMessages'] }),
    );
    expect(Attributes?.ApproximateNumberOfMessages).toBe('1');
  });

  it('says when the queue’s redrive timing (visibility × receives) exceeds the drain timeout', async () => {
    const deadLetters = await local.createQueue('replay-dlq');
    const slow = await createQueue('replay-slow-redrive', {
      VisibilityTimeout: '20',
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: deadLetters.arn, maxReceiveCount: 3 }),
    });
    const orders = await createTable('replay-orders');
    const notices: ProgressEvent[] = [];

    await expect(
      doubleTap({
        log: [{ body: 'x' }],
        queueUrl: slow,
        tables: [orders],
        sqs,
        dynamodb,
        timeoutSeconds: 30,
        pollIntervalMillis: 200,
        stablePolls: 3,
        onProgress: (event) => {
          if (event.phase === 'notice') {
            notices.push(event);
            // Stop before any message is sent: the notice is all this test needs.
            throw new Error('stop after the notice');
          }
        },
      }),
    ).rejects.toThrow('stop after the notice');
    expect(notices).toEqual([
      {
        phase: 'notice',
        message:
          "The queue's redrive timing exceeds the drain timeout: a message that fails every delivery stays up to " +
          '20 s visibility × 3 receives = 60 s before it moves to the dead-letter queue, and the drain gives up ' +
          'after 30 s. If the log holds poison messages, raise the timeout above 60 s (--timeout, or timeoutSeconds).',
      },
    ]);
  });
});

describe('effectively-once replay (CLI)', () => {
  it('exits 1 and prints each changed field and the verdict when the handler is not idempotent', async () => {
    const orders = await createTable('replay-orders');
    startConsumer(countingHandler(orders));

    const result = await runCli(['replay', ...cliArgs(orders)]);

    expect(result.stdout).toBe(
      [
        `${orders} {pk: "o-1"}`,
        '  ~ deliveries: 1 -> 2',
        `${orders} {pk: "o-2"}`,
        '  ~ deliveries: 1 -> 2',
        `${orders} {pk: "o-3"}`,
        '  ~ deliveries: 1 -> 2',
        '',
        `FAIL: replaying 3 messages a second time changed 3 items in table ${orders} (3 differences).`,
        '',
      ].join('\n'),
    );
    expect(result.code).toBe(1);
    expect(progressLines(result.stderr)).toEqual(
      [1, 2].flatMap((pass) => [
        `pass ${pass}: sending 0/3 messages`,
        `pass ${pass}: sending 3/3 messages`,
        `pass ${pass}: draining`,
        `pass ${pass}: queue drained in`,
        `pass ${pass}: scanning ${orders}: 0 items`,
        `pass ${pass}: snapshot of ${orders}: 3 items`,
      ]),
    );
    expect(result.stderr).not.toContain('amount');
  });

  it('exits 1 with nothing but the JSON report on stdout under --json', async () => {
    const orders = await createTable('replay-orders');
    startConsumer(countingHandler(orders));

    const result = await runCli(['replay', ...cliArgs(orders), '--json']);

    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toEqual({
      changed: true,
      verdict: `FAIL: replaying 3 messages a second time changed 3 items in table ${orders} (3 differences).`,
      messages: 3,
      tables: [{ table: orders, itemsAfterFirstReplay: 3, itemsAfterSecondReplay: 3 }],
      differences: ['o-1', 'o-2', 'o-3'].map((id) => ({
        table: orders,
        key: { pk: { S: id } },
        change: 'changed',
        path: 'deliveries',
        before: { N: '1' },
        after: { N: '2' },
      })),
    });
  });

  it('exits 0 with a passing verdict for an idempotent handler', async () => {
    const orders = await createTable('replay-orders');
    const inbox = await createTable('replay-inbox');
    startConsumer(idempotentHandler(orders, inbox));

    const result = await runCli(['replay', ...cliArgs(orders), '--table', inbox]);

    expect(result).toMatchObject({
      code: 0,
      stdout: `PASS: replaying 3 messages a second time changed nothing in tables ${orders}, ${inbox} (6 items).\n`,
    });
  });

  it('runs on plain Node once bundled, as the published bin does', async () => {
    const orders = await createTable('replay-orders');
    const inbox = await createTable('replay-inbox');
    startConsumer(idempotentHandler(orders, inbox));
    const outdir = mkdtempSync(join(tmpdir(), 'replay-bin-'));
    try {
      const bin = join(outdir, 'effectively-once.js');
      await build({
        entryPoints: [join(root, 'cli/effectively-once.ts')],
        outfile: bin,
        bundle: true,
        platform: 'node',
        target: 'node20',
        format: 'cjs',
        packages: 'external',
        logLevel: 'silent',
      });

      const result = await runCommand(
        process.execPath,
        [bin, 'replay', ...cliArgs(orders), '--table', inbox],
        {
          NODE_PATH: join(root, 'node_modules'),
        },
      );

      expect(readFileSync(bin, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
      expect(result).toMatchObject({
        code: 0,
        stdout: `PASS: replaying 3 messages a second time changed nothing in tables ${orders}, ${inbox} (6 items).\n`,
      });
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });

  it('exits 2 with a usage message for bad arguments', async () => {
    const result = await runCli(['replay', '--log', ordersLog, '--queue-url', queueUrl, '--timeout', 'soon']);

    expect(result).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'effectively-once replay: Missing required option `--table NAME`\n' +
        'Run `effectively-once replay --help` for usage.\n',
    });
  });

  it('exits 2 naming each bad line of the log, before contacting AWS', async () => {
    const result = await runCli([
      'replay',
      ...cliArgs('orders').map((arg) => (arg === ordersLog ? join(fixtures, 'invalid.jsonl') : arg)),
    ]);

    expect(result).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'effectively-once replay: The message log is invalid:\n' +
        '  line 2: not valid JSON\n' +
        '  line 3: Missing `body`\n',
    });
  });

  it('exits 2 with one line and no stack trace when the endpoint cannot be reached', async () => {
    const port = await closedPort();

    const result = await runCli([
      'replay',
      '--log',
      ordersLog,
      '--queue-url',
      `http://127.0.0.1:${port}/000000000000/orders`,
      '--table',
      'orders',
      '--endpoint-url',
      `http://127.0.0.1:${port}`,
      '--region',
      aws.region,
    ]);

    expect(result).toEqual({
      code: 2,
      stdout: '',
      stderr:
        `effectively-once replay: Cannot reach the endpoint for queue http://127.0.0.1:${port}/000000000000/orders ` +
        `(connect ECONNREFUSED 127.0.0.1:${port}).\n`,
    });
  });
});

// ---------------------------------------------------------------------------------------------
// The in-process consumer and the handlers it applies.

interface Order {
  readonly orderId: string;
  readonly amount: number;
}

type Handler = (order: Order, message: Message) => Promise<void>;

interface Consumer {
  stop(): Promise<void>;
}

/** Longest a consumer loop may run, whatever happens to the test. */
const CONSUMER_MAX_MILLIS = 55_000;

/**
 * Polls the queue until stopped (or for at most 55 s): receives up to 10 messages with a 1 s
 * long poll, applies the handler and deletes each message it handled. A handler failure leaves
 * the message to come back after the visibility timeout, as on Lambda.
 */
function startConsumer(handler: Handler, url = queueUrl): Consumer {
  let stopped = false;
  const deadline = Date.now() + CONSUMER_MAX_MILLIS;
  const loop = (async () => {
    while (!stopped && Date.now() < deadline) {
      await receiveAndHandle(handler, url, 1);
    }
  })();
  const consumer = {
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
  consumers.push(consumer);
  return consumer;
}

/** Receives and handles messages until a receive comes back empty. */
async function consumeUntilEmpty(handler: Handler, url = queueUrl): Promise<void> {
  const deadline = Date.now() + CONSUMER_MAX_MILLIS;
  while (Date.now() < deadline && (await receiveAndHandle(handler, url, 0)) > 0) {
    // keep going
  }
}

async function receiveAndHandle(handler: Handler, url: string, waitTimeSeconds: number): Promise<number> {
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: url,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: waitTimeSeconds,
      VisibilityTimeout: 5,
      MessageAttributeNames: ['All'],
    }),
  );
  for (const message of Messages) {
    try {
      await handler(JSON.parse(message.Body ?? '') as Order, message);
      await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: message.ReceiptHandle }));
    } catch {
      // Left for redelivery after the visibility timeout.
    }
  }
  return Messages.length;
}

/** Not idempotent: counts every delivery. */
function countingHandler(table: string): Handler {
  return async (order) => {
    await dynamodb.send(
      new UpdateItemCommand({
        TableName: table,
        Key: { pk: { S: order.orderId } },
        UpdateExpression: 'SET amount = :amount ADD deliveries :one',
        ExpressionAttributeValues: { ':amount': { N: String(order.amount) }, ':one': { N: '1' } },
      }),
    );
  };
}

/**
 * Idempotent: the inbox marker (conditional on `attribute_not_exists`) and the business write
 * (timestamp included) commit in one transaction; a duplicate cancels both and is acknowledged.
 */
function idempotentHandler(orders: string, inbox: string): Handler {
  return async (order, message) => {
    const dedupKey = message.MessageAttributes?.dedupKey?.StringValue;
    if (dedupKey === undefined) throw new Error('message without a dedupKey attribute');
    const now = Date.now();
    try {
      await dynamodb.send(
        new TransactWriteItemsCommand({
          TransactItems: [
            {
              Put: {
                TableName: inbox,
                Item: {
                  pk: { S: `orders#${dedupKey}` },
                  status: { S: 'COMPLETED' },
                  committedAt: { N: String(now) },
                },
                ConditionExpression: 'attribute_not_exists(pk)',
              },
            },
            {
              Put: {
                TableName: orders,
                Item: {
                  pk: { S: order.orderId },
                  amount: { N: String(order.amount) },
                  processedAt: { N: String(now) },
                },
              },
            },
          ],
        }),
      );
    } catch (error) {
      // Recognised by name, not instanceof, as the house style asks of error handling.
      const { name, CancellationReasons: reasons } = error as TransactionCanceledException;
      const isDuplicate =
        name === 'TransactionCanceledException' && reasons?.[0]?.Code === 'ConditionalCheckFailed';
      if (!isDuplicate) throw error;
    }
  };
}

// ---------------------------------------------------------------------------------------------
// Resources and processes.

/** A queue named after `prefix` with a short visibility timeout; its URL. */
async function createQueue(prefix: string, attributes: Record<string, string> = {}): Promise<string> {
  return (await local.createQueue(prefix, { VisibilityTimeout: '5', ...attributes })).url;
}

const createTable = (prefix: string): Promise<string> => local.createTable(uniqueName(prefix));

function cliArgs(table: string): string[] {
  return [
    '--log',
    ordersLog,
    '--queue-url',
    queueUrl,
    '--table',
    table,
    '--endpoint-url',
    aws.endpoint,
    '--region',
    aws.region,
    '--poll-interval',
    '0.2',
    '--stable-polls',
    '3',
    '--timeout',
    '30',
  ];
}

interface CommandResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the CLI through tsx, as in this repository; the consumer keeps polling meanwhile. */
function runCli(args: string[]): Promise<CommandResult> {
  return runCommand('npx', ['tsx', join(root, 'cli/effectively-once.ts'), ...args]);
}

function runCommand(command: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<CommandResult> {
  return new Promise((resolvePromise, reject) => {
    const child: ChildProcess = spawn(command, args, {
      cwd: root,
      env: {
        ...process.env,
        AWS_ACCESS_KEY_ID: aws.credentials.accessKeyId,
        AWS_SECRET_ACCESS_KEY: aws.credentials.secretAccessKey,
        // The SDK's warning about Node versions is not the CLI's output.
        NODE_NO_WARNINGS: '1',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => child.kill(), 50_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
  });
}

/** Progress lines with the variable parts (counters, durations) cut off, to compare exactly. */
function progressLines(stderr: string): string[] {
  const lines = stderr
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => line.replace(/^(pass \d: (draining|queue drained in)).*$/, '$1'));
  // A slow drain prints a line every few seconds: keep one.
  return lines.filter((line, index) => line !== lines[index - 1]);
}

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const address = server.address();
  await new Promise<void>((done) => server.close(() => done()));
  if (typeof address !== 'object' || address === null) throw new Error('no port');
  return address.port;
}
