import { describe, expect, it } from 'vitest';
import { applyDocumentUpdate, evaluateDocumentCondition } from '../../../bench/stub/expressions';
import { createMemoryStore } from '../../support/memory-store';
import { describeInboxStoreContract } from '../../support/store-contract';

describeInboxStoreContract('in-memory fake', () => {
  const fake = createMemoryStore();
  return { store: fake, businessTable: 'business', readItem: async (table, pk) => fake.read(table, pk) };
});

describe('memory store expressions (the shared interpreter on document-form items)', () => {
  const item = { pk: 'a', n: 3, s: 'x' };

  it('evaluates comparisons, boolean operators and parentheses like DynamoDB', () => {
    const values = { ':three': 3, ':x': 'x', ':y': 'y' };
    expect(evaluateDocumentCondition('n = :three AND s = :x', item, { values })).toBe(true);
    expect(evaluateDocumentCondition('n <> :three OR (NOT s = :y)', item, { values })).toBe(true);
    expect(
      evaluateDocumentCondition('#n >= :three AND #n <= :three AND #n > :x', item, {
        names: { '#n': 'n' },
        values,
      }),
    ).toBe(false);
    expect(evaluateDocumentCondition('attribute_not_exists(missing) and n < :three', item, { values })).toBe(
      false,
    );
    expect(evaluateDocumentCondition('attribute_exists(pk)', undefined, { values })).toBe(false);
  });

  it('compares an absent attribute false under every comparator, <> included, as DynamoDB does', () => {
    const values = { ':x': 'x' };
    expect(evaluateDocumentCondition('missing <> :x', item, { values })).toBe(false);
    expect(evaluateDocumentCondition('missing = :x', item, { values })).toBe(false);
    expect(evaluateDocumentCondition('NOT missing = :x', item, { values })).toBe(true);
  });

  it('rejects what it does not understand instead of ignoring it', () => {
    expect(() => evaluateDocumentCondition('contains(s, :x)', item, { values: { ':x': 'x' } })).toThrow(
      /DynamoDB expression: unsupported function `contains`/,
    );
    expect(() => evaluateDocumentCondition('n = :missing', item, { values: {} })).toThrow(/undefined value/);
    expect(() => applyDocumentUpdate('ADD n :one', item, { pk: 'a' }, { values: { ':one': 1 } })).toThrow(
      /unsupported update/,
    );
  });

  it('applies SET with arithmetic and if_not_exists, and REMOVE', () => {
    const updated = applyDocumentUpdate(
      'SET n = n + :one, created = if_not_exists(created, :t), #s = :y REMOVE gone',
      { ...item, gone: true },
      { pk: 'a' },
      { names: { '#s': 's' }, values: { ':one': 1, ':t': 't0', ':y': 'y' } },
    );
    expect(updated).toEqual({ pk: 'a', n: 4, s: 'y', created: 't0' });
  });

  it('fails a commit whose business write DynamoDB would reject as VALIDATION, applying nothing', async () => {
    const store = createMemoryStore();
    const record = {
      pk: 'c#k',
      status: 'COMPLETED',
      fingerprint: 'f',
      expiresAt: 10,
      consumer: 'c',
    } as const;
    const unused = {
      Put: {
        TableName: 'business',
        Item: { pk: 'b-1' },
        ConditionExpression: 'attribute_not_exists(#pk)',
        ExpressionAttributeNames: { '#pk': 'pk', '#extra': 'extra' },
      },
    };
    const misspelt = {
      Update: {
        TableName: 'business',
        Key: { pk: 'b-2' },
        UpdateExpression: 'SET #n = :one',
        ExpressionAttributeNames: { '#n': 'n' },
        ExpressionAttributeValues: { ':oen': 1 },
      },
    };
    const wrongType = {
      Update: {
        TableName: 'business',
        Key: { pk: 'b-3' },
        UpdateExpression: 'SET #n = #n + :one',
        ExpressionAttributeNames: { '#n': 'n' },
        ExpressionAttributeValues: { ':one': 'one' },
      },
    };

    await expect(store.commit(record, [unused], 0)).rejects.toMatchObject({
      code: 'VALIDATION',
      message: 'commit: DynamoDB expression: unused ExpressionAttributeNames: #extra',
    });
    await expect(store.commit(record, [misspelt], 0)).rejects.toMatchObject({ code: 'VALIDATION' });
    await expect(store.commit(record, [wrongType], 0)).rejects.toMatchObject({ code: 'VALIDATION' });
    expect(store.items('inbox')).toEqual([]);
    expect(store.items('business')).toEqual([]);
  });

  it('fails a transaction that writes one item twice, applying nothing', async () => {
    const store = createMemoryStore();
    const record = {
      pk: 'c#k',
      status: 'COMPLETED',
      fingerprint: 'f',
      expiresAt: 10,
      consumer: 'c',
    } as const;
    const put = { Put: { TableName: 'business', Item: { pk: 'same' } } };

    await expect(store.commit(record, [put, put], 0)).rejects.toMatchObject({ code: 'VALIDATION' });
    expect(store.items('inbox')).toEqual([]);
    expect(store.items('business')).toEqual([]);
  });

  it('holds calls of a gated method until the gate opens, and throws injected faults in order', async () => {
    const store = createMemoryStore();
    const record = {
      pk: 'c#k',
      status: 'COMPLETED',
      fingerprint: 'f',
      expiresAt: 10,
      consumer: 'c',
      owner: 'o',
    } as const;
    const open = store.gate('insert');
    let settled = false;
    const pending = store.insert(record, 0).then((result) => {
      settled = true;
      return result;
    });

    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    open();
    expect(await pending).toEqual({ kind: 'inserted' });

    store.failNext('release', new Error('first'));
    await expect(store.release('c#k', { owner: 'o', status: 'COMPLETED' })).rejects.toThrow('first');
    expect(await store.release('c#k', { owner: 'o', status: 'COMPLETED' })).toEqual({ kind: 'ok' });
    expect(store.calls.map((call) => call.method)).toEqual(['insert', 'release', 'release']);
  });
});
