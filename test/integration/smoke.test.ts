/**
 * Smoke tests of the wire path the toolkit depends on, against the real local AWS endpoint over
 * HTTP: conditional puts that return the old item, transactions whose marker condition cancels
 * the business write, and SQS redrive to a dead-letter queue.
 */
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  GetItemCommand,
  PutItemCommand,
  TransactionCanceledException,
  TransactWriteItemsCommand,
  type TransactWriteItemsCommandInput,
} from '@aws-sdk/client-dynamodb';
import { type Message, SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName } from '../support/aws';
import { createLocalResources } from '../support/fixtures';

const local = createLocalResources();
/** A raw client: these tests look at the wire format (attribute values, exceptions) themselves. */
const dynamodb = local.dynamoDbClient();
const { sqs } = local;
const tableName = uniqueName('smoke-inbox');

beforeAll(() => local.createTable(tableName));

afterAll(() => local.dispose());

/** Resolves with what `promise` rejected with; fails the test if it resolved. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('Expected the request to fail, but it succeeded');
}

async function getItem(pk: string): Promise<Record<string, AttributeValue> | undefined> {
  const { Item } = await dynamodb.send(
    new GetItemCommand({ TableName: tableName, Key: { pk: { S: pk } }, ConsistentRead: true }),
  );
  return Item;
}

describe('DynamoDB conditional put', () => {
  it('rejects a second insert of the same key and returns the stored item unchanged', async () => {
    const first: Record<string, AttributeValue> = {
      pk: { S: 'orders#order-1' },
      status: { S: 'COMPLETED' },
      fingerprint: { S: 'sha256-first' },
      expiresAt: { N: '1900000000' },
    };
    const put = (item: Record<string, AttributeValue>) =>
      new PutItemCommand({
        TableName: tableName,
        Item: item,
        ConditionExpression: 'attribute_not_exists(pk)',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      });

    await dynamodb.send(put(first));
    const error = await rejection(
      dynamodb.send(put({ ...first, fingerprint: { S: 'sha256-second' }, expiresAt: { N: '1900000099' } })),
    );

    expect(error).toBeInstanceOf(ConditionalCheckFailedException);
    expect((error as ConditionalCheckFailedException).name).toBe('ConditionalCheckFailedException');
    expect((error as ConditionalCheckFailedException).Item).toEqual(first);
    expect(await getItem('orders#order-1')).toEqual(first);
  });
});

describe('DynamoDB transaction with the marker at index 0', () => {
  it('cancels a replay on the marker condition, returns the marker, and leaves the business item unchanged', async () => {
    const marker: Record<string, AttributeValue> = {
      pk: { S: 'billing#msg-42' },
      status: { S: 'COMPLETED' },
      fingerprint: { S: 'sha256-msg-42' },
    };
    const commit = (invoice: Record<string, AttributeValue>): TransactWriteItemsCommandInput => ({
      TransactItems: [
        {
          Put: {
            TableName: tableName,
            Item: marker,
            ConditionExpression: 'attribute_not_exists(pk)',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
        { Put: { TableName: tableName, Item: invoice } },
      ],
    });
    const firstInvoice = { pk: { S: 'invoice#inv-42' }, total: { N: '100' }, version: { N: '1' } };
    const replayedInvoice = { pk: { S: 'invoice#inv-42' }, total: { N: '250' }, version: { N: '2' } };

    await dynamodb.send(new TransactWriteItemsCommand(commit(firstInvoice)));
    const error = await rejection(dynamodb.send(new TransactWriteItemsCommand(commit(replayedInvoice))));

    expect(error).toBeInstanceOf(TransactionCanceledException);
    const reasons = (error as TransactionCanceledException).CancellationReasons;
    expect(reasons?.[0]?.Code).toBe('ConditionalCheckFailed');
    expect(reasons?.[0]?.Item).toEqual(marker);
    expect(reasons?.[1]?.Code).toBe('None');
    expect(await getItem('invoice#inv-42')).toEqual(firstInvoice);
    expect(await getItem('billing#msg-42')).toEqual(marker);
  });
});

describe('SQS redrive', () => {
  async function receive(queueUrl: string, waitTimeSeconds: number): Promise<Message | undefined> {
    return (await local.receive(queueUrl, { maxMessages: 1, waitTimeSeconds }))[0];
  }

  /** Receives from `queueUrl` until a message arrives or `deadline` (epoch ms) passes. */
  async function receiveBefore(queueUrl: string, deadline: number): Promise<Message | undefined> {
    while (Date.now() < deadline) {
      const message = await receive(queueUrl, 1);
      if (message) return message;
    }
    return undefined;
  }

  it('redelivers a message that is never deleted, then moves it to the dead-letter queue after maxReceiveCount', async () => {
    const deadLetter = await local.createQueue('smoke-dlq');
    const { url: queueUrl } = await local.createQueue('smoke-queue', {
      VisibilityTimeout: '1',
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: deadLetter.arn, maxReceiveCount: 2 }),
    });
    const body = JSON.stringify({ orderId: 'order-7', status: 'PAID' });
    const { MessageId } = await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
    const deadline = Date.now() + 20_000;

    const first = await receiveBefore(queueUrl, deadline);
    const second = await receiveBefore(queueUrl, deadline);
    // The redrive happens when a receive finds the receive count exhausted: keep receiving from
    // the source queue (any message there now is a third delivery, a failure) until the
    // dead-letter queue has it.
    const thirdDeliveries: Message[] = [];
    let deadLettered: Message | undefined;
    while (!deadLettered && Date.now() < deadline) {
      const again = await receive(queueUrl, 1);
      if (again) thirdDeliveries.push(again);
      deadLettered = await receive(deadLetter.url, 0);
    }

    expect(first).toMatchObject({ MessageId, Body: body, Attributes: { ApproximateReceiveCount: '1' } });
    expect(second).toMatchObject({ MessageId, Body: body, Attributes: { ApproximateReceiveCount: '2' } });
    expect(thirdDeliveries).toEqual([]);
    expect(deadLettered).toMatchObject({ MessageId, Body: body });
  });
});
