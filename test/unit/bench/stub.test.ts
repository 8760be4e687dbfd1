import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import {
  answerOperation,
  createStubTable,
  type RecordedRequest,
  respond,
  stubCpuMicrosPerPass,
} from '../../../bench/stub/dynamodb-stub';
import { applyUpdate, evaluateCondition } from '../../../bench/stub/expressions';
import { createStubClient } from '../../../bench/stub/stub-clients';

const schemas = { inbox: ['pk'], orders: ['pk'] };
const newMarker = {
  TableName: 'inbox',
  Item: { pk: { S: 'k1' }, status: { S: 'COMPLETED' } },
  ConditionExpression: 'attribute_not_exists(#pk)',
  ExpressionAttributeNames: { '#pk': 'pk' },
  ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
};

describe('bench stub: expressions', () => {
  it('evaluates the conditions the implementations send', () => {
    const item = { pk: { S: 'k' }, status: { S: 'INPROGRESS' }, expiry: { N: '100' } };
    const context = {
      names: { '#id': 'pk', '#s': 'status', '#e': 'expiry' },
      values: { ':now': { N: '150' }, ':p': { S: 'INPROGRESS' } },
    };
    expect(evaluateCondition('attribute_not_exists(#id)', undefined, context)).toBe(true);
    expect(evaluateCondition('attribute_not_exists(#id) OR #e < :now', item, context)).toBe(true);
    expect(evaluateCondition('attribute_not_exists(#id) OR (#s = :p AND #e > :now)', item, context)).toBe(
      false,
    );
    expect(evaluateCondition('NOT attribute_exists(#id)', item, context)).toBe(false);
  });

  it('applies SET and REMOVE clauses, creating the item from its key', () => {
    const updated = applyUpdate(
      'SET #s = :done, #n = #n + :one REMOVE #lease',
      { pk: { S: 'k' }, n: { N: '1' }, lease: { N: '5' } },
      { pk: { S: 'k' } },
      {
        names: { '#s': 'status', '#n': 'n', '#lease': 'lease' },
        values: { ':done': { S: 'DONE' }, ':one': { N: '1' } },
      },
    );
    expect(updated).toEqual({ pk: { S: 'k' }, n: { N: '2' }, status: { S: 'DONE' } });
  });

  it('refuses syntax it does not implement instead of guessing', () => {
    expect(() => evaluateCondition('size(#a) > :n', {}, { names: { '#a': 'a' } })).toThrow();
  });
});

describe('bench stub: canned responses', () => {
  it('answers a successful put with an empty body and one write unit', () => {
    const table = createStubTable(schemas);
    expect(answerOperation(table, 'PutItem', newMarker)).toEqual({
      status: 200,
      written: ['inbox'],
      body: {},
      writeUnits: 1,
      readUnits: 0,
    });
  });

  it('answers a duplicate put with a 400 ConditionalCheckFailedException carrying the stored item', () => {
    const table = createStubTable(schemas);
    answerOperation(table, 'PutItem', newMarker);
    expect(answerOperation(table, 'PutItem', newMarker)).toEqual({
      status: 400,
      written: [],
      body: {
        __type: 'com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException',
        message: 'The conditional request failed',
        Item: newMarker.Item,
      },
      writeUnits: 1,
      readUnits: 0,
    });
  });

  it('cancels a transaction whose marker exists, with one reason per action and nothing written', () => {
    const table = createStubTable(schemas);
    answerOperation(table, 'PutItem', newMarker);
    const answer = answerOperation(table, 'TransactWriteItems', {
      TransactItems: [{ Put: newMarker }, { Put: { TableName: 'orders', Item: { pk: { S: 'o1' } } } }],
    });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({
      __type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException',
      Message:
        'Transaction cancelled, please refer cancellation reasons for specific reasons [ConditionalCheckFailed, None]',
      CancellationReasons: [
        { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed', Item: newMarker.Item },
        { Code: 'None' },
      ],
    });
    expect(table.get('orders', { pk: { S: 'o1' } })).toBeUndefined();
  });

  it('commits a transaction at two write units per item', () => {
    const table = createStubTable(schemas);
    const answer = answerOperation(table, 'TransactWriteItems', {
      TransactItems: [{ Put: newMarker }, { Put: { TableName: 'orders', Item: { pk: { S: 'o1' } } } }],
    });
    expect(answer).toMatchObject({ status: 200, writeUnits: 4, written: ['inbox', 'orders'] });
  });

  it('answers GetItem with the item, or an empty body, at one read unit when consistent', () => {
    const table = createStubTable(schemas);
    answerOperation(table, 'PutItem', newMarker);
    expect(
      answerOperation(table, 'GetItem', {
        TableName: 'inbox',
        Key: { pk: { S: 'k1' } },
        ConsistentRead: true,
      }),
    ).toMatchObject({
      body: { Item: newMarker.Item },
      readUnits: 1,
    });
    expect(
      answerOperation(table, 'GetItem', { TableName: 'inbox', Key: { pk: { S: 'nope' } } }),
    ).toMatchObject({
      body: {},
      readUnits: 0.5,
    });
  });

  it.each([
    [
      'an unused name placeholder',
      { ...newMarker, ExpressionAttributeNames: { '#pk': 'pk', '#extra': 'extra' } },
      'DynamoDB expression: unused ExpressionAttributeNames: #extra',
    ],
    [
      'an undefined value placeholder',
      { ...newMarker, ConditionExpression: 'attribute_not_exists(#pk) OR #pk = :pk' },
      'DynamoDB expression: undefined value placeholder :pk in `attribute_not_exists(#pk) OR #pk = :pk`',
    ],
  ])(
    'answers a put with %s as DynamoDB does: a ValidationException, nothing written',
    (_, input, message) => {
      const table = createStubTable(schemas);
      expect(answerOperation(table, 'PutItem', input)).toEqual({
        status: 400,
        written: [],
        body: { __type: 'com.amazonaws.dynamodb.v20120810#ValidationException', message },
        writeUnits: 0,
        readUnits: 0,
      });
      expect(table.size()).toBe(0);
    },
  );

  it('answers an unknown table with ResourceNotFoundException', () => {
    const table = createStubTable(schemas);
    expect(
      answerOperation(table, 'GetItem', { TableName: 'missing', Key: { pk: { S: 'k' } } }).body,
    ).toMatchObject({
      __type: 'com.amazonaws.dynamodb.v20120810#ResourceNotFoundException',
    });
  });
});

describe('bench stub: HTTP answers and replay', () => {
  it('encodes the answer as the HTTP response DynamoDB sends', () => {
    const table = createStubTable(schemas);
    const { response } = respond(
      table,
      'GetItem',
      JSON.stringify({ TableName: 'inbox', Key: { pk: { S: 'x' } } }),
    );
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/x-amz-json-1.0');
    expect(Buffer.from(response.body).toString('utf8')).toBe('{}');
  });

  it('replays recorded passes in order on a fresh table each round, one figure per pass', () => {
    const put: RecordedRequest = { operation: 'PutItem', body: JSON.stringify(newMarker) };
    const tables: ReturnType<typeof createStubTable>[] = [];
    const perPass = stubCpuMicrosPerPass(
      () => {
        const table = createStubTable(schemas);
        tables.push(table);
        return table;
      },
      [[put], [put]],
      3,
    );
    expect(perPass).toHaveLength(2);
    expect(perPass.every((micros) => micros >= 0)).toBe(true);
    expect(tables).toHaveLength(3);
    expect(tables.every((table) => table.size() === 1)).toBe(true);
  });
});

describe('bench stub: under the real AWS SDK', () => {
  function documentClient() {
    const table = createStubTable(schemas);
    const { client, stub } = createStubClient(table);
    return { table, stub, client: DynamoDBDocumentClient.from(client as DynamoDBClient) };
  }

  it('lets the SDK parse a failed condition into ConditionalCheckFailedException with the item', async () => {
    const { client, stub } = documentClient();
    const put = new PutCommand({
      TableName: 'inbox',
      Item: { pk: 'k1', status: 'COMPLETED' },
      ConditionExpression: 'attribute_not_exists(pk)',
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    });
    await client.send(put);
    const error = await client.send(put).catch((caught: unknown) => caught);
    expect(error).toMatchObject({
      name: 'ConditionalCheckFailedException',
      Item: { pk: { S: 'k1' }, status: { S: 'COMPLETED' } },
    });
    expect(stub.usage()).toMatchObject({ requests: { PutItem: 2 }, totalRequests: 2, writeUnits: 2 });
  });

  it('records the requests it answers, in order, while asked to', async () => {
    const { client, stub } = documentClient();
    const log: RecordedRequest[] = [];
    stub.record(log);
    await client.send(new PutCommand({ TableName: 'inbox', Item: { pk: 'k1' } }));
    stub.record(undefined);
    await client.send(new PutCommand({ TableName: 'inbox', Item: { pk: 'k2' } }));
    expect(log.map(({ operation, body }) => [operation, JSON.parse(body).Item])).toEqual([
      ['PutItem', { pk: { S: 'k1' } }],
    ]);
  });

  it('lets the SDK parse TransactionCanceledException with its CancellationReasons', async () => {
    const { client } = documentClient();
    const items = [
      { Put: { TableName: 'inbox', Item: { pk: 'k1' }, ConditionExpression: 'attribute_not_exists(pk)' } },
      { Put: { TableName: 'orders', Item: { pk: 'o1' } } },
    ];
    await client.send(new TransactWriteCommand({ TransactItems: items }));
    const error = await client
      .send(new TransactWriteCommand({ TransactItems: items }))
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({
      name: 'TransactionCanceledException',
      CancellationReasons: [{ Code: 'ConditionalCheckFailed' }, { Code: 'None' }],
    });
  });

  it('runs Powertools-style put-then-update flows against the in-memory table', async () => {
    const { client, table } = documentClient();
    await client.send(new PutCommand({ TableName: 'inbox', Item: { pk: 'k1', status: 'INPROGRESS' } }));
    await client.send(
      new UpdateCommand({
        TableName: 'inbox',
        Key: { pk: 'k1' },
        UpdateExpression: 'SET #s = :s',
        ExpressionAttributeNames: { '#s': 'status' },
        ExpressionAttributeValues: { ':s': 'COMPLETED' },
      }),
    );
    const { Item } = await client.send(
      new GetCommand({ TableName: 'inbox', Key: { pk: 'k1' }, ConsistentRead: true }),
    );
    expect(Item).toEqual({ pk: 'k1', status: 'COMPLETED' });
    expect(table.size()).toBe(1);
  });

  it('holds responses until released, after applying the request', async () => {
    const { client, stub, table } = documentClient();
    const release = stub.hold();
    let settled = false;
    const pending = client.send(new PutCommand({ TableName: 'inbox', Item: { pk: 'k1' } })).then(() => {
      settled = true;
    });
    await stub.whenRequests(1);
    expect(table.size()).toBe(1);
    expect(settled).toBe(false);
    release();
    await pending;
    expect(settled).toBe(true);
  });
});
