/**
 * Hand-written handlers making the same DynamoDB calls as the toolkit's modes (DESIGN.md's
 * CPU baseline: "a hand-written handler making the same calls"), with the least code that
 * does it: a marker item like the toolkit's (SHA-256 of the body as fingerprint, TTL, consumer),
 * the same conditions, duplicates acknowledged. No payload-mismatch check, no expired-record
 * handling, no logging, no metrics, no error classification: they isolate what the toolkit's
 * own logic costs on top of the requests themselves.
 */
import { createHash } from 'node:crypto';
import { type DynamoDBDocumentClient, PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { SqsBatchItemFailure } from '../../lambda';
import { type BatchHandler, type BenchTables, type OrderEvent, orderItemOf } from '../workload';

/** The toolkit mode a hand-written handler mirrors. */
export type HandWrittenMode = 'marker' | 'atomic' | 'atomic-item' | 'entity';

const TTL_SECONDS = 15 * 24 * 60 * 60;
const CONSUMER = 'bench-orders';

function isConditionFailure(error: unknown, index?: number): boolean {
  const { name, CancellationReasons } = error as { name?: string; CancellationReasons?: { Code?: string }[] };
  if (index === undefined) return name === 'ConditionalCheckFailedException';
  return (
    name === 'TransactionCanceledException' && CancellationReasons?.[index]?.Code === 'ConditionalCheckFailed'
  );
}

/** Creates the hand-written handler mirroring `mode`. */
export function createHandWrittenHandler(
  mode: HandWrittenMode,
  client: DynamoDBDocumentClient,
  tables: BenchTables,
): BatchHandler {
  const markerPut = (order: OrderEvent, body: string, now: number) => ({
    TableName: tables.inbox,
    Item: {
      pk: `${CONSUMER}#${order.orderId}:${order.status}`,
      status: 'COMPLETED',
      fingerprint: createHash('sha256').update(body).digest('hex'),
      expiresAt: Math.floor(now / 1000) + TTL_SECONDS,
      consumer: CONSUMER,
      committedAt: now,
    },
    ConditionExpression: 'attribute_not_exists(pk)',
  });

  const processRecord = async (body: string): Promise<void> => {
    const order = JSON.parse(body) as OrderEvent;
    const now = Date.now();
    switch (mode) {
      case 'marker': {
        try {
          await client.send(new PutCommand(markerPut(order, body, now)));
        } catch (error) {
          if (isConditionFailure(error)) return;
          throw error;
        }
        await client.send(new PutCommand({ TableName: tables.orders, Item: orderItemOf(order) }));
        return;
      }
      case 'atomic': {
        const item = orderItemOf(order);
        try {
          await client.send(
            new TransactWriteCommand({
              TransactItems: [
                { Put: markerPut(order, body, now) },
                { Put: { TableName: tables.orders, Item: item } },
              ],
            }),
          );
        } catch (error) {
          if (!isConditionFailure(error, 0)) throw error;
        }
        return;
      }
      // The toolkit sends a marked put with no other write as entity mode's conditional PutItem.
      case 'atomic-item':
      case 'entity': {
        const item = { ...orderItemOf(order), fingerprint: createHash('sha256').update(body).digest('hex') };
        try {
          await client.send(
            new PutCommand({
              TableName: tables.orders,
              Item: item,
              ConditionExpression: 'attribute_not_exists(pk)',
            }),
          );
        } catch (error) {
          if (!isConditionFailure(error)) throw error;
        }
        return;
      }
    }
  };

  return async (event) => {
    const failures: SqsBatchItemFailure[] = [];
    await Promise.all(
      event.Records.map(async (record) => {
        try {
          await processRecord(record.body);
        } catch {
          failures.push({ itemIdentifier: record.messageId });
        }
      }),
    );
    return { batchItemFailures: failures };
  };
}
