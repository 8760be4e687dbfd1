/**
 * An in-memory `InboxStore` for unit tests, faithful to the port's semantics and checked by the
 * shared contract suite (`store-contract.ts`):
 *
 * - conditional insert: a live record (present, `expiresAt > now`) stops it and is returned;
 * - commit: all-or-nothing over an in-memory multi-table model, marker at index 0, business
 *   conditions evaluated, a failed one reported by its index in the writes; the same with the
 *   marker on a business put (`commitWithItemMarker`: a live item at its key is `existing`, read
 *   as an entity; the marked put alone, which the DynamoDB store sends as a conditional
 *   `PutItem` rather than a transaction, answers the same way, so the fake keeps one path);
 * - commitMany: several commits in one transaction, refused whole (`VALIDATION`) when two actions
 *   touch one item or there are more than 100, every condition read against the tables as they
 *   were before it; a refused member answers as its own commit would, the others `not-applied`;
 * - entity insert, release fenced by owner and status (a release keeping the fingerprint leaves
 *   the claim with lease end 0, which a claim of the same fingerprint takes), two-phase claim /
 *   takeover / complete / extend with owner fencing, never of a released claim (a completion met
 *   again by its own owner is `ok`; an extension only moves the lease and `expiresAt` forward), the
 *   fingerprint-fenced `replace`, and the version-guarded put builder (`putIfNewer`).
 *
 * Business writes are evaluated by the one DynamoDB expression interpreter of the test doubles
 * (`bench/stub/expressions.ts`, shared with the benchmark's DynamoDB stub): conditions with
 * `attribute_exists`, `attribute_not_exists`, `begins_with`, comparisons, `AND`/`OR`/`NOT`,
 * parentheses; updates with `SET a = v`, `a + v`, `a - v`, `if_not_exists(a, v)` and `REMOVE`,
 * on top-level attributes. Anything else throws, so a test never passes on an expression the
 * fake ignored; what DynamoDB rejects (an undefined or unused placeholder, an operand of the
 * wrong type) fails the commit as `VALIDATION`, as the DynamoDB store reports it.
 * Stored values are deep copies, as a database would keep them.
 *
 * Faults are injected per method (`failNext`), every call is recorded (`calls`), and `gate`
 * holds a method until the test opens it, to order concurrent calls.
 */

import {
  applyDocumentUpdate,
  checkUnusedPlaceholders,
  ExpressionValidationError,
  evaluateDocumentCondition,
} from '../../bench/stub/expressions';
import {
  INBOX_ATTRIBUTES as A,
  ENTITY_FINGERPRINT_ATTRIBUTE,
  INBOX_STATUS,
} from '../../lambda/core/contract';
import { EffectivelyOnceError } from '../../lambda/core/errors';
import type {
  AtomicCommit,
  CommitResult,
  FencedResult,
  InboxRecord,
  InboxStore,
  InsertResult,
  SharedCommitResult,
  TransactWriteAction,
} from '../../lambda/core/store-port';
import { epochSeconds } from '../../lambda/core/time';

type Item = Record<string, unknown>;
type Method = keyof InboxStore;

/** One recorded call: the method and a deep copy of its arguments. */
export interface StoreCall {
  readonly method: Method;
  readonly args: readonly unknown[];
}

/** Options of {@link createMemoryStore}. */
export interface MemoryStoreOptions {
  /** @default 'inbox' */
  readonly inboxTable?: string;
  /** Key attributes per business table. @default ['pk'] for every table */
  readonly keys?: Readonly<Record<string, readonly string[]>>;
}

/** The fake: an `InboxStore` plus test controls. */
export interface MemoryStore extends InboxStore {
  /** Every call, in order. */
  readonly calls: StoreCall[];
  /** Reads an item by its partition key (tables keyed by `pk` alone); `undefined` when absent. */
  read(tableName: string, pk: string): Item | undefined;
  /** Reads an item by its full key. */
  get(tableName: string, key: Item): Item | undefined;
  /** Every item of a table, in insertion order. */
  items(tableName: string): Item[];
  /** Writes an item directly (test setup). */
  seed(tableName: string, item: object): void;
  /** Makes the next call of `method` throw `error` (queued: one error per call). */
  failNext(method: Method, error: unknown): void;
  /** Holds calls of `method` until the returned function is called. */
  gate(method: Method): () => void;
}

const clone = <T>(value: T): T => structuredClone(value);

/** The lease end of a two-phase claim released keeping its fingerprint (as the DynamoDB store). */
const RELEASED_LEASE = 0;

/** Creates an empty in-memory store. */
export function createMemoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  const inboxTable = options.inboxTable ?? 'inbox';
  const tables = new Map<string, Map<string, Item>>();
  const faults = new Map<Method, unknown[]>();
  const gates = new Map<Method, Promise<void>>();
  const calls: StoreCall[] = [];

  const keyAttributes = (table: string): readonly string[] =>
    table === inboxTable ? [A.pk] : (options.keys?.[table] ?? ['pk']);
  const table = (name: string): Map<string, Item> => {
    let found = tables.get(name);
    if (!found) {
      found = new Map();
      tables.set(name, found);
    }
    return found;
  };
  const keyOf = (name: string, item: Item, attributes = keyAttributes(name)): string => {
    const values = attributes.map((attribute) => {
      const value = item[attribute];
      if (value === undefined) {
        throw new EffectivelyOnceError(
          'VALIDATION',
          `The key attribute \`${attribute}\` of \`${name}\` is missing`,
        );
      }
      return value;
    });
    return JSON.stringify(values);
  };

  async function enter(method: Method, args: unknown[]): Promise<void> {
    calls.push({ method, args: clone(args) });
    const gate = gates.get(method);
    if (gate) await gate;
    // A real store answers asynchronously; so does the fake, so interleavings stay realistic.
    await Promise.resolve();
    const queued = faults.get(method);
    if (queued && queued.length > 0) throw queued.shift();
  }

  const isLive = (item: Item | undefined, nowSeconds: number): item is Item =>
    item !== undefined &&
    !(typeof item[A.expiresAt] === 'number' && (item[A.expiresAt] as number) <= nowSeconds);
  /**
   * A claim released keeping its fingerprint, which a claim or insert of `record` takes, unless
   * `record` is the released claim itself (a late copy of its put: as the DynamoDB store).
   */
  const isReleasedClaim = (item: Item | undefined, record: InboxRecord): boolean =>
    item?.[A.status] === INBOX_STATUS.inProgress &&
    item[A.leaseExpiresAt] === RELEASED_LEASE &&
    item[A.fingerprint] === record.fingerprint &&
    (record.owner === undefined || item[A.owner] !== record.owner);
  /** A stored record that carries the owner token of `record`: written by the same claim. */
  const isOwn = (item: Item | undefined, record: InboxRecord): boolean =>
    record.owner !== undefined && item?.[A.owner] === record.owner;

  /**
   * A transaction staged over the tables as they are: every condition sees the tables as they
   * were before it, and nothing is applied unless every write passes.
   */
  const stagedTransaction = () => {
    const staged = new Map<string, Map<string, Item | undefined>>();
    const stage = (name: string, key: string, item: Item | undefined): void => {
      let pending = staged.get(name);
      if (!pending) {
        pending = new Map();
        staged.set(name, pending);
      }
      if (pending.has(key)) {
        throw new EffectivelyOnceError(
          'VALIDATION',
          'Transaction request cannot include multiple operations on one item',
        );
      }
      pending.set(key, item);
    };
    /** Stages `writes`: the first whose condition fails, else `undefined` (nothing applied yet). */
    const evaluate = (writes: readonly TransactWriteAction[]): CommitResult | undefined => {
      for (const [index, write] of writes.entries()) {
        const described = describeWrite(write);
        const itemKey = keyOf(described.name, described.key);
        const current = table(described.name).get(itemKey);
        const written = evaluateWrite(described, current);
        if (written === 'condition-failed') return { kind: 'condition-failed', index };
        stage(described.name, itemKey, written.item);
      }
      return undefined;
    };
    const apply = (): void => {
      for (const [name, pending] of staged) {
        for (const [key, item] of pending) {
          if (item === undefined) table(name).delete(key);
          else table(name).set(key, clone(item));
        }
      }
    };
    const run = (writes: readonly TransactWriteAction[]): CommitResult => {
      const failed = evaluate(writes);
      if (failed) return failed;
      apply();
      return { kind: 'committed' };
    };
    return { stage, evaluate, apply, run };
  };

  /**
   * One commit against the tables as they are: its result when the database would refuse it
   * (a live marker, a failed condition), else the function that applies it.
   */
  const stageCommit = (
    commit: AtomicCommit,
    nowMillis: number,
  ): { readonly refused: CommitResult } | { readonly apply: () => void } => {
    const transaction = stagedTransaction();
    if (commit.record) {
      const { record } = commit;
      const markerKey = keyOf(inboxTable, record as unknown as Item);
      const existing = table(inboxTable).get(markerKey);
      if (isLive(existing, epochSeconds(nowMillis)) && !isReleasedClaim(existing, record)) {
        return { refused: { kind: 'existing', record: toRecord(existing) } };
      }
      transaction.stage(inboxTable, markerKey, toItem(record));
      const failed = transaction.evaluate(commit.writes);
      return failed ? { refused: failed } : { apply: transaction.apply };
    }
    const { writes, marker } = commit;
    const put = writes[marker.index]?.Put;
    if (!put) throw new EffectivelyOnceError('VALIDATION', `write ${marker.index} is not a put`);
    const name = put.TableName!;
    const item = put.Item as Item;
    // As the DynamoDB store: a live marked item wins over every other failed condition.
    const existing = table(name).get(keyOf(name, item, options.keys?.[name] ?? [marker.keyAttribute]));
    if (isLive(existing, epochSeconds(nowMillis))) {
      return { refused: { kind: 'existing', record: entityRecord(existing, marker.keyAttribute) } };
    }
    // As the DynamoDB store: the marked put's own condition is read before any other write's.
    if (evaluateWrite(describeWrite({ Put: put }), existing) === 'condition-failed') {
      return { refused: { kind: 'condition-failed', index: marker.index } };
    }
    const marked = writes.map((write, index) =>
      index === marker.index
        ? { Put: { ...put, Item: { ...item, [ENTITY_FINGERPRINT_ATTRIBUTE]: marker.fingerprint } } }
        : write,
    );
    const failed = transaction.evaluate(marked);
    return failed ? { refused: failed } : { apply: transaction.apply };
  };

  /** Every item a commit's actions name (table and key), for the one-item-once check. */
  const itemsOfCommit = (commit: AtomicCommit): string[] => {
    const items = commit.writes.map((write) => {
      const described = describeWrite(write);
      return `${described.name}\0${keyOf(described.name, described.key)}`;
    });
    if (commit.record) items.push(`${inboxTable}\0${keyOf(inboxTable, commit.record as unknown as Item)}`);
    return items;
  };

  const store: MemoryStore = {
    calls,

    async insert(record, nowMillis): Promise<InsertResult> {
      await enter('insert', [record, nowMillis]);
      const inbox = table(inboxTable);
      const existing = inbox.get(keyOf(inboxTable, record as unknown as Item));
      if (isLive(existing, epochSeconds(nowMillis)) && !isReleasedClaim(existing, record)) {
        // The same insert sent again (an SDK retry after a lost response) meets its own record.
        return isOwn(existing, record)
          ? { kind: 'inserted' }
          : { kind: 'existing', record: toRecord(existing) };
      }
      inbox.set(keyOf(inboxTable, record as unknown as Item), toItem(record));
      return { kind: 'inserted' };
    },

    async commit(record, writes, nowMillis): Promise<CommitResult> {
      await enter('commit', [record, writes, nowMillis]);
      if (writes.length + 1 > 100) {
        throw new EffectivelyOnceError('VALIDATION', 'A transaction holds at most 100 actions');
      }
      const staged = stageCommit({ record, writes }, nowMillis);
      if ('refused' in staged) return staged.refused;
      staged.apply();
      return { kind: 'committed' };
    },

    async commitWithItemMarker(writes, marker, nowMillis): Promise<CommitResult> {
      await enter('commitWithItemMarker', [writes, marker, nowMillis]);
      if (writes.length > 100) {
        throw new EffectivelyOnceError('VALIDATION', 'A transaction holds at most 100 actions');
      }
      const staged = stageCommit({ writes, marker }, nowMillis);
      if ('refused' in staged) return staged.refused;
      staged.apply();
      return { kind: 'committed' };
    },

    async commitMany(commits, nowMillis): Promise<readonly SharedCommitResult[]> {
      await enter('commitMany', [commits, nowMillis]);
      const actions = commits.reduce(
        (sum, commit) => sum + commit.writes.length + (commit.record ? 1 : 0),
        0,
      );
      if (actions > 100)
        throw new EffectivelyOnceError('VALIDATION', 'A transaction holds at most 100 actions');
      // As DynamoDB: the request is refused whole before any condition is read.
      const seen = new Set<string>();
      for (const item of commits.flatMap(itemsOfCommit)) {
        if (seen.has(item)) {
          throw new EffectivelyOnceError(
            'VALIDATION',
            'Transaction request cannot include multiple operations on one item',
          );
        }
        seen.add(item);
      }
      // Every condition reads the tables as they were before the transaction.
      const staged = commits.map((commit) => stageCommit(commit, nowMillis));
      if (staged.every((share) => 'apply' in share)) {
        for (const share of staged) (share as { apply: () => void }).apply();
        return commits.map(() => ({ kind: 'committed' }));
      }
      return staged.map((share) => ('refused' in share ? share.refused : { kind: 'not-applied' }));
    },

    async insertEntity(entity, fingerprint, nowMillis): Promise<InsertResult> {
      await enter('insertEntity', [entity, fingerprint, nowMillis]);
      const items = table(entity.tableName);
      const key = keyOf(
        entity.tableName,
        entity.item,
        options.keys?.[entity.tableName] ?? [entity.keyAttribute],
      );
      const existing = items.get(key);
      if (isLive(existing, epochSeconds(nowMillis))) {
        return { kind: 'existing', record: entityRecord(existing, entity.keyAttribute) };
      }
      items.set(key, clone({ ...entity.item, [ENTITY_FINGERPRINT_ATTRIBUTE]: fingerprint }));
      return { kind: 'inserted' };
    },

    async release(pk, guard): Promise<FencedResult> {
      await enter('release', [pk, guard]);
      const item = table(inboxTable).get(keyOf(inboxTable, { [A.pk]: pk }));
      const status = guard.status ?? INBOX_STATUS.inProgress;
      // The owner's claim as it wrote it, or as it released it (an SDK retry of the release).
      const holds =
        item !== undefined &&
        item[A.owner] === guard.owner &&
        (item[A.status] === status ||
          (item[A.status] === INBOX_STATUS.inProgress && item[A.leaseExpiresAt] === RELEASED_LEASE));
      if (!holds) return { kind: 'lost-ownership' };
      item[A.status] = INBOX_STATUS.inProgress;
      item[A.leaseExpiresAt] = RELEASED_LEASE;
      return { kind: 'ok' };
    },

    async claimLease(record, nowMillis, takeover) {
      await enter('claimLease', takeover === undefined ? [record, nowMillis] : [record, nowMillis, takeover]);
      if (!(typeof record.owner === 'string' && record.owner !== '' && record.status === 'IN_PROGRESS')) {
        throw new EffectivelyOnceError(
          'INVALID_OPTIONS',
          'claimLease: Expected an in-progress claim with an owner',
        );
      }
      if (!((record.leaseExpiresAt as number) > nowMillis)) {
        throw new EffectivelyOnceError(
          'INVALID_OPTIONS',
          'claimLease: Expected `record.leaseExpiresAt` to be epoch milliseconds after now',
        );
      }
      const inbox = table(inboxTable);
      const key = keyOf(inboxTable, record as unknown as Item);
      const existing = inbox.get(key);
      const nowSeconds = epochSeconds(nowMillis);
      const inProgress = existing?.[A.status] === INBOX_STATUS.inProgress;
      // A claim released keeping its fingerprint is taken by the same payload, as a first claim.
      const released = isReleasedClaim(existing, record);
      const replaceable =
        takeover !== undefined &&
        inProgress &&
        existing[A.owner] === takeover.owner &&
        (existing[A.leaseExpiresAt] as number) < nowMillis;
      // The same claim sent again (an SDK retry after a lost response) meets its own record.
      if (isLive(existing, nowSeconds) && isOwn(existing, record)) {
        return { kind: 'inserted', takeover: takeover !== undefined };
      }
      if (isLive(existing, nowSeconds) && !released && !replaceable)
        return { kind: 'existing', record: toRecord(existing) };
      inbox.set(key, toItem(record));
      return {
        kind: 'inserted',
        takeover: isLive(existing, nowSeconds) && existing[A.leaseExpiresAt] !== RELEASED_LEASE,
      };
    },

    putIfNewer({ TableName, Item, versionAttribute }) {
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

    async complete(pk, owner, update): Promise<FencedResult> {
      await enter('complete', [pk, owner, update]);
      const item = ownedItem(pk, owner);
      if (!item) {
        // The same completion sent again (an SDK retry after a lost response) meets its own record.
        const stored = table(inboxTable).get(keyOf(inboxTable, { [A.pk]: pk }));
        const own = stored?.[A.status] === INBOX_STATUS.completed && stored[A.owner] === owner;
        return { kind: own ? 'ok' : 'lost-ownership' };
      }
      item[A.status] = INBOX_STATUS.completed;
      item[A.expiresAt] = update.expiresAt;
      if (update.result !== undefined) item[A.result] = clone(update.result);
      delete item[A.leaseExpiresAt];
      return { kind: 'ok' };
    },

    async replace(pk, fingerprint, next): Promise<FencedResult> {
      await enter('replace', [pk, fingerprint, next]);
      const item = table(inboxTable).get(keyOf(inboxTable, { [A.pk]: pk }));
      // The same replacement sent again (an SDK retry after a lost response) meets its own record.
      if (item?.[A.fingerprint] === next.fingerprint) return { kind: 'ok' };
      if (item?.[A.fingerprint] !== fingerprint) return { kind: 'lost-ownership' };
      item[A.fingerprint] = next.fingerprint;
      item[A.expiresAt] = next.expiresAt;
      if (next.result !== undefined) item[A.result] = clone(next.result);
      return { kind: 'ok' };
    },

    async extendLease(pk, owner, leaseExpiresAt, expiresAt): Promise<FencedResult> {
      await enter('extendLease', [pk, owner, leaseExpiresAt, expiresAt]);
      const item = ownedItem(pk, owner);
      if (!item) return { kind: 'lost-ownership' };
      // Only forward: a retried or delayed older extension changes nothing.
      if ((item[A.leaseExpiresAt] as number) >= leaseExpiresAt) return { kind: 'ok' };
      item[A.leaseExpiresAt] = leaseExpiresAt;
      item[A.expiresAt] = expiresAt;
      return { kind: 'ok' };
    },

    read: (tableName, pk) => store.get(tableName, { [keyAttributes(tableName)[0]!]: pk }),
    get(tableName, key) {
      const item = table(tableName).get(keyOf(tableName, key));
      return item === undefined ? undefined : clone(item);
    },
    items: (tableName) => [...table(tableName).values()].map(clone),
    seed(tableName, item) {
      table(tableName).set(keyOf(tableName, item as Item), clone(item as Item));
    },
    failNext(method, error) {
      const queued = faults.get(method) ?? [];
      queued.push(error);
      faults.set(method, queued);
    },
    gate(method) {
      let open!: () => void;
      gates.set(
        method,
        new Promise<void>((resolve) => {
          open = resolve;
        }),
      );
      return () => {
        gates.delete(method);
        open();
      };
    },
  };

  /** The claim `owner` still holds: in progress and not released (its lease may have ended). */
  function ownedItem(pk: string, owner: string): Item | undefined {
    const item = table(inboxTable).get(keyOf(inboxTable, { [A.pk]: pk }));
    return item?.[A.owner] === owner &&
      item[A.status] === INBOX_STATUS.inProgress &&
      item[A.leaseExpiresAt] !== RELEASED_LEASE
      ? item
      : undefined;
  }

  return store;
}

function toItem(record: InboxRecord): Item {
  const item: Item = {};
  for (const [name, value] of Object.entries(record)) if (value !== undefined) item[name] = clone(value);
  return item;
}

/**
 * The record standing for a live business item that is its own marker, as the DynamoDB store
 * reads it: completed, fingerprint `''` when the item carries none, never expiring without a
 * numeric `expiresAt`.
 */
function entityRecord(item: Item, keyAttribute: string): InboxRecord {
  const stored = item[ENTITY_FINGERPRINT_ATTRIBUTE];
  const expiresAt = item[A.expiresAt];
  return {
    pk: String(item[keyAttribute]),
    status: 'COMPLETED',
    fingerprint: typeof stored === 'string' ? stored : '',
    expiresAt: typeof expiresAt === 'number' ? expiresAt : Number.MAX_SAFE_INTEGER,
    consumer: '',
  };
}

function toRecord(item: Item): InboxRecord {
  return clone(item) as unknown as InboxRecord;
}

/** One business write of a commit: where it goes, what it does, and its expressions. */
interface DescribedWrite {
  readonly name: string;
  readonly key: Item;
  readonly apply: (current: Item | undefined) => Item | undefined;
  readonly condition: string | undefined;
  readonly update: string | undefined;
  readonly names: Readonly<Record<string, string>> | undefined;
  readonly values: Readonly<Record<string, unknown>> | undefined;
}

function describeWrite(write: TransactWriteAction): DescribedWrite {
  const expressionsOf = (body: {
    ConditionExpression?: string;
    UpdateExpression?: string;
    ExpressionAttributeNames?: Record<string, string>;
    ExpressionAttributeValues?: Record<string, unknown>;
  }) => ({
    condition: body.ConditionExpression,
    update: body.UpdateExpression,
    names: body.ExpressionAttributeNames,
    values: body.ExpressionAttributeValues,
  });
  if (write.Put) {
    const { TableName, Item } = write.Put;
    return {
      name: TableName!,
      key: Item as Item,
      apply: () => clone(Item as Item),
      ...expressionsOf(write.Put),
    };
  }
  if (write.Update) {
    const { TableName, Key, UpdateExpression, ExpressionAttributeNames, ExpressionAttributeValues } =
      write.Update;
    return {
      name: TableName!,
      key: Key as Item,
      apply: (current) =>
        applyDocumentUpdate(UpdateExpression!, current, Key as Item, {
          names: ExpressionAttributeNames,
          values: ExpressionAttributeValues,
        }),
      ...expressionsOf(write.Update),
    };
  }
  if (write.Delete) {
    return {
      name: write.Delete.TableName!,
      key: write.Delete.Key as Item,
      apply: () => undefined,
      ...expressionsOf(write.Delete),
    };
  }
  if (write.ConditionCheck) {
    return {
      name: write.ConditionCheck.TableName!,
      key: write.ConditionCheck.Key as Item,
      apply: (current) => current,
      ...expressionsOf(write.ConditionCheck),
    };
  }
  throw new EffectivelyOnceError('VALIDATION', 'A write must be one of Put, Update, Delete, ConditionCheck');
}

/**
 * Evaluates `write` against the stored item `current`: the item it leaves (`undefined`:
 * deleted), or `'condition-failed'`. A request DynamoDB would reject (an undefined or unused
 * placeholder, an operand of the wrong type) fails as the DynamoDB store reports it:
 * `VALIDATION`.
 */
function evaluateWrite(
  write: DescribedWrite,
  current: Item | undefined,
): { readonly item: Item | undefined } | 'condition-failed' {
  const context = { names: write.names, values: write.values };
  try {
    checkUnusedPlaceholders([write.condition, write.update], context);
    if (!evaluateDocumentCondition(write.condition, current, context)) return 'condition-failed';
    return { item: write.apply(current) };
  } catch (error) {
    if (!(error instanceof ExpressionValidationError)) throw error;
    throw new EffectivelyOnceError('VALIDATION', `commit: ${error.message}`, { cause: error });
  }
}
