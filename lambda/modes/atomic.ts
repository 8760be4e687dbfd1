/**
 * Atomic mode: the user's handler describes business writes on a unit of work, and they are
 * committed in one `TransactWriteItems` with the marker at index 0 (the inbox record), or, with
 * `marker: 'item'`, with the marker on the one put the handler marks (no inbox record).
 */
import { INBOX_ATTRIBUTES, OUTBOX_ENV } from '../core/contract';
import { EffectivelyOnceError, expectMethods, expectOption } from '../core/errors';
import { createInboxRecord, outcomeOfInsert } from '../core/inbox-record';
import { assertCommitWithinLimits, assertItemMarkerCommitWithinLimits } from '../core/item-size';
import type { Message } from '../core/message';
import {
  completedStep,
  type Mode,
  type ModeProcessor,
  type ModeStepResult,
  type OutboxDefaults,
  stepResult,
} from '../core/mode';
import { outcomeOfError, outcomeOfExisting } from '../core/outcome';
import type {
  AtomicCommit,
  AtomicStore,
  CommitResult,
  InboxRecord,
  TransactWriteAction,
} from '../core/store-port';
import {
  DEFAULT_OUTBOX_RETENTION_SECONDS,
  type DestinationSizingOptions,
  type OutboxDestinationSizing,
  resolveDestinationSizing,
} from '../outbox/outbox-item';
import { type CommitRounds, type CommitTicket, createCommitRounds } from './batch-commit';
import {
  createUnitOfWork,
  type GuardedUnitOfWork,
  type ItemMarkerUnitOfWork,
  type MarkerPlacement,
  type UnitOfWork,
} from './unit-of-work';

/** Describes the business writes of one message on `unitOfWork`. Its return value is ignored. */
export type AtomicHandler<TBody, TRecord = unknown> = (
  message: Message<TBody, TRecord>,
  unitOfWork: UnitOfWork,
) => unknown;

/**
 * Describes the business writes of one message on `unitOfWork`, marking the put that creates its
 * business item with `unitOfWork.putAsMarker` (`atomic(handle, { marker: 'item' })`). Its return
 * value is ignored.
 */
export type ItemMarkerHandler<TBody, TRecord = unknown> = (
  message: Message<TBody, TRecord>,
  unitOfWork: ItemMarkerUnitOfWork,
) => unknown;

/** Options of `atomic`, fixed when the mode is created (cold start). */
export interface AtomicOptions {
  /**
   * Where the marker goes. `'inbox'`: an inbox record put at index 0 of each commit. `'item'`:
   * on the business item the handler marks with `unitOfWork.putAsMarker` (one per message), so
   * the commit holds no inbox record: a first delivery costs 2N write units for N writes instead
   * of 2N + 2, and 1 when the marked put is the only write (sent as one conditional `PutItem`,
   * entity mode's request, rather than a transaction). The choice is the mode's, never a message's, so a redelivery cannot take another
   * path than its first delivery; a message under `'item'` that marks no put, or two, is
   * dead-lettered (`VALIDATION`).
   * @default 'inbox'
   */
  readonly marker?: MarkerPlacement;
  /**
   * How the messages of a batch commit. `'batch'`: the messages the invocation runs side by side
   * share `TransactWriteItems` requests (at most 100 actions and 4 MB each, no two actions on one
   * item): a batch of ten first deliveries with one write each is one request and one
   * transaction's latency instead of ten. A cancelled shared transaction is read message by
   * message (the same outcomes and log lines as a commit of its own), and the messages that did
   * not cause it are sent again together; a message whose commit is a single write (a marker
   * without writes, a marked put alone) is sent alone as one `PutItem`. `'message'`: one
   * transaction per message. A store without `commitMany` commits per message.
   *
   * The trade: a bad message (a duplicate, a failed business condition) costs the others of its
   * transaction a second round trip; a fault of the shared request is every member's (each is
   * retried, then read as a duplicate); a message that reached its commit waits for the
   * invocation's other handlers still describing their writes, for 100 ms at most (then they
   * commit without a handler still awaiting something, which commits in a later round); and a
   * larger transaction meets more concurrent writers,
   * so on items written by many deliveries at once `'message'` may conflict less. Messages of
   * one FIFO message group still commit one after another.
   * @default 'batch'
   */
  readonly commit?: 'batch' | 'message';
  /**
   * The transactional outbox `unitOfWork.emit` writes to: its table, how long its items are
   * kept, and the relay's destination, which an event's size is checked against. A consumer
   * given an `Outbox` by its construct (`outbox` prop) needs none: the construct's
   * `EO_OUTBOX_TABLE_NAME`, `EO_OUTBOX_RETENTION_SECONDS`, `EO_OUTBOX_DESTINATION_KIND` and
   * `EO_OUTBOX_EVENT_SOURCE` are the defaults (a different `tableName` is `INVALID_OPTIONS`).
   * @default the construct's outbox; without one, `emit` throws `INVALID_OPTIONS`
   */
  readonly outbox?: AtomicOutboxOptions;
}

/** Where atomic mode's `unitOfWork.emit` writes outbox items, and how they are sized for the relay's destination. */
export interface AtomicOutboxOptions extends DestinationSizingOptions {
  /** Name of the outbox table (partition key `pk`, String; TTL `expiresAt`; a stream for the relay). */
  readonly tableName: string;
  /**
   * How long an outbox item is kept (its TTL), seconds: longer than the relay can fall behind.
   * @default 604800 (7 days)
   */
  readonly retentionSeconds?: number;
}

/**
 * Atomic mode: `handle` describes business writes on a unit of work; they are committed in one
 * transaction with the marker. `handle` runs before the commit, also for a message that turns out
 * to be a duplicate, so it must only describe writes, never perform side effects. One request
 * per message.
 *
 * - `marker: 'inbox'` (the default): the marker is an inbox record at index 0; with no writes it
 *   is stored alone (one conditional put).
 * - `marker: 'item'`: the handler marks the put that creates the message's business item with
 *   `unitOfWork.putAsMarker`; that item carries the fingerprint under entity mode's condition
 *   (its key absent, AND the put's own condition), and a duplicate is recognised from the item
 *   the cancelled transaction returns. A marked put with no other write is sent as one
 *   conditional `PutItem` (entity mode's request: one write unit), with the same outcomes. The
 *   dedup lasts as long as the item: it carries no `expiresAt` unless the handler's item does,
 *   and a deleted item lets a redelivery create it again. An item at that key written by something else (no fingerprint, or another message's)
 *   is a `PAYLOAD_MISMATCH`, never a silent acknowledgement.
 *
 * @example
 * createSqsHandler<OrderEvent>({
 *   dedupKey: fromBody((order: OrderEvent) => [order.orderId, order.status]),
 *   mode: atomic((message, unitOfWork) => {
 *     unitOfWork.put({ TableName: 'Orders', Item: { pk: message.body.orderId, status: message.body.status } });
 *   }),
 * });
 *
 * @example
 * createSqsHandler<OrderPlaced>({
 *   dedupKey: fromBody('orderId'),
 *   mode: atomic(
 *     (message, unitOfWork) => {
 *       unitOfWork.putAsMarker({
 *         TableName: 'Orders',
 *         Item: { orderId: message.body.orderId, total: message.body.total },
 *         keyAttribute: 'orderId',
 *       });
 *     },
 *     { marker: 'item' },
 *   ),
 * });
 */
export function atomic<TBody = unknown, TRecord = unknown>(
  handle: ItemMarkerHandler<TBody, TRecord>,
  options: AtomicOptions & { readonly marker: 'item' },
): Mode<TBody, AtomicStore, TRecord>;
export function atomic<TBody = unknown, TRecord = unknown>(
  handle: AtomicHandler<TBody, TRecord>,
  options?: AtomicOptions & { readonly marker?: 'inbox' },
): Mode<TBody, AtomicStore, TRecord>;
export function atomic<TBody = unknown, TRecord = unknown>(
  handle: ItemMarkerHandler<TBody, TRecord>,
  options?: AtomicOptions,
): Mode<TBody, AtomicStore, TRecord> {
  return {
    name: 'atomic',
    capability: 'atomic',
    create({ store, consumer, ttlSeconds, defaults }) {
      expectOption(typeof handle === 'function', 'atomic(handle)', 'a function', handle);
      expectOption(
        options === undefined || (typeof options === 'object' && options !== null),
        'atomic(handle, options)',
        'an object',
        options,
      );
      const marker = options?.marker ?? 'inbox';
      const commitMode = options?.commit ?? 'batch';
      expectOption(
        commitMode === 'batch' || commitMode === 'message',
        'atomic.commit',
        "`'batch'` or `'message'`",
        commitMode,
      );
      const outbox = resolveOutbox(options?.outbox, defaults.outbox);
      expectOption(marker === 'inbox' || marker === 'item', 'atomic.marker', "`'inbox'` or `'item'`", marker);
      // `putIfNewer` is needed only by a handler that calls it; the unit of work calls it then.
      expectMethods('store', store, marker === 'item' ? ['commitWithItemMarker'] : ['insert', 'commit']);

      // Batch commit needs a store that commits several messages at once.
      const shared =
        commitMode === 'batch' && typeof store.commitMany === 'function'
          ? (store as AtomicStore & Required<Pick<AtomicStore, 'commitMany'>>)
          : undefined;

      /** The processor; with `rounds`, one batch's, whose transactions its messages share. */
      const processor = (rounds?: CommitRounds): ModeProcessor<TBody, TRecord> => ({
        async process(message, { fingerprint, nowMillis }) {
          const ticket = rounds?.enter();
          try {
            // No inbox record when the marker goes on a business item.
            const record =
              marker === 'inbox'
                ? createInboxRecord(message.scopedKey, fingerprint, consumer, nowMillis, ttlSeconds)
                : undefined;
            const unitOfWork = createUnitOfWork(
              store,
              marker,
              outbox && { ...outbox, scope: message.scopedKey, source: consumer, nowMillis },
            );
            let bytes: number;
            try {
              // A handler that only describes its writes returns at once: awaited only when it
              // returned a promise, it costs no turn of the microtask queue per message.
              const described = handle(message, unitOfWork);
              if (isThenable(described)) await described;
              bytes = record
                ? assertCommitWithinLimits(record, unitOfWork.writes)
                : assertItemMarked(unitOfWork, fingerprint);
            } catch (error) {
              return stepResult(outcomeOfError(error, 'HANDLER_FAILED'));
            }
            try {
              return await commit({ record, unitOfWork, fingerprint, nowMillis, bytes, ticket });
            } catch (error) {
              return stepResult(outcomeOfError(error, 'UNEXPECTED'));
            }
          } finally {
            ticket?.leave();
          }
        },
      });

      const single = processor();
      return shared ? { ...single, forBatch: () => processor(createCommitRounds(shared)) } : single;

      /**
       * Sends the commit of a message that has writes: the marked put alone as one conditional
       * `PutItem` (the store picks that request); otherwise the transaction of the marker with
       * the writes, shared with the batch's other messages when the message holds a `ticket`.
       */
      function send({
        record,
        unitOfWork,
        fingerprint,
        nowMillis,
        bytes,
        ticket,
      }: DescribedCommit): Promise<CommitResult> {
        const { writes, marked } = unitOfWork;
        const alone = () =>
          record
            ? store.commit(record, writes, nowMillis)
            : store.commitWithItemMarker(writes, { ...marked!, fingerprint }, nowMillis);
        // A marked put alone is cheapest alone: one PutItem, one write unit, no transaction.
        if (ticket === undefined || (!record && writes.length === 1)) {
          ticket?.leave();
          return alone();
        }
        const commit: AtomicCommit = record
          ? { record, writes }
          : { writes, marker: { ...marked!, fingerprint } };
        return ticket.commit({
          commit,
          actions: writes.length + (record ? 1 : 0),
          bytes,
          nowMillis,
          alone,
        });
      }

      async function commit(described: DescribedCommit): Promise<ModeStepResult> {
        const { record, unitOfWork, fingerprint, nowMillis, ticket } = described;
        const { writes, marked } = unitOfWork;
        // A committed marker is final (nothing releases it), whether this step wrote it or met it.
        // Without writes the inbox marker is one conditional put, never part of a transaction.
        if (record && writes.length === 0) {
          ticket?.leave();
          const inserted = await store.insert(record, nowMillis);
          const stored = inserted.kind === 'inserted' ? record : inserted.record;
          return completedStep(outcomeOfInsert(inserted, fingerprint, nowMillis), stored.expiresAt);
        }
        const result = await send(described);
        if (result.kind === 'condition-failed') {
          // A version guard's condition failing means a newer version is stored: not an error.
          if (unitOfWork.guards.has(result.index)) return stepResult({ kind: 'stale' });
          const detail = result.message ? `: ${result.message}` : '';
          const event = unitOfWork.events.get(result.index);
          if (event !== undefined) {
            // A redelivery meets its inbox marker first (a duplicate), so an outbox item that is
            // already there belongs to another event: retrying would never succeed, and an
            // unconditional put would have replaced that event without a trace.
            return stepResult({
              kind: 'permanent',
              code: 'OUTBOX_COLLISION',
              reason: `The outbox put of event \`${event}\` (write ${result.index}) met an existing item with that id; nothing was committed${detail}`,
            });
          }
          return stepResult({
            kind: 'permanent',
            code: 'BUSINESS_CONDITION_FAILED',
            reason: `The condition of business write ${result.index} failed${detail}`,
          });
        }
        if (result.kind === 'committed') {
          const expiresAt = record ? record.expiresAt : markedExpiresAt(writes[marked!.index]!);
          return completedStep({ kind: 'processed' }, expiresAt);
        }
        return completedStep(
          outcomeOfExisting(result.record, fingerprint, nowMillis),
          result.record.expiresAt,
        );
      }
    },
  };
}

/**
 * The outbox settings: the mode's own option, else the construct's (`EO_OUTBOX_*`), checked at
 * cold start (`INVALID_OPTIONS`). An own table other than the construct's is refused: the
 * function is granted puts on the construct's outbox table only, and its relay reads only that
 * table's stream.
 */
function resolveOutbox(
  own: AtomicOutboxOptions | undefined,
  configured: OutboxDefaults | undefined,
): ResolvedOutbox | undefined {
  if (own === undefined && configured === undefined) return undefined;
  expectOption(
    own === undefined || (typeof own === 'object' && own !== null),
    'atomic.outbox',
    'an object',
    own,
  );
  const tableName = own?.tableName ?? configured?.tableName;
  const retentionSeconds =
    own?.retentionSeconds ?? configured?.retentionSeconds ?? DEFAULT_OUTBOX_RETENTION_SECONDS;
  expectOption(
    typeof tableName === 'string' && tableName !== '',
    'atomic.outbox.tableName',
    'a non-empty string',
    tableName,
  );
  if (configured !== undefined && tableName !== configured.tableName) {
    throw new EffectivelyOnceError(
      'INVALID_OPTIONS',
      `atomic.outbox.tableName is \`${tableName}\`, but the construct configured the outbox \`${configured.tableName}\` (\`${OUTBOX_ENV.tableName}\`): the function may write only to that one, and its relay reads only that table's stream`,
    );
  }
  expectOption(
    Number.isSafeInteger(retentionSeconds) && retentionSeconds > 0,
    'atomic.outbox.retentionSeconds',
    'a positive integer',
    retentionSeconds,
  );
  // An own destination kind comes with its own event source, FIFO and fair flags; else the
  // construct's fill in.
  const sizing: DestinationSizingOptions =
    own?.destinationKind !== undefined
      ? own
      : {
          destinationKind: configured?.destinationKind,
          eventSource: own?.eventSource ?? configured?.eventSource,
          destinationFifo: own?.destinationFifo ?? configured?.destinationFifo,
          destinationFair: own?.destinationFair ?? configured?.destinationFair,
        };
  return {
    tableName: tableName as string,
    retentionSeconds,
    destination: resolveDestinationSizing('atomic.outbox.', sizing),
  };
}

/** One message's commit as its handler described it, ready to send. */
interface DescribedCommit {
  /** The inbox record; `undefined` with the marker on a business item. */
  readonly record: InboxRecord | undefined;
  readonly unitOfWork: GuardedUnitOfWork;
  readonly fingerprint: string;
  /** When the message started, epoch milliseconds. */
  readonly nowMillis: number;
  /** The commit's estimated bytes in a transaction. */
  readonly bytes: number;
  /** The message's place in its batch's shared commits; `undefined` with `commit: 'message'`. */
  readonly ticket: CommitTicket | undefined;
}

/** The outbox `emit` writes to, resolved. */
interface ResolvedOutbox {
  readonly tableName: string;
  readonly retentionSeconds: number;
  /** Where the relay publishes (the construct's `EO_OUTBOX_DESTINATION_KIND`, else SQS), sized for. */
  readonly destination: OutboxDestinationSizing;
}

/**
 * When a marked item stops holding its key, as for an entity: at its numeric `expiresAt`
 * attribute (epoch seconds, as the store's condition reads it), else never.
 */
function markedExpiresAt(write: TransactWriteAction): number {
  const expiresAt = write.Put?.Item?.[INBOX_ATTRIBUTES.expiresAt];
  return typeof expiresAt === 'number' ? expiresAt : Number.MAX_SAFE_INTEGER;
}

/**
 * Throws a permanent error unless the unit of work marked a put (`putAsMarker` rejects a second
 * one) and its writes fit one transaction with the marker's fingerprint on that put; returns
 * their estimated bytes.
 */
function assertItemMarked(unitOfWork: GuardedUnitOfWork, fingerprint: string): number {
  if (unitOfWork.marked === undefined) {
    throw new EffectivelyOnceError(
      'VALIDATION',
      "atomic(handle, { marker: 'item' }): the handler marked no put; every message must mark the put that creates its business item with `unitOfWork.putAsMarker`",
    );
  }
  return assertItemMarkerCommitWithinLimits(unitOfWork.writes, unitOfWork.marked.index, fingerprint);
}

/** True for a promise, or anything `await` would wait for (an object or function with `then`). */
function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
