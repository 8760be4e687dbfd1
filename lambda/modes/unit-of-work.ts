/**
 * The unit of work of atomic mode: the business writes a handler describes, which the toolkit
 * commits in one `TransactWriteItems` with the marker at index 0, or (`marker: 'item'`) with the
 * marker on the one put the handler marks (that put alone: one conditional `PutItem`).
 */
import { OUTBOX_ATTRIBUTES } from '../core/contract';
import { EffectivelyOnceError } from '../core/errors';
import {
  MAX_BUSINESS_WRITES,
  MAX_TRANSACTION_ACTIONS,
  tooManyItemMarkerWrites,
  tooManyWrites,
} from '../core/item-size';
import type { AtomicStore, ItemMarker, TransactWriteAction, VersionedPutWrite } from '../core/store-port';
import {
  createEventNamer,
  type EmitOptions,
  type OutboxContext,
  type OutboxEvent,
} from '../outbox/outbox-item';

/** A put in `@aws-sdk/lib-dynamodb` document shape (`TableName`, `Item`, optional condition). */
export type PutWrite = NonNullable<TransactWriteAction['Put']>;
/** An update in document shape (`TableName`, `Key`, `UpdateExpression`, ...). */
export type UpdateWrite = NonNullable<TransactWriteAction['Update']>;
/** A delete in document shape (`TableName`, `Key`, optional condition). */
export type DeleteWrite = NonNullable<TransactWriteAction['Delete']>;
/** A condition check in document shape (`TableName`, `Key`, `ConditionExpression`). */
export type ConditionCheckWrite = NonNullable<TransactWriteAction['ConditionCheck']>;
/**
 * The put that carries the marker (`atomic(handle, { marker: 'item' })`): a put creating the
 * message's business item, and the name of its table's partition key attribute, which the
 * marker's condition requires to be absent. Its own `ConditionExpression`, if any, must hold too.
 */
export type MarkerPutWrite = PutWrite & {
  /** Name of the table's partition key attribute; `Item[keyAttribute]` must be set. */
  readonly keyAttribute: string;
};

/**
 * Collects business writes on any table. Each method returns the write's index, the index a
 * `BUSINESS_CONDITION_FAILED` error reports when that write's condition fails. Nothing is
 * written until the handler returns: the handler only describes the writes.
 *
 * `putIfNewer` guards a write against stale messages on standard queues (which do not keep
 * order): when the stored item already carries the same or a newer version, the message is
 * acknowledged as `stale` (metric `Stale`) and nothing of the commit is written, the marker
 * included, so a redelivery is found stale again.
 *
 * @example
 * unitOfWork.put({ TableName: 'Orders', Item: { pk: order.id, status: order.status } });
 * unitOfWork.update({
 *   TableName: 'Stock',
 *   Key: { sku: order.sku },
 *   UpdateExpression: 'SET available = available - :n',
 *   ConditionExpression: 'available >= :n',
 *   ExpressionAttributeValues: { ':n': order.quantity },
 * });
 */
export interface UnitOfWork {
  /** Adds a put to the commit; returns its index among the business writes. */
  put(write: PutWrite): number;
  /** Adds an update to the commit; returns its index among the business writes. */
  update(write: UpdateWrite): number;
  /** Adds a delete to the commit; returns its index among the business writes. */
  delete(write: DeleteWrite): number;
  /** Adds a condition check (a condition on an item not written); returns its index. */
  conditionCheck(write: ConditionCheckWrite): number;
  /**
   * Puts `Item` unless the stored item's `versionAttribute` is the same or newer.
   *
   * @example
   * unitOfWork.putIfNewer({
   *   TableName: 'Customers',
   *   Item: { pk: customer.id, name: customer.name, version: customer.version },
   *   versionAttribute: 'version',
   * });
   */
  putIfNewer(write: VersionedPutWrite): number;
  /**
   * Emits `event` through the transactional outbox (`atomic(handle, { outbox: { tableName } })`):
   * its outbox item is a put in the same transaction as the marker and the other writes, so the
   * event exists if and only if the commit does, and the relay publishes it. Returns the event's
   * id, derived from the message's scoped dedup key and the event's name within the effect
   * (`options.name`, by default `<type>#<n>`), so a redelivery can never mint a second id.
   * An event too large for its destination (256 KB) throws `ITEM_TOO_LARGE` before the commit
   * (the message is dead-lettered); without an outbox, `emit` throws `INVALID_OPTIONS` (retried).
   *
   * @example
   * unitOfWork.emit({ type: 'OrderConfirmed', detail: { orderId: order.id } }, { entity: order.id });
   */
  emit(event: OutboxEvent, options?: EmitOptions): string;
  /** The writes described so far, in order. */
  readonly writes: readonly TransactWriteAction[];
}

/**
 * The unit of work of `atomic(handle, { marker: 'item' })`: every message marks exactly one put,
 * the one that creates the item that *is* its effect (the order row the message creates). That
 * item carries the marker (the fingerprint attribute and the condition that its key is absent),
 * so the commit holds no inbox record. The other writes are as in {@link UnitOfWork}, up to 100
 * in all.
 *
 * @example
 * unitOfWork.putAsMarker({
 *   TableName: 'Orders',
 *   Item: { orderId: order.id, status: 'PLACED', total: order.total },
 *   keyAttribute: 'orderId',
 * });
 * unitOfWork.update({
 *   TableName: 'Stock',
 *   Key: { sku: order.sku },
 *   UpdateExpression: 'SET available = available - :n',
 *   ConditionExpression: 'available >= :n',
 *   ExpressionAttributeValues: { ':n': order.quantity },
 * });
 */
export interface ItemMarkerUnitOfWork extends UnitOfWork {
  /**
   * Adds the put that carries the marker and returns its index. A second call, or a write that is
   * not a put with `Item[keyAttribute]` set, throws `VALIDATION` (the message is dead-lettered);
   * so does a handler that returns without calling it.
   */
  putAsMarker(write: MarkerPutWrite): number;
}

/**
 * A unit of work that also knows which of its writes are version guards and outbox puts, and
 * which put is the marker.
 */
export interface GuardedUnitOfWork extends ItemMarkerUnitOfWork {
  /** Indices of the writes added by `putIfNewer`. */
  readonly guards: ReadonlySet<number>;
  /** The event id of each outbox put added by `emit`, by the put's index. */
  readonly events: ReadonlyMap<number, string>;
  /** The put added by `putAsMarker` (its index and key attribute), once added. */
  readonly marked: Omit<ItemMarker, 'fingerprint'> | undefined;
}

/** The `guards` of a unit of work without a version guard (never added to: each one builds its own). */
const NO_GUARDS: ReadonlySet<number> = new Set<number>();
/** The `events` of a unit of work without an outbox put (never added to: each one builds its own). */
const NO_EVENTS: ReadonlyMap<number, string> = new Map<number, string>();

/** Where a unit of work's marker goes: the inbox (index 0 of the commit), or a business put. */
export type MarkerPlacement = 'inbox' | 'item';

/**
 * Creates an empty unit of work; adding a write beyond the transaction limit throws
 * `TOO_MANY_WRITES`. `store` builds the expressions of `putIfNewer`. With `marker: 'item'` the
 * handler marks one put with `putAsMarker` and the transaction has room for one more write;
 * otherwise `putAsMarker` throws `VALIDATION`. With `outbox`, `emit` adds outbox items scoped by
 * its `scope`; without, `emit` throws `INVALID_OPTIONS`.
 */
export function createUnitOfWork(
  store?: Pick<AtomicStore, 'putIfNewer'>,
  marker: MarkerPlacement = 'inbox',
  outbox?: OutboxContext,
): GuardedUnitOfWork {
  const writes: TransactWriteAction[] = [];
  const outboxPut = outbox === undefined ? undefined : createEventNamer(outbox);
  const add = (write: TransactWriteAction): number => {
    if (marker === 'item' && writes.length >= MAX_TRANSACTION_ACTIONS) throw tooManyItemMarkerWrites();
    if (marker === 'inbox' && writes.length >= MAX_BUSINESS_WRITES) throw tooManyWrites();
    writes.push(write);
    return writes.length - 1;
  };
  // `marked` is a field set once by `putAsMarker`, not a getter: an object literal with an
  // accessor is built the slow way, and one is built for every message.
  const unitOfWork: { -readonly [Field in keyof GuardedUnitOfWork]: GuardedUnitOfWork[Field] } = {
    put: (write) => add({ Put: write }),
    putAsMarker(write) {
      if (marker !== 'item') {
        throw new EffectivelyOnceError(
          'VALIDATION',
          "putAsMarker: this atomic mode keeps the marker in the inbox; mark a put only with `atomic(handle, { marker: 'item' })`",
        );
      }
      if (unitOfWork.marked !== undefined) {
        throw new EffectivelyOnceError(
          'VALIDATION',
          `putAsMarker: a message marks one put, and write ${unitOfWork.marked.index} already is the marker`,
        );
      }
      assertMarkerPut(write);
      const { keyAttribute, ...put } = write;
      const index = add({ Put: put });
      unitOfWork.marked = { index, keyAttribute };
      return index;
    },
    update: (write) => add({ Update: write }),
    delete: (write) => add({ Delete: write }),
    conditionCheck: (write) => add({ ConditionCheck: write }),
    emit(event, options) {
      if (outboxPut === undefined) {
        throw new EffectivelyOnceError(
          'INVALID_OPTIONS',
          'emit: this consumer has no outbox; give `atomic(handle, { outbox: { tableName } })`',
        );
      }
      const put = outboxPut(event, options);
      const id = put.Item[OUTBOX_ATTRIBUTES.pk] as string;
      const index = add({ Put: put });
      if (unitOfWork.events === NO_EVENTS) unitOfWork.events = new Map();
      (unitOfWork.events as Map<number, string>).set(index, id);
      return id;
    },
    putIfNewer(write) {
      const version = write?.Item?.[write.versionAttribute];
      if (typeof version !== 'number' && typeof version !== 'string') {
        throw new EffectivelyOnceError(
          'VALIDATION',
          `putIfNewer: \`Item.${write?.versionAttribute}\` must be a number or a string`,
        );
      }
      const index = add(store!.putIfNewer(write));
      if (unitOfWork.guards === NO_GUARDS) unitOfWork.guards = new Set();
      (unitOfWork.guards as Set<number>).add(index);
      return index;
    },
    writes,
    // Shared empty ones until a write needs its own: most messages have no guard and no event,
    // and a set and a map for each would be built for every message.
    guards: NO_GUARDS,
    events: NO_EVENTS,
    marked: undefined,
  };
  return unitOfWork;
}

/**
 * Throws `VALIDATION` unless `write` is a put (`TableName`, `Item`, no `Key` or
 * `UpdateExpression`) whose item sets its key attribute: only a put creates the item that carries
 * the marker, and an update or delete cannot be told from a duplicate by the item it meets.
 */
function assertMarkerPut(write: MarkerPutWrite): void {
  const candidate = write as Partial<MarkerPutWrite> & { Key?: unknown; UpdateExpression?: unknown };
  const item = candidate?.Item;
  const key = candidate?.keyAttribute;
  const value = typeof key === 'string' && typeof item === 'object' && item !== null ? item[key] : undefined;
  const valid =
    typeof candidate === 'object' &&
    candidate !== null &&
    candidate.Key === undefined &&
    candidate.UpdateExpression === undefined &&
    typeof candidate.TableName === 'string' &&
    candidate.TableName !== '' &&
    ((typeof value === 'string' && value !== '') || typeof value === 'number' || typeof value === 'bigint');
  if (!valid) {
    throw new EffectivelyOnceError(
      'VALIDATION',
      'putAsMarker: the marker must be a put `{ TableName, Item, keyAttribute }` with `Item[keyAttribute]` set (a string, number or bigint); an update, delete or condition check cannot carry it',
    );
  }
}
