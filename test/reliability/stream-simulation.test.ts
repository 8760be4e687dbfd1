/**
 * Seeded stream batches through the real stream handlers (Kinesis, DynamoDB Streams, Kafka) and the
 * real store on the local emulator (see `support/stream-simulation.ts` for what is simulated, `support/stream-oracle.ts`
 * and `support/stream-dead-letter-oracle.ts` for what is checked): retries from the checkpoint,
 * bisected batches, producer duplicates, crashes mid-batch, batches discarded after
 * `MaximumRetryAttempts`, a replay of every shard from `TRIM_HORIZON`, and records SQS cannot
 * hold as they are (empty, binary, oversize, at the size boundary) dead-lettered to a real queue
 * through the SQS conformance layer, with a `MaximumMessageSize` of 2,048 bytes. The faults AWS
 * throws at a stream consumer are each counted and each broken on purpose once: throttled and
 * conflicted commits (classified as refusals), two instances on one shard (a partition key spread
 * over lanes), a table stream's transactions split across batches and interleaved (a reader that
 * drops a transaction's later part), and checkpoints lost after the function answered (a marker
 * written without its condition).
 *
 * Size: `RELIABILITY_MESSAGES` records per seed (default 150; `npm run test:soak` runs 10,000),
 * `RELIABILITY_SEEDS` seeds (default 5, seeds 1..n: Kinesis atomic, marker and entity, a table
 * stream in atomic mode, a Kafka topic in atomic mode; Kafka's entity and marker mode at seeds 10
 * and 15), or one seed alone
 * with `RELIABILITY_SEED=<n>`. A failing seed prints the command that replays it.
 *
 * The run ends with one line on standard output (printed again by
 * `test/support/summary-reporter.ts` after vitest's totals), for example
 * `streams: 600 records, … 0 duplicate effects, 0 lost; bad data: …, 0 refused by SQS, 0 shards stalled`.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeadLetterMessage } from '../../lambda/dead-letter/dead-letter-message';
import type { StreamDeadLetterBody } from '../../lambda/streams';
import { uniqueName } from '../support/aws';
import { positiveInteger } from './support/environment';
import { ungrantedActions } from './support/grants';
import { createProofRecord, STREAM_PROOF } from './support/proof-record';
import type { StreamEntry } from './support/simulated-stream';
import { checkStreamSeed, type StreamSeedReport } from './support/stream-oracle';
import type { StreamMeta } from './support/stream-simulation';
import {
  BAD_KINDS,
  runStreamSimulation,
  STREAM_CRASH_POINTS,
  type StreamSeedOptions,
  streamSeedProfile,
} from './support/stream-simulation';
import {
  createLocalClient,
  createTables,
  deleteTables,
  dropBusinessWrites,
  dropMarkerCondition,
  type LocalClient,
  tamperTransactions,
} from './support/tables';

const MESSAGES = positiveInteger('RELIABILITY_MESSAGES', 150);
const SEED_COUNT = positiveInteger('RELIABILITY_SEEDS', 5);
/** Lambda instances: a seed has up to four lanes (two shards, two lanes each) running at once. */
const INSTANCES = positiveInteger('RELIABILITY_INSTANCES', 6);
const SINGLE_SEED = process.env.RELIABILITY_SEED ? positiveInteger('RELIABILITY_SEED', 1) : undefined;
const SEEDS = SINGLE_SEED === undefined ? Array.from({ length: SEED_COUNT }, (_, i) => i + 1) : [SINGLE_SEED];
/** Only guards against a hang: 150 ms per record on a loaded 2-core machine, replay included. */
const SEED_TIMEOUT_MILLIS = Math.max(300_000, MESSAGES * 150);

const inboxTable = uniqueName('eo-rel-stream-inbox');
const businessTable = uniqueName('eo-rel-stream-business');
const reports: StreamSeedReport[] = [];
let admin: LocalClient;

beforeAll(async () => {
  admin = createLocalClient({ maxAttempts: 3 });
  await createTables(admin.raw, inboxTable, businessTable);
});

// biome-ignore lint/correctness/noEmptyPattern: vitest requires a destructuring first argument; the file suite is the second.
afterAll(async ({}, file) => {
  await deleteTables(admin.raw, inboxTable, businessTable);
  admin.raw.destroy();
  if (reports.length === 0) return;
  const sumOf = (of: readonly StreamSeedReport[], pick: (report: StreamSeedReport) => number) =>
    of.reduce((total, report) => total + pick(report), 0);
  const sum = (pick: (report: StreamSeedReport) => number) => sumOf(reports, pick);
  const bySource = [...new Set(reports.map((report) => report.source))].map((source) => {
    const of = reports.filter((report) => report.source === source);
    return `${source} ${sumOf(of, (r) => r.records)} records: ${sumOf(of, (r) => r.duplicateEffects)} duplicate effects, ${sumOf(of, (r) => r.lost)} lost`;
  });
  const summary =
    `streams: ${sum((r) => r.records)} records (${sum((r) => r.producerDuplicates)} producer duplicates), ` +
    `${sum((r) => r.duplicateDeliveries)} duplicate deliveries (${sum((r) => r.deliveredConcurrently)} keys concurrently), ${sum((r) => r.retriesFromCheckpoint)} retries from checkpoint, ` +
    `${sum((r) => r.bisects)} bisects, ${sum((r) => r.crashes)} crashes injected, ${sum((r) => r.lostResponses)} lost responses, ` +
    `${sum((r) => r.throttles)} claims throttled, ${sum((r) => r.conflicts)} transaction conflicts, ` +
    `${sum((r) => r.concurrentShardBatches)} batches run beside another of their shard (two instances on one shard), ` +
    `${sum((r) => r.lostCheckpoints)} checkpoints lost (${sum((r) => r.redeliveredAfterLostCheckpoint)} records delivered again), ` +
    `${sum((r) => r.transactions)} table-stream transactions (${sum((r) => r.splitTransactions)} split across batches, ${sum((r) => r.interleavedTransactions)} interleaved with another), ` +
    `${sum((r) => r.onFailureBatches)} batches to the on-failure destination, ${sum((r) => r.replayed)} records replayed from TRIM_HORIZON, ` +
    `${sum((r) => r.deadLettered)} dead-lettered, ${sum((r) => r.atMostOnceGaps)} at-most-once gaps (marker), ` +
    `${sum((r) => r.duplicateEffects)} duplicate effects, ${sum((r) => r.lost)} lost (${bySource.join('; ')}); ` +
    `bad data: ${BAD_KINDS.map((kind) => `${sum((r) => r.badRecords[kind])} ${kind}`).join(', ')}, ` +
    `${sum((r) => r.deadLetterMessages)} dead letters on the queue (${sum((r) => r.deadLetterCopies)} copies: replay, retries, ${sum((r) => r.deadLetterLostResponses)} lost responses), ` +
    `${sum((r) => r.truncatedDeadLetters)} truncated, ${sum((r) => r.base64DeadLetters)} base64, ` +
    `${sum((r) => r.movedOnPastBadRecord)} times the shard moved on in the same invocation, ` +
    `${sum((r) => r.refusedDeadLetters)} refused by SQS, ${sum((r) => r.stalls)} shards stalled; ` +
    `history checked: ${sum((r) => r.history.keys)} keys, order checked: ${sum((r) => r.history.groups)} partition keys, ${sum((r) => r.history.violations)} violations`;
  process.stdout.write(`${summary}\n`);
  file.meta.summary = summary;
  file.meta.proof = createProofRecord(STREAM_PROOF, reports, { messages: MESSAGES, seeds: SEEDS });
});

function replayHint(seed: number): string {
  return `replay: RELIABILITY_SEED=${seed} RELIABILITY_MESSAGES=${MESSAGES} npx vitest run --project reliability test/reliability/stream-simulation.test.ts`;
}

async function runSeed(
  seed: number,
  overrides: Partial<StreamSeedOptions> = {},
): Promise<StreamSeedReport & { readonly ungranted: readonly string[] }> {
  const result = await runStreamSimulation({
    seed,
    messages: MESSAGES,
    ...streamSeedProfile(seed),
    instances: INSTANCES,
    inboxTable,
    businessTable,
    startMillis: Date.now(),
    ...overrides,
  });
  return {
    ...(await checkStreamSeed(result, admin.document)),
    ungranted: ungrantedActions(result.options, result.actions),
  };
}

describe(`stream simulation: ${SEEDS.length} seed(s) of ${MESSAGES} records through the real stream handlers`, () => {
  // One seed at a time: each runs up to four lanes at once, and the machine is shared.
  it.each(SEEDS)(
    'seed %i: every record ends applied exactly once or dead-lettered with a reason, and nothing the event source discards goes unreported',
    async (seed) => {
      const started = Date.now();
      const report = await runSeed(seed);
      reports.push(report);
      if (report.violations.length > 0 || process.env.RELIABILITY_VERBOSE) {
        console.log(
          `seed ${seed} (${Date.now() - started} ms)\n${JSON.stringify({ ...report, violations: report.violations.slice(0, 20) }, null, 1)}\n${replayHint(seed)}`,
        );
      }

      expect(report.violations.slice(0, 20), `seed ${seed} failed; ${replayHint(seed)}`).toEqual([]);
      expect(report.duplicateEffects).toBe(0);
      expect(report.lost).toBe(0);
      // Every request the runtime sent is allowed by IdempotentStreamConsumer's grants in the seed's mode.
      expect(report.ungranted, `seed ${seed} (${report.mode})`).toEqual([]);
      expect(report.producerDuplicates, `seed ${seed}`).toBeGreaterThan(0);
      expect(report.retriesFromCheckpoint, `seed ${seed}`).toBeGreaterThan(0);
      expect(report.replayed).toBe(report.streamRecords);
      expect(report.throttles, `seed ${seed}`).toBeGreaterThan(0);
      expect(report.conflicts, `seed ${seed}`).toBeGreaterThan(0);
      if (report.parallelization > 1) {
        expect(report.concurrentShardBatches, `seed ${seed}`).toBeGreaterThan(0);
      }
      if (report.source === 'dynamodb') {
        expect(report.splitTransactions, `seed ${seed}`).toBeGreaterThan(0);
        expect(report.interleavedTransactions, `seed ${seed}`).toBeGreaterThan(0);
      }
      // Bad data: every kind the source carries, dead-lettered within the queue's size, no shard held back.
      expect(report.refusedDeadLetters, `seed ${seed}`).toBe(0);
      expect(report.stalls, `seed ${seed}`).toBe(0);
      for (const kind of report.source === 'dynamodb' ? (['oversize', 'boundary'] as const) : BAD_KINDS) {
        expect(report.badRecords[kind], `seed ${seed}: ${kind}`).toBeGreaterThan(0);
      }
      expect(report.truncatedDeadLetters, `seed ${seed}`).toBeGreaterThan(0);
      if (report.source !== 'dynamodb') expect(report.base64DeadLetters, `seed ${seed}`).toBeGreaterThan(0);
      expect(report.movedOnPastBadRecord, `seed ${seed}`).toBeGreaterThan(0);
      if (report.bisectOnError)
        expect(report.bisects, `seed ${seed}: ${replayHint(seed)}`).toBeGreaterThan(0);
      else expect(report.bisects).toBe(0);
    },
    SEED_TIMEOUT_MILLIS,
  );

  it.runIf(SINGLE_SEED === undefined && SEEDS.length >= 4)(
    'ran every source and mode, crashed at every crash point, and sent discarded batches to the on-failure destination across the seeds',
    () => {
      expect(reports).toHaveLength(SEEDS.length);
      const ran = new Set(reports.map((report) => `${report.source} ${report.mode}`));
      for (const profile of ['kinesis atomic', 'kinesis marker', 'kinesis entity', 'dynamodb atomic']) {
        expect(ran, profile).toContain(profile);
      }
      if (SEEDS.length >= 5) expect(ran).toContain('kafka atomic');
      for (const point of STREAM_CRASH_POINTS) {
        const crashes = reports.reduce((sum, report) => sum + report.crashesByPoint[point], 0);
        // Marker mode alone writes its effect outside the commit.
        expect(crashes, point).toBeGreaterThan(0);
      }
      expect(reports.every((report) => report.deadLettered > 0)).toBe(true);
      expect(reports.reduce((sum, report) => sum + report.onFailureBatches, 0)).toBeGreaterThan(0);
      expect(reports.some((report) => report.parallelization > 1)).toBe(true);
      expect(reports.reduce((sum, report) => sum + report.deliveredConcurrently, 0)).toBeGreaterThan(0);
      expect(reports.reduce((sum, report) => sum + report.deadLetterLostResponses, 0)).toBeGreaterThan(0);
      expect(reports.reduce((sum, report) => sum + report.lostCheckpoints, 0)).toBeGreaterThan(0);
      expect(reports.reduce((sum, report) => sum + report.redeliveredAfterLostCheckpoint, 0)).toBeGreaterThan(
        0,
      );
    },
  );
});

describe.runIf(SINGLE_SEED === undefined)('the stream oracle on a deliberately broken store', () => {
  const small = { messages: 80, source: 'kinesis', mode: 'atomic' } as const;

  it('counts duplicate effects when the marker is written without its condition', async () => {
    const report = await runSeed(9101, {
      ...small,
      tamper: (client) => tamperTransactions(client, dropMarkerCondition),
    });

    expect(report.duplicateEffects).toBeGreaterThan(0);
    expect(report.violations.some((violation) => violation.includes('duplicate effect'))).toBe(true);
    expect(report.violations).toContainEqual(
      expect.stringMatching(
        /^history check exactlyOnce failed at seed 9101 \(\S+\): \S+ applied again in live window 0/,
      ),
    );
  });

  it('counts lost records when the commit drops the business writes', async () => {
    const report = await runSeed(9102, {
      ...small,
      tamper: (client) => tamperTransactions(client, dropBusinessWrites),
    });

    expect(report.lost).toBeGreaterThan(0);
    expect(report.violations.some((violation) => violation.includes('effect missing'))).toBe(true);
    expect(report.violations).toContainEqual(
      expect.stringMatching(
        /^history check inputEqualsOutput failed at seed 9102 \(m\d+\): m\d+ neither applied/,
      ),
    );
  });

  it('sees the records of a partition key applied out of their sequence when each batch reaches the handler reversed', async () => {
    const report = await runSeed(9103, {
      ...small,
      tamperBatch: (batch) => [...batch.entries].reverse(),
    });

    const [violation] = report.violations.filter((line) => line.startsWith('history check orderPerGroup'));
    // The two effects of one partition key that show it, and nothing else.
    expect(violation?.split('\n')).toEqual([
      expect.stringMatching(
        /^history check orderPerGroup failed at seed 9103 \((customer-\d+)\): group \1: \S+ \(sequence \d+\) applied after \S+ \(sequence \d+\)$/,
      ),
      expect.stringMatching(
        /^ {2}t\d+ applied \S+ amount \d+ window 0 group (customer-\d+) sequence \d+ \(m\d+\)$/,
      ),
      expect.stringMatching(
        /^ {2}t\d+ applied \S+ amount \d+ window 0 group (customer-\d+) sequence \d+ \(m\d+\)$/,
      ),
    ]);
  });

  it('sees records acknowledged while they failed when the handler checkpoints past its failures', async () => {
    // A seed with records behind an outage (two).
    const report = await runSeed(9109, {
      ...small,
      tamperResponse: () => ({ batchItemFailures: [] }),
    });

    expect(report.lost).toBeGreaterThan(0);
    expect(report.violations.some((violation) => violation.includes('while its dependency was down'))).toBe(
      true,
    );
  });

  it('sees records acknowledged while they failed when a Kafka handler names the offset after the record to retry', async () => {
    const report = await runSeed(9131, {
      ...small,
      source: 'kafka',
      parallelization: 1,
      tamperKafkaResponse: (response) => ({
        batchItemFailures: response.batchItemFailures.map(({ itemIdentifier }) => ({
          itemIdentifier: { ...itemIdentifier, offset: itemIdentifier.offset + 1 },
        })),
      }),
    });

    // The record to retry is checkpointed as done: a dead letter whose send failed is never sent
    // in the first pass, a throttled record is not applied before the replay.
    expect(report.lost).toBeGreaterThan(0);
    expect(
      report.violations.some((violation) =>
        /^invocation \d+ \(orders-\d+\/0\): orders-\d+:\d+ before the checkpoint ended retry \w+, acknowledged$/.test(
          violation,
        ),
      ),
    ).toBe(true);
    expect(
      report.violations.some((violation) =>
        /^r\d+ orders-\d+:\d+ \(.*\): on the dead-letter queue 1 times, acknowledged in 2 passes$/.test(
          violation,
        ),
      ),
    ).toBe(true);
  });
});

/**
 * A classifier that takes a transient failure for a refusal: the request whose failure `matches`
 * throws a `ValidationException` instead, so the record is dead-lettered as permanent though a
 * retry would have applied it.
 */
function refuseAsInvalid(client: LocalClient, matches: (error: unknown) => boolean): void {
  client.document.middlewareStack.add(
    (next) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        if (!matches(error)) throw error;
        throw Object.assign(new Error('One or more parameter values were invalid (tampered)'), {
          name: 'ValidationException',
          $fault: 'client',
          $metadata: { httpStatusCode: 400 },
        });
      }
    },
    { step: 'initialize', priority: 'low', name: 'reliabilityRefuseAsInvalid' },
  );
}

const isThrottled = (error: unknown) => (error as Error).name === 'ThrottlingException';
const isConflict = (error: unknown) =>
  (error as { CancellationReasons?: { Code?: string }[] }).CancellationReasons?.some(
    (reason) => reason.Code === 'TransactionConflict',
  ) === true;

describe.runIf(SINGLE_SEED === undefined)(
  'the stream oracle on the faults AWS throws, each broken on purpose',
  () => {
    // Fewer records than the planted bad data needs (`PLANTED`, whose largest record is 1 MiB).
    const small = { messages: 30, source: 'kinesis', mode: 'atomic' } as const;

    it.each([
      ['a throttled commit', 9121, isThrottled, 'throttles'],
      ['a commit cancelled by a transaction conflict', 9122, isConflict, 'conflicts'],
    ] as const)(
      'sees valid records dead-lettered when %s is classified as a refusal',
      async (_what, seed, matches, count) => {
        const report = await runSeed(seed, {
          ...small,
          tamper: (client) => refuseAsInvalid(client, matches),
        });

        expect(report[count]).toBeGreaterThan(0);
        expect(
          report.violations.some((violation) =>
            violation.includes('won its key but dead-lettered as VALIDATION'),
          ),
        ).toBe(true);
      },
    );

    it('sees one partition key in two batches at once when the lanes of a shard are not kept by partition key', async () => {
      const report = await runSeed(9123, {
        ...small,
        parallelization: 2,
        tamperLane: (_partitionKey, position) => position % 2,
      });

      expect(report.concurrentShardBatches).toBeGreaterThan(0);
      expect(
        report.violations.some((violation) =>
          / in two batches at once .*: its order is lost/.test(violation),
        ),
      ).toBe(true);
    });

    it('names the transaction when the changes of a transaction split across batches are dropped after its first batch', async () => {
      // A reader that takes a transaction as delivered once its first batch ended.
      const firstBatch = new Map<string, number>();
      const report = await runSeed(9124, {
        ...small,
        // A table stream's seed of 40 changes has a few transactions.
        messages: 40,
        source: 'dynamodb',
        tamperBatch: (batch) =>
          batch.entries.filter((entry: StreamEntry<StreamMeta>) => {
            const { transaction } = entry.meta.plan;
            if (transaction === undefined) return true;
            if (!firstBatch.has(transaction)) firstBatch.set(transaction, batch.id);
            return firstBatch.get(transaction) === batch.id;
          }),
      });

      expect(report.splitTransactions).toBeGreaterThan(0);
      expect(report.lost).toBeGreaterThan(0);
      expect(
        report.violations.some((violation) =>
          /^transaction t\d+ \(split across batches\).*: \d+ of \d+ changes applied/.test(violation),
        ),
      ).toBe(true);
    });

    it('sees a record processed again after its checkpoint was lost when the marker is written without its condition', async () => {
      const report = await runSeed(9125, {
        ...small,
        lostCheckpointChance: 0.3,
        tamper: (client) => tamperTransactions(client, dropMarkerCondition),
      });

      expect(report.lostCheckpoints).toBeGreaterThan(0);
      expect(report.duplicateEffects).toBeGreaterThan(0);
      expect(
        report.violations.some((violation) =>
          /processed again by invocation \d+ after its checkpoint was lost/.test(violation),
        ),
      ).toBe(true);
    });
  },
);

describe.runIf(SINGLE_SEED === undefined)(
  'the stream oracle on a deliberately broken dead-letter writer',
  () => {
    // Enough records for one bad record of every variant (`PLANTED`), and no more.
    const small = { messages: 40, source: 'kinesis', mode: 'atomic' } as const;
    const envelopeOf = (message: DeadLetterMessage) => JSON.parse(message.body) as StreamDeadLetterBody;
    const withEnvelope = (message: DeadLetterMessage, envelope: StreamDeadLetterBody): DeadLetterMessage => ({
      ...message,
      body: JSON.stringify(envelope),
    });

    it('misses every binary record when the writer drops the dead letters of data that is not UTF-8', async () => {
      const report = await runSeed(9111, {
        ...small,
        tamperDeadLetter: (message) => {
          const { data } = envelopeOf(message);
          return 'encoding' in data && data.encoding === 'base64' ? undefined : message;
        },
      });

      expect(report.lost).toBeGreaterThan(0);
      expect(
        report.violations.some((violation) =>
          /\((gzip|random-bytes)\): on the dead-letter queue 0 times/.test(violation),
        ),
      ).toBe(true);
    });

    it('sees SQS refuse the raw data as a dead letter, and the shard stall on it, as before the envelope', async () => {
      // The dead letter of the first stream adapters: the data decoded as text, sent as the body.
      const report = await runSeed(9112, {
        ...small,
        tamperDeadLetter: (message, data) => ({ ...message, body: Buffer.from(data).toString('utf8') }),
      });

      expect(report.refusedDeadLetters).toBeGreaterThan(0);
      expect(report.stalls).toBeGreaterThan(0);
      expect(report.violations.some((violation) => /stalled at r\d+ \S+ \(empty\)/.test(violation))).toBe(
        true,
      );
      expect(report.violations.some((violation) => violation.includes('InvalidMessageContents'))).toBe(true);
      expect(
        report.violations.some((violation) => violation.includes('a dead letter that is not JSON')),
      ).toBe(true);
    });

    it('finds a Kafka dead letter by its topic-partition and offset, and misses the record when the writer names the next offset', async () => {
      // Enough records for one bad record of every Kafka variant (`PLANTED`).
      const report = await runSeed(9132, {
        ...small,
        messages: 44,
        source: 'kafka',
        parallelization: 1,
        tamperDeadLetter: (message) => {
          const envelope = envelopeOf(message);
          const offset = (envelope.source.offset ?? Number(envelope.source.sequenceNumber)) + 1;
          return withEnvelope(message, {
            ...envelope,
            source: { ...envelope.source, offset, sequenceNumber: String(offset) },
          });
        },
      });

      expect(report.lost).toBeGreaterThan(0);
      expect(
        report.violations.some((violation) =>
          /^r\d+ orders-\d+:\d+ \(.*\): on the dead-letter queue 0 times/.test(violation),
        ),
      ).toBe(true);
      expect(
        report.violations.some((violation) => /: dead letter coordinates .*"offset":\d+/.test(violation)),
      ).toBe(true);
    });

    it('sees data lost when the writer marks every dead letter truncated, and coordinates that point elsewhere', async () => {
      const report = await runSeed(9113, {
        ...small,
        tamperDeadLetter: (message, data) => {
          const envelope = envelopeOf(message);
          const truncated = {
            truncated: true,
            bytes: data.byteLength,
            sha256: createHash('sha256').update(data).digest('hex'),
          } as const;
          // One letter in two also names the wrong sequence number.
          const source =
            data.byteLength % 2 === 0 ? envelope.source : { ...envelope.source, sequenceNumber: '0' };
          return withEnvelope(message, { ...envelope, source, data: truncated });
        },
      });

      expect(report.lost).toBeGreaterThan(0);
      expect(
        report.violations.some((violation) => violation.includes('truncated, though the whole dead letter')),
      ).toBe(true);
      expect(
        report.violations.some((violation) => /coordinates .*"sequenceNumber":"0"/.test(violation)),
      ).toBe(true);
    });
  },
);
