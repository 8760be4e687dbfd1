/**
 * The two-phase lease of a long-running worker (issue 12 item 14): without a Lambda context
 * the lease used to be 15 minutes, so against a 30-second visibility timeout a crashed worker's
 * claim answered every redelivery in flight and the message was dead-lettered before anyone
 * could take it over. The worker's default lease is its visibility timeout, held by the lease
 * heartbeat while the visibility heartbeat holds the batch.
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fromBody } from '../../../lambda/core/dedup-key';
import type { InboxRecord } from '../../../lambda/core/store-port';
import { type TwoPhaseOptions, twoPhase } from '../../../lambda/modes/two-phase';
import { createSqsWorker, type SqsWorkerOptions } from '../../../lambda/worker/sqs-worker';
import { deferred, manualClock, T0 } from '../../support/fixtures';
import { createMemoryStore, type MemoryStore } from '../../support/memory-store';

const QUEUE_URL = 'http://127.0.0.1:4566/000000000000/payments';
type Command = { constructor: { name: string } };

/** An SQS client double: the first receive delivers one message, later ones come back empty. */
function oneMessageSqs() {
  const commands: Command[] = [];
  let receives = 0;
  const client = {
    send(command: Command) {
      commands.push(command);
      if (command.constructor.name !== 'ReceiveMessageCommand') return Promise.resolve({});
      receives += 1;
      if (receives === 1) {
        return Promise.resolve({
          Messages: [{ MessageId: 'm-1', ReceiptHandle: 'rh-1', Body: '{"id":"p-1"}', Attributes: {} }],
        });
      }
      // An empty long poll: the worker's stop waits for the receive in flight, never aborts it.
      return new Promise((resolve) => setTimeout(() => resolve({ Messages: [] }), 5));
    },
  };
  return { client: client as unknown as SQSClient, commands };
}

/** Resolves once `predicate` holds, checking on every macrotask. */
async function until(predicate: () => boolean): Promise<void> {
  for (let attempt = 0; attempt < 500; attempt += 1) {
    if (predicate()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error('condition never held');
}

afterEach(() => {
  vi.useRealTimers();
});

/**
 * Runs one two-phase message through a worker whose effect waits while the clock and the
 * timers move `waitMillis`; returns the store's calls.
 */
async function runOne(
  mode: Partial<Omit<TwoPhaseOptions<{ id: string }>, 'handle'>>,
  worker: Partial<SqsWorkerOptions>,
  waitMillis: number,
): Promise<MemoryStore['calls']> {
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
  const store = createMemoryStore();
  const clock = manualClock();
  const gate = deferred();
  const sqs = oneMessageSqs();
  const running = createSqsWorker<{ id: string }>(
    {
      consumer: 'payments',
      dedupKey: fromBody('id'),
      store,
      clock,
      logLevel: 'silent',
      metrics: false,
      mode: twoPhase({ handle: (_message, effects) => effects.run(() => gate.promise), ...mode }),
    },
    { sqs: sqs.client, queueUrl: QUEUE_URL, ...worker },
  );

  running.start();
  await until(() => store.calls.length === 1);
  clock.advance(waitMillis);
  await vi.advanceTimersByTimeAsync(waitMillis);
  gate.resolve();
  await until(() => sqs.commands.some((command) => command.constructor.name === 'DeleteMessageBatchCommand'));
  await running.stop();
  return store.calls;
}

const leaseOf = (calls: MemoryStore['calls']) => (calls[0]!.args[0] as InboxRecord).leaseExpiresAt! - T0;

describe('createSqsWorker: the two-phase lease', () => {
  it('claims with the visibility timeout as the lease, extended while the visibility heartbeat runs', async () => {
    const calls = await runOne({}, { visibilityTimeoutSeconds: 45, heartbeatIntervalSeconds: 15 }, 15_000);

    expect(leaseOf(calls)).toBe(45_000);
    expect(calls.map((call) => [call.method, ...call.args.slice(2, 3)])).toEqual([
      ['claimLease'],
      ['extendLease', T0 + 15_000 + 45_000],
      ['complete', { expiresAt: Math.floor((T0 + 15_000) / 1000) + 1_296_000 }],
    ]);
  });

  it('does not extend the lease when the visibility heartbeat is off', async () => {
    const calls = await runOne({}, { visibilityTimeoutSeconds: 30, heartbeatIntervalSeconds: false }, 10_000);

    expect(leaseOf(calls)).toBe(30_000);
    expect(calls.map((call) => call.method)).toEqual(['claimLease', 'complete']);
  });

  it('keeps the leaseMillis and heartbeat the options set', async () => {
    const calls = await runOne(
      { leaseMillis: 120_000, heartbeat: false },
      { visibilityTimeoutSeconds: 45, heartbeatIntervalSeconds: 15 },
      40_000,
    );

    expect(leaseOf(calls)).toBe(120_000);
    expect(calls.map((call) => call.method)).toEqual(['claimLease', 'complete']);
  });
});
