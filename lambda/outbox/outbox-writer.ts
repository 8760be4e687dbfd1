/**
 * `createOutboxWriter`: the transactional outbox for producers that are not consumers (an API
 * handler): events and business writes committed in one `TransactWriteItems`.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { CONSUMER_NAME_PATTERN, OUTBOX_ATTRIBUTES } from '../core/contract';
import { describeValue, EffectivelyOnceError, expectOption } from '../core/errors';
import { fingerprintOf } from '../core/fingerprint';
import { assertItemMarkerCommitWithinLimits, MAX_TRANSACTION_ACTIONS } from '../core/item-size';
import { outcomeOfExisting } from '../core/outcome';
import type { AtomicStore, TransactWriteAction } from '../core/store-port';
import type { Clock } from '../core/time';
import { createDynamoDbStore } from '../store/dynamodb-store';
import {
  createEventNamer,
  DEFAULT_OUTBOX_RETENTION_SECONDS,
  type DestinationSizingOptions,
  type EmitOptions,
  type OutboxEvent,
  resolveDestinationSizing,
} from './outbox-item';

/** An event for {@link OutboxWriter.write}, with the options `emit` takes. */
export interface WriterEvent<TDetail = unknown> extends OutboxEvent<TDetail>, EmitOptions {}

/** Options of {@link createOutboxWriter}, checked once (cold start). */
export interface OutboxWriterOptions extends DestinationSizingOptions {
  /** The document client, created once at module scope. */
  readonly client: DynamoDBDocumentClient;
  /** Name of the outbox table (`EO_OUTBOX_TABLE_NAME`). */
  readonly tableName: string;
  /**
   * The producer's name, stored on each item and scoping its idempotency keys (1-100 characters
   * of `A-Z a-z 0-9 . _ : -`, like a consumer name), so two producers' keys never share an event
   * id.
   */
  readonly producer: string;
  /** @default 604800 (7 days) */
  readonly retentionSeconds?: number;
  /** @default Date.now */
  readonly clock?: Clock;
  /** The store; tests inject one. @default the DynamoDB store over `client` */
  readonly store?: Pick<AtomicStore, 'commitWithItemMarker'>;
}

/**
 * What a write did: `written` (committed now), `duplicate` (the same idempotency key and events
 * were committed before: nothing was written again), `mismatch` (the key was used with other
 * events), `condition-failed` (a business write's condition failed at `index`; nothing written).
 * `ids` are the events' ids, in order, whatever the outcome.
 */
export type OutboxWriteResult =
  | {
      /** What the write did. */
      readonly kind: 'written' | 'duplicate' | 'mismatch';
      /** The events' ids, in order. */
      readonly ids: readonly string[];
    }
  | {
      /** A business write's condition failed; nothing was written. */
      readonly kind: 'condition-failed';
      /** The position of that write in `businessWrites`. */
      readonly index: number;
      /** The events' ids, in order. */
      readonly ids: readonly string[];
    };

/** Writes events, with business writes, in one transaction. */
export interface OutboxWriter {
  /**
   * Commits `events` and `businessWrites` in one `TransactWriteItems`. Each event's id derives
   * from `idempotencyKey` (the request's, say an `Idempotency-Key` header) and its name (as in
   * `emit`); the first event's outbox item is the commit's marker (put only if absent, with the
   * fingerprint of the events), so a retried request with the same key is a `duplicate` and
   * writes nothing twice. Every outbox put is conditional (`attribute_not_exists`): an item of
   * another event under one of the ids throws `OUTBOX_COLLISION`, nothing written, instead of
   * replacing that event. Throws `VALIDATION` or `ITEM_TOO_LARGE` (an event too large for its
   * destination, a write too large for DynamoDB), `TOO_MANY_WRITES` above 100 actions, and the
   * store's errors (retry them with the same key).
   */
  write(
    events: readonly WriterEvent[],
    businessWrites: readonly TransactWriteAction[] | undefined,
    idempotencyKey: string,
  ): Promise<OutboxWriteResult>;
}

/**
 * Creates an outbox writer for a producer that is not a consumer. Call it once, at module scope.
 *
 * @example
 * const outbox = createOutboxWriter({ client, tableName: process.env.EO_OUTBOX_TABLE_NAME!, producer: 'orders-api' });
 * const result = await outbox.write(
 *   [{ type: 'OrderPlaced', detail: { orderId }, entity: orderId }],
 *   [{ Put: { TableName: 'Orders', Item: { pk: orderId, status: 'PLACED' } } }],
 *   request.headers['idempotency-key'],
 * );
 */
export function createOutboxWriter(options: OutboxWriterOptions): OutboxWriter {
  expectOption(
    typeof options === 'object' && options !== null,
    'createOutboxWriter(options)',
    'an object',
    options,
  );
  const {
    tableName,
    producer,
    retentionSeconds = DEFAULT_OUTBOX_RETENTION_SECONDS,
    clock = Date.now,
  } = options;
  expectOption(
    typeof tableName === 'string' && tableName !== '',
    'tableName',
    'a non-empty string',
    tableName,
  );
  expectOption(
    typeof producer === 'string' && CONSUMER_NAME_PATTERN.test(producer),
    'producer',
    '1-100 characters of `A-Z a-z 0-9 . _ : -`',
    producer,
  );
  expectOption(
    Number.isSafeInteger(retentionSeconds) && retentionSeconds > 0,
    'retentionSeconds',
    'a positive integer',
    retentionSeconds,
  );
  expectOption(typeof clock === 'function', 'clock', 'a function', clock);
  const destination = resolveDestinationSizing('', options);
  const store = options.store ?? createDynamoDbStore({ client: options.client, tableName });

  return {
    async write(events, businessWrites = [], idempotencyKey) {
      if (typeof idempotencyKey !== 'string' || idempotencyKey === '' || idempotencyKey.length > 512) {
        throw new EffectivelyOnceError(
          'VALIDATION',
          `write: expected \`idempotencyKey\` to be a string of 1 to 512 characters, got ${describeValue(idempotencyKey)}`,
        );
      }
      if (!Array.isArray(events) || events.length === 0) {
        throw new EffectivelyOnceError('VALIDATION', 'write: expected at least one event');
      }
      if (events.length + businessWrites.length > MAX_TRANSACTION_ACTIONS) {
        throw new EffectivelyOnceError(
          'TOO_MANY_WRITES',
          `write: a transaction holds at most ${MAX_TRANSACTION_ACTIONS} writes, got ${events.length} events and ${businessWrites.length} business writes`,
        );
      }
      const nowMillis = clock();
      const name = createEventNamer({
        tableName,
        retentionSeconds,
        scope: `${producer}#${idempotencyKey}`,
        source: producer,
        nowMillis,
        destination,
      });
      const puts = events.map(({ type, detail, entity, name: eventName }) =>
        name(
          { type, detail },
          {
            ...(entity === undefined ? {} : { entity }),
            ...(eventName === undefined ? {} : { name: eventName }),
          },
        ),
      );
      const ids = puts.map((put) => put.Item[OUTBOX_ATTRIBUTES.pk] as string);
      // The events' content, not the business writes: those may carry times or counters.
      const fingerprint = fingerprintOf(
        puts.map((put) => [
          put.Item[OUTBOX_ATTRIBUTES.type],
          put.Item[OUTBOX_ATTRIBUTES.body],
          put.Item[OUTBOX_ATTRIBUTES.entity] ?? null,
        ]),
      );
      const writes: TransactWriteAction[] = [...puts.map((put) => ({ Put: put })), ...businessWrites];
      assertItemMarkerCommitWithinLimits(writes, 0, fingerprint);
      const result = await store.commitWithItemMarker(
        writes,
        { index: 0, keyAttribute: OUTBOX_ATTRIBUTES.pk, fingerprint },
        nowMillis,
      );
      if (result.kind === 'committed') return { kind: 'written', ids };
      if (result.kind === 'condition-failed' && result.index >= puts.length) {
        return { kind: 'condition-failed', index: result.index - puts.length, ids };
      }
      if (result.kind === 'condition-failed') {
        // A retry meets its marker (the first event's item) first: a duplicate or a mismatch; an
        // item holding the same event passes the put's condition. So this item is another event's.
        throw new EffectivelyOnceError(
          'OUTBOX_COLLISION',
          `write: the outbox put of event \`${ids[result.index]}\` (event ${result.index}) met an existing item with that id; nothing was committed`,
        );
      }
      const outcome = outcomeOfExisting(result.record, fingerprint, nowMillis);
      if (outcome.kind === 'duplicate' || outcome.kind === 'mismatch') return { kind: outcome.kind, ids };
      // An expired item (TTL not yet reaped) counts as absent only for the database: retry.
      throw new EffectivelyOnceError(
        'EXPIRED_RECORD',
        'write: the outbox item met is expired; retry the write',
      );
    },
  };
}
