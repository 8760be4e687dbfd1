/**
 * The SQS transport rules of issue 12 against real queues on the local endpoint: a dead letter
 * redriven after a fix keeps its `fromDeduplicationId` key; a fair queue (a standard queue with
 * message group ids) keeps no group order; SQS accepts a dead letter whose reason was cut next to
 * a surrogate pair, and an attribute named `__proto__`; a user error quoting a card number leaves
 * it out of the logs and the dead letter.
 *
 * MiniStack has no `StartMessageMoveTask`, so the redrive is done as SQS does it: the dead
 * letter's body and message attributes are sent to the source queue as a new message, with a new
 * message id and a new deduplication id.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import {
  type MessageAttributeValue,
  SendMessageBatchCommand,
  SendMessageCommand,
  type Message as SqsMessage,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createSqsDeadLetterSender,
  createSqsHandler,
  fromBody,
  fromDeduplicationId,
  type Message,
  PermanentError,
  type SqsBatchResponse,
  type SqsHandler,
} from '../../lambda';
import { marker } from '../../lambda/modes/marker';
import { twoPhase } from '../../lambda/modes/two-phase';
import { toSqsRecord } from '../../lambda/worker';
import { uniqueName } from '../support/aws';
import {
  captureLogs,
  createLocalResources,
  lambdaContext,
  settleBatch,
  sqsRecord,
  type TestQueue,
} from '../support/fixtures';

const local = createLocalResources();
const { aws, sqs } = local;
const client = local.documentClient();
const inboxTable = uniqueName('eo-transport-inbox');
const runId = randomUUID().slice(0, 8);

beforeAll(() => local.createTable(inboxTable));
afterAll(() => local.dispose());

/**
 * What the event source mapping does with one received batch: invoke the function, delete the
 * messages it did not name, and make the named ones visible again at once.
 */
async function invoke(
  handler: SqsHandler,
  queue: TestQueue,
  messages: SqsMessage[],
): Promise<SqsBatchResponse> {
  const source = { eventSourceARN: queue.arn, awsRegion: aws.region };
  const records = messages.map((message) => toSqsRecord(message, source));
  const response = await handler({ Records: records }, lambdaContext());
  await settleBatch(sqs, queue.url, records, response);
  return response;
}

/** Redrives one dead letter to `queue` as SQS does: same body and attributes, new ids. */
async function redrive(deadLetter: SqsMessage, queue: TestQueue, groupId: string): Promise<void> {
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: queue.url,
      MessageBody: deadLetter.Body!,
      MessageAttributes: deadLetter.MessageAttributes as Record<string, MessageAttributeValue>,
      MessageGroupId: groupId,
      MessageDeduplicationId: randomUUID(),
    }),
  );
}

interface Payment {
  readonly paymentId: string;
  readonly amount: number;
}

describe('fromDeduplicationId across a dead letter and a redrive', () => {
  it('keeps the key, so after "fix, then redrive" the completed effect is a duplicate and only the failed one runs', async () => {
    const source = await local.createQueue('eo-transport-payments', { FifoQueue: 'true' });
    const deadLetterQueue = await local.createQueue('eo-transport-payments-dlq', { FifoQueue: 'true' });
    const charges: string[] = [];
    const receipts: string[] = [];
    let templateMissing = true;
    const logs = captureLogs();
    const handler = createSqsHandler<Payment>({
      consumer: 'payment-notifier',
      client,
      tableName: inboxTable,
      dedupKey: fromDeduplicationId(),
      mode: twoPhase({
        handle: async (message: Message<Payment>, effects) => {
          await effects.run('charge', () => void charges.push(message.body.paymentId));
          await effects.run('receipt', () => {
            if (templateMissing) throw new PermanentError('The receipt template is missing');
            receipts.push(message.body.paymentId);
          });
        },
      }),
      deadLetter: 'direct',
      deadLetterSender: createSqsDeadLetterSender({ client: sqs, queueUrl: deadLetterQueue.url }),
      logger: logs.logger,
      metrics: false,
    });
    const paymentId = `p-${runId}`;
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: source.url,
        MessageBody: JSON.stringify({ paymentId, amount: 5 }),
        MessageGroupId: paymentId,
        MessageDeduplicationId: `payment-${paymentId}`,
      }),
    );

    // First delivery: the charge completes, the receipt fails permanently: dead-lettered.
    expect(await invoke(handler, source, await local.receive(source.url))).toEqual({ batchItemFailures: [] });
    const [deadLetter] = await local.receive(deadLetterQueue.url);
    expect(deadLetter?.Attributes?.MessageDeduplicationId).not.toBe(`payment-${paymentId}`);
    expect(deadLetter?.MessageAttributes?.['eo-deduplication-id']?.StringValue).toBe(`payment-${paymentId}`);

    // Fixed, then redriven with a new message id and a new deduplication id.
    templateMissing = false;
    await redrive(deadLetter!, source, paymentId);
    const [redriven] = await local.receive(source.url);
    expect(redriven?.Attributes?.MessageDeduplicationId).not.toBe(`payment-${paymentId}`);
    expect(await invoke(handler, source, [redriven!])).toEqual({ batchItemFailures: [] });

    expect(charges).toEqual([paymentId]);
    expect(receipts).toEqual([paymentId]);

    // The same dead letter redriven once more: a duplicate, acknowledged, nothing runs.
    await redrive(deadLetter!, source, paymentId);
    expect(await invoke(handler, source, await local.receive(source.url))).toEqual({ batchItemFailures: [] });
    expect(charges).toEqual([paymentId]);
    expect(receipts).toEqual([paymentId]);
    expect(logs.entries().at(-1)).toMatchObject({ outcome: 'duplicate' });
  });
});

describe('a fair queue: a standard queue whose messages carry group ids', () => {
  it('reports only the failed message: the rest of its group is processed', async () => {
    const queue = await local.createQueue('eo-transport-fair');
    const handled: string[] = [];
    const handler = createSqsHandler<{ readonly id: string }>({
      consumer: 'fair-projector',
      client,
      tableName: inboxTable,
      dedupKey: fromBody('id'),
      mode: marker((message) => {
        if (message.body.id.startsWith('bad')) throw new Error('downstream unavailable');
        handled.push(message.body.id);
      }),
      logLevel: 'silent',
      metrics: false,
    });
    const ids = [`bad-${runId}`, `a-${runId}`, `b-${runId}`];
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queue.url,
        Entries: ids.map((id, index) => ({
          Id: `e${index}`,
          MessageBody: JSON.stringify({ id }),
          MessageGroupId: 'tenant-1',
        })),
      }),
    );
    const received = await local.receive(queue.url);
    // MiniStack accepts a group id on a standard queue and delivers it, as SQS does.
    expect(received.map((message) => message.Attributes?.MessageGroupId)).toEqual([
      'tenant-1',
      'tenant-1',
      'tenant-1',
    ]);

    const response = await invoke(handler, queue, received);

    const failedId = received.find((message) => message.Body === JSON.stringify({ id: ids[0] }))?.MessageId;
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: failedId }] });
    expect(handled.sort()).toEqual([ids[1], ids[2]].sort());
  });
});

describe('direct dead letters SQS must accept', () => {
  it('accepts a reason cut next to a surrogate pair, and an attribute named __proto__', async () => {
    const deadLetterQueue = await local.createQueue('eo-transport-odd-dlq');
    const handler = createSqsHandler<{ readonly id: string }>({
      consumer: 'odd-projector',
      client,
      tableName: inboxTable,
      dedupKey: fromBody('id'),
      mode: marker(() => {
        // 1022 letters, then emoji: a cut at 1023 UTF-16 units would leave half a pair.
        throw new PermanentError(`${'x'.repeat(1022)}${'😀'.repeat(10)}`);
      }),
      deadLetter: 'direct',
      deadLetterSender: createSqsDeadLetterSender({ client: sqs, queueUrl: deadLetterQueue.url }),
      logLevel: 'silent',
      metrics: false,
    });
    // The record as Lambda delivers it: the event is JSON, so `__proto__` is an own property.
    const [record] = JSON.parse(
      JSON.stringify({
        Records: [
          {
            ...sqsRecord(randomUUID(), { id: `odd-${runId}` }),
            messageAttributes: { tenant: { stringValue: 't-1', dataType: 'String' } },
          },
        ],
      }).replace('"tenant"', '"__proto__"'),
    ).Records;

    expect(await handler({ Records: [record] }, lambdaContext())).toEqual({ batchItemFailures: [] });

    const [deadLetter] = await local.receive(deadLetterQueue.url);
    expect(deadLetter?.MessageAttributes?.['eo-reason']?.StringValue).toBe(`${'x'.repeat(1022)}😀…`);
    // Sent and stored under its name. (The JS SDK's receive of this version then drops the value
    // of a `__proto__` entry, so only the name is checked here.)
    expect(Object.keys(deadLetter?.MessageAttributes ?? {})).toContain('__proto__');
  });
});

describe('user error messages', () => {
  it('leave no card digits in the logs or the reason attribute of the dead letter by default', async () => {
    const queue = await local.createQueue('eo-transport-cards');
    const deadLetterQueue = await local.createQueue('eo-transport-cards-dlq');
    const logs = captureLogs();
    const handler = createSqsHandler<{ readonly id: string; readonly card: string }>({
      consumer: 'card-projector',
      client,
      tableName: inboxTable,
      dedupKey: fromBody('id'),
      // A validator whose failure quotes the value it rejects.
      parse: (raw) => {
        const order = JSON.parse(raw) as { id: string; card: string };
        if (order.id.startsWith('parse')) assert.match(order.card, /^tok_/);
        return order;
      },
      mode: marker((message) => assert.match(message.body.card, /^tok_/)),
      deadLetter: 'direct',
      deadLetterSender: createSqsDeadLetterSender({ client: sqs, queueUrl: deadLetterQueue.url }),
      logger: logs.logger,
      metrics: false,
    });
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queue.url,
        Entries: [`parse-${runId}`, `handle-${runId}`].map((id, index) => ({
          Id: `e${index}`,
          MessageBody: JSON.stringify({ id, card: '4111111111111111' }),
        })),
      }),
    );

    const received = await local.receive(queue.url);
    await invoke(handler, queue, received);

    const [deadLetter] = await local.receive(deadLetterQueue.url);
    expect(deadLetter?.MessageAttributes?.['eo-reason']?.StringValue).toBe(
      'The body was rejected by the `parse` option (AssertionError thrown)',
    );
    expect(logs.entries().map(({ code, errorName, reason }) => ({ code, errorName, reason }))).toEqual(
      expect.arrayContaining([
        {
          code: 'HANDLER_FAILED',
          errorName: 'AssertionError',
          reason: 'AssertionError (code ERR_ASSERTION) thrown; its message is not logged',
        },
      ]),
    );
    expect(logs.textWithout([runId, ...received.map((message) => message.MessageId)])).not.toContain('4111');
  });
});
