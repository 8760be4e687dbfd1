/**
 * The DynamoDB adapter behind the `InboxStore` port: the only module that knows
 * expression syntax. One request per call; a consistent `GetItem` follows only when a
 * failed condition did not return the stored item (`ALL_OLD` unsupported by the endpoint).
 */
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { INBOX_ATTRIBUTES as A, ENTITY_FINGERPRINT_ATTRIBUTE, INBOX_STATUS } from '../core/contract';
import { EffectivelyOnceError } from '../core/errors';
import type {
  CommitResult,
  EntityWrite,
  FencedResult,
  InboxRecord,
  InboxStore,
  InsertResult,
  TransactWriteAction,
} from '../core/store-port';
import {
  classifyAwsError,
  readConditionalCheckFailure,
  readTransactionCancellation,
} from './classify-aws-error';

/** Options of `createDynamoDbStore`. */
export interface DynamoDbStoreOptions {
  /**
   * The document client, created once at module scope. Create it with
   * `marshallOptions: { removeUndefinedValues: true }`: the store never writes `undefined`
   * at the top level of an item, but a `result` or a business item nested with `undefined`
   * values is otherwise rejected by the marshaller (reported as a `VALIDATION` error).
   */
  readonly client: DynamoDBDocumentClient;
  /** Name of the inbox table (partition key `pk`, String; TTL attribute `expiresAt`). */
  readonly tableName: string;
}

/** A live record: absent, or expired by TTL (reaped lazily), does not hold the key. */
const LIVE_CONDITION = 'attribute_not_exists(#pk) OR #expiresAt <= :nowSeconds';
/** Fences two-phase writes: only the owner of a live claim may touch it. */
const OWNER_CONDITION = '#owner = :owner AND #status = :inProgress';
/** The lease end of a claim released after a failed effect, keeping its fingerprint. */
const RELEASED_LEASE = 0;
/** A claim takes the key when no live record holds it, or a released claim of the same payload. */
const CLAIM_CONDITION = `${LIVE_CONDITION} OR (#status = :inProgress AND #leaseExpiresAt = :released AND #fingerprint = :fingerprint)`;
/** A takeover replaces the claim of the owner the caller saw, once that claim's lease has ended. */
const TAKEOVER_CONDITION = `${CLAIM_CONDITION} OR (${OWNER_CONDITION} AND #leaseExpiresAt < :nowMillis)`;

const RAW_TYPE_TAGS = new Set(['S', 'N', 'B', 'SS', 'NS', 'BS', 'M', 'L', 'NULL', 'BOOL']);

/**
 * Creates the DynamoDB-backed `InboxStore`.
 *
 * - `insert`, `insertEntity`, `claimLease`: one conditional `PutItem`; on a duplicate the
 *   stored item comes back in the same round trip (`ReturnValuesOnConditionCheckFailure`).
 * - `putIfNewer`: builds a version-guarded put for a commit; sends nothing.
 * - `commit`: one `TransactWriteItems`, the marker put at index 0 and the business writes
 *   after it.
 * - `release`, `complete`, `extendLease`: one conditional `DeleteItem` / `UpdateItem`.
 *
 * Failures are thrown as `EffectivelyOnceError`s classified by `classifyAwsError`.
 *
 * @example
 * import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
 * import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
 *
 * const client = DynamoDBDocumentClient.from(new DynamoDBClient({}), {
 *   marshallOptions: { removeUndefinedValues: true },
 * });
 * const store = createDynamoDbStore({ client, tableName: 'inbox' });
 * const result = await store.insert(record, Date.now());
 * if (result.kind === 'existing') console.log('duplicate of', result.record.fingerprint);
 */
export function createDynamoDbStore(options: DynamoDbStoreOptions): InboxStore {
  const { client, tableName } = validateOptions(options);

  /** Turns the item a failed condition returned (or a consistent read) into a live record. */
  async function existingRecord(
    pk: string,
    returned: Record<string, unknown> | undefined,
    nowSeconds: number,
    operation: string,
    cause: unknown,
  ): Promise<InboxRecord> {
    if (returned) return toRecord(toDocument(returned));
    const stored = await readLive(pk, nowSeconds, operation);
    if (stored) return stored;
    // The condition saw a live record, but it is gone now (released, or expired in between):
    // the database is the only arbiter, so ask it again by retrying the message.
    throw new EffectivelyOnceError(
      'TRANSACTION_CONFLICT',
      `${operation}: the condition on ${pk} failed, but a consistent read found no live record; retry`,
      { cause },
    );
  }

  async function readLive(
    pk: string,
    nowSeconds: number,
    operation: string,
  ): Promise<InboxRecord | undefined> {
    let item: Record<string, unknown> | undefined;
    try {
      ({ Item: item } = await client.send(
        new GetCommand({ TableName: tableName, Key: { [A.pk]: pk }, ConsistentRead: true }),
      ));
    } catch (error) {
      throw classifyAwsError(error, `${operation} (fallback read)`);
    }
    if (!item) return undefined;
    const record = toRecord(item);
    return record.expiresAt > nowSeconds ? record : undefined;
  }

  function markerPut(record: InboxRecord, nowSeconds: number) {
    return {
      TableName: tableName,
      Item: toItem(record),
      ConditionExpression: LIVE_CONDITION,
      ExpressionAttributeNames: { '#pk': A.pk, '#expiresAt': A.expiresAt },
      ExpressionAttributeValues: { ':nowSeconds': nowSeconds },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
    };
  }

  async function fenced(operation: string, send: () => Promise<unknown>): Promise<FencedResult> {
    try {
      await send();
      return { kind: 'ok' };
    } catch (error) {
      if (readConditionalCheckFailure(error)) return { kind: 'lost-ownership' };
      throw classifyAwsError(error, operation);
    }
  }

  return Object.freeze<InboxStore>({
    async insert(record, nowMillis): Promise<InsertResult> {
      const nowSeconds = toSeconds(nowMillis);
      try {
        await client.send(new PutCommand(markerPut(record, nowSeconds)));
        return { kind: 'inserted' };
      } catch (error) {
        const failure = readConditionalCheckFailure(error);
        if (!failure) throw classifyAwsError(error, 'insert');
        const existing = await existingRecord(record.pk, failure.item, nowSeconds, 'insert', error);
        return { kind: 'existing', record: existing };
      }
    },

    async commit(record, writes, nowMillis): Promise<CommitResult> {
      const nowSeconds = toSeconds(nowMillis);
      const TransactItems: TransactWriteAction[] = [{ Put: markerPut(record, nowSeconds) }, ...writes];
      try {
        await client.send(new TransactWriteCommand({ TransactItems }));
        return { kind: 'committed' };
      } catch (error) {
        const reasons = readTransactionCancellation(error);
        if (!reasons) throw classifyAwsError(error, 'commit');
        const [marker, ...business] = reasons;
        if (marker?.kind === 'condition-failed') {
          const existing = await existingRecord(record.pk, marker.item, nowSeconds, 'commit', error);
          return { kind: 'existing', record: existing };
        }
        if (!marker) {
          // Cancelled without reasons: only a live marker explains it for certain.
          const existing = await readLive(record.pk, nowSeconds, 'commit');
          if (existing) return { kind: 'existing', record: existing };
          throw classifyAwsError(error, 'commit');
        }
        // A transient failure anywhere wins over a business condition: the retry may succeed.
        const errors = reasons.flatMap((reason) => (reason.kind === 'failed' ? [reason.error] : []));
        const failure = errors.find((candidate) => candidate.disposition === 'retry') ?? errors[0];
        if (failure) throw failure;
        const index = business.findIndex((reason) => reason.kind === 'condition-failed');
        const failed = business[index];
        if (failed?.kind === 'condition-failed') {
          return {
            kind: 'condition-failed',
            index,
            ...(failed.message !== undefined ? { message: failed.message } : {}),
          };
        }
        throw new EffectivelyOnceError(
          'SERVICE_UNAVAILABLE',
          'commit: the transaction was cancelled, but no cancellation reason names a failed item',
          { cause: error },
        );
      }
    },

    async insertEntity(entity, fingerprint, nowMillis): Promise<InsertResult> {
      const { tableName: entityTable, keyAttribute, item } = entity;
      try {
        await client.send(
          new PutCommand({
            TableName: entityTable,
            Item: { ...item, [ENTITY_FINGERPRINT_ATTRIBUTE]: fingerprint },
            // A business item with a numeric `expiresAt` (epoch seconds) in the past is being
            // reaped by TTL: like an expired inbox record, it does not hold the key. Items
            // without one (the usual case) hold it forever.
            ConditionExpression: 'attribute_not_exists(#key) OR #expiresAt <= :nowSeconds',
            ExpressionAttributeNames: { '#key': keyAttribute, '#expiresAt': A.expiresAt },
            ExpressionAttributeValues: { ':nowSeconds': toSeconds(nowMillis) },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        return { kind: 'inserted' };
      } catch (error) {
        const failure = readConditionalCheckFailure(error);
        if (!failure) throw classifyAwsError(error, 'insertEntity');
        const stored = failure.item ? toDocument(failure.item) : await readEntity(entity, nowMillis, error);
        return { kind: 'existing', record: toEntityRecord(stored, keyAttribute) };
      }
    },

    async release(pk, guard, options): Promise<FencedResult> {
      const byOwner = 'owner' in guard;
      if (byOwner && options?.keepFingerprint) return setLease('release', pk, guard.owner, RELEASED_LEASE);
      return fenced('release', () =>
        client.send(
          new DeleteCommand({
            TableName: tableName,
            Key: { [A.pk]: pk },
            // An owner releases only its in-progress claim: a completed record means "never again".
            ...(byOwner
              ? {
                  ConditionExpression: OWNER_CONDITION,
                  ExpressionAttributeNames: { '#owner': A.owner, '#status': A.status },
                  ExpressionAttributeValues: {
                    ':owner': guard.owner,
                    ':inProgress': INBOX_STATUS.inProgress,
                  },
                }
              : {
                  ConditionExpression: '#fingerprint = :fingerprint',
                  ExpressionAttributeNames: { '#fingerprint': A.fingerprint },
                  ExpressionAttributeValues: { ':fingerprint': guard.fingerprint },
                }),
          }),
        ),
      );
    },

    async claimLease(record, nowMillis, takeover) {
      assertClaim(record, nowMillis);
      const nowSeconds = toSeconds(nowMillis);
      try {
        const { Attributes: previous } = await client.send(
          new PutCommand({
            TableName: tableName,
            Item: toItem(record),
            ConditionExpression: takeover ? TAKEOVER_CONDITION : CLAIM_CONDITION,
            ExpressionAttributeNames: {
              '#pk': A.pk,
              '#expiresAt': A.expiresAt,
              '#status': A.status,
              '#leaseExpiresAt': A.leaseExpiresAt,
              '#fingerprint': A.fingerprint,
              ...(takeover ? { '#owner': A.owner } : {}),
            },
            ExpressionAttributeValues: {
              ':nowSeconds': nowSeconds,
              ':inProgress': INBOX_STATUS.inProgress,
              ':released': RELEASED_LEASE,
              ':fingerprint': record.fingerprint,
              ...(takeover ? { ':nowMillis': nowMillis, ':owner': takeover.owner } : {}),
            },
            ReturnValues: 'ALL_OLD',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        // Replacing an expired record or a released claim is a first claim; replacing a live
        // in-progress one is a takeover.
        const replaced = previous ? toRecord(previous) : undefined;
        return {
          kind: 'inserted',
          takeover:
            replaced?.status === INBOX_STATUS.inProgress &&
            replaced.expiresAt > nowSeconds &&
            replaced.leaseExpiresAt !== RELEASED_LEASE,
        };
      } catch (error) {
        const failure = readConditionalCheckFailure(error);
        if (!failure) throw classifyAwsError(error, 'claimLease');
        const existing = await existingRecord(record.pk, failure.item, nowSeconds, 'claimLease', error);
        return { kind: 'existing', record: existing };
      }
    },

    async complete(pk, owner, update): Promise<FencedResult> {
      const withResult = update.result !== undefined;
      return fenced('complete', () =>
        client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: { [A.pk]: pk },
            // The owner stays on the record for operators; the lease no longer means anything.
            UpdateExpression: `SET #status = :completed, #expiresAt = :expiresAt${
              withResult ? ', #result = :result' : ''
            } REMOVE #leaseExpiresAt`,
            ConditionExpression: OWNER_CONDITION,
            ExpressionAttributeNames: {
              '#status': A.status,
              '#expiresAt': A.expiresAt,
              '#leaseExpiresAt': A.leaseExpiresAt,
              '#owner': A.owner,
              ...(withResult ? { '#result': A.result } : {}),
            },
            ExpressionAttributeValues: {
              ':completed': INBOX_STATUS.completed,
              ':inProgress': INBOX_STATUS.inProgress,
              ':expiresAt': update.expiresAt,
              ':owner': owner,
              ...(withResult ? { ':result': update.result } : {}),
            },
          }),
        ),
      );
    },

    putIfNewer({ TableName, Item, versionAttribute }): TransactWriteAction {
      return {
        Put: {
          TableName,
          Item,
          ConditionExpression: 'attribute_not_exists(#version) OR #version < :version',
          ExpressionAttributeNames: { '#version': versionAttribute },
          ExpressionAttributeValues: { ':version': Item[versionAttribute] },
        },
      };
    },

    async extendLease(pk, owner, leaseExpiresAt): Promise<FencedResult> {
      return setLease('extendLease', pk, owner, leaseExpiresAt);
    },
  });

  /** Moves the lease end of `owner`'s claim (extension, or release keeping the fingerprint). */
  function setLease(operation: string, pk: string, owner: string, leaseExpiresAt: number) {
    return fenced(operation, () =>
      client.send(
        new UpdateCommand({
          TableName: tableName,
          Key: { [A.pk]: pk },
          UpdateExpression: 'SET #leaseExpiresAt = :leaseExpiresAt',
          ConditionExpression: OWNER_CONDITION,
          ExpressionAttributeNames: {
            '#leaseExpiresAt': A.leaseExpiresAt,
            '#owner': A.owner,
            '#status': A.status,
          },
          ExpressionAttributeValues: {
            ':leaseExpiresAt': leaseExpiresAt,
            ':owner': owner,
            ':inProgress': INBOX_STATUS.inProgress,
          },
        }),
      ),
    );
  }

  /**
   * Fallback when the failed put did not return the entity. Reads by partition key only,
   * so it cannot serve a table with a sort key (DynamoDB returns the item there anyway).
   */
  async function readEntity(
    entity: EntityWrite,
    nowMillis: number,
    cause: unknown,
  ): Promise<Record<string, unknown>> {
    const key = entity.item[entity.keyAttribute];
    let item: Record<string, unknown> | undefined;
    try {
      ({ Item: item } = await client.send(
        new GetCommand({
          TableName: entity.tableName,
          Key: { [entity.keyAttribute]: key },
          ConsistentRead: true,
        }),
      ));
    } catch (error) {
      throw classifyAwsError(error, 'insertEntity (fallback read)');
    }
    if (item && toEntityRecord(item, entity.keyAttribute).expiresAt > toSeconds(nowMillis)) return item;
    throw new EffectivelyOnceError(
      'TRANSACTION_CONFLICT',
      `insertEntity: the condition on ${entity.keyAttribute}=${String(key)} failed, but a consistent read found no live item; retry`,
      { cause },
    );
  }
}

function validateOptions(options: DynamoDbStoreOptions): DynamoDbStoreOptions {
  const { client, tableName } = options ?? ({} as DynamoDbStoreOptions);
  if (typeof client?.send !== 'function') {
    throw new EffectivelyOnceError(
      'INVALID_OPTIONS',
      `Expected \`client\` to be a DynamoDBDocumentClient, got \`${describe(client)}\``,
    );
  }
  if (typeof tableName !== 'string' || tableName.trim() === '') {
    throw new EffectivelyOnceError(
      'INVALID_OPTIONS',
      `Expected \`tableName\` to be a non-empty string, got \`${describe(tableName)}\``,
    );
  }
  return Object.freeze({ client, tableName });
}

function assertClaim(record: InboxRecord, nowMillis: number): void {
  const problem =
    record.status !== INBOX_STATUS.inProgress
      ? `\`record.status\` to be \`${INBOX_STATUS.inProgress}\`, got \`${describe(record.status)}\``
      : typeof record.owner !== 'string' || record.owner === ''
        ? `\`record.owner\` to be a non-empty string, got \`${describe(record.owner)}\``
        : // A lease that is absent, zero or already over would be taken over at once.
          !((record.leaseExpiresAt as number) > nowMillis)
          ? `\`record.leaseExpiresAt\` to be epoch milliseconds after now (${nowMillis}), got \`${describe(record.leaseExpiresAt)}\``
          : undefined;
  if (problem) throw new EffectivelyOnceError('INVALID_OPTIONS', `claimLease: Expected ${problem}`);
}

function describe(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && value !== null) return value.constructor?.name ?? 'object';
  return String(value);
}

function toSeconds(millis: number): number {
  return Math.floor(millis / 1000);
}

/** The record as an item, omitting absent optional fields (the store never writes `undefined`). */
function toItem(record: InboxRecord): Record<string, unknown> {
  const item: Record<string, unknown> = {
    [A.pk]: record.pk,
    [A.status]: record.status,
    [A.fingerprint]: record.fingerprint,
    [A.expiresAt]: record.expiresAt,
    [A.consumer]: record.consumer,
  };
  if (record.committedAt !== undefined) item[A.committedAt] = record.committedAt;
  if (record.leaseExpiresAt !== undefined) item[A.leaseExpiresAt] = record.leaseExpiresAt;
  if (record.owner !== undefined) item[A.owner] = record.owner;
  if (record.result !== undefined) item[A.result] = record.result;
  if (record.takeovers !== undefined) item[A.takeovers] = record.takeovers;
  return item;
}

/**
 * The stored item as a record. A record without `expiresAt` never expires; one without a
 * valid status is treated as completed, the conservative reading ("never again").
 */
function toRecord(item: Record<string, unknown>): InboxRecord {
  const committedAt = asNumber(item[A.committedAt]);
  const leaseExpiresAt = asNumber(item[A.leaseExpiresAt]);
  const takeovers = asNumber(item[A.takeovers]);
  const owner = item[A.owner];
  return {
    pk: String(item[A.pk]),
    status: item[A.status] === INBOX_STATUS.inProgress ? 'IN_PROGRESS' : 'COMPLETED',
    fingerprint: typeof item[A.fingerprint] === 'string' ? (item[A.fingerprint] as string) : '',
    expiresAt: asNumber(item[A.expiresAt]) ?? Number.MAX_SAFE_INTEGER,
    consumer: typeof item[A.consumer] === 'string' ? (item[A.consumer] as string) : '',
    ...(committedAt !== undefined ? { committedAt } : {}),
    ...(leaseExpiresAt !== undefined ? { leaseExpiresAt } : {}),
    ...(typeof owner === 'string' ? { owner } : {}),
    ...(item[A.result] !== undefined ? { result: item[A.result] } : {}),
    ...(takeovers !== undefined ? { takeovers } : {}),
  };
}

/**
 * The record standing for an existing business item in entity-as-marker mode: always
 * `COMPLETED`, never expiring unless the item has a numeric `expiresAt`. The fingerprint is
 * `''` when the item was written without one (by something other than this toolkit), so
 * the core reports a payload mismatch rather than assume a duplicate. Entity items record
 * no consumer, so `consumer` is `''`.
 */
function toEntityRecord(item: Record<string, unknown>, keyAttribute: string): InboxRecord {
  const fingerprint = item[ENTITY_FINGERPRINT_ATTRIBUTE];
  return {
    pk: String(item[keyAttribute]),
    status: 'COMPLETED',
    fingerprint: typeof fingerprint === 'string' ? fingerprint : '',
    expiresAt: asNumber(item[A.expiresAt]) ?? Number.MAX_SAFE_INTEGER,
    consumer: '',
  };
}

function asNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  // A client configured with `wrapNumbers` returns NumberValue objects (or strings).
  if (typeof value === 'string' || (typeof value === 'object' && value !== null)) {
    const number = Number(String(value));
    return Number.isFinite(number) ? number : undefined;
  }
  return undefined;
}

/**
 * Items inside errors (`ConditionalCheckFailedException.Item`, `CancellationReasons[].Item`)
 * are not unmarshalled by the document client: they arrive as raw `AttributeValue`s. Accept
 * both shapes, so a client or emulator that does unmarshall them keeps working.
 */
function toDocument(item: Record<string, unknown>): Record<string, unknown> {
  const values = Object.values(item);
  const raw = values.length > 0 && values.every(isRawAttributeValue);
  // biome-ignore lint/suspicious/noExplicitAny: unmarshall's parameter type is the raw AttributeValue map.
  return raw ? unmarshall(item as Record<string, any>) : item;
}

function isRawAttributeValue(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof Uint8Array) {
    return false;
  }
  const keys = Object.keys(value);
  return keys.length === 1 && RAW_TYPE_TAGS.has(keys[0]!);
}
