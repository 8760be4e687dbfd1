import type { Message, SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it, vi } from 'vitest';
import type { LogEntry } from '../../../lambda/core/logger';
import type { Message as CoreMessage } from '../../../lambda/core/message';
import type { DeadLetterMessage } from '../../../lambda/dead-letter/dead-letter-message';
import type { SqsRecord } from '../../../lambda/sqs/sqs-event';
import { createWorkerBatchHandler, planBatch } from '../../../lambda/worker/batch-handler';
import { defaultRetryDelay, resolveRetryDelay } from '../../../lambda/worker/retry-delay';
import { toSqsRecord } from '../../../lambda/worker/sqs-record';
import { type OutcomeEvent, outcomeHandlerOptions as options } from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';

const QUEUE_URL = 'http://127.0.0.1:4566/000000000000/orders.fifo';

/** A received message as the SDK returns it. */
function sdkMessage(
  id: string,
  body: unknown,
  options: { readonly groupId?: string; readonly receiveCount?: number } = {},
): Message {
  return {
    MessageId: id,
    ReceiptHandle: `rh-${id}`,
    Body: JSON.stringify(body),
    Attributes: {
      ApproximateReceiveCount: String(options.receiveCount ?? 1),
      ...(options.groupId === undefined ? {} : { MessageGroupId: options.groupId }),
    },
    MessageAttributes: {},
  };
}

/** An SQS client double recording every command's input; `fail` makes sends reject. */
function fakeSqs(answer: (input: unknown) => unknown = () => ({ Successful: [], Failed: [] })) {
  const inputs: { name: string; input: unknown }[] = [];
  const client = {
    send: vi.fn(async (command: { input: unknown; constructor: { name: string } }) => {
      inputs.push({ name: command.constructor.name, input: command.input });
      return answer(command.input);
    }),
  };
  return { client: client as unknown as SQSClient, inputs };
}

describe('createWorkerBatchHandler', () => {
  it('returns processed messages and duplicates for deletion and hands failures back at once', async () => {
    const sqs = fakeSqs();
    const handle = createWorkerBatchHandler(options(), {
      sqs: sqs.client,
      queueUrl: QUEUE_URL,
      retryDelaySeconds: 0,
    });
    const batch = [
      sdkMessage('m-1', { id: 'o-1' }),
      sdkMessage('m-2', { id: 'o-1' }),
      sdkMessage('m-3', { id: 'o-3', outcome: 'throw' }),
    ];

    const acknowledged = await handle(batch);

    expect(acknowledged.map((message) => message.MessageId)).toEqual(['m-1', 'm-2']);
    expect(sqs.inputs).toEqual([
      {
        name: 'ChangeMessageVisibilityBatchCommand',
        input: {
          QueueUrl: QUEUE_URL,
          Entries: [{ Id: 'm0', ReceiptHandle: 'rh-m-3', VisibilityTimeout: 0 }],
        },
      },
    ]);
  });

  it('acknowledges a redelivered message whose effect already happened', async () => {
    const store = createMemoryStore();
    const sqs = fakeSqs();
    const effects: string[] = [];
    const handle = createWorkerBatchHandler(
      options({ store, handle: (message: CoreMessage<OutcomeEvent>) => void effects.push(message.dedupKey) }),
      { sqs: sqs.client, queueUrl: QUEUE_URL },
    );

    await handle([sdkMessage('m-1', { id: 'o-1' })]);
    const again = await handle([sdkMessage('m-1b', { id: 'o-1' }, { receiveCount: 2 })]);

    expect(again.map((message) => message.MessageId)).toEqual(['m-1b']);
    expect(effects).toEqual(['o-1']);
    expect(sqs.inputs).toEqual([]);
  });

  it('keeps FIFO group order: the later messages of a failed group come back with it', async () => {
    const sqs = fakeSqs();
    const order: string[] = [];
    const handle = createWorkerBatchHandler(
      options({
        handle: (message: CoreMessage<OutcomeEvent>) => {
          order.push(message.body.id!);
          if (message.body.outcome === 'throw') throw new Error('transient');
        },
      }),
      { sqs: sqs.client, queueUrl: QUEUE_URL, retryDelaySeconds: 0 },
    );

    const acknowledged = await handle([
      sdkMessage('m-1', { id: 'a-1' }, { groupId: 'a' }),
      sdkMessage('m-2', { id: 'a-2', outcome: 'throw' }, { groupId: 'a' }),
      sdkMessage('m-3', { id: 'a-3' }, { groupId: 'a' }),
      sdkMessage('m-4', { id: 'b-1' }, { groupId: 'b' }),
    ]);

    expect(acknowledged.map((message) => message.MessageId)).toEqual(['m-1', 'm-4']);
    expect(order).not.toContain('a-3');
    expect(sqs.inputs[0]?.input).toEqual({
      QueueUrl: QUEUE_URL,
      Entries: [
        { Id: 'm0', ReceiptHandle: 'rh-m-2', VisibilityTimeout: 0 },
        { Id: 'm1', ReceiptHandle: 'rh-m-3', VisibilityTimeout: 0 },
      ],
    });
  });

  it('hands back only the failed message of a fair queue: a standard queue with group ids keeps no order', async () => {
    const sqs = fakeSqs();
    const order: string[] = [];
    const handle = createWorkerBatchHandler(
      options({
        handle: (message: CoreMessage<OutcomeEvent>) => {
          order.push(message.body.id!);
          if (message.body.outcome === 'throw') throw new Error('transient');
        },
      }),
      { sqs: sqs.client, queueUrl: 'http://127.0.0.1:4566/000000000000/orders', retryDelaySeconds: 0 },
    );

    const acknowledged = await handle([
      sdkMessage('m-1', { id: 'a-1', outcome: 'throw' }, { groupId: 'a' }),
      sdkMessage('m-2', { id: 'a-2' }, { groupId: 'a' }),
    ]);

    expect(acknowledged.map((message) => message.MessageId)).toEqual(['m-2']);
    expect(order).toEqual(['a-1', 'a-2']);
    expect(sqs.inputs[0]?.input).toEqual({
      QueueUrl: 'http://127.0.0.1:4566/000000000000/orders',
      Entries: [{ Id: 'm0', ReceiptHandle: 'rh-m-1', VisibilityTimeout: 0 }],
    });
  });

  it('dead-letters a permanent failure with its reason in direct mode and acknowledges it', async () => {
    const sqs = fakeSqs();
    const sent: DeadLetterMessage[] = [];
    const handle = createWorkerBatchHandler(
      options({
        deadLetter: 'direct',
        deadLetterSender: { send: async (message) => void sent.push(message) },
      }),
      { sqs: sqs.client, queueUrl: QUEUE_URL },
    );

    const acknowledged = await handle([
      sdkMessage('m-1', { id: 'o-1', outcome: 'permanent' }, { groupId: 'g' }),
      sdkMessage('m-2', 'not an object with an id', { groupId: 'g' }),
    ]);

    expect(acknowledged.map((message) => message.MessageId)).toEqual(['m-1', 'm-2']);
    expect(
      sent.map(({ sourceMessageId, code, reason, groupId }) => ({ sourceMessageId, code, reason, groupId })),
    ).toEqual([
      { sourceMessageId: 'm-1', code: 'PERMANENT', reason: 'never', groupId: 'g' },
      {
        sourceMessageId: 'm-2',
        code: 'MISSING_KEY',
        reason: 'The dedup key (body field `id`) is missing or empty',
        groupId: 'g',
      },
    ]);
    expect(sqs.inputs).toEqual([]);
  });

  it('hands a permanent failure back for the redrive policy in redrive mode', async () => {
    const sqs = fakeSqs();
    const handle = createWorkerBatchHandler(options(), {
      sqs: sqs.client,
      queueUrl: QUEUE_URL,
      retryDelaySeconds: 5,
    });

    expect(await handle([sdkMessage('m-1', { id: 'o-1', outcome: 'permanent' })])).toEqual([]);
    expect(sqs.inputs[0]?.input).toEqual({
      QueueUrl: QUEUE_URL,
      Entries: [{ Id: 'm0', ReceiptHandle: 'rh-m-1', VisibilityTimeout: 5 }],
    });
  });

  it('backs off by receive count by default', async () => {
    const sqs = fakeSqs();
    const handle = createWorkerBatchHandler(options(), { sqs: sqs.client, queueUrl: QUEUE_URL });

    await handle([
      sdkMessage('m-1', { id: 'o-1', outcome: 'throw' }, { receiveCount: 1 }),
      sdkMessage('m-2', { id: 'o-2', outcome: 'throw' }, { receiveCount: 4 }),
      sdkMessage('m-3', { id: 'o-3', outcome: 'throw' }, { receiveCount: 40 }),
    ]);

    expect(sqs.inputs[0]?.input).toMatchObject({
      Entries: [{ VisibilityTimeout: 1 }, { VisibilityTimeout: 8 }, { VisibilityTimeout: 300 }],
    });
  });

  it('changes visibility ten messages per request', async () => {
    const sqs = fakeSqs();
    const handle = createWorkerBatchHandler(options(), {
      sqs: sqs.client,
      queueUrl: QUEUE_URL,
      retryDelaySeconds: (record) => Number(record.messageId.slice(2)),
    });
    const batch = Array.from({ length: 12 }, (_, index) =>
      sdkMessage(`m-${index}`, { id: `o-${index}`, outcome: 'throw' }),
    );

    await handle(batch);

    expect(sqs.inputs.map(({ input }) => (input as { Entries: unknown[] }).Entries.length)).toEqual([10, 2]);
    expect(sqs.inputs[1]?.input).toMatchObject({
      Entries: [
        { Id: 'm10', ReceiptHandle: 'rh-m-10', VisibilityTimeout: 10 },
        { Id: 'm11', ReceiptHandle: 'rh-m-11', VisibilityTimeout: 11 },
      ],
    });
  });

  it('logs a failed visibility change instead of failing the batch', async () => {
    const entries: LogEntry[] = [];
    const sqs = fakeSqs(() => ({ Successful: [], Failed: [{ Id: 'm0', Code: 'ReceiptHandleIsInvalid' }] }));
    const handle = createWorkerBatchHandler(
      options({ logLevel: 'warn', logger: { log: (entry) => void entries.push(entry) } }),
      { sqs: sqs.client, queueUrl: QUEUE_URL },
    );

    expect(await handle([sdkMessage('m-1', { id: 'o-1', outcome: 'throw' })])).toEqual([]);
    expect(entries.filter((entry) => entry.message.startsWith('Changing'))).toEqual([
      {
        level: 'warn',
        message:
          'Changing the visibility timeout failed; the message comes back when its visibility timeout ends',
        consumer: 'orders',
        messageId: 'm-1',
      },
    ]);
  });

  it('logs a rejected visibility change with the error name', async () => {
    const entries: LogEntry[] = [];
    const client = {
      send: async () => {
        throw Object.assign(new Error('down'), { name: 'ServiceUnavailable' });
      },
    } as unknown as SQSClient;
    const handle = createWorkerBatchHandler(
      options({ logLevel: 'warn', logger: { log: (entry) => void entries.push(entry) } }),
      { sqs: client, queueUrl: QUEUE_URL },
    );

    expect(await handle([sdkMessage('m-1', { id: 'o-1', outcome: 'throw' })])).toEqual([]);
    expect(entries.find((entry) => entry.message.startsWith('Changing'))).toMatchObject({
      messageId: 'm-1',
      errorName: 'ServiceUnavailable',
    });
  });

  it('never acknowledges a message it could not convert', async () => {
    const sqs = fakeSqs();
    const handle = createWorkerBatchHandler(options(), { sqs: sqs.client, queueUrl: QUEUE_URL });
    const broken: Message = { ReceiptHandle: 'rh-broken', Body: '{}' };

    expect(await handle([broken, sdkMessage('m-1', { id: 'o-1' })])).toEqual([
      sdkMessage('m-1', { id: 'o-1' }),
    ]);
    expect(sqs.inputs[0]?.input).toEqual({
      QueueUrl: QUEUE_URL,
      Entries: [{ Id: 'm0', ReceiptHandle: 'rh-broken', VisibilityTimeout: 0 }],
    });
  });

  it('validates its options at creation', () => {
    const sqs = fakeSqs().client;
    expect(() => createWorkerBatchHandler(options(), { sqs, queueUrl: 'orders' })).toThrow(
      'Expected `queueUrl` to be a queue URL, got `orders`',
    );
    expect(() => createWorkerBatchHandler(options(), { sqs: {} as SQSClient, queueUrl: QUEUE_URL })).toThrow(
      'Expected `sqs` to be an SQSClient, got `object`',
    );
    expect(() =>
      createWorkerBatchHandler(options(), { sqs, queueUrl: QUEUE_URL, retryDelaySeconds: -1 }),
    ).toThrow('Expected `retryDelaySeconds` to be an integer from 0 to 43200 or a function, got `-1`');
    expect(() =>
      createWorkerBatchHandler(options({ consumer: 'no spaces' }), { sqs, queueUrl: QUEUE_URL }),
    ).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }) as unknown as Error);
  });
});

describe('planBatch', () => {
  const record = (id: string, receiveCount = 1): SqsRecord =>
    toSqsRecord(sdkMessage(id, {}, { receiveCount }));

  it('acknowledges every message not reported and retries the reported ones with their delay', () => {
    const messages = [sdkMessage('m-1', {}), sdkMessage('m-2', {}, { receiveCount: 3 })];
    const plan = planBatch(
      messages,
      [record('m-1'), record('m-2', 3)],
      { batchItemFailures: [{ itemIdentifier: 'm-2' }] },
      defaultRetryDelay,
    );

    expect(plan).toEqual({ acknowledge: [messages[0]], retry: [{ message: messages[1], delaySeconds: 4 }] });
  });

  it('clamps a delay to what SQS accepts and turns a throwing delay function into 0', () => {
    const messages = [sdkMessage('m-1', {}), sdkMessage('m-2', {}), sdkMessage('m-3', {})];
    const delays: Record<string, number> = { 'm-1': 1e9, 'm-2': 1.2 };
    const plan = planBatch(
      messages,
      [record('m-1'), record('m-2'), record('m-3')],
      { batchItemFailures: messages.map((message) => ({ itemIdentifier: message.MessageId! })) },
      (failed) => {
        const delay = delays[failed.messageId];
        if (delay === undefined) throw new Error('no delay');
        return delay;
      },
    );

    expect(plan.retry.map((retry) => retry.delaySeconds)).toEqual([43_200, 2, 0]);
  });

  it('reads a fixed delay option as a constant function', () => {
    expect(resolveRetryDelay(7)(record('m-1'))).toBe(7);
    expect(resolveRetryDelay(undefined)).toBe(defaultRetryDelay);
  });
});
