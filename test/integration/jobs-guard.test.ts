/**
 * The job guard over the DynamoDB store on the local endpoint: two overlapping runs of one
 * scheduled slot (two guards, as two Lambda containers would have) produce one effect, and a
 * crashed run is taken over after its lease and resumed from its checkpoint (injected clock), and
 * a failed run's slot is released keeping its claim.
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fingerprintOf } from '../../lambda/core/fingerprint';
import {
  createJobGuard,
  type JobGuard,
  type JobRun,
  jobSlotKey,
  scheduledEventSlot,
} from '../../lambda/jobs';
import { uniqueName } from '../support/aws';
import { createLocalResources, manualClock } from '../support/fixtures';
import { attachRequestCounter, type RequestCounts } from '../support/request-counter';

const local = createLocalResources();
const client = local.documentClient();
const inboxTable = uniqueName('eo-jobs-inbox');
const effectsTable = uniqueName('eo-jobs-effects');
const runId = uniqueName('run');

beforeAll(async () => {
  await local.createTable(inboxTable);
  await local.createTable(effectsTable);
});

afterAll(() => local.dispose());

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

const guardOn = (clock: () => number, leaseMillis = 60_000, guardClient = client): JobGuard =>
  createJobGuard({
    consumer: 'reports',
    client: guardClient,
    tableName: inboxTable,
    clock,
    leaseMillis,
    logLevel: 'silent',
  });

describe('createJobGuard with DynamoDB', () => {
  it('lets two overlapping runs of one scheduled slot produce one effect', async () => {
    const clock = manualClock(Date.now());
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
    const clock = manualClock(Date.now());
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
    const clock = manualClock(Date.now());
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

  it('releases a failed run keeping its claim, so the retry claims the slot in one request', async () => {
    const clock = manualClock(Date.now());
    const guardClient = local.documentClient();
    const counter = attachRequestCounter(guardClient);
    const guard = guardOn(clock, 60_000, guardClient);
    const slot = { job: `retry-${runId}`, slot: '2026-01-01' };
    const pk = jobSlotKey('reports', slot);
    const readClaim = async () =>
      (await client.send(new GetCommand({ TableName: inboxTable, Key: { pk }, ConsistentRead: true }))).Item;

    await expect(
      guard.run(slot, async () => {
        throw new Error('export failed');
      }),
    ).rejects.toThrow('export failed');
    const released = await readClaim();
    clock.advance(1_000);
    counter.reset();
    const retry = await guard.run(slot, async () => {
      await increment(slot.job);
      return 'exported';
    });
    const retryRequests = counter.counts();

    // Released, the claim stays with the slot's fingerprint and lease end 0.
    expect(released).toEqual({
      pk,
      status: 'IN_PROGRESS',
      fingerprint: fingerprintOf({ job: slot.job, slot: slot.slot }),
      consumer: 'reports',
      committedAt: clock() - 1_000,
      // In progress (released or not), the claim lives its TTL past its lease end.
      expiresAt: Math.ceil((clock() - 1_000 + 60_000) / 1000) + 7 * 24 * 60 * 60,
      leaseExpiresAt: 0,
      owner: expect.any(String),
    });
    expect(retry).toEqual({ ran: true, result: 'exported', takeover: false });
    // One claim (a conditional put) and one completion, no takeover.
    expect(retryRequests).toEqual({ PutItem: 1, UpdateItem: 1 });
    expect(await readClaim()).toMatchObject({ status: 'COMPLETED', fingerprint: released!.fingerprint });
    expect(await count(slot.job)).toBe(1);
  });
  it('saves each checkpoint in one fenced UpdateItem, and stops a run whose checkpoint another run wrote', async () => {
    const clock = manualClock(Date.now());
    const guardClient = local.documentClient();
    const counter = attachRequestCounter(guardClient);
    const guard = guardOn(clock, 60_000, guardClient);
    const slot = { job: `checkpoint-${runId}`, slot: '2026-01-01' };
    const checkpointPk = jobSlotKey('reports', slot).replace('reports#', 'reports/checkpoint#');
    const readCheckpoint = async () =>
      (
        await client.send(
          new GetCommand({ TableName: inboxTable, Key: { pk: checkpointPk }, ConsistentRead: true }),
        )
      ).Item;
    const saves: RequestCounts[] = [];
    let saved: Record<string, unknown> | undefined;

    const result = await guard.run(slot, async (run) => {
      await run.loadCheckpoint();
      for (const page of [1, 2]) {
        counter.reset();
        await run.saveCheckpoint(page);
        saves.push(counter.counts());
      }
      saved = await readCheckpoint();
      // Another run writes the checkpoint (as one that took the slot over would).
      await client.send(
        new UpdateCommand({
          TableName: inboxTable,
          Key: { pk: checkpointPk },
          UpdateExpression: 'SET #fingerprint = :other',
          ExpressionAttributeNames: { '#fingerprint': 'fingerprint' },
          ExpressionAttributeValues: { ':other': 'another-run' },
        }),
      );
      counter.reset();
      await run.saveCheckpoint(3);
      return 'exported';
    });

    // Each save: the lease extension and one conditional write of the checkpoint, nothing deleted.
    expect(saves).toEqual([{ UpdateItem: 2 }, { UpdateItem: 2 }]);
    expect(saved).toMatchObject({ status: 'COMPLETED', result: JSON.stringify({ value: 2 }) });
    expect(result).toEqual({ ran: false, reason: 'lease-lost' });
    // The refused save was one request too, and left the other run's checkpoint in place.
    expect(counter.counts()).toEqual({ UpdateItem: 2 });
    expect(await readCheckpoint()).toMatchObject({
      fingerprint: 'another-run',
      result: JSON.stringify({ value: 2 }),
    });
  });
});
