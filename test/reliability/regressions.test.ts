/**
 * Regressions seen in peer idempotency libraries, replayed against `createSqsHandler` and the
 * real store on the local emulator:
 *
 * - a handler that mutates its input must not change the stored fingerprint (a library that
 *   hashes the payload after the handler ran flags its own redelivery as a different payload);
 * - a claim must not be left behind when the transaction (or the handler) aborted, or the
 *   retry is acknowledged as a duplicate and the effect is lost;
 * - a completed record without a stored result is still a completed record: the duplicate is
 *   acknowledged, not failed;
 * - a record past its TTL that the TTL sweeper has not deleted yet counts as absent (DynamoDB
 *   deletes expired items lazily, up to days later).
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { ENTITY_FINGERPRINT_ATTRIBUTE } from '../../lambda/core/contract';
import { fromBody, scopeKey } from '../../lambda/core/dedup-key';
import { PermanentError } from '../../lambda/core/errors';
import { fingerprintOf } from '../../lambda/core/fingerprint';
import type { LogEntry } from '../../lambda/core/logger';
import type { OutcomeCounts } from '../../lambda/core/metrics';
import type { DeadLetterMessage } from '../../lambda/dead-letter/dead-letter-message';
import { atomic } from '../../lambda/modes/atomic';
import { entity } from '../../lambda/modes/entity';
import { marker } from '../../lambda/modes/marker';
import { twoPhase } from '../../lambda/modes/two-phase';
import type { UnitOfWork } from '../../lambda/modes/unit-of-work';
import type { SqsBatchResponse, SqsRecord } from '../../lambda/sqs/sqs-event';
import { createSqsHandler } from '../../lambda/sqs/sqs-handler';
import { uniqueName } from '../support/aws';
import { sqsRecord } from '../support/fixtures';
import { attachFaultInjection, type DynamoRequest, type RequestFault } from './support/fault-injection';
import { createLocalClient, type LocalClient, readItems, useFileTables } from './support/tables';

const files = useFileTables('eo-regr');
const { inboxTable, businessTable, clients } = files;

type Mode = 'atomic' | 'marker' | 'entity' | 'two-phase';
type Body = { id: string; amount: number; note?: string; extra?: unknown };

const TTL_SECONDS = 3600;
let sequence = 0;

/** A fresh message with a JSON body. */
function record(body: unknown): SqsRecord {
  sequence += 1;
  return sqsRecord(`msg-${sequence}`, body);
}

/** A client whose requests `plan` may fault (throttle, conflict, lost response). */
function faultyClient(
  plan: (request: DynamoRequest) => RequestFault | undefined,
  maxAttempts = 1,
): LocalClient {
  const client = createLocalClient({ maxAttempts });
  clients.push(client);
  attachFaultInjection(client.document, { decide: plan, isCrashed: () => false, crash: () => undefined });
  return client;
}

interface Consumer {
  readonly name: string;
  readonly handle: (...records: SqsRecord[]) => Promise<SqsBatchResponse>;
  readonly logs: LogEntry[];
  readonly counts: OutcomeCounts[];
  readonly deadLetters: DeadLetterMessage[];
  /** The amounts the effect was performed with, in order (marker, two-phase). */
  readonly performed: number[];
  /** Effects performed, by dedup key: the business counter, or the two-phase effect calls. */
  effects(key: string): Promise<number>;
  inboxRecord(key: string): Promise<Record<string, unknown> | undefined>;
  readonly clock: { now: number };
}

interface ConsumerOptions {
  readonly mode: Mode;
  /** Runs first in the handler, with the message body (to mutate it, or to fail). */
  readonly before?: (body: Body) => void;
  /** Business writes next to the counter (atomic mode). */
  readonly extraWrites?: (scopedKey: string, unitOfWork: UnitOfWork) => void;
  /** Fails the effect (marker, two-phase) this many times, before it happens. */
  readonly failEffects?: number;
  /** Loses the answer of the effect (two-phase) this many times: it happened, then it throws. */
  readonly loseAnswers?: number;
  readonly client?: LocalClient;
  readonly storeResults?: boolean;
}

function createConsumer(options: ConsumerOptions): Consumer {
  const name = uniqueName(`regr-${options.mode}`);
  const logs: LogEntry[] = [];
  const counts: OutcomeCounts[] = [];
  const deadLetters: DeadLetterMessage[] = [];
  const calls = new Map<string, number>();
  const clock = { now: Date.now() };
  const client = options.client ?? createLocalClient({ maxAttempts: 3 });
  if (options.client === undefined) clients.push(client);
  const performed: number[] = [];
  let failures = options.failEffects ?? 0;
  let lostAnswers = options.loseAnswers ?? 0;
  const effect = (key: string, amount: number) => {
    if (failures > 0) {
      failures -= 1;
      throw new Error('the effect failed (injected)');
    }
    calls.set(key, (calls.get(key) ?? 0) + 1);
    performed.push(amount);
    if (lostAnswers > 0) {
      lostAnswers -= 1;
      throw new Error('the downstream service timed out after applying the effect (injected)');
    }
  };
  const counter = (scopedKey: string, amount: number) => ({
    TableName: businessTable,
    Key: { pk: scopedKey },
    UpdateExpression: 'ADD effects :one SET amount = :amount',
    ExpressionAttributeValues: { ':one': 1, ':amount': amount },
  });
  const common = {
    consumer: name,
    client: client.document,
    tableName: inboxTable,
    clock: () => clock.now,
    ttlSeconds: TTL_SECONDS,
    dedupKey: fromBody<Body>((body) => body.id),
    logger: { log: (entry: LogEntry) => logs.push(entry) },
    logLevel: 'debug' as const,
    metrics: { publish: (published: Readonly<OutcomeCounts>) => void counts.push({ ...published }) },
    deadLetter: 'direct' as const,
    deadLetterSender: { send: async (message: DeadLetterMessage) => void deadLetters.push(message) },
  };
  const handler =
    options.mode === 'atomic'
      ? createSqsHandler<Body>({
          ...common,
          mode: atomic((message, unitOfWork) => {
            options.before?.(message.body);
            unitOfWork.update(counter(message.scopedKey, message.body.amount));
            options.extraWrites?.(message.scopedKey, unitOfWork);
          }),
        })
      : options.mode === 'marker'
        ? createSqsHandler<Body>({
            ...common,
            mode: marker((message) => {
              options.before?.(message.body);
              effect(message.dedupKey, message.body.amount);
            }),
          })
        : options.mode === 'entity'
          ? createSqsHandler<Body>({
              ...common,
              mode: entity((message) => {
                options.before?.(message.body);
                return {
                  tableName: businessTable,
                  keyAttribute: 'pk',
                  item: { pk: message.scopedKey, amount: message.body.amount, effects: 1 },
                };
              }),
            })
          : createSqsHandler<Body>({
              ...common,
              mode: twoPhase({
                handle: async (message, effects) => {
                  options.before?.(message.body);
                  await effects.run(() => {
                    effect(message.dedupKey, message.body.amount);
                    return { charged: message.body.amount };
                  });
                },
                leaseMillis: 30_000,
              }),
              ...(options.storeResults ? { storeResults: true } : {}),
            });
  return {
    name,
    handle: (...records) => handler({ Records: records }),
    logs,
    counts,
    deadLetters,
    performed,
    clock,
    async effects(key) {
      if (options.mode === 'marker' || options.mode === 'two-phase') return calls.get(key) ?? 0;
      const pk = scopeKey(name, key);
      const item = (await readItems(files.admin.document, businessTable, [pk])).get(pk);
      return item === undefined ? 0 : Number(item.effects);
    },
    async inboxRecord(key) {
      const pk = scopeKey(name, key);
      const table = options.mode === 'entity' ? businessTable : inboxTable;
      return (await readItems(files.admin.document, table, [pk])).get(pk);
    },
  };
}

const outcomesOf = (consumer: Consumer) =>
  consumer.logs.flatMap((entry) => (entry.outcome ? [entry.outcome] : []));
const storedFingerprint = (mode: Mode, item: Record<string, unknown> | undefined) =>
  item?.[mode === 'entity' ? ENTITY_FINGERPRINT_ATTRIBUTE : 'fingerprint'];

describe('a handler that mutates its input', () => {
  it.each<Mode>(['atomic', 'marker', 'entity', 'two-phase'])(
    '%s: stores the fingerprint of the payload as delivered and acknowledges its redelivery as a duplicate',
    async (mode) => {
      const consumer = createConsumer({
        mode,
        before: (body) => {
          body.amount += 1000;
          body.note = 'rewritten by the handler';
          body.extra = { added: true };
        },
      });
      const body = { id: 'mutated', amount: 7, note: 'as sent' };

      const first = await consumer.handle(record(body));
      const second = await consumer.handle(record(body));

      expect([first, second]).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }]);
      expect(outcomesOf(consumer)).toEqual(['processed', 'duplicate']);
      expect(storedFingerprint(mode, await consumer.inboxRecord('mutated'))).toBe(fingerprintOf(body));
      expect(await consumer.effects('mutated')).toBe(1);
    },
  );
});

describe('a claim left behind after an aborted transaction', () => {
  it('leaves no marker when a business write’s condition fails, and dead-letters the message as BUSINESS_CONDITION_FAILED', async () => {
    const consumer = createConsumer({
      mode: 'atomic',
      extraWrites: (scopedKey, unitOfWork) =>
        unitOfWork.conditionCheck({
          TableName: businessTable,
          Key: { pk: `${scopedKey}#stock` },
          ConditionExpression: 'attribute_exists(pk)',
        }),
    });

    expect(await consumer.handle(record({ id: 'no-stock', amount: 1 }))).toEqual({ batchItemFailures: [] });

    expect(consumer.deadLetters.map((letter) => letter.code)).toEqual(['BUSINESS_CONDITION_FAILED']);
    expect(await consumer.inboxRecord('no-stock')).toBeUndefined();
    expect(await consumer.effects('no-stock')).toBe(0);
  });

  it('leaves no marker when DynamoDB rejects a business write, and dead-letters the message as VALIDATION', async () => {
    const consumer = createConsumer({
      mode: 'atomic',
      extraWrites: (scopedKey, unitOfWork) =>
        unitOfWork.update({
          TableName: businessTable,
          Key: { pk: `${scopedKey}#audit` },
          // A number added to a string attribute: DynamoDB cancels the whole transaction.
          UpdateExpression: 'ADD pk :one',
          ExpressionAttributeValues: { ':one': 1 },
        }),
    });

    expect(await consumer.handle(record({ id: 'invalid-write', amount: 1 }))).toEqual({
      batchItemFailures: [],
    });

    expect(consumer.deadLetters.map((letter) => letter.code)).toEqual(['VALIDATION']);
    expect(await consumer.inboxRecord('invalid-write')).toBeUndefined();
    expect(await consumer.effects('invalid-write')).toBe(0);
  });

  it('leaves no marker when the transaction is cancelled by a conflict, so the redelivery commits the effect once', async () => {
    let conflicts = 1;
    const client = faultyClient((request) =>
      request.operation === 'TransactWriteItems' && conflicts-- > 0 ? { kind: 'conflict' } : undefined,
    );
    const consumer = createConsumer({ mode: 'atomic', client });
    const message = record({ id: 'conflicted', amount: 1 });

    const first = await consumer.handle(message);
    const marker = await consumer.inboxRecord('conflicted');
    const second = await consumer.handle(message);

    expect(first).toEqual({ batchItemFailures: [{ itemIdentifier: message.messageId }] });
    expect(consumer.logs[0]).toMatchObject({ outcome: 'retry', code: 'TRANSACTION_CONFLICT' });
    expect(marker).toBeUndefined();
    expect(second).toEqual({ batchItemFailures: [] });
    expect(await consumer.effects('conflicted')).toBe(1);
  });

  // Both modes keep the claim with its fingerprint and an ended lease: the effect may have
  // happened, so the key stays bound to its payload; the same payload takes it at once.
  it.each<Mode>(['marker', 'two-phase'])(
    '%s: releases the claim when the effect fails, so the redelivery runs the effect once',
    async (mode) => {
      const consumer = createConsumer({ mode, failEffects: 1 });
      const message = record({ id: 'failed-effect', amount: 1 });

      const first = await consumer.handle(message);
      const left = await consumer.inboxRecord('failed-effect');
      const second = await consumer.handle(message);

      expect(first).toEqual({ batchItemFailures: [{ itemIdentifier: message.messageId }] });
      expect(consumer.logs.find((entry) => entry.outcome)).toMatchObject({
        outcome: 'retry',
        code: 'HANDLER_FAILED',
      });
      expect(left).toMatchObject({
        status: 'IN_PROGRESS',
        fingerprint: fingerprintOf({ id: 'failed-effect', amount: 1 }),
        leaseExpiresAt: 0,
      });
      expect(second).toEqual({ batchItemFailures: [] });
      expect(outcomesOf(consumer)).toEqual(['retry', 'processed']);
      expect(consumer.counts.reduce((sum, published) => sum + published.takeover, 0)).toBe(0);
      expect(await consumer.effects('failed-effect')).toBe(1);
      expect(await consumer.inboxRecord('failed-effect')).toMatchObject({ status: 'COMPLETED' });
    },
  );

  it('dead-letters a permanent handler failure in atomic mode without leaving a marker', async () => {
    const consumer = createConsumer({
      mode: 'atomic',
      before: () => {
        throw new PermanentError('the order is cancelled');
      },
    });

    expect(await consumer.handle(record({ id: 'cancelled', amount: 1 }))).toEqual({ batchItemFailures: [] });

    expect(consumer.deadLetters).toMatchObject([{ code: 'PERMANENT', reason: 'the order is cancelled' }]);
    expect(await consumer.inboxRecord('cancelled')).toBeUndefined();
  });
});

/** Writes an inbox record directly, as another version of the toolkit (or an operator) left it. */
async function seedInbox(consumer: Consumer, key: string, item: Record<string, unknown>): Promise<void> {
  await files.admin.document.send(
    new PutCommand({ TableName: inboxTable, Item: { pk: scopeKey(consumer.name, key), ...item } }),
  );
}

describe('a completed record without a result', () => {
  const body = { id: 'no-result', amount: 3 };

  it.each<{ label: string; item: (fingerprint: string, nowSeconds: number) => Record<string, unknown> }>([
    {
      label: 'no result',
      item: (fingerprint, nowSeconds) => ({
        status: 'COMPLETED',
        fingerprint,
        expiresAt: nowSeconds + 60,
        consumer: 'x',
        committedAt: 1,
      }),
    },
    {
      label: 'no result and no commit time',
      item: (fingerprint, nowSeconds) => ({
        status: 'COMPLETED',
        fingerprint,
        expiresAt: nowSeconds + 60,
        consumer: 'x',
      }),
    },
    {
      label: 'no result, no consumer, no commit time',
      item: (fingerprint, nowSeconds) => ({ status: 'COMPLETED', fingerprint, expiresAt: nowSeconds + 60 }),
    },
    {
      label: 'no status either (read as completed: "never again")',
      item: (fingerprint, nowSeconds) => ({ fingerprint, expiresAt: nowSeconds + 60 }),
    },
  ])('acknowledges the duplicate of a completed record with $label', async ({ item }) => {
    const consumer = createConsumer({ mode: 'atomic' });
    await seedInbox(consumer, body.id, item(fingerprintOf(body), Math.floor(consumer.clock.now / 1000)));

    expect(await consumer.handle(record(body))).toEqual({ batchItemFailures: [] });

    expect(outcomesOf(consumer)).toEqual(['duplicate']);
    expect(await consumer.effects(body.id)).toBe(0);
  });

  it('two-phase with stored results: acknowledges the duplicate of a completed effect whose result is absent', async () => {
    const consumer = createConsumer({ mode: 'two-phase', storeResults: true });
    const nowSeconds = Math.floor(consumer.clock.now / 1000);
    await seedInbox(consumer, body.id, {
      status: 'COMPLETED',
      fingerprint: fingerprintOf(body),
      expiresAt: nowSeconds + 60,
      consumer: consumer.name,
      owner: 'an-earlier-owner',
    });

    expect(await consumer.handle(record(body))).toEqual({ batchItemFailures: [] });

    expect(outcomesOf(consumer)).toEqual(['duplicate']);
    expect(await consumer.effects(body.id)).toBe(0);
  });
});

describe('a record past its TTL that the sweeper has not deleted yet', () => {
  it.each<Mode>(['atomic', 'marker', 'two-phase'])(
    '%s: treats an expired record as absent, processes the message and replaces the record',
    async (mode) => {
      const consumer = createConsumer({ mode });
      const nowSeconds = Math.floor(consumer.clock.now / 1000);
      const body = { id: 'expired', amount: 4 };
      // Another payload, and in progress: a live record like it would be a mismatch.
      await seedInbox(consumer, body.id, {
        status: 'IN_PROGRESS',
        fingerprint: 'f'.repeat(64),
        expiresAt: nowSeconds - 1,
        consumer: consumer.name,
        owner: 'gone',
        leaseExpiresAt: consumer.clock.now + 3_600_000,
      });

      expect(await consumer.handle(record(body))).toEqual({ batchItemFailures: [] });

      expect(outcomesOf(consumer)).toEqual(['processed']);
      expect(consumer.counts.reduce((sum, published) => sum + published.takeover, 0)).toBe(0);
      expect(await consumer.effects(body.id)).toBe(1);
      expect(await consumer.inboxRecord(body.id)).toMatchObject({
        status: 'COMPLETED',
        fingerprint: fingerprintOf(body),
        expiresAt: nowSeconds + TTL_SECONDS,
      });
    },
  );

  it.each([
    { expiresIn: 0, outcome: 'processed' },
    { expiresIn: 1, outcome: 'mismatch' },
  ])(
    'reads a record expiring $expiresIn s from now as $outcome (expiresAt <= now counts as absent)',
    async ({ expiresIn, outcome }) => {
      const consumer = createConsumer({ mode: 'atomic' });
      const nowSeconds = Math.floor(consumer.clock.now / 1000);
      await seedInbox(consumer, 'boundary', {
        status: 'COMPLETED',
        fingerprint: 'f'.repeat(64),
        expiresAt: nowSeconds + expiresIn,
        consumer: consumer.name,
      });

      await consumer.handle(record({ id: 'boundary', amount: 1 }));

      expect(outcomesOf(consumer)).toEqual([outcome]);
    },
  );

  it('entity mode: treats a business item with a numeric expiresAt in the past as absent', async () => {
    const consumer = createConsumer({ mode: 'entity' });
    const nowSeconds = Math.floor(consumer.clock.now / 1000);
    const body = { id: 'expired-entity', amount: 9 };
    const pk = scopeKey(consumer.name, body.id);
    await files.admin.document.send(
      new PutCommand({
        TableName: businessTable,
        Item: { pk, amount: 1, [ENTITY_FINGERPRINT_ATTRIBUTE]: 'f'.repeat(64), expiresAt: nowSeconds - 10 },
      }),
    );

    expect(await consumer.handle(record(body))).toEqual({ batchItemFailures: [] });

    expect(outcomesOf(consumer)).toEqual(['processed']);
    expect(await consumer.inboxRecord(body.id)).toEqual({
      pk,
      amount: 9,
      effects: 1,
      [ENTITY_FINGERPRINT_ATTRIBUTE]: fingerprintOf(body),
    });
  });
});

describe('a lost response to a claim (not a peer regression: found by the fault-injection suite)', () => {
  const lostOnce = () => {
    let lost = 1;
    return (request: DynamoRequest): RequestFault | undefined =>
      request.operation === 'PutItem' && lost-- > 0 ? { kind: 'lost-response' } : undefined;
  };

  // An SDK retry of a marker put whose response was lost meets the invocation's own marker: its
  // owner token tells it from another delivery's, so the effect still runs (no crash happened,
  // so this is not the documented at-most-once case).
  it('marker mode: runs the effect when the SDK retry of a marker put whose response was lost meets its own marker', async () => {
    const consumer = createConsumer({ mode: 'marker', client: faultyClient(lostOnce(), 3) });

    expect(await consumer.handle(record({ id: 'lost-marker', amount: 1 }))).toEqual({
      batchItemFailures: [],
    });

    expect(await consumer.effects('lost-marker')).toBe(1);
  });

  it('atomic mode: commits once when the SDK retries a commit whose response was lost (same ClientRequestToken)', async () => {
    let lost = 1;
    const client = faultyClient(
      (request) =>
        request.operation === 'TransactWriteItems' && lost-- > 0 ? { kind: 'lost-response' } : undefined,
      3,
    );
    const consumer = createConsumer({ mode: 'atomic', client });

    expect(await consumer.handle(record({ id: 'lost-commit', amount: 1 }))).toEqual({
      batchItemFailures: [],
    });

    expect(outcomesOf(consumer)).toEqual(['processed']);
    expect(await consumer.effects('lost-commit')).toBe(1);
  });

  // Likewise the SDK retry of a two-phase claim meets the claim's own owner token: the claim is
  // this invocation's, so the effect runs now instead of waiting for the lease to end.
  it('two-phase: runs the effect at once when the SDK retry of a claim whose response was lost meets its own claim', async () => {
    const consumer = createConsumer({ mode: 'two-phase', client: faultyClient(lostOnce(), 3) });
    const message = record({ id: 'lost-claim', amount: 1 });

    const first = await consumer.handle(message);
    const again = await consumer.handle(message);

    expect([first, again]).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }]);
    expect(outcomesOf(consumer)).toEqual(['processed', 'duplicate']);
    expect(consumer.counts.reduce((sum, published) => sum + published.takeover, 0)).toBe(0);
    expect(await consumer.effects('lost-claim')).toBe(1);
    expect(await consumer.inboxRecord('lost-claim')).toMatchObject({ status: 'COMPLETED' });
  });
});

describe('a lost response to a two-phase complete (found by review of the owner-token rule)', () => {
  // The SDK retry of the fenced UpdateItem fails its condition: the record is already COMPLETED,
  // by this claim. Its owner token, returned with the failed condition, says the completion was
  // this one, so the message is processed instead of retried as LEASE_LOST and redelivered.
  it('two-phase: acknowledges the message when the SDK retry of a complete whose response was lost meets its own completed record', async () => {
    let lost = 1;
    const requests: string[] = [];
    const client = faultyClient((request) => {
      requests.push(request.operation);
      return request.operation === 'UpdateItem' && lost-- > 0 ? { kind: 'lost-response' } : undefined;
    }, 3);
    const consumer = createConsumer({ mode: 'two-phase', client });
    const message = record({ id: 'lost-complete', amount: 1 });

    expect(await consumer.handle(message)).toEqual({ batchItemFailures: [] });

    expect(outcomesOf(consumer)).toEqual(['processed']);
    // Claim and complete, each sent once by the toolkit (the SDK retried the complete itself).
    expect(requests).toEqual(['PutItem', 'UpdateItem']);
    expect(await consumer.effects('lost-complete')).toBe(1);
    expect(await consumer.inboxRecord('lost-complete')).toMatchObject({ status: 'COMPLETED' });
  });
});

describe('a key reused with another payload after a claim was released', () => {
  // The handler may have done part of its effect before it failed, so the released marker keeps
  // the payload's fingerprint, as a two-phase claim does: the retry of the same payload claims it
  // in one request, another payload reusing the key is dead-lettered.
  it('marker mode: dead-letters a key reused with another payload after the first payload’s handler failed, and runs the first on its retry', async () => {
    const consumer = createConsumer({ mode: 'marker', failEffects: 1 });
    const first = record({ id: 'marker-reused-after-release', amount: 1 });
    const other = record({ id: 'marker-reused-after-release', amount: 2 });

    const responses = [
      await consumer.handle(first),
      await consumer.handle(other),
      await consumer.handle(first),
    ];

    expect(responses).toEqual([
      { batchItemFailures: [{ itemIdentifier: first.messageId }] },
      { batchItemFailures: [] },
      { batchItemFailures: [] },
    ]);
    expect(consumer.performed).toEqual([1]);
    expect(consumer.deadLetters.map((letter) => [letter.sourceMessageId, letter.code])).toEqual([
      [other.messageId, 'PAYLOAD_MISMATCH'],
    ]);
    expect(outcomesOf(consumer)).toEqual(['retry', 'mismatch', 'processed']);
    expect(await consumer.inboxRecord('marker-reused-after-release')).toMatchObject({
      status: 'COMPLETED',
      fingerprint: fingerprintOf({ id: 'marker-reused-after-release', amount: 1 }),
    });
  });

  // The effect may have happened with its answer lost, so the released claim keeps the payload's
  // fingerprint: another payload reusing the key must not run (downstream it would meet the
  // same derived idempotency key with another payload), and the first payload completes later.
  it('two-phase: dead-letters a key reused with another payload after the first payload’s effect ran and its answer was lost', async () => {
    const consumer = createConsumer({ mode: 'two-phase', loseAnswers: 1 });
    const first = record({ id: 'reused-after-release', amount: 1 });
    const other = record({ id: 'reused-after-release', amount: 2 });

    await consumer.handle(first);
    await consumer.handle(other);
    const again = await consumer.handle(first);

    expect(consumer.performed).toEqual([1, 1]);
    expect(consumer.deadLetters.map((letter) => [letter.sourceMessageId, letter.code])).toEqual([
      [other.messageId, 'PAYLOAD_MISMATCH'],
    ]);
    expect(again).toEqual({ batchItemFailures: [] });
    expect(await consumer.inboxRecord('reused-after-release')).toMatchObject({
      status: 'COMPLETED',
      fingerprint: fingerprintOf({ id: 'reused-after-release', amount: 1 }),
    });
  });
});
