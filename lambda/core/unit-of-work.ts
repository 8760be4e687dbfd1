/**
 * The unit of work of atomic (inbox) mode: the business writes a handler describes, which the
 * toolkit commits in one `TransactWriteItems` with the marker at index 0.
 */
import { EffectivelyOnceError } from './errors';
import { MAX_BUSINESS_WRITES } from './item-size';
import type { TransactWriteAction } from './store-port';

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
  put(write: PutWrite): number;
  update(write: UpdateWrite): number;
  delete(write: DeleteWrite): number;
  conditionCheck(write: ConditionCheckWrite): number;
  /** The writes described so far, in order. */
  readonly writes: readonly TransactWriteAction[];
}

/** Creates an empty unit of work; adding a write beyond the transaction limit throws `TOO_MANY_WRITES`. */
export function createUnitOfWork(): UnitOfWork {
  const writes: TransactWriteAction[] = [];
  const add = (write: TransactWriteAction): number => {
    if (writes.length >= MAX_BUSINESS_WRITES) {
      throw new EffectivelyOnceError(
        'TOO_MANY_WRITES',
        `A commit holds at most ${MAX_BUSINESS_WRITES} business writes next to the marker`,
      );
    }
    writes.push(write);
    return writes.length - 1;
  };
  return {
    put: (write) => add({ Put: write }),
    update: (write) => add({ Update: write }),
    delete: (write) => add({ Delete: write }),
    conditionCheck: (write) => add({ ConditionCheck: write }),
    writes,
  };
}
