/**
 * The requests `outbox redrive` sends, pinned exactly: it reads the outbox table (never writes
 * it) and receives, deletes and releases on-failure messages. Fake clients keep each command.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import {
  deleteMessage,
  readOutboxItem,
  receiveAll,
  releaseMessage,
  scanCreatedBetween,
} from '../../../../cli/outbox/aws';

/** A client whose `send` keeps each command's name and input and answers the next reply. */
function fakeClient<T>(...replies: unknown[]) {
  const sent: { command: string; input: unknown }[] = [];
  const client = {
    send: async (command: { input: unknown }) => {
      sent.push({ command: command.constructor.name, input: command.input });
      return replies.shift() ?? {};
    },
  } as unknown as T;
  return { client, sent };
}

const queueUrl = 'https://sqs.eu-west-1.amazonaws.com/123456789012/outbox-on-failure';

describe('the outbox table reads', () => {
  it('reads an event by id with a consistent GetItem', async () => {
    const item = { pk: { S: 'e-1' } };
    const { client, sent } = fakeClient<DynamoDBClient>({ Item: item });

    expect(await readOutboxItem(client, 'orders-outbox', 'e-1')).toEqual(item);
    expect(sent).toEqual([
      {
        command: 'GetItemCommand',
        input: { TableName: 'orders-outbox', Key: { pk: { S: 'e-1' } }, ConsistentRead: true },
      },
    ]);
  });

  it('scans the whole table for a createdAt window, page by page', async () => {
    const { client, sent } = fakeClient<DynamoDBClient>(
      { Items: [{ pk: { S: 'e-1' } }], LastEvaluatedKey: { pk: { S: 'e-1' } } },
      { Items: [{ pk: { S: 'e-2' } }] },
    );

    expect(await scanCreatedBetween(client, 'orders-outbox', 1000, 2000)).toEqual([
      { pk: { S: 'e-1' } },
      { pk: { S: 'e-2' } },
    ]);
    const scan = (ExclusiveStartKey: unknown) => ({
      command: 'ScanCommand',
      input: {
        TableName: 'orders-outbox',
        FilterExpression: '#createdAt BETWEEN :from AND :to',
        ExpressionAttributeNames: { '#createdAt': 'createdAt' },
        ExpressionAttributeValues: { ':from': { N: '1000' }, ':to': { N: '2000' } },
        ConsistentRead: true,
        ExclusiveStartKey,
      },
    });
    expect(sent).toEqual([scan(undefined), scan({ pk: { S: 'e-1' } })]);
  });
});

describe('the on-failure queue', () => {
  it('receives until a receive brings no message it has not seen, holding each for 15 minutes', async () => {
    const first = { MessageId: 'm-1', ReceiptHandle: 'r-1', Body: '{}' };
    const second = { MessageId: 'm-2', ReceiptHandle: 'r-2', Body: '{}' };
    const { client, sent } = fakeClient<SQSClient>(
      { Messages: [first] },
      { Messages: [second] },
      { Messages: [{ ...first, ReceiptHandle: 'r-1b' }] },
    );

    expect(await receiveAll(client, queueUrl)).toEqual([first, second]);
    expect(sent).toEqual(
      Array(3).fill({
        command: 'ReceiveMessageCommand',
        input: { QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 900 },
      }),
    );
  });

  it('deletes a message, or makes it visible again at once', async () => {
    const { client, sent } = fakeClient<SQSClient>();
    const message = { MessageId: 'm-1', ReceiptHandle: 'r-1' };

    await deleteMessage(client, queueUrl, message);
    await releaseMessage(client, queueUrl, message);

    expect(sent).toEqual([
      { command: 'DeleteMessageCommand', input: { QueueUrl: queueUrl, ReceiptHandle: 'r-1' } },
      {
        command: 'ChangeMessageVisibilityCommand',
        input: { QueueUrl: queueUrl, ReceiptHandle: 'r-1', VisibilityTimeout: 0 },
      },
    ]);
  });
});
