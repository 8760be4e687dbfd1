import { describe, expect, it } from 'vitest';
import { scopeKey } from '../../../../lambda/core/dedup-key';
import { outboxEventId } from '../../../../lambda/outbox';
import {
  type ChainExpectation,
  type ChainObservation,
  type ChainRun,
  checkChain,
  checkChainUnchanged,
  confirmedOrders,
  expectedPublishes,
  missingFromChain,
  summariseRelayLog,
} from '../../../../scripts/main-job/chain';
import { outcomeTotals } from '../../../support/fixtures';
import { sampleLogs } from './story';

const idOf = (orderId: string) =>
  outboxEventId(scopeKey('order-projector', `${orderId}:PAID`), 'OrderConfirmed#0');

const expected: ChainExpectation = {
  confirmed: [
    { orderId: 'o-1001', line: 3, eventId: idOf('o-1001') },
    { orderId: 'o-1002', line: 8, eventId: idOf('o-1002') },
  ],
  crash: true,
};

/** The chain as a correct run leaves it: o-1001's event crashed after and published twice. */
function storyChain(): ChainObservation {
  const [first, second] = expected.confirmed;
  return {
    outbox: [first!, second!]
      .map((order) => ({ id: order.eventId, type: 'OrderConfirmed', entity: order.orderId }))
      .sort((a, b) => (a.id < b.id ? -1 : 1)),
    streamRecords: 2,
    relay: {
      published: [first!.eventId, first!.eventId, second!.eventId],
      crashes: [first!.eventId],
      failures: 0,
    },
    crashMarkers: [first!.eventId],
    shipping: outcomeTotals({ processed: 2, duplicate: 1, invocations: 3 }),
    shipments: [first!, second!].map((order) => ({
      pk: `SHIPMENT#${order.orderId}`,
      orderId: order.orderId,
      eventId: order.eventId,
    })),
    deadLetters: { shipping: 0, outbox: 0 },
  };
}

const runOf = (observation: ChainObservation): ChainRun => ({
  observation,
  missing: missingFromChain(expected, observation),
  waitMillis: 4_000,
  timeoutMillis: 90_000,
});

const failed = (checks: { ok: boolean; name: string }[]) => checks.filter((c) => !c.ok).map((c) => c.name);

describe('the chain of the main job', () => {
  it('derives the confirmed orders from the order log: each first PAID event, with the id the outbox derives', () => {
    expect(confirmedOrders(sampleLogs().orders, 'order-projector')).toEqual(expected.confirmed);
    expect(expectedPublishes(expected)).toBe(3);
    expect(expectedPublishes({ ...expected, crash: false })).toBe(2);
  });

  it('reads publishes and the crash from the relay’s log lines, whatever precedes the JSON', () => {
    expect(
      summariseRelayLog([
        'START RequestId: 1',
        '2026-03-02T09:00:00Z\tinfo\t{"level":"info","message":"Outbox relay: published","eventId":"a"}',
        '{"level":"warn","message":"Outbox relay: publish failed","eventId":"a","code":"INJECTED_CRASH"}',
        '{"level":"warn","message":"Outbox relay: publish failed","eventId":"b","errorName":"TimeoutError"}',
        '{"level":"info","message":"Outbox relay: published","eventId":"a"}',
        '{"_aws":{},"Processed":1}',
        'not json {',
      ]),
    ).toEqual({ published: ['a', 'a'], crashes: ['a'], failures: 1 });
  });

  it('passes every check on the chain the story leaves', () => {
    const checks = checkChain(expected, runOf(storyChain()));
    expect(checks).toHaveLength(7);
    expect(failed(checks)).toEqual([]);
  });

  it('names what did not arrive when the wait runs out', () => {
    const chain = storyChain();
    const partial = {
      ...chain,
      relay: { ...chain.relay, published: chain.relay.published.slice(0, 2) },
      shipping: outcomeTotals({ processed: 1, duplicate: 1 }),
      shipments: chain.shipments.slice(0, 1),
    };
    expect(missingFromChain(expected, partial)).toEqual([
      'relay publishes: 2 of 3',
      'shipment scheduler deliveries: 2 of 3',
      'Shipments items: 1 of 2',
    ]);
    expect(failed(checkChain(expected, runOf(partial)))).toContain(
      'the chain arrived within 90 s (outbox, relay, shipment scheduler, Shipments)',
    );
  });

  it('fails when the re-publish after the crash was processed again instead of acknowledged as a duplicate', () => {
    const chain = { ...storyChain(), shipping: outcomeTotals({ processed: 3 }) };
    expect(failed(checkChain(expected, runOf(chain)))).toEqual([
      'shipment scheduler: 2 processed, the re-publish after the crash acknowledged as 1 duplicate, nothing failed',
    ]);
  });

  it('fails when the relay never crashed, or crashed twice', () => {
    const chain = storyChain();
    const calm = { ...chain, relay: { ...chain.relay, crashes: [] }, crashMarkers: [] };
    expect(failed(checkChain(expected, runOf(calm)))).toEqual(
      expect.arrayContaining([
        'the chain arrived within 90 s (outbox, relay, shipment scheduler, Shipments)',
        'the relay crashed exactly once, after a publish and before its checkpoint, and recorded it once',
      ]),
    );
    const twice = {
      ...chain,
      relay: { ...chain.relay, crashes: [...chain.relay.crashes, chain.relay.crashes[0]!] },
    };
    expect(failed(checkChain(expected, runOf(twice)))).toEqual([
      'the relay crashed exactly once, after a publish and before its checkpoint, and recorded it once',
    ]);
  });

  it('fails when an outbox item has another id than the derived one (a second identity)', () => {
    const chain = storyChain();
    const minted = {
      ...chain,
      outbox: [...chain.outbox, { id: 'f'.repeat(64), type: 'OrderConfirmed', entity: 'o-1001' }],
    };
    expect(failed(checkChain(expected, runOf(minted)))).toEqual([
      "outbox table: one OrderConfirmed item per confirmed order (o-1001, o-1002), with the id derived from the PAID event's scoped dedup key",
    ]);
  });

  it('sees a replay that emitted, published or shipped again', () => {
    const before = storyChain();
    expect(failed(checkChainUnchanged('after', before, storyChain()))).toEqual([]);
    const after = {
      ...before,
      streamRecords: 3,
      relay: { ...before.relay, published: [...before.relay.published, 'x'] },
      shipping: outcomeTotals({ processed: 2, duplicate: 2 }),
      shipments: [...before.shipments, { pk: 'SHIPMENT#o-9', orderId: 'o-9', eventId: 'x' }],
    };
    expect(failed(checkChainUnchanged('after', before, after))).toEqual([
      'after: outbox table and its stream unchanged (no event emitted again)',
      'after: no publish by the relay and no delivery to the shipment scheduler',
      'after: Shipments table unchanged',
    ]);
  });
});
