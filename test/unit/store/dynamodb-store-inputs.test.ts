/**
 * The exact command every DynamoDB store method sends: its class and its whole `input`. The
 * store contract suite checks what DynamoDB does with these requests (on the emulator); this
 * pins the requests themselves, so a changed condition fails here first, without an emulator.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import type { InboxRecord, InboxStore } from '../../../lambda/core/store-port';
import { createDynamoDbStore } from '../../../lambda/store/dynamodb-store';

/** One command as the fake client received it. */
interface SentCommand {
  readonly command: string;
  readonly input: Record<string, unknown>;
}

/** What the fake client answers to a command: an output, or an error to throw. */
type Answer = { readonly output: Record<string, unknown> } | { readonly error: unknown };

/**
 * A document client double that records every command (class name and input) and answers with
 * `answer`, by default `{}`.
 */
function recordingClient(answer: (command: string) => Answer = () => ({ output: {} })) {
  const sent: SentCommand[] = [];
  const client = {
    send: async (command: { constructor: { name: string }; input: Record<string, unknown> }) => {
      sent.push({ command: command.constructor.name, input: command.input });
      const reply = answer(command.constructor.name);
      if ('error' in reply) throw reply.error;
      return reply.output;
    },
  } as unknown as DynamoDBDocumentClient;
  return { client, sent };
}

function storeWith(answer?: (command: string) => Answer): { store: InboxStore; sent: SentCommand[] } {
  const { client, sent } = recordingClient(answer);
  return { store: createDynamoDbStore({ client, tableName: 'inbox' }), sent };
}

/** A failed condition without the stored item (an endpoint that ignores `ALL_OLD`). */
const conditionFailedWithoutItem = (): Answer => ({
  error: Object.assign(new Error('The conditional request failed'), {
    name: 'ConditionalCheckFailedException',
  }),
});

const nowMillis = 1_767_225_600_000;
const nowSeconds = 1_767_225_600;
const expiresAt = 1_767_229_200;

const marker: InboxRecord = {
  pk: 'orders#o-1',
  status: 'COMPLETED',
  fingerprint: 'fp-1',
  expiresAt,
  consumer: 'orders',
  committedAt: nowMillis,
};
const markerItem = {
  pk: 'orders#o-1',
  status: 'COMPLETED',
  fingerprint: 'fp-1',
  expiresAt,
  consumer: 'orders',
  committedAt: nowMillis,
};
const claim: InboxRecord = {
  ...marker,
  status: 'IN_PROGRESS',
  owner: 'owner-a',
  leaseExpiresAt: nowMillis + 60_000,
};
const claimItem = {
  ...markerItem,
  status: 'IN_PROGRESS',
  owner: 'owner-a',
  leaseExpiresAt: nowMillis + 60_000,
};

/** The marker put of an ownerless marker (atomic commits): any live record but a released claim of its payload stops it. */
const ownerlessMarkerPut = {
  TableName: 'inbox',
  Item: markerItem,
  ConditionExpression:
    'attribute_not_exists(#pk) OR #expiresAt <= :nowSeconds OR (#status = :inProgress AND #leaseExpiresAt = :released AND #fingerprint = :fingerprint)',
  ExpressionAttributeNames: {
    '#pk': 'pk',
    '#expiresAt': 'expiresAt',
    '#status': 'status',
    '#leaseExpiresAt': 'leaseExpiresAt',
    '#fingerprint': 'fingerprint',
  },
  ExpressionAttributeValues: {
    ':nowSeconds': nowSeconds,
    ':inProgress': 'IN_PROGRESS',
    ':released': 0,
    ':fingerprint': 'fp-1',
  },
  ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
};

/** The claim condition: as the ownerless marker's, but never the claim's own released claim. */
const claimCondition = {
  ConditionExpression:
    'attribute_not_exists(#pk) OR #expiresAt <= :nowSeconds OR (#status = :inProgress AND #leaseExpiresAt = :released AND #fingerprint = :fingerprint AND #owner <> :claimOwner)',
  ExpressionAttributeNames: {
    '#pk': 'pk',
    '#expiresAt': 'expiresAt',
    '#status': 'status',
    '#leaseExpiresAt': 'leaseExpiresAt',
    '#fingerprint': 'fingerprint',
    '#owner': 'owner',
  },
  ExpressionAttributeValues: {
    ':nowSeconds': nowSeconds,
    ':inProgress': 'IN_PROGRESS',
    ':released': 0,
    ':fingerprint': 'fp-1',
    ':claimOwner': 'owner-a',
  },
};

const consistentRead = (TableName: string, Key: Record<string, unknown>): SentCommand => ({
  command: 'GetCommand',
  input: { TableName, Key, ConsistentRead: true },
});

describe('DynamoDB store: the command each method sends', () => {
  it('inserts an ownerless marker with one conditional put returning the stored item on failure', async () => {
    const { store, sent } = storeWith();

    expect(await store.insert(marker, nowMillis)).toEqual({ kind: 'inserted' });

    expect(sent).toEqual([{ command: 'PutCommand', input: ownerlessMarkerPut }]);
  });

  it('inserts a marker with an owner under the claim condition, which never takes its own released claim', async () => {
    const { store, sent } = storeWith();

    expect(await store.insert({ ...marker, owner: 'owner-a' }, nowMillis)).toEqual({ kind: 'inserted' });

    expect(sent).toEqual([
      {
        command: 'PutCommand',
        input: {
          TableName: 'inbox',
          Item: { ...markerItem, owner: 'owner-a' },
          ...claimCondition,
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
    ]);
  });

  it('commits the marker put at index 0 and the business writes unchanged after it', async () => {
    const { store, sent } = storeWith();
    const business = {
      Put: {
        TableName: 'orders',
        Item: { pk: 'o-1', total: 3 },
        ConditionExpression: 'attribute_not_exists(#pk)',
        ExpressionAttributeNames: { '#pk': 'pk' },
      },
    };

    expect(await store.commit(marker, [business], nowMillis)).toEqual({ kind: 'committed' });

    expect(sent).toEqual([
      { command: 'TransactWriteCommand', input: { TransactItems: [{ Put: ownerlessMarkerPut }, business] } },
    ]);
  });

  it('inserts an entity with its fingerprint, conditional on its own key attribute and TTL', async () => {
    const { store, sent } = storeWith();

    expect(
      await store.insertEntity(
        { tableName: 'orders', keyAttribute: 'orderId', item: { orderId: 'o-1', total: 3 } },
        'fp-1',
        nowMillis,
      ),
    ).toEqual({ kind: 'inserted' });

    expect(sent).toEqual([
      {
        command: 'PutCommand',
        input: {
          TableName: 'orders',
          Item: { orderId: 'o-1', total: 3, eoFingerprint: 'fp-1' },
          ConditionExpression: 'attribute_not_exists(#pk) OR #expiresAt <= :nowSeconds',
          ExpressionAttributeNames: { '#pk': 'orderId', '#expiresAt': 'expiresAt' },
          ExpressionAttributeValues: { ':nowSeconds': nowSeconds },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
    ]);
  });

  it.each([
    ['COMPLETED', { owner: 'owner-a', status: 'COMPLETED' }],
    ['IN_PROGRESS', { owner: 'owner-a', status: 'IN_PROGRESS' }],
    ['IN_PROGRESS', { owner: 'owner-a' }],
  ] as const)(
    'releases a %s claim of its owner (guard %o) into a released claim, lease end 0',
    async (status, guard) => {
      const { store, sent } = storeWith();

      expect(await store.release('orders#o-1', guard)).toEqual({ kind: 'ok' });

      expect(sent).toEqual([
        {
          command: 'UpdateCommand',
          input: {
            TableName: 'inbox',
            Key: { pk: 'orders#o-1' },
            ConditionExpression:
              '#owner = :owner AND (#status = :status OR (#status = :inProgress AND #leaseExpiresAt = :released))',
            UpdateExpression: 'SET #status = :inProgress, #leaseExpiresAt = :released',
            ExpressionAttributeNames: {
              '#owner': 'owner',
              '#status': 'status',
              '#leaseExpiresAt': 'leaseExpiresAt',
            },
            ExpressionAttributeValues: {
              ':owner': 'owner-a',
              ':status': status,
              ':inProgress': 'IN_PROGRESS',
              ':released': 0,
            },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
      ]);
    },
  );

  it('claims a lease with one put returning the replaced item, under the claim condition', async () => {
    const { store, sent } = storeWith();

    expect(await store.claimLease(claim, nowMillis)).toEqual({ kind: 'inserted', takeover: false });

    expect(sent).toEqual([
      {
        command: 'PutCommand',
        input: {
          TableName: 'inbox',
          Item: claimItem,
          ...claimCondition,
          ReturnValues: 'ALL_OLD',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
    ]);
  });

  it('claims a lease with a takeover of the named owner’s claim once its lease ended before now', async () => {
    const { store, sent } = storeWith();

    expect(await store.claimLease(claim, nowMillis, { owner: 'owner-b' })).toEqual({
      kind: 'inserted',
      takeover: false,
    });

    expect(sent).toEqual([
      {
        command: 'PutCommand',
        input: {
          TableName: 'inbox',
          Item: claimItem,
          ConditionExpression:
            'attribute_not_exists(#pk) OR #expiresAt <= :nowSeconds OR (#status = :inProgress AND #leaseExpiresAt = :released AND #fingerprint = :fingerprint AND #owner <> :claimOwner) OR (#owner = :owner AND #status = :inProgress AND #leaseExpiresAt < :nowMillis)',
          ExpressionAttributeNames: claimCondition.ExpressionAttributeNames,
          ExpressionAttributeValues: {
            ...claimCondition.ExpressionAttributeValues,
            ':owner': 'owner-b',
            ':nowMillis': nowMillis,
          },
          ReturnValues: 'ALL_OLD',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
    ]);
  });

  it('completes a held claim without a result: status and expiresAt set, lease removed', async () => {
    const { store, sent } = storeWith();

    expect(await store.complete('orders#o-1', 'owner-a', { expiresAt })).toEqual({ kind: 'ok' });

    expect(sent).toEqual([
      {
        command: 'UpdateCommand',
        input: {
          TableName: 'inbox',
          Key: { pk: 'orders#o-1' },
          ConditionExpression: '#owner = :owner AND #status = :inProgress AND #leaseExpiresAt > :released',
          UpdateExpression: 'SET #status = :completed, #expiresAt = :expiresAt REMOVE #leaseExpiresAt',
          ExpressionAttributeNames: {
            '#owner': 'owner',
            '#status': 'status',
            '#leaseExpiresAt': 'leaseExpiresAt',
            '#expiresAt': 'expiresAt',
          },
          ExpressionAttributeValues: {
            ':owner': 'owner-a',
            ':inProgress': 'IN_PROGRESS',
            ':released': 0,
            ':completed': 'COMPLETED',
            ':expiresAt': expiresAt,
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
    ]);
  });

  it('completes a held claim with its result in the same update', async () => {
    const { store, sent } = storeWith();

    expect(await store.complete('orders#o-1', 'owner-a', { expiresAt, result: '{"ok":true}' })).toEqual({
      kind: 'ok',
    });

    expect(sent).toEqual([
      {
        command: 'UpdateCommand',
        input: {
          TableName: 'inbox',
          Key: { pk: 'orders#o-1' },
          ConditionExpression: '#owner = :owner AND #status = :inProgress AND #leaseExpiresAt > :released',
          UpdateExpression:
            'SET #status = :completed, #expiresAt = :expiresAt, #result = :result REMOVE #leaseExpiresAt',
          ExpressionAttributeNames: {
            '#owner': 'owner',
            '#status': 'status',
            '#leaseExpiresAt': 'leaseExpiresAt',
            '#expiresAt': 'expiresAt',
            '#result': 'result',
          },
          ExpressionAttributeValues: {
            ':owner': 'owner-a',
            ':inProgress': 'IN_PROGRESS',
            ':released': 0,
            ':completed': 'COMPLETED',
            ':expiresAt': expiresAt,
            ':result': '{"ok":true}',
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
    ]);
  });

  it('replaces a record only while it carries the current fingerprint, without a result', async () => {
    const { store, sent } = storeWith();

    expect(await store.replace('jobs#j-1', 'fp-1', { fingerprint: 'fp-2', expiresAt })).toEqual({
      kind: 'ok',
    });

    expect(sent).toEqual([
      {
        command: 'UpdateCommand',
        input: {
          TableName: 'inbox',
          Key: { pk: 'jobs#j-1' },
          ConditionExpression: '#fingerprint = :current',
          UpdateExpression: 'SET #fingerprint = :fingerprint, #expiresAt = :expiresAt',
          ExpressionAttributeNames: { '#fingerprint': 'fingerprint', '#expiresAt': 'expiresAt' },
          ExpressionAttributeValues: { ':current': 'fp-1', ':fingerprint': 'fp-2', ':expiresAt': expiresAt },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
    ]);
  });

  it('replaces a record with its result in the same update', async () => {
    const { store, sent } = storeWith();

    expect(
      await store.replace('jobs#j-1', 'fp-1', { fingerprint: 'fp-2', expiresAt, result: 'checkpoint' }),
    ).toEqual({ kind: 'ok' });

    expect(sent).toEqual([
      {
        command: 'UpdateCommand',
        input: {
          TableName: 'inbox',
          Key: { pk: 'jobs#j-1' },
          ConditionExpression: '#fingerprint = :current',
          UpdateExpression: 'SET #fingerprint = :fingerprint, #expiresAt = :expiresAt, #result = :result',
          ExpressionAttributeNames: {
            '#fingerprint': 'fingerprint',
            '#expiresAt': 'expiresAt',
            '#result': 'result',
          },
          ExpressionAttributeValues: {
            ':current': 'fp-1',
            ':fingerprint': 'fp-2',
            ':expiresAt': expiresAt,
            ':result': 'checkpoint',
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
    ]);
  });

  it('extends a held, unreleased lease forward only, moving expiresAt with it', async () => {
    const { store, sent } = storeWith();

    expect(await store.extendLease('orders#o-1', 'owner-a', nowMillis + 120_000, expiresAt + 60)).toEqual({
      kind: 'ok',
    });

    expect(sent).toEqual([
      {
        command: 'UpdateCommand',
        input: {
          TableName: 'inbox',
          Key: { pk: 'orders#o-1' },
          ConditionExpression:
            '#owner = :owner AND #status = :inProgress AND #leaseExpiresAt > :released AND #leaseExpiresAt < :leaseExpiresAt',
          UpdateExpression: 'SET #leaseExpiresAt = :leaseExpiresAt, #expiresAt = :expiresAt',
          ExpressionAttributeNames: {
            '#owner': 'owner',
            '#status': 'status',
            '#leaseExpiresAt': 'leaseExpiresAt',
            '#expiresAt': 'expiresAt',
          },
          ExpressionAttributeValues: {
            ':owner': 'owner-a',
            ':inProgress': 'IN_PROGRESS',
            ':released': 0,
            ':leaseExpiresAt': nowMillis + 120_000,
            ':expiresAt': expiresAt + 60,
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
    ]);
  });

  it('builds a version-guarded put without sending anything', () => {
    const { store, sent } = storeWith();

    expect(
      store.putIfNewer({
        TableName: 'customers',
        Item: { pk: 'c-1', version: 3 },
        versionAttribute: 'version',
      }),
    ).toEqual({
      Put: {
        TableName: 'customers',
        Item: { pk: 'c-1', version: 3 },
        ConditionExpression: 'attribute_not_exists(#version) OR #version < :version',
        ExpressionAttributeNames: { '#version': 'version' },
        ExpressionAttributeValues: { ':version': 3 },
      },
    });
    expect(sent).toEqual([]);
  });
});

describe('DynamoDB store: the consistent read after a failed condition without the stored item', () => {
  const storedRecord = {
    pk: 'orders#o-1',
    status: 'COMPLETED',
    fingerprint: 'fp-0',
    expiresAt,
    consumer: 'orders',
  };
  const withoutItem = (command: string): Answer =>
    command === 'GetCommand' ? { output: { Item: storedRecord } } : conditionFailedWithoutItem();

  it('reads the inbox record by key, strongly consistent, after a failed insert', async () => {
    const { store, sent } = storeWith(withoutItem);

    expect(await store.insert(marker, nowMillis)).toEqual({ kind: 'existing', record: storedRecord });

    expect(sent).toEqual([
      { command: 'PutCommand', input: ownerlessMarkerPut },
      consistentRead('inbox', { pk: 'orders#o-1' }),
    ]);
  });

  it('reads the inbox record after a failed lease claim', async () => {
    const { store, sent } = storeWith(withoutItem);

    expect(await store.claimLease(claim, nowMillis)).toEqual({ kind: 'existing', record: storedRecord });

    expect(sent.map(({ command }) => command)).toEqual(['PutCommand', 'GetCommand']);
    expect(sent[1]).toEqual(consistentRead('inbox', { pk: 'orders#o-1' }));
  });

  it('reads the business item by its key attribute after a failed entity insert', async () => {
    const { store, sent } = storeWith((command) =>
      command === 'GetCommand'
        ? { output: { Item: { orderId: 'o-1', total: 3, eoFingerprint: 'fp-0' } } }
        : conditionFailedWithoutItem(),
    );

    expect(
      await store.insertEntity(
        { tableName: 'orders', keyAttribute: 'orderId', item: { orderId: 'o-1', total: 3 } },
        'fp-1',
        nowMillis,
      ),
    ).toEqual({
      kind: 'existing',
      record: {
        pk: 'o-1',
        status: 'COMPLETED',
        fingerprint: 'fp-0',
        expiresAt: Number.MAX_SAFE_INTEGER,
        consumer: '',
      },
    });

    expect(sent.map(({ command }) => command)).toEqual(['PutCommand', 'GetCommand']);
    expect(sent[1]).toEqual(consistentRead('orders', { orderId: 'o-1' }));
  });

  it('reads the inbox record after a commit cancelled without reasons', async () => {
    const { store, sent } = storeWith((command) =>
      command === 'GetCommand'
        ? { output: { Item: storedRecord } }
        : { error: Object.assign(new Error('cancelled'), { name: 'TransactionCanceledException' }) },
    );

    expect(await store.commit(marker, [], nowMillis)).toEqual({ kind: 'existing', record: storedRecord });

    expect(sent).toEqual([
      { command: 'TransactWriteCommand', input: { TransactItems: [{ Put: ownerlessMarkerPut }] } },
      consistentRead('inbox', { pk: 'orders#o-1' }),
    ]);
  });
});

/** The marked put of `commitWithItemMarker` tests: an order row keyed by `orderId`. */
const orderPut = { Put: { TableName: 'orders', Item: { orderId: 'o-1', total: 3 } } };
/** The same put with its own condition, whose placeholders collide with the marker's names. */
const conditionalOrderPut = {
  Put: {
    TableName: 'orders',
    Item: { orderId: 'o-1', total: 3 },
    ConditionExpression: '#pk <> :nowSeconds AND attribute_not_exists(#pk2)',
    ExpressionAttributeNames: { '#pk': 'region', '#pk2': 'cancelledAt' },
    ExpressionAttributeValues: { ':nowSeconds': 'eu' },
    ReturnValuesOnConditionCheckFailure: 'NONE' as const,
  },
};
const orderMarker = { index: 0, keyAttribute: 'orderId', fingerprint: 'fp-1' };
/** The marked order put as sent: the fingerprint on the item, entity mode's condition. */
const markedOrderPut = {
  TableName: 'orders',
  Item: { orderId: 'o-1', total: 3, eoFingerprint: 'fp-1' },
  ConditionExpression: 'attribute_not_exists(#pk) OR #expiresAt <= :nowSeconds',
  ExpressionAttributeNames: { '#pk': 'orderId', '#expiresAt': 'expiresAt' },
  ExpressionAttributeValues: { ':nowSeconds': nowSeconds },
  ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
};
/** A transaction cancelled with `reasons` (in the order of its items). */
const cancelled = (...reasons: Record<string, unknown>[]): Answer => ({
  error: Object.assign(new Error('Transaction cancelled'), {
    name: 'TransactionCanceledException',
    CancellationReasons: reasons,
  }),
});
const stock = {
  Update: {
    TableName: 'stock',
    Key: { pk: 'sku-1' },
    UpdateExpression: 'SET available = available - :one',
    ExpressionAttributeValues: { ':one': 1 },
  },
};

/** A lone put's failed condition, returning `Item` (raw, as DynamoDB sends it) when given. */
const putConditionFailed = (Item?: Record<string, unknown>): Answer => ({
  error: Object.assign(new Error('The conditional request failed'), {
    name: 'ConditionalCheckFailedException',
    ...(Item ? { Item } : {}),
  }),
});

describe('DynamoDB store: commit with the marker on a business item', () => {
  it('sends the writes alone, the marked put with its fingerprint under entity mode’s condition, and no inbox put', async () => {
    const { store, sent } = storeWith();

    expect(
      await store.commitWithItemMarker([stock, orderPut], { ...orderMarker, index: 1 }, nowMillis),
    ).toEqual({
      kind: 'committed',
    });

    expect(sent).toEqual([
      { command: 'TransactWriteCommand', input: { TransactItems: [stock, { Put: markedOrderPut }] } },
    ]);
  });

  it('sends a marked put without other writes as one conditional PutCommand, entity mode’s request, not a transaction', async () => {
    const { store, sent } = storeWith();

    expect(await store.commitWithItemMarker([orderPut], orderMarker, nowMillis)).toEqual({
      kind: 'committed',
    });

    expect(sent).toEqual([{ command: 'PutCommand', input: markedOrderPut }]);
    // The same request entity mode sends for the same item and fingerprint.
    const entity = storeWith();
    await entity.store.insertEntity(
      { tableName: 'orders', keyAttribute: 'orderId', item: { orderId: 'o-1', total: 3 } },
      'fp-1',
      nowMillis,
    );
    expect(entity.sent).toEqual(sent);
  });

  it('joins the put’s own condition with AND under marker placeholders it does not use, returning the item on failure', async () => {
    const joined = {
      TableName: 'orders',
      Item: { orderId: 'o-1', total: 3, eoFingerprint: 'fp-1' },
      ConditionExpression:
        '(attribute_not_exists(#pk3) OR #expiresAt <= :nowSeconds2) AND (#pk <> :nowSeconds AND attribute_not_exists(#pk2))',
      ExpressionAttributeNames: {
        '#pk': 'region',
        '#pk2': 'cancelledAt',
        '#pk3': 'orderId',
        '#expiresAt': 'expiresAt',
      },
      ExpressionAttributeValues: { ':nowSeconds': 'eu', ':nowSeconds2': nowSeconds },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    };
    const lone = storeWith();
    const paired = storeWith();

    await lone.store.commitWithItemMarker([conditionalOrderPut], orderMarker, nowMillis);
    await paired.store.commitWithItemMarker([conditionalOrderPut, stock], orderMarker, nowMillis);

    expect(lone.sent).toEqual([{ command: 'PutCommand', input: joined }]);
    expect(paired.sent).toEqual([
      { command: 'TransactWriteCommand', input: { TransactItems: [{ Put: joined }, stock] } },
    ]);
  });

  it('reads a live returned item as the existing marker, as entity mode reads it, from a transaction or a lone put', async () => {
    const stored = { orderId: { S: 'o-1' }, total: { N: '3' }, eoFingerprint: { S: 'fp-0' } };
    const existing = {
      kind: 'existing',
      record: {
        pk: 'o-1',
        status: 'COMPLETED',
        fingerprint: 'fp-0',
        expiresAt: Number.MAX_SAFE_INTEGER,
        consumer: '',
      },
    };
    const transaction = storeWith(() =>
      cancelled({ Code: 'None' }, { Code: 'ConditionalCheckFailed', Item: stored }),
    );
    const lone = storeWith(() => putConditionFailed(stored));

    expect(
      await transaction.store.commitWithItemMarker(
        [stock, orderPut],
        { ...orderMarker, index: 1 },
        nowMillis,
      ),
    ).toEqual(existing);
    expect(await lone.store.commitWithItemMarker([orderPut], orderMarker, nowMillis)).toEqual(existing);
    expect(lone.sent.map(({ command }) => command)).toEqual(['PutCommand']);
  });

  it('reads an item without a fingerprint as a record with the fingerprint empty (a mismatch for the core)', async () => {
    const stored = { orderId: { S: 'o-1' }, total: { N: '1' } };
    const transaction = storeWith(() =>
      cancelled({ Code: 'ConditionalCheckFailed', Item: stored }, { Code: 'None' }),
    );
    const lone = storeWith(() => putConditionFailed(stored));

    for (const store of [transaction.store, lone.store]) {
      const writes = store === lone.store ? [orderPut] : [orderPut, stock];
      expect(await store.commitWithItemMarker(writes, orderMarker, nowMillis)).toMatchObject({
        kind: 'existing',
        record: { pk: 'o-1', fingerprint: '' },
      });
    }
  });

  it('reports the put’s own condition as failed when the returned item has expired (the marker’s part held)', async () => {
    const expired = {
      orderId: { S: 'o-1' },
      eoFingerprint: { S: 'fp-0' },
      expiresAt: { N: String(nowSeconds) },
    };
    const transaction = storeWith(() =>
      cancelled(
        { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed', Item: expired },
        { Code: 'None' },
      ),
    );
    const lone = storeWith(() => putConditionFailed(expired));
    const failed = { kind: 'condition-failed', index: 0, message: 'The conditional request failed' };

    expect(
      await transaction.store.commitWithItemMarker([conditionalOrderPut, stock], orderMarker, nowMillis),
    ).toEqual(failed);
    expect(await lone.store.commitWithItemMarker([conditionalOrderPut], orderMarker, nowMillis)).toEqual(
      failed,
    );
    expect(transaction.sent.map(({ command }) => command)).toEqual(['TransactWriteCommand']);
    expect(lone.sent.map(({ command }) => command)).toEqual(['PutCommand']);
  });

  it('reads the item consistently when the failed condition returned none, and reports the put’s own condition when it is absent', async () => {
    const { store, sent } = storeWith((command) =>
      command === 'GetCommand'
        ? { output: {} }
        : cancelled({ Code: 'None' }, { Code: 'ConditionalCheckFailed' }),
    );

    expect(
      await store.commitWithItemMarker([stock, conditionalOrderPut], { ...orderMarker, index: 1 }, nowMillis),
    ).toEqual({
      kind: 'condition-failed',
      index: 1,
    });
    expect(sent[1]).toEqual(consistentRead('orders', { orderId: 'o-1' }));
  });

  it('reads the item consistently after a lone put’s failed condition returned none, as after a transaction', async () => {
    const { store, sent } = storeWith((command) =>
      command === 'GetCommand'
        ? { output: { Item: { orderId: 'o-1', eoFingerprint: 'fp-1' } } }
        : conditionFailedWithoutItem(),
    );

    expect(await store.commitWithItemMarker([orderPut], orderMarker, nowMillis)).toMatchObject({
      kind: 'existing',
      record: { pk: 'o-1', fingerprint: 'fp-1' },
    });
    expect(sent).toEqual([
      { command: 'PutCommand', input: markedOrderPut },
      consistentRead('orders', { orderId: 'o-1' }),
    ]);
  });

  it('reads the marked item after a commit cancelled without reasons: a live one is the existing marker', async () => {
    const { store, sent } = storeWith((command) =>
      command === 'GetCommand'
        ? { output: { Item: { orderId: 'o-1', eoFingerprint: 'fp-1' } } }
        : { error: Object.assign(new Error('cancelled'), { name: 'TransactionCanceledException' }) },
    );

    expect(await store.commitWithItemMarker([orderPut, stock], orderMarker, nowMillis)).toMatchObject({
      kind: 'existing',
      record: { pk: 'o-1', fingerprint: 'fp-1' },
    });
    expect(sent.map(({ command }) => command)).toEqual(['TransactWriteCommand', 'GetCommand']);
  });

  it('reports another write’s failed condition by its index when the marked put passed', async () => {
    const { store } = storeWith(() => cancelled({ Code: 'None' }, { Code: 'ConditionalCheckFailed' }));

    expect(await store.commitWithItemMarker([orderPut, stock], orderMarker, nowMillis)).toEqual({
      kind: 'condition-failed',
      index: 1,
    });
  });

  it('throws a transient failure of another write when the marked put passed: retried', async () => {
    const { store } = storeWith(() => cancelled({ Code: 'None' }, { Code: 'TransactionConflict' }));

    await expect(store.commitWithItemMarker([orderPut, stock], orderMarker, nowMillis)).rejects.toMatchObject(
      {
        code: 'TRANSACTION_CONFLICT',
        disposition: 'retry',
      },
    );
  });

  it('retries a marked put without a condition of its own whose item a consistent read no longer finds', async () => {
    const transaction = storeWith((command) =>
      command === 'GetCommand'
        ? { output: {} }
        : cancelled({ Code: 'ConditionalCheckFailed' }, { Code: 'None' }),
    );
    const lone = storeWith((command) =>
      command === 'GetCommand' ? { output: {} } : conditionFailedWithoutItem(),
    );
    const vanished = {
      code: 'TRANSACTION_CONFLICT',
      message:
        'commitWithItemMarker: the condition on orderId=o-1 failed, but a consistent read found no live item; retry',
    };

    await expect(
      transaction.store.commitWithItemMarker([orderPut, stock], orderMarker, nowMillis),
    ).rejects.toMatchObject(vanished);
    await expect(lone.store.commitWithItemMarker([orderPut], orderMarker, nowMillis)).rejects.toMatchObject(
      vanished,
    );
    expect(transaction.sent.map(({ command }) => command)).toEqual(['TransactWriteCommand', 'GetCommand']);
    expect(lone.sent.map(({ command }) => command)).toEqual(['PutCommand', 'GetCommand']);
  });

  it.each([
    ['ProvisionedThroughputExceededException', 'THROTTLED', 'retry'],
    ['ThrottlingException', 'THROTTLED', 'retry'],
    ['TransactionConflictException', 'TRANSACTION_CONFLICT', 'retry'],
    ['InternalServerError', 'SERVICE_UNAVAILABLE', 'retry'],
  ])('throws a lone put’s %s as the transaction path would: %s, %s', async (name, code, disposition) => {
    const { store } = storeWith(() => ({
      error: Object.assign(new Error(`${name} (test)`), { name, $metadata: { httpStatusCode: 400 } }),
    }));

    await expect(store.commitWithItemMarker([orderPut], orderMarker, nowMillis)).rejects.toMatchObject({
      code,
      disposition,
      message: expect.stringMatching(/^commit: /),
    });
  });

  it('throws a lone put over the item size limit as ITEM_TOO_LARGE, a permanent failure', async () => {
    const { store } = storeWith(() => ({
      error: Object.assign(new Error('Item size has exceeded the maximum allowed size'), {
        name: 'ValidationException',
        $metadata: { httpStatusCode: 400 },
      }),
    }));

    await expect(store.commitWithItemMarker([orderPut], orderMarker, nowMillis)).rejects.toMatchObject({
      code: 'ITEM_TOO_LARGE',
      disposition: 'permanent',
    });
  });

  it('rejects a marker index that is not a put as VALIDATION, sending nothing', async () => {
    const { store, sent } = storeWith();

    await expect(store.commitWithItemMarker([stock], orderMarker, nowMillis)).rejects.toMatchObject({
      code: 'VALIDATION',
      message: 'commitWithItemMarker: write 0 is not a put',
    });
    expect(sent).toEqual([]);
  });
});

/** Every `#name` and `:value` placeholder of an expression text. */
function placeholdersOf(text: string | undefined, sigil: '#' | ':'): string[] {
  const pattern = sigil === '#' ? /#[A-Za-z0-9_]+/g : /:[A-Za-z0-9_]+/g;
  return [...new Set(text?.match(pattern) ?? [])].sort();
}

/** Every request body with expressions in a command input: the input itself, or each transaction item. */
function expressionBodies(input: Record<string, unknown>): Record<string, unknown>[] {
  const items = input.TransactItems as Record<string, Record<string, unknown>>[] | undefined;
  return items ? items.map((item) => Object.values(item)[0]!) : [input];
}

describe('DynamoDB store: placeholders', () => {
  /** Every method, with and without its optional parts: each sends at least one expression. */
  const calls: [string, (store: InboxStore) => unknown][] = [
    ['insert', (store) => store.insert(marker, nowMillis)],
    ['insert with an owner', (store) => store.insert({ ...marker, owner: 'owner-a' }, nowMillis)],
    ['commit', (store) => store.commit(marker, [], nowMillis)],
    ['commit with an owner', (store) => store.commit({ ...marker, owner: 'owner-a' }, [], nowMillis)],
    ['commitWithItemMarker', (store) => store.commitWithItemMarker([orderPut], orderMarker, nowMillis)],
    [
      'commitWithItemMarker with the put’s own condition',
      (store) => store.commitWithItemMarker([conditionalOrderPut], orderMarker, nowMillis),
    ],
    [
      'insertEntity',
      (store) =>
        store.insertEntity(
          { tableName: 'orders', keyAttribute: 'orderId', item: { orderId: 'o-1' } },
          'fp-1',
          nowMillis,
        ),
    ],
    ['release', (store) => store.release('orders#o-1', { owner: 'owner-a' })],
    ['release completed', (store) => store.release('orders#o-1', { owner: 'owner-a', status: 'COMPLETED' })],
    ['claimLease', (store) => store.claimLease(claim, nowMillis)],
    ['claimLease with takeover', (store) => store.claimLease(claim, nowMillis, { owner: 'owner-b' })],
    ['complete', (store) => store.complete('orders#o-1', 'owner-a', { expiresAt })],
    [
      'complete with a result',
      (store) => store.complete('orders#o-1', 'owner-a', { expiresAt, result: 'r' }),
    ],
    ['replace', (store) => store.replace('jobs#j-1', 'fp-1', { fingerprint: 'fp-2', expiresAt })],
    [
      'replace with a result',
      (store) => store.replace('jobs#j-1', 'fp-1', { fingerprint: 'fp-2', expiresAt, result: 'r' }),
    ],
    ['extendLease', (store) => store.extendLease('orders#o-1', 'owner-a', nowMillis + 1, expiresAt)],
  ];

  it.each(calls)(
    '%s: every placeholder has an entry, every entry is used, no value is undefined',
    async (_, call) => {
      const { store, sent } = storeWith();
      await call(store);
      const bodies = sent.flatMap(({ input }) => expressionBodies(input));
      expect(bodies.length).toBeGreaterThan(0);
      for (const body of bodies) {
        const text = [body.ConditionExpression, body.UpdateExpression].filter(Boolean).join(' ');
        const names = (body.ExpressionAttributeNames ?? {}) as Record<string, unknown>;
        const values = (body.ExpressionAttributeValues ?? {}) as Record<string, unknown>;
        expect(Object.keys(names).sort()).toEqual(placeholdersOf(text, '#'));
        expect(Object.keys(values).sort()).toEqual(placeholdersOf(text, ':'));
        const undefinedEntries = Object.entries({ ...names, ...values }).filter(
          ([, value]) => value === undefined,
        );
        expect(undefinedEntries).toEqual([]);
      }
    },
  );

  it('putIfNewer: every placeholder has an entry and every entry is used', () => {
    const { store } = storeWith();
    const { Put } = store.putIfNewer({
      TableName: 'customers',
      Item: { pk: 'c-1', seq: 'b' },
      versionAttribute: 'seq',
    });
    expect(Object.keys(Put!.ExpressionAttributeNames!).sort()).toEqual(
      placeholdersOf(Put!.ConditionExpression, '#'),
    );
    expect(Object.keys(Put!.ExpressionAttributeValues!).sort()).toEqual(
      placeholdersOf(Put!.ConditionExpression, ':'),
    );
  });
});
