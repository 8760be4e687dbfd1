/**
 * The exact requests of the DynamoDB store's fenced claim writes: every one is conditional on
 * the claim's owner token and status (issue 12 items 2 to 4). Behaviour against DynamoDB itself
 * is in the store contract suite on the emulator; this pins what is sent.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { createDynamoDbStore } from '../../../lambda/store/dynamodb-store';

/** A document client double that records every command's input and answers `{}`. */
function recordingClient() {
  const inputs: unknown[] = [];
  const client = {
    send: async (command: { input: unknown }) => {
      inputs.push(command.input);
      return {};
    },
  } as unknown as DynamoDBDocumentClient;
  return { client, inputs };
}

describe('DynamoDB store: fenced claim writes', () => {
  it('releases a marker only while it is its owner’s completed marker, or the claim it released', async () => {
    const { client, inputs } = recordingClient();
    const store = createDynamoDbStore({ client, tableName: 'inbox' });

    expect(await store.release('orders#o-1', { owner: 'owner-a', status: 'COMPLETED' })).toEqual({
      kind: 'ok',
    });

    expect(inputs).toEqual([
      {
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
          ':status': 'COMPLETED',
          ':inProgress': 'IN_PROGRESS',
          ':released': 0,
        },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    ]);
  });

  it('releases a lease claim as in progress by default', async () => {
    const { client, inputs } = recordingClient();
    const store = createDynamoDbStore({ client, tableName: 'inbox' });

    await store.release('payments#p-1', { owner: 'owner-a' });

    expect(inputs).toMatchObject([
      { ExpressionAttributeValues: { ':owner': 'owner-a', ':status': 'IN_PROGRESS' } },
    ]);
  });

  it('extends only a held, unreleased lease, forward only, moving expiresAt in the same request', async () => {
    const { client, inputs } = recordingClient();
    const store = createDynamoDbStore({ client, tableName: 'inbox' });

    await store.extendLease('payments#p-1', 'owner-a', 1_767_225_660_000, 1_767_229_260);

    expect(inputs).toEqual([
      {
        TableName: 'inbox',
        Key: { pk: 'payments#p-1' },
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
          ':leaseExpiresAt': 1_767_225_660_000,
          ':expiresAt': 1_767_229_260,
        },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    ]);
  });

  it('completes only a held, unreleased claim', async () => {
    const { client, inputs } = recordingClient();
    const store = createDynamoDbStore({ client, tableName: 'inbox' });

    await store.complete('payments#p-1', 'owner-a', { expiresAt: 1_767_229_200 });

    expect(inputs).toMatchObject([
      {
        ConditionExpression: '#owner = :owner AND #status = :inProgress AND #leaseExpiresAt > :released',
        UpdateExpression: 'SET #status = :completed, #expiresAt = :expiresAt REMOVE #leaseExpiresAt',
      },
    ]);
  });
});
