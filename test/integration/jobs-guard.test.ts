/**
 * The job guard over the DynamoDB store on the local endpoint: two overlapping runs of one
 * scheduled slot (two guards, as two Lambda containers would have) produce one effect, and a
 * crashed run is taken over after its lease and resumed from its checkpoint (injected clock).
 */
import { CreateTableCommand, DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobGuard, type JobGuard, type JobRun, scheduledEventSlot } from '../../lambda/jobs';
import { awsConfig, uniqueName } from '../support/aws';

const aws = awsConfig();
const raw = new DynamoDBClient(aws);
const client = DynamoDBDocumentClient.from(raw, { marshallOptions: { removeUndefinedValues: true } });
const inboxTable = uniqueName('eo-jobs-inbox');
const effectsTable = uniqueName('eo-jobs-effects');
const runId = uniqueName('run');

beforeAll(async () => {
  for (const TableName of [inboxTable, effectsTable]) {
    await raw.send(
      new CreateTableCommand({
        TableName,
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
  }
});

afterAll(async () => {
  // Matters when AWS_ENDPOINT_URL points at a long-lived emulator.
  await Promise.allSettled(
    [inboxTable, effectsTable].map((TableName) => raw.send(new DeleteTableCommand({ TableName }))),
  );
  raw.destroy();
});

/** The effect: one counter increment per call (not idempotent on its own). */
async function increment(pk: string): Promise<void> {
  await client.send(
    new UpdateCommand({
      TableName: effectsTable,
      Key: { pk },
      UpdateExpression: 'ADD #count :one',
      ExpressionAttributeNames: { '#count': 'count' },
      ExpressionAttributeValues: { ':one': 1 },
    }),
  );
}

async function count(pk: string): Promise<number> {
  const { Item } = await client.send(
    new GetCommand({ TableName: effectsTable, Key: { pk }, ConsistentRead: true }),
  );
  return (Item?.count as number | undefined) ?? 0;
}

function manualClock() {
  let now = Date.now();
  const clock = () => now;
  clock.advance = (millis: number) => {
    now += millis;
  };
  return clock;
}

const guardOn = (clock: () => number, leaseMillis = 60_000): JobGuard =>
  createJobGuard({
    consumer: 'reports',
    client,
    tableName: inboxTable,
    clock,
    leaseMillis,
    logLevel: 'silent',
  });

describe('createJobGuard with DynamoDB', () => {
  it('lets two overlapping runs of one scheduled slot produce one effect', async () => {
    const clock = manualClock();
    const [containerA, containerB] = [guardOn(clock), guardOn(clock)];
    const event = { time: '2026-01-01T02:00:04Z' };
    const job = `nightly-${runId}`;
    let enter!: () => void;
    const entered = new Promise<void>((resolve) => {
      enter = resolve;
    });
    let finish!: () => void;
    const finishing = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const work = async () => {
      enter();
      await finishing;
      await increment(job);
      return 'report';
    };

    const first = containerA.run({ job, slot: scheduledEventSlot(event, 86_400) }, work);
    await entered;
    // The same tick delivered again, to another container, while the first run works.
    const overlapping = await containerB.run(
      { job, slot: scheduledEventSlot({ time: '2026-01-01T02:00:09Z' }, 86_400) },
      work,
    );
    finish();
    const results = [await first, overlapping];
    const later = await containerB.run({ job, slot: scheduledEventSlot(event, 86_400) }, work);

    expect(results).toEqual([
      { ran: true, result: 'report', takeover: false },
      { ran: false, reason: 'in-progress', leaseExpiresAt: clock() + 60_000 },
    ]);
    expect(later).toEqual({ ran: false, reason: 'completed' });
    expect(await count(job)).toBe(1);
  });

  it('races two runs started together: exactly one runs', async () => {
    const clock = manualClock();
    const job = `race-${runId}`;
    const results = await Promise.all(
      [guardOn(clock), guardOn(clock)].map((guard) =>
        guard.run({ job, slot: '2026-01-01' }, async () => {
          await increment(job);
        }),
      ),
    );

    expect(results.filter((result) => result.ran)).toHaveLength(1);
    expect(await count(job)).toBe(1);
  });

  it('resumes a crashed run from its checkpoint after its lease ends', async () => {
    const clock = manualClock();
    const job = `export-${runId}`;
    const pages = (page: number) => `${job}#page-${page}`;
    let hang!: () => void;
    const hung = new Promise<void>((resolve) => {
      hang = resolve;
    });
    let crash!: () => void;
    const crashed = new Promise<void>((resolve) => {
      crash = resolve;
    });
    const work = async (run: JobRun) => {
      let page = (await run.loadCheckpoint<number>()) ?? 0;
      for (; page < 4; page += 1) {
        if (page === 2 && !run.takeover) {
          crash();
          await hung; // the first run stalls here, as if its container died
        }
        // Before an effect that must not repeat: a run that lost its slot stops here.
        await run.extendLease();
        await increment(pages(page));
        await run.saveCheckpoint(page + 1);
      }
      return 'exported';
    };

    const first = guardOn(clock, 5_000).run({ job, slot: 'batch-1' }, work);
    await crashed;
    clock.advance(5_001);
    const second = await guardOn(clock, 5_000).run({ job, slot: 'batch-1' }, work);
    hang();

    expect(second).toEqual({ ran: true, result: 'exported', takeover: true });
    expect(await first).toEqual({ ran: false, reason: 'lease-lost' });
    // Every page once: the crashed run woke up, found its slot taken over, and stopped.
    expect(await Promise.all([0, 1, 2, 3].map((page) => count(pages(page))))).toEqual([1, 1, 1, 1]);
  });
});
