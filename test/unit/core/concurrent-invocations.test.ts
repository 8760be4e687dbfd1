/**
 * One handler instance serving several invocations at once, as a Lambda Managed Instance's worker
 * thread does (up to 64 per vCPU by default, interleaved at every await): what one invocation
 * answers, logs and counts never mixes with another's, and the completed-record cache learns only
 * what the store made final, whichever invocation finishes first.
 */
import { describe, expect, it } from 'vitest';
import { fromBody } from '../../../lambda/core/dedup-key';
import { PermanentError } from '../../../lambda/core/errors';
import type { Message } from '../../../lambda/core/message';
import type { Mode } from '../../../lambda/core/mode';
import type { InboxStore } from '../../../lambda/core/store-port';
import { marker } from '../../../lambda/modes/marker';
import { twoPhase } from '../../../lambda/modes/two-phase';
import { createSqsBatchHandler } from '../../../lambda/sqs/sqs-handler';
import {
  captureLogger,
  captureMetrics,
  counts,
  deferred,
  manualClock,
  sqsEvent,
  sqsRecord,
} from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';

interface Job {
  readonly id: string;
  readonly outcome?: 'ok' | 'throw' | 'permanent';
}

const ids = (...messageIds: string[]) => ({
  batchItemFailures: messageIds.map((itemIdentifier) => ({ itemIdentifier })),
});
const settle = () => new Promise((resolve) => setImmediate(resolve));

/**
 * A marker handler that waits for the test to let each message's effect end; `outcome: 'throw'`
 * fails the first run of a message only, as a transient failure would.
 */
function heldEffects() {
  const holds = new Map<string, ReturnType<typeof deferred<void>>>();
  const hold = (id: string) => {
    let held = holds.get(id);
    if (held === undefined) {
      held = deferred();
      holds.set(id, held);
    }
    return held;
  };
  const ran: string[] = [];
  const handle = async (message: Message<Job>) => {
    await hold(message.body.id).promise;
    ran.push(message.messageId);
    const firstRun = ran.filter((messageId) => messageId === message.messageId).length === 1;
    if (message.body.outcome === 'throw' && firstRun) throw new Error('downstream failed');
    if (message.body.outcome === 'permanent') throw new PermanentError('never valid');
  };
  return { handle, release: (id: string) => hold(id).resolve(), ran };
}

function setup(mode: Mode<Job, InboxStore>, completedCache?: { maxEntries: number }) {
  const store = createMemoryStore();
  const logger = captureLogger();
  const metrics = captureMetrics();
  const processBatch = createSqsBatchHandler<Job, InboxStore>({
    consumer: 'jobs',
    dedupKey: fromBody('id'),
    mode,
    store,
    clock: manualClock(),
    logger,
    metrics,
    completedCache,
  });
  return { store, logger, metrics, processBatch };
}

describe('concurrent invocations through one handler instance', () => {
  it('keeps each invocation’s response, log lines and counts its own when they finish out of order', async () => {
    const effects = heldEffects();
    const { processBatch, logger, metrics } = setup(marker(effects.handle), { maxEntries: 100 });
    const first = processBatch(
      sqsEvent(sqsRecord('a-1', { id: 'a-1' }), sqsRecord('a-2', { id: 'a-2', outcome: 'throw' })),
    );
    const second = processBatch(
      sqsEvent(sqsRecord('b-1', { id: 'b-1' }), sqsRecord('b-2', { id: 'b-2', outcome: 'permanent' })),
    );
    await settle();

    // The second invocation ends while the first is still inside its effects.
    effects.release('b-1');
    effects.release('b-2');
    expect(await second).toEqual(ids('b-2'));
    expect(metrics.published.map((published) => published.counts)).toEqual([
      counts({ processed: 1, permanent: 1 }),
    ]);
    effects.release('a-1');
    effects.release('a-2');
    expect(await first).toEqual(ids('a-2'));

    expect(metrics.published.map((published) => published.counts)).toEqual([
      counts({ processed: 1, permanent: 1 }),
      counts({ processed: 1, retry: 1 }),
    ]);
    expect(
      logger.entries.map(({ messageId, scopedKey, correlationId, outcome }) => ({
        messageId,
        scopedKey,
        correlationId,
        outcome,
      })),
    ).toEqual([
      { messageId: 'b-2', scopedKey: 'jobs#b-2', correlationId: 'b-2', outcome: 'permanent' },
      { messageId: 'a-2', scopedKey: 'jobs#a-2', correlationId: 'a-2', outcome: 'retry' },
    ]);
    expect(effects.ran).toEqual(['b-1', 'b-2', 'a-1', 'a-2']);
  });

  it('never caches another invocation’s marker: a duplicate met while the first effect runs, then fails, leaves the retry to the store', async () => {
    const effects = heldEffects();
    const { processBatch, store, metrics } = setup(marker(effects.handle), { maxEntries: 100 });
    const first = processBatch(sqsEvent(sqsRecord('m-1', { id: 'k-1', outcome: 'throw' })));
    await settle();

    // The marker stands while the first effect runs: the concurrent delivery is a duplicate by
    // the store's answer (marker mode's documented at-most-once window), not a cache entry.
    expect(await processBatch(sqsEvent(sqsRecord('m-2', { id: 'k-1', outcome: 'throw' })))).toEqual(ids());
    effects.release('k-1');
    expect(await first).toEqual(ids('m-1'));
    const before = store.calls.length;

    const retry = await processBatch(sqsEvent(sqsRecord('m-1', { id: 'k-1', outcome: 'throw' })));

    expect(retry).toEqual(ids());
    expect(store.calls.slice(before).map((call) => call.method)).toEqual(['insert']);
    expect(effects.ran).toEqual(['m-1', 'm-1']);
    expect(metrics.published.map((published) => published.counts)).toEqual([
      counts({ duplicate: 1 }),
      counts({ retry: 1 }),
      counts({ processed: 1 }),
    ]);
  });

  it('caches a two-phase message only when its own claim completed, not while another invocation holds it', async () => {
    const held = deferred();
    let runs = 0;
    const { processBatch, store, metrics } = setup(
      twoPhase({
        leaseMillis: 60_000,
        handle: (_message, effects) =>
          effects.run(async () => {
            runs += 1;
            await held.promise;
          }),
      }),
      { maxEntries: 100 },
    );
    const first = processBatch(sqsEvent(sqsRecord('m-1', { id: 'p-1' })));
    await settle();

    expect(await processBatch(sqsEvent(sqsRecord('m-2', { id: 'p-1' })))).toEqual(ids('m-2'));
    held.resolve();
    expect(await first).toEqual(ids());
    const before = store.calls.length;

    expect(await processBatch(sqsEvent(sqsRecord('m-3', { id: 'p-1' })))).toEqual(ids());

    expect({ calls: store.calls.length - before, runs }).toEqual({ calls: 0, runs: 1 });
    expect(metrics.published.map((published) => published.counts)).toEqual([
      counts({ inFlight: 1 }),
      counts({ processed: 1 }),
      counts({ duplicate: 1, cacheHit: 1 }),
    ]);
  });

  it('names each invocation’s request id on its own log lines and metrics line, which no Lambda prefix does on standard output', async () => {
    const effects = heldEffects();
    const { processBatch, logger, metrics } = setup(marker(effects.handle));
    const contextOf = (awsRequestId: string) => ({ awsRequestId, getRemainingTimeInMillis: () => 60_000 });
    const first = processBatch(
      sqsEvent(sqsRecord('a-1', { id: 'a-1', outcome: 'throw' })),
      contextOf('req-a'),
    );
    const second = processBatch(
      sqsEvent(sqsRecord('b-1', { id: 'b-1', outcome: 'permanent' })),
      contextOf('req-b'),
    );
    await settle();
    effects.release('b-1');
    await second;
    effects.release('a-1');
    await first;

    expect(logger.entries.map(({ requestId, messageId }) => ({ requestId, messageId }))).toEqual([
      { requestId: 'req-b', messageId: 'b-1' },
      { requestId: 'req-a', messageId: 'a-1' },
    ]);
    expect(metrics.published.map(({ requestId, counts }) => ({ requestId, counts }))).toEqual([
      { requestId: 'req-b', counts: counts({ permanent: 1 }) },
      { requestId: 'req-a', counts: counts({ retry: 1 }) },
    ]);
  });
});
