/**
 * Two-phase mode against the local endpoint: every transition of a claim (claim, complete,
 * release, live lease, takeover, fencing), a crash between the effect and its completion with a
 * downstream HTTP service that deduplicates on the propagated `Idempotency-Key`, concurrent
 * deliveries, a partial failure across named effects, stale versions, stored results, the
 * heartbeat, and the request count of each path. Time moves only through the injected clock.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { fromBody, scopeKey } from '../../lambda/core/dedup-key';
import { deriveEffectKeys } from '../../lambda/core/effect-keys';
import { readConstructSettings } from '../../lambda/core/environment';
import type { Message } from '../../lambda/core/message';
import type { InboxRecord } from '../../lambda/core/store-port';
import { atomic } from '../../lambda/modes/atomic';
import { type Effects, type TwoPhaseOptions, twoPhase } from '../../lambda/modes/two-phase';
import { createSqsHandler, type SqsHandlerOptions } from '../../lambda/sqs/sqs-handler';
import { createDynamoDbStore } from '../../lambda/store/dynamodb-store';
import { uniqueName } from '../support/aws';
import {
  captureLogger,
  captureMetrics,
  counts,
  createLocalResources,
  deferred,
  type ManualClock,
  manualClock,
  sqsEvent,
  sqsRecord,
} from '../support/fixtures';
import { attachRequestCounter } from '../support/request-counter';

const local = createLocalResources();
const inboxTable = uniqueName('eo-two-phase-inbox');
const customersTable = uniqueName('eo-two-phase-customers');
const LEASE = 30_000;
const context = { getRemainingTimeInMillis: () => 60_000 };

/** A fresh document client on the local endpoint; `crashOn` makes that operation fail at the transport. */
function newClient(crashOn?: { operation: string; armed: boolean }): DynamoDBDocumentClient {
  const client = local.documentClient({ maxAttempts: 1 });
  if (crashOn) {
    client.middlewareStack.add(
      (next, commandContext) => async (args) => {
        if (crashOn.armed && commandContext.commandName === `${crashOn.operation}Command`) {
          crashOn.armed = false;
          throw Object.assign(new Error('socket hang up (the invocation died here)'), { code: 'ECONNRESET' });
        }
        return next(args);
      },
      { step: 'initialize', name: 'crashInjection' },
    );
  }
  return client;
}

const readItem = (tableName: string, pk: string) => local.readItem(tableName, { pk });

/** The downstream service: records every request, and answers a repeated Idempotency-Key with the first answer. */
interface Downstream {
  readonly url: string;
  readonly requests: { path: string; key: string | undefined }[];
  /** Effects actually applied: one per distinct key and path. */
  readonly applied: Map<string, { notificationId: string }>;
  /** The next request to `path` answers `status` without applying anything. */
  failNext(path: string, status: number): void;
  close(): Promise<void>;
}

async function startDownstream(): Promise<Downstream> {
  const requests: { path: string; key: string | undefined }[] = [];
  const applied = new Map<string, { notificationId: string }>();
  const failures = new Map<string, number>();
  const readBody = async (request: IncomingMessage) => {
    for await (const _chunk of request) {
      // drain
    }
  };
  const server: Server = createServer(async (request, response) => {
    await readBody(request);
    const path = request.url ?? '/';
    const key = request.headers['idempotency-key'] as string | undefined;
    requests.push({ path, key });
    const failure = failures.get(path);
    if (failure !== undefined) {
      failures.delete(path);
      response.writeHead(failure).end();
      return;
    }
    const id = `${path}|${key}`;
    const replayed = applied.has(id);
    if (!replayed) applied.set(id, { notificationId: `n-${applied.size + 1}` });
    response
      .writeHead(replayed ? 200 : 201, {
        'content-type': 'application/json',
        ...(replayed ? { 'idempotent-replayed': 'true' } : {}),
      })
      .end(JSON.stringify(applied.get(id)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    applied,
    failNext: (path, status) => failures.set(path, status),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

let downstream: Downstream;

beforeAll(async () => {
  await local.createTable(inboxTable);
  await local.createTable(customersTable);
  downstream = await startDownstream();
});

afterAll(async () => {
  await downstream?.close();
  await local.dispose();
});

afterEach(() => {
  vi.useRealTimers();
});

interface Payment {
  readonly paymentId: string;
  readonly amount: number;
}

let sequence = 0;
/** A dedup key no other test uses. */
const freshKey = (label: string) => `${label}-${++sequence}-${Date.now().toString(36)}`;

/** The options of `twoPhase({ ... })` a test may set besides `handle`. */
const MODE_OPTIONS: readonly string[] = [
  'leaseMillis',
  'heartbeat',
  'storeResults',
  'stuckAfterMillis',
  'maxTakeovers',
];

/**
 * A two-phase handler on the local endpoint with its own client, clock, logs and metrics; the
 * two-phase options among `options` go to the mode (an explicit `leaseMillis: undefined` too).
 */
function setupTwoPhase(
  clock: ManualClock,
  handle: (message: Message<Payment>, effects: Effects) => unknown,
  given: Partial<SqsHandlerOptions<Payment>> &
    Partial<Omit<TwoPhaseOptions<Payment>, 'handle'>> & { client?: DynamoDBDocumentClient } = {},
) {
  const entries = Object.entries(given);
  const modeOptions = Object.fromEntries(entries.filter(([key]) => MODE_OPTIONS.includes(key)));
  const options = Object.fromEntries(entries.filter(([key]) => !MODE_OPTIONS.includes(key))) as typeof given;
  const client = options.client ?? newClient();
  const logger = captureLogger();
  const metrics = captureMetrics();
  const counter = attachRequestCounter(client);
  const processBatch = createSqsHandler<Payment>({
    consumer: 'payments',
    dedupKey: fromBody('paymentId'),
    client,
    tableName: inboxTable,
    clock,
    logger,
    metrics,
    mode: twoPhase<Payment>({ handle, leaseMillis: LEASE, ...modeOptions }),
    ...options,
  } as SqsHandlerOptions<Payment>);
  return { processBatch, logger, metrics, counter };
}

/** An effect that counts its runs and holds every run until `gate` is resolved. */
function gatedEffect() {
  const gate = deferred();
  const effect = {
    gate,
    runs: 0,
    handle: (_message: Message<Payment>, effects: Effects) =>
      effects.run(async () => {
        effect.runs += 1;
        await gate.promise;
      }),
  };
  return effect;
}

const deliver = (paymentId: string, messageId = `m-${paymentId}`) =>
  sqsEvent(sqsRecord(messageId, { paymentId, amount: 1250 }));
const failed = (...messageIds: string[]) => ({
  batchItemFailures: messageIds.map((itemIdentifier) => ({ itemIdentifier })),
});

async function post(path: string, idempotencyKey: string, signal?: AbortSignal) {
  const response = await fetch(`${downstream.url}${path}`, {
    method: 'POST',
    headers: { 'idempotency-key': idempotencyKey },
    body: '{}',
    signal: signal ?? null,
  });
  if (response.status >= 500) throw new Error(`downstream answered ${response.status}`);
  return (await response.json()) as { notificationId: string };
}

describe('two-phase mode on the local endpoint', () => {
  it('claims, runs and completes an effect with 2 requests, and answers a duplicate with 1, returning the stored result', async () => {
    const clock = manualClock(Date.now());
    const key = freshKey('pay');
    const results: unknown[] = [];
    const { processBatch, counter, metrics } = setupTwoPhase(
      clock,
      async (_message, effects) => {
        results.push(await effects.run('notify', ({ idempotencyKey }) => post('/notify', idempotencyKey)));
      },
      { storeResults: true },
    );

    expect(await processBatch(deliver(key), context)).toEqual(failed());
    expect(counter.counts()).toEqual({ PutItem: 1, UpdateItem: 1 });
    const pk = scopeKey('payments', key, 'notify');
    const stored = await readItem(inboxTable, pk);
    expect(stored).toEqual({
      pk,
      status: 'COMPLETED',
      fingerprint: expect.stringMatching(/^[0-9a-f]{64}$/),
      expiresAt: Math.floor(clock() / 1000) + 1_296_000,
      consumer: 'payments',
      committedAt: clock(),
      owner: expect.stringMatching(/^[0-9a-f-]{36}$/),
      result: JSON.stringify(results[0]),
    });

    counter.reset();
    clock.advance(1000);
    expect(await processBatch(deliver(key, 'm-resent'), context)).toEqual(failed());
    expect(counter.counts()).toEqual({ PutItem: 1 });
    expect(results).toEqual([results[0], results[0]]);
    expect(
      downstream.requests.filter((request) => request.key === deriveEffectKeys(pk).idempotencyKey),
    ).toHaveLength(1);
    expect(metrics.published.map((published) => published.counts)).toEqual([
      counts({ processed: 1 }),
      counts({ duplicate: 1 }),
    ]);
  });

  it('releases the claim when the effect fails (1 PutItem, 1 UpdateItem), keeping its fingerprint, so the retry runs it again', async () => {
    const clock = manualClock(Date.now());
    const key = freshKey('release');
    let attempts = 0;
    const { processBatch, counter } = setupTwoPhase(clock, (_message, effects) =>
      effects.run(() => {
        attempts += 1;
        if (attempts === 1) throw new Error('downstream 503');
      }),
    );

    expect(await processBatch(deliver(key), context)).toEqual(failed(`m-${key}`));
    expect(counter.counts()).toEqual({ PutItem: 1, UpdateItem: 1 });
    // The effect may have happened with its answer lost, so the key stays bound to its payload:
    // the released claim is kept with its lease ended, and only the same payload takes it again.
    expect(await readItem(inboxTable, `payments#${key}`)).toMatchObject({
      status: 'IN_PROGRESS',
      leaseExpiresAt: 0,
    });

    expect(await processBatch(deliver(key), context)).toEqual(failed());
    expect(attempts).toBe(2);
    expect(await readItem(inboxTable, `payments#${key}`)).toMatchObject({ status: 'COMPLETED' });
  });

  it('reports a live claim of another delivery as in flight with 1 request, without running the effect', async () => {
    const clock = manualClock(Date.now());
    const key = freshKey('live');
    const effect = gatedEffect();
    const first = setupTwoPhase(clock, effect.handle);
    const second = setupTwoPhase(clock, effect.handle);

    const running = first.processBatch(deliver(key), context);
    await vi.waitFor(() => expect(effect.runs).toBe(1));
    clock.advance(LEASE);
    expect(await second.processBatch(deliver(key, 'm-again'), context)).toEqual(failed('m-again'));
    expect(second.counter.counts()).toEqual({ PutItem: 1 });
    expect(second.metrics.published[0]?.counts).toEqual(counts({ inFlight: 1 }));

    effect.gate.resolve();
    expect(await running).toEqual(failed());
    expect(effect.runs).toBe(1);
  });

  it('takes over a claim whose lease ended; the old owner can then not complete it (LEASE_LOST)', async () => {
    const clock = manualClock(Date.now());
    const key = freshKey('takeover');
    const gate = deferred();
    const owners: string[] = [];
    let runs = 0;
    const handle = (_message: Message<Payment>, effects: Effects) =>
      effects.run(async ({ idempotencyKey }) => {
        owners.push(idempotencyKey);
        runs += 1;
        if (runs === 1) await gate.promise;
      });
    const old = setupTwoPhase(clock, handle);
    const successor = setupTwoPhase(clock, handle);

    const running = old.processBatch(deliver(key), context);
    await vi.waitFor(() => expect(runs).toBe(1));
    const claimed = await readItem(inboxTable, `payments#${key}`);
    clock.advance(LEASE + 1);

    expect(await successor.processBatch(deliver(key, 'm-redelivered'), context)).toEqual(failed());
    expect(successor.counter.counts()).toEqual({ PutItem: 2, UpdateItem: 1 });
    expect(successor.metrics.published[0]?.counts).toEqual(counts({ processed: 1, takeover: 1 }));
    const completed = await readItem(inboxTable, `payments#${key}`);
    expect(completed).toMatchObject({ status: 'COMPLETED', takeovers: 1, committedAt: claimed?.committedAt });
    expect(completed?.owner).not.toBe(claimed?.owner);

    gate.resolve();
    expect(await running).toEqual(failed(`m-${key}`));
    expect(old.logger.entries.at(-1)).toMatchObject({ outcome: 'retry', code: 'LEASE_LOST' });
    expect(await readItem(inboxTable, `payments#${key}`)).toEqual(completed);
    // Both runs passed the same key downstream.
    expect(new Set(owners).size).toBe(1);
  });

  it('takes over a claim whose lease ended; the old owner can then not release it', async () => {
    const clock = manualClock(Date.now());
    const key = freshKey('fenced-release');
    const oldGate = deferred();
    const successorGate = deferred();
    let runs = 0;
    const handle = (_message: Message<Payment>, effects: Effects) =>
      effects.run(async () => {
        runs += 1;
        if (runs === 1) {
          await oldGate.promise;
          throw new Error('the old owner fails late');
        }
        await successorGate.promise;
      });
    const old = setupTwoPhase(clock, handle);
    const successor = setupTwoPhase(clock, handle);

    const oldRun = old.processBatch(deliver(key), context);
    await vi.waitFor(() => expect(runs).toBe(1));
    clock.advance(LEASE + 1);
    const successorRun = successor.processBatch(deliver(key, 'm-redelivered'), context);
    await vi.waitFor(() => expect(runs).toBe(2));
    const held = await readItem(inboxTable, `payments#${key}`);

    oldGate.resolve();
    expect(await oldRun).toEqual(failed(`m-${key}`));
    expect(old.counter.counts()).toEqual({ PutItem: 1, UpdateItem: 1 });
    expect(await readItem(inboxTable, `payments#${key}`)).toEqual(held);
    expect(held).toMatchObject({ status: 'IN_PROGRESS', takeovers: 1 });

    successorGate.resolve();
    expect(await successorRun).toEqual(failed());
    expect(await readItem(inboxTable, `payments#${key}`)).toMatchObject({
      status: 'COMPLETED',
      owner: held?.owner,
    });
  });

  it('runs the effect again only after the lease of a crashed invocation ended, and the downstream sees it once', async () => {
    vi.stubEnv('EO_INBOX_TABLE', inboxTable);
    vi.stubEnv('EO_CONSUMER', 'payment-notifier');
    vi.stubEnv('DOWNSTREAM_URL', downstream.url);
    const { paymentNotifierOptions } = await import('../../lambda/example/payment-notifier');
    vi.unstubAllEnvs();
    const clock = manualClock(Date.now());
    const paymentId = freshKey('crash');
    const crash = { operation: 'UpdateItem', armed: true };
    const notifier = (client: DynamoDBDocumentClient) => {
      const logger = captureLogger();
      const metrics = captureMetrics();
      return {
        logger,
        metrics,
        processBatch: createSqsHandler({
          consumer: 'payment-notifier',
          client,
          tableName: inboxTable,
          clock,
          logger,
          metrics,
          // The lease the construct gives the function.
          environment: { EO_LEASE_MILLIS: String(LEASE) },
          ...paymentNotifierOptions(downstream.url),
        }),
      };
    };
    const event = sqsEvent(
      sqsRecord('m-1', { paymentId, status: 'CAPTURED', amount: 1250, currency: 'EUR' }),
    );
    const expectedKey = deriveEffectKeys(
      scopeKey('payment-notifier', `${paymentId}:CAPTURED`, 'notify'),
    ).idempotencyKey;
    const seen = () => downstream.requests.filter((request) => request.key === expectedKey);

    // The first invocation calls the downstream service, then dies before completing.
    const crashed = notifier(newClient(crash));
    expect(await crashed.processBatch(event, context)).toEqual(failed('m-1'));
    expect(seen()).toHaveLength(1);
    expect(await readItem(inboxTable, `payment-notifier/notify#${paymentId}:CAPTURED`)).toMatchObject({
      status: 'IN_PROGRESS',
    });

    // Redelivered while the lease runs: retried later, the effect does not run.
    const healthy = notifier(newClient());
    clock.advance(LEASE);
    expect(await healthy.processBatch(event, context)).toEqual(failed('m-1'));
    expect(seen()).toHaveLength(1);

    // Once the lease ended: taken over, run again with the same key, completed.
    clock.advance(1);
    expect(await healthy.processBatch(event, context)).toEqual(failed());
    expect(seen()).toHaveLength(2);
    expect(downstream.applied.get(`/notifications|${expectedKey}`)).toBeDefined();
    expect([...downstream.applied.keys()].filter((id) => id.endsWith(expectedKey))).toHaveLength(1);

    // And never again.
    expect(await healthy.processBatch(event, context)).toEqual(failed());
    expect(seen()).toHaveLength(2);
    expect(healthy.metrics.published.map((published) => published.counts)).toEqual([
      counts({ inFlight: 1 }),
      counts({ processed: 1, takeover: 1 }),
      counts({ duplicate: 1 }),
    ]);
    expect(await readItem(inboxTable, `payment-notifier/notify#${paymentId}:CAPTURED`)).toMatchObject({
      status: 'COMPLETED',
      takeovers: 1,
      result: JSON.stringify({
        status: 200,
        notificationId: downstream.applied.get(`/notifications|${expectedKey}`)?.notificationId,
      }),
    });
  });

  it('lets exactly one of 8 concurrent deliveries run the effect; the others are retried', async () => {
    const clock = manualClock(Date.now());
    const key = freshKey('concurrent');
    const effect = gatedEffect();
    const deliveries = Array.from({ length: 8 }, () => setupTwoPhase(clock, effect.handle));
    let settled = 0;

    const responses = deliveries.map((delivery, index) =>
      delivery.processBatch(deliver(key, `m-${index}`), context).finally(() => {
        settled += 1;
      }),
    );
    await vi.waitFor(() => expect(settled).toBe(7));
    effect.gate.resolve();
    const answered = await Promise.all(responses);

    expect(effect.runs).toBe(1);
    expect(answered.filter((response) => response.batchItemFailures.length === 0)).toHaveLength(1);
    const inFlight = deliveries.filter((delivery) => delivery.metrics.published[0]?.counts.inFlight === 1);
    expect(inFlight).toHaveLength(7);
  });

  it('after a partial failure across two named effects runs only the unfinished one', async () => {
    const clock = manualClock(Date.now());
    const key = freshKey('partial');
    const invoices: unknown[] = [];
    const { processBatch, counter, metrics } = setupTwoPhase(
      clock,
      async (_message, effects) => {
        invoices.push(
          await effects.run('invoice', ({ idempotencyKey }) => post('/invoices', idempotencyKey)),
        );
        await effects.run('stock', ({ idempotencyKey }) => post('/stock', idempotencyKey));
      },
      { storeResults: true },
    );
    downstream.failNext('/stock', 503);
    const keyOf = (effect: string) => deriveEffectKeys(scopeKey('payments', key, effect)).idempotencyKey;

    expect(await processBatch(deliver(key), context)).toEqual(failed(`m-${key}`));
    counter.reset();
    expect(await processBatch(deliver(key), context)).toEqual(failed());

    expect(counter.counts()).toEqual({ PutItem: 2, UpdateItem: 1 });
    expect(downstream.requests.filter((request) => request.key === keyOf('invoice'))).toHaveLength(1);
    expect(downstream.requests.filter((request) => request.key === keyOf('stock'))).toHaveLength(2);
    expect(invoices).toEqual([invoices[0], invoices[0]]);
    expect(await readItem(inboxTable, `payments/invoice#${key}`)).toMatchObject({ status: 'COMPLETED' });
    expect(await readItem(inboxTable, `payments/stock#${key}`)).toMatchObject({ status: 'COMPLETED' });
    expect(await readItem(inboxTable, `payments#${key}`)).toBeUndefined();
    expect(metrics.published.map((published) => published.counts)).toEqual([
      counts({ retry: 1 }),
      counts({ processed: 1 }),
    ]);
  });

  it('extends the lease with the heartbeat, so the claim is not taken over at its first lease end', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const clock = manualClock(Date.now());
    const start = clock();
    const key = freshKey('heartbeat');
    const effect = gatedEffect();
    const beating = setupTwoPhase(clock, effect.handle, { heartbeat: true });
    const other = setupTwoPhase(clock, effect.handle);

    const running = beating.processBatch(deliver(key), context);
    await vi.waitFor(() => expect(effect.runs).toBe(1));
    clock.advance(LEASE / 3);
    await vi.advanceTimersByTimeAsync(LEASE / 3);
    await vi.waitFor(() => expect(beating.counter.count('UpdateItem')).toBe(1));
    expect(await readItem(inboxTable, `payments#${key}`)).toMatchObject({
      leaseExpiresAt: start + LEASE / 3 + LEASE,
    });

    clock.advance((2 * LEASE) / 3 + 1);
    expect(await other.processBatch(deliver(key, 'm-again'), context)).toEqual(failed('m-again'));
    expect(effect.runs).toBe(1);

    effect.gate.resolve();
    expect(await running).toEqual(failed());
    expect(beating.counter.counts()).toEqual({ PutItem: 1, UpdateItem: 2 });
  });
});

describe('stale messages on the local endpoint', () => {
  interface CustomerChanged {
    readonly eventId: string;
    readonly customerId: string;
    readonly name: string;
    readonly version: number;
  }

  it('acknowledges an older version as stale and writes nothing, one transaction per message', async () => {
    const client = newClient();
    const counter = attachRequestCounter(client);
    const metrics = captureMetrics();
    const customerId = freshKey('customer');
    const processBatch = createSqsHandler<CustomerChanged>({
      consumer: 'customers',
      dedupKey: fromBody('eventId'),
      client,
      tableName: inboxTable,
      clock: manualClock(Date.now()),
      logger: captureLogger(),
      metrics,
      mode: atomic((message, unitOfWork) => {
        const { name, version } = message.body;
        unitOfWork.putIfNewer({
          TableName: customersTable,
          Item: { pk: message.body.customerId, name, version },
          versionAttribute: 'version',
        });
      }),
    });
    const changed = (version: number) =>
      sqsEvent(
        sqsRecord(`m-${version}`, {
          eventId: `${customerId}-v${version}`,
          customerId,
          name: `v${version}`,
          version,
        }),
      );

    expect(await processBatch(changed(2))).toEqual(failed());
    expect(await processBatch(changed(1))).toEqual(failed());

    expect(await readItem(customersTable, customerId)).toEqual({ pk: customerId, name: 'v2', version: 2 });
    expect(await readItem(inboxTable, `customers#${customerId}-v1`)).toBeUndefined();
    expect(await readItem(inboxTable, `customers#${customerId}-v2`)).toMatchObject({ status: 'COMPLETED' });
    expect(counter.counts()).toEqual({ TransactWriteItems: 2 });
    expect(metrics.published.map((published) => published.counts)).toEqual([
      counts({ processed: 1 }),
      counts({ stale: 1 }),
    ]);
  });
});

describe('leases: never zero, never absent, always milliseconds', () => {
  const noop = (_message: Message<Payment>, effects: Effects) => effects.run(() => undefined);

  it('rejects a claim whose lease is absent, zero or over before sending any request', async () => {
    const client = newClient();
    const counter = attachRequestCounter(client);
    const store = createDynamoDbStore({ client, tableName: inboxTable });
    const now = Date.now();
    const claim = (leaseExpiresAt: number | undefined): InboxRecord => ({
      pk: `payments#${freshKey('bad-lease')}`,
      status: 'IN_PROGRESS',
      fingerprint: 'fp',
      expiresAt: Math.floor(now / 1000) + 3600,
      consumer: 'payments',
      owner: 'owner-a',
      leaseExpiresAt,
    });

    for (const lease of [undefined, 0, now]) {
      await expect(store.claimLease(claim(lease), now)).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    }
    expect(counter.total()).toBe(0);
  });

  it('derives the lease from the invocation time left when leaseMillis is absent, and 15 minutes without a context', async () => {
    const clock = manualClock(Date.now());
    const keys = [freshKey('derived'), freshKey('no-context')];
    const { processBatch } = setupTwoPhase(clock, noop, { leaseMillis: undefined });
    const gate = deferred();
    const { processBatch: held } = setupTwoPhase(
      clock,
      (_message, effects) => effects.run(() => gate.promise),
      {
        leaseMillis: undefined,
      },
    );

    const running = held(deliver(keys[0]!), { getRemainingTimeInMillis: () => 45_000 });
    await vi.waitFor(async () =>
      expect(await readItem(inboxTable, `payments#${keys[0]}`)).toMatchObject({
        leaseExpiresAt: clock() + 45_000,
      }),
    );
    gate.resolve();
    await running;

    const blocked = deferred();
    const { processBatch: withoutContext } = setupTwoPhase(
      clock,
      (_message, effects) => effects.run(() => blocked.promise),
      { leaseMillis: undefined },
    );
    const pending = withoutContext(deliver(keys[1]!));
    await vi.waitFor(async () =>
      expect(await readItem(inboxTable, `payments#${keys[1]}`)).toMatchObject({
        leaseExpiresAt: clock() + 900_000,
      }),
    );
    blocked.resolve();
    await pending;
    expect(await processBatch(deliver(keys[0]!), context)).toEqual(failed());
  });

  it('fails at cold start on a zero lease, or on seconds given as milliseconds, also from EO_LEASE_MILLIS', () => {
    const clock = manualClock(Date.now());
    expect(() => setupTwoPhase(clock, noop, { leaseMillis: 0 })).toThrow(
      'Expected `twoPhase.leaseMillis` to be a positive integer, got `0`',
    );
    expect(() => setupTwoPhase(clock, noop, { leaseMillis: 30 })).toThrow(
      'Expected `twoPhase.leaseMillis` to be milliseconds (at least 1000; for 30 seconds use 30000), got `30`',
    );
    const environment = readConstructSettings({
      EO_INBOX_TABLE: inboxTable,
      EO_CONSUMER: 'payments',
      EO_LEASE_MILLIS: '300',
    });
    expect(environment.leaseMillis).toBe(300);
    expect(() => setupTwoPhase(clock, noop, { leaseMillis: environment.leaseMillis })).toThrow(
      expect.objectContaining({
        code: 'INVALID_OPTIONS',
        message: expect.stringContaining('use 300000'),
      }) as Error,
    );
  });
});
