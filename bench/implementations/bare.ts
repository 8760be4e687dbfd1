/**
 * The baseline: a hand-written handler doing the same business write with no deduplication.
 * It parses each body, puts the business item, and reports the records that failed.
 */
import { type DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { SqsBatchItemFailure } from '../../lambda';
import { type BatchHandler, type BenchTables, type OrderEvent, orderItemOf } from '../workload';

/** Creates the bare handler over a document client. */
export function createBareHandler(client: DynamoDBDocumentClient, tables: BenchTables): BatchHandler {
  return async (event) => {
    const failures: SqsBatchItemFailure[] = [];
    await Promise.all(
      event.Records.map(async (record) => {
        try {
          const item = orderItemOf(JSON.parse(record.body) as OrderEvent);
          await client.send(new PutCommand({ TableName: tables.orders, Item: item }));
        } catch {
          failures.push({ itemIdentifier: record.messageId });
        }
      }),
    );
    return { batchItemFailures: failures };
  };
}
