/**
 * `npm start`: starts local AWS (or uses `AWS_ENDPOINT_URL`), runs the smoke flow that the
 * toolkit relies on, says in plain words what happened, and stops what it started. Exits 0 only
 * if every check held.
 *
 * Temporary: the full end-to-end demo replaces this flow; keep using `startLocalAws` the same way.
 */
import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import {
  type AttributeValue,
  CreateTableCommand,
  DeleteTableCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  TransactWriteItemsCommand,
  type TransactWriteItemsCommandInput,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { type LocalAws, sdkClientConfig, startLocalAws } from './local-aws-lib';

interface Clients {
  readonly dynamodb: DynamoDBClient;
  readonly sqs: SQSClient;
  readonly tableName: string;
  readonly queueUrls: string[];
}

/** A check returns what it saw, in plain words, or throws an Error saying what did not hold. */
type Check = (clients: Clients) => Promise<string>;

function expectThat(condition: boolean, what: string): void {
  if (!condition) throw new Error(what);
}

function show(value: unknown): string {
  return JSON.stringify(value);
}

async function failureOf(promise: Promise<unknown>): Promise<{ name?: string } & Record<string, unknown>> {
  try {
    await promise;
  } catch (error) {
    return error as { name?: string } & Record<string, unknown>;
  }
  throw new Error('the second request succeeded, but it should have been rejected');
}

async function read(clients: Clients, pk: string): Promise<Record<string, AttributeValue> | undefined> {
  const { Item } = await clients.dynamodb.send(
    new GetItemCommand({ TableName: clients.tableName, Key: { pk: { S: pk } }, ConsistentRead: true }),
  );
  return Item;
}

const conditionalPut: Check = async (clients) => {
  const item = { pk: { S: 'orders#order-1' }, status: { S: 'COMPLETED' }, fingerprint: { S: 'first' } };
  const put = (fingerprint: string) =>
    new PutItemCommand({
      TableName: clients.tableName,
      Item: { ...item, fingerprint: { S: fingerprint } },
      ConditionExpression: 'attribute_not_exists(pk)',
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    });
  await clients.dynamodb.send(put('first'));
  const error = await failureOf(clients.dynamodb.send(put('second')));
  expectThat(
    error.name === 'ConditionalCheckFailedException',
    `expected ConditionalCheckFailedException, got ${error.name}`,
  );
  expectThat(isDeepStrictEqual(error.Item, item), `expected the old item back, got ${show(error.Item)}`);
  expectThat(isDeepStrictEqual(await read(clients, 'orders#order-1'), item), 'the stored item changed');
  return (
    'Wrote orders#order-1 with a conditional put, then wrote the same key again: DynamoDB rejected it ' +
    '(ConditionalCheckFailedException) and handed back the stored item, so a duplicate costs one round trip.'
  );
};

const atomicCommit: Check = async (clients) => {
  const marker = { pk: { S: 'billing#msg-42' }, status: { S: 'COMPLETED' } };
  const commit = (total: string): TransactWriteItemsCommandInput => ({
    TransactItems: [
      {
        Put: {
          TableName: clients.tableName,
          Item: marker,
          ConditionExpression: 'attribute_not_exists(pk)',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
      { Put: { TableName: clients.tableName, Item: { pk: { S: 'invoice#inv-42' }, total: { N: total } } } },
    ],
  });
  await clients.dynamodb.send(new TransactWriteItemsCommand(commit('100')));
  const error = await failureOf(clients.dynamodb.send(new TransactWriteItemsCommand(commit('250'))));
  const reasons = error.CancellationReasons as Array<{ Code?: string; Item?: unknown }> | undefined;
  expectThat(
    error.name === 'TransactionCanceledException',
    `expected TransactionCanceledException, got ${error.name}`,
  );
  expectThat(
    reasons?.[0]?.Code === 'ConditionalCheckFailed',
    `expected the marker (index 0) to fail its condition, got reasons ${show(reasons)}`,
  );
  expectThat(
    isDeepStrictEqual(reasons?.[0]?.Item, marker),
    `expected the marker back, got ${show(reasons?.[0])}`,
  );
  const invoice = await read(clients, 'invoice#inv-42');
  expectThat(invoice?.total?.N === '100', `the invoice changed: ${show(invoice)}`);
  return (
    'Committed a dedup marker and an invoice (total 100) in one transaction, then replayed it with total 250: ' +
    'the marker condition cancelled the whole transaction and the invoice still says 100.'
  );
};

const redrive: Check = async (clients) => {
  const receive = async (queueUrl: string, waitTimeSeconds: number): Promise<Message | undefined> => {
    const { Messages } = await clients.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        WaitTimeSeconds: waitTimeSeconds,
        MessageSystemAttributeNames: ['ApproximateReceiveCount'],
      }),
    );
    return Messages?.[0];
  };
  const { QueueUrl: deadLetterUrl } = await clients.sqs.send(
    new CreateQueueCommand({ QueueName: `${clients.tableName}-dlq` }),
  );
  clients.queueUrls.push(deadLetterUrl!);
  const { Attributes } = await clients.sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: deadLetterUrl, AttributeNames: ['QueueArn'] }),
  );
  const { QueueUrl: queueUrl } = await clients.sqs.send(
    new CreateQueueCommand({
      QueueName: `${clients.tableName}-queue`,
      Attributes: {
        VisibilityTimeout: '1',
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: Attributes?.QueueArn, maxReceiveCount: 2 }),
      },
    }),
  );
  clients.queueUrls.push(queueUrl!);
  await clients.sqs.send(
    new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: '{"orderId":"order-7"}' }),
  );

  const deadline = Date.now() + 20_000;
  const counts: string[] = [];
  let deadLettered: Message | undefined;
  while (!deadLettered && Date.now() < deadline) {
    const message = await receive(queueUrl!, 1);
    if (message) counts.push(message.Attributes?.ApproximateReceiveCount ?? '?');
    if (counts.length >= 2) deadLettered = await receive(deadLetterUrl!, 0);
  }
  expectThat(isDeepStrictEqual(counts, ['1', '2']), `expected receive counts 1 then 2, got ${show(counts)}`);
  expectThat(
    deadLettered?.Body === '{"orderId":"order-7"}',
    'the message did not reach the dead-letter queue',
  );
  return (
    'Sent a message and never deleted it: it came back once the 1 s visibility timeout ran out ' +
    '(receive count 2), then moved to the dead-letter queue instead of a third delivery.'
  );
};

async function runSmokeFlow(aws: LocalAws): Promise<boolean> {
  const config = sdkClientConfig(aws);
  const clients: Clients = {
    dynamodb: new DynamoDBClient(config),
    sqs: new SQSClient(config),
    tableName: `smoke-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`,
    queueUrls: [],
  };
  try {
    await clients.dynamodb.send(
      new CreateTableCommand({
        TableName: clients.tableName,
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
    await waitUntilTableExists(
      { client: clients.dynamodb, maxWaitTime: 30 },
      { TableName: clients.tableName },
    );

    const checks: Array<[string, Check]> = [
      ['Duplicate insert is rejected and returns the old item', conditionalPut],
      ['Replayed transaction changes nothing', atomicCommit],
      ['Undeleted message is redelivered, then dead-lettered', redrive],
    ];
    let allHeld = true;
    for (const [title, check] of checks) {
      try {
        console.log(`PASS  ${title}\n      ${await check(clients)}`);
      } catch (error) {
        allHeld = false;
        console.log(`FAIL  ${title}\n      ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    return allHeld;
  } finally {
    await Promise.allSettled([
      clients.dynamodb.send(new DeleteTableCommand({ TableName: clients.tableName })),
      ...clients.queueUrls.map((QueueUrl) => clients.sqs.send(new DeleteQueueCommand({ QueueUrl }))),
    ]);
    clients.dynamodb.destroy();
    clients.sqs.destroy();
  }
}

async function main(): Promise<number> {
  const aws = await startLocalAws({ log: (message) => console.log(message) });
  try {
    console.log(`\nSmoke flow against ${aws.endpoint} (${aws.region}):\n`);
    const allHeld = await runSmokeFlow(aws);
    console.log(allHeld ? '\nAll checks held.' : '\nSome checks did not hold.');
    return allHeld ? 0 : 1;
  } finally {
    await aws.stop();
    if (aws.started) console.log('Stopped the local MiniStack.');
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  },
);
