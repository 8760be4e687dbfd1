/**
 * Lambda Managed Instances: one Node.js process runs many invocations at once on one handler
 * object (a worker thread interleaves them at every `await`). Here one real two-phase handler,
 * built through the public API with its default logger and metrics sink (standard output) and
 * one DynamoDB client on the local emulator, serves every invocation of a run, all of a round's
 * invocations started together: copies of one dedup key in several invocations at once, slow
 * effects kept alive by heartbeats, the completed-record cache on and off.
 *
 * What must hold for every invocation: its batch response names only its own messages, exactly
 * those whose outcome line says they were not acknowledged; every log line written while it runs
 * carries its own request id and one of its own message ids, one outcome line per message; its
 * one metrics line carries its request id and counts exactly its outcome lines; every heartbeat
 * it sends extends a claim it took. And over the run: every effect ran exactly once downstream
 * (0 duplicate effects), every inbox record is completed, and a replay of every message is
 * answered as duplicates, from the cache without a request when it is on, one request each when
 * it is off.
 *
 * The interleaving layer of the fault-injection simulation (`support/simulation.ts`, fault
 * "invocations shared a process") runs two or three invocations per process among thousands of
 * faults with injected loggers and sinks; this test runs nine at a time (90 messages in batches
 * of ten), fault-free, on the real output, so a mixed-up line or count is attributed to the
 * invocation that wrote it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { describe, expect, it, vi } from 'vitest';
import { createSqsHandler, fromBody, INBOX_ATTRIBUTES, twoPhase } from '../../lambda';
import type { SqsBatchResponse, SqsRecord } from '../../lambda/sqs/sqs-event';
import { uniqueName } from '../support/aws';
import { sqsRecord } from '../support/fixtures';
import { attachRequestCounter } from '../support/request-counter';
import { type DynamoRequest, roleOf } from './support/fault-injection';
import { createRandom } from './support/prng';
import { createLocalClient, readItems, useFileTables } from './support/tables';

const files = useFileTables('eo-managed');

/** Dedup keys per run; each is sent three times (a producer's resends), in shuffled batches. */
const KEYS = 30;
const COPIES = 3;
const BATCH_SIZE = 10;
/** The two-phase lease (the least it may be): the heartbeat beats every third of it (334 ms). */
const LEASE_MILLIS = 1000;
/** A slow effect outlasts a beat, so its heartbeat extends the lease at least once. */
const SLOW_EFFECT_MILLIS = 450;
/** Rounds of redelivery before the test gives up on a message. */
const MAX_ROUNDS = 8;

interface Job {
  readonly id: string;
}

/** One invocation of the shared handler, and everything it wrote. */
interface Invocation {
  readonly requestId: string;
  readonly batch: readonly SqsRecord[];
  readonly lines: Record<string, unknown>[];
  readonly claimed: Set<string>;
  readonly extended: string[];
  response?: SqsBatchResponse;
}

/** What a metrics line counts for each outcome a log line names. */
const METRIC_OF_OUTCOME: Readonly<Record<string, string>> = {
  processed: 'Processed',
  duplicate: 'Duplicate',
  'in-flight': 'InFlight',
  mismatch: 'Mismatch',
  stale: 'Stale',
  retry: 'Retry',
  permanent: 'Permanent',
};
const ACKNOWLEDGED = new Set(['processed', 'duplicate', 'stale']);

/** Runs one process's invocations for the whole test: rounds until every message is acknowledged, then a replay. */
async function runSharedProcess(seed: number, cache: boolean) {
  const random = createRandom(seed);
  const consumer = uniqueName(`managed-${cache ? 'cache' : 'store'}`);
  const client = createLocalClient({ maxAttempts: 3 });
  files.clients.push(client);
  const running = new AsyncLocalStorage<Invocation>();
  const requests = attachRequestCounter(client.document);

  // Heartbeats and claims, attributed to the invocation whose async context sent them (a
  // heartbeat's timer runs in the context of the invocation that started it).
  client.document.middlewareStack.add(
    (next, context) => async (args) => {
      const invocation = running.getStore();
      const request: DynamoRequest = {
        operation: (context.commandName ?? 'Unknown').replace(/Command$/, ''),
        input: args.input as Record<string, unknown>,
      };
      const role = roleOf(request);
      if (invocation !== undefined && role.role === 'claim') invocation.claimed.add(role.pk);
      if (invocation !== undefined && role.role === 'effect' && role.update === 'extend') {
        invocation.extended.push(role.pk);
      }
      return next(args);
    },
    { step: 'deserialize', priority: 'low', name: 'managedInstancesAttribution' },
  );

  const slowKeys = new Set(random.shuffle([...Array(KEYS).keys()]).slice(0, KEYS / 3));
  /** Executions downstream, by idempotency key: what the outside world sees. */
  const executions = new Map<string, number>();
  const effectKeys = new Set<string>();
  const handler = createSqsHandler<Job>({
    consumer,
    client: client.document,
    tableName: files.inboxTable,
    environment: {},
    dedupKey: fromBody((job: Job) => job.id),
    logLevel: 'debug',
    ...(cache ? { completedCache: { maxEntries: 1000 } } : {}),
    mode: twoPhase({
      leaseMillis: LEASE_MILLIS,
      heartbeat: true,
      handle: (message, effects) =>
        effects.run(async ({ scopedKey, idempotencyKey }) => {
          effectKeys.add(scopedKey);
          executions.set(idempotencyKey, (executions.get(idempotencyKey) ?? 0) + 1);
          const slow = slowKeys.has(Number(message.body.id.slice(1)));
          await new Promise((resolve) => setTimeout(resolve, slow ? SLOW_EFFECT_MILLIS : random.int(20)));
        }),
    }),
  });

  const invocations: Invocation[] = [];
  let requestCount = 0;
  /** Starts every batch as an invocation of the one handler at once; resolves when all answered. */
  const runRound = async (round: number, batches: readonly (readonly SqsRecord[])[]) => {
    const started = batches.map((batch, index) => {
      const invocation: Invocation = {
        requestId: `${consumer}-r${round}-i${index}`,
        batch,
        lines: [],
        claimed: new Set(),
        extended: [],
      };
      invocations.push(invocation);
      return running.run(invocation, async () => {
        invocation.response = await handler(
          { Records: [...batch] },
          { awsRequestId: invocation.requestId, getRemainingTimeInMillis: () => 60_000 },
        );
        return invocation;
      });
    });
    return Promise.all(started);
  };

  const write = process.stdout.write.bind(process.stdout);
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk, ...rest: unknown[]) => {
    const invocation = running.getStore();
    if (invocation === undefined) return write(chunk, ...(rest as []));
    for (const line of String(chunk).split('\n')) {
      if (line.trim() !== '') invocation.lines.push(JSON.parse(line) as Record<string, unknown>);
    }
    return true;
  });
  const copies = [...Array(KEYS).keys()].flatMap((key) =>
    Array.from({ length: COPIES }, (_, copy) => ({
      id: `k${key}`,
      messageId: `${consumer}-k${key}-c${copy}`,
    })),
  );
  const batchesOf = (records: readonly SqsRecord[]) => {
    const shuffled = random.shuffle(records);
    return Array.from({ length: Math.ceil(shuffled.length / BATCH_SIZE) }, (_, index) =>
      shuffled.slice(index * BATCH_SIZE, (index + 1) * BATCH_SIZE),
    );
  };
  try {
    let pending = copies.map(({ id, messageId }) => sqsRecord(messageId, { id }, { receiveCount: 1 }));
    let round = 0;
    for (; pending.length > 0 && round < MAX_ROUNDS; round += 1) {
      const answered = await runRound(round, batchesOf(pending));
      pending = answered.flatMap(({ batch, response }) => {
        const failed = new Set(response?.batchItemFailures.map((failure) => failure.itemIdentifier));
        return batch
          .filter((record) => failed.has(record.messageId))
          .map((record) =>
            sqsRecord(record.messageId, JSON.parse(record.body), {
              receiveCount: Number(record.attributes.ApproximateReceiveCount) + 1,
            }),
          );
      });
    }
    // Every message again, as a replay of the whole log would send it.
    requests.reset();
    const replay = await runRound(
      round,
      batchesOf(
        copies.map(({ id, messageId }) => sqsRecord(messageId, { id }, { receiveCount: COPIES + 1 })),
      ),
    );
    requestCount = requests.total();
    return { consumer, invocations, replay, pending, executions, effectKeys, requestCount };
  } finally {
    spy.mockRestore();
    requests.detach();
  }
}

/** What the invocation wrote, checked against its batch and its response; its outcomes by message. */
function checkInvocation(invocation: Invocation, consumer: string): Map<string, Record<string, unknown>> {
  const ids = new Set(invocation.batch.map((record) => record.messageId));
  const metricsLines = invocation.lines.filter((line) => '_aws' in line);
  const logLines = invocation.lines.filter((line) => !('_aws' in line));
  for (const line of logLines) {
    expect({ requestId: line.requestId, known: ids.has(String(line.messageId)) }).toEqual({
      requestId: invocation.requestId,
      known: true,
    });
  }
  const outcomes = new Map<string, Record<string, unknown>>();
  for (const line of logLines.filter((entry) => typeof entry.outcome === 'string')) {
    expect(outcomes.has(String(line.messageId)), `a second outcome for ${line.messageId}`).toBe(false);
    outcomes.set(String(line.messageId), line);
  }
  expect([...outcomes.keys()].sort()).toEqual([...ids].sort());

  expect(metricsLines).toHaveLength(1);
  const metrics = metricsLines[0]!;
  const expected: Record<string, unknown> = { requestId: invocation.requestId, Consumer: consumer };
  for (const metric of Object.values(METRIC_OF_OUTCOME)) expected[metric] = 0;
  for (const line of outcomes.values())
    expected[METRIC_OF_OUTCOME[String(line.outcome)]!] =
      (expected[METRIC_OF_OUTCOME[String(line.outcome)]!] as number) + 1;
  expected.CacheHit = [...outcomes.values()].filter((line) => line.cache === 'hit').length;
  expect(Object.fromEntries(Object.keys(expected).map((name) => [name, metrics[name]]))).toEqual(expected);

  const unacknowledged = [...outcomes.values()]
    .filter((line) => !ACKNOWLEDGED.has(String(line.outcome)))
    .map((line) => String(line.messageId));
  expect(invocation.response?.batchItemFailures.map((failure) => failure.itemIdentifier).sort()).toEqual(
    unacknowledged.sort(),
  );
  for (const pk of invocation.extended) expect(invocation.claimed, `a heartbeat of ${pk}`).toContain(pk);
  return outcomes;
}

describe.each([
  { cache: true, seed: 301 },
  { cache: false, seed: 302 },
])(
  'interleaved invocations of one handler in one process (completed-record cache $cache)',
  ({ cache, seed }) => {
    it('keeps every response, log line, metrics line and heartbeat with its invocation, and runs every effect once', async () => {
      const run = await runSharedProcess(seed, cache);
      expect(run.pending).toEqual([]);

      const outcomes = run.invocations.flatMap((invocation) => [
        ...checkInvocation(invocation, run.consumer).values(),
      ]);
      const tally = (outcome: string) => outcomes.filter((line) => line.outcome === outcome).length;
      // Copies of one key were in flight in two invocations at once, and slow effects beat.
      expect(tally('in-flight')).toBeGreaterThan(0);
      expect(
        run.invocations.reduce((sum, invocation) => sum + invocation.extended.length, 0),
      ).toBeGreaterThan(0);
      expect(tally('processed')).toBe(KEYS);

      // 0 duplicate effects: every effect executed once downstream, and its record is completed.
      expect(run.executions.size).toBe(KEYS);
      expect([...run.executions.values()].every((count) => count === 1)).toBe(true);
      const records = await readItems(files.admin.document, files.inboxTable, [...run.effectKeys]);
      expect([...records.values()].map((item) => item[INBOX_ATTRIBUTES.status])).toEqual(
        Array(KEYS).fill('COMPLETED'),
      );

      // The replay meets completed records: from the cache with no request, or one request each.
      const replayed = run.replay.flatMap((invocation) => [
        ...checkInvocation(invocation, run.consumer).values(),
      ]);
      expect(replayed.every((line) => line.outcome === 'duplicate')).toBe(true);
      expect({
        cacheHits: replayed.filter((line) => line.cache === 'hit').length,
        requests: run.requestCount,
      }).toEqual(
        cache ? { cacheHits: KEYS * COPIES, requests: 0 } : { cacheHits: 0, requests: KEYS * COPIES },
      );
      expect(tally('duplicate') - replayed.length).toBeGreaterThan(0);
    });
  },
);
