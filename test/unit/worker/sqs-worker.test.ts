import type { SQSClient } from '@aws-sdk/client-sqs';
import { StandardError, TimeoutError } from 'sqs-consumer';
import { describe, expect, it } from 'vitest';
import { fromBody } from '../../../lambda/core/dedup-key';
import { EffectivelyOnceError } from '../../../lambda/core/errors';
import type { LogEntry } from '../../../lambda/core/logger';
import type { Message } from '../../../lambda/core/message';
import { marker } from '../../../lambda/modes/marker';
import type { SqsHandlerOptions } from '../../../lambda/sqs/sqs-handler';
import { createSqsWorker } from '../../../lambda/worker/sqs-worker';
import { createMemoryStore } from '../../support/memory-store';

const QUEUE_URL = 'http://127.0.0.1:4566/000000000000/orders';
type Command = { input: Record<string, unknown>; constructor: { name: string } };

const options = (entries: LogEntry[] = []): SqsHandlerOptions<{ id: string }> => ({
  consumer: 'orders',
  dedupKey: fromBody('id'),
  mode: marker(() => undefined),
  store: createMemoryStore(),
  clock: () => Date.UTC(2026, 0, 1),
  logger: { log: (entry) => void entries.push(entry) },
  logLevel: 'debug',
  metrics: false,
});

/**
 * An SQS client double: the first receive answers `first`, every later one ends empty on the
 * next macrotask (a long poll that found nothing), or rejects when aborted; every other command
 * is recorded and succeeds. `receiveSignals` are the abort signals the receives were sent with.
 */
function fakeSqs(first: () => Promise<unknown>) {
  const commands: Command[] = [];
  const receiveSignals: (AbortSignal | undefined)[] = [];
  const client = {
    send(command: Command, sendOptions?: { abortSignal?: AbortSignal }) {
      commands.push(command);
      if (command.constructor.name !== 'ReceiveMessageCommand') return Promise.resolve({});
      receiveSignals.push(sendOptions?.abortSignal);
      if (receiveSignals.length === 1) return first();
      return new Promise((resolve, reject) => {
        setImmediate(() => resolve({}));
        sendOptions?.abortSignal?.addEventListener('abort', () =>
          reject(Object.assign(new Error('aborted'), { name: 'AbortError' })),
        );
      });
    },
  };
  return { client: client as unknown as SQSClient, commands, receiveSignals };
}

/** Resolves once `predicate` holds, checking on every macrotask; fails after `limit` checks. */
async function until(predicate: () => boolean, limit = 500): Promise<void> {
  for (let attempt = 0; attempt < limit; attempt += 1) {
    if (predicate()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error('condition never held');
}

describe('createSqsWorker', () => {
  it('polls in batches with every attribute, the visibility timeout and the heartbeat', async () => {
    const sqs = fakeSqs(() => Promise.resolve({ Messages: [] }));
    const worker = createSqsWorker(options(), {
      sqs: sqs.client,
      queueUrl: QUEUE_URL,
      visibilityTimeoutSeconds: 45,
      heartbeatIntervalSeconds: 15,
      waitTimeSeconds: 5,
    });

    worker.start();
    await until(() => sqs.commands.length >= 1);
    await worker.stop();

    expect(sqs.commands[0]?.input).toEqual({
      QueueUrl: QUEUE_URL,
      AttributeNames: ['All'],
      MessageSystemAttributeNames: ['All'],
      MessageAttributeNames: ['All'],
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: 5,
      VisibilityTimeout: 45,
    });
    expect((worker.consumer as unknown as { heartbeatInterval: number }).heartbeatInterval).toBe(15);
  });

  it('deletes acknowledged messages and stops after the batch in progress', async () => {
    const entries: LogEntry[] = [];
    const sqs = fakeSqs(() =>
      Promise.resolve({
        Messages: [
          { MessageId: 'm-1', ReceiptHandle: 'rh-1', Body: '{"id":"o-1"}', Attributes: {} },
          { MessageId: 'm-2', ReceiptHandle: 'rh-2', Body: '{"id":"o-1"}', Attributes: {} },
        ],
      }),
    );
    const worker = createSqsWorker(options(entries), { sqs: sqs.client, queueUrl: QUEUE_URL });

    worker.start();
    await until(() =>
      sqs.commands.some((command) => command.constructor.name === 'DeleteMessageBatchCommand'),
    );
    await worker.stop();

    expect(
      sqs.commands.find((command) => command.constructor.name === 'DeleteMessageBatchCommand')?.input,
    ).toEqual({
      QueueUrl: QUEUE_URL,
      Entries: [
        { Id: 'm-1', ReceiptHandle: 'rh-1' },
        { Id: 'm-2', ReceiptHandle: 'rh-2' },
      ],
    });
    expect(entries.map((entry) => entry.message)).toEqual([
      'Message processed',
      'Duplicate message acknowledged',
    ]);
    expect(worker.consumer.status).toEqual({ isRunning: false, isPolling: false });
  });

  it('never aborts the receive in flight when it stops, and hands back untouched what that receive returns', async () => {
    let answer!: (value: unknown) => void;
    const sqs = fakeSqs(() => new Promise((resolve) => (answer = resolve)));
    const handled: string[] = [];
    const worker = createSqsWorker(
      {
        ...options(),
        mode: marker((message: Message<{ id: string }>) => void handled.push(message.dedupKey)),
      },
      { sqs: sqs.client, queueUrl: QUEUE_URL },
    );

    worker.start();
    await until(() => answer !== undefined);
    const stopped = worker.stop();
    // SQS would still hand an aborted long poll a message, out of the worker's reach.
    expect(sqs.receiveSignals.map((signal) => signal?.aborted)).toEqual([false]);
    answer({ Messages: [{ MessageId: 'm-1', ReceiptHandle: 'rh-1', Body: '{"id":"o-1"}' }] });
    await stopped;

    expect(sqs.receiveSignals.map((signal) => signal?.aborted)).toEqual([false]);
    expect(handled).toEqual([]);
    expect(
      sqs.commands.find((command) => command.constructor.name === 'ChangeMessageVisibilityBatchCommand')
        ?.input,
    ).toEqual({ QueueUrl: QUEUE_URL, Entries: [{ Id: 'm0', ReceiptHandle: 'rh-1', VisibilityTimeout: 0 }] });
    expect(sqs.commands.some((command) => command.constructor.name === 'DeleteMessageBatchCommand')).toBe(
      false,
    );
  });

  it('logs a failed receive instead of crashing the process, and stops quietly', async () => {
    const entries: LogEntry[] = [];
    const sqs = fakeSqs(() => Promise.reject(Object.assign(new Error('denied'), { name: 'AccessDenied' })));
    const worker = createSqsWorker(options(entries), { sqs: sqs.client, queueUrl: QUEUE_URL });

    worker.start();
    await until(() => entries.length > 0);
    await worker.stop();

    expect(entries).toEqual([
      {
        level: 'error',
        message: 'The SQS worker reported an error (error)',
        consumer: 'orders',
        queueUrl: QUEUE_URL,
        errorName: 'SQSError',
        awsErrorName: 'AccessDenied',
        causeName: 'AccessDenied',
      },
    ]);
  });

  it('logs an error sqs-consumer reports by class and code only, never its message, which may quote a body', async () => {
    const entries: LogEntry[] = [];
    const sqs = fakeSqs(() => Promise.resolve({ Messages: [] }));
    const worker = createSqsWorker(options(entries), { sqs: sqs.client, queueUrl: QUEUE_URL });
    const body = '{"id":"S3NT1NEL"}';
    const failure = Object.assign(new StandardError(`Unexpected message batch handler failure: ${body}`), {
      cause: new EffectivelyOnceError('VALIDATION', `cannot read ${body}`),
    });

    worker.consumer.emit('processing_error', failure, { MessageId: 'm-1' });
    worker.consumer.emit('timeout_error', new TimeoutError(`timed out on ${body}`), { MessageId: 'm-2' });

    expect(entries).toEqual([
      {
        level: 'error',
        message: 'The SQS worker reported an error (processing_error)',
        consumer: 'orders',
        queueUrl: QUEUE_URL,
        errorName: 'StandardError',
        causeName: 'EffectivelyOnceError',
        code: 'VALIDATION',
      },
      {
        level: 'error',
        message: 'The SQS worker reported an error (timeout_error)',
        consumer: 'orders',
        queueUrl: QUEUE_URL,
        errorName: 'TimeoutError',
      },
    ]);
    expect(JSON.stringify(entries)).not.toContain('S3NT1NEL');
  });

  it('turns the heartbeat off when asked, and when no heartbeat fits a one-second timeout', () => {
    const sqs = fakeSqs(() => Promise.resolve({})).client;
    const heartbeat = (worker: { consumer: unknown }) =>
      (worker.consumer as { heartbeatInterval?: number }).heartbeatInterval;

    expect(heartbeat(createSqsWorker(options(), { sqs, queueUrl: QUEUE_URL }))).toBe(10);
    expect(
      heartbeat(createSqsWorker(options(), { sqs, queueUrl: QUEUE_URL, visibilityTimeoutSeconds: 6 })),
    ).toBe(2);
    expect(
      heartbeat(createSqsWorker(options(), { sqs, queueUrl: QUEUE_URL, heartbeatIntervalSeconds: false })),
    ).toBeUndefined();
    expect(
      heartbeat(createSqsWorker(options(), { sqs, queueUrl: QUEUE_URL, visibilityTimeoutSeconds: 1 })),
    ).toBeUndefined();
  });

  it('rejects bad worker options with the option, what was expected and what was given', () => {
    const sqs = fakeSqs(() => Promise.resolve({})).client;
    const create = (extra: Record<string, unknown>) => () =>
      createSqsWorker(options(), { sqs, queueUrl: QUEUE_URL, ...extra });

    expect(create({ batchSize: 11 })).toThrow('Expected `batchSize` to be an integer from 1 to 10, got `11`');
    expect(create({ waitTimeSeconds: 21 })).toThrow(
      'Expected `waitTimeSeconds` to be an integer from 0 to 20, got `21`',
    );
    expect(create({ visibilityTimeoutSeconds: 0 })).toThrow(
      'Expected `visibilityTimeoutSeconds` to be an integer from 1 to 43200, got `0`',
    );
    expect(create({ visibilityTimeoutSeconds: 30, heartbeatIntervalSeconds: 30 })).toThrow(
      'Expected `heartbeatIntervalSeconds` to be an integer from 1 to 29, got `30`',
    );
    expect(create({ pollingWaitTimeMs: -1 })).toThrow(
      'Expected `pollingWaitTimeMs` to be an integer from 0 to 9007199254740991, got `-1`',
    );
  });
});
