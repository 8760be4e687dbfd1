/**
 * Two services joined by the transactional outbox, with faults in both consumers and the relay
 * (see `support/chain-simulation.ts` for what is simulated, `support/chain-oracle.ts` for what is
 * checked): orders (atomic mode, `unitOfWork.emit`) commits its business write and one or two
 * events into a real outbox table; the real relay reads the table's real stream through a
 * simulated event source and publishes to shipping's queue; shipping (entity mode, keyed by the
 * `idempotency-key` attribute) applies each event. Every order's effect once, every event once in
 * the outbox and once downstream, poison input nowhere past orders, and the double tap changes
 * nothing.
 *
 * Shipping's queue refuses some events for good (`support/chain-destination.ts`: events larger
 * than its `MaximumMessageSize`, which the writer cannot know, refused by the SQS conformance
 * layer; a seeded few refused with `InvalidMessageContents`), and its `SendMessage` fails now and
 * then (throttled, a 5xx, a connection timeout, an answer lost after the message landed), as does
 * the dead-letter queue's. Every refused event is on the relay's dead-letter queue with its
 * reason and the whole event, never downstream; every other event is published and applied once;
 * none is lost; and no shard is held: the relay names a checkpoint only at a record a transient
 * fault met, so no batch is retried at one checkpoint more often than the faults allow, and none
 * goes to the on-failure destination. A refused event may be dead-lettered more than once
 * (counted as duplicate dead letters): a crashed or raced relay invocation, or a record emitted
 * twice, runs it again, and a dead letter is sent at least once like any message. The double tap
 * dead-letters nothing again: orders commits nothing new, so the stream carries nothing new.
 * Each way the relay could take its destination's answers wrongly is broken on purpose once: a
 * transient failure taken for a refusal (an event shipping takes, dead-lettered), a refusal taken
 * for throttling (the shard held until the on-failure destination, the event lost); and lost relay
 * checkpoints alone, with every other relay fault off, re-publish enough to give a receiver keyed
 * by the message id duplicate effects.
 *
 * Size: `RELIABILITY_MESSAGES` orders per seed (default 120; `npm run test:soak` runs 10,000),
 * `RELIABILITY_SEEDS` seeds (default 4, seeds 1..n), or one seed alone with
 * `RELIABILITY_SEED=<n>`. A failing seed prints the command that replays it.
 *
 * The run ends with one line on standard output (printed again by
 * `test/support/summary-reporter.ts` after vitest's totals), for example
 * `chain: 480 orders (627 events), … 58 transient publish faults retried (…), … 44 events refused
 * (… refusals) → dead-letter queue (…; 51 dead letters, 7 duplicates), at most 3 retries at one checkpoint, …
 * 0 duplicate effects, 0 lost`.
 */
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_TYPE_ATTRIBUTE } from '../../lambda/core/contract';
import { classifyPublishError } from '../../lambda/store/classify-aws-error';
import { uniqueName } from '../support/aws';
import { createConformingSqsClient } from '../support/aws-limits/sqs';
import {
  foreignEventsOf,
  injectedRefusal,
  isRefusal,
  PUBLISH_FAULTS,
  type PublishFault,
  publishFaultError,
  REFUSAL_REASONS,
  SHIPPING_QUEUE_MAX_MESSAGE_BYTES,
} from './support/chain-destination';
import { type ChainSeedReport, checkChainSeed } from './support/chain-oracle';
import { type ChainSeedOptions, runChainSimulation } from './support/chain-simulation';
import { positiveInteger } from './support/environment';
import { isSimulatedCrash } from './support/fault-injection';
import { CHAIN_PROOF, createProofRecord } from './support/proof-record';
import {
  createLocalClient,
  createOutboxTable,
  createTables,
  deleteTables,
  type LocalClient,
} from './support/tables';

const MESSAGES = positiveInteger('RELIABILITY_MESSAGES', 120);
const SEED_COUNT = positiveInteger('RELIABILITY_SEEDS', 4);
const INSTANCES = positiveInteger('RELIABILITY_INSTANCES', 4);
const SINGLE_SEED = process.env.RELIABILITY_SEED ? positiveInteger('RELIABILITY_SEED', 1) : undefined;
const SEEDS = SINGLE_SEED === undefined ? Array.from({ length: SEED_COUNT }, (_, i) => i + 1) : [SINGLE_SEED];
/** Only guards against a hang: 150 ms per order on a loaded 2-core machine, double tap included. */
const SEED_TIMEOUT_MILLIS = Math.max(300_000, MESSAGES * 150);

const inboxTable = uniqueName('eo-rel-chain-inbox');
const ordersTable = uniqueName('eo-rel-chain-orders');
const shipmentsTable = uniqueName('eo-rel-chain-shipments');
const outboxTables: string[] = [];
const reports: ChainSeedReport[] = [];
let admin: LocalClient;

beforeAll(async () => {
  admin = createLocalClient({ maxAttempts: 3 });
  await createTables(admin.raw, inboxTable, ordersTable, shipmentsTable);
});

// biome-ignore lint/correctness/noEmptyPattern: vitest requires a destructuring first argument; the file suite is the second.
afterAll(async ({}, file) => {
  await deleteTables(admin.raw, inboxTable, ordersTable, shipmentsTable, ...outboxTables);
  admin.raw.destroy();
  if (reports.length === 0) return;
  const sum = (pick: (report: ChainSeedReport) => number) =>
    reports.reduce((total, report) => total + pick(report), 0);
  const summary =
    `chain: ${sum((r) => r.messages)} orders (${sum((r) => r.events)} events), ` +
    `${sum((r) => r.duplicateDeliveries)} duplicate deliveries, ${sum((r) => r.crashes)} crashes injected ` +
    `(${sum((r) => r.crashesBy.orders)} orders, ${sum((r) => r.crashesBy.relay)} relay, ${sum((r) => r.crashesBy.shipping)} shipping), ` +
    `${sum((r) => r.lostResponses)} lost responses, ` +
    `${sum((r) => r.failedPublishes + r.lostAnswers)} transient publish faults retried (${sum((r) => r.publishFaults.throttled ?? 0)} throttled, ` +
    `${sum((r) => r.publishFaults['server-error'] ?? 0)} 5xx, ${sum((r) => r.publishFaults['connection-timeout'] ?? 0)} connection timeouts, ` +
    `${sum((r) => r.lostAnswers)} answers lost), ${sum((r) => r.failedDeadLetterSends)} failed dead-letter sends retried, ` +
    `${sum((r) => r.refused)} events refused (${sum((r) => r.refusedAttempts)} refusals) → dead-letter queue (${sum((r) => r.refusedBy['too-large-for-queue'] ?? 0)} too large for the queue, ` +
    `${sum((r) => r.refusedBy.injected ?? 0)} InvalidMessageContents, ${sum((r) => r.refusedBy['invalid-attribute'] ?? 0)} with an invalid attribute (another writer's items); ` +
    `${sum((r) => r.relayDeadLetters)} dead letters, ${sum((r) => r.duplicateDeadLetters)} duplicates), ` +
    `at most ${Math.max(...reports.map((r) => r.maxRetryAtOnePosition))} retries at one checkpoint, ` +
    `${sum((r) => r.rePublishes)} relay re-publishes, ${sum((r) => r.races)} relay races (${sum((r) => r.racedEvents)} events published by both), ` +
    `${sum((r) => r.concurrentShardBatches)} relay batches run beside another of their shard (two instances on one shard), ` +
    `${sum((r) => r.lostCheckpoints)} relay checkpoints lost (${sum((r) => r.redeliveredAfterLostCheckpoint)} records delivered again), ` +
    `${sum((r) => r.emittedTwice)} stream records emitted twice, ${sum((r) => r.redrives)} redrives, ` +
    `${sum((r) => r.doubleTapMessages)} double-tap messages, ` +
    `${sum((r) => r.duplicateEffects)} duplicate effects, ${sum((r) => r.lost)} lost; ` +
    `history checked: ${sum((r) => r.history.keys)} keys, ${sum((r) => r.history.events)} events followed downstream, ${sum((r) => r.history.violations)} violations`;
  process.stdout.write(`${summary}\n`);
  file.meta.summary = summary;
  file.meta.proof = createProofRecord(CHAIN_PROOF, reports, { messages: MESSAGES, seeds: SEEDS });
});

function replayHint(seed: number): string {
  return `replay: RELIABILITY_SEED=${seed} RELIABILITY_MESSAGES=${MESSAGES} npx vitest run --project reliability test/reliability/chain-simulation.test.ts`;
}

async function runSeed(seed: number, overrides: Partial<ChainSeedOptions> = {}): Promise<ChainSeedReport> {
  const outboxTable = uniqueName(`eo-rel-chain-outbox-s${seed}`);
  outboxTables.push(outboxTable);
  const outboxStreamArn = await createOutboxTable(admin.raw, outboxTable);
  const result = await runChainSimulation({
    seed,
    messages: MESSAGES,
    instances: INSTANCES,
    inboxTable,
    ordersTable,
    shipmentsTable,
    outboxTable,
    outboxStreamArn,
    startMillis: Date.now(),
    ...overrides,
  });
  return checkChainSeed(result, admin.document);
}

describe(`chain simulation: ${SEEDS.length} seed(s) of ${MESSAGES} orders through orders, the outbox relay and shipping`, () => {
  // One seed at a time: each runs three functions at once, and the machine is shared.
  it.each(SEEDS)(
    'seed %i: every order applied once, every event it emits once in the outbox and once downstream or, refused by the queue, on the dead-letter queue, poison input nowhere past orders, and the double tap changes nothing',
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
      expect(report.events, `seed ${seed}`).toBeGreaterThan(report.messages / 2);
      expect(report.duplicateDeliveries, `seed ${seed}`).toBeGreaterThan(0);
      expect(report.rePublishes, `seed ${seed}: ${replayHint(seed)}`).toBeGreaterThan(0);
      expect(report.doubleTapMessages, `seed ${seed}`).toBeGreaterThan(report.messages);
      expect(report.refused, `seed ${seed}`).toBeGreaterThan(0);
      expect(report.refusedBy['invalid-attribute'], `seed ${seed}`).toBeGreaterThan(0);
      expect(report.relayDeadLetters, `seed ${seed}`).toBe(report.refused + report.duplicateDeadLetters);
    },
    SEED_TIMEOUT_MILLIS,
  );

  it.runIf(SINGLE_SEED === undefined && SEEDS.length >= 4)(
    'crashed both consumers and the relay, failed and lost publishes of every kind, refused events of both kinds, failed dead-letter sends, raced two relay instances on the same records, emitted stream records twice and redrove orders from the dead-letter queue across the seeds',
    () => {
      expect(reports).toHaveLength(SEEDS.length);
      const total = (pick: (report: ChainSeedReport) => number) =>
        reports.reduce((sum, report) => sum + pick(report), 0);
      expect(total((r) => r.crashesBy.orders)).toBeGreaterThan(0);
      expect(total((r) => r.crashesBy.relay)).toBeGreaterThan(0);
      expect(total((r) => r.crashesBy.shipping)).toBeGreaterThan(0);
      expect(total((r) => r.failedPublishes)).toBeGreaterThan(0);
      for (const fault of ['throttled', 'server-error', 'connection-timeout', 'answer-lost']) {
        expect(
          total((r) => r.publishFaults[fault] ?? 0),
          fault,
        ).toBeGreaterThan(0);
      }
      expect(total((r) => r.failedDeadLetterSends)).toBeGreaterThan(0);
      expect(total((r) => r.refusedBy['too-large-for-queue'] ?? 0)).toBeGreaterThan(0);
      expect(total((r) => r.refusedBy.injected ?? 0)).toBeGreaterThan(0);
      expect(total((r) => r.lostAnswers)).toBeGreaterThan(0);
      expect(total((r) => r.races)).toBeGreaterThan(0);
      expect(total((r) => r.concurrentShardBatches)).toBeGreaterThan(0);
      expect(total((r) => r.lostCheckpoints)).toBeGreaterThan(0);
      expect(total((r) => r.racedEvents)).toBeGreaterThan(0);
      expect(total((r) => r.emittedTwice)).toBeGreaterThan(0);
      expect(total((r) => r.redrives)).toBeGreaterThan(0);
      expect(total((r) => r.outageDeadLettered)).toBeGreaterThan(0);
      expect(total((r) => r.retriesFromCheckpoint)).toBeGreaterThan(0);
      expect(reports.every((report) => report.deadLettered > 0)).toBe(true);
    },
  );
});

describe.runIf(SINGLE_SEED === undefined)('the chain oracle on a deliberately broken receiver', () => {
  it('counts duplicate effects downstream when shipping keys by the message id instead of the idempotency key', async () => {
    const report = await runSeed(9201, { messages: 40, brokenReceiver: true });

    expect(report.rePublishes).toBeGreaterThan(0);
    expect(report.duplicateEffects).toBeGreaterThan(0);
    expect(
      report.violations.some((violation) => violation.includes('effects in shipping (duplicate effect)')),
    ).toBe(true);
    // The history checker names the event, with its emission, its publishes and both effects.
    expect(report.violations).toContainEqual(
      expect.stringMatching(
        /^history check chainOnce failed at seed \d+ \((\S+)\): \1 emitted once upstream, applied \d+ times downstream\n {2}t\d+ emitted \1(?:\n {2}t\d+ (?:delivered \1 published as \S+|applied \S+ window 0 for \1))+$/,
      ),
    );
  });

  it('counts duplicate effects downstream from lost relay checkpoints alone when shipping keys by the message id', async () => {
    const report = await runSeed(9204, {
      messages: 20,
      brokenReceiver: true,
      lostCheckpointsOnly: true,
      relayLostCheckpointChance: 0.5,
    });

    // Nothing else re-publishes: no relay crash, race, failed publish or second emission.
    expect([
      report.crashesBy.relay,
      report.races,
      report.failedPublishes,
      report.lostAnswers,
      report.emittedTwice,
    ]).toEqual([0, 0, 0, 0, 0]);
    expect(report.lostCheckpoints).toBeGreaterThan(0);
    expect(report.rePublishes).toBeGreaterThan(0);
    expect(report.duplicateEffects).toBeGreaterThan(0);
    expect(
      report.violations.some((violation) => violation.includes('effects in shipping (duplicate effect)')),
    ).toBe(true);
    // The history checker names the event, with its emission, its publishes and both effects.
    expect(report.violations).toContainEqual(
      expect.stringMatching(
        /^history check chainOnce failed at seed \d+ \((\S+)\): \1 emitted once upstream, applied \d+ times downstream\n {2}t\d+ emitted \1(?:\n {2}t\d+ (?:delivered \1 published as \S+|applied \S+ window 0 for \1))+$/,
      ),
    );
  });
});

describe.runIf(SINGLE_SEED === undefined)(
  "the chain oracle on a relay that misclassifies its destination's answers",
  () => {
    it('sees events dead-lettered that shipping takes when a transient publish failure is taken for a refusal', async () => {
      const report = await runSeed(9202, {
        messages: 40,
        tamperPublishError: (error) =>
          isRefusal(error) || isSimulatedCrash(error) ? error : injectedRefusal(),
      });

      expect(report.failedPublishes).toBeGreaterThan(0);
      expect(
        report.violations.some((violation) =>
          /event \S+ dead-lettered, though shipping's queue takes it/.test(violation),
        ),
      ).toBe(true);
    });

    it('sees the shard held and refused events lost when a refusal is taken for throttling', async () => {
      const report = await runSeed(9203, {
        messages: 20,
        tamperPublishError: (error) => (isRefusal(error) ? publishFaultError('throttled', 0) : error),
      });

      expect(report.refused).toBeGreaterThan(0);
      expect(report.lost).toBeGreaterThan(0);
      expect(
        report.violations.some((violation) =>
          /refused event \S+ \(.*\) not on the dead-letter queue/.test(violation),
        ),
      ).toBe(true);
      expect(
        report.violations.some((violation) =>
          /^legacy-order-writer's foreign-\d+: refused event \S+ \(invalid-attribute\) not on the dead-letter queue/.test(
            violation,
          ),
        ),
      ).toBe(true);
      expect(
        report.violations.some((violation) => violation.includes('discarded to the on-failure destination')),
      ).toBe(true);
      expect(report.violations).toContainEqual(
        expect.stringMatching(
          /^history check chainOnce failed at seed 9203 \((\S+)\): \1 emitted upstream, never applied downstream nor dead-lettered with a reason\n {2}t\d+ emitted \1/,
        ),
      );
    });
  },
);

describe("the chain's destination faults, as the relay classifies them", () => {
  it('retries every transient publish fault, in both of its shapes, with the code its kind has', () => {
    const codes: Record<PublishFault, string> = {
      throttled: 'THROTTLED',
      'server-error': 'SERVICE_UNAVAILABLE',
      'connection-timeout': 'NETWORK',
      'answer-lost': 'NETWORK',
    };
    const classified = PUBLISH_FAULTS.flatMap(([fault]) =>
      [0, 0.5].map((roll) => [fault, classifyPublishError(publishFaultError(fault, roll)).code]),
    );

    expect(classified).toEqual(
      PUBLISH_FAULTS.flatMap(([fault]) => [0, 0.5].map(() => [fault, codes[fault]])),
    );
  });

  it('dead-letters an event too large for the queue and one whose type SQS refuses as an attribute value, as the conformance layer refuses them, and an injected InvalidMessageContents', async () => {
    const queueUrl = 'https://sqs.us-east-1.amazonaws.com/000000000000/small';
    const sqs = createConformingSqsClient(
      { send: async (_command: SendMessageCommand) => ({ MessageId: 'sent' }) },
      { queues: { [queueUrl]: { maximumMessageSize: SHIPPING_QUEUE_MAX_MESSAGE_BYTES } } },
    );
    const tooLarge = await sqs
      .send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: 'x'.repeat(SHIPPING_QUEUE_MAX_MESSAGE_BYTES + 1),
        }),
      )
      .catch((error: unknown) => error);

    const [foreign] = foreignEventsOf(1, 1);
    const invalidAttribute = await sqs
      .send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: foreign!.body,
          MessageAttributes: { [EVENT_TYPE_ATTRIBUTE]: { DataType: 'String', StringValue: foreign!.type } },
        }),
      )
      .catch((error: unknown) => error);

    expect(String(invalidAttribute)).toMatch(REFUSAL_REASONS['invalid-attribute']);
    for (const refusal of [tooLarge, invalidAttribute, injectedRefusal()]) {
      expect(isRefusal(refusal)).toBe(true);
      expect(classifyPublishError(refusal).code).toBe('VALIDATION');
    }
  });
});
