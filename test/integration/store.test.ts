import { createServer } from 'node:net';
import { DynamoDBDocumentClient, NumberValue } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InboxRecord, InboxStore, TransactWriteAction } from '../../lambda/core/store-port';
import { createDynamoDbStore } from '../../lambda/store/dynamodb-store';
import { uniqueName } from '../support/aws';
import { createLocalResources, type FakeError, injectFaults, THROTTLED } from '../support/fixtures';
import { attachRequestCounter } from '../support/request-counter';
import { describeInboxStoreContract } from '../support/store-contract';

const local = createLocalResources();
const inboxTable = uniqueName('eo-store-inbox');
const businessTable = uniqueName('eo-store-business');

/** A document client of its own (its own connections), configured the way the store documents. */
const newClient = local.documentClient;

function newStore(client = newClient(), tableName = inboxTable): InboxStore {
  return createDynamoDbStore({ client, tableName });
}

beforeAll(async () => {
  await local.createTable(inboxTable);
  await local.createTable(businessTable);
});

afterAll(() => local.dispose());

const readItem = (tableName: string, pk: string) => local.readItem(tableName, { pk });

describeInboxStoreContract('DynamoDB store on the local endpoint', () => ({
  store: newStore(),
  businessTable,
  readItem,
}));

const now = Date.now();
const nowSeconds = Math.floor(now / 1000);
let sequence = 0;
const key = (label: string) => `store-it#${label}#${++sequence}#${now}`;
const marker = (pk: string, overrides: Partial<InboxRecord> = {}): InboxRecord => ({
  pk,
  status: 'COMPLETED',
  fingerprint: 'fp-1',
  expiresAt: nowSeconds + 3600,
  consumer: 'orders',
  committedAt: now,
  ...overrides,
});
const put = (pk: string, item: Record<string, unknown> = {}): TransactWriteAction => ({
  Put: { TableName: businessTable, Item: { pk, ...item } },
});

describe('DynamoDB store round trips', () => {
  it('sends exactly one request per insert, commit and insertEntity, first write and duplicate alike', async () => {
    const client = newClient();
    const store = newStore(client);
    const counter = attachRequestCounter(client);
    const measured: Record<string, unknown> = {};
    const measure = async (label: string, call: () => Promise<unknown>) => {
      counter.reset();
      await call();
      measured[label] = counter.counts();
    };
    const [insertKey, commitKey, entityKey, claimKey] = [key('n'), key('n'), key('n'), key('n')];
    const entity = { tableName: businessTable, keyAttribute: 'pk', item: { pk: entityKey, total: 1 } };
    const claim = marker(claimKey, { status: 'IN_PROGRESS', owner: 'owner-a', leaseExpiresAt: now + 30_000 });

    await measure('insert', () => store.insert(marker(insertKey, { owner: 'owner-m' }), now));
    await measure('insert duplicate', () => store.insert(marker(insertKey), now));
    await measure('commit', () => store.commit(marker(commitKey), [put(key('b')), put(key('b'))], now));
    await measure('commit duplicate', () => store.commit(marker(commitKey), [put(key('b'))], now));
    await measure('insertEntity', () => store.insertEntity(entity, 'fp-1', now));
    await measure('insertEntity duplicate', () => store.insertEntity(entity, 'fp-1', now));
    await measure('claimLease', () => store.claimLease(claim, now));
    await measure('claimLease duplicate', () => store.claimLease(claim, now));
    await measure('extendLease', () =>
      store.extendLease(claimKey, 'owner-a', now + 60_000, nowSeconds + 3660),
    );
    await measure('complete', () => store.complete(claimKey, 'owner-a', { expiresAt: nowSeconds + 60 }));
    await measure('release', () => store.release(insertKey, { owner: 'owner-m', status: 'COMPLETED' }));

    expect(measured).toEqual({
      insert: { PutItem: 1 },
      'insert duplicate': { PutItem: 1 },
      commit: { TransactWriteItems: 1 },
      'commit duplicate': { TransactWriteItems: 1 },
      insertEntity: { PutItem: 1 },
      'insertEntity duplicate': { PutItem: 1 },
      claimLease: { PutItem: 1 },
      'claimLease duplicate': { PutItem: 1 },
      extendLease: { UpdateItem: 1 },
      complete: { UpdateItem: 1 },
      release: { UpdateItem: 1 },
    });
  });
});

describe('DynamoDB store under concurrency', () => {
  const writers = 40;

  it(`lets exactly one of ${writers} concurrent inserts of one key win, from separate clients`, async () => {
    const pk = key('race-insert');
    const stores = Array.from({ length: writers }, () => newStore());

    const results = await Promise.all(
      stores.map((store, i) => store.insert(marker(pk, { fingerprint: `fp-${i}` }), now)),
    );

    const winners = results.flatMap((result, i) => (result.kind === 'inserted' ? [i] : []));
    expect(winners).toHaveLength(1);
    const winner = marker(pk, { fingerprint: `fp-${winners[0]}` });
    const others = results.filter((result) => result.kind === 'existing');
    expect(others).toHaveLength(writers - 1);
    for (const result of others) expect(result).toEqual({ kind: 'existing', record: winner });
  });

  it(`lets exactly one of ${writers} concurrent commits of one key apply its writes`, async () => {
    const pk = key('race-commit');
    const shared = key('race-business');
    const stores = Array.from({ length: writers }, () => newStore());

    const results = await Promise.all(
      stores.map((store, i) =>
        store.commit(
          marker(pk, { fingerprint: `fp-${i}` }),
          [put(shared, { writer: i }), put(`${shared}#${i}`)],
          now,
        ),
      ),
    );

    const winners = results.flatMap((result, i) => (result.kind === 'committed' ? [i] : []));
    expect(winners).toHaveLength(1);
    expect(results.filter((result) => result.kind === 'existing')).toHaveLength(writers - 1);
    expect(await readItem(businessTable, shared)).toEqual({ pk: shared, writer: winners[0] });
    const perWriter = await Promise.all(results.map((_, i) => readItem(businessTable, `${shared}#${i}`)));
    expect(perWriter.filter(Boolean)).toEqual([{ pk: `${shared}#${winners[0]}` }]);
  });

  it(`lets exactly one of ${writers} concurrent claims of one key hold the lease`, async () => {
    const pk = key('race-claim');
    const stores = Array.from({ length: writers }, () => newStore());

    const results = await Promise.all(
      stores.map((store, i) =>
        store.claimLease(
          marker(pk, { status: 'IN_PROGRESS', owner: `owner-${i}`, leaseExpiresAt: now + 30_000 }),
          now,
        ),
      ),
    );

    expect(results.filter((result) => result.kind === 'inserted')).toEqual([
      { kind: 'inserted', takeover: false },
    ]);
  });
});

describe('DynamoDB store failures', () => {
  it('reports a throttled insert as THROTTLED, retryable, after the SDK spent its attempts', async () => {
    const client = newClient({ maxAttempts: 2 });
    const counter = attachRequestCounter(client);
    injectFaults(client, () => THROTTLED);

    const failure = newStore(client).insert(marker(key('throttled')), now);

    await expect(failure).rejects.toMatchObject({
      name: 'EffectivelyOnceError',
      code: 'THROTTLED',
      disposition: 'retry',
      cause: expect.objectContaining({ name: 'ThrottlingException' }),
    });
    expect(counter.counts()).toEqual({ PutItem: 2 });
  });

  it('recovers when the SDK retry succeeds after one throttled attempt', async () => {
    const client = newClient({ maxAttempts: 3 });
    const counter = attachRequestCounter(client);
    let attempts = 0;
    injectFaults(client, () =>
      ++attempts === 1 ? { statusCode: 400, type: 'ProvisionedThroughputExceededException' } : undefined,
    );

    expect(await newStore(client).insert(marker(key('throttled-once')), now)).toEqual({ kind: 'inserted' });
    expect(counter.counts()).toEqual({ PutItem: 2 });
  });

  it('reports a TransactionConflictException on a single-item write as TRANSACTION_CONFLICT', async () => {
    const client = newClient({ maxAttempts: 1 });
    injectFaults(client, () => ({ statusCode: 400, type: 'TransactionConflictException' }));

    await expect(newStore(client).insert(marker(key('conflict')), now)).rejects.toMatchObject({
      code: 'TRANSACTION_CONFLICT',
      disposition: 'retry',
      cause: expect.objectContaining({ name: 'TransactionConflictException' }),
    });
  });

  it.each([
    {
      code: 'TRANSACTION_CONFLICT',
      disposition: 'retry',
      reasons: [{ Code: 'None' }, { Code: 'TransactionConflict' }],
    },
    { code: 'THROTTLED', disposition: 'retry', reasons: [{ Code: 'ThrottlingError' }, { Code: 'None' }] },
    {
      code: 'THROTTLED',
      disposition: 'retry',
      reasons: [{ Code: 'None' }, { Code: 'ProvisionedThroughputExceeded' }],
    },
    {
      code: 'VALIDATION',
      disposition: 'permanent',
      reasons: [{ Code: 'None' }, { Code: 'ValidationError' }],
    },
    {
      code: 'ITEM_TOO_LARGE',
      disposition: 'permanent',
      reasons: [
        { Code: 'None' },
        { Code: 'ValidationError', Message: 'Item size has exceeded the maximum allowed size' },
      ],
    },
    {
      code: 'VALIDATION',
      disposition: 'permanent',
      reasons: [{ Code: 'None' }, { Code: 'ItemCollectionSizeLimitExceeded' }],
    },
    {
      code: 'TRANSACTION_CONFLICT',
      disposition: 'retry',
      reasons: [{ Code: 'None' }, { Code: 'ConditionalCheckFailed' }, { Code: 'TransactionConflict' }],
    },
  ])('reports a transaction cancelled for $reasons as $code', async ({ code, disposition, reasons }) => {
    const client = newClient({ maxAttempts: 1 });
    injectFaults(client, () => ({
      statusCode: 400,
      type: 'TransactionCanceledException',
      body: { Message: 'Transaction cancelled (injected)', CancellationReasons: reasons },
    }));

    const failure = newStore(client).commit(marker(key('cancelled')), [put(key('b')), put(key('b'))], now);

    await expect(failure).rejects.toMatchObject({
      code,
      disposition,
      cause: expect.objectContaining({ name: 'TransactionCanceledException' }),
    });
  });

  it('reports an HTTP 500 as SERVICE_UNAVAILABLE', async () => {
    const client = newClient({ maxAttempts: 1 });
    injectFaults(client, () => ({ statusCode: 500, type: 'InternalServerError' }));

    await expect(newStore(client).insert(marker(key('5xx')), now)).rejects.toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      disposition: 'retry',
    });
  });

  it('reports an unreachable endpoint as NETWORK', async () => {
    const closed = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number };
        server.close(() => resolve(port));
      });
    });
    const client = newClient({ maxAttempts: 1, endpoint: `http://127.0.0.1:${closed}` });

    await expect(newStore(client).insert(marker(key('network')), now)).rejects.toMatchObject({
      code: 'NETWORK',
      disposition: 'retry',
      cause: expect.objectContaining({ code: 'ECONNREFUSED' }),
    });
  });

  it('reports an item over 400 KB as ITEM_TOO_LARGE, a permanent error that says so', async () => {
    const store = newStore();
    const big = 'x'.repeat(410 * 1024);

    await expect(store.insert(marker(key('big'), { result: big }), now)).rejects.toMatchObject({
      code: 'ITEM_TOO_LARGE',
      disposition: 'permanent',
      message: expect.stringMatching(/insert: .*400 KB/),
    });
    await expect(store.commit(marker(key('big')), [put(key('b'), { big })], now)).rejects.toMatchObject({
      code: 'ITEM_TOO_LARGE',
      disposition: 'permanent',
    });
    const entity = { tableName: businessTable, keyAttribute: 'pk', item: { pk: key('big'), big } };
    await expect(store.insertEntity(entity, 'fp-1', now)).rejects.toMatchObject({
      code: 'ITEM_TOO_LARGE',
      disposition: 'permanent',
    });
  });

  it('reports a missing inbox or business table as MISSING_RESOURCE, a configuration error', async () => {
    const missing = newStore(newClient(), uniqueName('eo-missing'));

    await expect(missing.insert(marker(key('missing')), now)).rejects.toMatchObject({
      code: 'MISSING_RESOURCE',
      disposition: 'configuration',
      cause: expect.objectContaining({ name: 'ResourceNotFoundException' }),
    });
    const orphan: TransactWriteAction = { Put: { TableName: uniqueName('eo-missing'), Item: { pk: 'x' } } };
    await expect(newStore().commit(marker(key('missing')), [orphan], now)).rejects.toMatchObject({
      code: 'MISSING_RESOURCE',
    });
  });

  it('reports an undefined value nested in a result as VALIDATION when the client keeps undefined values', async () => {
    const store = newStore(DynamoDBDocumentClient.from(local.dynamoDbClient()));

    await expect(
      store.insert(marker(key('undefined'), { result: { a: undefined } }), now),
    ).rejects.toMatchObject({
      code: 'VALIDATION',
      message: expect.stringContaining('removeUndefinedValues'),
    });
  });
});

describe('DynamoDB store reading the item a failed condition returned', () => {
  // 20 significant digits: DynamoDB keeps them, a JavaScript number cannot.
  const digits = '98765432109876543210.5';

  it('recognises a duplicate entity whose item holds a number JavaScript cannot hold', async () => {
    const pk = key('big-number');
    const entity = {
      tableName: businessTable,
      keyAttribute: 'pk',
      item: { pk, amount: NumberValue.from(digits) },
    };
    const store = newStore();
    await store.insertEntity(entity, 'fp-1', now);

    expect(await store.insertEntity(entity, 'fp-1', now + 1)).toEqual({
      kind: 'existing',
      record: {
        pk,
        status: 'COMPLETED',
        fingerprint: 'fp-1',
        expiresAt: Number.MAX_SAFE_INTEGER,
        consumer: '',
      },
    });
  });

  it('reports a returned item it cannot unmarshall as VALIDATION, naming the error class only', async () => {
    const client = newClient({ maxAttempts: 1 });
    injectFaults(client, () => ({
      statusCode: 400,
      type: 'ConditionalCheckFailedException',
      body: { Item: { pk: { S: 'k' }, note: { S: 'S3NT1NEL' }, amount: { M: { S3NT1NEL: {} } } } },
    }));

    const failure = newStore(client).insert(marker(key('unreadable')), now);

    await expect(failure).rejects.toMatchObject({
      code: 'VALIDATION',
      disposition: 'permanent',
      message: 'insert (returned item): a returned item cannot be unmarshalled (Error)',
    });
    await expect(failure).rejects.toSatisfy((error: Error) => !String(error.message).includes('S3NT1NEL'));
  });
});

describe('DynamoDB store on an endpoint that does not return the old item', () => {
  const conditionFailedWithoutItem: FakeError = {
    statusCode: 400,
    type: 'ConditionalCheckFailedException',
  };

  it('falls back to one consistent read for a duplicate insert', async () => {
    const pk = key('no-all-old');
    const record = marker(pk);
    await newStore().insert(record, now);
    const client = newClient();
    const counter = attachRequestCounter(client);
    injectFaults(client, (operation) => (operation === 'PutItem' ? conditionFailedWithoutItem : undefined));

    expect(await newStore(client).insert(marker(pk, { fingerprint: 'fp-2' }), now)).toEqual({
      kind: 'existing',
      record,
    });
    expect(counter.counts()).toEqual({ PutItem: 1, GetItem: 1 });
  });

  it('falls back to one consistent read for a duplicate commit', async () => {
    const pk = key('no-all-old-commit');
    const record = marker(pk);
    await newStore().insert(record, now);
    const client = newClient();
    const counter = attachRequestCounter(client);
    injectFaults(client, (operation) =>
      operation === 'TransactWriteItems'
        ? {
            statusCode: 400,
            type: 'TransactionCanceledException',
            body: { CancellationReasons: [{ Code: 'ConditionalCheckFailed' }, { Code: 'None' }] },
          }
        : undefined,
    );

    expect(await newStore(client).commit(marker(pk, { fingerprint: 'fp-2' }), [put(key('b'))], now)).toEqual({
      kind: 'existing',
      record,
    });
    expect(counter.counts()).toEqual({ TransactWriteItems: 1, GetItem: 1 });
  });

  it('falls back to one consistent read when a cancelled transaction carries no reasons', async () => {
    const pk = key('no-reasons');
    const record = marker(pk);
    await newStore().insert(record, now);
    const client = newClient({ maxAttempts: 1 });
    injectFaults(client, (operation) =>
      operation === 'TransactWriteItems'
        ? { statusCode: 400, type: 'TransactionCanceledException' }
        : undefined,
    );
    const store = newStore(client);

    expect(await store.commit(marker(pk), [put(key('b'))], now)).toEqual({ kind: 'existing', record });
    await expect(store.commit(marker(key('no-reasons')), [put(key('b'))], now)).rejects.toMatchObject({
      code: 'TRANSACTION_CONFLICT',
      disposition: 'retry',
    });
  });

  it('asks for a retry when the record vanished between the failed condition and the read', async () => {
    const client = newClient();
    injectFaults(client, (operation) => (operation === 'PutItem' ? conditionFailedWithoutItem : undefined));

    await expect(newStore(client).insert(marker(key('vanished')), now)).rejects.toMatchObject({
      code: 'TRANSACTION_CONFLICT',
      disposition: 'retry',
      message: expect.stringContaining('no live record'),
    });
  });
});
