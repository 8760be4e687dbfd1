/**
 * The oracle of the chain simulation: reads the end state of both services and the outbox on the
 * emulator, and checks every planned order and every event it emits, across the chain.
 *
 * Per order of the orders service:
 * - valid, winning its key: its business effect exactly once (the item's `effects` counter is 1)
 *   with its payload (`amount`); no copy dead-lettered by orders, every copy acknowledged (the
 *   redriven and double-tap copies as duplicates), but behind an outage: then every copy the
 *   producer sent is in the dead-letter queue (moved by the redrive policy), and its redriven
 *   copies apply it;
 * - valid, losing its key to another payload: every copy dead-lettered with `PAYLOAD_MISMATCH`;
 *   exactly one order of a key wins;
 * - malformed JSON, no key (poison): every copy dead-lettered with `MALFORMED_BODY` /
 *   `MISSING_KEY` and a reason.
 *
 * Per event a winning order emits (`PlannedEvent`: its deterministic id `outboxEventId(scoped
 * key, name)`, type, body, entity):
 * - exactly one outbox item under that id, with that type, body, entity and source; no outbox
 *   item for anything else (poison input and the losers of a key emit nothing, and a replay
 *   mints no second identity);
 * - published at least once (landed in the shipping queue with the id as `idempotency-key`);
 * - exactly one effect in the shipping service: one entity under the id's scoped key, carrying
 *   the event's type and body, put once on the wire; no entity for anything else;
 * - but an event shipping's queue refuses for good (`PlannedEvent.refusal`, see
 *   `chain-destination.ts`): never published, no effect in shipping, and on the relay's
 *   dead-letter queue: every message of it there carries the event id as `eo-dedup-key`, the
 *   relay's name, code `VALIDATION` and a reason naming the event and the refusal (the SQS error
 *   and its message) in `eo-reason` and in the body, the stream dead-letter envelope
 *   (`effectively-once/stream-dead-letter@1`) with the coordinates of a stream record of the
 *   event and that record's `dynamodb` field whole, byte for byte, so the event can be read
 *   back from it. Nothing else is dead-lettered by the relay. An event may be dead-lettered more
 *   than once (duplicate dead letters, counted): the relay's dead-letter queue is at least once
 *   like any publish, and a record comes again after a crash or a rival invocation, and as a
 *   second emission. The double tap sends no dead letter: it commits nothing, so the stream
 *   carries nothing new.
 *
 * And across the chain: every message of both queues acknowledged (none left, none
 * moved by a redrive policy but the copies behind an outage, shipping dead-letters nothing), every stream record
 * checkpointed past and none discarded to the on-failure destination, no relay batch retried at
 * one checkpoint more than `FAULT_FREE_FROM_RETRY` times (the retries the transient faults can
 * cause; the simulation checks that each checkpoint the relay names is a record a transient fault
 * met), and the double tap (the orders service's whole input log sent again) changes nothing in
 * either service, the outbox, what the relay published or what it dead-lettered.
 *
 * Counted: N orders, D duplicate deliveries (beyond the first per order and per event), C crashes
 * (both consumers and the relay), P relay re-publishes (publishes beyond the first per event),
 * R relay races, E duplicate effects (an order's effect beyond the first, an event's entity
 * beyond the first, an outbox item or entity of nothing planned), L lost (an effect, outbox
 * item, publish or entity missing, a refused event not dead-lettered, poison not dead-lettered, a
 * message left in a queue), F refused events and their dead letters, T transient publish faults.
 *
 * The run's history is checked too (`history.ts`): each order's effect applied once, every order
 * applied with its payload or dead-lettered with a reason, and each event the outbox received
 * (from orders or the other writer) applied exactly once downstream, or never and dead-lettered by
 * the relay with a reason. The first violation is reported with its seed and the entries that
 * show it.
 */
import { isDeepStrictEqual } from 'node:util';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  DEAD_LETTER_ATTRIBUTES,
  OUTBOX_ATTRIBUTES,
  STREAM_RECORD_ATTRIBUTES,
} from '../../../lambda/core/contract';
import { scopeKey } from '../../../lambda/core/dedup-key';
import { outboxMessageOf } from '../../../lambda/outbox/outbox-relay';
import type { DynamoDbStreamRecord } from '../../../lambda/streams';
import {
  STREAM_DEAD_LETTER_FORMAT,
  type StreamDeadLetterBody,
} from '../../../lambda/streams/stream-dead-letter';
import { recoveredData } from '../../support/stream-fixtures';
import { FOREIGN_WRITER, REFUSAL_REASONS } from './chain-destination';
import {
  type ChainPlan,
  type ChainSimulationResult,
  type ConsumerLog,
  chainConsumersOf,
  FAULT_FREE_FROM_RETRY,
  type PlannedEvent,
  type RelayDeadLetter,
} from './chain-simulation';
import { ungrantedActions } from './grants';
import { checkRunHistory, type HistoryCoverage } from './history';
import { readItems, scanItems } from './tables';

/** What one seed amounted to. */
export interface ChainSeedReport {
  readonly seed: number;
  readonly messages: number;
  /** Events the winning orders emit. */
  readonly events: number;
  readonly deliveries: number;
  readonly duplicateDeliveries: number;
  readonly crashes: number;
  readonly crashesBy: { readonly orders: number; readonly relay: number; readonly shipping: number };
  readonly lostResponses: number;
  readonly relayInvocations: number;
  readonly publishes: number;
  readonly rePublishes: number;
  readonly failedPublishes: number;
  readonly lostAnswers: number;
  /** Transient publish faults retried, by kind (the failed publishes and lost answers). */
  readonly publishFaults: Readonly<Record<string, number>>;
  /** Dead-letter sends of the relay that failed and were retried. */
  readonly failedDeadLetterSends: number;
  /** Events shipping's queue refused for good, by why; and its refusals (every attempt). */
  readonly refused: number;
  readonly refusedAttempts: number;
  readonly refusedBy: Readonly<Record<string, number>>;
  /** Messages on the relay's dead-letter queue, and those beyond the first per event. */
  readonly relayDeadLetters: number;
  readonly duplicateDeadLetters: number;
  /** The most retries of one relay batch at one checkpoint. */
  readonly maxRetryAtOnePosition: number;
  readonly races: number;
  readonly racedEvents: number;
  readonly emittedTwice: number;
  /** Relay invocations started while another lane of the shard ran a batch (two instances on one shard). */
  readonly concurrentShardBatches: number;
  /** Answered relay batches whose checkpoint was not stored (they ran again), and the records done already that came again. */
  readonly lostCheckpoints: number;
  readonly redeliveredAfterLostCheckpoint: number;
  readonly retriesFromCheckpoint: number;
  readonly redrives: number;
  /** Copies behind an outage moved to the dead-letter queue by the redrive policy (and redriven). */
  readonly outageDeadLettered: number;
  readonly doubleTapMessages: number;
  readonly deadLettered: number;
  readonly duplicateEffects: number;
  readonly lost: number;
  /** What the history checker covered (`history.ts`): order keys, and events followed downstream. */
  readonly history: HistoryCoverage;
  /** Everything that broke the contract; empty when the seed passed. */
  readonly violations: readonly string[];
}

const sumOf = (values: Iterable<number>): number => [...values].reduce((sum, value) => sum + value, 0);

/** Reads the end state and checks every planned order and event of one seed. */
export async function checkChainSeed(
  result: ChainSimulationResult,
  reader: DynamoDBDocumentClient,
): Promise<ChainSeedReport> {
  const { options, plans } = result;
  const consumers = chainConsumersOf(options.seed);
  const violations: string[] = [...result.runtimeViolations];
  const violate = (message: string) => violations.push(message);
  let lost = 0;
  let duplicateEffects = 0;
  let deadLettered = 0;

  /** Every copy of a plan, the double tap's included. */
  const copiesOf = new Map<ChainPlan, string[]>();
  for (const plan of plans)
    copiesOf.set(
      plan,
      plan.copies.map((copy) => copy.messageId),
    );
  for (const [messageId, plan] of result.doubleTapCopies) copiesOf.get(plan)!.push(messageId);
  const lettersOf = (log: ConsumerLog) => {
    const letters = new Map<string, typeof log.deadLetters>();
    for (const letter of log.deadLetters) {
      letters.set(letter.sourceMessageId, [...(letters.get(letter.sourceMessageId) ?? []), letter]);
    }
    return letters;
  };
  const orderLetters = lettersOf(result.orders);

  const expectDeadLettered = (plan: ChainPlan, code: string): boolean => {
    const wrong = copiesOf.get(plan)!.filter((messageId) => {
      const letters = orderLetters.get(messageId) ?? [];
      return letters.length === 0 || letters.some((letter) => letter.code !== code || letter.reason === '');
    });
    if (wrong.length > 0) {
      violate(`o${plan.index}: expected every copy dead-lettered as ${code}, not ${wrong.join(', ')}`);
      return false;
    }
    deadLettered += 1;
    return true;
  };

  // The orders service: poison input dead-lettered, one winner per key, its effect once.
  for (const plan of plans) {
    if (plan.kind === 'malformed' || plan.kind === 'missing-key') {
      if (!expectDeadLettered(plan, plan.expectedCode!)) lost += 1;
    }
  }
  const byKey = new Map<string, ChainPlan[]>();
  for (const plan of plans) {
    if (plan.scopedKey !== undefined) byKey.set(plan.scopedKey, [...(byKey.get(plan.scopedKey) ?? []), plan]);
  }
  const business = await readItems(reader, options.ordersTable, [...byKey.keys()]);
  const expected = new Map<string, { readonly plan: ChainPlan; readonly event: PlannedEvent }>();
  for (const [key, members] of byKey) {
    const item = business.get(key);
    if (item === undefined) {
      lost += 1;
      violate(`${key}: effect missing (orders ${members.map((plan) => `o${plan.index}`).join(', ')})`);
      continue;
    }
    const effects = Number(item.effects);
    if (effects !== 1) {
      duplicateEffects += Math.max(0, effects - 1);
      violate(`${key}: ${effects} effects in orders, expected 1${effects > 1 ? ' (duplicate effect)' : ''}`);
    }
    const winners = members.filter((plan) => plan.amount === Number(item.amount));
    if (winners.length !== 1) {
      violate(`${key}: ${winners.length} orders carry the stored amount ${String(item.amount)}, expected 1`);
      continue;
    }
    const winner = winners[0]!;
    for (const messageId of copiesOf.get(winner)!) {
      const letter = orderLetters.get(messageId)?.[0];
      if (letter !== undefined)
        violate(`o${winner.index} ${messageId}: won its key but dead-lettered as ${letter.code}`);
    }
    for (const loser of members) {
      if (loser !== winner && !expectDeadLettered(loser, 'PAYLOAD_MISMATCH')) lost += 1;
    }
    for (const event of winner.events) expected.set(event.id, { plan: winner, event });
  }

  // The outbox: exactly the winners' events, each under its deterministic id.
  const outbox = new Map(
    (await scanItems(reader, options.outboxTable)).map((item) => [String(item[OUTBOX_ATTRIBUTES.pk]), item]),
  );
  for (const [id, { plan, event }] of expected) {
    const item = outbox.get(id);
    if (item === undefined) {
      lost += 1;
      violate(`o${plan.index} ${event.name}: no outbox item ${id}`);
      continue;
    }
    const wanted = {
      type: event.type,
      body: event.body,
      entity: event.entity,
      source: consumers.orders,
    };
    const stored = {
      type: item[OUTBOX_ATTRIBUTES.type],
      body: item[OUTBOX_ATTRIBUTES.body],
      entity: item[OUTBOX_ATTRIBUTES.entity],
      source: item[OUTBOX_ATTRIBUTES.source],
    };
    if (JSON.stringify(stored) !== JSON.stringify(wanted)) {
      violate(
        `o${plan.index} ${event.name}: outbox item ${JSON.stringify(stored)}, expected ${JSON.stringify(wanted)}`,
      );
    }
  }
  // Another writer's items (`foreignEventsOf`) are refused by shipping's queue: dead-lettered below.
  const foreign = new Map(result.foreignEvents.map((event) => [event.id, event]));
  for (const id of outbox.keys()) {
    if (!expected.has(id) && !foreign.has(id)) {
      duplicateEffects += 1;
      violate(`outbox item ${id} of no planned event (a second identity: duplicate effect)`);
    }
  }

  // The relay: every event published at least once but the refused ones, which are on its
  // dead-letter queue; nothing else; every record checkpointed past.
  for (const [id, { plan, event }] of expected) {
    const published = result.relay.landed.has(id);
    if (event.refusal !== undefined) {
      if (published) {
        violate(`o${plan.index} ${event.name}: event ${id} published, though shipping's queue refuses it`);
      }
    } else if (!published) {
      lost += 1;
      violate(`o${plan.index} ${event.name}: event ${id} never published`);
    }
  }
  const deadLetters = checkRelayDeadLetters(
    result,
    new Map<string, { readonly label: string; readonly event: PlannedEvent }>([
      ...[...expected].map(
        ([id, { plan, event }]) => [id, { label: `o${plan.index} ${event.name}`, event }] as const,
      ),
      ...[...foreign].map(
        ([id, event]) => [id, { label: `${FOREIGN_WRITER}'s ${event.name}`, event }] as const,
      ),
    ]),
  );
  lost += deadLetters.lost;
  for (const problem of deadLetters.problems) violate(problem);
  if (result.relay.maxRetryAtOnePosition > FAULT_FREE_FROM_RETRY) {
    violate(
      `a relay batch was retried ${result.relay.maxRetryAtOnePosition} times at one checkpoint; transient faults explain at most ${FAULT_FREE_FROM_RETRY}`,
    );
  }
  for (const id of result.relay.landed.keys()) {
    if (!expected.has(id)) violate(`published ${id}, which no winning order emits`);
  }
  for (const [sequenceNumber, fate] of result.stream.fates()) {
    if (fate !== 'acknowledged') violate(`stream record ${sequenceNumber}: ${fate} at the end`);
  }
  if (result.stream.onFailure.length > 0) {
    lost += result.stream.onFailure.length;
    violate(`${result.stream.onFailure.length} relay batch(es) discarded to the on-failure destination`);
  }

  // The shipping service: one entity per event, under the event id's scoped key, put once.
  const entities = new Map<string, Record<string, unknown>[]>();
  for (const item of await scanItems(reader, options.shipmentsTable, `${consumers.shipping}#`)) {
    const id = String(item.eventId);
    entities.set(id, [...(entities.get(id) ?? []), item]);
  }
  for (const [id, { plan, event }] of expected) {
    const items = entities.get(id) ?? [];
    if (event.refusal !== undefined) {
      if (items.length > 0) violate(`o${plan.index} ${event.name}: refused event ${id} applied in shipping`);
      continue;
    }
    if (items.length === 0) {
      lost += 1;
      violate(`o${plan.index} ${event.name}: event ${id} has no effect in shipping`);
      continue;
    }
    if (items.length > 1) {
      duplicateEffects += items.length - 1;
      violate(
        `o${plan.index} ${event.name}: event ${id} has ${items.length} effects in shipping (duplicate effect)`,
      );
    }
    for (const item of items) {
      if (item.eventType !== event.type || item.body !== event.body) {
        violate(
          `o${plan.index} ${event.name}: shipping stored ${String(item.eventType)} ${String(item.body)}`,
        );
      }
    }
    if (!options.brokenReceiver && items[0]!.pk !== scopeKey(consumers.shipping, id)) {
      violate(`event ${id}: shipping's entity is keyed ${String(items[0]!.pk)}`);
    }
  }
  for (const [id, items] of entities) {
    if (!expected.has(id)) {
      duplicateEffects += items.length;
      violate(`shipping applied ${id}, which no winning order emits (duplicate effect)`);
    }
  }
  for (const [pk, writes] of result.shipping.effectWrites) {
    if (writes > 1) violate(`${pk}: put ${writes} times on the wire in shipping`);
  }

  /** The copies an outage kept failing (not their redriven copies): each in the dead-letter queue. */
  const outageCopies = new Set(
    plans.flatMap((plan) =>
      plan.outage
        ? plan.copies.filter((copy) => copy.redriveOf === undefined).map((copy) => copy.messageId)
        : [],
    ),
  );
  // Both queues drained; nothing moved by a redrive policy but the copies behind an outage,
  // nothing dead-lettered by shipping.
  for (const [name, queue] of [
    ['orders', result.orderQueue],
    ['shipping', result.shippingQueue],
  ] as const) {
    if (queue.pendingCount() > 0) {
      lost += queue.pendingCount();
      violate(`${queue.pendingCount()} message(s) left in the ${name} queue`);
    }
    for (const message of queue.redriven) {
      if (name === 'orders' && outageCopies.has(message.messageId)) continue;
      lost += 1;
      violate(
        `${name}: ${message.messageId} moved to the dead-letter queue after ${message.receiveCount} receives`,
      );
    }
  }
  const redriven = new Set(result.orderQueue.redriven.map((message) => message.messageId));
  for (const messageId of outageCopies) {
    if (!redriven.has(messageId))
      violate(`${messageId}: behind an outage, but not moved to the dead-letter queue`);
  }
  for (const letter of result.shipping.deadLetters) {
    violate(`shipping dead-lettered ${letter.sourceMessageId} as ${letter.code}: ${letter.reason}`);
  }

  // Every request either consumer sent is allowed by what the constructs grant its function:
  // orders by IdempotentConsumer in atomic mode with `outbox`, shipping in entity mode.
  const ungranted = [
    ...ungrantedActions(
      {
        mode: 'atomic',
        inboxTable: options.inboxTable,
        businessTable: options.ordersTable,
        outboxTable: options.outboxTable,
      },
      result.orders.actions,
    ).map((action) => `orders: ${action}`),
    ...ungrantedActions(
      { mode: 'entity', inboxTable: options.inboxTable, businessTable: options.shipmentsTable },
      result.shipping.actions,
    ).map((action) => `shipping: ${action}`),
  ];
  for (const action of ungranted) violate(`${action} is not granted`);

  // The double tap changes nothing in either service.
  const before = result.beforeDoubleTap;
  const after = result.afterDoubleTap;
  if (before.orders !== after.orders) violate('the double tap changed the orders service');
  if (before.outbox !== after.outbox) violate('the double tap changed the outbox');
  if (before.published !== after.published) {
    violate(`the double tap published ${after.published - before.published} more message(s)`);
  }
  if (before.deadLettered !== after.deadLettered) {
    violate(`the double tap dead-lettered ${after.deadLettered - before.deadLettered} more event(s)`);
  }
  if (before.shipments !== after.shipments) violate('the double tap changed the shipping service');

  const deliveriesOf = (log: ConsumerLog) => sumOf(log.deliveries.values());
  const orderDeliveries = deliveriesOf(result.orders);
  const shippingDeliveries = deliveriesOf(result.shipping);
  const crashesBy = {
    orders: sumOf(Object.values(result.orders.crashes)),
    relay: result.relay.crashes,
    shipping: sumOf(Object.values(result.shipping.crashes)),
  };
  const publishes = sumOf(result.relay.landed.values());
  const history = checkRunHistory(options.seed, result.history, violate);
  return {
    seed: options.seed,
    messages: plans.length,
    events: expected.size,
    deliveries: orderDeliveries + shippingDeliveries,
    duplicateDeliveries: orderDeliveries - plans.length + Math.max(0, shippingDeliveries - expected.size),
    crashes: crashesBy.orders + crashesBy.relay + crashesBy.shipping,
    crashesBy,
    lostResponses: result.orders.lostResponses + result.shipping.lostResponses + result.relay.lostAnswers,
    relayInvocations: result.relay.invocations,
    publishes,
    rePublishes: publishes - result.relay.landed.size,
    failedPublishes: result.relay.failedPublishes,
    lostAnswers: result.relay.lostAnswers,
    publishFaults: { ...result.relay.publishFaults },
    failedDeadLetterSends: result.relay.failedDeadLetterSends,
    refused: deadLetters.refusedBy.size,
    refusedAttempts: sumOf(result.relay.refusals.values()),
    refusedBy: Object.fromEntries(
      Object.keys(REFUSAL_REASONS).map((why) => [
        why,
        [...deadLetters.refusedBy.values()].filter((refusal) => refusal === why).length,
      ]),
    ),
    relayDeadLetters: result.relay.deadLetters.length,
    duplicateDeadLetters: deadLetters.duplicates,
    maxRetryAtOnePosition: result.relay.maxRetryAtOnePosition,
    races: result.relay.races,
    racedEvents: result.relay.racedEvents,
    emittedTwice: result.relay.emittedTwice,
    concurrentShardBatches: result.relay.concurrentShardBatches,
    lostCheckpoints: result.stream.stats.checkpointsLost,
    redeliveredAfterLostCheckpoint: result.relay.redeliveredAfterLostCheckpoint,
    retriesFromCheckpoint: result.stream.stats.retriesFromCheckpoint,
    redrives: result.redrives,
    outageDeadLettered: [...outageCopies].filter((messageId) => redriven.has(messageId)).length,
    doubleTapMessages: result.doubleTapCopies.size,
    deadLettered,
    duplicateEffects,
    lost,
    history,
    violations,
  };
}

/**
 * Checks the relay's dead-letter queue against the refused events: each on it, every message of
 * it right (see the header), nothing else on it. `lost` counts refused events not on it.
 */
function checkRelayDeadLetters(
  result: ChainSimulationResult,
  expected: ReadonlyMap<string, { readonly label: string; readonly event: PlannedEvent }>,
): {
  readonly problems: string[];
  readonly lost: number;
  readonly duplicates: number;
  readonly refusedBy: ReadonlyMap<string, string>;
} {
  const problems: string[] = [];
  const { relay: relayName } = chainConsumersOf(result.options.seed);
  const lettersOf = new Map<string, RelayDeadLetter[]>();
  for (const letter of result.relay.deadLetters) {
    const id = letter.input.MessageAttributes?.[DEAD_LETTER_ATTRIBUTES.dedupKey]?.StringValue ?? '';
    lettersOf.set(id, [...(lettersOf.get(id) ?? []), letter]);
  }
  const recordsOf = new Map<string, DynamoDbStreamRecord>(
    result.stream.entries.map((entry) => [entry.sequenceNumber, entry.meta.record]),
  );
  const refusedBy = new Map<string, string>();
  let lost = 0;
  let duplicates = 0;
  for (const [id, { label, event }] of expected) {
    const letters = lettersOf.get(id) ?? [];
    lettersOf.delete(id);
    const refusals = result.relay.refusals.get(id) ?? 0;
    if (event.refusal === undefined) {
      if (refusals > 0) problems.push(`${label}: shipping's queue refused event ${id}, which it should take`);
      if (letters.length > 0)
        problems.push(`${label}: event ${id} dead-lettered, though shipping's queue takes it`);
      continue;
    }
    refusedBy.set(id, event.refusal);
    if (letters.length === 0) {
      lost += 1;
      problems.push(`${label}: refused event ${id} (${event.refusal}) not on the dead-letter queue`);
      continue;
    }
    duplicates += letters.length - 1;
    // Each dead letter follows a refusal of a publish of the event.
    if (letters.length > refusals) {
      problems.push(`event ${id} dead-lettered ${letters.length} times but refused ${refusals} times`);
    }
    for (const letter of letters) {
      for (const problem of deadLetterProblems(letter, event, relayName, recordsOf)) {
        problems.push(`${label}: dead letter of ${id} (${event.refusal}): ${problem}`);
      }
    }
  }
  for (const [id, letters] of lettersOf) {
    problems.push(`${letters.length} dead letter(s) of ${JSON.stringify(id)}, which no winning order emits`);
  }
  return { problems, lost, duplicates, refusedBy };
}

/**
 * `text` as an SQS attribute value can carry it, each character SQS refuses ("#x9 | #xA | #xD |
 * #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF" are allowed) shown as `?`: the reason
 * attribute of a dead letter, whose envelope keeps the reason whole.
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html
 */
function sqsSafe(text: string): string {
  return text.replace(/[^\t\n\r\u{20}-\u{D7FF}\u{E000}-\u{FFFD}\u{10000}-\u{10FFFF}]/gu, '?');
}

/** What is wrong with one dead letter of the refused `event`; empty when it is right. */
function deadLetterProblems(
  letter: RelayDeadLetter,
  event: PlannedEvent,
  relayName: string,
  recordsOf: ReadonlyMap<string, DynamoDbStreamRecord>,
): string[] {
  const problems: string[] = [];
  const attribute = (name: string) => letter.input.MessageAttributes?.[name]?.StringValue;
  const reason = attribute(DEAD_LETTER_ATTRIBUTES.reason) ?? '';
  const wanted = REFUSAL_REASONS[event.refusal!];
  if (
    !reason.startsWith(`The destination refused event ${event.id} (\`${sqsSafe(event.type)}\`)`) ||
    !wanted.test(reason)
  ) {
    problems.push(`reason ${JSON.stringify(reason)}, expected the event's and one matching ${wanted}`);
  }
  if (attribute(DEAD_LETTER_ATTRIBUTES.code) !== 'VALIDATION') {
    problems.push(`code ${attribute(DEAD_LETTER_ATTRIBUTES.code)}, expected VALIDATION`);
  }
  if (attribute(DEAD_LETTER_ATTRIBUTES.consumer) !== relayName) {
    problems.push(`consumer ${attribute(DEAD_LETTER_ATTRIBUTES.consumer)}, expected ${relayName}`);
  }
  let envelope: StreamDeadLetterBody;
  try {
    envelope = JSON.parse(letter.input.MessageBody ?? '') as StreamDeadLetterBody;
  } catch {
    return [...problems, 'a body that is not JSON'];
  }
  if (
    envelope.format !== STREAM_DEAD_LETTER_FORMAT ||
    envelope.code !== 'VALIDATION' ||
    sqsSafe(envelope.reason) !== reason
  ) {
    problems.push(
      `an envelope of format ${envelope.format}, code ${envelope.code}, reason ${JSON.stringify(envelope.reason)}`,
    );
  }
  const record = recordsOf.get(envelope.source?.sequenceNumber);
  const recordOf = record === undefined ? undefined : outboxMessageOf(record.dynamodb.NewImage);
  if (recordOf?.id !== event.id || envelope.source.eventId !== record?.eventID) {
    problems.push(`coordinates ${JSON.stringify(envelope.source)} name no stream record of the event`);
    return problems;
  }
  if (
    !isDeepStrictEqual(envelope.source.keys, record!.dynamodb.Keys) ||
    envelope.source.eventName !== 'INSERT' ||
    envelope.source.eventSourceArn !== record!.eventSourceARN
  ) {
    problems.push(
      `keys ${JSON.stringify(envelope.source.keys)}, event name ${envelope.source.eventName}, stream ${envelope.source.eventSourceArn}`,
    );
  }
  // Where to read the record again, in the attributes too.
  const where = {
    [DEAD_LETTER_ATTRIBUTES.sourceMessageId]: record!.eventID,
    [STREAM_RECORD_ATTRIBUTES.eventSourceArn]: record!.eventSourceARN,
    [STREAM_RECORD_ATTRIBUTES.sequenceNumber]: record!.dynamodb.SequenceNumber,
  };
  for (const [name, value] of Object.entries(where)) {
    if (attribute(name) !== value) problems.push(`attribute ${name} ${attribute(name)}, expected ${value}`);
  }
  // The whole event, read back from the envelope: the record's `dynamodb` field byte for byte.
  const data = recoveredData(envelope)?.toString('utf8');
  if (data !== JSON.stringify(record!.dynamodb)) {
    problems.push(
      `data ${data === undefined ? 'truncated' : `of ${data.length} characters`}, not the record's`,
    );
    return problems;
  }
  const message = outboxMessageOf(JSON.parse(data).NewImage);
  const planned = {
    id: event.id,
    type: event.type,
    body: event.body,
    ...(event.entity === undefined ? {} : { entity: event.entity }),
  };
  if (!isDeepStrictEqual(message, planned))
    problems.push(`the event read back is ${JSON.stringify(message)}`);
  return problems;
}
