/**
 * One seed of the stream simulation: a seeded plan of records written to a simulated stream
 * (`simulated-stream.ts`: shards, sequence numbers, checkpoints, bisects, retries, the on-failure
 * destination), read by simulated Lambda instances that run the real `createKinesisHandler` or
 * `createDynamoDbStreamHandler` over the real DynamoDB store on the local emulator, with faults
 * injected at every step (`fault-injection.ts`).
 *
 * What is simulated and what is real:
 * - real: the toolkit (options, stream handler, batch processor, store), the SDK clients and
 *   their middleware stacks, DynamoDB (the emulator, the only arbiter of races);
 * - simulated: the stream and its event source mapping (the emulator's mappings ignore
 *   `batchItemFailures`, docs/local-aws-streams.md), the Lambda runtime (one batch per lane at a
 *   time, a crashed invocation a function error), each instance's clock (skewed by up to 5 s),
 *   and the producer: a `PutRecords` retried after a lost answer writes the same data again under
 *   a new sequence number (and, for a producer that picks a partition key per attempt, under
 *   another partition key, so the copy may run concurrently on another shard or lane). A
 *   DynamoDB table stream emits the same change twice with a new event id.
 *
 * Faults (each a pure function of the seed and of what is decided: a record's event id and how
 * often it was delivered): per delivered record throttling, a transaction conflict, a lost
 * response, a claim applied whose response is lost and sent again at once by the SDK, a crash
 * before or after the claim, a crash after the record's outcome is decided, in marker mode a
 * crash during the effect, a dependency failing (the handler throws: a retry); per update of an
 * inbox record (marker mode's release) its response lost and the SDK's retry sent at once; per
 * invocation a crash while the batch response is built; per dead-letter send a failure. A batch
 * retried `FAULT_FREE_FROM_RETRY` times or more runs without faults, so no record but an outage
 * one can use up `MAX_RETRY_ATTEMPTS`.
 *
 * Plan: valid records, poison records (malformed data, no key, a key reused with another payload),
 * producer duplicates, and records whose downstream dependency is down for the whole first pass
 * (an outage): the event source retries them until `MAX_RETRY_ATTEMPTS`, then discards their batch
 * and reports it to the on-failure destination (its shard and sequence range); once the stream
 * drained, the outage is over and the operator replays every shard from `TRIM_HORIZON`, which
 * brings the discarded records back and every other record again as a duplicate.
 */

import { AsyncLocalStorage } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { scopeKey, toDedupKey } from '../../../lambda/core/dedup-key';
import type { LogEntry, Logger } from '../../../lambda/core/logger';
import type { MetricsSink } from '../../../lambda/core/metrics';
import type { DeadLetterMessage, DeadLetterSender } from '../../../lambda/dead-letter/dead-letter-message';
import { atomic } from '../../../lambda/modes/atomic';
import { entity } from '../../../lambda/modes/entity';
import { marker } from '../../../lambda/modes/marker';
import {
  createDynamoDbStreamHandler,
  createKinesisHandler,
  type DynamoDbChange,
  type DynamoDbStreamRecord,
  fromData,
  fromKeysAndVersion,
  type KinesisStreamRecord,
  type StreamBatchResponse,
} from '../../../lambda/streams';
import {
  attachFaultInjection,
  type DynamoRequest,
  type FaultController,
  type RequestFault,
  roleOf,
  SimulatedCrash,
} from './fault-injection';
import { chanceOf, createRandom, type Random } from './prng';
import {
  claimRequestFault,
  createCapturingDeadLetterSender,
  createCrashingMetrics,
  drawFault,
  losesResponse,
} from './simulated-lambda';
import {
  createSimulatedStream,
  type EntryFate,
  type SimulatedStream,
  type StreamBatch,
  type StreamEntry,
} from './simulated-stream';
import { addOwner, recordActions, unfollowedMarkers } from './simulation';
import { createLocalClient, type LocalClient } from './tables';

/** Which stream and mode a seed runs. */
export type StreamSource = 'kinesis' | 'dynamodb';
/** The modes whose effect lives in DynamoDB (two-phase is covered by the SQS simulation). */
export type StreamMode = 'atomic' | 'marker' | 'entity';

/** The event source mapping's `MaximumRetryAttempts`. */
export const MAX_RETRY_ATTEMPTS = 4;
/** From this retry of a batch on, it runs without injected faults. */
export const FAULT_FREE_FROM_RETRY = 3;
/** The event source mapping's `BatchSize`. */
export const BATCH_SIZE = 10;
/** Inbox record lifetime: far longer than the run, so every duplicate meets a live record. */
export const TTL_SECONDS = 86_400;
/** The largest clock skew of an instance, either way. */
export const MAX_SKEW_MILLIS = 5000;
/** The version attribute a table stream's changes are keyed by. */
const VERSION = 'version';

/** The kinds of planned record. */
export type StreamRecordKind = 'valid' | 'conflict' | 'malformed' | 'missing-key';

/** What a seed runs. */
export interface StreamSeedOptions {
  readonly seed: number;
  readonly messages: number;
  readonly source: StreamSource;
  readonly mode: StreamMode;
  readonly bisectOnError: boolean;
  readonly parallelization: number;
  readonly instances: number;
  readonly inboxTable: string;
  readonly businessTable: string;
  readonly startMillis: number;
  /** Test hook: lets a test break the store's protocol on purpose to prove the oracle sees it. */
  readonly tamper?: (client: LocalClient) => void;
  /** Test hook: lets a test break the checkpoint on purpose (rewrites each batch response). */
  readonly tamperResponse?: (response: StreamBatchResponse) => StreamBatchResponse;
}

/**
 * The source, mode and mapping of a seed: Kinesis atomic, marker and entity, then a DynamoDB
 * table stream in atomic mode (a projection); bisect on two seeds of three; a parallelization
 * factor of 2 on even seeds.
 */
export function streamSeedProfile(
  seed: number,
): Pick<StreamSeedOptions, 'source' | 'mode' | 'bisectOnError' | 'parallelization'> {
  const profiles = [
    { source: 'dynamodb', mode: 'atomic' },
    { source: 'kinesis', mode: 'atomic' },
    { source: 'kinesis', mode: 'marker' },
    { source: 'kinesis', mode: 'entity' },
  ] as const;
  return {
    ...profiles[seed % profiles.length]!,
    bisectOnError: seed % 3 !== 0,
    parallelization: seed % 2 === 0 ? 2 : 1,
  };
}

/** The consumer name of a seed: every key of a seed is scoped by it, so seeds share tables. */
export function streamConsumerOf(seed: number, source: StreamSource, mode: StreamMode): string {
  return `rel-stream-s${seed}-${source}-${mode}`;
}

/** One write of a planned record to the stream (a producer's retry writes another). */
export interface PlannedWrite {
  /** Position in write order. */
  readonly position: number;
  readonly partitionKey: string;
  /** The Kinesis data as produced, or the change as the table stream emits it. */
  readonly data: string;
}

/** One logical record: what the producer meant to write once. */
export interface PlannedStreamRecord {
  readonly index: number;
  readonly kind: StreamRecordKind;
  /** The business key (`id`), absent for poison input without one. */
  readonly key?: string;
  /** The inbox record's (and the business item's) key, for keyed records. */
  readonly scopedKey?: string;
  readonly amount: number;
  /** Every delivery fails with a retry while the first pass lasts (a dependency is down). */
  readonly outage: boolean;
  /** The code every dead letter of the record must carry: always for poison, for a keyed record only when another payload won its key. */
  readonly expectedCode?: 'MALFORMED_BODY' | 'MISSING_KEY' | 'PAYLOAD_MISMATCH';
  readonly writes: readonly PlannedWrite[];
}

/** The attribute values of a change image. */
type Image = Record<string, { S: string } | { N: string }>;

/**
 * The plan of a seed: about 90% valid records, 2% malformed data (Kinesis; a table stream cannot
 * carry it, so there a change without its version instead), 2% without a key (no `id`, or no
 * version), 5% reusing an earlier key with another payload, and 2% of valid records behind an
 * outage. 20% of records are written twice by a producer retry, a few batches later; a third of
 * those copies under another partition key.
 */
export function planStreamRecords(
  seed: number,
  count: number,
  consumer: string,
  source: StreamSource,
): PlannedStreamRecord[] {
  const random = createRandom(seed);
  const plans: PlannedStreamRecord[] = [];
  const partnerable: number[] = [];
  for (let index = 0; index < count; index += 1) {
    const roll = random.next();
    const amount = random.between(1, 1_000_000);
    let kind: StreamRecordKind =
      roll < 0.02 ? 'malformed' : roll < 0.04 ? 'missing-key' : roll < 0.09 ? 'conflict' : 'valid';
    if (kind === 'malformed' && source === 'dynamodb') kind = 'missing-key';
    let partner: PlannedStreamRecord | undefined;
    if (kind === 'conflict') {
      const pick =
        partnerable.length > 0 ? partnerable.splice(random.int(partnerable.length), 1)[0] : undefined;
      partner = pick === undefined ? undefined : plans[pick];
      if (partner === undefined) kind = 'valid';
    }
    const key = partner?.key ?? `k${index}`;
    const outage = kind === 'valid' && random.chance(0.02);
    const note = `order ${index} of seed ${seed}`;
    const dataOf = (): string => {
      if (source === 'dynamodb') {
        const image: Image = { pk: { S: key }, amount: { N: String(amount) }, note: { S: note } };
        if (kind !== 'missing-key') image[VERSION] = { N: '1' };
        return JSON.stringify({ Keys: { pk: { S: key } }, NewImage: image });
      }
      if (kind === 'malformed') return `{"id":"${key}","amount":${amount},"note":"truncated`;
      const payload = kind === 'missing-key' ? { amount, note } : { id: key, amount, note };
      return serialise(payload, random);
    };
    const partitionKey = `customer-${random.int(24)}`;
    const writes: PlannedWrite[] = [{ position: index, partitionKey, data: dataOf() }];
    if (random.chance(0.2)) {
      writes.push({
        position: index + random.between(1, 3 * BATCH_SIZE) + 0.5,
        partitionKey: random.chance(1 / 3) ? `customer-${random.int(24)}` : partitionKey,
        // A Kinesis producer serialises again; a table stream emits the same change.
        data: source === 'kinesis' && kind !== 'malformed' ? dataOf() : writes[0]!.data,
      });
    }
    const keyed = kind === 'valid' || kind === 'conflict';
    const dedupKey = source === 'kinesis' ? key : toDedupKey([key, 'INSERT', '1']);
    plans.push({
      index,
      kind,
      ...(keyed ? { key, scopedKey: scopeKey(consumer, dedupKey) } : {}),
      amount,
      outage,
      ...(kind === 'malformed'
        ? { expectedCode: 'MALFORMED_BODY' as const }
        : kind === 'missing-key'
          ? { expectedCode: 'MISSING_KEY' as const }
          : { expectedCode: 'PAYLOAD_MISMATCH' as const }),
      writes,
    });
    if (kind === 'valid' && !outage) partnerable.push(index);
  }
  return plans;
}

function serialise(payload: Record<string, unknown>, random: Random): string {
  // Keys in any order, as a producer's retry may serialise them: the fingerprint is canonical.
  return JSON.stringify(Object.fromEntries(random.shuffle(Object.entries(payload))));
}

/** Faults of one delivered record. */
type RecordFault =
  | 'throttle'
  | 'conflict'
  | 'lost-response'
  | 'lost-response-retried'
  | 'crash-before-claim'
  | 'crash-after-claim'
  | 'crash-after-outcome'
  | 'crash-during-effect'
  | 'dependency-fails';

const RECORD_FAULTS: readonly (readonly [RecordFault, number])[] = [
  ['throttle', 0.04],
  ['conflict', 0.03],
  ['lost-response', 0.02],
  ['lost-response-retried', 0.03],
  ['crash-before-claim', 0.008],
  ['crash-after-claim', 0.008],
  ['crash-after-outcome', 0.008],
  // Marker mode: the effect reached DynamoDB, then the process died.
  ['crash-during-effect', 0.01],
  ['dependency-fails', 0.03],
];

/** Crash points, as counted in the report. */
export const STREAM_CRASH_POINTS = [
  'before the claim',
  'after the claim',
  'after the outcome, before the checkpoint',
  'during the effect',
  'while building the batch response',
] as const;

/** A crash point. */
export type StreamCrashPoint = (typeof STREAM_CRASH_POINTS)[number];

/** What the stream carries next to each record. */
export interface StreamMeta {
  readonly plan: PlannedStreamRecord;
  /** 0 for the producer's first write, 1 for its retry. */
  readonly write: number;
  /** The record's event id (`<shard id>:<sequence number>` for Kinesis, a fresh id per emission for a table stream). */
  readonly eventId: string;
}

/** One invocation's record of a delivered record: what it logged, and whether it ran. */
interface DeliveryLog {
  readonly eventId: string;
  readonly sequenceNumber: string;
  outcome?: string;
  code?: string;
  /** For a mismatch or permanent failure: whether the dead letter was sent. */
  deadLetter?: string;
}

/** True when the logged outcome lets the event source move past the record. */
function isAcknowledged(log: DeliveryLog): boolean {
  if (log.outcome === 'processed' || log.outcome === 'duplicate' || log.outcome === 'stale') return true;
  return (log.outcome === 'mismatch' || log.outcome === 'permanent') && log.deadLetter === 'sent';
}

/** One delivery of a keyed record, timed in real time to find concurrent deliveries of a key. */
export interface DeliveryTime {
  readonly invocation: number;
  readonly startedAt: number;
  endedAt: number;
}

/** Everything a seed observed, for the oracle. */
export interface StreamSimulationResult {
  readonly options: StreamSeedOptions;
  readonly plans: readonly PlannedStreamRecord[];
  readonly stream: SimulatedStream<StreamMeta>;
  /** The fate of every record in the first pass (before the replay from `TRIM_HORIZON`). */
  readonly firstPass: ReadonlyMap<string, EntryFate>;
  /** The last outcome logged for each event id in the first pass, by an invocation that did not crash. */
  readonly firstPassOutcomes: ReadonlyMap<string, string>;
  /** The on-failure destination's records of the first pass. */
  readonly firstPassOnFailure: number;
  readonly deadLetters: readonly DeadLetterMessage[];
  /** Deliveries per event id. */
  readonly deliveries: ReadonlyMap<string, number>;
  /** Every delivery of a keyed record: its invocation and when it ran (real time), by scoped key. */
  readonly deliveryTimes: ReadonlyMap<string, readonly DeliveryTime[]>;
  /** Successful entity puts seen on the wire, by key (entity mode's effect). */
  readonly entityWrites: ReadonlyMap<string, number>;
  /** Marker mode: keys left with a marker and no effect by one invocation (at-most-once by design). */
  readonly markerGaps: ReadonlySet<string>;
  readonly crashes: Readonly<Record<StreamCrashPoint, number>>;
  readonly lostResponses: number;
  readonly invocations: number;
  /** The IAM actions the requests sent need, by table, to compare with the construct's grants. */
  readonly actions: ReadonlyMap<string, ReadonlySet<string>>;
  readonly runtimeViolations: readonly string[];
}

interface Instance {
  readonly index: number;
  readonly skewMillis: number;
  readonly client: LocalClient;
  handler: (batch: StreamBatch<StreamMeta>) => Promise<StreamBatchResponse>;
}

interface Invocation {
  readonly id: number;
  readonly instance: Instance;
  readonly batch: StreamBatch<StreamMeta>;
  readonly startVirtual: number;
  readonly startReal: number;
  readonly faults: boolean;
  readonly faultsByKey: Map<string, (RecordFault | undefined)[]>;
  readonly claims: Map<string, number>;
  /** The delivery each record key of the batch belongs to (its event id and delivery count), to draw its update faults. */
  readonly deliveryByKey: Map<string, { readonly eventId: string; readonly delivery: number }>;
  /** How often each event id of the batch had been delivered before, this delivery included. */
  readonly deliveryOf: Map<string, number>;
  readonly outcomeCrash: Set<string>;
  readonly responseCrash: boolean;
  readonly logs: Map<string, DeliveryLog>;
  readonly markerWritten: Map<string, Set<string>>;
  readonly effectWritten: Set<string>;
  readonly markerReleased: Map<string, Set<string>>;
  crashed: boolean;
}

const invocationContext = new AsyncLocalStorage<Invocation>();

/** The Lambda record of a stream entry, as the event source mapping delivers it. */
function lambdaRecordOf(
  source: StreamSource,
  entry: StreamEntry<StreamMeta>,
  streamArn: string,
): KinesisStreamRecord | DynamoDbStreamRecord {
  const { data } = entry.meta.plan.writes[entry.meta.write]!;
  if (source === 'kinesis') {
    return {
      kinesis: {
        kinesisSchemaVersion: '1.0',
        partitionKey: entry.partitionKey,
        sequenceNumber: entry.sequenceNumber,
        data: Buffer.from(data, 'utf8').toString('base64'),
        approximateArrivalTimestamp: 1767225600.5,
      },
      eventSource: 'aws:kinesis',
      eventVersion: '1.0',
      eventID: entry.meta.eventId,
      eventName: 'aws:kinesis:record',
      awsRegion: 'us-east-1',
      eventSourceARN: streamArn,
    };
  }
  const change = JSON.parse(data) as { Keys: Image; NewImage: Image };
  return {
    eventID: entry.meta.eventId,
    eventName: 'INSERT',
    eventVersion: '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: 'us-east-1',
    dynamodb: {
      ApproximateCreationDateTime: 1767225600,
      Keys: change.Keys,
      NewImage: change.NewImage,
      SequenceNumber: entry.sequenceNumber,
      SizeBytes: 64,
      StreamViewType: 'NEW_AND_OLD_IMAGES',
    },
    eventSourceARN: streamArn,
  };
}

/** Runs one seed to the end (both passes drained) and returns what it saw. */
export async function runStreamSimulation(options: StreamSeedOptions): Promise<StreamSimulationResult> {
  const { seed, source, mode, inboxTable, businessTable } = options;
  const consumer = streamConsumerOf(seed, source, mode);
  const plans = planStreamRecords(seed, options.messages, consumer, source);
  const streamArn =
    source === 'kinesis'
      ? `arn:aws:kinesis:us-east-1:000000000000:stream/reliability-${seed}`
      : `arn:aws:dynamodb:us-east-1:000000000000:table/reliability-${seed}/stream/2026-01-01T00:00:00.000`;
  const stream = createSimulatedStream<StreamMeta>({
    // A table stream on the emulator has one shard; a Kinesis stream here two.
    shardCount: source === 'kinesis' ? 2 : 1,
    batchSize: BATCH_SIZE,
    maxRetryAttempts: MAX_RETRY_ATTEMPTS,
    bisectOnError: options.bisectOnError,
    parallelization: options.parallelization,
  });
  const writes = plans
    .flatMap((plan) => plan.writes.map((write, index) => ({ plan, write, index })))
    .sort((a, b) => a.write.position - b.write.position);
  let emission = 0;
  for (const { plan, write, index } of writes) {
    // The sequence number is known once the record landed; a table stream's event id is fresh per emission.
    const eventIdOf = (entry: Pick<StreamEntry<unknown>, 'shardId' | 'sequenceNumber'>) =>
      source === 'kinesis' ? `${entry.shardId}:${entry.sequenceNumber}` : `s${seed}-event-${++emission}`;
    const placeholder = { plan, write: index, eventId: '' };
    const entry = stream.put(write.partitionKey, placeholder);
    (entry.meta as { eventId: string }).eventId = eventIdOf(entry);
  }

  let phase: 1 | 2 = 1;
  const random = createRandom(seed ^ 0x57ea);
  const deadLetters: DeadLetterMessage[] = [];
  const deliveries = new Map<string, number>();
  const deliveryTimes = new Map<string, DeliveryTime[]>();
  const lastOutcome = new Map<string, string>();
  const entityWrites = new Map<string, number>();
  const markerGaps = new Set<string>();
  const crashes = Object.fromEntries(STREAM_CRASH_POINTS.map((point) => [point, 0])) as Record<
    StreamCrashPoint,
    number
  >;
  let lostResponses = 0;
  const actions = new Map<string, Set<string>>();
  const runtimeViolations: string[] = [];
  let invocationCount = 0;

  const current = (instance: Instance): Invocation | undefined => {
    const invocation = invocationContext.getStore();
    return invocation?.instance === instance ? invocation : undefined;
  };
  const crash = (invocation: Invocation, point: StreamCrashPoint): void => {
    if (invocation.crashed) return;
    invocation.crashed = true;
    crashes[point] += 1;
  };

  const controllerOf = (instance: Instance): FaultController => ({
    isCrashed: () => current(instance)?.crashed ?? false,
    decide(request: DynamoRequest): RequestFault | undefined {
      recordActions(actions, request);
      const invocation = current(instance);
      const role = roleOf(request);
      if (invocation === undefined || !invocation.faults || role.role === 'other') return undefined;
      const claim = invocation.claims.get(role.pk) ?? 0;
      if (role.role === 'claim') invocation.claims.set(role.pk, claim + 1);
      const fault = invocation.faultsByKey.get(role.pk)?.[role.role === 'claim' ? claim : claim - 1];
      if (role.role === 'claim') {
        if (losesResponse(fault)) lostResponses += 1;
        return claimRequestFault(fault, { before: 'before the claim', after: 'after the claim' });
      }
      if (role.tableName === businessTable && fault === 'crash-during-effect') {
        return { kind: 'crash-after', label: 'during the effect' };
      }
      // An inbox update (a marker's release) applied, its response lost, the SDK's retry sent at once.
      const delivery = invocation.deliveryByKey.get(role.pk);
      const roll =
        delivery === undefined
          ? 1
          : chanceOf(seed, 'update', role.update ?? '', delivery.eventId, delivery.delivery);
      if (role.update !== undefined && roll < 0.2) {
        lostResponses += 1;
        return { kind: 'lost-response-retried' };
      }
      return undefined;
    },
    crash(label) {
      const invocation = current(instance);
      if (invocation !== undefined) crash(invocation, label as StreamCrashPoint);
    },
    onServerResponse(request, statusCode, repeated) {
      const invocation = current(instance);
      const role = roleOf(request);
      if (statusCode !== 200 || repeated || role.role === 'other') return;
      if (role.role === 'claim' && mode === 'entity' && role.tableName === businessTable) {
        entityWrites.set(role.pk, (entityWrites.get(role.pk) ?? 0) + 1);
      }
      if (invocation === undefined || mode !== 'marker') return;
      if (role.role === 'claim') {
        addOwner(invocation.markerWritten, role.pk, (request.input.Item as { owner?: unknown }).owner);
      } else if (role.tableName === businessTable) {
        invocation.effectWritten.add(role.pk);
      } else if (role.update === 'release') {
        const values = request.input.ExpressionAttributeValues as Record<string, unknown> | undefined;
        addOwner(invocation.markerReleased, role.pk, values?.[':owner']);
      }
    },
  });

  const loggerOf = (instance: Instance): Logger => ({
    log(entry: LogEntry) {
      const invocation = current(instance);
      if (invocation === undefined || invocation.crashed) return;
      const { messageId } = entry;
      if (typeof messageId !== 'string' || typeof entry.outcome !== 'string') return;
      const log = invocation.logs.get(messageId);
      if (log === undefined) {
        runtimeViolations.push(
          `invocation ${invocation.id}: an outcome logged for ${messageId}, not in its batch`,
        );
        return;
      }
      log.outcome = entry.outcome;
      lastOutcome.set(messageId, entry.outcome);
      if (typeof entry.code === 'string') log.code = entry.code;
      if (typeof entry.deadLetter === 'string') log.deadLetter = entry.deadLetter;
      if (invocation.outcomeCrash.has(messageId)) {
        crash(invocation, 'after the outcome, before the checkpoint');
        throw new SimulatedCrash('crashed after the outcome was decided');
      }
    },
  });

  const metricsOf = (instance: Instance): MetricsSink =>
    createCrashingMetrics({
      current: () => current(instance),
      crash: (invocation) => crash(invocation, 'while building the batch response'),
    });

  const senderOf = (instance: Instance): DeadLetterSender =>
    createCapturingDeadLetterSender({
      seed,
      labels: ['dead-letter'],
      current: () => current(instance),
      deliveryOf: (invocation, messageId) => invocation.deliveryOf.get(messageId) ?? 0,
      sent: deadLetters,
    });

  const clockOf = (instance: Instance) => (): number => {
    const invocation = current(instance);
    const base = invocation?.startVirtual ?? options.startMillis + invocationCount * 1000;
    const elapsed = invocation === undefined ? 0 : performance.now() - invocation.startReal;
    return Math.floor(base + elapsed) + instance.skewMillis;
  };

  const planOf = (eventId: string, instance: Instance): PlannedStreamRecord | undefined =>
    current(instance)?.batch.entries.find((entry) => entry.meta.eventId === eventId)?.meta.plan;
  /** The dependency of an outage record is down while the first pass lasts. */
  const failInOutage = (instance: Instance, eventId: string): void => {
    if (phase === 1 && planOf(eventId, instance)?.outage === true) {
      throw new Error('A downstream dependency is down (injected outage)');
    }
    const invocation = current(instance);
    const entry = invocation?.batch.entries.find((candidate) => candidate.meta.eventId === eventId);
    const pk = entry?.meta.plan.scopedKey;
    if (invocation === undefined || pk === undefined) return;
    const claim = (invocation.claims.get(pk) ?? 1) - 1;
    if (invocation.faults && invocation.faultsByKey.get(pk)?.[claim] === 'dependency-fails') {
      throw new Error('A downstream dependency failed (injected)');
    }
  };
  const effectUpdate = (scopedKey: string, amount: number) => ({
    TableName: businessTable,
    Key: { pk: scopedKey },
    UpdateExpression: 'ADD #effects :one SET #amount = :amount',
    ExpressionAttributeNames: { '#effects': 'effects', '#amount': 'amount' },
    ExpressionAttributeValues: { ':one': 1, ':amount': amount },
  });

  type Body = { id: string; amount: number };
  const amountOf = (body: Body | DynamoDbChange): number =>
    'newImage' in body ? Number(body.newImage?.amount) : (body as Body).amount;

  const instances: Instance[] = Array.from({ length: options.instances }, (_, index) => {
    // Half the instances let the SDK retry once (a lost response then meets its own claim).
    const client = createLocalClient({ maxAttempts: index % 2 === 0 ? 1 : 2 });
    options.tamper?.(client);
    return {
      index,
      skewMillis: random.between(-MAX_SKEW_MILLIS, MAX_SKEW_MILLIS),
      client,
      handler: undefined as never,
    };
  });
  for (const instance of instances) {
    attachFaultInjection(instance.client.document, controllerOf(instance));
    const common = {
      consumer,
      client: instance.client.document,
      tableName: inboxTable,
      clock: clockOf(instance),
      ttlSeconds: TTL_SECONDS,
      logger: loggerOf(instance),
      logLevel: 'debug' as const,
      metrics: metricsOf(instance),
      deadLetterSender: senderOf(instance),
    };
    const modeOf = () =>
      mode === 'atomic'
        ? atomic<Body & DynamoDbChange>((message, unitOfWork) => {
            failInOutage(instance, message.messageId);
            unitOfWork.update(effectUpdate(message.scopedKey, amountOf(message.body)));
          })
        : mode === 'marker'
          ? marker<Body & DynamoDbChange>(async (message) => {
              failInOutage(instance, message.messageId);
              await instance.client.document.send(
                new UpdateCommand(effectUpdate(message.scopedKey, amountOf(message.body))),
              );
            })
          : entity<Body & DynamoDbChange>((message) => {
              failInOutage(instance, message.messageId);
              return {
                tableName: businessTable,
                keyAttribute: 'pk',
                item: { pk: message.scopedKey, amount: amountOf(message.body) },
              };
            });
    if (source === 'kinesis') {
      const handler = createKinesisHandler<Body & DynamoDbChange>({
        ...common,
        dedupKey: fromData('id'),
        mode: modeOf(),
      });
      instance.handler = (batch) =>
        handler({
          Records: batch.entries.map(
            (entry) => lambdaRecordOf(source, entry, streamArn) as KinesisStreamRecord,
          ),
        });
    } else {
      const handler = createDynamoDbStreamHandler<Body & DynamoDbChange>({
        ...common,
        dedupKey: fromKeysAndVersion(VERSION),
        mode: modeOf(),
      });
      instance.handler = (batch) =>
        handler({
          Records: batch.entries.map(
            (entry) => lambdaRecordOf(source, entry, streamArn) as DynamoDbStreamRecord,
          ),
        });
    }
  }

  const recordFaultOf = (eventId: string, delivery: number): RecordFault | undefined => {
    const fault = drawFault(RECORD_FAULTS, chanceOf(seed, 'record', eventId, delivery));
    return fault === 'crash-during-effect' && mode !== 'marker' ? undefined : fault;
  };

  /** Runs one batch on `instance` and tells the stream how it ended. */
  const invoke = async (instance: Instance, batch: StreamBatch<StreamMeta>): Promise<void> => {
    const faults = batch.retry < FAULT_FREE_FROM_RETRY;
    const first = batch.entries[0]!;
    const invocationRoll = chanceOf(
      seed,
      'invocation',
      first.meta.eventId,
      deliveries.get(first.meta.eventId) ?? 0,
    );
    const invocation: Invocation = {
      id: ++invocationCount,
      instance,
      batch,
      startVirtual: options.startMillis + invocationCount * 1000,
      startReal: performance.now(),
      faults,
      faultsByKey: new Map(),
      claims: new Map(),
      deliveryByKey: new Map(),
      deliveryOf: new Map(),
      outcomeCrash: new Set(),
      responseCrash: faults && invocationRoll < 0.03,
      logs: new Map(),
      markerWritten: new Map(),
      effectWritten: new Set(),
      markerReleased: new Map(),
      crashed: false,
    };
    const timed: DeliveryTime[] = [];
    for (const entry of batch.entries) {
      const { eventId } = entry.meta;
      const delivery = (deliveries.get(eventId) ?? 0) + 1;
      deliveries.set(eventId, delivery);
      invocation.deliveryOf.set(eventId, delivery);
      invocation.logs.set(eventId, { eventId, sequenceNumber: entry.sequenceNumber });
      const fault = faults ? recordFaultOf(eventId, delivery) : undefined;
      const pk = entry.meta.plan.scopedKey;
      if (pk !== undefined) {
        invocation.deliveryByKey.set(pk, { eventId, delivery });
        const time = {
          invocation: invocation.id,
          startedAt: invocation.startReal,
          endedAt: invocation.startReal,
        };
        timed.push(time);
        deliveryTimes.set(pk, [...(deliveryTimes.get(pk) ?? []), time]);
        const list = invocation.faultsByKey.get(pk) ?? [];
        list.push(fault);
        invocation.faultsByKey.set(pk, list);
      }
      if (fault === 'crash-after-outcome') invocation.outcomeCrash.add(eventId);
    }

    let response: StreamBatchResponse | undefined;
    let thrown: unknown;
    await invocationContext.run(invocation, async () => {
      try {
        response = await instance.handler(batch);
      } catch (error) {
        thrown = error;
      }
    });
    const ended = performance.now();
    for (const time of timed) time.endedAt = ended;
    if (mode === 'marker') for (const key of unfollowedMarkers(invocation)) markerGaps.add(key);
    // A crashed invocation is a function error: the whole batch comes again (bisected, maybe).
    if (invocation.crashed) {
      stream.complete(batch, { kind: 'error' });
      return;
    }
    if (thrown !== undefined || response === undefined) {
      runtimeViolations.push(`invocation ${invocation.id}: the handler threw ${String(thrown)}`);
      stream.complete(batch, { kind: 'error' });
      return;
    }
    checkResponse(invocation, response);
    const returned = options.tamperResponse?.(response) ?? response;
    stream.complete(batch, {
      kind: 'response',
      itemIdentifiers: returned.batchItemFailures.map((failure) => failure.itemIdentifier),
    });
  };

  /**
   * The checkpoint contract: at most one sequence number (a batch is one shard), a record of the
   * batch; every record before it was acknowledged (processed, a duplicate, or dead-lettered), it
   * ran and was not, and none after it ran (each waited for it: `GROUP_BLOCKED`). With no
   * failure, every record was acknowledged.
   */
  const checkResponse = (invocation: Invocation, response: StreamBatchResponse): void => {
    const named = response.batchItemFailures.map((failure) => failure.itemIdentifier);
    const where = `invocation ${invocation.id} (${invocation.batch.lane})`;
    if (named.length > 1) runtimeViolations.push(`${where}: ${named.length} checkpoints for one shard`);
    const logs = [...invocation.logs.values()];
    const at = named.length === 0 ? logs.length : logs.findIndex((log) => log.sequenceNumber === named[0]);
    if (at < 0) {
      runtimeViolations.push(`${where}: checkpoint ${named[0]} is not a record of the batch`);
      return;
    }
    logs.forEach((log, index) => {
      const ended = `${log.outcome}${log.code === undefined ? '' : ` ${log.code}`}`;
      if (index < at && !isAcknowledged(log)) {
        runtimeViolations.push(`${where}: ${log.eventId} before the checkpoint ended ${ended}, acknowledged`);
      } else if (
        index === at &&
        (isAcknowledged(log) || log.outcome === undefined || log.code === 'GROUP_BLOCKED')
      ) {
        runtimeViolations.push(
          `${where}: the checkpoint ${log.eventId} ended ${ended}, not a retry of its own`,
        );
      } else if (index > at && log.code !== 'GROUP_BLOCKED') {
        runtimeViolations.push(`${where}: ${log.eventId} after the checkpoint ran (${ended})`);
      }
    });
  };

  /** Runs batches, each lane on one instance at a time, until the stream has no work. */
  const drain = async (): Promise<void> => {
    const idle = [...instances];
    const running = new Set<Promise<void>>();
    for (;;) {
      for (const batch of stream.nextBatches(idle.length)) {
        const instance = idle.splice(random.int(idle.length), 1)[0]!;
        const run: Promise<void> = invoke(instance, batch).finally(() => {
          running.delete(run);
          idle.push(instance);
        });
        running.add(run);
      }
      if (running.size === 0) {
        if (stream.hasWork()) throw new Error('The stream has work but no batch runs');
        return;
      }
      await Promise.race(running);
    }
  };

  let firstPass: ReadonlyMap<string, EntryFate>;
  let firstPassOnFailure: number;
  let firstPassOutcomes: ReadonlyMap<string, string>;
  try {
    await drain();
    firstPass = new Map(stream.fates());
    firstPassOnFailure = stream.onFailure.length;
    firstPassOutcomes = new Map(lastOutcome);
    // The outage is over: the operator replays the stream from TRIM_HORIZON (the records the
    // on-failure destination named come again, and every other record as a duplicate).
    phase = 2;
    stream.replayFromTrimHorizon();
    await drain();
  } finally {
    for (const instance of instances) instance.client.raw.destroy();
  }
  return {
    options,
    plans,
    stream,
    firstPass,
    firstPassOnFailure,
    firstPassOutcomes,
    deadLetters,
    deliveries,
    deliveryTimes,
    entityWrites,
    markerGaps,
    crashes,
    lostResponses,
    invocations: invocationCount,
    actions,
    runtimeViolations,
  };
}
