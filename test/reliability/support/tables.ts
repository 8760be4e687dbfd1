/**
 * Tables and clients on the local emulator for the reliability suite: create and delete tables
 * keyed by `pk`, build document clients configured the way the store documents, and read many
 * items back with consistent reads. Built on the integration tests' setup.
 */
import {
  CreateTableCommand,
  DynamoDBClient,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, type DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll } from 'vitest';
import { OUTBOX_ATTRIBUTES } from '../../../lambda/core/contract';
import type { UnitOfWork } from '../../../lambda/modes/unit-of-work';
import { awsConfig, uniqueName } from '../../support/aws';
import { createDocumentClient, createTable, deleteTables as deleteAll } from '../../support/fixtures';

/** A document client and the client it wraps (to destroy it). */
export interface LocalClient {
  readonly raw: DynamoDBClient;
  readonly document: DynamoDBDocumentClient;
}

/**
 * A fresh client on the local endpoint. `maxAttempts` 1 by default: a failure reaches the
 * toolkit at once, and the simulated queue does the retrying.
 */
export function createLocalClient(options: { readonly maxAttempts?: number } = {}): LocalClient {
  const raw = new DynamoDBClient({ ...awsConfig(), maxAttempts: options.maxAttempts ?? 1 });
  return { raw, document: createDocumentClient(raw) };
}

/** Creates on-demand tables with a String partition key `pk`, and waits until they exist. */
export async function createTables(client: DynamoDBClient, ...names: readonly string[]): Promise<void> {
  for (const name of names) await createTable(client, name);
}

/**
 * Creates an outbox table as the `Outbox` construct does: keyed by the String
 * `OUTBOX_ATTRIBUTES.pk`, on demand, TTL on `OUTBOX_ATTRIBUTES.expiresAt`, a `NEW_IMAGE` stream.
 * Waits until it exists and returns its stream's ARN.
 */
export async function createOutboxTable(client: DynamoDBClient, name: string): Promise<string> {
  const { TableDescription } = await client.send(
    new CreateTableCommand({
      TableName: name,
      KeySchema: [{ AttributeName: OUTBOX_ATTRIBUTES.pk, KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: OUTBOX_ATTRIBUTES.pk, AttributeType: 'S' }],
      BillingMode: 'PAY_PER_REQUEST',
      StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_IMAGE' },
    }),
  );
  await waitUntilTableExists({ client, maxWaitTime: 30 }, { TableName: name });
  await client.send(
    new UpdateTimeToLiveCommand({
      TableName: name,
      TimeToLiveSpecification: { Enabled: true, AttributeName: OUTBOX_ATTRIBUTES.expiresAt },
    }),
  );
  return TableDescription!.LatestStreamArn!;
}

/** Deletes tables, ignoring ones already gone. */
export function deleteTables(client: DynamoDBClient, ...names: readonly string[]): Promise<void> {
  return deleteAll(client, names);
}

/** An inbox and a business table for one test file, and the clients its tests make. */
export interface FileTables {
  readonly inboxTable: string;
  readonly businessTable: string;
  /** Clients the tests create; each is destroyed after the file. */
  readonly clients: LocalClient[];
  /** A client with SDK retries, for setup and reading back (available once the file's tests run). */
  readonly admin: LocalClient;
}

/**
 * Creates an inbox and a business table (names starting with `prefix`) before the file's tests,
 * and deletes them and destroys every client in `clients` after them.
 */
export function useFileTables(prefix: string): FileTables {
  const inboxTable = uniqueName(`${prefix}-inbox`);
  const businessTable = uniqueName(`${prefix}-business`);
  const clients: LocalClient[] = [];
  let admin: LocalClient | undefined;
  beforeAll(async () => {
    admin = createLocalClient({ maxAttempts: 3 });
    await createTables(admin.raw, inboxTable, businessTable);
  });
  afterAll(async () => {
    if (admin) await deleteTables(admin.raw, inboxTable, businessTable);
    for (const client of [...(admin ? [admin] : []), ...clients]) client.raw.destroy();
  });
  return {
    inboxTable,
    businessTable,
    clients,
    get admin() {
      if (!admin) throw new Error('The file tables are created in beforeAll: use admin inside a test');
      return admin;
    },
  };
}

/** Reads the items at `pks` (consistent reads, 100 keys a request); absent items are absent from the map. */
export async function readItems(
  client: DynamoDBDocumentClient,
  tableName: string,
  pks: readonly string[],
): Promise<Map<string, Record<string, unknown>>> {
  const found = new Map<string, Record<string, unknown>>();
  const unique = [...new Set(pks)];
  for (let start = 0; start < unique.length; start += 100) {
    let keys: Record<string, unknown>[] | undefined = unique.slice(start, start + 100).map((pk) => ({ pk }));
    for (let round = 0; keys !== undefined && keys.length > 0; round += 1) {
      if (round > 20) throw new Error(`BatchGetItem on ${tableName} kept returning unprocessed keys`);
      const output = await client.send(
        new BatchGetCommand({ RequestItems: { [tableName]: { Keys: keys, ConsistentRead: true } } }),
      );
      for (const item of output.Responses?.[tableName] ?? []) found.set(String(item.pk), item);
      keys = output.UnprocessedKeys?.[tableName]?.Keys as Record<string, unknown>[] | undefined;
    }
  }
  return found;
}

/**
 * Every item of `tableName` (consistent scan, every page), or only those whose `pk` starts with
 * `prefix` (one seed's scoped keys, when seeds share a table).
 */
export async function scanItems(
  client: DynamoDBDocumentClient,
  tableName: string,
  prefix?: string,
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await client.send(
      new ScanCommand({
        TableName: tableName,
        ConsistentRead: true,
        ...(prefix === undefined
          ? {}
          : {
              FilterExpression: 'begins_with(#pk, :prefix)',
              ExpressionAttributeNames: { '#pk': 'pk' },
              ExpressionAttributeValues: { ':prefix': prefix },
            }),
        ...(start === undefined ? {} : { ExclusiveStartKey: start }),
      }),
    );
    items.push(...((page.Items ?? []) as Record<string, unknown>[]));
    start = page.LastEvaluatedKey as Record<string, unknown> | undefined;
  } while (start !== undefined);
  return items;
}

/**
 * Rewrites the `TransactWriteItems` of a client before it is sent: a deliberately broken store,
 * to prove an oracle sees what it breaks (see {@link dropMarkerCondition}, {@link dropBusinessWrites}).
 */
export function tamperTransactions(
  client: LocalClient,
  rewrite: (items: Record<string, unknown>[]) => Record<string, unknown>[],
): void {
  client.document.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== 'TransactWriteItemsCommand') return next(args);
      const input = args.input as { TransactItems?: Record<string, unknown>[] };
      return next({ ...args, input: { ...input, TransactItems: rewrite(input.TransactItems ?? []) } });
    },
    { step: 'initialize', priority: 'low', name: 'reliabilityTamper' },
  );
}

/** A transaction whose marker (item 0) is written without its condition: duplicates apply again. */
export function dropMarkerCondition([marker, ...business]: Record<string, unknown>[]): Record<
  string,
  unknown
>[] {
  const { ConditionExpression, ExpressionAttributeNames, ExpressionAttributeValues, ...put } = (
    marker as { Put: Record<string, unknown> }
  ).Put;
  return [{ Put: put }, ...business];
}

/** A transaction that commits the marker (item 0) alone: the business writes are lost. */
export function dropBusinessWrites([marker]: Record<string, unknown>[]): Record<string, unknown>[] {
  return [marker!];
}

/**
 * Adds one to the `effects` counter of item `pk` of `tableName` in the unit of work: an effect the
 * oracles count (a second commit of the same message would make it 2).
 */
export function countEffect(unitOfWork: Pick<UnitOfWork, 'update'>, tableName: string, pk: string): void {
  unitOfWork.update({
    TableName: tableName,
    Key: { pk },
    UpdateExpression: 'ADD effects :one',
    ExpressionAttributeValues: { ':one': 1 },
  });
}
