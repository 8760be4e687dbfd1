/**
 * The port between the transport-free core and the DynamoDB adapter (`lambda/store/`).
 *
 * The core decides *what* an outcome means (duplicate, mismatch, in progress); the store
 * only reports *what the database said*: the write happened, or an existing live record
 * stopped it (returned in the same round trip where DynamoDB allows), or a business
 * condition failed. The store never compares fingerprints and never reads a clock: the
 * caller passes `now`.
 *
 * Failures are thrown as `EffectivelyOnceError`s (see `errors.ts`) whose `code` carries the
 * disposition; the store is the only place that inspects AWS error names.
 */
import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';

/** Status of an inbox record. */
export type InboxStatus = 'COMPLETED' | 'IN_PROGRESS';

/** One inbox record: one DynamoDB item per scoped dedup key (attribute names in `contract.ts`). */
export interface InboxRecord {
  /** The scoped dedup key (`scopeKey(consumer, dedupKey[, effect])`). */
  readonly pk: string;
  /** `COMPLETED`, or `IN_PROGRESS` while a claim with a lease holds the key. */
  readonly status: InboxStatus;
  /** SHA-256 hex of the canonical payload. */
  readonly fingerprint: string;
  /**
   * TTL, epoch seconds. Reads treat a record with `expiresAt <= now` as absent. A record in
   * progress lives `ttlSeconds` past its lease end (`claimExpiresAt`), a completed one
   * `ttlSeconds` past its completion.
   */
  readonly expiresAt: number;
  /** Consumer name, unscoped. */
  readonly consumer: string;
  /** Epoch milliseconds when the record was first written (two-phase: first claimed). */
  readonly committedAt?: number;
  /**
   * Two-phase: lease end, epoch milliseconds. Always set on `IN_PROGRESS` records; `0` on a claim
   * released after a failed effect (see `release`).
   */
  readonly leaseExpiresAt?: number;
  /**
   * The random token of the claim that wrote the record: fences every later write of that claim
   * (two-phase complete, release and lease extension; a marker's release), and tells the claim's
   * own record, met again by an SDK retry after a lost response, from another delivery's.
   */
  readonly owner?: string;
  /** Two-phase: stored result of a completed effect (the core stores JSON text). */
  readonly result?: unknown;
  /** Two-phase: how often the claim was taken over; absent means never. */
  readonly takeovers?: number;
}

/**
 * One business write inside the atomic commit, in `@aws-sdk/lib-dynamodb` document shape:
 * exactly one of `Put`, `Update`, `Delete`, `ConditionCheck`.
 */
export type TransactWriteAction = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** The business item that is its own marker (entity-as-marker mode). */
export interface EntityWrite {
  /** The business table. */
  readonly tableName: string;
  /** Name of the table's partition key attribute; the put is conditional on its absence. */
  readonly keyAttribute: string;
  /** The whole item, including its key. The store adds the fingerprint attribute. */
  readonly item: Record<string, unknown>;
}

/** What the database said to a conditional insert. */
export type InsertResult =
  | {
      /** The record was written: the key was free. */
      readonly kind: 'inserted';
    }
  | {
      /** A live record already holds the key (expired records never stop an insert). */
      readonly kind: 'existing';
      /** The live record that holds the key. */
      readonly record: InboxRecord;
    };

/**
 * The put of a commit that carries the marker itself (atomic mode with `marker: 'item'`): the
 * business item gets the fingerprint attribute and the entity condition (its key absent, or its
 * numeric `expiresAt` reached), so the commit holds no inbox record.
 */
export interface ItemMarker {
  /** Position of the marked put in `writes`; that write must be a `Put`. */
  readonly index: number;
  /** Name of the put's partition key attribute; the put is conditional on its absence. */
  readonly keyAttribute: string;
  /** SHA-256 hex of the message's payload, stored on the item (`ENTITY_FINGERPRINT_ATTRIBUTE`). */
  readonly fingerprint: string;
}

/**
 * What the database said to an atomic commit (marker at index 0 + business writes, or the
 * business writes alone with the marker on one of their puts).
 */
export type CommitResult =
  | {
      /** The marker and every business write were applied together. */
      readonly kind: 'committed';
    }
  | {
      /** A live marker holds the key: the inbox record, or the marked business item read as entity mode reads it. */
      readonly kind: 'existing';
      /** The live record that holds the key. */
      readonly record: InboxRecord;
    }
  | {
      /**
       * A business write's own condition failed (for example a stock check); nothing was applied.
       * For a marked put, its own `ConditionExpression` failed while its key was absent (or expired).
       */
      readonly kind: 'condition-failed';
      /** The failed write's position in `writes` (0 = the first business write; the marker is not counted). */
      readonly index: number;
      /** DynamoDB's cancellation message for the write, when it sent one. */
      readonly message?: string;
    };

/**
 * A put that applies only when the item is absent or carries an older version (a number or a
 * string, compared as DynamoDB compares them). An item without the version attribute counts as
 * absent.
 */
export interface VersionedPutWrite {
  /** The business table. */
  readonly TableName: string;
  /** The whole item, including its key and `Item[versionAttribute]`. */
  readonly Item: Record<string, unknown>;
  /** Name of the version (or sequence) attribute. */
  readonly versionAttribute: string;
}

/**
 * Whose claim a release undoes: the owner token it was written with, and the status it holds
 * while that owner has it.
 */
export interface ReleaseGuard {
  /** The owner token of the claim (`InboxRecord.owner`). */
  readonly owner: string;
  /**
   * `COMPLETED` for a marker-only claim (stored completed before its handler runs),
   * `IN_PROGRESS` for a claim with a lease (two-phase, job slots, HTTP keys).
   * @default 'IN_PROGRESS'
   */
  readonly status?: InboxStatus;
}

/** What the database said to a fenced update (complete, release, extend, replace). */
export type FencedResult =
  | {
      /** The write applied: the claim was still the caller's. */
      readonly kind: 'ok';
    }
  | {
      /** The record is gone, completed or claimed by someone else; it was left untouched. */
      readonly kind: 'lost-ownership';
    };

/** Marker mode: a marker put before the effect, released when the effect fails. */
export interface MarkerStore {
  /**
   * Marker only: insert `record` unless a live record holds its key
   * (`attribute_not_exists(pk) OR expiresAt <= :nowSeconds`); a released claim of the same
   * fingerprint (see `release`) does not hold it. One request; the existing
   * record comes back from the failed condition (`ALL_OLD`), with a consistent read only
   * as a fallback. A live record carrying `record.owner` (set) is this insert's own, met by an
   * SDK retry after a lost response: `inserted`.
   */
  insert(record: InboxRecord, nowMillis: number): Promise<InsertResult>;

  /**
   * Releases the record at `pk` only while it is still the claim of `guard.owner` (its random
   * owner token) with status `guard.status` (`COMPLETED` for a marker-only claim, the default
   * `IN_PROGRESS` for a claim with a lease), keeping it as a released claim (`IN_PROGRESS`,
   * lease end `0`; a marker is turned into one): the effect may have happened, so the key stays
   * bound to its payload. A claim or an insert of the same fingerprint takes it at once
   * (`claimLease`, `insert`, `commit`); another payload meets it as a live record with another
   * fingerprint, a mismatch. One request.
   *
   * Never throws when the record is gone, completed or claimed by someone else
   * (`lost-ownership`, the record untouched); a release sent again by its holder (an SDK retry
   * after a lost response) meets the claim it released: `ok`. A retry that arrives after another
   * delivery claimed the released record again is `lost-ownership`: the owner token tells the
   * two apart, where the fingerprint (the same payload) cannot.
   */
  release(pk: string, guard: ReleaseGuard): Promise<FencedResult>;
}

/** Atomic mode: the marker alone, or committed with the business writes in one transaction. */
export interface AtomicStore {
  /**
   * Marker only: insert `record` unless a live record holds its key
   * (`attribute_not_exists(pk) OR expiresAt <= :nowSeconds`); a released claim of the same
   * fingerprint (see `release`) does not hold it. One request; the existing
   * record comes back from the failed condition (`ALL_OLD`), with a consistent read only
   * as a fallback. A live record carrying `record.owner` (set) is this insert's own, met by an
   * SDK retry after a lost response: `inserted`.
   */
  insert(record: InboxRecord, nowMillis: number): Promise<InsertResult>;

  /**
   * Atomic (inbox): one `TransactWriteItems` with the marker put at index 0 and `writes`
   * after it. At most 99 writes and 4 MB in total (checked by the caller before the call).
   */
  commit(
    record: InboxRecord,
    writes: readonly TransactWriteAction[],
    nowMillis: number,
  ): Promise<CommitResult>;

  /**
   * Atomic with the marker on a business item: one `TransactWriteItems` of `writes` alone, the
   * put at `marker.index` carrying `marker.fingerprint` under entity mode's condition (AND its
   * own `ConditionExpression`, if any); when that put is the only write, one conditional
   * `PutItem` of it instead (one write unit per KB, not two), with the same results. A live
   * item at that key is `existing`, read as `insertEntity` reads it (fingerprint `''` when the
   * item carries none): an SDK retry of the lone put after a lost response meets its own item
   * there, as a redelivery does; the put's own condition failing on an absent or expired item is
   * `condition-failed` at `marker.index`. At most 100 writes and 4 MB (checked by the caller).
   */
  commitWithItemMarker(
    writes: readonly TransactWriteAction[],
    marker: ItemMarker,
    nowMillis: number,
  ): Promise<CommitResult>;

  /**
   * Batch commit: the commits of several messages in ONE `TransactWriteItems`, each built as
   * `commit` or `commitWithItemMarker` builds its own (a lone marked put included), in order.
   * One result per commit: when the transaction commits, every one is `committed`; when it is
   * cancelled, each commit's share of the `CancellationReasons` is read as its own commit would
   * read it (`existing`, `condition-failed`, or `failed` with the error its commit would throw),
   * and a commit none of whose actions caused the cancellation is `not-applied`: nothing of it was
   * written, and it may be sent again. All of them together at most 100 actions and 4 MB, no two
   * actions on one item (checked by the caller, which may fall back to one commit per message). A
   * failure of the whole request is thrown, classified, as `commit` throws it (a `VALIDATION`
   * error: the commits could not share a transaction). Optional: atomic mode commits one
   * message at a time with a store that lacks it.
   */
  commitMany?(commits: readonly AtomicCommit[], nowMillis: number): Promise<readonly SharedCommitResult[]>;

  /**
   * Builds (does not send) the put of a version-guarded upsert, for a commit: it fails its
   * condition when the stored item carries the same or a newer version. No request.
   */
  putIfNewer(write: VersionedPutWrite): TransactWriteAction;
}

/**
 * One message's commit inside a shared transaction (`AtomicStore.commitMany`): the inbox record
 * with the business writes (as `commit` takes them), or the writes with the marker on one of
 * their puts (as `commitWithItemMarker` takes them).
 */
export type AtomicCommit =
  | {
      /** The marker, put first, under the commit marker condition. */
      readonly record: InboxRecord;
      /** The business writes, after the marker. */
      readonly writes: readonly TransactWriteAction[];
      /** None: the marker is the inbox record. */
      readonly marker?: undefined;
    }
  | {
      /** None: the marker is on one of the writes. */
      readonly record?: undefined;
      /** The business writes, one of them the marked put. */
      readonly writes: readonly TransactWriteAction[];
      /** The put that carries the marker. */
      readonly marker: ItemMarker;
    };

/** What a shared transaction meant for one of its commits (see `AtomicStore.commitMany`). */
export type SharedCommitResult =
  | CommitResult
  | {
      /** None of this commit's actions cancelled the transaction; nothing of it was written. */
      readonly kind: 'not-applied';
    }
  | {
      /** This commit's share failed as its own commit would have thrown (a conflict, throttling, ...). */
      readonly kind: 'failed';
      /** The error its own commit would have thrown, classified. */
      readonly error: Error;
    };

/** Entity mode: the business item is the marker; no inbox table. */
export interface EntityStore {
  /**
   * Entity as marker: one conditional put of the business item carrying `fingerprint`.
   * The `existing` record is synthesised from the stored item (status `COMPLETED`; fingerprint
   * `''` when the item carries none; `expiresAt` from a numeric `expiresAt` attribute, else
   * `Number.MAX_SAFE_INTEGER`).
   */
  insertEntity(entity: EntityWrite, fingerprint: string, nowMillis: number): Promise<InsertResult>;
}

/** Claims with a lease (two-phase effects, job slots, HTTP keys) and the records they complete. */
export interface LeaseStore {
  /**
   * Two-phase: claim `record` (status `IN_PROGRESS`, with `owner` and a `leaseExpiresAt` after
   * `nowMillis`) when the key is absent or expired, or held by a claim with the same
   * fingerprint that was released keeping it (lease end `0`: not a takeover). With `takeover`,
   * also replace the `IN_PROGRESS` claim of `takeover.owner` whose lease ended before
   * `nowMillis`; `takeover: true` in the result says a live claim was replaced. The owner's
   * complete, release and lease extension fail from then on. Returns the existing record
   * otherwise, unless it carries `record.owner`: the SDK retried this claim after a lost
   * response and met the claim's own record, so it is `inserted` (`takeover` as asked for, since
   * the lost attempt's replaced record is unknown). One request. Throws `INVALID_OPTIONS` for a claim without an owner or with a lease that is not after now.
   */
  claimLease(
    record: InboxRecord,
    nowMillis: number,
    takeover?: {
      /** The owner token of the claim to replace once its lease has ended. */
      readonly owner: string;
    },
  ): Promise<
    InsertResult & {
      /** True when a live claim whose lease had ended was replaced. */
      readonly takeover?: boolean;
    }
  >;

  /**
   * Two-phase: mark completed with an optional result, only while `owner` still holds the claim
   * (in progress, not released; an ended lease that nobody took over is still held). A
   * completed record carrying `owner` is this completion's own, met by an SDK retry after a lost
   * response (where the store returns the record from the failed condition): `ok`.
   */
  complete(
    pk: string,
    owner: string,
    update: { readonly expiresAt: number; readonly result?: unknown },
  ): Promise<FencedResult>;

  /**
   * Releases the record at `pk` only while it is still the claim of `guard.owner` (its random
   * owner token) with status `guard.status` (`COMPLETED` for a marker-only claim, the default
   * `IN_PROGRESS` for a claim with a lease), keeping it as a released claim (`IN_PROGRESS`,
   * lease end `0`; a marker is turned into one): the effect may have happened, so the key stays
   * bound to its payload. A claim or an insert of the same fingerprint takes it at once
   * (`claimLease`, `insert`, `commit`); another payload meets it as a live record with another
   * fingerprint, a mismatch. One request.
   *
   * Never throws when the record is gone, completed or claimed by someone else
   * (`lost-ownership`, the record untouched); a release sent again by its holder (an SDK retry
   * after a lost response) meets the claim it released: `ok`. A retry that arrives after another
   * delivery claimed the released record again is `lost-ownership`: the owner token tells the
   * two apart, where the fingerprint (the same payload) cannot.
   */
  release(pk: string, guard: ReleaseGuard): Promise<FencedResult>;

  /**
   * Moves the lease end forward to `leaseExpiresAt` and `expiresAt` with it (see
   * `claimExpiresAt`: the record outlives its lease), only while `owner` still holds the claim:
   * in progress and not released (lease end `0`), so an extension delayed past a release or a
   * completion never revives the claim. An extension that finds the owner's lease already at or
   * past `leaseExpiresAt` (an SDK retry after a lost response, or an older extension delayed past
   * a newer one) changes nothing and is `ok`; it never moves a lease back. `lost-ownership` once
   * the claim was taken over, released, completed, or is gone.
   */
  extendLease(pk: string, owner: string, leaseExpiresAt: number, expiresAt: number): Promise<FencedResult>;

  /**
   * Replaces the fingerprint, `expiresAt` and (when given) `result` of the record at `pk`, only
   * while it carries `fingerprint`: a token of the caller's own last write (job checkpoints).
   * `lost-ownership` when someone else replaced it or it is gone; `ok` when it already carries
   * `next.fingerprint`, which must be unique to this write (an SDK retry after a lost response).
   * One request.
   */
  replace(
    pk: string,
    fingerprint: string,
    next: { readonly fingerprint: string; readonly expiresAt: number; readonly result?: unknown },
  ): Promise<FencedResult>;
}

/**
 * The inbox store: every capability, one DynamoDB request per call unless stated otherwise.
 * Each mode and adapter asks for the capability port it uses, so a store for one mode need not
 * implement the others (entity mode needs no inbox table).
 */
export interface InboxStore extends MarkerStore, AtomicStore, EntityStore, LeaseStore {}
