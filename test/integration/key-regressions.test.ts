/**
 * Key and fingerprint regressions (issue 12, items 1, 11 and 12), replayed with real queues, a
 * real inbox table and a real dead-letter queue on the local endpoint: messages are sent to a
 * queue, received, handed to `createSqsHandler` as Lambda would, and deleted; dead letters are
 * sent directly (`deadLetter: 'direct'`) and read back with their code.
 *
 * - Order ids above 2^53 that `JSON.parse` rounds to one double are two orders, both handled.
 * - The same key with an amount that differs only beyond a double's digits is a mismatch.
 * - Keys that differ only in lone surrogates are rejected (`INVALID_KEY`), never merged.
 * - A plain key spelled like a composite is not that composite; a body path to an array is
 *   `INVALID_KEY`, not a composite key.
 */
import { randomUUID } from 'node:crypto';
import { DeleteMessageCommand, type Message as QueueMessage, SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createSqsDeadLetterSender,
  createSqsHandler,
  fromBody,
  type KeySource,
  type SqsRecord,
} from '../../lambda';
import { marker } from '../../lambda/modes/marker';
import { uniqueName } from '../support/aws';
import { createLocalResources, lambdaContext, type TestQueue } from '../support/fixtures';

const local = createLocalResources();
const inboxTable = uniqueName('eo-key-regressions');
const runId = randomUUID().slice(0, 8);

beforeAll(() => local.createTable(inboxTable));

afterAll(() => local.dispose());

/** A received message as the event source mapping hands it to the function. */
function toSqsRecord(message: QueueMessage, queue: TestQueue): SqsRecord {
  return {
    messageId: message.MessageId!,
    receiptHandle: message.ReceiptHandle!,
    body: message.Body!,
    attributes: { ...message.Attributes },
    messageAttributes: {},
    md5OfBody: message.MD5OfBody!,
    eventSource: 'aws:sqs',
    eventSourceARN: queue.arn,
    awsRegion: local.aws.region,
  };
}

/**
 * A consumer on its own queue and dead-letter queue: `deliver(body)` sends one body, receives
 * it, invokes the handler with it and deletes it (every outcome here is final), and answers the
 * batch response; `handled` lists the bodies the handler ran for.
 */
async function createConsumer<TBody>(dedupKey: KeySource<TBody>) {
  const queue = await local.createQueue('eo-keys');
  const deadLetterQueue = await local.createQueue('eo-keys-dlq');
  const consumer = uniqueName('keys');
  const handled: string[] = [];
  const handler = createSqsHandler<TBody>({
    consumer,
    client: local.documentClient(),
    tableName: inboxTable,
    dedupKey,
    mode: marker((message) => void handled.push(message.rawBody)),
    logLevel: 'silent',
    metrics: false,
    deadLetter: 'direct',
    deadLetterSender: createSqsDeadLetterSender({ client: local.sqs, queueUrl: deadLetterQueue.url }),
  });
  const deliver = async (body: string) => {
    await local.sqs.send(new SendMessageCommand({ QueueUrl: queue.url, MessageBody: body }));
    const [message] = await local.receive(queue.url, { maxMessages: 1 });
    expect(message?.Body).toBe(body);
    const response = await handler({ Records: [toSqsRecord(message!, queue)] }, lambdaContext());
    await local.sqs.send(
      new DeleteMessageCommand({ QueueUrl: queue.url, ReceiptHandle: message!.ReceiptHandle! }),
    );
    return response;
  };
  /** The dead letters on the queue, as `[body, code]`, in the order they were sent. */
  const deadLetters = async () => {
    const letters = await local.receive(deadLetterQueue.url);
    return letters
      .sort(
        (left, right) =>
          Number(left.Attributes?.SentTimestamp ?? 0) - Number(right.Attributes?.SentTimestamp ?? 0),
      )
      .map((letter) => [letter.Body, letter.MessageAttributes?.['eo-code']?.StringValue]);
  };
  return { consumer, deliver, deadLetters, handled };
}

describe('numbers beyond what a double holds', () => {
  it('handles two orders whose ids JSON.parse rounds to the same double, keyed by every digit', async () => {
    const { consumer, deliver, deadLetters, handled } = await createConsumer(fromBody('orderId'));
    const first = '{"orderId":12345678901234567890,"amount":1}';
    const second = '{"orderId":12345678901234567891,"amount":1}';
    expect(JSON.parse(first).orderId).toBe(JSON.parse(second).orderId);

    expect(await deliver(first)).toEqual({ batchItemFailures: [] });
    expect(await deliver(second)).toEqual({ batchItemFailures: [] });

    expect(handled).toEqual([first, second]);
    expect(await deadLetters()).toEqual([]);
    expect(await local.readItem(inboxTable, { pk: `${consumer}#12345678901234567890` })).toMatchObject({
      status: 'COMPLETED',
    });
    expect(await local.readItem(inboxTable, { pk: `${consumer}#12345678901234567891` })).toMatchObject({
      status: 'COMPLETED',
    });
  });

  it('dead-letters the same key with an amount that differs only beyond a double’s digits as a mismatch', async () => {
    const { deliver, deadLetters, handled } = await createConsumer(fromBody('orderId'));
    const first = `{"orderId":"o-${runId}","amount":12345678901234567890}`;
    const changed = `{"orderId":"o-${runId}","amount":12345678901234567891}`;

    expect(await deliver(first)).toEqual({ batchItemFailures: [] });
    expect(await deliver(changed)).toEqual({ batchItemFailures: [] });
    // The same payload again, written differently, is still a duplicate.
    expect(await deliver(`{ "amount": 12345678901234567890, "orderId": "o-${runId}" }`)).toEqual({
      batchItemFailures: [],
    });

    expect(handled).toEqual([first]);
    expect(await deadLetters()).toEqual([[changed, 'PAYLOAD_MISMATCH']]);
  });

  it('dead-letters a fractional key with more digits than a double keeps as INVALID_KEY', async () => {
    const { deliver, deadLetters, handled } = await createConsumer(fromBody('orderId'));
    const body = '{"orderId":0.10000000000000000000001}';

    expect(await deliver(body)).toEqual({ batchItemFailures: [] });

    expect(handled).toEqual([]);
    expect(await deadLetters()).toEqual([[body, 'INVALID_KEY']]);
  });
});

describe('keys that are not well-formed UTF-16', () => {
  it('dead-letters keys that differ only in a lone surrogate as INVALID_KEY, and handles a surrogate pair', async () => {
    const { deliver, deadLetters, handled } = await createConsumer(fromBody('orderId'));
    // JSON escapes: the bodies are plain ASCII on the wire; JSON.parse makes the lone surrogates.
    const high = `{"orderId":"o-${runId}-\\ud800"}`;
    const low = `{"orderId":"o-${runId}-\\udc00"}`;
    const pair = `{"orderId":"o-${runId}-\\ud83d\\ude00"}`;

    for (const body of [high, low, pair]) expect(await deliver(body)).toEqual({ batchItemFailures: [] });

    expect(handled).toEqual([pair]);
    expect(await deadLetters()).toEqual([
      [high, 'INVALID_KEY'],
      [low, 'INVALID_KEY'],
    ]);
  });
});

describe('plain and composite keys', () => {
  it('handles a plain key spelled like a composite and that composite as two messages', async () => {
    const { consumer, deliver, deadLetters, handled } = await createConsumer(
      fromBody((body: { key: string | string[] }) => body.key),
    );
    const plain = '{"key":"a:b"}';
    const composite = '{"key":["a","b"]}';

    expect(await deliver(plain)).toEqual({ batchItemFailures: [] });
    expect(await deliver(composite)).toEqual({ batchItemFailures: [] });

    expect(handled).toEqual([plain, composite]);
    expect(await deadLetters()).toEqual([]);
    expect(await local.readItem(inboxTable, { pk: `${consumer}#a%3Ab` })).toMatchObject({
      status: 'COMPLETED',
    });
    expect(await local.readItem(inboxTable, { pk: `${consumer}#a:b` })).toMatchObject({
      status: 'COMPLETED',
    });
  });

  it('dead-letters a body path that holds an array as INVALID_KEY', async () => {
    const { deliver, deadLetters, handled } = await createConsumer(fromBody('key'));
    const body = '{"key":["a","b"]}';

    expect(await deliver(body)).toEqual({ batchItemFailures: [] });

    expect(handled).toEqual([]);
    expect(await deadLetters()).toEqual([[body, 'INVALID_KEY']]);
  });
});
