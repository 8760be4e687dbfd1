/**
 * Tables and clients on the local emulator for the reliability suite: create and delete tables
 * keyed by `pk`, build document clients configured the way the store documents, and read many
 * items back with consistent reads.
 */
import { CreateTableCommand, DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { awsConfig } from '../../support/aws';

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
  const document = DynamoDBDocumentClient.from(raw, { marshallOptions: { removeUndefinedValues: true } });
  return { raw, document };
}

/** Creates on-demand tables with a String partition key `pk`. */
export async function createTables(client: DynamoDBClient, ...names: readonly string[]): Promise<void> {
  for (const name of names) {
    await client.send(
      new CreateTableCommand({
        TableName: name,
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
  }
}

/** Deletes tables, ignoring ones already gone. */
export async function deleteTables(client: DynamoDBClient, ...names: readonly string[]): Promise<void> {
  for (const name of names) {
    await client.send(new DeleteTableCommand({ TableName: name })).catch(() => undefined);
  }
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
