/**
 * Races: N consumers (each a handler with its own DynamoDB client, as separate Lambda
 * instances would be) receive the same messages at the same moment. For every key, batch by
 * batch, all N claim it together; DynamoDB must let exactly one win, and every loser must be
 * told `duplicate` (the winner committed) or `in-flight` (two-phase: the winner's claim is in
 * progress), never an error.
 *
 * Sizes: 1,000 keys for 2 and 8 consumers; fewer keys for 32 and 100 consumers (3,200 and
 * 2,000 claims) so the suite fits CI. `RELIABILITY_RACE_KEYS=<n>` runs every race over n keys.
 */
import { describe, expect, it } from 'vitest';
import { fromBody } from '../../lambda/core/dedup-key';
import type { LogEntry } from '../../lambda/core/logger';
import { atomic } from '../../lambda/modes/atomic';
import { twoPhase } from '../../lambda/modes/two-phase';
import type { SqsBatchResponse, SqsRecord } from '../../lambda/sqs/sqs-event';
import { createSqsHandler } from '../../lambda/sqs/sqs-handler';
import { uniqueName } from '../support/aws';
import { sqsRecord } from '../support/fixtures';
import { countEffect, createLocalClient, readItems, useFileTables } from './support/tables';

const RACE_KEYS = process.env.RELIABILITY_RACE_KEYS ? Number(process.env.RELIABILITY_RACE_KEYS) : undefined;
const files = useFileTables('eo-race');
const { inboxTable, businessTable, clients } = files;

/** Every waiter is released once `parties` of them wait; then the next round begins. */
function createBarrier(parties: number): () => Promise<void> {
  let waiting: (() => void)[] = [];
  return () =>
    new Promise<void>((resolve) => {
      waiting.push(resolve);
      if (waiting.length === parties) {
        const released = waiting;
        waiting = [];
        for (const release of released) release();
      }
    });
}

function recordOf(messageId: string, key: string): SqsRecord {
  return sqsRecord(messageId, { id: key, amount: key.length });
}

interface RaceResult {
  /** Outcomes per key, over every consumer. */
  readonly outcomes: Map<string, string[]>;
  /** Codes and reasons of anything other than processed, duplicate or in-flight. */
  readonly errors: string[];
  readonly responses: SqsBatchResponse[];
  /** Two-phase: executions of the effect per scoped key. */
  readonly executions: Map<string, number>;
  readonly consumer: string;
}

async function race(mode: 'atomic' | 'two-phase', consumers: number, keyCount: number): Promise<RaceResult> {
  const consumer = uniqueName(`race-${mode}-${consumers}`).replace(/[^A-Za-z0-9._:-]/g, '-');
  const keys = Array.from({ length: keyCount }, (_, i) => `order-${i}`);
  const outcomes = new Map<string, string[]>();
  const errors: string[] = [];
  const responses: SqsBatchResponse[] = [];
  const executions = new Map<string, number>();
  const keyOf = new Map<string, string>();

  const logger = {
    log(entry: LogEntry) {
      if (typeof entry.outcome !== 'string' || typeof entry.messageId !== 'string') {
        if (entry.level === 'error' || entry.level === 'warn') errors.push(JSON.stringify(entry));
        return;
      }
      const key = keyOf.get(entry.messageId)!;
      outcomes.set(key, [...(outcomes.get(key) ?? []), entry.outcome]);
      if (!['processed', 'duplicate', 'in-flight'].includes(entry.outcome)) {
        errors.push(`${key}: ${entry.outcome} ${String(entry.code)} ${String(entry.reason)}`);
      }
    },
  };
  type Body = { id: string; amount: number };
  const handlers = Array.from({ length: consumers }, () => {
    const client = createLocalClient({ maxAttempts: 3 });
    clients.push(client);
    const common = {
      consumer,
      client: client.document,
      tableName: inboxTable,
      dedupKey: fromBody<Body>((body) => body.id),
      logger,
      logLevel: 'debug' as const,
      metrics: false as const,
    };
    return mode === 'atomic'
      ? createSqsHandler<Body>({
          ...common,
          mode: atomic((message, unitOfWork) => {
            countEffect(unitOfWork, businessTable, message.scopedKey);
          }),
        })
      : createSqsHandler<Body>({
          ...common,
          mode: twoPhase({
            handle: async (_message, effects) => {
              await effects.run(async ({ scopedKey }) => {
                executions.set(scopedKey, (executions.get(scopedKey) ?? 0) + 1);
                // The external call takes a moment, so the losers meet the claim in progress.
                await new Promise((resolve) => setTimeout(resolve, 5));
              });
            },
            leaseMillis: 60_000,
          }),
        });
  });

  const batches: string[][] = [];
  for (let start = 0; start < keys.length; start += 10) batches.push(keys.slice(start, start + 10));
  const barrier = createBarrier(consumers);
  await Promise.all(
    handlers.map(async (handler, c) => {
      for (const batch of batches) {
        const records = batch.map((key) => {
          const messageId = `c${c}-${key}`;
          keyOf.set(messageId, key);
          return recordOf(messageId, key);
        });
        // Every consumer sends its claims for these keys at the same moment.
        await barrier();
        responses.push(await handler({ Records: records }));
      }
    }),
  );
  return { outcomes, errors, responses, executions, consumer };
}

function expectOneWinnerPerKey(result: RaceResult, consumers: number, keyCount: number): void {
  expect(result.errors).toEqual([]);
  expect(result.outcomes.size).toBe(keyCount);
  const misfits = [...result.outcomes].filter(
    ([, list]) =>
      list.length !== consumers ||
      list.filter((outcome) => outcome === 'processed').length !== 1 ||
      list.some((outcome) => outcome !== 'processed' && outcome !== 'duplicate' && outcome !== 'in-flight'),
  );
  expect(misfits.slice(0, 5)).toEqual([]);
}

const atomicRaces = [
  { consumers: 2, keys: RACE_KEYS ?? 1000 },
  { consumers: 8, keys: RACE_KEYS ?? 1000 },
  { consumers: 32, keys: RACE_KEYS ?? 100 },
  { consumers: 100, keys: RACE_KEYS ?? 20 },
];

describe('races between concurrent consumers on the local emulator', () => {
  it.each(atomicRaces)(
    'lets exactly one of $consumers consumers commit each of $keys keys; every other consumer acknowledges a duplicate',
    async ({ consumers, keys }) => {
      const result = await race('atomic', consumers, keys);

      expectOneWinnerPerKey(result, consumers, keys);
      const tally = [...result.outcomes.values()].flat();
      expect(tally.filter((outcome) => outcome === 'duplicate')).toHaveLength((consumers - 1) * keys);
      expect(result.responses.flatMap((response) => response.batchItemFailures)).toEqual([]);
      const items = await readItems(
        files.admin.document,
        businessTable,
        [...result.outcomes.keys()].map((key) => `${result.consumer}#${key}`),
      );
      const effects = [...items.values()].map((item) => Number(item.effects));
      expect(effects).toHaveLength(keys);
      expect(effects.every((count) => count === 1)).toBe(true);
    },
  );

  it('lets exactly one of 8 two-phase consumers run each effect; the others see it in flight or completed, and retry the in-flight ones', async () => {
    const consumers = 8;
    const keys = RACE_KEYS ?? 250;
    const result = await race('two-phase', consumers, keys);

    expectOneWinnerPerKey(result, consumers, keys);
    const tally = [...result.outcomes.values()].flat();
    expect(tally.filter((outcome) => outcome === 'in-flight').length).toBeGreaterThan(0);
    // Only in-flight losers are retried: each one is a batch item failure, nothing else is.
    const failures = result.responses.flatMap((response) => response.batchItemFailures);
    expect(failures).toHaveLength(tally.filter((outcome) => outcome === 'in-flight').length);
    expect([...result.executions.values()]).toHaveLength(keys);
    expect([...result.executions.values()].every((count) => count === 1)).toBe(true);
  });
});
