import { describe, expect, it, vi } from 'vitest';
import { fromAttribute, fromBody } from '../../../lambda/core/dedup-key';
import { EffectivelyOnceError, PermanentError } from '../../../lambda/core/errors';
import { fingerprintOf, sha256Hex } from '../../../lambda/core/fingerprint';
import type { Message } from '../../../lambda/core/message';
import { createEmfMetricsSink } from '../../../lambda/core/metrics';
import type { InboxRecord, InboxStore } from '../../../lambda/core/store-port';
import type { DeadLetterMessage } from '../../../lambda/dead-letter/dead-letter-message';
import { atomic } from '../../../lambda/modes/atomic';
import { type EntityHandler, entity } from '../../../lambda/modes/entity';
import { type MarkerHandler, marker } from '../../../lambda/modes/marker';
import type { SqsBatchHandlerOptions } from '../../../lambda/sqs/sqs-handler';
import { createSqsBatchHandler } from '../../../lambda/sqs/sqs-handler';
import {
  captureLogger,
  captureMetrics,
  counts,
  deferred,
  manualClock,
  sqsEvent,
  sqsRecord,
  T0,
} from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';

interface OrderEvent {
  readonly id: string;
  readonly amount?: number;
  readonly sentAt?: string;
}

/** The options of `setup`; `handle` replaces the marker handler that records each message. */
type SetupOptions = Partial<SqsBatchHandlerOptions<OrderEvent, InboxStore>> & {
  readonly handle?: MarkerHandler<OrderEvent>;
};

function setup({ handle, ...options }: SetupOptions = {}) {
  const store = createMemoryStore();
  const clock = manualClock();
  const logger = captureLogger();
  const metrics = captureMetrics();
  const handled: Message<OrderEvent>[] = [];
  const processBatch = createSqsBatchHandler<OrderEvent>({
    consumer: 'orders',
    dedupKey: fromBody('id'),
    mode: marker(
      handle ??
        ((message: Message<OrderEvent>) => {
          handled.push(message);
        }),
    ),
    store,
    clock,
    logger,
    metrics,
    ttlSeconds: 3600,
    ...options,
  });
  return { store, clock, logger, metrics, handled, processBatch };
}

const body = (id: string, extra: Partial<OrderEvent> = {}): OrderEvent => ({ id, amount: 10, ...extra });
const fingerprint = (value: unknown) => fingerprintOf(value);
const markerRecord = (id: string, extra: Partial<InboxRecord> = {}): InboxRecord => ({
  pk: `orders#${id}`,
  status: 'COMPLETED',
  fingerprint: fingerprint(body(id)),
  expiresAt: Math.floor(T0 / 1000) + 3600,
  consumer: 'orders',
  committedAt: T0,
  ...extra,
});
/** A marker released after its handler failed, keeping its fingerprint. */
const released = (id: string) =>
  markerRecord(id, { status: 'IN_PROGRESS', owner: expect.any(String), leaseExpiresAt: 0 });
const line = (messageId: string, id: string, fields: Record<string, unknown>) => ({
  consumer: 'orders',
  scopedKey: `orders#${id}`,
  messageId,
  correlationId: messageId,
  ...fields,
});
const ids = (...messageIds: string[]) => ({
  batchItemFailures: messageIds.map((itemIdentifier) => ({ itemIdentifier })),
});
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('marker mode', () => {
  it('stores the marker, then runs the handler once, and acknowledges the message', async () => {
    const { store, processBatch, handled, logger, metrics } = setup();

    const response = await processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))));

    expect(response).toEqual(ids());
    // A random owner token tells this claim's own marker from another delivery's.
    const owner = (store.calls[0]?.args[0] as InboxRecord | undefined)?.owner;
    expect(owner).toMatch(/^[0-9a-f-]{36}$/);
    expect(store.calls).toEqual([{ method: 'insert', args: [markerRecord('o-1', { owner }), T0] }]);
    expect(store.items('inbox')).toEqual([markerRecord('o-1', { owner })]);
    expect(handled.map((message) => message.messageId)).toEqual(['m-1']);
    expect(logger.entries).toEqual([]);
    expect(metrics.published).toEqual([{ consumer: 'orders', counts: counts({ processed: 1 }) }]);
  });

  it('gives the handler a typed message with parsed and raw body, keys, ids and attributes', async () => {
    const { processBatch, handled } = setup();
    const record = sqsRecord('m-1', body('o-1'), {
      groupId: 'g-1',
      attributes: { 'correlation-id': 'corr-1' },
    });

    await processBatch(sqsEvent(record));

    expect(handled[0]).toEqual({
      body: body('o-1'),
      rawBody: record.body,
      dedupKey: 'o-1',
      scopedKey: 'orders#o-1',
      messageId: 'm-1',
      attributes: record.messageAttributes,
      groupId: 'g-1',
      correlationId: 'corr-1',
      record,
    });
  });

  it('acknowledges a redelivered message as a duplicate without running the handler again', async () => {
    const { store, processBatch, handled, logger, metrics } = setup();
    await processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))));

    const response = await processBatch(sqsEvent(sqsRecord('m-2', body('o-1'))));

    expect(response).toEqual(ids());
    expect(handled).toHaveLength(1);
    expect(store.calls.map((call) => call.method)).toEqual(['insert', 'insert']);
    expect(logger.entries).toEqual([
      {
        level: 'info',
        message: 'Duplicate message acknowledged',
        ...line('m-2', 'o-1', { outcome: 'duplicate' }),
      },
    ]);
    expect(metrics.published[1]?.counts).toEqual(counts({ duplicate: 1 }));
  });

  it('releases the marker and reports a batch item failure when the handler throws an ordinary error', async () => {
    const { store, processBatch, logger, metrics } = setup({
      handle: () => {
        throw new TypeError('downstream unavailable');
      },
    });

    const response = await processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))));

    expect(response).toEqual(ids('m-1'));
    expect(store.calls).toEqual([
      { method: 'insert', args: [markerRecord('o-1', { owner: expect.any(String) }), T0] },
      {
        method: 'release',
        // Fenced by the marker's own owner token, not by the payload's fingerprint.
        args: ['orders#o-1', { owner: (store.calls[0]!.args[0] as InboxRecord).owner, status: 'COMPLETED' }],
      },
    ]);
    // Kept as a released claim: the retry of this payload takes it, another payload meets it.
    expect(store.items('inbox')).toEqual([released('o-1')]);
    expect(logger.entries).toEqual([
      {
        level: 'warn',
        message: 'Message failed; retrying later',
        ...line('m-1', 'o-1', {
          outcome: 'retry',
          code: 'HANDLER_FAILED',
          errorName: 'TypeError',
          reason: 'TypeError thrown; its message is not logged',
        }),
      },
    ]);
    expect(metrics.published[0]?.counts).toEqual(counts({ retry: 1 }));
  });

  it('runs the effect on the retry after a failed handler', async () => {
    let attempts = 0;
    const { processBatch } = setup({
      handle: () => {
        attempts += 1;
        if (attempts === 1) throw new Error('first attempt fails');
      },
    });
    const event = sqsEvent(sqsRecord('m-1', body('o-1')));

    expect(await processBatch(event)).toEqual(ids('m-1'));
    expect(await processBatch(event)).toEqual(ids());
    expect(attempts).toBe(2);
  });

  it('logs an error when the marker of a failed handler cannot be released', async () => {
    const { store, processBatch, logger } = setup({
      handle: () => {
        throw new Error('boom');
      },
    });
    store.failNext('release', new EffectivelyOnceError('THROTTLED', 'slow down'));

    expect(await processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))))).toEqual(ids('m-1'));
    expect(logger.entries[0]).toEqual({
      level: 'error',
      message: 'Releasing the marker failed: the retry will be acknowledged as a duplicate',
      ...line('m-1', 'o-1', { outcome: 'retry', code: 'THROTTLED', errorName: 'EffectivelyOnceError' }),
    });
    expect(logger.entries[1]).toMatchObject({ outcome: 'retry', code: 'HANDLER_FAILED' });
  });

  it('reports a PermanentError from the handler for redrive, with its reason in the log', async () => {
    const { processBatch, logger, metrics, store } = setup({
      handle: () => {
        throw new PermanentError('order has no items');
      },
    });

    expect(await processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))))).toEqual(ids('m-1'));
    expect(store.items('inbox')).toEqual([released('o-1')]);
    expect(logger.entries).toEqual([
      {
        level: 'error',
        message: 'Message failed permanently',
        ...line('m-1', 'o-1', {
          outcome: 'permanent',
          code: 'PERMANENT',
          errorName: 'PermanentError',
          reason: 'order has no items',
          deadLetter: 'redrive',
        }),
      },
    ]);
    expect(metrics.published[0]?.counts).toEqual(counts({ permanent: 1 }));
  });

  it('never acknowledges the same key with a different payload: it is a mismatch', async () => {
    const { processBatch, handled, logger, metrics } = setup();
    await processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))));

    const response = await processBatch(sqsEvent(sqsRecord('m-2', body('o-1', { amount: 99 }))));

    expect(response).toEqual(ids('m-2'));
    expect(handled).toHaveLength(1);
    expect(logger.entries).toEqual([
      {
        level: 'error',
        message: 'Dedup key reused with a different payload',
        ...line('m-2', 'o-1', {
          outcome: 'mismatch',
          code: 'PAYLOAD_MISMATCH',
          reason: `The dedup key was already used with a different payload (stored fingerprint ${fingerprint(body('o-1'))}, this message ${fingerprint(body('o-1', { amount: 99 }))})`,
          deadLetter: 'redrive',
        }),
      },
    ]);
    expect(metrics.published[1]?.counts).toEqual(counts({ mismatch: 1 }));
  });

  it('fingerprints only the part the fingerprint option picks, so volatile fields do not cause a mismatch', async () => {
    const { processBatch, handled } = setup({
      fingerprint: (message) => ({ ...message.body, sentAt: undefined }),
    });
    await processBatch(sqsEvent(sqsRecord('m-1', body('o-1', { sentAt: '10:00' }))));

    expect(await processBatch(sqsEvent(sqsRecord('m-2', body('o-1', { sentAt: '10:05' }))))).toEqual(ids());
    expect(handled).toHaveLength(1);
  });

  it('reports a key held in progress with a live lease as in flight, to retry later', async () => {
    const { store, processBatch, handled, logger, metrics } = setup();
    store.seed(
      'inbox',
      markerRecord('o-1', { status: 'IN_PROGRESS', owner: 'other', leaseExpiresAt: T0 + 30_000 }),
    );

    expect(await processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))))).toEqual(ids('m-1'));
    expect(handled).toEqual([]);
    expect(logger.entries).toEqual([
      {
        level: 'warn',
        message: 'Dedup key in flight in another delivery; retrying later',
        ...line('m-1', 'o-1', { outcome: 'in-flight', code: 'IN_FLIGHT' }),
      },
    ]);
    expect(metrics.published[0]?.counts).toEqual(counts({ inFlight: 1 }));
  });

  it('retries rather than guesses when the store returns a record that has already expired', async () => {
    const memory = createMemoryStore();
    const expired = markerRecord('o-1', { expiresAt: Math.floor(T0 / 1000) });
    const store: InboxStore = { ...memory, insert: async () => ({ kind: 'existing', record: expired }) };
    const { processBatch, logger, handled } = setup({ store });

    expect(await processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))))).toEqual(ids('m-1'));
    expect(handled).toEqual([]);
    expect(logger.entries[0]).toMatchObject({ outcome: 'retry', code: 'EXPIRED_RECORD' });
  });

  it('reports store failures as retries under their own code, and unknown ones as UNEXPECTED', async () => {
    const { store, processBatch, logger, handled } = setup();
    store.failNext('insert', new EffectivelyOnceError('THROTTLED', 'ProvisionedThroughputExceeded'));
    store.failNext('insert', new Error('socket hang up'));
    store.failNext('insert', new EffectivelyOnceError('ACCESS_DENIED', 'no dynamodb:PutItem'));

    const response = await processBatch(
      sqsEvent(sqsRecord('m-1', body('o-1')), sqsRecord('m-2', body('o-2')), sqsRecord('m-3', body('o-3'))),
    );

    expect(response).toEqual(ids('m-1', 'm-2', 'm-3'));
    expect(handled).toEqual([]);
    expect(logger.entries.map(({ level, outcome, code }) => ({ level, outcome, code }))).toEqual([
      { level: 'warn', outcome: 'retry', code: 'THROTTLED' },
      { level: 'warn', outcome: 'retry', code: 'UNEXPECTED' },
      { level: 'error', outcome: 'retry', code: 'ACCESS_DENIED' },
    ]);
  });
});

describe('preparing messages', () => {
  it('treats a body that is not JSON as permanent, and keeps the body out of the log', async () => {
    const { processBatch, logger, store } = setup();
    const record = sqsRecord('m-1', undefined, { rawBody: '{"id": "o-1", secret-card-4111' });

    expect(await processBatch(sqsEvent(record))).toEqual(ids('m-1'));
    expect(store.calls).toEqual([]);
    expect(logger.entries).toEqual([
      {
        level: 'error',
        message: 'Message failed permanently',
        consumer: 'orders',
        messageId: 'm-1',
        correlationId: 'm-1',
        outcome: 'permanent',
        code: 'MALFORMED_BODY',
        errorName: 'EffectivelyOnceError',
        reason: 'The body is not valid JSON',
        deadLetter: 'redrive',
      },
    ]);
    expect(JSON.stringify(logger.entries)).not.toContain('secret');
  });

  it('treats a missing dedup key as permanent, never as a bypass', async () => {
    const { processBatch, logger, handled } = setup();

    expect(await processBatch(sqsEvent(sqsRecord('m-1', { amount: 1 })))).toEqual(ids('m-1'));
    expect(handled).toEqual([]);
    expect(logger.entries[0]).toMatchObject({
      outcome: 'permanent',
      code: 'MISSING_KEY',
      reason: 'The dedup key (body field `id`) is missing or empty',
    });
  });

  it('reports errors thrown by the key source, the parser and the fingerprint picker as permanent', async () => {
    const cases: SetupOptions[] = [
      {
        dedupKey: () => {
          throw new TypeError('no order');
        },
      },
      {
        parse: () => {
          throw new Error('schema violation at amount');
        },
      },
      { parse: (raw) => JSON.parse(`${raw}}`) },
      {
        fingerprint: () => {
          throw new PermanentError('cannot fingerprint');
        },
      },
    ];
    const reasons = async (logErrorMessages?: boolean) => {
      const found: unknown[] = [];
      for (const options of cases) {
        const { processBatch, logger } = setup({ ...options, logErrorMessages });
        await processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))));
        found.push([logger.entries[0]?.code, logger.entries[0]?.reason]);
      }
      return found;
    };
    // By default the class of what the user's function threw, never its message.
    expect(await reasons()).toEqual([
      ['MISSING_KEY', 'The `dedupKey` option failed to pick a key (TypeError thrown)'],
      ['MALFORMED_BODY', 'The body was rejected by the `parse` option (Error thrown)'],
      ['MALFORMED_BODY', 'The body was rejected by the `parse` option (SyntaxError thrown)'],
      ['PERMANENT', 'The `fingerprint` option failed: cannot fingerprint'],
    ]);
    // With logErrorMessages, its message too, but never a SyntaxError's (it quotes the body).
    expect(await reasons(true)).toEqual([
      ['MISSING_KEY', 'The `dedupKey` option failed to pick a key: no order'],
      ['MALFORMED_BODY', 'The body was rejected by the `parse` option: schema violation at amount'],
      ['MALFORMED_BODY', 'The body was rejected by the `parse` option (SyntaxError thrown)'],
      ['PERMANENT', 'The `fingerprint` option failed: cannot fingerprint'],
    ]);
  });

  it('keys a text body by a message attribute and fingerprints the raw text', async () => {
    const { processBatch, handled, store } = setup({ parse: 'text', dedupKey: fromAttribute('key') });

    await processBatch(
      sqsEvent(sqsRecord('m-1', undefined, { rawBody: 'plain text', attributes: { key: 'k-1' } })),
    );

    expect(handled[0]?.body).toBe('plain text');
    expect(store.items('inbox')[0]).toMatchObject({
      pk: 'orders#k-1',
      fingerprint: fingerprint('plain text'),
    });
  });

  it('fingerprints a JSON body canonically, whatever its key order and whitespace', async () => {
    const { processBatch, store } = setup({ parse: 'text', dedupKey: fromAttribute('key') });

    await processBatch(
      sqsEvent(sqsRecord('m-1', undefined, { rawBody: '{ "b": 1, "a": 2 }', attributes: { key: 'k' } })),
    );

    expect(store.items('inbox')[0]?.fingerprint).toBe(sha256Hex('{"a":2,"b":1}'));
  });

  it('takes the correlation id from the correlationId option, or the correlation-id attribute', async () => {
    const picked = setup({ correlationId: (record) => record.messageAttributes.trace?.stringValue });
    await picked.processBatch(sqsEvent(sqsRecord('m-1', body('o-1'), { attributes: { trace: 't-1' } })));
    await picked.processBatch(sqsEvent(sqsRecord('m-2', body('o-1'))));
    const byAttribute = setup();
    await byAttribute.processBatch(
      sqsEvent(sqsRecord('m-1', body('o-1'), { attributes: { correlationId: 'c-9' } })),
    );

    expect(picked.handled[0]?.correlationId).toBe('t-1');
    expect(picked.logger.entries[0]?.correlationId).toBe('m-2');
    expect(byAttribute.handled[0]?.correlationId).toBe('c-9');
  });
});

describe('atomic mode', () => {
  const atomicSetup = (extra: SetupOptions = {}): SetupOptions => ({
    mode: atomic((message, unitOfWork) => {
      unitOfWork.put({ TableName: 'Orders', Item: { pk: message.body.id, amount: message.body.amount } });
      unitOfWork.update({
        TableName: 'Totals',
        Key: { pk: 'all' },
        UpdateExpression: 'SET total = if_not_exists(total, :zero) + :amount',
        ExpressionAttributeValues: { ':zero': 0, ':amount': message.body.amount },
      });
    }),
    ...extra,
  });

  it('commits the business writes with the marker at index 0 in one call', async () => {
    const { store, processBatch } = setup(atomicSetup());

    expect(await processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))))).toEqual(ids());
    expect(store.calls).toEqual([
      {
        method: 'commit',
        args: [
          markerRecord('o-1'),
          [
            { Put: { TableName: 'Orders', Item: { pk: 'o-1', amount: 10 } } },
            {
              Update: {
                TableName: 'Totals',
                Key: { pk: 'all' },
                UpdateExpression: 'SET total = if_not_exists(total, :zero) + :amount',
                ExpressionAttributeValues: { ':zero': 0, ':amount': 10 },
              },
            },
          ],
          T0,
        ],
      },
    ]);
    expect(store.items('Orders')).toEqual([{ pk: 'o-1', amount: 10 }]);
    expect(store.items('Totals')).toEqual([{ pk: 'all', total: 10 }]);
  });

  it('applies nothing for a duplicate and acknowledges it', async () => {
    const { store, processBatch, metrics } = setup(atomicSetup());
    await processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))));

    expect(await processBatch(sqsEvent(sqsRecord('m-2', body('o-1'))))).toEqual(ids());
    expect(store.items('Totals')).toEqual([{ pk: 'all', total: 10 }]);
    expect(metrics.published[1]?.counts).toEqual(counts({ duplicate: 1 }));
  });

  it('reports a failed business condition with its index, not as a duplicate, and stores no marker', async () => {
    const { store, processBatch, logger } = setup({
      mode: atomic((message, unitOfWork) => {
        unitOfWork.put({ TableName: 'Orders', Item: { pk: message.body.id } });
        unitOfWork.conditionCheck({
          TableName: 'Stock',
          Key: { pk: 'sku-1' },
          ConditionExpression: 'attribute_exists(pk)',
        });
      }),
    });

    expect(await processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))))).toEqual(ids('m-1'));
    expect(store.items('inbox')).toEqual([]);
    expect(store.items('Orders')).toEqual([]);
    expect(logger.entries[0]).toMatchObject({
      outcome: 'permanent',
      code: 'BUSINESS_CONDITION_FAILED',
      reason: 'The condition of business write 1 failed',
    });
  });

  it('adds the store message to the reason of a failed business condition', async () => {
    const memory = createMemoryStore();
    const store: InboxStore = {
      ...memory,
      commit: async () => ({ kind: 'condition-failed', index: 0, message: 'The conditional request failed' }),
    };
    const { processBatch, logger } = setup(atomicSetup({ store }));

    await processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))));
    expect(logger.entries[0]?.reason).toBe(
      'The condition of business write 0 failed: The conditional request failed',
    );
  });

  it('stores the marker alone with one conditional put when the handler describes no writes', async () => {
    const { store, processBatch } = setup({ mode: atomic(() => undefined) });

    await processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))));
    expect(store.calls).toEqual([{ method: 'insert', args: [markerRecord('o-1'), T0] }]);
  });

  it('rejects a 100th business write up front as permanent, before any store call', async () => {
    const { store, processBatch, logger } = setup({
      mode: atomic((_message, unitOfWork) => {
        for (let index = 0; index < 100; index += 1)
          unitOfWork.put({ TableName: 'T', Item: { pk: `p-${index}` } });
      }),
    });

    expect(await processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))))).toEqual(ids('m-1'));
    expect(store.calls).toEqual([]);
    expect(logger.entries[0]).toMatchObject({ outcome: 'permanent', code: 'TOO_MANY_WRITES' });
  });

  it('rejects an oversize item up front as permanent', async () => {
    const { store, processBatch, logger } = setup({
      mode: atomic((_message, unitOfWork) => {
        unitOfWork.put({ TableName: 'T', Item: { pk: 'p', blob: 'x'.repeat(410_000) } });
      }),
    });

    await processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))));
    expect(store.calls).toEqual([]);
    expect(logger.entries[0]).toMatchObject({ outcome: 'permanent', code: 'ITEM_TOO_LARGE' });
  });

  it('retries a transaction conflict', async () => {
    const { store, processBatch, logger } = setup(atomicSetup());
    store.failNext('commit', new EffectivelyOnceError('TRANSACTION_CONFLICT', 'conflict'));

    expect(await processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))))).toEqual(ids('m-1'));
    expect(logger.entries[0]).toMatchObject({ outcome: 'retry', code: 'TRANSACTION_CONFLICT' });
  });
});

describe('entity-as-marker mode', () => {
  const entitySetup = (
    handle: EntityHandler<OrderEvent> = (message) => ({
      tableName: 'Audit',
      keyAttribute: 'pk',
      item: { pk: message.scopedKey, amount: message.body.amount },
    }),
  ): SetupOptions => ({ mode: entity(handle) });

  it('puts the business item with its fingerprint in one conditional put', async () => {
    const { store, processBatch } = setup(entitySetup());

    expect(await processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))))).toEqual(ids());
    expect(store.calls).toEqual([
      {
        method: 'insertEntity',
        args: [
          { tableName: 'Audit', keyAttribute: 'pk', item: { pk: 'orders#o-1', amount: 10 } },
          fingerprint(body('o-1')),
          T0,
        ],
      },
    ]);
    expect(store.items('Audit')).toEqual([
      { pk: 'orders#o-1', amount: 10, eoFingerprint: fingerprint(body('o-1')) },
    ]);
  });

  it('acknowledges a redelivery as a duplicate, and reports an item written by something else as a mismatch', async () => {
    const { store, processBatch, metrics } = setup(entitySetup());
    await processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))));
    store.seed('Audit', { pk: 'orders#o-2', amount: 10 });

    const response = await processBatch(
      sqsEvent(sqsRecord('m-2', body('o-1')), sqsRecord('m-3', body('o-2'))),
    );

    expect(response).toEqual(ids('m-3'));
    expect(metrics.published[1]?.counts).toEqual(counts({ duplicate: 1, mismatch: 1 }));
  });

  it('rejects a handler result that is not an entity write as permanent', async () => {
    const { store, processBatch, logger } = setup(
      entitySetup(() => ({ tableName: 'Audit', keyAttribute: 'pk', item: { id: 'no-pk' } }) as never),
    );

    await processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))));
    expect(store.calls).toEqual([]);
    expect(logger.entries[0]).toMatchObject({ outcome: 'permanent', code: 'VALIDATION' });
  });

  it('rejects an oversize entity up front as permanent', async () => {
    const { store, processBatch, logger } = setup(
      entitySetup(() => ({
        tableName: 'Audit',
        keyAttribute: 'pk',
        item: { pk: 'a', blob: 'x'.repeat(410_000) },
      })),
    );

    await processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))));
    expect(store.calls).toEqual([]);
    expect(logger.entries[0]).toMatchObject({ outcome: 'permanent', code: 'ITEM_TOO_LARGE' });
  });
});

describe('dead letters sent directly', () => {
  const direct = (send: (message: DeadLetterMessage) => Promise<void>) => {
    const sent: DeadLetterMessage[] = [];
    return {
      sent,
      options: {
        deadLetter: 'direct' as const,
        deadLetterSender: {
          send: async (message: DeadLetterMessage) => {
            sent.push(message);
            await send(message);
          },
        },
      },
    };
  };

  it('sends a permanent failure to the dead-letter queue with its reason and acknowledges it', async () => {
    const { sent, options } = direct(async () => undefined);
    const { processBatch, logger } = setup({
      ...options,
      handle: () => {
        throw new PermanentError('order has no items');
      },
    });
    const record = sqsRecord('m-1', body('o-1'), { attributes: { tenant: 't-1' }, groupId: 'g-1' });

    expect(await processBatch(sqsEvent(record))).toEqual(ids());
    expect(sent).toEqual([
      {
        body: record.body,
        reason: 'order has no items',
        code: 'PERMANENT',
        consumer: 'orders',
        dedupKey: 'o-1',
        sourceMessageId: 'm-1',
        attributes: record.messageAttributes,
        groupId: 'g-1',
      },
    ]);
    expect(logger.entries[0]).toMatchObject({ outcome: 'permanent', code: 'PERMANENT', deadLetter: 'sent' });
  });

  it('dead-letters a mismatch and a malformed body directly', async () => {
    const { sent, options } = direct(async () => undefined);
    const { processBatch } = setup(options);
    await processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))));

    const response = await processBatch(
      sqsEvent(
        sqsRecord('m-2', body('o-1', { amount: 5 })),
        sqsRecord('m-3', undefined, { rawBody: 'not json' }),
      ),
    );

    expect(response).toEqual(ids());
    const bySource = [...sent].sort((a, b) => a.sourceMessageId.localeCompare(b.sourceMessageId));
    expect(
      bySource.map(({ sourceMessageId, code, dedupKey }) => ({ sourceMessageId, code, dedupKey })),
    ).toEqual([
      { sourceMessageId: 'm-2', code: 'PAYLOAD_MISMATCH', dedupKey: 'o-1' },
      { sourceMessageId: 'm-3', code: 'MALFORMED_BODY', dedupKey: undefined },
    ]);
    expect(Object.hasOwn(bySource[1]!, 'dedupKey')).toBe(false);
  });

  it('reports a batch item failure when the dead-letter send fails, so nothing is lost', async () => {
    const { options } = direct(async () => {
      throw new EffectivelyOnceError('DEAD_LETTER_FAILED', 'Sending to the dead-letter queue failed');
    });
    const { processBatch, logger, metrics } = setup(options);

    expect(await processBatch(sqsEvent(sqsRecord('m-1', { amount: 1 })))).toEqual(ids('m-1'));
    expect(logger.entries[0]).toMatchObject({
      outcome: 'permanent',
      code: 'MISSING_KEY',
      deadLetter: 'send-failed',
      deadLetterCode: 'DEAD_LETTER_FAILED',
      deadLetterErrorName: 'EffectivelyOnceError',
    });
    expect(metrics.published[0]?.counts).toEqual(counts({ permanent: 1 }));
  });

  it('names an unknown dead-letter failure DEAD_LETTER_FAILED', async () => {
    const { options } = direct(async () => {
      throw new Error('network');
    });
    const { processBatch, logger } = setup(options);

    await processBatch(sqsEvent(sqsRecord('m-1', { amount: 1 })));
    expect(logger.entries[0]).toMatchObject({
      deadLetterCode: 'DEAD_LETTER_FAILED',
      deadLetterErrorName: 'Error',
    });
  });
});

describe('batches', () => {
  it('reports the failed record of a FIFO group and every later record of that group without running them', async () => {
    const { processBatch, handled, logger } = setup({
      handle: (message) => {
        handled.push(message);
        if (message.body.id === 'a') throw new Error('a fails');
      },
    });

    const response = await processBatch(
      sqsEvent(
        sqsRecord('m-a', body('a'), { groupId: 'g-1' }),
        sqsRecord('m-x', body('x'), { groupId: 'g-2' }),
        sqsRecord('m-b', body('b'), { groupId: 'g-1' }),
        sqsRecord('m-c', body('c'), { groupId: 'g-1' }),
        sqsRecord('m-y', body('y'), { groupId: 'g-2' }),
      ),
    );

    expect(response).toEqual(ids('m-a', 'm-b', 'm-c'));
    expect(handled.map((message) => message.body.id).sort()).toEqual(['a', 'x', 'y']);
    expect(
      logger.entries.filter((entry) => entry.code === 'GROUP_BLOCKED').map((entry) => entry.messageId),
    ).toEqual(['m-b', 'm-c']);
    expect(logger.entries.find((entry) => entry.messageId === 'm-b')).toEqual({
      level: 'warn',
      message: 'Message failed; retrying later',
      ...line('m-b', 'b', {
        outcome: 'retry',
        code: 'GROUP_BLOCKED',
        reason: 'An earlier message of the same message group failed in this batch',
      }),
    });
  });

  it('blocks the rest of a FIFO group behind a permanent failure left for redrive, but not behind one sent directly', async () => {
    const batch = sqsEvent(
      sqsRecord('m-1', { amount: 1 }, { groupId: 'g' }),
      sqsRecord('m-2', body('o-2'), { groupId: 'g' }),
    );
    const redrive = setup();
    const direct = setup({ deadLetter: 'direct', deadLetterSender: { send: async () => undefined } });

    expect(await redrive.processBatch(batch)).toEqual(ids('m-1', 'm-2'));
    expect(await direct.processBatch(batch)).toEqual(ids());
    expect(direct.handled.map((message) => message.messageId)).toEqual(['m-2']);
  });

  it('runs the records of one FIFO group one at a time, in order', async () => {
    const events: string[] = [];
    const { processBatch } = setup({
      concurrency: 10,
      handle: async (message) => {
        events.push(`start ${message.body.id}`);
        await settle();
        events.push(`end ${message.body.id}`);
      },
    });

    await processBatch(
      sqsEvent(
        sqsRecord('m-1', body('1'), { groupId: 'g' }),
        sqsRecord('m-2', body('2'), { groupId: 'g' }),
        sqsRecord('m-3', body('3'), { groupId: 'g' }),
      ),
    );

    expect(events).toEqual(['start 1', 'end 1', 'start 2', 'end 2', 'start 3', 'end 3']);
  });

  it('never runs more records at once than the concurrency option allows', async () => {
    let active = 0;
    let peak = 0;
    const { processBatch } = setup({
      concurrency: 3,
      handle: async () => {
        active += 1;
        peak = Math.max(peak, active);
        await settle();
        active -= 1;
      },
    });

    const response = await processBatch(
      sqsEvent(...Array.from({ length: 12 }, (_, index) => sqsRecord(`m-${index}`, body(`o-${index}`)))),
    );

    expect(response).toEqual(ids());
    expect(peak).toBe(3);
  });

  it('reports records that could not start before the deadline as failures, without running them', async () => {
    const { processBatch, clock, handled, logger } = setup({
      concurrency: 1,
      deadlineMarginMillis: 2000,
      handle: (message) => {
        handled.push(message);
        clock.advance(1000);
      },
    });
    const context = { getRemainingTimeInMillis: () => 4000 };

    const response = await processBatch(
      sqsEvent(sqsRecord('m-1', body('1')), sqsRecord('m-2', body('2')), sqsRecord('m-3', body('3'))),
      context,
    );

    expect(response).toEqual(ids('m-3'));
    expect(handled.map((message) => message.messageId)).toEqual(['m-1', 'm-2']);
    expect(logger.entries).toEqual([
      {
        level: 'warn',
        message: 'Message failed; retrying later',
        ...line('m-3', '3', {
          outcome: 'retry',
          code: 'DEADLINE',
          reason: 'Not started: too close to the Lambda timeout',
        }),
      },
    ]);
  });

  it('runs a key twice in one batch only once: the second record waits, then is a duplicate', async () => {
    const gate = deferred();
    const { processBatch, store, handled, metrics } = setup({
      handle: async (message) => {
        handled.push(message);
        await gate.promise;
      },
    });

    const pending = processBatch(sqsEvent(sqsRecord('m-1', body('o-1')), sqsRecord('m-2', body('o-1'))));
    await settle();
    expect(store.calls.map((call) => call.method)).toEqual(['insert']);
    gate.resolve();

    expect(await pending).toEqual(ids());
    expect(handled.map((message) => message.messageId)).toEqual(['m-1']);
    expect(store.calls.map((call) => call.method)).toEqual(['insert', 'insert']);
    expect(metrics.published[0]?.counts).toEqual(counts({ processed: 1, duplicate: 1 }));
  });

  it('runs the second record of a key after the first one failed, so the effect still happens once', async () => {
    let calls = 0;
    const { processBatch } = setup({
      handle: () => {
        calls += 1;
        if (calls === 1) throw new Error('first fails');
      },
    });

    const response = await processBatch(
      sqsEvent(sqsRecord('m-1', body('o-1')), sqsRecord('m-2', body('o-1'))),
    );

    expect(response).toEqual(ids('m-1'));
    expect(calls).toBe(2);
  });

  it('reports the second record of a key with another payload in the same batch as a mismatch', async () => {
    const { processBatch, metrics } = setup();

    const response = await processBatch(
      sqsEvent(sqsRecord('m-1', body('o-1')), sqsRecord('m-2', body('o-1', { amount: 2 }))),
    );

    expect(response).toEqual(ids('m-2'));
    expect(metrics.published[0]?.counts).toEqual(counts({ processed: 1, mismatch: 1 }));
  });

  it('answers an empty batch with no failures and still publishes its counts', async () => {
    const { processBatch, metrics } = setup();

    expect(await processBatch(sqsEvent())).toEqual(ids());
    expect(metrics.published).toEqual([{ consumer: 'orders', counts: counts({}) }]);
  });

  it('throws INVALID_EVENT for an event that is not an SQS batch', async () => {
    const { processBatch } = setup();

    await expect(processBatch({} as never)).rejects.toMatchObject({ code: 'INVALID_EVENT' });
  });
});

describe('observability', () => {
  it('logs a metrics sink that throws and still answers the batch: metrics never fail the work they count', async () => {
    const failing = {
      publish: () => {
        throw new TypeError('sink down');
      },
    };
    const { processBatch, logger, handled } = setup({ metrics: failing });

    expect(await processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))))).toEqual({ batchItemFailures: [] });
    expect(handled).toHaveLength(1);
    expect(logger.entries).toContainEqual({
      level: 'error',
      message: 'Publishing metrics failed',
      consumer: 'orders',
      errorName: 'TypeError',
    });
  });

  it('logs the SHA-256 of the scoped key instead of the key when logKeys is hash', async () => {
    const { processBatch, logger } = setup({ logKeys: 'hash' });
    await processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))));
    await processBatch(sqsEvent(sqsRecord('m-2', body('o-1'))));

    expect(logger.entries).toEqual([
      {
        level: 'info',
        message: 'Duplicate message acknowledged',
        consumer: 'orders',
        scopedKeyHash: sha256Hex('orders#o-1'),
        messageId: 'm-2',
        correlationId: 'm-2',
        outcome: 'duplicate',
      },
    ]);
  });

  it('logs processed messages at debug level and nothing at silent', async () => {
    const debug = setup({ logLevel: 'debug' });
    const silent = setup({ logLevel: 'silent', handle: () => Promise.reject(new Error('x')) });
    await debug.processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))));
    await silent.processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))));

    expect(debug.logger.entries).toEqual([
      { level: 'debug', message: 'Message processed', ...line('m-1', 'o-1', { outcome: 'processed' }) },
    ]);
    expect(silent.logger.entries).toEqual([]);
  });

  it('writes one Embedded Metric Format line per invocation with every count and the Consumer dimension', async () => {
    const lines: string[] = [];
    const { processBatch } = setup({
      metrics: createEmfMetricsSink({ namespace: 'Shop', write: (l) => lines.push(l) }),
    });

    await processBatch(sqsEvent(sqsRecord('m-1', body('o-1')), sqsRecord('m-2', body('o-1'))));

    expect(lines.map((l) => JSON.parse(l))).toEqual([
      {
        _aws: {
          Timestamp: T0,
          CloudWatchMetrics: [
            {
              Namespace: 'Shop',
              Dimensions: [['Consumer']],
              Metrics: [
                'Processed',
                'Duplicate',
                'InFlight',
                'Mismatch',
                'Stale',
                'Retry',
                'Permanent',
                'Takeover',
                'CacheHit',
              ].map((Name) => ({ Name, Unit: 'Count' })),
            },
          ],
        },
        Consumer: 'orders',
        Processed: 1,
        Duplicate: 1,
        InFlight: 0,
        Mismatch: 0,
        Stale: 0,
        Retry: 0,
        Permanent: 0,
        Takeover: 0,
        CacheHit: 0,
      },
    ]);
  });

  it('writes JSON log lines and metrics to standard output by default', async () => {
    const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      const processBatch = createSqsBatchHandler({
        consumer: 'orders',
        dedupKey: fromBody('id'),
        mode: marker(() => undefined),
        store: createMemoryStore(),
        clock: () => T0,
        metricNamespace: 'Shop',
      });
      await processBatch(sqsEvent(sqsRecord('m-1', undefined, { rawBody: 'nope' })));
      const written = write.mock.calls.map(([text]) => JSON.parse(String(text)));
      expect(written.map((entry) => entry.outcome ?? entry._aws.CloudWatchMetrics[0].Namespace)).toEqual([
        'permanent',
        'Shop',
      ]);
    } finally {
      write.mockRestore();
    }
  });

  it('keeps processing when the logger or the metrics sink throws', async () => {
    const { processBatch } = setup({
      logger: {
        log: () => {
          throw new Error('log sink down');
        },
      },
      metrics: {
        publish: () => {
          throw new Error('metrics down');
        },
      },
    });

    expect(await processBatch(sqsEvent(sqsRecord('m-1', { amount: 1 })))).toEqual(ids('m-1'));
  });

  it('publishes nothing with metrics: false', async () => {
    const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      const { processBatch } = setup({ metrics: false });
      await processBatch(sqsEvent(sqsRecord('m-1', body('o-1'))));
      expect(write).not.toHaveBeenCalled();
    } finally {
      write.mockRestore();
    }
  });
});
