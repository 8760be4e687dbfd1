import { PutItemCommand, TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { writeUnitsByTable } from '../../../bench/ceilings';
import { createRequestTracer, itemsOf } from '../../../bench/measure/traces';
import { createStubTable } from '../../../bench/stub/dynamodb-stub';
import { createStubClient } from '../../../bench/stub/stub-clients';

const schemas = { inbox: ['pk'], orders: ['pk'] };
const put = (table: string, pk: string) =>
  new PutItemCommand({
    TableName: table,
    Item: { pk: { S: pk } },
    ConditionExpression: 'attribute_not_exists(pk)',
  });

describe('bench request traces', () => {
  it('puts requests sent one after another in successive steps, with their answers', async () => {
    const table = createStubTable(schemas);
    const tracer = createRequestTracer();
    const { client } = createStubClient(table, tracer.wrap('dedup'));
    await client.send(put('inbox', 'k1'));
    await client.send(put('inbox', 'k1')).catch(() => undefined);

    expect(tracer.take()).toEqual([
      {
        role: 'dedup',
        operation: 'PutItem',
        items: [{ table: 'inbox', bytes: 4, conditional: true }],
        outcome: 'ok',
        step: 1,
      },
      {
        role: 'dedup',
        operation: 'PutItem',
        items: [{ table: 'inbox', bytes: 4, conditional: true }],
        outcome: 'ConditionalCheckFailedException',
        step: 2,
      },
    ]);
    expect(tracer.take()).toEqual([]);
  });

  it('puts requests in flight together in one step', async () => {
    const table = createStubTable(schemas);
    const tracer = createRequestTracer();
    const dedup = createStubClient(table, tracer.wrap('dedup')).client;
    const business = createStubClient(table, tracer.wrap('business')).client;
    await Promise.all([dedup.send(put('inbox', 'a')), business.send(put('orders', 'b'))]);
    await dedup.send(put('inbox', 'c'));

    expect(tracer.take().map((request) => [request.role, request.step])).toEqual([
      ['dedup', 1],
      ['business', 1],
      ['dedup', 2],
    ]);
  });

  it('lists every item of a transaction, and charges a committed one twice per item by table', async () => {
    const table = createStubTable(schemas);
    const tracer = createRequestTracer();
    const { client } = createStubClient(table, tracer.wrap('dedup'));
    await client.send(
      new TransactWriteItemsCommand({
        TransactItems: [
          {
            Put: {
              TableName: 'inbox',
              Item: { pk: { S: 'm' } },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          { Put: { TableName: 'orders', Item: { pk: { S: 'o' }, amount: { N: '10' } } } },
        ],
      }),
    );
    const [request] = tracer.take();

    expect(request!.items).toEqual([
      { table: 'inbox', bytes: 3, conditional: true },
      { table: 'orders', bytes: 3 + 6 + 2, conditional: false },
    ]);
    expect(writeUnitsByTable([request!])).toEqual({ inbox: 2, orders: 2 });
    expect(writeUnitsByTable([{ ...request!, outcome: 'TransactionCanceledException' }])).toEqual({
      inbox: 1,
      orders: 1,
    });
  });

  it('sizes the key of a request that names an item by key', () => {
    expect(itemsOf('UpdateItem', { TableName: 'inbox', Key: { pk: { S: 'abc' } } })).toEqual([
      { table: 'inbox', bytes: 5, conditional: false },
    ]);
  });
});
