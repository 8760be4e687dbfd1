/**
 * Claims, releases and leases under the interleavings that broke them (issue 12, items 2 to 4),
 * replayed against `createSqsHandler`, the job guard and the DynamoDB store on the local endpoint:
 *
 * - marker mode: a release applied, its answer lost, retried by the SDK after another delivery
 *   of the payload claimed and completed the key, must leave that delivery's marker alone;
 * - two-phase and jobs: a record must not expire while its lease runs (a default lease longer
 *   than the TTL, a heartbeat or `extendLease` carrying the lease past it), or the next delivery
 *   claims it afresh and `maxTakeovers: 0` is bypassed;
 * - two-phase: a heartbeat extension in flight when the effect fails must not revive the
 *   released claim.
 *
 * Time moves only through the injected clock (and faked `setInterval` for the heartbeat).
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { fromBody } from '../../lambda/core/dedup-key';
import type { DeadLetterMessage } from '../../lambda/dead-letter/dead-letter-message';
import { createJobGuard, type JobRun, jobSlotKey } from '../../lambda/jobs';
import { marker } from '../../lambda/modes/marker';
import { twoPhase } from '../../lambda/modes/two-phase';
import { createSqsHandler, type SqsHandlerOptions } from '../../lambda/sqs/sqs-handler';
import { uniqueName } from '../support/aws';
import {
  captureMetrics,
  counts,
  createLocalResources,
  deferred,
  manualClock,
  sqsEvent,
  sqsRecord,
} from '../support/fixtures';
import { attachRequestCounter } from '../support/request-counter';

interface Payment {
  readonly id: string;
  readonly amount: number;
}

const local = createLocalResources();
const inboxTable = uniqueName('eo-lease-regressions');
/** What the Lambda runtime reports as the time left: longer than the TTLs used below. */
const context = { getRemainingTimeInMillis: () => 300_000 };

beforeAll(() => local.createTable(inboxTable));

afterAll(() => local.dispose());

afterEach(() => {
  vi.useRealTimers();
});

const readItem = (pk: string) => local.readItem(inboxTable, { pk });

/** Handler options on the local endpoint, with a consumer no other test uses. */
function handlerOptions(client: DynamoDBDocumentClient, clock: () => number) {
  const metrics = captureMetrics();
  const deadLetters: DeadLetterMessage[] = [];
  const common = {
    consumer: uniqueName('leases'),
    client,
    tableName: inboxTable,
    clock,
    dedupKey: fromBody<Payment>((body) => body.id),
    logLevel: 'silent',
    metrics,
    deadLetter: 'direct',
    deadLetterSender: { send: async (message: DeadLetterMessage) => void deadLetters.push(message) },
  } satisfies Partial<SqsHandlerOptions<Payment>>;
  return { common, metrics, deadLetters };
}

const failed = (...messageIds: string[]) => ({
  batchItemFailures: messageIds.map((itemIdentifier) => ({ itemIdentifier })),
});

describe('marker mode: a release retried by the SDK after another delivery completed the key', () => {
  it('leaves the other delivery’s marker completed, so a third delivery is a duplicate and the effect ran twice, not three times', async () => {
    const applied = deferred();
    const answer = deferred();
    const lossy = local.documentClient({ maxAttempts: 3 });
    let lose = true;
    // Inside the SDK's retry loop, next to the transport: the release reaches DynamoDB and is
    // applied, its answer is held until the other delivery is done, then replaced by a
    // connection reset, which the SDK retries with the very same UpdateItem.
    lossy.middlewareStack.add(
      (next, commandContext) => async (args) => {
        const result = await next(args);
        if (lose && commandContext.commandName === 'UpdateItemCommand') {
          lose = false;
          applied.resolve();
          await answer.promise;
          throw Object.assign(new Error('socket hang up (the response was lost)'), { code: 'ECONNRESET' });
        }
        return result;
      },
      { step: 'deserialize', priority: 'low', name: 'loseReleaseAnswer' },
    );
    const counter = attachRequestCounter(lossy);
    const now = Date.now();
    const { common, metrics } = handlerOptions(lossy, () => now);
    const runs: string[] = [];
    const failing = createSqsHandler<Payment>({
      ...common,
      mode: marker(() => {
        runs.push('first');
        throw new Error('downstream timed out');
      }),
    });
    const healthy = createSqsHandler<Payment>({
      ...common,
      client: local.documentClient(),
      mode: marker(() => void runs.push('second')),
    });
    const body = { id: 'released-twice', amount: 1 };

    const first = failing(sqsEvent(sqsRecord('m-1', body)), context);
    await applied.promise;
    expect(await healthy(sqsEvent(sqsRecord('m-2', body)), context)).toEqual(failed());
    const completed = await readItem(`${common.consumer}#released-twice`);
    answer.resolve();
    expect(await first).toEqual(failed('m-1'));
    expect(counter.counts()).toEqual({ PutItem: 1, UpdateItem: 2 });

    expect(await readItem(`${common.consumer}#released-twice`)).toEqual(completed);
    expect(completed).toMatchObject({ status: 'COMPLETED' });
    expect(await healthy(sqsEvent(sqsRecord('m-3', body)), context)).toEqual(failed());
    expect(runs).toEqual(['first', 'second']);
    expect(metrics.published.map((published) => published.counts)).toEqual([
      counts({ processed: 1 }),
      counts({ retry: 1 }),
      counts({ duplicate: 1 }),
    ]);
  });
});

describe('two-phase: a record never expires while its lease runs', () => {
  it('keeps a claim whose default lease outlives ttlSeconds: the next delivery is in flight, then stuck with maxTakeovers 0, and the effect runs once', async () => {
    const clock = manualClock(Date.now());
    const { common, deadLetters } = handlerOptions(local.documentClient(), clock);
    const gate = deferred();
    let runs = 0;
    const handler = createSqsHandler<Payment>({
      ...common,
      // No leaseMillis: the lease is the invocation's remaining time (300 s), the TTL 5 s.
      ttlSeconds: 5,
      mode: twoPhase({
        handle: (_message, effects) =>
          effects.run(async () => {
            runs += 1;
            if (runs === 1) await gate.promise;
          }),
        maxTakeovers: 0,
      }),
    });
    const body = { id: 'outlived', amount: 1 };

    const first = handler(sqsEvent(sqsRecord('m-1', body)), context);
    await vi.waitFor(() => expect(runs).toBe(1));
    clock.advance(10_000);
    expect(await handler(sqsEvent(sqsRecord('m-2', body)), context)).toEqual(failed('m-2'));
    // Past the lease end (300 s), within the TTL after it: taken over, were takeovers allowed.
    clock.advance(291_000);
    expect(await handler(sqsEvent(sqsRecord('m-3', body)), context)).toEqual(failed());

    expect(runs).toBe(1);
    expect(deadLetters.map(({ code }) => code)).toEqual(['STUCK_IN_PROGRESS']);
    gate.resolve();
    expect(await first).toEqual(failed());
  });

  it('moves expiresAt with every heartbeat, so a lease extended past the claim’s TTL is not claimed afresh by the next delivery', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const clock = manualClock(Date.now());
    const start = clock();
    const { common } = handlerOptions(local.documentClient(), clock);
    const gate = deferred();
    let runs = 0;
    const lease = 3_000;
    const handler = createSqsHandler<Payment>({
      ...common,
      ttlSeconds: 4,
      mode: twoPhase({
        handle: (_message, effects) =>
          effects.run(async () => {
            runs += 1;
            if (runs === 1) await gate.promise;
          }),
        leaseMillis: lease,
        heartbeat: true,
        maxTakeovers: 0,
      }),
    });
    const body = { id: 'beating', amount: 1 };
    const pk = `${common.consumer}#beating`;

    const first = handler(sqsEvent(sqsRecord('m-1', body)), context);
    await vi.waitFor(() => expect(runs).toBe(1));
    for (let beat = 1; beat <= 10; beat += 1) {
      clock.advance(lease / 3);
      await vi.advanceTimersByTimeAsync(lease / 3);
      await vi.waitFor(async () =>
        expect(await readItem(pk)).toMatchObject({ leaseExpiresAt: start + (beat * lease) / 3 + lease }),
      );
    }
    expect(await readItem(pk)).toMatchObject({
      status: 'IN_PROGRESS',
      expiresAt: Math.ceil((start + 10_000 + lease) / 1000) + 4,
    });
    // 10 s after the claim, twice its TTL: the claim is live and held.
    expect(await handler(sqsEvent(sqsRecord('m-2', body)), context)).toEqual(failed('m-2'));

    expect(runs).toBe(1);
    gate.resolve();
    expect(await first).toEqual(failed());
    expect(await readItem(pk)).toMatchObject({ status: 'COMPLETED' });
  });
});

describe('jobs: a run that extends its lease past the TTL of its claim', () => {
  it('keeps the slot in progress, so an overlapping run skips it and the work runs once', async () => {
    const clock = manualClock(Date.now());
    const consumer = uniqueName('jobs');
    const guard = () =>
      createJobGuard({
        consumer,
        client: local.documentClient(),
        tableName: inboxTable,
        clock,
        leaseMillis: 2_000,
        ttlSeconds: 3,
        logLevel: 'silent',
      });
    const [containerA, containerB] = [guard(), guard()];
    const slot = { job: 'export', slot: '2026-01-01' };
    const parked = deferred();
    const gate = deferred();
    let runs = 0;
    const work = async (run: JobRun) => {
      runs += 1;
      for (let step = 0; step < 5; step += 1) {
        clock.advance(1_500);
        await run.extendLease();
      }
      parked.resolve();
      if (runs === 1) await gate.promise;
    };

    const first = containerA.run(slot, work);
    await parked.promise;
    // 7.5 s after the claim, two and a half times its TTL: the lease still runs, the record lives.
    expect(await readItem(jobSlotKey(consumer, slot))).toMatchObject({
      status: 'IN_PROGRESS',
      leaseExpiresAt: clock() + 2_000,
      expiresAt: Math.ceil((clock() + 2_000) / 1000) + 3,
    });
    expect(await containerB.run(slot, work)).toMatchObject({ ran: false, reason: 'in-progress' });

    expect(runs).toBe(1);
    gate.resolve();
    expect(await first).toEqual({ ran: true, result: undefined, takeover: false });
  });
});

describe('two-phase: a heartbeat extension in flight when the effect fails', () => {
  it('lands before the release, so the released claim is taken by the retry at once and the effect runs again', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const client = local.documentClient();
    const extensionSent = deferred();
    const extensionGate = deferred();
    let updates = 0;
    let releaseStarted = false;
    const releaseDone = deferred();
    // The first UpdateItem is the heartbeat's extension: held before it is sent, as a slow
    // network would. The second is the release.
    client.middlewareStack.add(
      (next, commandContext) => async (args) => {
        if (commandContext.commandName !== 'UpdateItemCommand') return next(args);
        updates += 1;
        if (updates === 1) {
          extensionSent.resolve();
          await extensionGate.promise;
          return next(args);
        }
        releaseStarted = true;
        const result = await next(args);
        releaseDone.resolve();
        return result;
      },
      { step: 'initialize', name: 'holdExtension' },
    );
    const counter = attachRequestCounter(client);
    const clock = manualClock(Date.now());
    const { common, metrics } = handlerOptions(client, clock);
    const lease = 30_000;
    let runs = 0;
    const handler = createSqsHandler<Payment>({
      ...common,
      mode: twoPhase({
        handle: (_message, effects) =>
          effects.run(async () => {
            runs += 1;
            if (runs > 1) return;
            await extensionSent.promise;
            throw new Error('downstream refused');
          }),
        leaseMillis: lease,
        heartbeat: true,
      }),
    });
    const body = { id: 'revived', amount: 1 };

    const first = handler(sqsEvent(sqsRecord('m-1', body)), context);
    await vi.waitFor(() => expect(runs).toBe(1));
    clock.advance(lease / 3);
    await vi.advanceTimersByTimeAsync(lease / 3);
    await extensionSent.promise;
    // Give a release sent at once (without waiting for the extension) the time to be applied
    // before the extension goes out: the interleaving that revived the claim.
    for (let turn = 0; turn < 20 && !releaseStarted; turn += 1) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (releaseStarted) await releaseDone.promise;
    extensionGate.resolve();
    expect(await first).toEqual(failed('m-1'));
    expect(await readItem(`${common.consumer}#revived`)).toMatchObject({
      status: 'IN_PROGRESS',
      leaseExpiresAt: 0,
    });

    expect(await handler(sqsEvent(sqsRecord('m-2', body)), context)).toEqual(failed());
    expect(runs).toBe(2);
    expect(counter.counts()).toEqual({ PutItem: 2, UpdateItem: 3 });
    expect(metrics.published.map((published) => published.counts)).toEqual([
      counts({ retry: 1 }),
      counts({ processed: 1 }),
    ]);
  });
});
