/**
 * The DynamoDB adapter behind the `InboxStore` port: the only module that knows
 * expression syntax. One request per call; a consistent `GetItem` follows only when a
 * failed condition did not return the stored item (`ALL_OLD` unsupported by the endpoint).
 */
import {
  type DynamoDBDocumentClient,
  GetCommand,
  NumberValue,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { INBOX_ATTRIBUTES as A, ENTITY_FINGERPRINT_ATTRIBUTE, INBOX_STATUS } from '../core/contract';
import { EffectivelyOnceError, expectOption } from '../core/errors';
import type {
  AtomicCommit,
  CommitResult,
  EntityStore,
  FencedResult,
  InboxRecord,
  InboxStore,
  InsertResult,
  ItemMarker,
  SharedCommitResult,
  TransactWriteAction,
} from '../core/store-port';
import { epochSeconds } from '../core/time';
import {
  type CancellationOutcome,
  type ConditionalCheckFailure,
  classifyAwsError,
  classifyUnmarshallError,
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

/*
 * Condition and update texts shared by several requests. Each names the placeholders it uses;
 * every request that sends one lists their `ExpressionAttributeNames` and
 * `ExpressionAttributeValues` itself, so the call site shows what is sent (and the inputs unit
 * test pins it).
 */

/**
 * A live record: absent, or expired by TTL (reaped lazily), does not hold the key. Entity items
 * too, with `#pk` naming their key attribute.
 *
 * Placeholders: `#pk`, `#expiresAt`, `:nowSeconds`.
 */
const LIVE_CONDITION = 'attribute_not_exists(#pk) OR #expiresAt <= :nowSeconds';
/**
 * Fences two-phase writes: only the owner of a live claim may touch it.
 *
 * Placeholders: `#owner`, `#status`, `:owner`, `:inProgress`.
 */
const OWNER_CONDITION = '#owner = :owner AND #status = :inProgress';
/** The lease end of a claim released after a failed effect, keeping its fingerprint. */
const RELEASED_LEASE = 0;
/**
 * The owner still holds its claim: in progress and not released (its lease may have ended).
 *
 * Placeholders: those of `OWNER_CONDITION`, `#leaseExpiresAt`, `:released`.
 */
const HELD_CONDITION = `${OWNER_CONDITION} AND #leaseExpiresAt > :released`;
/**
 * An extension only moves a held lease forward: an older extension delayed past a newer one (or
 * past a release, a completion, a takeover) changes nothing.
 *
 * Placeholders: those of `HELD_CONDITION`, `:leaseExpiresAt`.
 */
const EXTEND_CONDITION = `${HELD_CONDITION} AND #leaseExpiresAt < :leaseExpiresAt`;
/**
 * A release applies to the claim its owner wrote (a marker `COMPLETED`, a lease claim
 * `IN_PROGRESS`), or to the claim it already released: the SDK's retry after a lost response.
 * Never to a record another delivery wrote since, even of the same payload.
 *
 * Placeholders: `#owner`, `#status`, `#leaseExpiresAt`, `:owner`, `:status`, `:inProgress`,
 * `:released`.
 */
const RELEASE_CONDITION =
  '#owner = :owner AND (#status = :status OR (#status = :inProgress AND #leaseExpiresAt = :released))';
/**
 * A claim released after a failed effect, keeping the fingerprint of its payload.
 *
 * Placeholders: `#status`, `#leaseExpiresAt`, `#fingerprint`, `:inProgress`, `:released`,
 * `:fingerprint`.
 */
const RELEASED_CLAIM =
  '#status = :inProgress AND #leaseExpiresAt = :released AND #fingerprint = :fingerprint';
/**
 * A claim (or a marker) takes the key when no live record holds it, or a released claim of the
 * same payload written by another claim. Never its own released claim: that is a late copy of
 * this very put (its first attempt held on the network while the SDK's retry succeeded, the
 * effect failed and the claim was released), and taking it would write the marker again without
 * the effect, so the retry of the message would be acknowledged as a duplicate.
 *
 * Placeholders: those of `LIVE_CONDITION` and `RELEASED_CLAIM`, `#owner`, `:claimOwner`.
 */
const CLAIM_CONDITION = `${LIVE_CONDITION} OR (${RELEASED_CLAIM} AND #owner <> :claimOwner)`;
/**
 * The marker of an atomic commit carries no owner token: the marker and the business writes
 * commit in one transaction, so nothing releases it and no late copy can outlive a release.
 *
 * Placeholders: those of `LIVE_CONDITION` and `RELEASED_CLAIM`.
 */
const COMMIT_MARKER_CONDITION = `${LIVE_CONDITION} OR (${RELEASED_CLAIM})`;
/**
 * A takeover replaces the claim of the owner the caller saw, once that claim's lease has ended.
 *
 * Placeholders: those of `CLAIM_CONDITION`, `:owner`, `:nowMillis`.
 */
const TAKEOVER_CONDITION = `${CLAIM_CONDITION} OR (${OWNER_CONDITION} AND #leaseExpiresAt < :nowMillis)`;
/**
 * A version-guarded put applies when the stored item is absent or older.
 *
 * Placeholders: `#version`, `:version`.
 */
const NEWER_VERSION_CONDITION = 'attribute_not_exists(#version) OR #version < :version';

/** The fields of an inbox record, each stored under `INBOX_ATTRIBUTES[field]`. */
const FIELDS = Object.keys(A) as (keyof InboxRecord & keyof typeof A)[];

const INSERTED = { kind: 'inserted' } as const;
const COMMITTED = { kind: 'committed' } as const;
const NOT_APPLIED = { kind: 'not-applied' } as const;
const OK: FencedResult = { kind: 'ok' };

/**
 * Creates the DynamoDB-backed `InboxStore`.
 *
 * - `insert`, `insertEntity`, `claimLease`: one conditional `PutItem`; on a duplicate the
 *   stored item comes back in the same round trip (`ReturnValuesOnConditionCheckFailure`).
 * - `putIfNewer`: builds a version-guarded put for a commit; sends nothing.
 * - `commit`: one `TransactWriteItems`, the marker put at index 0 and the business writes
 *   after it.
 * - `commitWithItemMarker`: one `TransactWriteItems` of the business writes alone, the marked
 *   put carrying the fingerprint under entity mode's condition joined with its own; the marked
 *   put alone is one conditional `PutItem` instead (entity mode's request).
 * - `release`, `complete`, `extendLease`, `replace`: one conditional `UpdateItem`; nothing is
 *   ever deleted (a released record is kept as a released claim, bound to its payload).
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
  const { client, tableName } = options ?? ({} as DynamoDbStoreOptions);
  expectOption(typeof client?.send === 'function', 'client', 'a DynamoDBDocumentClient', client);
  expectOption(
    typeof tableName === 'string' && tableName.trim() !== '',
    'tableName',
    'a non-empty string',
    tableName,
  );
  return storeOver(client, tableName);
}

/** Options of `createDynamoDbEntityStore`. */
export interface DynamoDbEntityStoreOptions {
  /** The document client, created once at module scope (see `DynamoDbStoreOptions.client`). */
  readonly client: DynamoDBDocumentClient;
}

/**
 * Creates the DynamoDB-backed `EntityStore` of entity mode: `insertEntity` puts the business item
 * into the table the entity names, so there is no inbox table.
 *
 * @example
 * const store = createDynamoDbEntityStore({ client });
 */
export function createDynamoDbEntityStore(options: DynamoDbEntityStoreOptions): EntityStore {
  const { client } = options ?? ({} as DynamoDbEntityStoreOptions);
  expectOption(typeof client?.send === 'function', 'client', 'a DynamoDBDocumentClient', client);
  // `insertEntity` reads and writes only the entity's own table: the inbox table stays unnamed.
  const { insertEntity } = storeOver(client, undefined);
  return Object.freeze<EntityStore>({ insertEntity });
}

/** The store over `client`; the inbox table is `undefined` only for the entity store. */
function storeOver(client: DynamoDBDocumentClient, tableName: string | undefined): InboxStore {
  const Key = (pk: string) => ({ [A.pk]: pk });

  /**
   * Sends a conditional write: its output, or the failed condition with the stored item when
   * DynamoDB returned it. Any other failure is thrown, classified.
   */
  async function write(
    operation: string,
    command: WriteCommand,
  ): Promise<{ readonly output: { Attributes?: Record<string, unknown> } } | ConditionFailure> {
    try {
      return { output: await client.send(command as PutCommand) };
    } catch (error) {
      const failure = readConditionalCheckFailure(error);
      if (!failure) throw classifyAwsError(error, operation);
      return { ...failure, error };
    }
  }

  /**
   * Turns the item a failed condition returned (or a consistent read) into a live record;
   * `inserted` when it carries the caller's `owner` token: the SDK retried a write whose response
   * was lost, and the retry met what its first attempt wrote. Owner tokens are random per claim,
   * so the write happened, and it was this one.
   */
  async function existingRecord(
    pk: string,
    { item, error }: { readonly item?: Record<string, unknown>; readonly error: unknown },
    nowSeconds: number,
    operation: string,
    owner?: string,
  ): Promise<InsertResult> {
    const record = item ? toRecord(toDocument(item, operation)) : await readLive(pk, nowSeconds, operation);
    if (!record) throw vanished(operation, pk, 'record', error);
    return owner !== undefined && record.owner === owner ? INSERTED : { kind: 'existing', record };
  }

  async function readLive(
    pk: string,
    nowSeconds: number,
    operation: string,
  ): Promise<InboxRecord | undefined> {
    const item = await read(operation, tableName, Key(pk));
    const record = item && toRecord(item);
    return record && record.expiresAt > nowSeconds ? record : undefined;
  }

  /** A consistent read, for when a failed condition did not return the stored item. */
  async function read(operation: string, TableName: string | undefined, key: Record<string, unknown>) {
    try {
      return (await client.send(new GetCommand({ TableName, Key: key, ConsistentRead: true }))).Item;
    } catch (error) {
      throw classifyAwsError(error, `${operation} (fallback read)`);
    }
  }

  /**
   * The put of a marker (`insert`, and index 0 of a `commit`): under the claim condition when it
   * carries an owner token, so it never takes its own released claim; else under the commit
   * marker condition.
   */
  function markerPut(record: InboxRecord, nowSeconds: number): MarkerPut {
    if (record.owner === undefined) {
      return {
        TableName: tableName,
        Item: toItem(record),
        ConditionExpression: COMMIT_MARKER_CONDITION,
        ExpressionAttributeNames: {
          '#pk': A.pk,
          '#expiresAt': A.expiresAt,
          '#status': A.status,
          '#leaseExpiresAt': A.leaseExpiresAt,
          '#fingerprint': A.fingerprint,
        },
        ExpressionAttributeValues: {
          ':nowSeconds': nowSeconds,
          ':inProgress': INBOX_STATUS.inProgress,
          ':released': RELEASED_LEASE,
          ':fingerprint': record.fingerprint,
        },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      };
    }
    return {
      TableName: tableName,
      Item: toItem(record),
      ConditionExpression: CLAIM_CONDITION,
      ExpressionAttributeNames: {
        '#pk': A.pk,
        '#expiresAt': A.expiresAt,
        '#status': A.status,
        '#leaseExpiresAt': A.leaseExpiresAt,
        '#fingerprint': A.fingerprint,
        '#owner': A.owner,
      },
      ExpressionAttributeValues: {
        ':nowSeconds': nowSeconds,
        ':inProgress': INBOX_STATUS.inProgress,
        ':released': RELEASED_LEASE,
        ':fingerprint': record.fingerprint,
        ':claimOwner': record.owner,
      },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    };
  }

  /**
   * A write only the holder of the record may make: `ok`, or `lost-ownership`. A failed condition
   * whose returned record `isOwn` recognises met this very write, sent again by the SDK after a
   * lost response: `ok`. Without the returned record, the loss stands (no read follows).
   */
  async function fenced(
    operation: string,
    command: WriteCommand,
    isOwn?: (record: InboxRecord) => boolean,
  ): Promise<FencedResult> {
    const written = await write(operation, command);
    return 'output' in written || (written.item && isOwn?.(toRecord(toDocument(written.item, operation))))
      ? OK
      : { kind: 'lost-ownership' };
  }

  /**
   * Sends one `TransactWriteItems`: `undefined` when it committed, else the cancellation reasons
   * (empty when the service sent none) with the error. Any other failure is thrown, classified.
   */
  async function transact(
    TransactItems: TransactWriteAction[],
  ): Promise<{ readonly reasons: readonly CancellationOutcome[]; readonly error: unknown } | undefined> {
    try {
      await client.send(new TransactWriteCommand({ TransactItems }));
      return undefined;
    } catch (error) {
      const reasons = readTransactionCancellation(error);
      if (!reasons) throw classifyAwsError(error, 'commit');
      return { reasons, error };
    }
  }

  /**
   * The live business item standing as its own marker (entity mode, and the marked put of a
   * commit), read as a record (`toEntityRecord`) from the item a failed condition returned, or
   * by a consistent read by partition key when it returned none (a table with a sort key always
   * gets the item back from DynamoDB). `undefined` when the item is absent or expired.
   */
  async function liveEntity(
    TableName: string | undefined,
    keyAttribute: string,
    item: Record<string, unknown>,
    failure: { readonly item?: Record<string, unknown> },
    nowSeconds: number,
    operation: string,
  ): Promise<InboxRecord | undefined> {
    const stored = failure.item
      ? toDocument(failure.item, operation)
      : await read(operation, TableName, { [keyAttribute]: item[keyAttribute] });
    const record = stored && toEntityRecord(stored, keyAttribute);
    return record && record.expiresAt > nowSeconds ? record : undefined;
  }

  /**
   * The actions of one commit in a transaction: the marker put first and the business writes
   * after it, or the writes alone with the marked put carrying the fingerprint under entity
   * mode's condition.
   */
  function actionsOf(commit: AtomicCommit, nowSeconds: number): TransactWriteAction[] {
    if (commit.record) return [{ Put: markerPut(commit.record, nowSeconds) }, ...commit.writes];
    const { index, keyAttribute, fingerprint } = commit.marker;
    const put = commit.writes[index]?.Put;
    if (!put) {
      throw new EffectivelyOnceError('VALIDATION', `commitWithItemMarker: write ${index} is not a put`);
    }
    const marked = markedPut(put, keyAttribute, fingerprint, nowSeconds);
    return commit.writes.map((write, at) => (at === index ? { Put: marked } : write));
  }

  /**
   * What a cancelled transaction says of one commit, from its share of the reasons (in the
   * order of `actionsOf`): its marker's condition failed (a live marker: `existing`), else a
   * transient failure anywhere in it is thrown, else its first failed business condition.
   */
  async function readShare(
    commit: AtomicCommit,
    share: readonly CancellationOutcome[],
    error: unknown,
    nowSeconds: number,
  ): Promise<CommitResult> {
    if (commit.record) {
      const [marker, ...business] = share;
      if (marker?.kind === 'condition-failed') {
        return existingRecord(
          commit.record.pk,
          { ...marker, error },
          nowSeconds,
          'commit',
        ) as Promise<CommitResult>;
      }
      return businessFailure(share, business, error);
    }
    const reason = share[commit.marker.index];
    if (!reason || reason.kind === 'condition-failed') return markedFailed(commit, reason, error, nowSeconds);
    return businessFailure(share, share, error);
  }

  /**
   * The marked put's condition failed (`failure`; `undefined`: a transaction cancelled without
   * reasons). The item it returned (else a consistent read) tells the two parts of the
   * condition apart: a live item failed the marker's part (a duplicate, or a mismatch); an
   * absent or expired one passed it, so the put's own condition failed. Without a failure to
   * read, only a live item explains the cancellation for certain.
   */
  async function markedFailed(
    commit: AtomicCommit & { readonly marker: ItemMarker },
    failure: ConditionalCheckFailure | undefined,
    error: unknown,
    nowSeconds: number,
  ): Promise<CommitResult> {
    const operation = 'commitWithItemMarker';
    const { index, keyAttribute } = commit.marker;
    const put = commit.writes[index]!.Put!;
    const existing = await liveEntity(
      put.TableName,
      keyAttribute,
      put.Item as Record<string, unknown>,
      failure ?? {},
      nowSeconds,
      operation,
    );
    if (existing) return { kind: 'existing', record: existing };
    if (!failure) throw classifyAwsError(error, 'commit');
    if (put.ConditionExpression === undefined || put.ConditionExpression.trim() === '') {
      // Without a condition of its own, only a live item fails the put: it is gone now.
      throw vanished(operation, `${keyAttribute}=${String(put.Item?.[keyAttribute])}`, 'item', error);
    }
    return conditionFailed(index, failure.message);
  }

  return Object.freeze<InboxStore>({
    async insert(record, nowMillis) {
      const nowSeconds = epochSeconds(nowMillis);
      const written = await write('insert', new PutCommand(markerPut(record, nowSeconds)));
      return 'output' in written
        ? INSERTED
        : existingRecord(record.pk, written, nowSeconds, 'insert', record.owner);
    },

    async commit(record, writes, nowMillis): Promise<CommitResult> {
      const nowSeconds = epochSeconds(nowMillis);
      const commit: AtomicCommit = { record, writes };
      const cancelled = await transact(actionsOf(commit, nowSeconds));
      if (!cancelled) return COMMITTED;
      const { reasons, error } = cancelled;
      if (reasons.length === 0) {
        // Cancelled without reasons: only a live marker explains it for certain.
        const existing = await readLive(record.pk, nowSeconds, 'commit');
        if (existing) return { kind: 'existing', record: existing };
        throw classifyAwsError(error, 'commit');
      }
      return readShare(commit, reasons, error, nowSeconds);
    },

    async commitWithItemMarker(writes, marker, nowMillis): Promise<CommitResult> {
      const nowSeconds = epochSeconds(nowMillis);
      const commit: AtomicCommit = { writes, marker };
      const [action] = actionsOf(commit, nowSeconds);
      if (writes.length === 1) {
        // The marked put alone needs no transaction: entity mode's conditional PutItem is the
        // same all-or-nothing write at half the write units and a single write's latency. Its
        // failed condition returns the stored item (`ALL_OLD`) as a cancelled transaction does,
        // and its failures are classified as the transaction's are (`commit`).
        const written = await write('commit', new PutCommand(action!.Put!));
        return 'output' in written ? COMMITTED : markedFailed(commit, written, written.error, nowSeconds);
      }
      const cancelled = await transact(actionsOf(commit, nowSeconds));
      if (!cancelled) return COMMITTED;
      const { reasons, error } = cancelled;
      if (reasons.length === 0) return markedFailed(commit, undefined, error, nowSeconds);
      return readShare(commit, reasons, error, nowSeconds);
    },

    async commitMany(commits, nowMillis): Promise<readonly SharedCommitResult[]> {
      const nowSeconds = epochSeconds(nowMillis);
      const TransactItems: TransactWriteAction[] = [];
      const shares: (readonly [start: number, end: number])[] = [];
      for (const commit of commits) {
        const actions = actionsOf(commit, nowSeconds);
        shares.push([TransactItems.length, TransactItems.length + actions.length]);
        TransactItems.push(...actions);
      }
      const cancelled = await transact(TransactItems);
      if (!cancelled) return commits.map(() => COMMITTED);
      const { reasons, error } = cancelled;
      // Without reasons nothing can be told apart: every commit may be sent again on its own.
      if (reasons.length === 0) return commits.map(() => NOT_APPLIED);
      return Promise.all(
        commits.map(async (commit, index): Promise<SharedCommitResult> => {
          const share = reasons.slice(...shares[index]!);
          if (share.every((reason) => reason.kind === 'none')) return NOT_APPLIED;
          try {
            return await readShare(commit, share, error, nowSeconds);
          } catch (failure) {
            return { kind: 'failed', error: failure as Error };
          }
        }),
      );
    },

    async insertEntity(entity, fingerprint, nowMillis) {
      const { tableName: TableName, keyAttribute, item } = entity;
      const nowSeconds = epochSeconds(nowMillis);
      const written = await write(
        'insertEntity',
        new PutCommand({
          TableName,
          Item: { ...item, [ENTITY_FINGERPRINT_ATTRIBUTE]: fingerprint },
          ...entityCondition(keyAttribute, nowSeconds),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      if ('output' in written) return INSERTED;
      const record = await liveEntity(TableName, keyAttribute, item, written, nowSeconds, 'insertEntity');
      if (record) return { kind: 'existing', record };
      throw vanished('insertEntity', `${keyAttribute}=${String(item[keyAttribute])}`, 'item', written.error);
    },

    release(pk, { owner, status = INBOX_STATUS.inProgress }) {
      // A completed two-phase record means "never again": only a marker is released completed.
      // The record (a claim, or a marker) becomes a released claim of its payload.
      return fenced(
        'release',
        new UpdateCommand({
          TableName: tableName,
          Key: Key(pk),
          ConditionExpression: RELEASE_CONDITION,
          UpdateExpression: 'SET #status = :inProgress, #leaseExpiresAt = :released',
          ExpressionAttributeNames: {
            '#owner': A.owner,
            '#status': A.status,
            '#leaseExpiresAt': A.leaseExpiresAt,
          },
          ExpressionAttributeValues: {
            ':owner': owner,
            ':status': status,
            ':inProgress': INBOX_STATUS.inProgress,
            ':released': RELEASED_LEASE,
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
    },

    async claimLease(record, nowMillis, takeover) {
      const { status, owner, leaseExpiresAt } = record;
      expectOption(
        status === INBOX_STATUS.inProgress,
        'record.status',
        `\`${INBOX_STATUS.inProgress}\``,
        status,
      );
      expectOption(typeof owner === 'string' && owner !== '', 'record.owner', 'a non-empty string', owner);
      // A lease that is absent, zero or already over would be taken over at once.
      expectOption(
        (leaseExpiresAt as number) > nowMillis,
        'record.leaseExpiresAt',
        `epoch milliseconds after now (${nowMillis})`,
        leaseExpiresAt,
      );
      const nowSeconds = epochSeconds(nowMillis);
      const claimNames = {
        '#pk': A.pk,
        '#expiresAt': A.expiresAt,
        '#status': A.status,
        '#leaseExpiresAt': A.leaseExpiresAt,
        '#fingerprint': A.fingerprint,
        '#owner': A.owner,
      };
      const claimValues = {
        ':nowSeconds': nowSeconds,
        ':inProgress': INBOX_STATUS.inProgress,
        ':released': RELEASED_LEASE,
        ':fingerprint': record.fingerprint,
        ':claimOwner': owner,
      };
      const condition =
        takeover === undefined
          ? {
              ConditionExpression: CLAIM_CONDITION,
              ExpressionAttributeNames: claimNames,
              ExpressionAttributeValues: claimValues,
            }
          : {
              ConditionExpression: TAKEOVER_CONDITION,
              ExpressionAttributeNames: claimNames,
              ExpressionAttributeValues: {
                ...claimValues,
                ':owner': takeover.owner,
                ':nowMillis': nowMillis,
              },
            };
      const written = await write(
        'claimLease',
        new PutCommand({
          TableName: tableName,
          Item: toItem(record),
          ...condition,
          // The replaced item tells a first claim from a takeover of a live one.
          ReturnValues: 'ALL_OLD',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      if (!('output' in written)) {
        const found = await existingRecord(record.pk, written, nowSeconds, 'claimLease', owner);
        // Whether the lost first attempt replaced a live claim is unknown; a takeover was asked for.
        return found.kind === 'inserted' ? { kind: 'inserted', takeover: takeover !== undefined } : found;
      }
      // Replacing an expired record or a released claim is a first claim; replacing a live
      // in-progress one is a takeover.
      const previous = written.output.Attributes;
      const replaced = previous && toRecord(previous);
      return {
        kind: 'inserted',
        takeover:
          replaced?.status === INBOX_STATUS.inProgress &&
          replaced.expiresAt > nowSeconds &&
          replaced.leaseExpiresAt !== RELEASED_LEASE,
      };
    },

    complete(pk, owner, { expiresAt, result }) {
      // The owner stays on the record for operators; the lease no longer means anything. It also
      // tells a completion of this claim, met again by an SDK retry, from anyone else's.
      // The document client drops `undefined`: a completion without a result sets none.
      const withResult = result !== undefined;
      return fenced(
        'complete',
        new UpdateCommand({
          TableName: tableName,
          Key: Key(pk),
          ConditionExpression: HELD_CONDITION,
          UpdateExpression: withResult
            ? 'SET #status = :completed, #expiresAt = :expiresAt, #result = :result REMOVE #leaseExpiresAt'
            : 'SET #status = :completed, #expiresAt = :expiresAt REMOVE #leaseExpiresAt',
          ExpressionAttributeNames: {
            '#owner': A.owner,
            '#status': A.status,
            '#leaseExpiresAt': A.leaseExpiresAt,
            '#expiresAt': A.expiresAt,
            ...(withResult ? { '#result': A.result } : {}),
          },
          ExpressionAttributeValues: {
            ':owner': owner,
            ':inProgress': INBOX_STATUS.inProgress,
            ':released': RELEASED_LEASE,
            ':completed': INBOX_STATUS.completed,
            ':expiresAt': expiresAt,
            ...(withResult ? { ':result': result } : {}),
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
        (stored) => stored.status === INBOX_STATUS.completed && stored.owner === owner,
      );
    },

    replace(pk, fingerprint, next) {
      // The next fingerprint is unique to this write: an SDK retry meets it on the record.
      const withResult = next.result !== undefined;
      return fenced(
        'replace',
        new UpdateCommand({
          TableName: tableName,
          Key: Key(pk),
          ConditionExpression: '#fingerprint = :current',
          UpdateExpression: withResult
            ? 'SET #fingerprint = :fingerprint, #expiresAt = :expiresAt, #result = :result'
            : 'SET #fingerprint = :fingerprint, #expiresAt = :expiresAt',
          ExpressionAttributeNames: {
            '#fingerprint': A.fingerprint,
            '#expiresAt': A.expiresAt,
            ...(withResult ? { '#result': A.result } : {}),
          },
          ExpressionAttributeValues: {
            ':current': fingerprint,
            ':fingerprint': next.fingerprint,
            ':expiresAt': next.expiresAt,
            ...(withResult ? { ':result': next.result } : {}),
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
        (stored) => stored.fingerprint === next.fingerprint,
      );
    },

    putIfNewer({ TableName, Item, versionAttribute }) {
      return {
        Put: {
          TableName,
          Item,
          ConditionExpression: NEWER_VERSION_CONDITION,
          ExpressionAttributeNames: { '#version': versionAttribute },
          ExpressionAttributeValues: { ':version': Item[versionAttribute] },
        },
      };
    },

    extendLease(pk, owner, leaseExpiresAt, expiresAt) {
      // The TTL moves with the lease, so the record never expires while its lease runs.
      return fenced(
        'extendLease',
        new UpdateCommand({
          TableName: tableName,
          Key: Key(pk),
          ConditionExpression: EXTEND_CONDITION,
          UpdateExpression: 'SET #leaseExpiresAt = :leaseExpiresAt, #expiresAt = :expiresAt',
          ExpressionAttributeNames: {
            '#owner': A.owner,
            '#status': A.status,
            '#leaseExpiresAt': A.leaseExpiresAt,
            '#expiresAt': A.expiresAt,
          },
          ExpressionAttributeValues: {
            ':owner': owner,
            ':inProgress': INBOX_STATUS.inProgress,
            ':released': RELEASED_LEASE,
            ':leaseExpiresAt': leaseExpiresAt,
            ':expiresAt': expiresAt,
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
        (stored) =>
          stored.owner === owner &&
          stored.status === INBOX_STATUS.inProgress &&
          stored.leaseExpiresAt !== undefined &&
          stored.leaseExpiresAt !== RELEASED_LEASE &&
          stored.leaseExpiresAt >= leaseExpiresAt,
      );
    },
  });
}

/** The marker's put, sent alone (`insert`) or as index 0 of a commit's transaction. */
type MarkerPut = NonNullable<TransactWriteAction['Put']>;

/** A conditional single-item write. */
type WriteCommand = PutCommand | UpdateCommand;

/** A failed condition, with the error that reported it. */
type ConditionFailure = ConditionalCheckFailure & { readonly error: unknown };

/**
 * The condition saw a live record (or item), but a consistent read finds none now (released, or
 * expired in between): the database is the only arbiter, so ask it again by retrying.
 */
function vanished(operation: string, key: string, what: string, cause: unknown): EffectivelyOnceError {
  return new EffectivelyOnceError(
    'TRANSACTION_CONFLICT',
    `${operation}: the condition on ${key} failed, but a consistent read found no live ${what}; retry`,
    { cause },
  );
}

/**
 * The condition of a business item that is its own marker: its key absent, or its numeric
 * `expiresAt` (epoch seconds) reached. A business item being reaped by TTL, like an expired
 * inbox record, does not hold the key; items without one (the usual case) hold it forever.
 * `own` is the put's own condition, joined with AND under placeholder names of the marker's part
 * that it does not use, so neither part can rebind the other's.
 */
function entityCondition(
  keyAttribute: string,
  nowSeconds: number,
  own?: Pick<MarkerPut, 'ConditionExpression' | 'ExpressionAttributeNames' | 'ExpressionAttributeValues'>,
): Required<
  Pick<MarkerPut, 'ConditionExpression' | 'ExpressionAttributeNames' | 'ExpressionAttributeValues'>
> {
  const condition = own?.ConditionExpression;
  if (condition === undefined || condition.trim() === '') {
    return {
      ConditionExpression: LIVE_CONDITION,
      ExpressionAttributeNames: { '#pk': keyAttribute, '#expiresAt': A.expiresAt },
      ExpressionAttributeValues: { ':nowSeconds': nowSeconds },
    };
  }
  const names = own?.ExpressionAttributeNames ?? {};
  const values = own?.ExpressionAttributeValues ?? {};
  // Every placeholder the put's own part declares or writes is taken.
  const taken = new Set([
    ...Object.keys(names),
    ...Object.keys(values),
    ...(condition.match(PLACEHOLDER) ?? []),
  ]);
  const free = (placeholder: string) => {
    let candidate = placeholder;
    for (let suffix = 2; taken.has(candidate); suffix++) candidate = `${placeholder}${suffix}`;
    taken.add(candidate);
    return candidate;
  };
  const pk = free('#pk');
  const expires = free('#expiresAt');
  const now = free(':nowSeconds');
  return {
    ConditionExpression: `(attribute_not_exists(${pk}) OR ${expires} <= ${now}) AND (${condition})`,
    ExpressionAttributeNames: { ...names, [pk]: keyAttribute, [expires]: A.expiresAt },
    ExpressionAttributeValues: { ...values, [now]: nowSeconds },
  };
}

/** A placeholder in an expression: `#name` or `:value`. */
const PLACEHOLDER = /[#:][A-Za-z0-9_]+/g;

/**
 * The marked put of a commit: the business item with its fingerprint, under entity mode's
 * condition and the put's own, returning the stored item when the condition fails (the user's
 * `ReturnValuesOnConditionCheckFailure` is replaced: the marker needs the item).
 */
function markedPut(put: MarkerPut, keyAttribute: string, fingerprint: string, nowSeconds: number): MarkerPut {
  const condition = entityCondition(keyAttribute, nowSeconds, put);
  // Built field by field, in the order a literal spreading the put would give: V8 takes a slow
  // path for members a literal adds after a spread (a new hidden class for every object, about a
  // microsecond each), and this runs for every message.
  const marked: Record<string, unknown> = {};
  for (const field of Object.keys(put) as (keyof MarkerPut)[]) {
    if (!OWN_CONDITION_FIELDS.includes(field)) marked[field] = put[field];
  }
  marked.Item = { ...put.Item, [ENTITY_FINGERPRINT_ATTRIBUTE]: fingerprint };
  marked.ConditionExpression = condition.ConditionExpression;
  marked.ExpressionAttributeNames = condition.ExpressionAttributeNames;
  marked.ExpressionAttributeValues = condition.ExpressionAttributeValues;
  marked.ReturnValuesOnConditionCheckFailure = 'ALL_OLD';
  return marked as MarkerPut;
}

/** A put's own condition, which the marked put's condition joins (`entityCondition`). */
const OWN_CONDITION_FIELDS: readonly (keyof MarkerPut)[] = [
  'ConditionExpression',
  'ExpressionAttributeNames',
  'ExpressionAttributeValues',
];

/**
 * What cancelled a commit whose marker passed: a transient failure anywhere wins over a business
 * condition (the retry may succeed); else the first business write whose condition failed. The
 * index is counted in `business`.
 */
function businessFailure(
  reasons: readonly CancellationOutcome[],
  business: readonly CancellationOutcome[],
  error: unknown,
): CommitResult {
  const errors = reasons.flatMap((reason) => (reason.kind === 'failed' ? [reason.error] : []));
  const failure = errors.find((candidate) => candidate.disposition === 'retry') ?? errors[0];
  if (failure) throw failure;
  const index = business.findIndex((reason) => reason.kind === 'condition-failed');
  const failed = business[index];
  if (failed?.kind === 'condition-failed') return conditionFailed(index, failed.message);
  throw classifyAwsError(error, 'commit');
}

function conditionFailed(index: number, message: string | undefined): CommitResult {
  return { kind: 'condition-failed', index, ...(message !== undefined ? { message } : {}) };
}

/** The record as an item, omitting absent optional fields (the store never writes `undefined`). */
function toItem(record: InboxRecord): Record<string, unknown> {
  const item: Record<string, unknown> = {};
  for (const field of FIELDS) if (record[field] !== undefined) item[A[field]] = record[field];
  return item;
}

/** `value` without its `undefined` members. */
function defined<T extends object>(value: T): T {
  for (const key in value) if (value[key] === undefined) delete value[key];
  return value;
}

/** A string attribute, else `fallback`. */
const text = (value: unknown, fallback?: string) => (typeof value === 'string' ? value : fallback);

/**
 * The stored item as a record. A record without `expiresAt` never expires; one without a
 * valid status is treated as completed, the conservative reading ("never again").
 */
function toRecord(item: Record<string, unknown>): InboxRecord {
  const number = (field: keyof typeof A) => asNumber(item[A[field]]);
  return defined({
    pk: String(item[A.pk]),
    status: item[A.status] === INBOX_STATUS.inProgress ? 'IN_PROGRESS' : 'COMPLETED',
    fingerprint: text(item[A.fingerprint], '')!,
    expiresAt: number('expiresAt') ?? Number.MAX_SAFE_INTEGER,
    consumer: text(item[A.consumer], '')!,
    committedAt: number('committedAt'),
    leaseExpiresAt: number('leaseExpiresAt'),
    owner: text(item[A.owner]),
    result: item[A.result],
    takeovers: number('takeovers'),
  });
}

/**
 * The record standing for an existing business item in entity-as-marker mode: always
 * `COMPLETED`, never expiring unless the item has a numeric `expiresAt`. The fingerprint is
 * `''` when the item was written without one (by something other than this toolkit), so
 * the core reports a payload mismatch rather than assume a duplicate. Entity items record
 * no consumer, so `consumer` is `''`.
 */
function toEntityRecord(item: Record<string, unknown>, keyAttribute: string): InboxRecord {
  return toRecord({
    [A.pk]: item[keyAttribute],
    [A.fingerprint]: item[ENTITY_FINGERPRINT_ATTRIBUTE],
    [A.expiresAt]: item[A.expiresAt],
  });
}

function asNumber(value: unknown): number | undefined {
  // A client configured with `wrapNumbers` returns NumberValue objects (or strings). Anything
  // else that is not a number's text (`true`, `null`, an object) reads as `NaN`.
  const number = Number(String(value));
  return Number.isFinite(number) ? number : undefined;
}

/**
 * Items inside errors (`ConditionalCheckFailedException.Item`, `CancellationReasons[].Item`)
 * are not unmarshalled by the document client: they arrive as raw `AttributeValue`s. Accept
 * both shapes, so a client or emulator that does unmarshall them keeps working.
 *
 * A number JavaScript cannot hold exactly (a business item's 20-digit decimal) is kept as a
 * `NumberValue` rather than failing the read: the store reads only a few attributes, and a
 * duplicate must be recognised whatever else the item holds. Anything else the unmarshaller
 * rejects is classified without its message, which quotes the value.
 */
function toDocument(item: Record<string, unknown>, operation: string): Record<string, unknown> {
  const values = Object.values(item);
  const raw = values.length > 0 && values.every(isRawAttributeValue);
  if (!raw) return item;
  try {
    // biome-ignore lint/suspicious/noExplicitAny: unmarshall's parameter type is the raw AttributeValue map.
    return unmarshall(item as Record<string, any>, { wrapNumbers: exactNumber });
  } catch (error) {
    throw classifyUnmarshallError(error, `${operation} (returned item)`);
  }
}

/** A stored number as a JavaScript number when it holds it within the safe range, else its text. */
function exactNumber(text: string): number | NumberValue {
  const number = Number(text);
  return Math.abs(number) <= Number.MAX_SAFE_INTEGER ? number : NumberValue.from(text);
}

function isRawAttributeValue(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof Uint8Array) {
    return false;
  }
  const keys = Object.keys(value);
  return keys.length === 1 && /^(S|N|B|SS|NS|BS|M|L|NULL|BOOL)$/.test(keys[0]!);
}
