import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import type { DeadLetterMessage } from '../../../lambda/dead-letter/dead-letter-message';
import {
  createSqsDeadLetterSender,
  toAttributeText,
  toDeadLetterAttributes,
} from '../../../lambda/dead-letter/sqs-dead-letter-sender';

const message: DeadLetterMessage = {
  body: '{"id":"o-1"}',
  reason: 'order has no items',
  code: 'PERMANENT',
  consumer: 'orders',
  dedupKey: 'o-1',
  sourceMessageId: '059f36b4-87a3-44ab-83d2-661975830a7d',
  attributes: {
    tenant: { stringValue: 't-1', dataType: 'String' },
    blob: { binaryValue: Buffer.from([1, 2]).toString('base64'), dataType: 'Binary' },
  },
};

function fakeClient(fail?: Error) {
  const commands: SendMessageCommand[] = [];
  return {
    commands,
    client: {
      send: async (command: SendMessageCommand) => {
        commands.push(command);
        if (fail) throw fail;
        return {};
      },
    } as never,
  };
}

describe('createSqsDeadLetterSender', () => {
  it('sends the original body with the reason, code, consumer, source id, dedup key and original attributes', async () => {
    const { client, commands } = fakeClient();
    const sender = createSqsDeadLetterSender({
      client,
      queueUrl: 'https://sqs.us-east-1.amazonaws.com/1/orders-dlq',
    });

    await sender.send(message);

    expect(commands).toHaveLength(1);
    expect(commands[0]).toBeInstanceOf(SendMessageCommand);
    expect(commands[0]?.input).toEqual({
      QueueUrl: 'https://sqs.us-east-1.amazonaws.com/1/orders-dlq',
      MessageBody: '{"id":"o-1"}',
      MessageAttributes: {
        'eo-reason': { DataType: 'String', StringValue: 'order has no items' },
        'eo-code': { DataType: 'String', StringValue: 'PERMANENT' },
        tenant: { DataType: 'String', StringValue: 't-1' },
        blob: { DataType: 'Binary', BinaryValue: Buffer.from([1, 2]) },
        'eo-consumer': { DataType: 'String', StringValue: 'orders' },
        'eo-source-message-id': { DataType: 'String', StringValue: '059f36b4-87a3-44ab-83d2-661975830a7d' },
        'eo-dedup-key': { DataType: 'String', StringValue: 'o-1' },
      },
    });
  });

  it('keeps the group and derives the deduplication id from the source message id on a FIFO queue', async () => {
    const { client, commands } = fakeClient();
    const sender = createSqsDeadLetterSender({
      client,
      queueUrl: 'http://127.0.0.1:4566/000000000000/orders-dlq.fifo',
    });

    await sender.send({ ...message, groupId: 'g-1' });
    await sender.send(message);

    expect(commands.map(({ input }) => [input.MessageGroupId, input.MessageDeduplicationId])).toEqual([
      ['g-1', message.sourceMessageId],
      ['orders', message.sourceMessageId],
    ]);
  });

  it('throws DEAD_LETTER_FAILED with the SDK error as cause when the send fails', async () => {
    const failure = new Error('ServiceUnavailable');
    const { client } = fakeClient(failure);
    const sender = createSqsDeadLetterSender({ client, queueUrl: 'https://sqs.example/1/dlq' });

    await expect(sender.send(message)).rejects.toMatchObject({ code: 'DEAD_LETTER_FAILED', cause: failure });
  });

  it('fails at cold start without a client or a queue URL', () => {
    expect(() => createSqsDeadLetterSender({ client: undefined as never, queueUrl: 'https://q' })).toThrow(
      expect.objectContaining({ code: 'INVALID_OPTIONS' }),
    );
    expect(() => createSqsDeadLetterSender({ client: fakeClient().client, queueUrl: 'orders-dlq' })).toThrow(
      'Expected `queueUrl` to be a queue URL, got `orders-dlq`',
    );
  });
});

describe('toDeadLetterAttributes', () => {
  it('keeps at most ten attributes: reason and code first, then the original ones, then the rest while there is room', () => {
    const attributes = Object.fromEntries(
      Array.from({ length: 9 }, (_, index) => [
        `a${index}`,
        { stringValue: `v${index}`, dataType: 'String' },
      ]),
    );

    const names = Object.keys(toDeadLetterAttributes({ ...message, attributes }));

    expect(names).toEqual(['eo-reason', 'eo-code', 'a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7']);
  });

  it('replaces eo-* attributes left by an earlier dead letter, drops list values, and cleans and trims the reason', () => {
    const attributes = toDeadLetterAttributes({
      ...message,
      reason: `bad\u0000char ${'x'.repeat(2000)}`,
      attributes: {
        'eo-reason': { stringValue: 'old reason', dataType: 'String' },
        list: { stringListValues: ['a'], dataType: 'String' },
      },
    });

    expect(attributes['eo-reason']?.StringValue).toHaveLength(1024);
    expect(attributes['eo-reason']?.StringValue?.startsWith('bad?char x')).toBe(true);
    expect(attributes['eo-reason']?.StringValue?.endsWith('…')).toBe(true);
    expect(Object.keys(attributes)).toEqual([
      'eo-reason',
      'eo-code',
      'eo-consumer',
      'eo-source-message-id',
      'eo-dedup-key',
    ]);
  });
});

describe('toDeadLetterAttributes with the original deduplication id', () => {
  it('puts eo-deduplication-id right after the reason and code, ahead of the original attributes', () => {
    const attributes = Object.fromEntries(
      Array.from({ length: 9 }, (_, index) => [
        `a${index}`,
        { stringValue: `v${index}`, dataType: 'String' },
      ]),
    );

    const sent = toDeadLetterAttributes({
      ...message,
      deduplicationId: 'order-1-v1',
      attributes: {
        'eo-deduplication-id': { stringValue: 'stale', dataType: 'String' },
        ...attributes,
      },
    });

    expect(Object.keys(sent)).toEqual([
      'eo-reason',
      'eo-code',
      'eo-deduplication-id',
      'a0',
      'a1',
      'a2',
      'a3',
      'a4',
      'a5',
      'a6',
    ]);
    expect(sent['eo-deduplication-id']).toEqual({ DataType: 'String', StringValue: 'order-1-v1' });
  });
});

describe('toDeadLetterAttributes and odd input', () => {
  it('never leaves a lone surrogate when it cuts a long reason: it cuts by code points', () => {
    // 1023 letters, then an emoji (two UTF-16 units) that a cut by units would split.
    const reason = `${'x'.repeat(1023)}😀😀`;

    const value = toDeadLetterAttributes({ ...message, reason })['eo-reason']?.StringValue ?? '';

    expect(value).toBe(`${'x'.repeat(1023)}…`);
    expect(Array.from(value)).toHaveLength(1024);
    expect(/[\uD800-\uDFFF]/u.test(value)).toBe(false);
    // A reason of emoji only keeps whole pairs.
    const emoji = toDeadLetterAttributes({ ...message, reason: '😀'.repeat(2000) })['eo-reason']?.StringValue;
    expect(emoji).toBe(`${'😀'.repeat(1023)}…`);
    expect(/[\uD800-\uDFFF]/u.test(emoji ?? '')).toBe(false);
  });

  it('keeps a reason of exactly the limit whole, and replaces a lone surrogate in it', () => {
    const exact = '😀'.repeat(1024);
    expect(toAttributeText(exact, 1024)).toBe(exact);
    expect(toAttributeText('a\uD800b', 1024)).toBe('a?b');
  });

  it('copies an original attribute named __proto__ as an attribute, not as the prototype', () => {
    const attributes = JSON.parse('{"__proto__": {"stringValue": "p-1", "dataType": "String"}}');

    const sent = toDeadLetterAttributes({ ...message, attributes });

    expect(Object.keys(sent)).toContain('__proto__');
    expect(Object.getOwnPropertyDescriptor(sent, '__proto__')?.value).toEqual({
      DataType: 'String',
      StringValue: 'p-1',
    });
    expect(Object.getPrototypeOf(sent)).toBe(Object.prototype);
  });
});
