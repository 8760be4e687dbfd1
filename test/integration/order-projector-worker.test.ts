/**
 * One consumer of the example app, two runtimes: the order projector's handler module runs as a
 * long-running worker process (`lambda/example/order-projector-worker.ts`, run by Node with
 * tsx's loader, stopped with SIGTERM) against a real FIFO queue, inbox table and Orders table on
 * the local endpoint. The sample order log (producer resends, a resend of an old status, a
 * malformed event) ends as the Lambda run of the main job ends: every status projected once and
 * in order, the malformed event dead-lettered with its reason. Then the Lambda entry point of the
 * same module gets the whole log again and finds nothing to do: both runtimes share one inbox.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DEAD_LETTER_ATTRIBUTES, METRICS, OUTBOX_ATTRIBUTES, OUTBOX_ENV } from '../../lambda/core/contract';
import type { SqsEvent, SqsRecord } from '../../lambda/sqs/sqs-event';
import { localAwsEnv } from '../../scripts/local-aws/harness';
import { uniqueName } from '../support/aws';
import { createLocalResources, sqsRecord, type TestQueue, waitFor } from '../support/fixtures';

const root = join(__dirname, '..', '..');
const local = createLocalResources();
const { aws, sqs } = local;

interface LogLine {
  readonly body: Record<string, unknown>;
  readonly groupId: string;
  readonly deduplicationId: string;
}
const log: LogLine[] = readFileSync(join(root, 'test', 'fixtures', 'order-log.jsonl'), 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '')
  .map((line) => JSON.parse(line));

const names = {
  inbox: uniqueName('eo-opw-inbox'),
  orders: uniqueName('eo-opw-orders'),
  outbox: uniqueName('eo-opw-outbox'),
};
let queue: TestQueue;
let deadLetterQueue: TestQueue;
let worker: ChildProcess | undefined;
let stdout = '';

/** The environment the construct gives the Lambda, plus the worker's queue. */
const environment = () => ({
  EO_INBOX_TABLE: names.inbox,
  EO_CONSUMER: 'order-projector',
  EO_DEAD_LETTER_MODE: 'direct',
  EO_DEAD_LETTER_QUEUE_URL: deadLetterQueue.url,
  // The order projector emits `OrderConfirmed` through the outbox (`IdempotentConsumer({ outbox })`).
  [OUTBOX_ENV.tableName]: names.outbox,
  [OUTBOX_ENV.retentionSeconds]: '86400',
  [OUTBOX_ENV.destinationKind]: 'sqs',
  [OUTBOX_ENV.destinationFifo]: 'false',
  ORDERS_TABLE: names.orders,
});

/** The event ids in the outbox table, sorted. */
async function outboxIds(): Promise<string[]> {
  return (await local.scanItems(names.outbox)).map((item) => String(item[OUTBOX_ATTRIBUTES.pk])).sort();
}

/** Waits on the worker process, naming its output so far when it takes too long. */
const waitForWorker = <T>(what: string, probe: () => Promise<T | undefined>) =>
  waitFor(what, probe, {
    timeoutMillis: 45_000,
    intervalMillis: 250,
    detail: () => `worker output:\n${stdout}`,
  });

/** Orders table as `orderId → { status, amount, statuses }`. */
async function orders(): Promise<Record<string, { status: unknown; amount: unknown; statuses: string[] }>> {
  const result: Record<string, { status: unknown; amount: unknown; statuses: string[] }> = {};
  for (const item of await local.scanItems(names.orders)) {
    const id = String(item.orderId);
    const order = result[id] ?? { status: undefined, amount: undefined, statuses: [] };
    result[id] = order;
    if (item.sk === 'ORDER') Object.assign(order, { status: item.status, amount: item.amount });
    else order.statuses.push(String(item.status));
  }
  for (const order of Object.values(result)) order.statuses.sort();
  return result;
}

/** Outcome counts summed from the worker's Embedded Metric Format lines. */
function metricTotals(output: string): Record<string, number> {
  const totals: Record<string, number> = {};
  for (const line of output.split('\n')) {
    if (!line.startsWith('{"_aws"')) continue;
    const document = JSON.parse(line) as Record<string, unknown>;
    for (const name of Object.values(METRICS)) {
      if (typeof document[name] === 'number') totals[name] = (totals[name] ?? 0) + (document[name] as number);
    }
  }
  return totals;
}

const expectedOrders = {
  'o-1001': { status: 'SHIPPED', amount: 4200, statuses: ['PAID', 'PLACED', 'SHIPPED'] },
  'o-1002': { status: 'PAID', amount: 1500, statuses: ['PAID', 'PLACED'] },
  'o-1003': { status: 'PLACED', amount: 990, statuses: ['PLACED'] },
};

beforeAll(async () => {
  await Promise.all([
    local.createTable(names.inbox),
    local.createTable(names.orders, ['pk', 'sk']),
    local.createTable(names.outbox, [OUTBOX_ATTRIBUTES.pk]),
  ]);
  [queue, deadLetterQueue] = await Promise.all([
    local.createQueue('eo-opw-orders', { FifoQueue: 'true' }),
    local.createQueue('eo-opw-orders-dlq', { FifoQueue: 'true' }),
  ]);
});

afterAll(async () => {
  if (worker && worker.exitCode === null) worker.kill('SIGKILL');
  await local.dispose();
});

describe('the order projector as a worker and as a Lambda, from one handler module', () => {
  it('runs as a worker process: each status projected once and in order, the malformed event dead-lettered, SIGTERM exits cleanly', async () => {
    for (const line of log) {
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: queue.url,
          MessageBody: JSON.stringify(line.body),
          MessageGroupId: line.groupId,
          MessageDeduplicationId: line.deduplicationId,
        }),
      );
    }

    // Node with tsx's loader, not the tsx command: the command runs the script in a child process
    // and relays a SIGTERM sent to it alone, giving the child 30 ms to acknowledge it before it
    // kills the child and exits 143 itself, which a busy machine (test files run side by side)
    // missed once. So the SIGTERM reaches the worker itself, as it does in a container.
    worker = spawn(process.execPath, ['--import', 'tsx', 'lambda/example/order-projector-worker.ts'], {
      cwd: root,
      env: {
        ...process.env,
        ...environment(),
        ORDERS_QUEUE_URL: queue.url,
        WORKER_VISIBILITY_TIMEOUT_SECONDS: '30',
        ...localAwsEnv(aws),
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    worker.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    worker.stderr?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    const exited = new Promise<number | null>((resolve) => worker?.once('exit', (code) => resolve(code)));

    await waitForWorker('the worker to drain the queue', async () => {
      const [depth, projected] = await Promise.all([local.queueDepth(queue.url), orders()]);
      return depth === 0 && JSON.stringify(projected) === JSON.stringify(expectedOrders) ? true : undefined;
    });
    const deadLetters = await waitForWorker('the dead letter', async () => {
      const messages = await local.receive(deadLetterQueue.url);
      return messages.length > 0 ? messages : undefined;
    });

    worker.kill('SIGTERM');
    expect(await exited).toBe(0);

    expect(await orders()).toEqual(expectedOrders);
    // One OrderConfirmed per order that became PAID (o-1001, o-1002), committed with its writes.
    expect(await outboxIds()).toHaveLength(2);
    expect(deadLetters).toHaveLength(1);
    expect(JSON.parse(deadLetters[0]?.Body ?? '{}')).toMatchObject({ orderId: 'o-1004' });
    expect(deadLetters[0]?.MessageAttributes?.[DEAD_LETTER_ATTRIBUTES.reason]?.StringValue).toMatch(
      /`status`/,
    );
    // The broker drops the two resends with a reused deduplication id; the inbox catches the
    // two with a new one. Malformed: o-1004 has no status.
    expect(metricTotals(stdout)).toMatchObject({
      [METRICS.processed]: 6,
      [METRICS.duplicate]: 2,
      [METRICS.permanent]: 1,
    });
    expect(metricTotals(stdout)[METRICS.retry] ?? 0).toBe(0);
    // Keys in the logs, never bodies.
    expect(stdout).not.toContain('2026-03-02T09');
  }, 90_000);

  it('leaves nothing for the Lambda entry point of the same module: the whole log again is all duplicates', async () => {
    Object.assign(process.env, environment());
    const { handler } = await import('../../lambda/example/order-projector');
    const before = await orders();
    const outboxBefore = await outboxIds();
    const records: SqsRecord[] = log
      .filter((line) => typeof line.body.status === 'string')
      .map((line, index) =>
        sqsRecord(`lambda-${index}`, line.body, {
          groupId: line.groupId,
          deduplicationId: `${line.deduplicationId}#lambda`,
          queue: queue.name,
        }),
      );
    const event: SqsEvent = { Records: records };

    const written: string[] = [];
    const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    const response = await handler(event, {} as never).finally(() => write.mockRestore());

    expect(response).toEqual({ batchItemFailures: [] });
    expect(metricTotals(written.join(''))).toMatchObject({
      [METRICS.duplicate]: records.length,
      [METRICS.processed]: 0,
      [METRICS.mismatch]: 0,
      [METRICS.retry]: 0,
      [METRICS.permanent]: 0,
    });
    expect(await orders()).toEqual(before);
    expect(await outboxIds()).toEqual(outboxBefore);
  });
});
