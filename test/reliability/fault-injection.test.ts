/**
 * Seeded fault injection through the real store on the local emulator (see
 * `support/simulation.ts` for what is simulated, `support/oracle.ts` for what is checked).
 *
 * Size: `RELIABILITY_MESSAGES` messages per seed (default 1,000; `npm run test:soak` runs
 * 10,000), `RELIABILITY_SEEDS` seeds (default 20, seeds 1..n), or one seed alone with
 * `RELIABILITY_SEED=<n>`. A failing seed prints the command that replays it.
 *
 * The run ends with one line on standard output (printed by `test/support/summary-reporter.ts`
 * after vitest's totals): messages, duplicate deliveries, crashes and each fault class injected
 * (`INJECTED_FAULTS`), then `<E> duplicate effects, <L> lost`, for example
 * `reliability: 20000 messages, … 388 odd keys, 2001 throttles (672 ProvisionedThroughputExceeded,
 * 669 Throttling, 660 RequestLimitExceeded; 436 after applied), 1423 transaction conflicts (257
 * racing a concurrent delivery), 43 invocations timed out, 2678 invocations shared a process,
 * 0 duplicate effects, 0 lost`.
 *
 * The same seeds run on a FIFO queue too (`FIFO seed <n>`): seeds 1 to 5 (every mode, both
 * dead-letter styles, both atomic commits, the cache on and off; keyed by the body) at a fifth of the size
 * (`RELIABILITY_FIFO_MESSAGES`), with message groups, the 5-minute deduplication interval and the
 * group held back behind a message in flight (`support/simulated-queue.ts`); the history checker's
 * `orderPerGroup` checks each group's order. The summary line ends with what they covered:
 * `…; FIFO: 1000 messages in 125 groups, 905 first effects checked in order, …`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName } from '../support/aws';
import { positiveInteger } from './support/environment';
import {
  isThrottle,
  isTransactionConflict,
  THROTTLE_CODES,
  tamperFailedTransactions,
} from './support/fault-injection';
import { ungrantedActions } from './support/grants';
import { checkSeed, type SeedReport } from './support/oracle';
import { createProofRecord, SQS_PROOF } from './support/proof-record';
import {
  CRASH_POINTS,
  INJECTED_FAULTS,
  type QueueType,
  runSimulation,
  type SeedOptions,
  seedProfile,
} from './support/simulation';
import {
  createLocalClient,
  createTables,
  deleteTables,
  dropBusinessWrites,
  dropMarkerCondition,
  type LocalClient,
  tamperTransactions,
} from './support/tables';

const MESSAGES = positiveInteger('RELIABILITY_MESSAGES', 1000);
const SEED_COUNT = positiveInteger('RELIABILITY_SEEDS', 20);
const INSTANCES = positiveInteger('RELIABILITY_INSTANCES', 8);
/** Seeds running at the same time: they share the emulator, and one seed's tail leaves it idle. */
const PARALLEL = positiveInteger('RELIABILITY_PARALLEL', 2);
const SINGLE_SEED = process.env.RELIABILITY_SEED ? positiveInteger('RELIABILITY_SEED', 1) : undefined;
const SEEDS = SINGLE_SEED === undefined ? Array.from({ length: SEED_COUNT }, (_, i) => i + 1) : [SINGLE_SEED];
/**
 * FIFO seeds: the first five (every mode, both dead-letter styles, both atomic commits, the cache
 * on and off) at a fifth of the size, which keeps their share of CI's run small; with
 * `RELIABILITY_SEED`, that seed.
 */
const FIFO_SEEDS = SINGLE_SEED === undefined ? SEEDS.slice(0, 5) : [SINGLE_SEED];
const FIFO_MESSAGES = positiveInteger('RELIABILITY_FIFO_MESSAGES', Math.max(50, Math.ceil(MESSAGES / 5)));

const inboxTable = uniqueName('eo-rel-inbox');
const businessTable = uniqueName('eo-rel-business');
const reports: SeedReport[] = [];
const fifoReports: SeedReport[] = [];
let admin: LocalClient;

beforeAll(async () => {
  admin = createLocalClient({ maxAttempts: 3 });
  await createTables(admin.raw, inboxTable, businessTable);
});

// biome-ignore lint/correctness/noEmptyPattern: vitest requires a destructuring first argument; the file suite is the second.
afterAll(async ({}, file) => {
  await deleteTables(admin.raw, inboxTable, businessTable);
  admin.raw.destroy();
  if (reports.length === 0 && fifoReports.length === 0) return;
  const sum = (pick: (report: SeedReport) => number) =>
    reports.reduce((total, report) => total + pick(report), 0);
  const faults = INJECTED_FAULTS.map((fault) => {
    const total = `${sum((r) => r.injected[fault])} ${fault}`;
    if (fault === 'throttles') {
      const byCode = THROTTLE_CODES.map(
        (code) => `${sum((r) => r.throttles[code])} ${code.replace(/Exception$/, '')}`,
      );
      return `${total} (${byCode.join(', ')}; ${sum((r) => r.throttles['after applied'])} after applied)`;
    }
    if (fault === 'transaction conflicts')
      return `${total} (${sum((r) => r.racingConflicts)} racing a concurrent delivery)`;
    return total;
  }).join(', ');
  const summary =
    `reliability: ${sum((r) => r.messages)} messages, ${sum((r) => r.duplicateDeliveries)} duplicate deliveries, ` +
    `${sum((r) => r.crashes)} crashes injected, ${faults}, ` +
    `${sum((r) => r.duplicateEffects)} duplicate effects, ${sum((r) => r.lost)} lost; ` +
    `history checked: ${sum((r) => r.history.keys)} keys, ${sum((r) => r.history.violations)} violations` +
    fifoSummary(fifoReports);
  process.stdout.write(`${summary}\n`);
  // test/support/summary-reporter.ts prints it again after vitest's totals, as the run's last line.
  file.meta.summary = summary;
  file.meta.proof = createProofRecord(SQS_PROOF, [...reports, ...fifoReports], {
    messages: MESSAGES,
    seeds: SEEDS,
  });
});

/** The FIFO seeds' part of the summary line; nothing when none ran. */
function fifoSummary(of: readonly SeedReport[]): string {
  if (of.length === 0) return '';
  const sum = (pick: (report: SeedReport) => number) => of.reduce((total, report) => total + pick(report), 0);
  return (
    `; FIFO: ${sum((r) => r.messages)} messages in ${sum((r) => r.history.groups)} groups, ` +
    `${sum((r) => r.history.ordered)} first effects checked in order, ` +
    `${sum((r) => r.fifo?.deduplicated ?? 0)} producer copies deduplicated by SQS, ` +
    `${sum((r) => r.fifo?.resentAfterWindow ?? 0)} resent after the 5-minute interval, ` +
    `${sum((r) => r.fifo?.groupBlocked ?? 0)} held back behind a failure in their group ` +
    `(${sum((r) => r.fifo?.deadLetteredBehindGroup ?? 0)} of them dead-lettered with it by the redrive policy), ` +
    `${sum((r) => r.duplicateDeliveries)} duplicate deliveries, ${sum((r) => r.crashes)} crashes, ` +
    `${sum((r) => r.duplicateEffects)} duplicate effects, ${sum((r) => r.lost)} lost, ` +
    `${sum((r) => r.history.violations)} violations`
  );
}

/** A counting semaphore: at most `limit` callers inside at a time. */
function createLimiter(limit: number): <T>(run: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async (run) => {
    while (active >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    active += 1;
    try {
      return await run();
    } finally {
      active -= 1;
      waiting.shift()?.();
    }
  };
}

const limit = createLimiter(PARALLEL);
/**
 * Concurrent tests start together and wait for the limiter, so a seed's timeout covers the
 * waves of seeds before it and its own: 10 to 25 ms per message on this 2-core machine when it
 * is quiet, up to 250 ms when it is shared (a 10,000-message two-phase seed alone takes more
 * than 10 minutes), so 150 ms per message and wave leaves room. It only guards against a hang.
 */
const SEED_TIMEOUT_MILLIS = Math.max(600_000, MESSAGES * Math.ceil(SEEDS.length / PARALLEL) * 150);

/** The command that replays a seed; `RELIABILITY_TRACE=1` adds what happened to each key a violation names. */
function replayHint(seed: number, queue: QueueType = 'standard'): string {
  const fifo = queue === 'fifo' ? ` RELIABILITY_FIFO_MESSAGES=${FIFO_MESSAGES}` : '';
  const only = queue === 'fifo' ? ` -t "FIFO seed ${seed}:"` : '';
  return `replay: RELIABILITY_SEED=${seed} RELIABILITY_MESSAGES=${MESSAGES}${fifo} RELIABILITY_TRACE=1 npx vitest run --project reliability test/reliability/fault-injection.test.ts${only}`;
}

function describeReport(report: SeedReport): string {
  return JSON.stringify({ ...report, violations: report.violations.slice(0, 20) }, null, 1);
}

async function runSeed(
  seed: number,
  overrides: Partial<SeedOptions> = {},
): Promise<SeedReport & { readonly ungranted: readonly string[] }> {
  const options: SeedOptions = {
    seed,
    messages: MESSAGES,
    ...seedProfile(seed),
    instances: INSTANCES,
    inboxTable,
    businessTable,
    startMillis: Date.now(),
    ...overrides,
  };
  const result = await runSimulation(options);
  return {
    ...(await checkSeed(result, admin.document)),
    ungranted: ungrantedActions(options, result.actions),
  };
}

describe(`fault injection: ${SEEDS.length} seed(s) of ${MESSAGES} messages through the real store`, () => {
  it.concurrent.each(SEEDS)(
    'seed %i: every message ends processed exactly once per live window or dead-lettered with a reason',
    async (seed) => {
      const started = Date.now();
      const report = await limit(() => runSeed(seed));
      reports.push(report);
      const failed =
        report.violations.length > 0 ||
        report.deliveredTwice < 0.3 * report.messages ||
        report.deliveredConcurrently < 0.5 * report.deliveredTwice;
      if (failed || process.env.RELIABILITY_VERBOSE) {
        console.log(
          `seed ${seed} (${Date.now() - started} ms)\n${describeReport(report)}\n${replayHint(seed)}`,
        );
      }

      expect(report.violations.slice(0, 20), `seed ${seed} failed; ${replayHint(seed)}`).toEqual([]);
      expect(report.duplicateEffects).toBe(0);
      expect(report.lost).toBe(0);
      // A seed with the completed-record cache on must have answered duplicates from it.
      if (report.completedCacheEntries !== undefined) {
        expect(report.cacheHits, `seed ${seed}: ${replayHint(seed)}`).toBeGreaterThan(0);
      } else {
        expect(report.cacheHits).toBe(0);
      }
      // Every request the runtime sent is allowed by the construct's grants in the seed's mode.
      expect(report.ungranted, `seed ${seed} (${report.mode})`).toEqual([]);
      // At least 30% of messages delivered twice or more, and at least a quarter of all messages
      // delivered concurrently (34-40% in the 20 seeds on 2026-12-02). Counted against the
      // messages, not against those delivered twice: a fault on a transaction shared by a batch
      // (atomic batch commit) retries every message in it, which adds redeliveries that are not
      // concurrent by design (seed 17: 751 delivered twice, 352 of them concurrently).
      expect(
        report.deliveredTwice / report.messages,
        `seed ${seed}: ${replayHint(seed)}`,
      ).toBeGreaterThanOrEqual(0.3);
      expect(
        report.deliveredConcurrently / report.messages,
        `seed ${seed}: ${replayHint(seed)}`,
      ).toBeGreaterThanOrEqual(0.25);
    },
    SEED_TIMEOUT_MILLIS,
  );

  it.runIf(SINGLE_SEED === undefined && SEEDS.length >= 4)(
    'injected a crash at every crash point and every fault class, reprocessed expired records, took over claims and dead-lettered poison input across the seeds',
    () => {
      expect(reports).toHaveLength(SEEDS.length);
      const byPoint = Object.fromEntries(
        CRASH_POINTS.map((point) => [
          point,
          reports.reduce((sum, report) => sum + (report.crashesByPoint[point] ?? 0), 0),
        ]),
      );
      for (const point of CRASH_POINTS) expect(byPoint[point], point).toBeGreaterThan(0);
      expect(reports.reduce((sum, report) => sum + report.reprocessedAfterExpiry, 0)).toBeGreaterThan(0);
      expect(reports.every((report) => report.deadLettered > 0)).toBe(true);
      expect(new Set(reports.map((report) => report.mode))).toEqual(
        new Set(['atomic', 'marker', 'entity', 'two-phase']),
      );
      expect(reports.reduce((sum, report) => sum + report.takeovers, 0)).toBeGreaterThan(0);
      const injected = Object.fromEntries(
        INJECTED_FAULTS.map((fault) => [
          fault,
          reports.reduce((sum, report) => sum + report.injected[fault], 0),
        ]),
      );
      // The rarest classes (expiries mid-effect: 0.5% of two-phase messages) need the default size.
      if (MESSAGES >= 1000) {
        for (const fault of INJECTED_FAULTS) expect(injected[fault], fault).toBeGreaterThan(0);
        const sum = (pick: (report: SeedReport) => number) =>
          reports.reduce((total, report) => total + pick(report), 0);
        for (const code of [...THROTTLE_CODES, 'after applied'] as const)
          expect(
            sum((report) => report.throttles[code]),
            code,
          ).toBeGreaterThan(0);
        expect(sum((report) => report.racingConflicts)).toBeGreaterThan(0);
        // Every request kind the toolkit sends meets throttling, except reads: the store reads
        // only when a failed condition returned no item, which DynamoDB (and the emulator) always
        // return here. Heartbeats are two-phase mode's alone (one seed in four) and only for an
        // effect that outlasts a beat, so their throttles need the default 20,000 messages: a
        // smaller run (`npm run proof` at a stated size) reports what it met, a 0 included.
        if (MESSAGES * SEEDS.length >= 20_000) {
          for (const kind of ['claim', 'commit', 'complete', 'release', 'heartbeat'] as const)
            expect(
              sum((report) => report.throttledRequests[kind] ?? 0),
              kind,
            ).toBeGreaterThan(0);
        }
      }
    },
  );
});

describe(`fault injection on a FIFO queue: ${FIFO_SEEDS.length} seed(s) of ${FIFO_MESSAGES} messages`, () => {
  it.concurrent.each(FIFO_SEEDS)(
    'FIFO seed %i: every message ends processed exactly once per live window or dead-lettered with a reason, each group in order',
    async (seed) => {
      const started = Date.now();
      // Keyed by the body: on a FIFO queue every record carries a deduplication id, the body's
      // SHA-256 for a message the producer gave none (content-based deduplication), so a seed
      // keyed by the deduplication id would key poison input by its hash and process it; its
      // plan does not model that (a FIFO seed 4 keyed so meets it at 1,000 messages).
      const report = await limit(() =>
        runSeed(seed, { queue: 'fifo', messages: FIFO_MESSAGES, keySource: 'body' }),
      );
      fifoReports.push(report);
      const hint = replayHint(seed, 'fifo');
      if (report.violations.length > 0 || process.env.RELIABILITY_VERBOSE) {
        console.log(`FIFO seed ${seed} (${Date.now() - started} ms)\n${describeReport(report)}\n${hint}`);
      }

      expect(report.violations.slice(0, 20), `FIFO seed ${seed} failed; ${hint}`).toEqual([]);
      expect(report.duplicateEffects).toBe(0);
      expect(report.lost).toBe(0);
      expect(report.ungranted, `FIFO seed ${seed} (${report.mode})`).toEqual([]);
      // The order check ran on every group with an effect, and the queue deduplicated producer
      // copies sent again within 5 minutes (about 40% of messages get one in the next batch).
      expect(report.history.groups, hint).toBeGreaterThan(0);
      expect(report.history.ordered, hint).toBeGreaterThan(report.messages / 2);
      expect(report.fifo?.deduplicated, hint).toBeGreaterThan(0.2 * report.messages);
      // Failures still bring redeliveries: crashes, lost responses and timeouts on a FIFO queue.
      expect(report.duplicateDeliveries, hint).toBeGreaterThan(0);
    },
    SEED_TIMEOUT_MILLIS,
  );

  it.runIf(SINGLE_SEED === undefined && FIFO_SEEDS.length >= 5)(
    'ran every mode, held groups back behind failures, delivered resends after the deduplication interval and injected the faults across the FIFO seeds',
    () => {
      expect(fifoReports).toHaveLength(FIFO_SEEDS.length);
      const sum = (pick: (report: SeedReport) => number) =>
        fifoReports.reduce((total, report) => total + pick(report), 0);
      expect(new Set(fifoReports.map((report) => report.mode))).toEqual(
        new Set(['atomic', 'marker', 'entity', 'two-phase']),
      );
      expect(sum((report) => report.fifo?.groupBlocked ?? 0)).toBeGreaterThan(0);
      expect(sum((report) => report.fifo?.resentAfterWindow ?? 0)).toBeGreaterThan(0);
      expect(sum((report) => report.crashes)).toBeGreaterThan(0);
      expect(sum((report) => report.deadLettered)).toBeGreaterThan(0);
      for (const fault of FIFO_FAULTS)
        expect(
          sum((report) => report.injected[fault]),
          fault,
        ).toBeGreaterThan(0);
    },
  );
});

/**
 * Fault classes every run of the FIFO seeds meets at the default size. Left out: the rare ones
 * (expiries mid-effect, delayed heartbeats, invocations timed out: under 1% of two-phase
 * messages or invocations, which the 20 standard seeds meet), and none is left out by design.
 */
const FIFO_FAULTS = [
  'lost responses',
  'skewed clocks',
  'redrives',
  'odd keys',
  'throttles',
  'transaction conflicts',
  'invocations shared a process',
] as const satisfies readonly (typeof INJECTED_FAULTS)[number][];

/**
 * A transaction item without its condition: every marker of a batch commit (a shared transaction
 * sent again with one condition kept would be cancelled by it).
 */
function withoutCondition(item: Record<string, unknown>): Record<string, unknown> {
  const put = (item as { Put?: Record<string, unknown> }).Put;
  if (put === undefined) return item;
  const { ConditionExpression, ExpressionAttributeNames, ExpressionAttributeValues, ...rest } = put;
  return { Put: rest };
}

/** The history checker's report of its first violation (`support/history.ts`), a line a history entry after it. */
function historyViolation(check: string, seed: number): unknown {
  return expect.stringMatching(
    new RegExp(`^history check ${check} failed at seed ${seed} \\(\\S+\\): .+(\\n  t\\d+ [a-z-]+ .+)+$`),
  );
}

describe.runIf(SINGLE_SEED === undefined)('the oracle on a deliberately broken store', () => {
  const small = { messages: 200, mode: 'atomic', deadLetter: 'direct' } as const;

  it('counts duplicate effects when the marker is written without its condition', async () => {
    const report = await runSeed(9001, {
      ...small,
      tamper: (client) => tamperTransactions(client, dropMarkerCondition),
    });

    expect(report.duplicateEffects).toBeGreaterThan(0);
    expect(report.violations.some((violation) => violation.includes('duplicate effect'))).toBe(true);
    expect(report.violations).toContainEqual(historyViolation('exactlyOnce', 9001));
  });

  it('counts lost messages when the commit drops the business writes', async () => {
    const report = await runSeed(9002, {
      ...small,
      tamper: (client) => tamperTransactions(client, dropBusinessWrites),
    });

    expect(report.lost).toBeGreaterThan(0);
    expect(report.violations.some((violation) => violation.includes('effect missing'))).toBe(true);
    expect(report.violations).toContainEqual(historyViolation('inputEqualsOutput', 9002));
  });

  it('counts duplicate effects when a commit throttled after it was applied is sent again without its marker condition', async () => {
    const report = await runSeed(9003, {
      ...small,
      messages: 600,
      tamper: (client) =>
        tamperFailedTransactions(client.document, isThrottle, (resend, items) =>
          resend(items.map(withoutCondition)),
        ),
    });

    expect(report.throttles['after applied']).toBeGreaterThan(0);
    expect(report.duplicateEffects).toBeGreaterThan(0);
    expect(report.violations.some((violation) => violation.includes('duplicate effect'))).toBe(true);
    // The commit sent again rewritten is no repeat of the applied one: its effect is in the history.
    expect(report.violations).toContainEqual(historyViolation('exactlyOnce', 9003));
  });

  it('counts lost messages when a commit that met a transaction conflict is taken for committed', async () => {
    const report = await runSeed(9004, {
      ...small,
      tamper: (client) =>
        tamperFailedTransactions(client.document, isTransactionConflict, async () => ({
          output: { $metadata: {} },
          response: {},
        })),
    });

    expect(report.racingConflicts).toBeGreaterThan(0);
    expect(report.lost).toBeGreaterThan(0);
    expect(report.violations.some((violation) => violation.includes('never processed'))).toBe(true);
    expect(report.violations).toContainEqual(historyViolation('inputEqualsOutput', 9004));
  });

  it('counts lost messages when the runtime deletes the batch of an invocation killed at its timeout', async () => {
    const report = await runSeed(9005, { ...small, acknowledgeTimedOut: true, timeoutChance: 0.1 });

    expect(report.injected['invocations timed out']).toBeGreaterThan(0);
    expect(report.lost).toBeGreaterThan(0);
    expect(report.violations).toContainEqual(historyViolation('inputEqualsOutput', 9005));
  });

  it('reports log lines in the wrong invocation when concurrent invocations of a process share one event', async () => {
    const report = await runSeed(9006, {
      ...small,
      // A handler keeping "the current event" in its own state, which the next invocation in the
      // same process overwrites before the first one reads it.
      wrapHandler: (handler) => {
        let current: Parameters<typeof handler>[0] | undefined;
        return async (event, context) => {
          current = event;
          await new Promise((resolve) => setTimeout(resolve, 5));
          return handler(current, context);
        };
      },
    });

    expect(report.injected['invocations shared a process']).toBeGreaterThan(0);
    expect(report.violations.some((violation) => violation.includes('a message it did not receive'))).toBe(
      true,
    );
  });
});

describe.runIf(SINGLE_SEED === undefined)(
  'the order check on a deliberately broken FIFO queue or handler',
  () => {
    const small = { messages: 200, mode: 'atomic', deadLetter: 'direct', queue: 'fifo' } as const;

    it('names orderPerGroup when the queue hands out the second message of a group before its first', async () => {
      const report = await runSeed(9101, {
        ...small,
        // Each group's messages in a batch, last first: the engine runs them in that order.
        wrapQueue: (queue) => ({ ...queue, receive: (max) => lastFirstPerGroup(queue.receive(max)) }),
      });

      expect(report.violations).toContainEqual(historyViolation('orderPerGroup', 9101));
    });

    it('names orderPerGroup when a handler runs each record of a batch on its own, so a failure holds nothing of its group back', async () => {
      const report = await runSeed(9102, {
        ...small,
        // The "rest of the group fails" rule needs the batch: one record per call loses it.
        wrapHandler: (handler) => async (event, context) => {
          const failures = [];
          for (const record of event.Records) {
            const response = await handler({ Records: [record] }, context);
            failures.push(...response.batchItemFailures);
          }
          return { batchItemFailures: failures };
        },
      });

      expect(report.history.groups).toBeGreaterThan(0);
      expect(report.violations).toContainEqual(historyViolation('orderPerGroup', 9102));
    });
  },
);

/** `batch` with each group's messages in reverse order, each group keeping its places in the batch. */
function lastFirstPerGroup<T extends { readonly groupId?: string }>(batch: readonly T[]): T[] {
  const reversed = new Map<string | undefined, T[]>();
  for (const received of batch) {
    const list = reversed.get(received.groupId) ?? [];
    list.unshift(received);
    reversed.set(received.groupId, list);
  }
  return batch.map((received) => reversed.get(received.groupId)!.shift()!);
}
