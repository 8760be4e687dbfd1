/**
 * Entity-as-marker mode: the one business item a message produces is its own marker, put on the
 * condition that its key is absent. No inbox table.
 */
import { INBOX_ATTRIBUTES } from '../core/contract';
import { EffectivelyOnceError, expectMethods, expectOption } from '../core/errors';
import { outcomeOfInsert } from '../core/inbox-record';
import { assertEntityWithinLimits } from '../core/item-size';
import type { Message } from '../core/message';
import { completedStep, type Mode, stepResult } from '../core/mode';
import { outcomeOfError } from '../core/outcome';
import type { EntityStore, EntityWrite } from '../core/store-port';

/** Returns the business item of one message, its table and its partition key attribute. */
export type EntityHandler<TBody, TRecord = unknown> = (
  message: Message<TBody, TRecord>,
) => EntityWrite | Promise<EntityWrite>;

function assertEntity(entity: unknown): asserts entity is EntityWrite {
  const candidate = entity as Partial<EntityWrite> | null | undefined;
  const item = candidate?.item;
  const key = candidate?.keyAttribute;
  const keyType = typeof key === 'string' && typeof item === 'object' && item !== null && typeof item[key];
  const valid =
    typeof candidate?.tableName === 'string' &&
    candidate.tableName !== '' &&
    (keyType === 'string' || keyType === 'number' || keyType === 'bigint') &&
    item![key!] !== '';
  if (!valid) {
    throw new EffectivelyOnceError(
      'VALIDATION',
      'The entity-mode handler must return { tableName, keyAttribute, item } with the key attribute set in the item',
    );
  }
}

/**
 * When an entity this mode put stops holding its key: at its numeric `expiresAt` attribute
 * (epoch seconds, as the store's condition reads it), else never.
 */
function entityExpiresAt(write: EntityWrite): number {
  const expiresAt = write.item[INBOX_ATTRIBUTES.expiresAt];
  return typeof expiresAt === 'number' ? expiresAt : Number.MAX_SAFE_INTEGER;
}

/**
 * Entity as marker: `handle` returns the one business item that is the whole effect; it is put
 * on the condition that its key is absent, carrying the fingerprint. Like atomic mode, `handle`
 * runs before the write and must be free of side effects. The entity never expires as a marker,
 * and no inbox table is needed. One request per message.
 *
 * @example
 * createSqsHandler<Customer>({
 *   dedupKey: fromBody('customerId'),
 *   mode: entity((message) => ({
 *     tableName: 'Customers',
 *     keyAttribute: 'pk',
 *     item: { pk: message.body.customerId, name: message.body.name },
 *   })),
 * });
 */
export function entity<TBody = unknown, TRecord = unknown>(
  handle: EntityHandler<TBody, TRecord>,
): Mode<TBody, EntityStore, TRecord> {
  return {
    name: 'entity',
    capability: 'entity',
    create({ store }) {
      expectOption(typeof handle === 'function', 'entity(handle)', 'a function', handle);
      expectMethods('store', store, ['insertEntity']);
      return {
        async process(message, { fingerprint, nowMillis }) {
          let write: EntityWrite;
          try {
            const returned = await handle(message);
            assertEntity(returned);
            assertEntityWithinLimits(returned, fingerprint);
            write = returned;
          } catch (error) {
            return stepResult(outcomeOfError(error, 'HANDLER_FAILED'));
          }
          try {
            const inserted = await store.insertEntity(write, fingerprint, nowMillis);
            const expiresAt =
              inserted.kind === 'inserted' ? entityExpiresAt(write) : inserted.record.expiresAt;
            return completedStep(outcomeOfInsert(inserted, fingerprint, nowMillis), expiresAt);
          } catch (error) {
            return stepResult(outcomeOfError(error, 'UNEXPECTED'));
          }
        },
      };
    },
  };
}
