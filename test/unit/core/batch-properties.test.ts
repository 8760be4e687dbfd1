import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fromBody } from '../../../lambda/core/dedup-key';
import { PermanentError } from '../../../lambda/core/errors';
import { fingerprintOf } from '../../../lambda/core/fingerprint';
import type { Message } from '../../../lambda/core/message';
import { marker } from '../../../lambda/modes/marker';
import type { SqsRecord } from '../../../lambda/sqs/sqs-event';
import { createSqsBatchHandler } from '../../../lambda/sqs/sqs-handler';
import { captureMetrics, check, sqsEvent, sqsRecord, T0 } from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';

type Behaviour = 'ok' | 'throw' | 'permanent' | 'malformed' | 'missing-key';

interface Spec {
  readonly key: string;
  readonly variant: number;
  readonly behaviour: Behaviour;
  readonly group: string;
}

interface Body {
  readonly id?: string;
  readonly variant: number;
  readonly behaviour: Behaviour;
}

const spec: fc.Arbitrary<Spec> = fc.record({
  key: fc.constantFrom('k1', 'k2', 'k3', 'k4'),
  variant: fc.constantFrom(0, 0, 0, 1),
  behaviour: fc.constantFrom<Behaviour>(
    'ok',
    'ok',
    'ok',
    'ok',
    'throw',
    'permanent',
    'malformed',
    'missing-key',
  ),
  group: fc.constantFrom('g1', 'g2', 'g3'),
});

const scenario = fc.record({
  specs: fc.array(spec, { maxLength: 20 }),
  fifo: fc.boolean(),
  concurrency: fc.integer({ min: 1, max: 6 }),
  deadLetter: fc.constantFrom('redrive' as const, 'direct' as const),
  seeded: fc.boolean(),
});

type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;

function toRecords({ specs, fifo }: Scenario): SqsRecord[] {
  return specs.map((item, index) => {
    const body: Body = {
      ...(item.behaviour === 'missing-key' ? {} : { id: item.key }),
      variant: item.variant,
      behaviour: item.behaviour,
    };
    return sqsRecord(`m-${index}`, body, {
      ...(fifo ? { groupId: item.group } : {}),
      ...(item.behaviour === 'malformed' ? { rawBody: `{"id":"${item.key}",` } : {}),
    });
  });
}

async function run(input: Scenario, concurrency = input.concurrency) {
  const store = createMemoryStore();
  if (input.seeded) {
    // k4 was completed by an earlier delivery of variant 0.
    store.seed('inbox', {
      pk: 'orders#k4',
      status: 'COMPLETED',
      fingerprint: fingerprintOf({ id: 'k4', variant: 0 }),
      expiresAt: Math.floor(T0 / 1000) + 60,
      consumer: 'orders',
    });
  }
  const metrics = captureMetrics();
  const started: string[] = [];
  const succeeded: Message<Body>[] = [];
  const deadLettered: string[] = [];
  const processBatch = createSqsBatchHandler<Body>({
    consumer: 'orders',
    dedupKey: fromBody('id'),
    fingerprint: (message) => ({ id: message.body.id, variant: message.body.variant }),
    mode: marker(async (message) => {
      started.push(message.messageId);
      await Promise.resolve();
      if (message.body.behaviour === 'throw') throw new Error('transient');
      if (message.body.behaviour === 'permanent') throw new PermanentError('rejected');
      succeeded.push(message);
    }),
    store,
    clock: () => T0,
    concurrency,
    deadLetter: input.deadLetter,
    deadLetterSender: {
      send: async (message) => {
        deadLettered.push(message.sourceMessageId);
      },
    },
    logLevel: 'silent',
    metrics,
  });
  const records = toRecords(input);
  const response = await processBatch(sqsEvent(...records));
  return { records, response, started, succeeded, deadLettered, metrics, store };
}

describe('batch response properties', () => {
  it('reports only message ids from the batch, each at most once, and counts every message once', () =>
    check(
      fc.asyncProperty(scenario, async (input) => {
        const { records, response, metrics } = await run(input);
        const batchIds = new Set(records.map((record) => record.messageId));
        const failed = response.batchItemFailures.map((failure) => failure.itemIdentifier);

        expect(failed.every((id) => batchIds.has(id))).toBe(true);
        expect(new Set(failed).size).toBe(failed.length);
        const total = Object.values(metrics.published[0]!.counts).reduce((sum, count) => sum + count, 0);
        expect(total).toBe(records.length);
      }),
    ));

  it('runs the effect of a scoped key at most once per batch, and never for a key completed before', () =>
    check(
      fc.asyncProperty(scenario, async (input) => {
        const { succeeded, store } = await run(input);
        const keys = succeeded.map((message) => message.scopedKey);

        expect(new Set(keys).size).toBe(keys.length);
        if (input.seeded) expect(keys).not.toContain('orders#k4');
        for (const key of keys)
          expect(store.read('inbox', key)).toMatchObject({ pk: key, status: 'COMPLETED' });
      }),
    ));

  it('fails every later record of a FIFO group once one fails, without running them', () =>
    check(
      fc.asyncProperty(
        scenario.filter((input) => input.fifo),
        async (input) => {
          const { records, response, started } = await run(input);
          const failed = new Set(response.batchItemFailures.map((failure) => failure.itemIdentifier));
          const blocked = new Set<string>();
          for (const record of records) {
            const group = record.attributes.MessageGroupId!;
            if (blocked.has(group)) {
              expect(failed.has(record.messageId)).toBe(true);
              expect(started).not.toContain(record.messageId);
            } else if (failed.has(record.messageId)) {
              blocked.add(group);
            }
          }
        },
      ),
    ));

  it('acknowledges a record only when it was processed, was a duplicate of a completed key, or was dead-lettered directly', () =>
    check(
      fc.asyncProperty(scenario, async (input) => {
        const { records, response, succeeded, deadLettered } = await run(input);
        const failed = new Set(response.batchItemFailures.map((failure) => failure.itemIdentifier));
        const completed = new Map(succeeded.map((message) => [message.scopedKey, message.body.variant]));
        if (input.seeded) completed.set('orders#k4', 0);

        records.forEach((record, index) => {
          if (failed.has(record.messageId)) return;
          const item = input.specs[index]!;
          const ran = succeeded.some((message) => message.messageId === record.messageId);
          const duplicate =
            item.behaviour !== 'malformed' && completed.get(`orders#${item.key}`) === item.variant;
          const sent = deadLettered.includes(record.messageId);
          expect(ran || duplicate || sent).toBe(true);
          if (input.deadLetter === 'redrive') expect(sent).toBe(false);
        });
      }),
    ));

  it('gives the same batch response whatever the concurrency', () =>
    check(
      fc.asyncProperty(scenario, async (input) => {
        const sequential = await run(input, 1);
        const concurrent = await run(input, 6);

        expect(concurrent.response).toEqual(sequential.response);
        expect(concurrent.metrics.published).toEqual(sequential.metrics.published);
      }),
    ));
});
