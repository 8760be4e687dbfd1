/**
 * One seed of the chain simulation: two services joined by the transactional outbox, with faults
 * injected in both consumers and in the relay between them.
 *
 * ```text
 * queue 1 ─▶ orders (atomic, unitOfWork.emit) ─▶ outbox table ─▶ its DynamoDB stream
 *        ─▶ relay (createOutboxRelay, sqsDestination) ─▶ queue 2 ─▶ shipping (entity mode,
 *           keyed by fromAttribute(IDEMPOTENCY_KEY_ATTRIBUTE))
 * ```
 *
 * What is simulated and what is real:
 * - real: the toolkit (both `createSqsHandler`s, `createOutboxRelay` and `sqsDestination`), the
 *   DynamoDB SDK clients and their middleware stacks, DynamoDB (the emulator) with the orders'
 *   business table, the outbox table and its stream, read with `GetRecords` as the event source
 *   mapping would, and the shipping service's business table;
 * - simulated: both queues (`simulated-queue.ts`), the Lambda runtime of each function (one
 *   invocation at a time per instance, a crashed invocation's response discarded, the partial
 *   batch response applied as SQS would), the relay's event source mapping
 *   (`simulated-stream.ts`: checkpoints and retries from the reported sequence number, bisects;
 *   the emulator's own mappings ignore `batchItemFailures`, docs/local-aws-streams.md), each
 *   instance's clock (skewed by up to 5 s) and the SQS clients of the relay's destination and
 *   dead-letter queue (behind the SQS conformance layer, which refuses what SQS refuses), which
 *   land each message in queue 2 and in the dead-letter queue's list. Each record the stream carries is what `GetRecords`
 *   returned (its event name, keys and new image), put into the simulated stream in the order
 *   read, under the simulated stream's sequence number (a record emitted twice needs a position
 *   of its own).
 *
 * Faults (each drawn from the seed and what is decided: a message id and its receive count, an
 * event id, its emission and how often its record was delivered; how the stream's records fall
 * into relay batches depends on when they were read, so a replayed seed meets the same faults per
 * message, not always the same batches):
 * - both consumers, per delivered message: throttling, a transaction conflict, a lost response
 *   (applied, the caller sees a connection reset), a lost response sent again at once by the SDK,
 *   a crash before or after the commit (or the entity put), a crash after the outcome is decided
 *   (before the acknowledgement); per invocation a crash while the batch response is built; per
 *   dead-letter send a failure. A message on its 4th receive or later runs without faults, so no
 *   valid message exhausts `maxReceiveCount`;
 * - orders' input: duplicates (in the next batch: concurrent; in the same batch; resent later),
 *   poison input (malformed JSON, no key), a key reused with another payload, orders behind an
 *   outage of a dependency (every delivery fails until the queue drained, so every copy ends in
 *   the dead-letter queue by the redrive policy), and, once the queue drained, the dead-letter
 *   queue and some completed messages redriven (a new message id, as AWS gives them);
 * - the relay's destination (`chain-destination.ts`): events shipping's queue refuses for good
 *   (too large for its `MaximumMessageSize`, or `InvalidMessageContents`), which the relay
 *   dead-letters and moves past; a publish that fails before it lands (throttled, a 5xx, a
 *   connection timeout: the relay checkpoints there, the batch is retried from it), a publish
 *   whose answer is lost after the message landed, a failed dead-letter send (a checkpoint too);
 * - the relay: a crash after publishing and before the checkpoint is returned (the whole batch
 *   comes again), a stream record emitted twice, and a slow invocation that outlives its timeout:
 *   the event source retries the batch on another instance while the slow one still publishes
 *   (two relay instances racing on the same records), a checkpoint lost after the relay answered
 *   (`RELAY_LOST_CHECKPOINT_CHANCE`: the same batch comes again and is published again), and on
 *   even seeds a parallelization factor of 2 (two relay instances on the shard at once, counted).
 *   A batch retried `FAULT_FREE_FROM_RETRY`
 *   times or more runs without faults (a refused event is refused still), so no event uses up
 *   `MAX_RETRY_ATTEMPTS`.
 *
 * The three functions run concurrently, as a deployed chain does: shipping receives an event
 * while orders still commits others. Once everything drained, the dead-letter queue and the
 * completed messages planned for a redrive come again; then the double tap sends orders' whole
 * input log again, and nothing may change in either service.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
} from '@aws-sdk/client-dynamodb-streams';
import type { SendMessageCommand, SendMessageCommandInput, SQSClient } from '@aws-sdk/client-sqs';
import { type DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import {
  DEAD_LETTER_ATTRIBUTES,
  EVENT_TYPE_ATTRIBUTE,
  IDEMPOTENCY_KEY_ATTRIBUTE,
  OUTBOX_ATTRIBUTES,
} from '../../../lambda/core/contract';
import { fromAttribute, fromBody, fromMessageId, scopeKey } from '../../../lambda/core/dedup-key';
import { fingerprintOf } from '../../../lambda/core/fingerprint';
import type { LogEntry, Logger } from '../../../lambda/core/logger';
import type { MetricsSink } from '../../../lambda/core/metrics';
import type { DeadLetterMessage, DeadLetterSender } from '../../../lambda/dead-letter/dead-letter-message';
import { createSqsDeadLetterSender } from '../../../lambda/dead-letter/sqs-dead-letter-sender';
import { atomic } from '../../../lambda/modes/atomic';
import { entity } from '../../../lambda/modes/entity';
import { createOutboxRelay, type OutboxRelay, outboxEventId, sqsDestination } from '../../../lambda/outbox';
import type { SqsHandler, SqsMessageAttribute, SqsRecord } from '../../../lambda/sqs/sqs-event';
import { createSqsHandler } from '../../../lambda/sqs/sqs-handler';
import type { DynamoDbStreamRecord } from '../../../lambda/streams';
import { dynamoDbStreamRecordFrom } from '../../../scripts/support/stream-reader';
import { awsConfig } from '../../support/aws';
import { createConformingSqsClient } from '../../support/aws-limits/sqs';
import { deferred } from '../../support/fixtures';
import {
  deadLetterSendError,
  deadLetterSendFails,
  type EventRefusal,
  FOREIGN_WRITER,
  foreignEventsOf,
  injectedRefusal,
  isRefusal,
  memoOf,
  PUBLISH_FAULTS,
  type PublishFault,
  publishFaultError,
  refusalOf,
  SHIPPING_QUEUE_MAX_MESSAGE_BYTES,
} from './chain-destination';
import {
  attachFaultInjection,
  type DynamoRequest,
  type FaultController,
  type RequestFault,
  rolesOf,
  SimulatedCrash,
  writesOn,
} from './fault-injection';
import { createHistory, type HistoryEntry } from './history';
import { chanceOf, createRandom, type Random } from './prng';
import {
  type ClaimFault,
  claimRequestFault,
  createCapturingDeadLetterSender,
  createCrashingMetrics,
  drawFault,
  losesResponse,
} from './simulated-lambda';
import {
  createSimulatedQueue,
  type ReceivedMessage,
  type SimulatedQueue,
  sqsRecordOf,
} from './simulated-queue';
import { createSimulatedStream, type SimulatedStream, type StreamBatch } from './simulated-stream';
import {
  FAULT_FREE_FROM_RECEIVE,
  MAX_RECEIVE_COUNT,
  MAX_SKEW_MILLIS,
  recordActions,
  settlesWithin,
  TTL_SECONDS,
} from './simulation';
import { createLocalClient, type LocalClient, scanItems } from './tables';

// The inbox record lifetime (a day), each instance's clock skew (up to 5 s either way), both
// queues' redrive policy and the receive from which a message runs without faults are the SQS
// suite's.
/** The relay mapping's `MaximumRetryAttempts`. */
export const MAX_RETRY_ATTEMPTS = 10;
/** From this retry of a relay batch on, it runs without injected faults. */
export const FAULT_FREE_FROM_RETRY = 3;
const VISIBILITY_TIMEOUT_MILLIS = 30_000;
const BATCH_SIZE = 10;
/** How long (real time) a slow relay invocation waits for its rival to publish: only a guard. */
const RIVAL_WAIT_MILLIS = 1000;

/** The kinds of planned input of the orders service. */
export type ChainMessageKind = 'valid' | 'conflict' | 'malformed' | 'missing-key';

/**
 * What an order emits: `one` an `OrderConfirmed` (default name `OrderConfirmed#0`); `two-types`
 * an `OrderConfirmed` and an `InvoiceRequested` (default names); `two-named` two `ItemReserved`
 * events named by their item (`item-<sku>`).
 */
export type EmitShape = 'one' | 'two-types' | 'two-named';

/** One event a winning order emits, as the oracle expects it in the outbox and downstream. */
export interface PlannedEvent {
  /** The event id: `outboxEventId(scopedKey, name)`. */
  readonly id: string;
  readonly type: string;
  readonly name: string;
  /** The detail, as JSON text: the published message body. */
  readonly body: string;
  readonly entity?: string;
  /** Why shipping's queue refuses it for good (the relay dead-letters it), if it does. */
  readonly refusal?: EventRefusal;
}

/** One copy of an order as sent to queue 1. */
export interface ChainCopy {
  readonly messageId: string;
  /** Position in send order. */
  readonly position: number;
  readonly delayMillis: number;
  readonly body: string;
  /** A redrive after the queue drained: the completed copy it sends again, with a new message id. */
  readonly redriveOf?: string;
}

/** One logical order: what the producer meant to send once. */
export interface ChainPlan {
  readonly index: number;
  readonly kind: ChainMessageKind;
  /** The dedup key (body field `id`), absent for poison input. */
  readonly key?: string;
  readonly scopedKey?: string;
  readonly amount: number;
  readonly shape: EmitShape;
  /**
   * A dependency of orders is down for this order until the queue drained: every delivery fails
   * (a retry), so every copy ends in the dead-letter queue by the redrive policy, and is redriven
   * once the queue drained.
   */
  readonly outage: boolean;
  /** What the order emits when it wins its key. */
  readonly events: readonly PlannedEvent[];
  /** The code every dead letter of a copy must carry: always for poison, for a keyed order only if it lost its key. */
  readonly expectedCode?: 'MALFORMED_BODY' | 'MISSING_KEY' | 'PAYLOAD_MISMATCH';
  readonly copies: readonly ChainCopy[];
}

/** The orders service's body. */
interface OrderBody {
  readonly id: string;
  readonly amount: number;
  readonly shape: EmitShape;
  readonly skus: readonly string[];
  readonly note: string;
  /** A long text some orders carry into their events (`memoOf`). */
  readonly memo?: string;
}

/** The detail of every event: what shipping stores, so the oracle can tell whose effect it is. */
interface EventDetail {
  readonly orderId: string;
  readonly amount: number;
  readonly sku?: string;
  readonly memo?: string;
}

/** The consumer names of a seed: every key of a seed is scoped by them, so seeds share tables. */
export function chainConsumersOf(seed: number): {
  readonly orders: string;
  readonly shipping: string;
  readonly relay: string;
} {
  return {
    orders: `chain-s${seed}-orders`,
    shipping: `chain-s${seed}-shipping`,
    relay: `chain-s${seed}-relay`,
  };
}

/** The events an order emits, in emit order: the handler and the oracle both use it. */
export function eventsOf(body: OrderBody): {
  readonly type: string;
  readonly name?: string;
  readonly detail: EventDetail;
  readonly entity?: string;
}[] {
  const detail = (sku?: string): EventDetail => ({
    orderId: body.id,
    amount: body.amount,
    ...(sku === undefined ? {} : { sku }),
    ...(body.memo === undefined ? {} : { memo: body.memo }),
  });
  if (body.shape === 'two-named') {
    return body.skus.map((sku) => ({ type: 'ItemReserved', name: `item-${sku}`, detail: detail(sku) }));
  }
  const confirmed = { type: 'OrderConfirmed', detail: detail(), entity: body.id };
  return body.shape === 'one' ? [confirmed] : [confirmed, { type: 'InvoiceRequested', detail: detail() }];
}

/**
 * The plan of a seed: about 92% valid orders, 2% malformed JSON, 2% without a key, 4% reusing an
 * earlier key with another payload. About 35% of orders get a copy in the next batch (delivered
 * concurrently), 3% one in the same batch, 5% one resent a while later; 2% of valid orders meet
 * an outage (every copy ends in the dead-letter queue and is redriven), 4% are redriven once more
 * after they completed. Of the keyed orders 60% emit one event, 25% two of
 * two types, 15% two of one type, named. About 5% of orders carry a memo into their events, long
 * enough that most of those events are too large for shipping's queue (`memoOf`).
 */
export function planChain(seed: number, count: number): ChainPlan[] {
  const { orders } = chainConsumersOf(seed);
  const random = createRandom(seed ^ 0xc4a1);
  const plans: ChainPlan[] = [];
  const partnerable: number[] = [];
  for (let index = 0; index < count; index += 1) {
    const roll = random.next();
    const amount = random.between(1, 1_000_000);
    let kind: ChainMessageKind =
      roll < 0.02 ? 'malformed' : roll < 0.04 ? 'missing-key' : roll < 0.08 ? 'conflict' : 'valid';
    let partner: ChainPlan | undefined;
    if (kind === 'conflict') {
      const pick =
        partnerable.length > 0 ? partnerable.splice(random.int(partnerable.length), 1)[0] : undefined;
      partner = pick === undefined ? undefined : plans[pick];
      if (partner === undefined) kind = 'valid';
    }
    const key = partner?.key ?? `order-${index}`;
    const shapeRoll = random.next();
    const shape: EmitShape = shapeRoll < 0.6 ? 'one' : shapeRoll < 0.85 ? 'two-types' : 'two-named';
    const skus = [`sku${random.int(50)}`, `sku${50 + random.int(50)}`];
    const memo = memoOf(seed, index);
    const body: OrderBody = {
      id: key,
      amount,
      shape,
      skus,
      note: `order ${index} of seed ${seed}`,
      ...(memo === undefined ? {} : { memo }),
    };
    const serialise = (): string => {
      if (kind === 'malformed') return `{"id":"${key}","amount":${amount},"note":"truncated`;
      const { id: _id, ...withoutKey } = body;
      const payload: Record<string, unknown> = kind === 'missing-key' ? withoutKey : { ...body };
      // Keys in any order, as a producer's resend may serialise them: the fingerprint is canonical.
      return JSON.stringify(Object.fromEntries(random.shuffle(Object.entries(payload))));
    };
    const copies: ChainCopy[] = [];
    const copy = (position: number, delayMillis: number): void => {
      copies.push({
        messageId: `s${seed}-o${index}-c${copies.length}`,
        position,
        delayMillis,
        body: serialise(),
      });
    };
    copy(index, 0);
    const extra = random.next();
    if (extra < 0.35) copy(index + random.between(BATCH_SIZE, 2 * BATCH_SIZE - 1) + 0.5, 0);
    else if (extra < 0.38) copy(index + random.between(1, 5) + 0.25, 0);
    else if (extra < 0.43) copy(index + 0.5, random.between(1, 4) * 15_000);
    const redriveRoll = random.next();
    const outage = kind === 'valid' && redriveRoll < 0.02;
    const redriveCompleted = kind === 'valid' && !outage && redriveRoll < 0.06;
    // Redriven copies keep the body and get a new message id, as AWS gives redriven messages.
    for (const source of outage ? [...copies] : redriveCompleted ? [copies[0]!] : []) {
      copies.push({
        ...source,
        messageId: `${source.messageId}-redriven`,
        position: count + index,
        redriveOf: source.messageId,
      });
    }
    const keyed = kind === 'valid' || kind === 'conflict';
    const scopedKey = keyed ? scopeKey(orders, key) : undefined;
    const events = keyed
      ? eventsOf(body).map((event) => {
          // Unnamed, each type is emitted once: the default name `<type>#0`.
          const name = event.name ?? `${event.type}#0`;
          const id = outboxEventId(scopedKey!, name);
          const detail = JSON.stringify(event.detail);
          const refusal = refusalOf(seed, { id, type: event.type, body: detail });
          return {
            id,
            type: event.type,
            name,
            body: detail,
            ...(event.entity === undefined ? {} : { entity: event.entity }),
            ...(refusal === undefined ? {} : { refusal }),
          };
        })
      : [];
    plans.push({
      index,
      kind,
      ...(keyed ? { key, scopedKey } : {}),
      amount,
      shape,
      events,
      outage,
      ...(kind === 'malformed'
        ? { expectedCode: 'MALFORMED_BODY' as const }
        : kind === 'missing-key'
          ? { expectedCode: 'MISSING_KEY' as const }
          : { expectedCode: 'PAYLOAD_MISMATCH' as const }),
      copies,
    });
    if (kind === 'valid' && !outage && !redriveCompleted) partnerable.push(index);
  }
  return plans;
}

/** What a seed runs. */
export interface ChainSeedOptions {
  readonly seed: number;
  readonly messages: number;
  /** Instances of each consumer (the relay gets three). */
  readonly instances: number;
  readonly inboxTable: string;
  /** The orders service's business table. */
  readonly ordersTable: string;
  /** The shipping service's business table (its entities). */
  readonly shipmentsTable: string;
  /** The outbox table (stream `NEW_IMAGE`), one per seed, and its stream's ARN. */
  readonly outboxTable: string;
  readonly outboxStreamArn: string;
  /** Virtual epoch milliseconds the queues start at. */
  readonly startMillis: number;
  /**
   * Test hook: shipping keyed by the SQS message id instead of the idempotency key (a receiver
   * that cannot tell a re-published event), to prove the oracle sees duplicate effects.
   */
  readonly brokenReceiver?: boolean;
  /**
   * Test hook: rewrites each error a publish to shipping's queue throws, after the simulation
   * counted it, so a test can make the relay misclassify the destination's answers on purpose.
   */
  readonly tamperPublishError?: (error: unknown) => unknown;
  /**
   * The chance that an answered relay invocation's checkpoint is not stored.
   * @default RELAY_LOST_CHECKPOINT_CHANCE
   */
  readonly relayLostCheckpointChance?: number;
  /**
   * Test hook: the relay meets no fault but lost checkpoints (no crash, no slow invocation, no
   * failed publish or dead-letter send, no record emitted twice), so a test can tell what lost
   * checkpoints alone bring downstream.
   */
  readonly lostCheckpointsOnly?: boolean;
}

/** The chance, per answered relay invocation with faults, that its checkpoint is not stored (the batch comes again). */
export const RELAY_LOST_CHECKPOINT_CHANCE = 0.04;

/** Crash points of a consumer, as counted in the report. */
export const CONSUMER_CRASH_POINTS = [
  'before the commit',
  'after the commit',
  'after the outcome, before the acknowledgement',
  'while building the batch response',
] as const;

/** A consumer crash point. */
export type ConsumerCrashPoint = (typeof CONSUMER_CRASH_POINTS)[number];

/** Faults of one delivered message (either consumer). */
type RecordFault = ClaimFault | 'crash-after-outcome';

const RECORD_FAULTS: readonly (readonly [RecordFault, number])[] = [
  ['throttle', 0.04],
  ['conflict', 0.03],
  ['lost-response', 0.02],
  ['lost-response-retried', 0.03],
  ['crash-before-claim', 0.01],
  ['crash-after-claim', 0.01],
  ['crash-after-outcome', 0.01],
];

/** What one consumer (orders or shipping) saw. */
export interface ConsumerLog {
  readonly consumer: string;
  /** Deliveries per message id. */
  readonly deliveries: Map<string, number>;
  /** The last outcome logged for each message id by an invocation that did not crash. */
  readonly lastOutcome: Map<string, { readonly outcome: string; readonly code?: string }>;
  readonly deadLetters: DeadLetterMessage[];
  /** Successful commits (orders) or entity puts (shipping) seen on the wire, by record key. */
  readonly effectWrites: Map<string, number>;
  readonly crashes: Record<ConsumerCrashPoint, number>;
  /** The IAM actions its requests needed, by table, to compare with the constructs' grants. */
  readonly actions: Map<string, Set<string>>;
  lostResponses: number;
  invocations: number;
}

/** What the relay and its event source saw. */
export interface RelayLog {
  /** Messages that landed in queue 2, per event id (a publish whose answer was lost included). */
  readonly landed: Map<string, number>;
  invocations: number;
  /** Relay invocations that crashed after publishing, before returning their checkpoint. */
  crashes: number;
  /** Publishes that failed before landing (throttled, a 5xx, a connection timeout). */
  failedPublishes: number;
  /** Publishes that landed but whose answer was lost. */
  lostAnswers: number;
  /** Transient publish faults injected, by kind (`failedPublishes` and `lostAnswers` by kind). */
  readonly publishFaults: Record<PublishFault, number>;
  /** Publishes shipping's queue refused (each attempt), by event id. */
  readonly refusals: Map<string, number>;
  /** Every `SendMessage` the dead-letter queue accepted, in order. */
  readonly deadLetters: RelayDeadLetter[];
  /** Dead-letter sends that failed (a 503) and were retried from the checkpoint. */
  failedDeadLetterSends: number;
  /** The most retries any relay batch ran at one checkpoint. */
  maxRetryAtOnePosition: number;
  /** Slow invocations still publishing while the event source retried their batch elsewhere. */
  races: number;
  /** Events published by a slow invocation and its rival both. */
  racedEvents: number;
  /** Relay invocations started while another lane of the shard ran a batch (two instances on one shard). */
  concurrentShardBatches: number;
  /** Records the relay got again, past or dead-lettered already, because its answered batch's checkpoint was lost. */
  redeliveredAfterLostCheckpoint: number;
  /** Stream records emitted twice (a second record, a new event id). */
  emittedTwice: number;
}

/** One message of the relay's dead-letter queue, as sent (through the SQS conformance layer). */
export interface RelayDeadLetter {
  readonly input: SendMessageCommandInput;
  /** The relay invocation that sent it. */
  readonly invocation: number;
}

/** What the state of both services was at one moment (for the double tap). */
export interface ChainSnapshot {
  readonly orders: string;
  readonly outbox: string;
  readonly shipments: string;
  readonly published: number;
  readonly deadLettered: number;
}

/** Everything a seed observed, for the oracle. */
export interface ChainSimulationResult {
  readonly options: ChainSeedOptions;
  readonly plans: readonly ChainPlan[];
  readonly orderQueue: SimulatedQueue<OrderMeta>;
  readonly shippingQueue: SimulatedQueue<ShipmentMeta>;
  readonly stream: SimulatedStream<StreamMeta>;
  readonly orders: ConsumerLog;
  readonly shipping: ConsumerLog;
  readonly relay: RelayLog;
  /** Sent copies of every plan, by message id (the double tap's copies included). */
  readonly doubleTapCopies: ReadonlyMap<string, ChainPlan>;
  /** Outbox items another writer put in the table, which shipping's queue refuses (`foreignEventsOf`). */
  readonly foreignEvents: readonly PlannedEvent[];
  /** Redriven copies sent once the queue drained. */
  readonly redrives: number;
  /** Read at the end of the run before the double tap and after it. */
  readonly beforeDoubleTap: ChainSnapshot;
  readonly afterDoubleTap: ChainSnapshot;
  readonly runtimeViolations: readonly string[];
  /**
   * What happened, in order (`history.ts`): every order's input and deliveries, the effects both
   * services applied in commit order (shipping's with the event it carries), the events the
   * outbox received (orders' commits and the other writer's puts), every publish that landed in
   * shipping's queue, and every dead letter with its reason (orders' sent directly; those its
   * queue's redrive policy moved, with the last logged code, once the run ended).
   */
  readonly history: readonly HistoryEntry[];
}

/** What queue 1 carries next to each copy. */
export interface OrderMeta {
  readonly plan: ChainPlan;
}

/** What queue 2 carries next to each published message. */
export interface ShipmentMeta {
  readonly eventId: string;
  readonly attributes: Readonly<Record<string, SqsMessageAttribute>>;
}

/** What the simulated stream carries next to each record. */
export interface StreamMeta {
  /** The Lambda record of what `GetRecords` returned, under this entry's sequence number. */
  readonly record: DynamoDbStreamRecord;
  /** The outbox item's key: the event id. */
  readonly eventId: string;
  /** 0 for the record as read, 1 for its second emission. */
  readonly emission: 0 | 1;
}

interface ConsumerInvocation {
  readonly id: number;
  readonly instance: ConsumerInstance;
  readonly startVirtual: number;
  readonly startReal: number;
  readonly faults: boolean;
  readonly faultsByKey: Map<string, (RecordFault | undefined)[]>;
  readonly claims: Map<string, number>;
  readonly outcomeCrash: Set<string>;
  readonly receiveCounts: Map<string, number>;
  readonly responseCrash: boolean;
  crashed: boolean;
}

interface ConsumerInstance {
  readonly index: number;
  readonly skewMillis: number;
  readonly client: LocalClient;
  readonly handler: SqsHandler;
}

/** The options every consumer instance's handler shares (its own client, clock, logger, ...). */
interface InstanceOptions {
  readonly consumer: string;
  readonly client: DynamoDBDocumentClient;
  readonly tableName: string;
  readonly environment: Record<string, never>;
  readonly clock: () => number;
  readonly ttlSeconds: number;
  readonly logger: Logger;
  readonly logLevel: 'debug';
  readonly metrics: MetricsSink;
  readonly deadLetter: 'direct';
  readonly deadLetterSender: DeadLetterSender;
}

/** A fleet of simulated Lambda instances of one consumer, fed by one simulated queue. */
interface ConsumerFleet {
  /** Starts an invocation on every idle instance while the queue has visible messages. */
  start(): Promise<void>[];
  readonly log: ConsumerLog;
  close(): void;
}

interface FleetOptions<TMeta> {
  readonly seed: number;
  readonly consumer: string;
  readonly queue: SimulatedQueue<TMeta>;
  readonly instances: number;
  readonly random: Random;
  readonly inboxTable: string;
  /** The record key a delivery's requests are about (its inbox record, or its entity), to aim its faults. */
  readonly pkOf: (received: ReceivedMessage<TMeta>) => string | undefined;
  readonly attributesOf: (meta: TMeta) => Readonly<Record<string, SqsMessageAttribute>>;
  /** The request that carries the effect: a commit, or an entity put. */
  readonly isEffect: (request: DynamoRequest) => boolean;
  /** An effect request DynamoDB answered 200 (not a repeat), as it received it. */
  readonly onEffect: (request: DynamoRequest, sent: Readonly<Record<string, unknown>>) => void;
  /** A dead letter the consumer sent. */
  readonly onDeadLetter: (message: DeadLetterMessage) => void;
  readonly createHandler: (options: InstanceOptions) => SqsHandler;
  readonly violations: string[];
}

const consumerContext = new AsyncLocalStorage<ConsumerInvocation>();

/** Creates the instances of one consumer: each with its own client, faults, clock and handler. */
function createConsumerFleet<TMeta>(options: FleetOptions<TMeta>): ConsumerFleet {
  const { seed, consumer, queue, random, violations } = options;
  const log: ConsumerLog = {
    consumer,
    deliveries: new Map(),
    lastOutcome: new Map(),
    deadLetters: [],
    effectWrites: new Map(),
    crashes: Object.fromEntries(CONSUMER_CRASH_POINTS.map((point) => [point, 0])) as Record<
      ConsumerCrashPoint,
      number
    >,
    actions: new Map(),
    lostResponses: 0,
    invocations: 0,
  };
  const current = (instance: ConsumerInstance): ConsumerInvocation | undefined => {
    const invocation = consumerContext.getStore();
    return invocation?.instance === instance ? invocation : undefined;
  };
  const crash = (invocation: ConsumerInvocation, point: ConsumerCrashPoint): void => {
    if (invocation.crashed) return;
    invocation.crashed = true;
    log.crashes[point] += 1;
  };

  const controllerOf = (instance: () => ConsumerInstance): FaultController => ({
    isCrashed: () => current(instance())?.crashed ?? false,
    decide(request): RequestFault | undefined {
      recordActions(log.actions, request);
      const invocation = current(instance());
      if (invocation === undefined || !invocation.faults) return undefined;
      // A transaction shared by several messages (batch commit) is a claim of each marker in it;
      // the first planned fault among them is the request's.
      let planned: RequestFault | undefined;
      for (const role of rolesOf(request)) {
        if (role.role !== 'claim') continue;
        const claim = invocation.claims.get(role.pk) ?? 0;
        invocation.claims.set(role.pk, claim + 1);
        if (planned !== undefined) continue;
        const fault = invocation.faultsByKey.get(role.pk)?.[claim];
        planned = claimRequestFault(fault, { before: 'before the commit', after: 'after the commit' });
        if (losesResponse(fault)) log.lostResponses += 1;
      }
      return planned;
    },
    crash(label) {
      const invocation = current(instance());
      if (invocation !== undefined) crash(invocation, label as ConsumerCrashPoint);
    },
    onServerResponse(request, statusCode, repeated, sent) {
      if (statusCode !== 200 || repeated || !options.isEffect(request)) return;
      options.onEffect(request, sent);
      for (const role of rolesOf(request)) {
        if (role.role === 'claim') log.effectWrites.set(role.pk, (log.effectWrites.get(role.pk) ?? 0) + 1);
      }
    },
  });

  const instances: ConsumerInstance[] = Array.from({ length: options.instances }, (_, index) => {
    // Half the instances let the SDK retry once (a lost response then meets its own commit).
    const client = createLocalClient({ maxAttempts: index % 2 === 0 ? 1 : 2 });
    const skewMillis = random.between(-MAX_SKEW_MILLIS, MAX_SKEW_MILLIS);
    let self!: ConsumerInstance;
    attachFaultInjection(
      client.document,
      controllerOf(() => self),
    );
    const handler = options.createHandler({
      consumer,
      client: client.document,
      tableName: options.inboxTable,
      environment: {},
      clock: () => {
        const invocation = current(self);
        const elapsed = invocation === undefined ? 0 : performance.now() - invocation.startReal;
        return Math.floor((invocation?.startVirtual ?? queue.now()) + elapsed) + skewMillis;
      },
      ttlSeconds: TTL_SECONDS,
      logger: {
        log(entry: LogEntry) {
          const invocation = current(self);
          if (invocation === undefined || invocation.crashed) return;
          const { messageId } = entry;
          if (typeof messageId !== 'string' || typeof entry.outcome !== 'string') return;
          log.lastOutcome.set(messageId, {
            outcome: entry.outcome,
            ...(typeof entry.code === 'string' ? { code: entry.code } : {}),
          });
          if (invocation.outcomeCrash.has(messageId)) {
            crash(invocation, 'after the outcome, before the acknowledgement');
            throw new SimulatedCrash('crashed after the outcome was decided');
          }
        },
      },
      logLevel: 'debug',
      metrics: createCrashingMetrics({
        current: () => current(self),
        crash: (invocation) => crash(invocation, 'while building the batch response'),
      }),
      deadLetter: 'direct',
      deadLetterSender: createCapturingDeadLetterSender({
        seed,
        labels: [consumer, 'dead-letter'],
        current: () => current(self),
        deliveryOf: (invocation, messageId) => invocation.receiveCounts.get(messageId) ?? 0,
        sent: {
          push(message) {
            options.onDeadLetter(message);
            return log.deadLetters.push(message);
          },
        },
      }),
    });
    self = { index, skewMillis, client, handler };
    return self;
  });

  const idle = [...instances];
  const invoke = async (instance: ConsumerInstance, batch: ReceivedMessage<TMeta>[]): Promise<void> => {
    const faults = batch.every((received) => received.receiveCount < FAULT_FREE_FROM_RECEIVE);
    const first = batch[0]!;
    const invocation: ConsumerInvocation = {
      id: ++log.invocations,
      instance,
      startVirtual: queue.now(),
      startReal: performance.now(),
      faults,
      faultsByKey: new Map(),
      claims: new Map(),
      outcomeCrash: new Set(),
      receiveCounts: new Map(batch.map((received) => [received.messageId, received.receiveCount])),
      responseCrash:
        faults && chanceOf(seed, consumer, 'invocation', first.messageId, first.receiveCount) < 0.03,
      crashed: false,
    };
    for (const received of batch) {
      log.deliveries.set(received.messageId, (log.deliveries.get(received.messageId) ?? 0) + 1);
      const fault = faults
        ? drawFault(
            RECORD_FAULTS,
            chanceOf(seed, consumer, 'record', received.messageId, received.receiveCount),
          )
        : undefined;
      const pk = options.pkOf(received);
      if (pk !== undefined)
        invocation.faultsByKey.set(pk, [...(invocation.faultsByKey.get(pk) ?? []), fault]);
      if (fault === 'crash-after-outcome') invocation.outcomeCrash.add(received.messageId);
    }
    const records: SqsRecord[] = batch.map((received) =>
      sqsRecordOf(received, {
        eventSourceARN: `arn:aws:sqs:us-east-1:000000000000:${consumer}`,
        messageAttributes: options.attributesOf(received.meta),
      }),
    );
    const context = {
      awsRequestId: `${consumer}-i${invocation.id}`,
      functionName: consumer,
      getRemainingTimeInMillis: () => 60_000 - Math.floor(performance.now() - invocation.startReal),
    };
    let response: Awaited<ReturnType<SqsHandler>> | undefined;
    let thrown: unknown;
    await consumerContext.run(invocation, async () => {
      try {
        response = await instance.handler({ Records: records }, context);
      } catch (error) {
        thrown = error;
      }
    });
    // A crashed invocation returns nothing: its messages come back after the visibility timeout.
    if (invocation.crashed) return;
    if (thrown !== undefined || response === undefined) {
      violations.push(`${consumer} invocation ${invocation.id}: the handler threw ${String(thrown)}`);
      return;
    }
    const failed = new Set(response.batchItemFailures.map((failure) => failure.itemIdentifier));
    for (const id of failed) {
      if (!batch.some((received) => received.messageId === id)) {
        violations.push(`${consumer} invocation ${invocation.id}: batch item failure ${id} not in the batch`);
      }
    }
    for (const received of batch) {
      if (failed.has(received.messageId)) continue;
      if (!queue.delete(received.receiptHandle)) {
        violations.push(
          `${consumer} invocation ${invocation.id}: stale receipt handle for ${received.messageId}`,
        );
      }
    }
  };

  return {
    start() {
      const started: Promise<void>[] = [];
      while (idle.length > 0) {
        const batch = queue.receive(BATCH_SIZE);
        if (batch.length === 0) break;
        const instance = idle.shift()!;
        started.push(invoke(instance, batch).finally(() => idle.push(instance)));
      }
      return started;
    },
    log,
    close() {
      for (const instance of instances) instance.client.raw.destroy();
    },
  };
}

/** Faults of one relay invocation. */
type RelayFault = 'crash-after-publish' | 'slow';

const RELAY_FAULTS: readonly (readonly [RelayFault, number])[] = [
  ['crash-after-publish', 0.12],
  ['slow', 0.12],
];

interface RelayInvocation {
  readonly id: number;
  readonly batch: StreamBatch<StreamMeta>;
  readonly faults: boolean;
  /** Crashes once this many publishes landed. */
  readonly crashAfter: number | undefined;
  /** A slow invocation: its first publish waits until its rival (the retried batch) published. */
  readonly slow: ReturnType<typeof deferred<void>> | undefined;
  /** The event ids it sent, in order (landed or not). */
  readonly attempted: string[];
  /** The event ids whose publish or dead letter met a transient fault: the only checkpoints it may name. */
  readonly transient: Set<string>;
  readonly landed: Set<string>;
  landedCount: number;
  crashed: boolean;
}

const relayContext = new AsyncLocalStorage<RelayInvocation>();

/** The event id of an outbox item's stream record: the item's key. */
function eventIdOf(record: DynamoDbStreamRecord): string {
  const key = record.dynamodb.Keys?.[OUTBOX_ATTRIBUTES.pk];
  return key !== undefined && 'S' in key ? key.S : '';
}

/** The stream reader: every record `GetRecords` returns after the last one read, from `TRIM_HORIZON` on. */
function createStreamTail(streams: DynamoDBStreamsClient, streamArn: string) {
  let iterator: string | undefined;
  return async (): Promise<DynamoDbStreamRecord[]> => {
    if (iterator === undefined) {
      const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
      const shards = StreamDescription?.Shards ?? [];
      if (shards.length !== 1)
        throw new Error(`Expected the outbox stream to have one shard, got ${shards.length}`);
      const { ShardIterator } = await streams.send(
        new GetShardIteratorCommand({
          StreamArn: streamArn,
          ShardId: shards[0]!.ShardId,
          ShardIteratorType: 'TRIM_HORIZON',
        }),
      );
      iterator = ShardIterator;
    }
    const records: DynamoDbStreamRecord[] = [];
    for (;;) {
      const page = await streams.send(new GetRecordsCommand({ ShardIterator: iterator }));
      const batch = page.Records ?? [];
      records.push(...batch.map((record) => dynamoDbStreamRecordFrom(streamArn, record)));
      if (page.NextShardIterator !== undefined) iterator = page.NextShardIterator;
      if (batch.length === 0 || page.NextShardIterator === undefined) return records;
    }
  };
}

/** Runs one seed: both services and the relay until drained, the redrive, then the double tap. */
export async function runChainSimulation(options: ChainSeedOptions): Promise<ChainSimulationResult> {
  const { seed } = options;
  const consumers = chainConsumersOf(seed);
  const plans = planChain(seed, options.messages);
  const planByMessageId = new Map(
    plans.flatMap((plan) => plan.copies.map((copy) => [copy.messageId, plan] as const)),
  );
  const history = createHistory();
  for (const plan of plans) {
    history.append({
      kind: 'input',
      message: `o${plan.index}`,
      keys: plan.scopedKey === undefined ? [] : [plan.scopedKey],
      amount: plan.amount,
    });
  }
  const orderOf = (messageId: string): string => {
    const plan = planByMessageId.get(messageId) ?? planByMessageId.get(messageId.replace(/-double-tap$/, ''));
    return plan === undefined ? messageId : `o${plan.index}`;
  };
  /** 1 until the queues first drained; 2 for the redrive and the double tap (the outage is over). */
  let phase: 1 | 2 = 1;
  const violations: string[] = [];
  const random = createRandom(seed ^ 0xc4a2);

  const orderQueue = createSimulatedQueue<OrderMeta>({
    startMillis: options.startMillis,
    visibilityTimeoutMillis: VISIBILITY_TIMEOUT_MILLIS,
    maxReceiveCount: MAX_RECEIVE_COUNT,
    random,
    skipChance: 0.05,
  });
  const shippingQueue = createSimulatedQueue<ShipmentMeta>({
    startMillis: options.startMillis,
    visibilityTimeoutMillis: VISIBILITY_TIMEOUT_MILLIS,
    maxReceiveCount: MAX_RECEIVE_COUNT,
    random: createRandom(seed ^ 0xc4a3),
    skipChance: 0.05,
  });
  const stream = createSimulatedStream<StreamMeta>({
    shardCount: 1,
    batchSize: BATCH_SIZE,
    maxRetryAttempts: MAX_RETRY_ATTEMPTS,
    bisectOnError: seed % 2 === 1,
    parallelization: seed % 2 === 0 ? 2 : 1,
  });

  const orders = createConsumerFleet<OrderMeta>({
    seed,
    consumer: consumers.orders,
    queue: orderQueue,
    instances: options.instances,
    random,
    inboxTable: options.inboxTable,
    pkOf: (received) => received.meta.plan.scopedKey,
    attributesOf: () => ({}),
    isEffect: (request) => request.operation === 'TransactWriteItems',
    onEffect: (request, sent) => {
      for (const write of writesOn(request.operation, sent, options.ordersTable)) {
        history.append({ kind: 'applied', key: write.pk, amount: Number(write.values[':amount']) });
      }
      for (const write of writesOn(request.operation, sent, options.outboxTable)) {
        history.append({ kind: 'emitted', event: write.pk });
      }
    },
    onDeadLetter: (message) =>
      history.append({
        kind: 'dead-lettered',
        message: orderOf(message.sourceMessageId),
        code: message.code,
        reason: message.reason,
      }),
    violations,
    createHandler: (common) =>
      createSqsHandler<OrderBody>({
        ...common,
        dedupKey: fromBody<OrderBody>((body) => body.id),
        mode: atomic(
          (message, unitOfWork) => {
            if (phase === 1 && planByMessageId.get(message.messageId)?.outage === true) {
              throw new Error('A dependency of orders is down (injected outage)');
            }
            unitOfWork.update({
              TableName: options.ordersTable,
              Key: { pk: message.scopedKey },
              UpdateExpression: 'ADD #effects :one SET #amount = :amount',
              ExpressionAttributeNames: { '#effects': 'effects', '#amount': 'amount' },
              ExpressionAttributeValues: { ':one': 1, ':amount': message.body.amount },
            });
            for (const event of eventsOf(message.body)) {
              unitOfWork.emit(
                { type: event.type, detail: event.detail },
                {
                  ...(event.name === undefined ? {} : { name: event.name }),
                  ...(event.entity === undefined ? {} : { entity: event.entity }),
                },
              );
            }
          },
          { outbox: { tableName: options.outboxTable } },
        ),
      }),
  });

  const shippingKeyOf = (received: ReceivedMessage<ShipmentMeta>): string =>
    options.brokenReceiver ? received.messageId : received.meta.eventId;
  const shipping = createConsumerFleet<ShipmentMeta>({
    seed,
    consumer: consumers.shipping,
    queue: shippingQueue,
    instances: options.instances,
    random,
    inboxTable: options.inboxTable,
    pkOf: (received) => scopeKey(consumers.shipping, shippingKeyOf(received)),
    attributesOf: (meta) => meta.attributes,
    isEffect: (request) => request.operation === 'PutItem',
    onEffect: (request, sent) => {
      for (const write of writesOn(request.operation, sent, options.shipmentsTable)) {
        history.append({ kind: 'applied', key: write.pk, upstream: String(write.values.eventId) });
      }
    },
    // Shipping dead-letters nothing (the oracle says so); a dead letter of it names its message.
    onDeadLetter: (message) =>
      history.append({
        kind: 'dead-lettered',
        message: message.sourceMessageId,
        code: message.code,
        reason: message.reason,
      }),
    violations,
    createHandler: (common) =>
      createSqsHandler<EventDetail>({
        ...common,
        dedupKey: options.brokenReceiver ? fromMessageId() : fromAttribute(IDEMPOTENCY_KEY_ATTRIBUTE),
        mode: entity((message) => ({
          tableName: options.shipmentsTable,
          keyAttribute: 'pk',
          item: {
            pk: message.scopedKey,
            seed,
            eventId: message.attributes[IDEMPOTENCY_KEY_ATTRIBUTE]?.stringValue ?? '',
            eventType: message.attributes[EVENT_TYPE_ATTRIBUTE]?.stringValue ?? '',
            body: message.rawBody,
          },
        })),
      }),
  });

  // The relay: real createOutboxRelay, sqsDestination and createSqsDeadLetterSender (the sender
  // the construct's EO_DEAD_LETTER_QUEUE_URL gives it, with EO_DEAD_LETTER_MODE `direct`). Both SQS
  // clients send through the SQS conformance layer, then land messages in queue 2 and the
  // dead-letter queue; what is refused and what fails is chain-destination.ts's.
  const relayLog: RelayLog = {
    landed: new Map(),
    invocations: 0,
    crashes: 0,
    failedPublishes: 0,
    lostAnswers: 0,
    publishFaults: Object.fromEntries(PUBLISH_FAULTS.map(([fault]) => [fault, 0])) as Record<
      PublishFault,
      number
    >,
    refusals: new Map(),
    deadLetters: [],
    failedDeadLetterSends: 0,
    maxRetryAtOnePosition: 0,
    races: 0,
    racedEvents: 0,
    emittedTwice: 0,
    concurrentShardBatches: 0,
    redeliveredAfterLostCheckpoint: 0,
  };
  let publishCount = 0;
  /** Faults of the relay other than lost checkpoints are injected. */
  const relayFaults = options.lostCheckpointsOnly !== true;
  /** Slow invocations waiting for their rival to publish, by lane. */
  const waitingSlow = new Map<string, RelayInvocation>();
  const queueUrlOf = (name: string) => `https://sqs.us-east-1.amazonaws.com/000000000000/${name}`;
  const shippingQueueUrl = queueUrlOf(consumers.shipping);
  /** The record of `eventId` in the invocation's batch, and how often the relay was given it. */
  const deliveryOf = (invocation: RelayInvocation, eventId: string) => {
    const entry = invocation.batch.entries.find((candidate) => candidate.meta.eventId === eventId);
    return { entry, delivery: entry === undefined ? 0 : (relayDeliveries.get(entry.sequenceNumber) ?? 0) };
  };
  const invocationOf = (what: string): RelayInvocation => {
    const invocation = relayContext.getStore();
    if (invocation === undefined) throw new Error(`${what} outside a relay invocation`);
    if (invocation.crashed) throw new SimulatedCrash(`${what} refused: the relay crashed`);
    return invocation;
  };

  /** Queue 2 behind the conformance layer: what SQS accepts lands, unless a fault stops it first. */
  const shippingQueueSqs = createConformingSqsClient(
    {
      async send(command: SendMessageCommand): Promise<{ MessageId: string }> {
        const invocation = invocationOf('A publish');
        const input = command.input;
        const eventId = input.MessageAttributes?.[IDEMPOTENCY_KEY_ATTRIBUTE]?.StringValue ?? '';
        const type = input.MessageAttributes?.[EVENT_TYPE_ATTRIBUTE]?.StringValue ?? '';
        const { entry, delivery } = deliveryOf(invocation, eventId);
        const fault =
          invocation.faults && relayFaults
            ? drawFault(
                PUBLISH_FAULTS,
                chanceOf(seed, 'publish', eventId, entry?.meta.emission ?? 0, delivery),
              )
            : undefined;
        const shape = chanceOf(seed, 'publish fault shape', eventId, entry?.meta.emission ?? 0, delivery);
        if (fault !== undefined && fault !== 'answer-lost') {
          relayLog.failedPublishes += 1;
          relayLog.publishFaults[fault] += 1;
          invocation.transient.add(eventId);
          throw publishFaultError(fault, shape);
        }
        if (refusalOf(seed, { id: eventId, type, body: input.MessageBody ?? '' }) === 'injected') {
          throw injectedRefusal();
        }
        const attributes = Object.fromEntries(
          Object.entries(input.MessageAttributes ?? {}).map(([name, value]) => [
            name,
            {
              dataType: value.DataType ?? 'String',
              ...(value.StringValue === undefined ? {} : { stringValue: value.StringValue }),
            },
          ]),
        );
        const messageId = `s${seed}-published-${++publishCount}`;
        shippingQueue.send({ messageId, body: input.MessageBody ?? '', meta: { eventId, attributes } });
        relayLog.landed.set(eventId, (relayLog.landed.get(eventId) ?? 0) + 1);
        history.append({ kind: 'delivered', message: eventId, attempt: `published as ${messageId}` });
        invocation.landed.add(eventId);
        invocation.landedCount += 1;
        // Two invocations of one lane publishing the same event, one of them past its timeout: a race.
        for (const other of liveRelays) {
          const racing = other !== invocation && other.batch.lane === invocation.batch.lane;
          if (
            racing &&
            (other.slow !== undefined || invocation.slow !== undefined) &&
            other.landed.has(eventId)
          ) {
            relayLog.racedEvents += 1;
          }
        }
        if (fault === 'answer-lost') {
          relayLog.lostAnswers += 1;
          relayLog.publishFaults[fault] += 1;
          invocation.transient.add(eventId);
          throw publishFaultError(fault, shape);
        }
        if (invocation.crashAfter !== undefined && invocation.landedCount >= invocation.crashAfter) {
          invocation.crashed = true;
          relayLog.crashes += 1;
          throw new SimulatedCrash('the relay crashed after publishing, before returning its checkpoint');
        }
        return { MessageId: messageId };
      },
    },
    { queues: { [shippingQueueUrl]: { maximumMessageSize: SHIPPING_QUEUE_MAX_MESSAGE_BYTES } } },
  );
  const sqsClient = {
    async send(command: SendMessageCommand): Promise<unknown> {
      const invocation = invocationOf('A publish');
      const eventId = command.input.MessageAttributes?.[IDEMPOTENCY_KEY_ATTRIBUTE]?.StringValue ?? '';
      invocation.attempted.push(eventId);
      const waiting = waitingSlow.get(invocation.batch.lane);
      if (waiting !== undefined && waiting !== invocation) waiting.slow?.resolve();
      if (invocation.slow !== undefined) await settlesWithin(invocation.slow.promise, RIVAL_WAIT_MILLIS);
      try {
        return await shippingQueueSqs.send(command);
      } catch (error) {
        if (isRefusal(error)) relayLog.refusals.set(eventId, (relayLog.refusals.get(eventId) ?? 0) + 1);
        throw options.tamperPublishError === undefined ? error : options.tamperPublishError(error);
      }
    },
  };
  /** The relay's dead-letter queue behind the conformance layer; a send fails now and then. */
  const deadLetterSqs = createConformingSqsClient({
    async send(command: SendMessageCommand): Promise<{ MessageId: string }> {
      const invocation = invocationOf('A dead letter');
      const eventId = command.input.MessageAttributes?.[DEAD_LETTER_ATTRIBUTES.dedupKey]?.StringValue ?? '';
      if (
        invocation.faults &&
        relayFaults &&
        deadLetterSendFails(seed, eventId, deliveryOf(invocation, eventId).delivery)
      ) {
        relayLog.failedDeadLetterSends += 1;
        invocation.transient.add(eventId);
        throw deadLetterSendError();
      }
      relayLog.deadLetters.push({ input: command.input, invocation: invocation.id });
      const attributes = command.input.MessageAttributes;
      history.append({
        kind: 'dead-lettered',
        message: eventId,
        code: attributes?.[DEAD_LETTER_ATTRIBUTES.code]?.StringValue ?? '',
        reason: attributes?.[DEAD_LETTER_ATTRIBUTES.reason]?.StringValue ?? '',
      });
      deadLettered.add(eventId);
      return { MessageId: `s${seed}-dead-letter-${relayLog.deadLetters.length}` };
    },
  });
  /** The event ids the dead-letter queue has a message of. */
  const deadLettered = new Set<string>();
  /** Relay invocations still running (a slow one included, after its batch was retried). */
  const liveRelays = new Set<RelayInvocation>();
  const relayDeliveries = new Map<string, number>();
  const quietLogger: Logger = { log: () => undefined };
  const relays: OutboxRelay[] = Array.from({ length: 3 }, () =>
    createOutboxRelay({
      destination: sqsDestination({
        client: sqsClient as unknown as Pick<SQSClient, 'send'>,
        queueUrl: shippingQueueUrl,
      }),
      deadLetter: createSqsDeadLetterSender({
        client: deadLetterSqs as unknown as SQSClient,
        queueUrl: queueUrlOf(`${consumers.relay}-dead-letters`),
      }),
      // One function, three instances: one name, as the construct's EO_CONSUMER gives it.
      name: consumers.relay,
      logger: quietLogger,
      // No EMF line per invocation, and no EO_* of the test process.
      metrics: false,
      environment: {},
    }),
  );
  const idleRelays = relays.map((_, index) => index);

  /**
   * The relay's checkpoint contract: at most one sequence number, a record of the batch; the
   * records before it published (landed) or dead-lettered, and it attempted, in order, and none
   * after it attempted. A checkpoint is named only where a transient fault met the record's
   * publish or dead letter: a refused event never holds the shard.
   */
  const checkRelayResponse = (invocation: RelayInvocation, named: readonly string[]): void => {
    const where = `relay invocation ${invocation.id} (${invocation.batch.lane})`;
    if (named.length > 1) violations.push(`${where}: ${named.length} checkpoints for one shard`);
    const entries = invocation.batch.entries;
    const at =
      named.length === 0 ? entries.length : entries.findIndex((entry) => entry.sequenceNumber === named[0]);
    if (at < 0) {
      violations.push(`${where}: checkpoint ${named[0]} is not a record of the batch`);
      return;
    }
    const expected = entries.slice(0, Math.min(at + 1, entries.length)).map((entry) => entry.meta.eventId);
    if (JSON.stringify(invocation.attempted) !== JSON.stringify(expected)) {
      violations.push(
        `${where}: published ${invocation.attempted.length} event(s) out of order or past the checkpoint (at ${at} of ${entries.length})`,
      );
    }
    for (const entry of entries.slice(0, at)) {
      if (!relayLog.landed.has(entry.meta.eventId) && !deadLettered.has(entry.meta.eventId)) {
        violations.push(
          `${where}: ${entry.meta.eventId} before the checkpoint was neither published nor dead-lettered`,
        );
      }
    }
    const checkpoint = entries[at];
    if (checkpoint !== undefined && !invocation.transient.has(checkpoint.meta.eventId)) {
      violations.push(
        `${where}: checkpointed at ${checkpoint.meta.eventId} (retry ${invocation.batch.retry}) though no transient fault met it: the shard is held`,
      );
    }
  };

  const invokeRelay = async (index: number, batch: StreamBatch<StreamMeta>): Promise<void> => {
    const faults = batch.retry < FAULT_FREE_FROM_RETRY;
    relayLog.maxRetryAtOnePosition = Math.max(relayLog.maxRetryAtOnePosition, batch.retry);
    const first = batch.entries[0]!;
    for (const entry of batch.entries)
      relayDeliveries.set(entry.sequenceNumber, (relayDeliveries.get(entry.sequenceNumber) ?? 0) + 1);
    const fault =
      faults && relayFaults
        ? drawFault(
            RELAY_FAULTS,
            chanceOf(seed, 'relay', first.meta.eventId, first.meta.emission, batch.retry),
          )
        : undefined;
    const invocation: RelayInvocation = {
      id: ++relayLog.invocations,
      batch,
      faults,
      crashAfter:
        fault === 'crash-after-publish'
          ? 1 +
            Math.floor(chanceOf(seed, 'relay crash', first.meta.eventId, batch.retry) * batch.entries.length)
          : undefined,
      slow: fault === 'slow' ? deferred<void>() : undefined,
      attempted: [],
      transient: new Set(),
      landed: new Set(),
      landedCount: 0,
      crashed: false,
    };
    // Another lane of the shard runs a batch now (a parallelization factor of 2): two relay
    // instances on one shard; a slow invocation's rival on its own lane is a race, counted apart.
    if ([...liveRelays].some((other) => other.batch.lane !== batch.lane))
      relayLog.concurrentShardBatches += 1;
    liveRelays.add(invocation);
    const run = relayContext.run(invocation, () =>
      relays[index]!({ Records: batch.entries.map((entry) => entry.meta.record) }),
    );
    if (invocation.slow !== undefined) {
      // Past its timeout: the event source sees a function error and retries the batch on another
      // instance at once, while this one still runs and publishes.
      relayLog.races += 1;
      waitingSlow.set(batch.lane, invocation);
      stream.complete(batch, { kind: 'error' });
      await run.catch(() => undefined);
      liveRelays.delete(invocation);
      if (waitingSlow.get(batch.lane) === invocation) waitingSlow.delete(batch.lane);
      return;
    }
    let response: Awaited<ReturnType<OutboxRelay>> | undefined;
    let thrown: unknown;
    try {
      response = await run;
    } catch (error) {
      thrown = error;
    }
    liveRelays.delete(invocation);
    // A crashed invocation is a function error: the whole batch comes again.
    if (invocation.crashed) {
      stream.complete(batch, { kind: 'error' });
      return;
    }
    if (thrown !== undefined || response === undefined) {
      violations.push(`relay invocation ${invocation.id}: the relay threw ${String(thrown)}`);
      stream.complete(batch, { kind: 'error' });
      return;
    }
    const named = response.batchItemFailures.map((failure) => failure.itemIdentifier);
    checkRelayResponse(invocation, named);
    // The relay answered; the mapping's checkpoint of it may not persist: the batch comes again,
    // and what it published is published again (shipping dedups on the event id).
    const checkpointLost =
      faults &&
      chanceOf(
        seed,
        'relay checkpoint lost',
        first.meta.eventId,
        relayDeliveries.get(first.sequenceNumber) ?? 0,
      ) < (options.relayLostCheckpointChance ?? RELAY_LOST_CHECKPOINT_CHANCE);
    if (checkpointLost) {
      const at = batch.entries.findIndex((entry) => entry.sequenceNumber === named[0]);
      relayLog.redeliveredAfterLostCheckpoint += at < 0 ? batch.entries.length : at;
    }
    stream.complete(batch, { kind: 'response', itemIdentifiers: named, checkpointLost });
  };

  const startRelays = (): Promise<void>[] => {
    const started: Promise<void>[] = [];
    for (;;) {
      const batches = stream.nextBatches(idleRelays.length);
      if (batches.length === 0) return started;
      for (const batch of batches) {
        const index = idleRelays.shift()!;
        started.push(invokeRelay(index, batch).finally(() => idleRelays.push(index)));
      }
    }
  };

  // The outbox table's stream, read with GetRecords; a record emitted twice comes again after the next read.
  const streams = new DynamoDBStreamsClient({ ...awsConfig(), maxAttempts: 5 });
  const readTail = createStreamTail(streams, options.outboxStreamArn);
  let again: DynamoDbStreamRecord[] = [];
  const putRecord = (record: DynamoDbStreamRecord, emission: 0 | 1): void => {
    const eventId = eventIdOf(record);
    const meta = { record, eventId, emission };
    const entry = stream.put(eventId, meta);
    (meta as { record: DynamoDbStreamRecord }).record = {
      ...record,
      eventID: emission === 0 ? record.eventID : `${record.eventID}-again`,
      dynamodb: { ...record.dynamodb, SequenceNumber: entry.sequenceNumber },
    };
  };
  /** Puts what the stream has new into the simulated stream; true when it had anything. */
  const poll = async (): Promise<boolean> => {
    const fresh = await readTail();
    const repeated = again;
    again = [];
    for (const record of repeated) putRecord(record, 1);
    for (const record of fresh) {
      putRecord(record, 0);
      const eventId = eventIdOf(record);
      if (relayFaults && chanceOf(seed, 'emitted twice', eventId) < 0.05) {
        relayLog.emittedTwice += 1;
        again.push(record);
      }
    }
    return fresh.length > 0 || repeated.length > 0;
  };

  /** Runs all three functions until every queue is empty, the stream read to its end and checkpointed. */
  const drain = async (): Promise<void> => {
    const running = new Set<Promise<void>>();
    const track = (started: readonly Promise<void>[]) => {
      for (const run of started) {
        const tracked: Promise<void> = run.finally(() => running.delete(tracked));
        running.add(tracked);
      }
    };
    // The stream is read again after every orders invocation (it may have committed events), one
    // read at a time, while the functions run: the mapping polls the shard as the orders commit.
    let unread = true;
    let reading = false;
    for (;;) {
      if ((unread || again.length > 0) && !reading) {
        unread = false;
        reading = true;
        track([
          poll().then(() => {
            reading = false;
          }),
        ]);
      }
      track(
        orders.start().map((run) =>
          run.finally(() => {
            unread = true;
          }),
        ),
      );
      track(startRelays());
      track(shipping.start());
      if (running.size > 0) {
        await Promise.race(running);
        continue;
      }
      if (await poll()) continue;
      if (stream.hasWork()) {
        violations.push('the stream has work but no relay batch runs');
        return;
      }
      if (!orderQueue.advance() && !shippingQueue.advance()) return;
    }
  };

  const snapshot = async (): Promise<ChainSnapshot> => {
    const [ordersItems, outboxItems, shipmentItems] = await Promise.all([
      scanItems(admin.document, options.ordersTable, `${consumers.orders}#`),
      scanItems(admin.document, options.outboxTable),
      scanItems(admin.document, options.shipmentsTable, `${consumers.shipping}#`),
    ]);
    const canonical = (items: readonly Record<string, unknown>[]) =>
      JSON.stringify(items.map((item) => fingerprintOf(item)).sort());
    return {
      orders: canonical(ordersItems),
      outbox: canonical(outboxItems),
      shipments: canonical(shipmentItems),
      published: publishCount,
      deadLettered: relayLog.deadLetters.length,
    };
  };

  const admin = createLocalClient({ maxAttempts: 5 });
  const foreignEvents: PlannedEvent[] = foreignEventsOf(seed, options.messages).map((event) => ({
    ...event,
    refusal: 'invalid-attribute',
  }));
  const doubleTapCopies = new Map<string, ChainPlan>();
  let redrives = 0;
  let beforeDoubleTap: ChainSnapshot;
  let afterDoubleTap: ChainSnapshot;
  try {
    // Another writer's items, put straight into the outbox table: the relay reads them first.
    for (const event of foreignEvents) {
      history.append({ kind: 'emitted', event: event.id, message: FOREIGN_WRITER });
      await admin.document.send(
        new PutCommand({
          TableName: options.outboxTable,
          Item: {
            [OUTBOX_ATTRIBUTES.pk]: event.id,
            [OUTBOX_ATTRIBUTES.type]: event.type,
            [OUTBOX_ATTRIBUTES.body]: event.body,
            [OUTBOX_ATTRIBUTES.source]: FOREIGN_WRITER,
            [OUTBOX_ATTRIBUTES.createdAt]: options.startMillis,
          },
        }),
      );
    }
    const sends = plans
      .flatMap((plan) => plan.copies.map((copy) => ({ plan, copy })))
      .filter(({ copy }) => copy.redriveOf === undefined)
      .sort((a, b) => a.copy.position - b.copy.position);
    for (const { plan, copy } of sends) {
      orderQueue.send({ messageId: copy.messageId, body: copy.body, meta: { plan } }, copy.delayMillis);
    }
    await drain();
    // The outage is over: the dead-letter queue is redriven, and some completed orders come back
    // the same way, each with a new message id.
    phase = 2;
    for (const plan of plans) {
      for (const copy of plan.copies) {
        if (copy.redriveOf === undefined) continue;
        const state = orderQueue.stateOf(copy.redriveOf);
        const expected = plan.outage ? 'dead-lettered' : 'deleted';
        if (state !== expected) {
          violations.push(
            `o${plan.index}: ${copy.redriveOf} is ${state} before its redrive, expected ${expected}`,
          );
        }
        redrives += 1;
        orderQueue.send({ messageId: copy.messageId, body: copy.body, meta: { plan } });
      }
    }
    await drain();
    beforeDoubleTap = await snapshot();
    // The double tap: the orders service's whole input log once more, each copy a new message.
    for (const { plan, copy } of sends) {
      const messageId = `${copy.messageId}-double-tap`;
      doubleTapCopies.set(messageId, plan);
      orderQueue.send({ messageId, body: copy.body, meta: { plan } });
    }
    await drain();
    afterDoubleTap = await snapshot();
    for (const moved of orderQueue.redriven) {
      history.append({
        kind: 'dead-lettered',
        message: `o${moved.meta.plan.index}`,
        code: orders.log.lastOutcome.get(moved.messageId)?.code ?? '',
        reason: '',
      });
    }
  } finally {
    orders.close();
    shipping.close();
    streams.destroy();
    admin.raw.destroy();
  }

  return {
    options,
    plans,
    orderQueue,
    shippingQueue,
    stream,
    orders: orders.log,
    shipping: shipping.log,
    relay: relayLog,
    doubleTapCopies,
    foreignEvents,
    redrives,
    beforeDoubleTap,
    afterDoubleTap,
    runtimeViolations: violations,
    history: history.entries,
  };
}
