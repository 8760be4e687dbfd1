import { describe, expect, it } from 'vitest';
import { applyUpdate, createMemoryStore, evaluateCondition } from '../support/memory-store';
import { describeInboxStoreContract } from '../support/store-contract';

describeInboxStoreContract('in-memory fake', () => {
  const fake = createMemoryStore();
  return { store: fake, businessTable: 'business', readItem: async (table, pk) => fake.read(table, pk) };
});

describe('memory store expressions', () => {
  const item = { pk: 'a', n: 3, s: 'x' };

  it('evaluates comparisons, boolean operators and parentheses like DynamoDB', () => {
    const values = { ':three': 3, ':x': 'x', ':y': 'y' };
    expect(evaluateCondition('n = :three AND s = :x', item, undefined, values)).toBe(true);
    expect(evaluateCondition('n <> :three OR (NOT s = :y)', item, undefined, values)).toBe(true);
    expect(evaluateCondition('#n >= :three AND #n <= :three AND #n > :x', item, { '#n': 'n' }, values)).toBe(
      false,
    );
    expect(evaluateCondition('attribute_not_exists(missing) and n < :three', item, undefined, values)).toBe(
      false,
    );
    expect(evaluateCondition('attribute_exists(pk)', undefined, undefined, values)).toBe(false);
  });

  it('rejects what it does not understand instead of ignoring it', () => {
    expect(() => evaluateCondition('begins_with(s, :x)', item, undefined, { ':x': 'x' })).toThrow(
      /memory store/,
    );
    expect(() => evaluateCondition('n = :missing', item, undefined, {})).toThrow(/undefined value/);
    expect(() => applyUpdate('ADD n :one', item, undefined, { ':one': 1 })).toThrow(/unsupported update/);
  });

  it('applies SET with arithmetic and if_not_exists, and REMOVE', () => {
    const updated = applyUpdate(
      'SET n = n + :one, created = if_not_exists(created, :t), #s = :y REMOVE gone',
      { ...item, gone: true },
      { '#s': 's' },
      { ':one': 1, ':t': 't0', ':y': 'y' },
    );
    expect(updated).toEqual({ pk: 'a', n: 4, s: 'y', created: 't0' });
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
