/**
 * The unit of work of atomic (inbox) mode: the business writes a handler describes, which the
 * toolkit commits in one `TransactWriteItems` with the marker at index 0.
 */
import { EffectivelyOnceError } from '../core/errors';
import { MAX_BUSINESS_WRITES, tooManyWrites } from '../core/item-size';
import type { AtomicStore, TransactWriteAction, VersionedPutWrite } from '../core/store-port';

/** A put in `@aws-sdk/lib-dynamodb` document shape (`TableName`, `Item`, optional condition). */
export type PutWrite = NonNullable<TransactWriteAction['Put']>;
/** An update in document shape (`TableName`, `Key`, `UpdateExpression`, ...). */
export type UpdateWrite = NonNullable<TransactWriteAction['Update']>;
/** A delete in document shape (`TableName`, `Key`, optional condition). */
export type DeleteWrite = NonNullable<TransactWriteAction['Delete']>;
/** A condition check in document shape (`TableName`, `Key`, `ConditionExpression`). */
export type ConditionCheckWrite = NonNullable<TransactWriteAction['ConditionCheck']>;

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
  /** The writes described so far, in order. */
  readonly writes: readonly TransactWriteAction[];
}

/** A unit of work that also knows which of its writes are version guards. */
export interface GuardedUnitOfWork extends UnitOfWork {
  /** Indices of the writes added by `putIfNewer`. */
  readonly guards: ReadonlySet<number>;
}

/**
 * Creates an empty unit of work; adding a write beyond the transaction limit throws
 * `TOO_MANY_WRITES`. `store` builds the expressions of `putIfNewer`.
 */
export function createUnitOfWork(store?: Pick<AtomicStore, 'putIfNewer'>): GuardedUnitOfWork {
  const writes: TransactWriteAction[] = [];
  const guards = new Set<number>();
  const add = (write: TransactWriteAction): number => {
    if (writes.length >= MAX_BUSINESS_WRITES) throw tooManyWrites();
    writes.push(write);
    return writes.length - 1;
  };
  return {
    put: (write) => add({ Put: write }),
    update: (write) => add({ Update: write }),
    delete: (write) => add({ Delete: write }),
    conditionCheck: (write) => add({ ConditionCheck: write }),
    putIfNewer(write) {
      const version = write?.Item?.[write.versionAttribute];
      if (typeof version !== 'number' && typeof version !== 'string') {
        throw new EffectivelyOnceError(
          'VALIDATION',
          `putIfNewer: \`Item.${write?.versionAttribute}\` must be a number or a string`,
        );
      }
      const index = add(store!.putIfNewer(write));
      guards.add(index);
      return index;
    },
    writes,
    guards,
  };
}
