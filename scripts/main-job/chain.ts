/**
 * The example's chain of two services: the order projector emits `OrderConfirmed` through the
 * outbox when an order becomes `PAID`, the relay publishes each new outbox item to the shipment
 * scheduler's queue (crashing once after a publish, before its checkpoint), and the shipment
 * scheduler writes one Shipments item per confirmed order. What the chain must hold, derived
 * from the order log alone; reading what it holds (tables, the relay's log lines, the shipment
 * scheduler's outcome metrics); waiting for it with a bounded poll; and the checks.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { scanTable } from '../../cli/replay/aws';
import { OUTBOX_ATTRIBUTES } from '../../lambda/core/contract';
import { scopeKey, toDedupKey } from '../../lambda/core/dedup-key';
import { outboxEventId } from '../../lambda/outbox/outbox-item';
import { readTableStream } from '../support/stream-reader';
import { type Check, check } from './checks';
import { flushLogLines, functionLogGroup, readLogMessages } from './functions';
import {
  deliveriesOf,
  FLUSH_AFTER_MILLIS,
  type OutcomeTotals,
  readDeadLetters,
  readOutcomeTotals,
} from './observations';
import type { SampleLog } from './sample-logs';
import type { ExampleHarness } from './scenario';

/** The status whose first event confirms an order (`CONFIRMED_STATUS` of `order-projector.ts`). */
export const CONFIRMED_STATUS = 'PAID';
/** The type of the event the order projector emits for it. */
export const ORDER_CONFIRMED = 'OrderConfirmed';

/** One order the order log confirms, and the id its `OrderConfirmed` event must have. */
export interface ConfirmedOrder {
  readonly orderId: string;
  /** The log line of its first `PAID` event. */
  readonly line: number;
  /** `outboxEventId(<scoped dedup key of the PAID event>, 'OrderConfirmed#0')`. */
  readonly eventId: string;
}

/**
 * The orders the order log confirms: each first (processed) `PAID` event, in log order, with its
 * event id derived as the outbox derives it, from the order projector's scoped dedup key
 * (`<consumer>#<orderId>:PAID`) and the event's name within the effect (`OrderConfirmed#0`).
 * Resends and poison lines confirm nothing.
 */
export function confirmedOrders(log: SampleLog, orderProjectorConsumer: string): ConfirmedOrder[] {
  return log.roles.flatMap((role, index) => {
    if (role.kind !== 'first') return [];
    const body = JSON.parse(log.entries[index]!.body) as { orderId: string; status: string };
    if (body.status !== CONFIRMED_STATUS) return [];
    const scoped = scopeKey(orderProjectorConsumer, toDedupKey([body.orderId, body.status]));
    return [
      { orderId: body.orderId, line: index + 1, eventId: outboxEventId(scoped, `${ORDER_CONFIRMED}#0`) },
    ];
  });
}

/** An outbox item as the checks need it. */
export interface OutboxItem {
  readonly id: string;
  readonly type: unknown;
  readonly entity: unknown;
}

/** A Shipments item as the checks need it. */
export interface ShipmentItem {
  readonly pk: string;
  readonly orderId: unknown;
  readonly eventId: unknown;
}

/** What the relay's log lines say. */
export interface RelayLog {
  /** Event ids of the publishes the destination accepted, in log order (one per publish). */
  readonly published: readonly string[];
  /** Event ids the relay crashed after (`InjectedCrash`, code `INJECTED_CRASH`). */
  readonly crashes: readonly string[];
  /** Failed publishes other than the crash. */
  readonly failures: number;
}

/** The relay's log lines (JSON, possibly after a prefix), summarised. Other lines are skipped. Pure. */
export function summariseRelayLog(messages: readonly string[]): RelayLog {
  const published: string[] = [];
  const crashes: string[] = [];
  let failures = 0;
  for (const message of messages) {
    const start = message.indexOf('{');
    if (start < 0) continue;
    let line: { message?: unknown; eventId?: unknown; code?: unknown };
    try {
      line = JSON.parse(message.slice(start));
    } catch {
      continue;
    }
    if (typeof line.eventId !== 'string') continue;
    if (line.message === 'Outbox relay: published') published.push(line.eventId);
    else if (line.message === 'Outbox relay: publish failed') {
      if (line.code === 'INJECTED_CRASH') crashes.push(line.eventId);
      else failures += 1;
    }
  }
  return { published, crashes, failures };
}

/** The chain as read at one moment. */
export interface ChainObservation {
  /** Outbox items, by id. */
  readonly outbox: readonly OutboxItem[];
  /** Records in the outbox table's stream. */
  readonly streamRecords: number;
  readonly relay: RelayLog;
  /** Event ids recorded in the RelayCrashes table (the marker of the one crash). */
  readonly crashMarkers: readonly string[];
  /** The shipment scheduler's outcome counts, every delivery since it was deployed. */
  readonly shipping: OutcomeTotals;
  /** Shipments items, by key. */
  readonly shipments: readonly ShipmentItem[];
  /** Messages in the shipment scheduler's and the outbox's dead-letter queues. */
  readonly deadLetters: { readonly shipping: number; readonly outbox: number };
}

const byKey =
  <T>(key: (item: T) => string) =>
  (a: T, b: T) =>
    key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0;

/** Reads the chain: both tables, the outbox stream, the relay's and the shipment scheduler's logs, the dead-letter queues. */
export async function observeChain(harness: ExampleHarness): Promise<ChainObservation> {
  const { outputs } = harness;
  const [outbox, shipments, crashes, records, relayMessages, shipping] = await Promise.all([
    scanTable(harness.dynamodb, outputs.outboxTableName),
    scanTable(harness.dynamodb, outputs.shipmentsTableName),
    outputs.relayCrashTableName ? scanTable(harness.dynamodb, outputs.relayCrashTableName) : [],
    readTableStream(harness.streams, outputs.outboxTableStreamArn),
    functionLogGroup(harness.lambda, outputs.orderEventsRelayFunctionName).then((group) =>
      readLogMessages(harness.logs, group),
    ),
    readOutcomeTotals(harness, outputs.shipmentSchedulerFunctionName),
  ]);
  const [shippingLetters, outboxLetters] = await Promise.all([
    readDeadLetters(harness.sqs, outputs.shipmentEventsDeadLetterQueueUrl),
    readDeadLetters(harness.sqs, outputs.outboxDeadLetterQueueUrl),
  ]);
  return {
    outbox: outbox
      .map((raw) => unmarshall(raw))
      .map((item) => ({
        id: String(item[OUTBOX_ATTRIBUTES.pk]),
        type: item[OUTBOX_ATTRIBUTES.type],
        entity: item[OUTBOX_ATTRIBUTES.entity],
      }))
      .sort(byKey((item) => item.id)),
    streamRecords: records.length,
    relay: summariseRelayLog(relayMessages),
    crashMarkers: crashes.map((raw) => String(unmarshall(raw).eventId)),
    shipping,
    shipments: shipments
      .map((raw) => unmarshall(raw))
      .map((item) => ({ pk: String(item.pk), orderId: item.orderId, eventId: item.eventId }))
      .sort(byKey((item) => item.pk)),
    deadLetters: { shipping: shippingLetters.length, outbox: outboxLetters.length },
  };
}

/** What the chain must hold once it is done: the confirmed orders, and whether the relay crashes once. */
export interface ChainExpectation {
  readonly confirmed: readonly ConfirmedOrder[];
  /** Whether the stack crashes the relay once (it has a RelayCrashes table). */
  readonly crash: boolean;
}

/** The publishes the chain makes: one per event, and the crashed one again. */
export function expectedPublishes(expected: ChainExpectation): number {
  return expected.confirmed.length + (expected.crash ? 1 : 0);
}

/** What has not arrived yet, in plain words; empty once the chain is done. Pure. */
export function missingFromChain(expected: ChainExpectation, observation: ChainObservation): string[] {
  const count = expected.confirmed.length;
  const publishes = expectedPublishes(expected);
  const missing: string[] = [];
  if (observation.outbox.length < count)
    missing.push(`outbox items: ${observation.outbox.length} of ${count}`);
  if (expected.crash && observation.relay.crashes.length < 1) missing.push('the relay crash: not yet');
  if (observation.relay.published.length < publishes) {
    missing.push(`relay publishes: ${observation.relay.published.length} of ${publishes}`);
  }
  if (deliveriesOf(observation.shipping) < publishes) {
    missing.push(`shipment scheduler deliveries: ${deliveriesOf(observation.shipping)} of ${publishes}`);
  }
  if (observation.shipments.length < count) {
    missing.push(`Shipments items: ${observation.shipments.length} of ${count}`);
  }
  return missing;
}

/** The chain once it is done, or when the wait ran out: what was read last and what is missing. */
export interface ChainRun {
  readonly observation: ChainObservation;
  /** What had not arrived when the wait ran out; empty when the chain completed. */
  readonly missing: readonly string[];
  readonly waitMillis: number;
  readonly timeoutMillis: number;
}

/**
 * Polls the chain (every half second, at most `timeoutMillis`) until everything it must hold has
 * arrived and two reads in a row agree (log lines can lag), and returns the last read with what
 * is still missing (empty when it completed).
 */
export async function awaitChain(
  harness: ExampleHarness,
  expected: ChainExpectation,
  timeoutMillis = 90_000,
): Promise<ChainRun> {
  const started = Date.now();
  let previous: string | undefined;
  let flushedAt = started;
  for (;;) {
    const observation = await observeChain(harness);
    const missing = missingFromChain(expected, observation);
    const current = JSON.stringify(observation);
    const waitMillis = Date.now() - started;
    if ((missing.length === 0 && current === previous) || waitMillis > timeoutMillis) {
      return { observation, missing, waitMillis, timeoutMillis };
    }
    previous = current;
    // Still short a while on: the relay's or the scheduler's last lines may wait in their
    // workers (see flushLogLines).
    if (missing.length > 0 && Date.now() - flushedAt >= FLUSH_AFTER_MILLIS) {
      flushedAt = Date.now();
      await Promise.all(
        [harness.outputs.orderEventsRelayFunctionName, harness.outputs.shipmentSchedulerFunctionName].map(
          (name) => flushLogLines(harness.lambda, name),
        ),
      );
    }
    await sleep(500);
  }
}

/** Counts of each event id in `ids`, keys sorted. */
function countsOf(ids: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const id of [...ids].sort()) counts[id] = (counts[id] ?? 0) + 1;
  return counts;
}

/** The checks of the chain after the sample logs. Pure. */
export function checkChain(expected: ChainExpectation, run: ChainRun): Check[] {
  const { observation } = run;
  const { confirmed } = expected;
  const crashed = observation.relay.crashes[0];
  const expectedPublishCounts = countsOf([
    ...confirmed.map((order) => order.eventId),
    ...(expected.crash && crashed !== undefined ? [crashed] : []),
  ]);
  const orders = confirmed.map((order) => order.orderId).join(', ');
  const checks = [
    check(
      `the chain arrived within ${run.timeoutMillis / 1000} s (outbox, relay, shipment scheduler, Shipments)`,
      [],
      run.missing,
    ),
    check(
      `outbox table: one OrderConfirmed item per confirmed order (${orders}), with the id derived from the PAID event's scoped dedup key`,
      [...confirmed]
        .map((order) => ({ id: order.eventId, type: ORDER_CONFIRMED, entity: order.orderId }))
        .sort(byKey((item) => item.id)),
      observation.outbox,
    ),
    check(
      `Shipments table: one item per confirmed order, each scheduled by its OrderConfirmed event`,
      [...confirmed]
        .map((order) => ({ pk: `SHIPMENT#${order.orderId}`, orderId: order.orderId, eventId: order.eventId }))
        .sort(byKey((item) => item.pk)),
      observation.shipments,
    ),
  ];
  if (expected.crash) {
    checks.push(
      check(
        'the relay crashed exactly once, after a publish and before its checkpoint, and recorded it once',
        { crashes: 1, markers: 1, sameEvent: true },
        {
          crashes: observation.relay.crashes.length,
          markers: observation.crashMarkers.length,
          sameEvent: crashed !== undefined && observation.crashMarkers[0] === crashed,
        },
      ),
    );
  }
  checks.push(
    check(
      `relay: published each event once${expected.crash ? ', and the one it crashed after once more, with the same id' : ''}; no other failed publish`,
      { published: expectedPublishCounts, failures: 0 },
      { published: countsOf(observation.relay.published), failures: observation.relay.failures },
    ),
    check(
      `shipment scheduler: ${confirmed.length} processed${expected.crash ? ', the re-publish after the crash acknowledged as 1 duplicate' : ''}, nothing failed`,
      {
        processed: confirmed.length,
        duplicate: expected.crash ? 1 : 0,
        permanent: 0,
        retry: 0,
        inFlight: 0,
        mismatch: 0,
      },
      {
        processed: observation.shipping.processed,
        duplicate: observation.shipping.duplicate,
        permanent: observation.shipping.permanent,
        retry: observation.shipping.retry,
        inFlight: observation.shipping.inFlight,
        mismatch: observation.shipping.mismatch,
      },
    ),
    check(
      'nothing in the shipment scheduler’s or the outbox’s dead-letter queue',
      { shipping: 0, outbox: 0 },
      observation.deadLetters,
    ),
  );
  return checks;
}

/**
 * The checks that a step changed nothing in the chain: the same outbox items and outbox stream
 * records (so nothing new to publish), no publish, no delivery to the shipment scheduler, the
 * same Shipments items. Pure.
 */
export function checkChainUnchanged(
  step: string,
  before: ChainObservation,
  after: ChainObservation,
): Check[] {
  return [
    check(
      `${step}: outbox table and its stream unchanged (no event emitted again)`,
      { items: before.outbox, streamRecords: before.streamRecords },
      { items: after.outbox, streamRecords: after.streamRecords },
    ),
    check(
      `${step}: no publish by the relay and no delivery to the shipment scheduler`,
      { published: before.relay.published.length, deliveries: deliveriesOf(before.shipping) },
      { published: after.relay.published.length, deliveries: deliveriesOf(after.shipping) },
    ),
    check(`${step}: Shipments table unchanged`, before.shipments, after.shipments),
  ];
}
