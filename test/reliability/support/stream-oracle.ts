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
 * - malformed data, no key: every write dead-lettered with `MALFORMED_BODY` / `MISSING_KEY`, a
 *   reason and (Kinesis) the data as produced;
 * - behind an outage (its dependency down for the whole first pass): never acknowledged in the
 *   first pass, but discarded by the event source after `MaximumRetryAttempts` and named by the
 *   on-failure destination (shard, first and last sequence number of its batch); applied once
 *   by the replay from `TRIM_HORIZON`. In marker mode a copy of it may be acknowledged instead
 *   as a duplicate: of a concurrent delivery's marker, when another copy was reported, or of a
 *   marker left without its effect (an at-most-once gap).
 *
 * Every record of the first pass ended acknowledged or inside a range the on-failure destination
 * named (never skipped silently); every record of the replay ended acknowledged. Marker mode is
 * at-most-once for the effect by design: a key left with a marker and no effect by one invocation
 * (a crash in between, a lost response to the marker write) may miss its effect, counted as an
 * at-most-once gap, not as lost. Anything else missing is lost.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ENTITY_FINGERPRINT_ATTRIBUTE } from '../../../lambda/core/contract';
import { recoveredData, streamDeadLetterOf } from '../../support/stream-fixtures';
import type { PlannedStreamRecord, StreamCrashPoint, StreamSimulationResult } from './stream-simulation';
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
  readonly deadLettered: number;
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
  const lettersOf = new Map<string, typeof result.deadLetters>();
  for (const letter of result.deadLetters) {
    lettersOf.set(letter.sourceMessageId, [...(lettersOf.get(letter.sourceMessageId) ?? []), letter]);
  }

  let lost = 0;
  let deadLettered = 0;
  let duplicateEffects = 0;
  let atMostOnceGaps = 0;

  /** Every write of `plan` was dead-lettered with `code`, a reason and (Kinesis) the data. */
  const expectDeadLettered = (plan: PlannedStreamRecord, code: string): boolean => {
    let ok = true;
    for (const entry of entriesOf.get(plan) ?? []) {
      const letters = lettersOf.get(entry.meta.eventId) ?? [];
      const data = plan.writes[entry.meta.write]!.data;
      const wrong = letters.filter(
        (letter) =>
          letter.code !== code ||
          letter.reason === '' ||
          (options.source === 'kinesis' &&
            recoveredData(streamDeadLetterOf(letter))?.toString('utf8') !== data),
      );
      if (letters.length === 0 || wrong.length > 0) {
        violate(
          `r${plan.index} ${entry.meta.eventId}: expected dead-lettered as ${code}, got ${JSON.stringify(letters.map((l) => l.code))}`,
        );
        ok = false;
      }
    }
    if (ok) deadLettered += 1;
    return ok;
  };
  const expectNotDeadLettered = (plan: PlannedStreamRecord): void => {
    for (const entry of entriesOf.get(plan) ?? []) {
      const letters = lettersOf.get(entry.meta.eventId) ?? [];
      if (letters.length > 0) {
        violate(`r${plan.index} ${entry.meta.eventId}: won its key but dead-lettered as ${letters[0]!.code}`);
      }
    }
  };

  // Poison input.
  for (const plan of plans) {
    if (plan.kind === 'malformed' || plan.kind === 'missing-key') {
      if (!expectDeadLettered(plan, plan.expectedCode!)) lost += 1;
    }
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
      if (loser !== winners[0] && !expectDeadLettered(loser, 'PAYLOAD_MISMATCH')) lost += 1;
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
  if (plans.some((plan) => plan.outage) && firstPassReports.length === 0) {
    violate('records behind an outage, but the on-failure destination got nothing');
  }
  if (stream.onFailure.length > result.firstPassOnFailure) {
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
    deadLettered,
    atMostOnceGaps,
    acknowledgedBesideOutage,
    duplicateEffects,
    lost,
    invocations: result.invocations,
    violations,
  };
}
