/**
 * Hand-written handlers making the same DynamoDB calls as the toolkit's modes (DESIGN.md's
 * CPU baseline: "a hand-written handler making the same calls"), with the least code that
 * does it: the toolkit's requests, item for item (a marker like the toolkit's: SHA-256 of the
 * body as fingerprint, or of its canonical form with `canonical`, TTL, consumer, marker mode's
 * owner token; the toolkit's conditions, under which an expired record or a released claim of
 * the same payload does not hold a key, with the stored item returned on a failed condition),
 * duplicates acknowledged. No payload-mismatch check, no reading of an expired or released
 * record, no logging, no metrics, no error classification, no FIFO group stopped at its first
 * failure, no 4 MB request check (the benchmark's items are far under it): they isolate what the
 * toolkit's own logic costs on top of the requests themselves.
 */
import { createHash, randomUUID } from 'node:crypto';
import { type DynamoDBDocumentClient, PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { SqsBatchItemFailure, SqsRecord } from '../../lambda';
import { type BatchHandler, type BenchTables, type OrderEvent, orderItemOf } from '../workload';

/**
 * The calls a hand-written handler makes: a toolkit mode's, per message; `atomic-batch`, atomic
 * mode's batch commit (one `TransactWriteItems` for the records of a batch).
 */
export type HandWrittenMode = 'marker' | 'atomic' | 'atomic-batch' | 'atomic-item' | 'entity';

/**
 * What a hand-written handler hashes as a message's fingerprint: `body`, the body as it came (the
 * least code, and the bench's baseline); `canonical`, the body's members in sorted order, so its
 * requests carry the very fingerprint the toolkit's do, byte for byte (`npm run bench:profile --
 * --measure --mirror-fingerprint canonical`: what the CPU ratio reads when the mirror pays for the
 * same canonical form).
 */
export type MirrorFingerprint = 'body' | 'canonical';

/**
 * The canonical text of an order event as a hand-written handler would write it: the bench's
 * bodies are flat objects of strings and numbers, so sorting the top-level member names is the
 * whole canonical form (`JSON.stringify` with a list of names writes those, in that order).
 */
function canonicalOrderText(order: OrderEvent): string {
  return JSON.stringify(order, Object.keys(order).sort());
}

/** `TransactWriteItems` takes at most 100 actions (AWS DynamoDB API reference, TransactWriteItems). */
const MAX_TRANSACTION_ACTIONS = 100;

/**
 * The rounds in which atomic mode's batch commit commits a batch: every record at once on a
 * standard queue; on a FIFO queue the next record of every message group, round after round, so
 * a group stays in order.
 */
function commitRounds(records: readonly SqsRecord[]): SqsRecord[][] {
  const groups = new Map<string, SqsRecord[]>();
  for (const [index, record] of records.entries()) {
    const group = record.attributes?.MessageGroupId ?? `#${index}`;
    groups.set(group, [...(groups.get(group) ?? []), record]);
  }
  const rounds: SqsRecord[][] = [];
  for (const members of groups.values()) {
    for (const [position, record] of members.entries()) {
      rounds[position] = [...(rounds[position] ?? []), record];
    }
  }
  return rounds;
}

const TTL_SECONDS = 15 * 24 * 60 * 60;
/** A live record (or entity item) holds its key: absent, or expired by TTL, it does not. */
const LIVE = 'attribute_not_exists(#pk) OR #expiresAt <= :nowSeconds';
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
  hashed: MirrorFingerprint = 'body',
): BatchHandler {
  /** SHA-256 (hex) of the body as it came, or of its canonical form. */
  const fingerprintOf = (order: OrderEvent, body: string): string =>
    createHash('sha256')
      .update(hashed === 'canonical' ? canonicalOrderText(order) : body)
      .digest('hex');

  /**
   * The marker put, as the toolkit sends it: the same item and the same condition (a live record
   * holds the key; an expired one, or a released claim of the same payload, does not), returning
   * the stored item on a failed condition. Marker mode's claim carries an owner token and never
   * takes its own released claim; atomic mode's commit marker has no owner.
   */
  const markerPut = (order: OrderEvent, body: string, now: number, owner?: string) => {
    const fingerprint = fingerprintOf(order, body);
    const released = '#status = :inProgress AND #leaseExpiresAt = :released AND #fingerprint = :fingerprint';
    return {
      TableName: tables.inbox,
      Item: {
        pk: `${CONSUMER}#${order.orderId}:${order.status}`,
        status: 'COMPLETED',
        fingerprint,
        expiresAt: Math.floor(now / 1000) + TTL_SECONDS,
        consumer: CONSUMER,
        committedAt: now,
        ...(owner === undefined ? {} : { owner }),
      },
      ConditionExpression:
        owner === undefined
          ? `${LIVE} OR (${released})`
          : `${LIVE} OR (${released} AND #owner <> :claimOwner)`,
      ExpressionAttributeNames: {
        '#pk': 'pk',
        '#expiresAt': 'expiresAt',
        '#status': 'status',
        '#leaseExpiresAt': 'leaseExpiresAt',
        '#fingerprint': 'fingerprint',
        ...(owner === undefined ? {} : { '#owner': 'owner' }),
      },
      ExpressionAttributeValues: {
        ':nowSeconds': Math.floor(now / 1000),
        ':inProgress': 'IN_PROGRESS',
        ':released': 0,
        ':fingerprint': fingerprint,
        ...(owner === undefined ? {} : { ':claimOwner': owner }),
      },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
    };
  };

  const processRecord = async (body: string): Promise<void> => {
    const order = JSON.parse(body) as OrderEvent;
    const now = Date.now();
    switch (mode) {
      case 'marker': {
        try {
          await client.send(new PutCommand(markerPut(order, body, now, randomUUID())));
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
      case 'atomic-batch':
        throw new Error('atomic-batch commits a batch at a time, not a record');
      // The toolkit sends a marked put with no other write as entity mode's conditional PutItem.
      case 'atomic-item':
      case 'entity': {
        const item = {
          ...orderItemOf(order),
          eoFingerprint: fingerprintOf(order, body),
        };
        try {
          // As the toolkit: the item's key absent, or its numeric expiresAt reached.
          await client.send(
            new PutCommand({
              TableName: tables.orders,
              Item: item,
              ConditionExpression: LIVE,
              ExpressionAttributeNames: { '#pk': 'pk', '#expiresAt': 'expiresAt' },
              ExpressionAttributeValues: { ':nowSeconds': Math.floor(now / 1000) },
              ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
            }),
          );
        } catch (error) {
          if (!isConditionFailure(error)) throw error;
        }
        return;
      }
    }
  };

  /**
   * Batch commit: the marker and the business put of every record of `records` in shared
   * transactions of at most 100 actions. A cancelled transaction acknowledges the records whose
   * marker failed its condition (duplicates), fails the others' with a reason, and sends again,
   * once, those whose reasons are all `None` (cancelled only because another record's was not).
   */
  const commitTogether = async (records: readonly SqsRecord[], failures: SqsBatchItemFailure[]) => {
    const now = Date.now();
    const pending: { record: SqsRecord; actions: Record<string, unknown>[] }[] = [];
    for (const record of records) {
      try {
        const order = JSON.parse(record.body) as OrderEvent;
        const item = orderItemOf(order);
        pending.push({
          record,
          actions: [
            { Put: markerPut(order, record.body, now) },
            { Put: { TableName: tables.orders, Item: item } },
          ],
        });
      } catch {
        failures.push({ itemIdentifier: record.messageId });
      }
    }
    const send = async (members: typeof pending, retry: boolean): Promise<void> => {
      for (let start = 0; start < members.length; ) {
        const chunk: typeof pending = [];
        let actions = 0;
        while (
          start < members.length &&
          actions + members[start]!.actions.length <= MAX_TRANSACTION_ACTIONS
        ) {
          actions += members[start]!.actions.length;
          chunk.push(members[start++]!);
        }
        try {
          await client.send(new TransactWriteCommand({ TransactItems: chunk.flatMap((m) => m.actions) }));
        } catch (error) {
          const reasons = (error as { CancellationReasons?: { Code?: string }[] }).CancellationReasons;
          if (!reasons) {
            for (const member of chunk) failures.push({ itemIdentifier: member.record.messageId });
            continue;
          }
          const again: typeof pending = [];
          let offset = 0;
          for (const member of chunk) {
            const codes = reasons.slice(offset, offset + member.actions.length).map((r) => r.Code ?? 'None');
            offset += member.actions.length;
            if (codes[0] === 'ConditionalCheckFailed') continue;
            if (codes.every((code) => code === 'None') && !retry) again.push(member);
            else failures.push({ itemIdentifier: member.record.messageId });
          }
          if (again.length > 0) await send(again, true);
        }
      }
    };
    await send(pending, false);
  };

  if (mode === 'atomic-batch') {
    return async (event) => {
      const failures: SqsBatchItemFailure[] = [];
      for (const round of commitRounds(event.Records)) await commitTogether(round, failures);
      return { batchItemFailures: failures };
    };
  }

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
