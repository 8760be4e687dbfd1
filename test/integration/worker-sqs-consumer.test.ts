/**
 * The `sqs-consumer` worker against real queues and a real inbox table on the local endpoint:
 * a message log with producer resends, a transient failure and a poison message goes through
 * a FIFO queue; every event's effect happens exactly once, in order within its group, the
 * poison message is dead-lettered with its reason, and the queue ends empty. A second test shows
 * the heartbeat keeping a slow batch invisible past its visibility timeout.
 *
 * MiniStack's FIFO queues behave as SQS's do where this relies on it (checked by hand): a
 * receive returns no message of a group while one of its messages is in flight, a group's
 * messages come back in order after `ChangeMessageVisibility` to 0, and a send with a new
 * deduplication id is never suppressed.
 */
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
  type Message as SqsMessage,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSqsDeadLetterSender, fromBody, type Message, type SqsHandlerOptions } from '../../lambda';
import { marker } from '../../lambda/modes/marker';
import { createSqsWorker, type SqsWorker } from '../../lambda/worker';
import { uniqueName } from '../support/aws';
import { createLocalResources, waitFor } from '../support/fixtures';

const local = createLocalResources();
const { sqs } = local;
const client = local.documentClient();
const inboxTable = uniqueName('eo-worker-inbox');
const workers: SqsWorker[] = [];

interface OrderEvent {
  readonly eventId: string;
  readonly group: string;
  readonly seq: number;
}

beforeAll(() => local.createTable(inboxTable));

afterAll(async () => {
  await Promise.allSettled(workers.map((worker) => worker.stop()));
  await local.dispose();
});

describe('createSqsWorker on a FIFO queue', () => {
  it('processes a log with resends exactly once, in group order, and dead-letters the poison message', async () => {
    const { url: queueUrl } = await local.createQueue('eo-worker-orders', { FifoQueue: 'true' });
    const { url: deadLetterUrl } = await local.createQueue('eo-worker-orders-dlq', { FifoQueue: 'true' });

    // Three groups of six events; every third event is resent by the producer later in its
    // group (a new deduplication id, as after the five-minute broker window), and group g-1
    // carries a message that is not JSON.
    const entries: { body: string; group: string; deduplicationId: string }[] = [];
    for (const group of ['g-1', 'g-2', 'g-3']) {
      for (let seq = 1; seq <= 6; seq += 1) {
        const event: OrderEvent = { eventId: `${group}-${seq}`, group, seq };
        entries.push({ body: JSON.stringify(event), group, deduplicationId: event.eventId });
        if (seq % 3 === 0) {
          const resent = { ...event };
          entries.push({ body: JSON.stringify(resent), group, deduplicationId: `${event.eventId}-resend` });
        }
        if (group === 'g-1' && seq === 2) {
          entries.push({ body: 'not json', group, deduplicationId: 'poison-1' });
        }
      }
    }
    for (let start = 0; start < entries.length; start += 10) {
      await sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: entries.slice(start, start + 10).map((entry, index) => ({
            Id: `e${start + index}`,
            MessageBody: entry.body,
            MessageGroupId: entry.group,
            MessageDeduplicationId: entry.deduplicationId,
          })),
        }),
      );
    }

    const effects: OrderEvent[] = [];
    const attempts = new Map<string, number>();
    const options: SqsHandlerOptions<OrderEvent> = {
      consumer: 'order-projector',
      client,
      tableName: inboxTable,
      dedupKey: fromBody('eventId'),
      mode: marker((message: Message<OrderEvent>) => {
        const attempt = (attempts.get(message.body.eventId) ?? 0) + 1;
        attempts.set(message.body.eventId, attempt);
        // A transient failure: the first attempt of g-2's third event times out downstream.
        if (message.body.eventId === 'g-2-3' && attempt === 1) throw new Error('downstream timeout');
        effects.push(message.body);
      }),
      deadLetter: 'direct',
      deadLetterSender: createSqsDeadLetterSender({ client: sqs, queueUrl: deadLetterUrl }),
      logLevel: 'silent',
      metrics: false,
    };
    const worker = createSqsWorker(options, {
      sqs,
      queueUrl,
      waitTimeSeconds: 1,
      retryDelaySeconds: 0,
    });
    workers.push(worker);

    worker.start();
    await waitFor(
      'every effect and an empty queue',
      async () => effects.length >= 18 && (await local.queueDepth(queueUrl)) === 0,
    );
    await worker.stop();

    const ids = effects.map((event) => event.eventId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.sort()).toEqual(
      ['g-1', 'g-2', 'g-3'].flatMap((group) => [1, 2, 3, 4, 5, 6].map((seq) => `${group}-${seq}`)).sort(),
    );
    for (const group of ['g-1', 'g-2', 'g-3']) {
      expect({
        group,
        order: effects.filter((event) => event.group === group).map((event) => event.seq),
      }).toEqual({
        group,
        order: [1, 2, 3, 4, 5, 6],
      });
    }
    expect(attempts.get('g-2-3')).toBe(2);

    const items = await local.scanItems(inboxTable);
    expect(items.filter((item) => item.consumer === 'order-projector')).toHaveLength(18);
    expect(items.every((item) => item.status === 'COMPLETED')).toBe(true);

    const deadLetters = await local.receive(deadLetterUrl);
    expect(deadLetters.map((message) => message.Body)).toEqual(['not json']);
    expect(deadLetters[0]?.MessageAttributes?.['eo-code']?.StringValue).toBe('MALFORMED_BODY');
    expect(deadLetters[0]?.MessageAttributes?.['eo-reason']?.StringValue).toBe('The body is not valid JSON');
  });
});

describe('createSqsWorker heartbeat', () => {
  it('keeps a slow batch invisible past its visibility timeout, so it is processed once', async () => {
    const { url: queueUrl } = await local.createQueue('eo-worker-slow', { VisibilityTimeout: '2' });
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: [{ Id: 'e0', MessageBody: JSON.stringify({ eventId: 'slow-1', group: 'none', seq: 1 }) }],
      }),
    );
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const started: string[] = [];
    const worker = createSqsWorker<OrderEvent>(
      {
        consumer: 'slow-projector',
        client,
        tableName: inboxTable,
        dedupKey: fromBody('eventId'),
        mode: marker(async (message) => {
          started.push(message.record.attributes.ApproximateReceiveCount ?? '?');
          await released;
        }),
        logLevel: 'silent',
        metrics: false,
      },
      { sqs, queueUrl, waitTimeSeconds: 1, visibilityTimeoutSeconds: 2, heartbeatIntervalSeconds: 1 },
    );
    workers.push(worker);

    worker.start();
    await waitFor('the slow batch to start', () => started.length === 1, { timeoutMillis: 10_000 });
    // Real time on a real queue: twice the visibility timeout, during which the heartbeat
    // keeps extending it, so no receive gets the message.
    const waitedUntil = Date.now() + 4_000;
    const stolen: SqsMessage[] = [];
    while (Date.now() < waitedUntil) {
      stolen.push(...(await local.receive(queueUrl, { waitTimeSeconds: 0 })));
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    release();
    await waitFor('an empty queue', async () => (await local.queueDepth(queueUrl)) === 0, {
      timeoutMillis: 10_000,
    });
    await worker.stop();

    expect(stolen).toEqual([]);
    expect(started).toEqual(['1']);
  });
});

/**
 * An HTTP proxy to the local endpoint that keeps a request running upstream when its client
 * goes away. SQS does that with a long poll: aborting a receive on the client does not end it on
 * the server, which can still hand it a message, and that message stays in flight until its
 * visibility timeout ends. MiniStack ends the receive with the connection, so the proxy stands
 * in for SQS's side of it.
 */
async function startHoldingProxy(target: string): Promise<{
  readonly url: string;
  /** Resolves once a `ReceiveMessage` request has been forwarded in full. */
  readonly receiveForwarded: Promise<void>;
  close(): Promise<void>;
}> {
  const upstream = new URL(target);
  let forwardedReceive!: () => void;
  const receiveForwarded = new Promise<void>((resolve) => {
    forwardedReceive = resolve;
  });
  const server = createServer((request, response) => {
    if (request.headers['x-amz-target'] === 'AmazonSQS.ReceiveMessage') request.on('end', forwardedReceive);
    const forwarded = httpRequest(
      {
        hostname: upstream.hostname,
        port: upstream.port,
        path: request.url,
        method: request.method,
        headers: request.headers,
      },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    forwarded.on('error', () => response.destroy());
    request.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    receiveForwarded,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('createSqsWorker stop', () => {
  it('takes no message after stop resolves: a message its last long poll received is handed back at once', async () => {
    const { url: queueUrl } = await local.createQueue('eo-worker-stop', { VisibilityTimeout: '30' });
    const proxy = await startHoldingProxy(local.aws.endpoint);
    const workerSqs = new SQSClient({ ...local.aws, endpoint: proxy.url });
    const handled: string[] = [];
    const worker = createSqsWorker<OrderEvent>(
      {
        consumer: 'stop-projector',
        client,
        tableName: inboxTable,
        dedupKey: fromBody('eventId'),
        mode: marker((message) => {
          handled.push(message.body.eventId);
        }),
        logLevel: 'silent',
        metrics: false,
      },
      { sqs: workerSqs, queueUrl, waitTimeSeconds: 2 },
    );
    workers.push(worker);
    const body = JSON.stringify({ eventId: 'late-1', group: 'none', seq: 1 });

    try {
      worker.start();
      await proxy.receiveForwarded;
      // Real time on a real queue: the emulator starts the long poll it was just sent.
      await new Promise((resolve) => setTimeout(resolve, 100));
      const stopped = worker.stop();
      // Sent while that receive is still open: it takes the message.
      await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
      await stopped;
      // Real time on a real queue: the emulator's long poll looks for messages every 100 ms, so
      // by now the open receive has taken the message (or ended, handing it back).
      await new Promise((resolve) => setTimeout(resolve, 500));

      // Visible at once, not after the 30-second visibility timeout.
      const received = await local.receive(queueUrl, { waitTimeSeconds: 0 });
      expect(received.map((message) => message.Body)).toEqual([body]);
      expect(handled).toEqual([]);
    } finally {
      workerSqs.destroy();
      await proxy.close();
    }
  });
});
