/**
 * The oracle of the stream simulation: reads the end state (business items on the emulator, the
 * simulated stream, the dead letters) and checks every planned record.
 *
 * Per record:
 * - valid, winning its key: every write of it (a producer duplicate, a table stream's second
 *   emission) acknowledged and none dead-lettered; its effect there exactly once, with its
 *   payload (`amount`): the business item's `effects` counter (atomic, marker), or the
 *   conditional puts of the entity seen on the wire (entity);
 * - valid, losing its key to another payload: every write dead-lettered with `PAYLOAD_MISMATCH`;
 *   exactly one record of a key wins;
 * - malformed data, no key, bad data (empty, binary, oversize, at the size boundary): every
 *   write dead-lettered with `MALFORMED_BODY` / `MISSING_KEY`, each of its dead letters right
 *   (`stream-dead-letter-oracle.ts`: the envelope, reason, code, coordinates, and the data byte
 *   for byte or, only where the whole would not fit the queue, marked truncated with its size and
 *   SHA-256). Dead letters are at-least-once: at least one in each pass that acknowledged the
 *   record, at most one a delivery, every copy the same (the replay dead-letters a record again,
 *   as does a retry after a crash or a lost `SendMessage` response);
 * - behind an outage (its dependency down for the whole first pass): never acknowledged in the
 *   first pass, but discarded by the event source after `MaximumRetryAttempts` and named by the
 *   on-failure destination (shard, first and last sequence number of its batch); applied once
 *   by the replay from `TRIM_HORIZON`. In marker mode a copy of it may be acknowledged instead
 *   as a duplicate: of a concurrent delivery's marker, when another copy was reported, or of a
 *   marker left without its effect (an at-most-once gap).
 *
 * Every record of the first pass ended acknowledged or inside a range the on-failure destination
 * named (never skipped silently); every record of the replay ended acknowledged. No shard stalls:
 * only a record behind an outage may use up the retries (a batch discarded at any other record
 * means it held its shard back), and the replay discards nothing. The dead-letter queue held
 * exactly what was sent, and no `SendMessage` was refused. A table stream's transaction, split across
 * batches and interleaved with another's, ends with every change of it applied or dead-lettered
 * (a change missing is named with its transaction). Marker mode is
 * at-most-once for the effect by design: a key left with a marker and no effect by one invocation
 * (a crash in between, a lost response to the marker write) may miss its effect, counted as an
 * at-most-once gap, not as lost. Anything else missing is lost.
 *
 * The run's history is checked too (`history.ts`): each key's effect applied once, every record
 * applied with its payload or dead-lettered with a reason (or excused as a marker-mode gap), and
 * per partition key the effects in the order of the records' sequence numbers, but for the records
 * of a batch the event source discarded after `MaximumRetryAttempts` (the replay applies them
 * after later ones, as AWS would). The first violation is reported with its seed and the entries
 * that show it.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ENTITY_FINGERPRINT_ATTRIBUTE } from '../../../lambda/core/contract';
import { checkRunHistory, type HistoryCoverage } from './history';
import { deadLetterProblems, indexDeadLetters } from './stream-dead-letter-oracle';
import {
  BAD_KINDS,
  type BadKind,
  type ExpectedCode,
  isPoison,
  type PlannedStreamRecord,
  type StreamCrashPoint,
  type StreamSimulationResult,
} from './stream-simulation';
import { readItems } from './tables';

/** What one seed amounted to. */
export interface StreamSeedReport {
  readonly seed: number;
  readonly source: string;
  readonly mode: string;
  readonly bisectOnError: boolean;
  readonly parallelization: number;
  /** Logical records (what the producer meant to write once). */
  readonly records: number;
  /** Records on the stream: the logical ones and the producer duplicates. */
  readonly streamRecords: number;
  readonly producerDuplicates: number;
  readonly deliveries: number;
  /** Deliveries beyond the first of each logical record (retries, replays, producer duplicates). */
  readonly duplicateDeliveries: number;
  /** Keys delivered in two invocations that overlapped in time (other lanes or shards). */
  readonly deliveredConcurrently: number;
  readonly batches: number;
  readonly retriesFromCheckpoint: number;
  readonly bisects: number;
  /** Batches discarded after `MaximumRetryAttempts` and named by the on-failure destination. */
  readonly onFailureBatches: number;
  /** Records the replay from `TRIM_HORIZON` delivered again. */
  readonly replayed: number;
  readonly crashes: number;
  readonly crashesByPoint: Readonly<Record<StreamCrashPoint, number>>;
  readonly lostResponses: number;
  /** Claims answered with an injected `ThrottlingException`, and with a transaction conflict. */
  readonly throttles: number;
  readonly conflicts: number;
  /** Invocations started while another lane of the same shard ran a batch (two instances on one shard). */
  readonly concurrentShardBatches: number;
  /** Answered batches whose checkpoint was not stored (they ran again), and the records that came again. */
  readonly lostCheckpoints: number;
  readonly redeliveredAfterLostCheckpoint: number;
  /** Table stream: DynamoDB transactions; those first delivered in two or more batches; those with another transaction's change between two of theirs. */
  readonly transactions: number;
  readonly splitTransactions: number;
  readonly interleavedTransactions: number;
  /** Logical records dead-lettered, every write of them right (poison, bad data, payloads that lost their key). */
  readonly deadLettered: number;
  /** Logical records of bad data, by kind. */
  readonly badRecords: Readonly<Record<BadKind, number>>;
  /** Messages the dead-letter queue held. */
  readonly deadLetterMessages: number;
  /**
   * Dead letters beyond the first of a stream record. At-least-once by design: the replay from
   * `TRIM_HORIZON` delivers every record again, and a permanent failure has no inbox record to
   * meet, so it is dead-lettered again; a crash after the send, or a lost `SendMessage` response,
   * retries the record, which is sent again.
   */
  readonly deadLetterCopies: number;
  /** Dead letters marked truncated (the data past the queue's size), and with base64 data (not UTF-8). */
  readonly truncatedDeadLetters: number;
  readonly base64DeadLetters: number;
  /** `SendMessage` responses of the dead-letter queue lost (injected): the record was sent again. */
  readonly deadLetterLostResponses: number;
  /** `SendMessage` calls the conformance layer (or the emulator) refused. */
  readonly refusedDeadLetters: number;
  /** Batches discarded at a record that was not behind an outage (a shard held back), or in the replay. */
  readonly stalls: number;
  /** Deliveries of a bad record dead-lettered while a later record of its batch ran in the same invocation. */
  readonly movedOnPastBadRecord: number;
  /** Marker mode: keys whose effect is missing by design (at-most-once). */
  readonly atMostOnceGaps: number;
  /**
   * Marker mode: copies of an outage record acknowledged in the first pass as duplicates: of a
   * concurrent delivery's marker, while another copy was reported to the on-failure destination,
   * or of a marker left without its effect (an at-most-once gap).
   */
  readonly acknowledgedBesideOutage: number;
  readonly duplicateEffects: number;
  readonly lost: number;
  readonly invocations: number;
  /** What the history checker covered (`history.ts`): keys, partition keys whose order it checked. */
  readonly history: HistoryCoverage;
  /** Everything that broke the contract; empty when the seed passed. */
  readonly violations: readonly string[];
}

/** Reads the end state and checks every planned record of one seed. */
export async function checkStreamSeed(
  result: StreamSimulationResult,
  reader: DynamoDBDocumentClient,
): Promise<StreamSeedReport> {
  const { options, plans, stream } = result;
  const violations: string[] = [...result.runtimeViolations];
  const violate = (message: string) => violations.push(message);

  const entriesOf = new Map<PlannedStreamRecord, typeof stream.entries>();
  for (const entry of stream.entries) {
    entriesOf.set(entry.meta.plan, [...(entriesOf.get(entry.meta.plan) ?? []), entry]);
  }
  const letters = indexDeadLetters(result);
  violations.push(...letters.problems);
  const lettersOf = (eventId: string) => letters.byEventId.get(eventId) ?? [];

  let lost = 0;
  /** Records neither applied nor dead-lettered right (each counted in `lost`). */
  const missing = new Set<PlannedStreamRecord>();
  let deadLettered = 0;
  let duplicateEffects = 0;
  let atMostOnceGaps = 0;
  /** Dead letters beyond the first of a record (the replay, a crash after the send, a lost response). */
  let deadLetterCopies = 0;

  /**
   * Every write of `plan` was dead-lettered with `code`, right (`deadLetterProblems`): at least
   * once in each pass that acknowledged it, at most once a delivery, every copy the same.
   */
  const expectDeadLettered = (plan: PlannedStreamRecord, code: ExpectedCode): boolean => {
    let ok = true;
    for (const entry of entriesOf.get(plan) ?? []) {
      const { eventId } = entry.meta;
      const sent = lettersOf(eventId);
      const where = `r${plan.index} ${eventId} (${plan.variant ?? plan.kind})`;
      const passes = [result.firstPass.get(entry.sequenceNumber), stream.fates().get(entry.sequenceNumber)];
      const acknowledged = passes.filter((fate) => fate === 'acknowledged').length;
      const delivered = result.deliveries.get(eventId) ?? 0;
      const problems = [
        ...new Set(sent.flatMap((letter) => deadLetterProblems(result, entry, letter, code))),
      ];
      if (sent.length < acknowledged || sent.length === 0) {
        violate(
          `${where}: on the dead-letter queue ${sent.length} times, acknowledged in ${acknowledged} passes`,
        );
        ok = false;
      } else if (sent.length > delivered) {
        violate(`${where}: on the dead-letter queue ${sent.length} times, delivered ${delivered} times`);
        ok = false;
      } else if (problems.length > 0) {
        violate(`${where}: dead letter ${problems.join('; ')}`);
        ok = false;
      } else if (sent.some((letter) => letter.received.body !== sent[0]!.received.body)) {
        violate(`${where}: its dead letters differ`);
        ok = false;
      }
      deadLetterCopies += Math.max(0, sent.length - 1);
    }
    if (ok) deadLettered += 1;
    return ok;
  };
  const expectNotDeadLettered = (plan: PlannedStreamRecord): void => {
    for (const entry of entriesOf.get(plan) ?? []) {
      const sent = lettersOf(entry.meta.eventId);
      if (sent.length > 0) {
        violate(
          `r${plan.index} ${entry.meta.eventId}: won its key but dead-lettered as ${sent[0]!.envelope.code}`,
        );
      }
    }
  };

  // Poison input and bad data.
  for (const plan of plans) {
    if (isPoison(plan) && !expectDeadLettered(plan, plan.expectedCode!)) lost += 1;
  }

  // Keyed records, by key: one winner, its effect once.
  const byKey = new Map<string, PlannedStreamRecord[]>();
  for (const plan of plans) {
    if (plan.scopedKey !== undefined) byKey.set(plan.scopedKey, [...(byKey.get(plan.scopedKey) ?? []), plan]);
  }
  const business = await readItems(reader, options.businessTable, [...byKey.keys()]);
  for (const [key, members] of byKey) {
    const item = business.get(key);
    if (item === undefined) {
      if (options.mode === 'marker' && result.markerGaps.has(key)) {
        atMostOnceGaps += 1;
        continue;
      }
      lost += 1;
      for (const member of members) missing.add(member);
      violate(`${key}: effect missing (records ${members.map((plan) => `r${plan.index}`).join(', ')})`);
      continue;
    }
    const effects = options.mode === 'entity' ? (result.entityWrites.get(key) ?? 0) : Number(item.effects);
    if (effects !== 1) {
      duplicateEffects += Math.max(0, effects - 1);
      violate(`${key}: ${effects} effects, expected 1${effects > 1 ? ' (duplicate effect)' : ''}`);
    }
    if (options.mode === 'entity' && typeof item[ENTITY_FINGERPRINT_ATTRIBUTE] !== 'string') {
      violate(`${key}: the entity carries no fingerprint`);
    }
    const winners = members.filter((plan) => plan.amount === Number(item.amount));
    if (winners.length !== 1) {
      violate(`${key}: ${winners.length} records carry the stored amount ${String(item.amount)}, expected 1`);
      continue;
    }
    expectNotDeadLettered(winners[0]!);
    for (const loser of members) {
      if (loser !== winners[0] && !expectDeadLettered(loser, 'PAYLOAD_MISMATCH')) {
        lost += 1;
        missing.add(loser);
      }
    }
  }

  let acknowledgedBesideOutage = 0;
  // The event source: nothing skipped silently in the first pass, everything acknowledged in the replay.
  const firstPassReports = stream.onFailure.slice(0, result.firstPassOnFailure);
  for (const entry of stream.entries) {
    const { eventId } = entry.meta;
    const first = result.firstPass.get(entry.sequenceNumber);
    if (first === 'reported') {
      const named = firstPassReports.some(
        (report) =>
          report.shardId === entry.shardId &&
          report.startSequenceNumber <= entry.sequenceNumber &&
          entry.sequenceNumber <= report.endSequenceNumber,
      );
      if (!named) violate(`${eventId}: discarded in the first pass, but no on-failure record names it`);
    } else if (first !== 'acknowledged') {
      violate(`${eventId}: ${first} at the end of the first pass`);
    }
    if (entry.meta.plan.outage && first === 'acknowledged') {
      // Marker mode acknowledges a copy that meets a marker as a duplicate (at-most-once by
      // design): the marker of a concurrent delivery still running its effect (which then fails,
      // releases its marker and keeps retrying until its batch is discarded and reported), or a
      // marker left without its effect (a lost response to the marker write: an at-most-once gap).
      const siblingReported = (entriesOf.get(entry.meta.plan) ?? []).some(
        (sibling) => result.firstPass.get(sibling.sequenceNumber) === 'reported',
      );
      const gap = result.markerGaps.has(entry.meta.plan.scopedKey ?? '');
      const outcome = result.firstPassOutcomes.get(eventId);
      if (options.mode === 'marker' && (siblingReported || gap) && outcome === 'duplicate') {
        acknowledgedBesideOutage += 1;
      } else {
        violate(
          `r${entry.meta.plan.index} ${eventId}: acknowledged (${outcome}) while its dependency was down`,
        );
      }
    }
    const second = stream.fates().get(entry.sequenceNumber);
    if (second !== 'acknowledged') violate(`${eventId}: ${second} at the end of the replay`);
  }
  // No shard stalls: only a record behind an outage keeps failing once faults stop, so only it
  // may use up the retries and have its batch discarded; anything else held its shard back.
  const bySequenceNumber = new Map(stream.entries.map((entry) => [entry.sequenceNumber, entry]));
  let stalls = 0;
  for (const report of firstPassReports) {
    const at = bySequenceNumber.get(report.startSequenceNumber);
    if (at?.meta.plan.outage === true) continue;
    stalls += 1;
    violate(
      `${report.shardId}: stalled at ${at === undefined ? report.startSequenceNumber : `r${at.meta.plan.index} ${at.meta.eventId} (${at.meta.plan.variant ?? at.meta.plan.kind})`} until its retries ran out; ${report.batchSize} record(s) discarded`,
    );
  }
  if (plans.some((plan) => plan.outage) && firstPassReports.length === 0) {
    violate('records behind an outage, but the on-failure destination got nothing');
  }
  if (stream.onFailure.length > result.firstPassOnFailure) {
    stalls += stream.onFailure.length - result.firstPassOnFailure;
    violate(`the replay discarded ${stream.onFailure.length - result.firstPassOnFailure} batch(es)`);
  }

  let duplicateDeliveries = 0;
  let deliveries = 0;
  for (const plan of plans) {
    const count = (entriesOf.get(plan) ?? []).reduce(
      (sum, entry) => sum + (result.deliveries.get(entry.meta.eventId) ?? 0),
      0,
    );
    deliveries += count;
    duplicateDeliveries += Math.max(0, count - 1);
  }
  let deliveredConcurrently = 0;
  for (const times of result.deliveryTimes.values()) {
    const overlap = times.some((a, i) =>
      times
        .slice(i + 1)
        .some((b) => a.invocation !== b.invocation && a.startedAt < b.endedAt && b.startedAt < a.endedAt),
    );
    if (overlap) deliveredConcurrently += 1;
  }
  // Transactions (table stream): split when their changes were first delivered in two or more
  // invocations, interleaved when another transaction's change lies between two of theirs.
  const transactions = new Map<string, PlannedStreamRecord[]>();
  for (const plan of plans) {
    if (plan.transaction !== undefined) {
      transactions.set(plan.transaction, [...(transactions.get(plan.transaction) ?? []), plan]);
    }
  }
  const positionOf = new Map(stream.entries.map((entry, index) => [entry, index]));
  let splitTransactions = 0;
  let interleavedTransactions = 0;
  for (const [transaction, members] of transactions) {
    const firstBatches = new Set(
      members.map((plan) => result.deliveryTimes.get(plan.scopedKey ?? '')?.[0]?.invocation),
    );
    const split = firstBatches.size > 1;
    if (split) splitTransactions += 1;
    const positions = members.map((plan) => positionOf.get(entriesOf.get(plan)![0]!)!);
    const between = stream.entries.slice(Math.min(...positions), Math.max(...positions));
    const interleaved = between.some(
      (entry) => entry.meta.plan.transaction !== undefined && entry.meta.plan.transaction !== transaction,
    );
    if (interleaved) interleavedTransactions += 1;
    const gone = members.filter((plan) => missing.has(plan));
    if (gone.length > 0) {
      violate(
        `transaction ${transaction}${split ? ' (split across batches)' : ''}${interleaved ? ' (interleaved)' : ''}: ${members.length - gone.length} of ${members.length} changes applied or dead-lettered, missing ${gone.map((plan) => `r${plan.index}`).join(', ')}`,
      );
    }
  }
  const history = checkRunHistory(options.seed, result.history, violate);
  const parsed = [...letters.byEventId.values()].flat();
  const crashes = Object.values(result.crashes).reduce((sum, count) => sum + count, 0);
  return {
    seed: options.seed,
    source: options.source,
    mode: options.mode,
    bisectOnError: options.bisectOnError,
    parallelization: options.parallelization,
    records: plans.length,
    streamRecords: stream.entries.length,
    producerDuplicates: stream.entries.length - plans.length,
    deliveries,
    duplicateDeliveries,
    deliveredConcurrently,
    batches: stream.stats.batches,
    retriesFromCheckpoint: stream.stats.retriesFromCheckpoint,
    bisects: stream.stats.bisects,
    onFailureBatches: stream.onFailure.length,
    replayed: stream.entries.length,
    crashes,
    crashesByPoint: result.crashes,
    lostResponses: result.lostResponses,
    throttles: result.throttles,
    conflicts: result.conflicts,
    concurrentShardBatches: result.concurrentShardBatches,
    lostCheckpoints: result.lostCheckpoints,
    redeliveredAfterLostCheckpoint: result.redeliveredAfterLostCheckpoint,
    transactions: transactions.size,
    splitTransactions,
    interleavedTransactions,
    deadLettered,
    badRecords: Object.fromEntries(
      BAD_KINDS.map((kind) => [kind, plans.filter((plan) => plan.kind === kind).length]),
    ) as Record<BadKind, number>,
    deadLetterMessages: result.deadLetters.length,
    deadLetterCopies,
    truncatedDeadLetters: parsed.filter((letter) => 'truncated' in letter.envelope.data).length,
    base64DeadLetters: parsed.filter(
      (letter) => 'encoding' in letter.envelope.data && letter.envelope.data.encoding === 'base64',
    ).length,
    deadLetterLostResponses: result.deadLetterLostResponses,
    refusedDeadLetters: result.deadLetterSendErrors.length,
    stalls,
    movedOnPastBadRecord: result.movedOnPastBadRecord,
    atMostOnceGaps,
    acknowledgedBesideOutage,
    duplicateEffects,
    lost,
    invocations: result.invocations,
    history,
    violations,
  };
}
