/**
 * The fault model of issue 12, one fault at a time, through `createSqsHandler` and the real
 * store on the local emulator (real HTTP; faults injected on the SDK clients' middleware, see
 * `support/fault-injection.ts`). The seeded suite (`fault-injection.test.ts`) injects the same
 * faults at random; these pin each one down:
 *
 * - every write the toolkit makes (claim, commit, complete, release, heartbeat, checkpoint)
 *   applied by DynamoDB, its response lost, and the SDK's retry sent at once;
 * - a release whose first attempt lands late, after another delivery completed (item 2);
 * - a record expiring while its effect runs, the heartbeat holding the lease (item 3), and the
 *   same with the rival's clock past the lease, a takeover;
 * - a heartbeat in flight when the effect fails, landing after the release (item 4);
 * - a half-completed message dead-lettered directly and redriven from a FIFO dead-letter queue
 *   with a new message id and a new deduplication id, as AWS redrives (item 5);
 * - numeric ids beyond 2^53 (item 1) and keys with lone surrogates (item 11).
 */
import { randomUUID } from 'node:crypto';
import { DeleteMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INBOX_STATUS } from '../../lambda/core/contract';
import { fromBody, scopeKey } from '../../lambda/core/dedup-key';
import { PermanentError } from '../../lambda/core/errors';
import type { LogEntry } from '../../lambda/core/logger';
import type { DeadLetterMessage, DeadLetterSender } from '../../lambda/dead-letter/dead-letter-message';
import { createSqsDeadLetterSender } from '../../lambda/dead-letter/sqs-dead-letter-sender';
import { atomic } from '../../lambda/modes/atomic';
import { marker } from '../../lambda/modes/marker';
import { twoPhase } from '../../lambda/modes/two-phase';
import { fromDeduplicationId } from '../../lambda/sqs/key-sources';
import type { SqsRecord } from '../../lambda/sqs/sqs-event';
import { createSqsHandler } from '../../lambda/sqs/sqs-handler';
import { createDynamoDbStore } from '../../lambda/store';
import { toSqsRecord } from '../../lambda/worker/sqs-record';
import { uniqueName } from '../support/aws';
import { createLocalResources, lambdaContext, manualClock, sqsRecord } from '../support/fixtures';
import {
  attachFaultInjection,
  type DynamoRequest,
  type FaultController,
  type InboxUpdate,
  inboxUpdateOf,
  type RequestFault,
  THROTTLE_CODES,
} from './support/fault-injection';
import { countEffect } from './support/tables';

const local = createLocalResources();
const inboxTable = uniqueName('eo-fault-inbox');
const businessTable = uniqueName('eo-fault-business');

beforeAll(async () => {
  await local.createTable(inboxTable);
  await local.createTable(businessTable);
});
afterAll(() => local.dispose());

type Body = { id: string | number; amount: number };
const TTL_SECONDS = 3600;

/** What a request is in the toolkit's protocol: an inbox update by kind, or its operation. */
function writeOf(request: DynamoRequest): InboxUpdate | string {
  return (request.operation === 'UpdateItem' && inboxUpdateOf(request.input)) || request.operation;
}

/** A document client whose requests `faults` may fault; the rest of `controller` sees them too. */
function faultyClient(
  faults: (request: DynamoRequest) => RequestFault | undefined,
  controller: Partial<FaultController> = {},
): DynamoDBDocumentClient {
  const client = local.documentClient({ maxAttempts: 1 });
  attachFaultInjection(client, {
    decide: faults,
    isCrashed: () => false,
    crash: () => undefined,
    ...controller,
  });
  return client;
}

/** Faults the first request that `matches` with `fault`, nothing else. */
function once(matches: (request: DynamoRequest) => boolean, fault: RequestFault) {
  let done = false;
  return (request: DynamoRequest): RequestFault | undefined => {
    if (done || !matches(request)) return undefined;
    done = true;
    return fault;
  };
}

/** Outcomes, dead letters and the options every consumer of a test shares. */
function harness(prefix: string) {
  const consumer = uniqueName(prefix).replace(/[^A-Za-z0-9._:-]/g, '-');
  const logs: LogEntry[] = [];
  const deadLetters: DeadLetterMessage[] = [];
  const clock = manualClock(Date.now());
  const sender: DeadLetterSender = { send: async (message) => void deadLetters.push(message) };
  const options = (client: DynamoDBDocumentClient) => ({
    consumer,
    client,
    tableName: inboxTable,
    clock,
    ttlSeconds: TTL_SECONDS,
    dedupKey: fromBody<Body>((body) => body.id),
    logger: { log: (entry: LogEntry) => logs.push(entry) },
    logLevel: 'debug' as const,
    metrics: false as const,
    deadLetter: 'direct' as const,
    deadLetterSender: sender,
  });
  return {
    consumer,
    clock,
    deadLetters,
    options,
    outcomes: () => logs.flatMap((entry) => (typeof entry.outcome === 'string' ? [entry.outcome] : [])),
    record: (key: string) => local.readItem(inboxTable, { pk: scopeKey(consumer, key) }),
  };
}

const invoke = (handler: ReturnType<typeof createSqsHandler>, ...records: SqsRecord[]) =>
  handler({ Records: records }, lambdaContext());
const acknowledged = { batchItemFailures: [] };
const failed = (record: SqsRecord) => ({ batchItemFailures: [{ itemIdentifier: record.messageId }] });

/** Resolves after `millis` of real time: network latency, not a clock the test could inject. */
const pause = (millis: number) => new Promise<void>((resolve) => setTimeout(resolve, millis));

/** A promise and the function that resolves it. */
function signal(): { readonly promise: Promise<void>; readonly resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

describe('a write applied by DynamoDB whose response is lost, followed by the SDK’s retry', () => {
  const lostThenRetried: RequestFault = { kind: 'lost-response-retried' };

  it.each([
    { write: 'PutItem', mode: 'marker' },
    { write: 'PutItem', mode: 'two-phase' },
    { write: 'TransactWriteItems', mode: 'atomic' },
    { write: 'complete', mode: 'two-phase' },
  ] as const)(
    '$mode: processes the message once when the retry of its $write meets the first attempt’s write',
    async ({ write, mode }) => {
      const test = harness(`fm-lost-${write}`);
      const client = faultyClient(once((request) => writeOf(request) === write, lostThenRetried));
      let effects = 0;
      const count = () => {
        effects += 1;
      };
      const common = test.options(client);
      const handler =
        mode === 'atomic'
          ? createSqsHandler<Body>({
              ...common,
              mode: atomic((message, unitOfWork) => {
                countEffect(unitOfWork, businessTable, message.scopedKey);
              }),
            })
          : mode === 'marker'
            ? createSqsHandler<Body>({ ...common, mode: marker(count) })
            : createSqsHandler<Body>({
                ...common,
                mode: twoPhase({ leaseMillis: 30_000, handle: (_message, run) => run.run(count) }),
              });
      const message = sqsRecord(randomUUID(), { id: 'order-1', amount: 1 });

      expect(await invoke(handler, message)).toEqual(acknowledged);
      test.clock.advance(1000);
      expect(await invoke(handler, message)).toEqual(acknowledged);

      expect(test.outcomes()).toEqual(['processed', 'duplicate']);
      if (mode === 'atomic') {
        const item = await local.readItem(businessTable, { pk: scopeKey(test.consumer, 'order-1') });
        expect(item?.effects).toBe(1);
      } else {
        expect(effects).toBe(1);
      }
      expect(await test.record('order-1')).toMatchObject({ status: INBOX_STATUS.completed });
    },
  );

  it.each(['marker', 'two-phase'] as const)(
    '%s: runs the effect on the redelivery when the retry of a release meets the released claim',
    async (mode) => {
      const test = harness(`fm-lost-release-${mode}`);
      const client = faultyClient(once((request) => writeOf(request) === 'release', lostThenRetried));
      let attempts = 0;
      const effect = () => {
        attempts += 1;
        if (attempts === 1) throw new Error('the effect failed before it happened (injected)');
      };
      const common = test.options(client);
      const handler =
        mode === 'marker'
          ? createSqsHandler<Body>({ ...common, mode: marker(effect) })
          : createSqsHandler<Body>({
              ...common,
              mode: twoPhase({ leaseMillis: 30_000, handle: (_message, effects) => effects.run(effect) }),
            });
      const message = sqsRecord(randomUUID(), { id: 'order-1', amount: 1 });

      expect(await invoke(handler, message)).toEqual(failed(message));
      test.clock.advance(1000);
      expect(await invoke(handler, message)).toEqual(acknowledged);

      expect(test.outcomes()).toEqual(['retry', 'processed']);
      expect(attempts).toBe(2);
    },
  );

  it('two-phase: keeps the claim when the retry of a heartbeat meets the extended lease', async () => {
    const test = harness('fm-lost-extend');
    const landed = signal();
    const client = faultyClient(
      once((request) => writeOf(request) === 'extend', lostThenRetried),
      {
        onServerResponse: (request, status, repeated) => {
          // The retry's answer: 200, or a failed condition that meets the lease the first set.
          if (writeOf(request) === 'extend' && repeated && status !== 0) landed.resolve();
        },
      },
    );
    let executions = 0;
    const handler = createSqsHandler<Body>({
      ...test.options(client),
      mode: twoPhase({
        handle: (_message, effects) =>
          effects.run(async ({ signal: aborted }) => {
            executions += 1;
            // The heartbeat moves the lease past the claim's (a lease only grows).
            test.clock.advance(100);
            // The effect outlasts a heartbeat (every lease/3, real time), whose retry then lands.
            await landed.promise;
            if (aborted.aborted) throw new Error('the heartbeat lost the claim');
          }),
        leaseMillis: 1000,
        heartbeat: true,
      }),
    });
    const message = sqsRecord(randomUUID(), { id: 'order-1', amount: 1 });

    expect(await invoke(handler, message)).toEqual(acknowledged);

    expect(test.outcomes()).toEqual(['processed']);
    expect(executions).toBe(1);
    expect(await test.record('order-1')).toMatchObject({ status: INBOX_STATUS.completed });
  });

  it('jobs: replaces a checkpoint once when the retry of the replace meets the first attempt’s write', async () => {
    const client = faultyClient(once((request) => writeOf(request) === 'replace', lostThenRetried));
    const store = createDynamoDbStore({ client, tableName: inboxTable });
    const pk = scopeKey(uniqueName('fm-checkpoint'), 'slot-1', 'checkpoint');
    const nowMillis = Date.now();
    const record = {
      pk,
      status: INBOX_STATUS.completed,
      fingerprint: 'checkpoint-1',
      expiresAt: Math.floor(nowMillis / 1000) + TTL_SECONDS,
      consumer: 'jobs',
      committedAt: nowMillis,
    };
    expect(await store.insert(record, nowMillis)).toEqual({ kind: 'inserted' });

    const next = { fingerprint: 'checkpoint-2', expiresAt: record.expiresAt, result: '{"value":2}' };
    expect(await store.replace(pk, 'checkpoint-1', next)).toEqual({ kind: 'ok' });

    expect(await local.readItem(inboxTable, { pk })).toMatchObject({
      fingerprint: 'checkpoint-2',
      result: '{"value":2}',
    });
    // Its own write, met by the retry, is the checkpoint's now: the next replace builds on it.
    expect(
      await store.replace(pk, 'checkpoint-2', {
        ...next,
        fingerprint: 'checkpoint-3',
        result: '{"value":3}',
      }),
    ).toEqual({ kind: 'ok' });
  });
});

describe('a commit DynamoDB applied, answered with a throttling error', () => {
  it.each(THROTTLE_CODES)(
    'atomic: retries the message after a %s, and its redelivery meets the committed marker as a duplicate',
    async (code) => {
      const test = harness(`fm-throttled-${code}`);
      const client = faultyClient(
        once((request) => writeOf(request) === 'TransactWriteItems', {
          kind: 'throttle',
          code,
          applied: true,
        }),
      );
      const handler = createSqsHandler<Body>({
        ...test.options(client),
        mode: atomic((message, unitOfWork) => {
          countEffect(unitOfWork, businessTable, message.scopedKey);
        }),
      });
      const message = sqsRecord(randomUUID(), { id: 'order-1', amount: 1 });

      expect(await invoke(handler, message)).toEqual(failed(message));
      test.clock.advance(1000);
      expect(await invoke(handler, message)).toEqual(acknowledged);

      expect(test.outcomes()).toEqual(['retry', 'duplicate']);
      const item = await local.readItem(businessTable, { pk: scopeKey(test.consumer, 'order-1') });
      expect(item?.effects).toBe(1);
    },
  );
});

describe('a release retried late: its first attempt lands after another delivery completed (issue 12 item 2)', () => {
  it('marker mode: keeps the completed marker of the delivery that ran the effect, so the next delivery is a duplicate', async () => {
    const test = harness('fm-late-release');
    let late: (() => Promise<number>) | undefined;
    const first = faultyClient(
      once((request) => writeOf(request) === 'release', { kind: 'late-duplicate' }),
      {
        onLateDuplicate: (_request, send) => {
          late = send;
        },
      },
    );
    const other = local.documentClient({ maxAttempts: 3 });
    let attempts = 0;
    const handle = () => {
      attempts += 1;
      if (attempts === 1) throw new Error('the effect failed before it happened (injected)');
    };
    const a = createSqsHandler<Body>({ ...test.options(first), mode: marker(handle) });
    const b = createSqsHandler<Body>({ ...test.options(other), mode: marker(handle) });
    const message = sqsRecord(randomUUID(), { id: 'order-1', amount: 1 });

    expect(await invoke(a, message)).toEqual(failed(message));
    test.clock.advance(1000);
    expect(await invoke(b, message)).toEqual(acknowledged);
    // The first attempt of the first delivery's release lands now.
    expect(late).toBeDefined();
    await late!();
    test.clock.advance(1000);
    expect(await invoke(b, message)).toEqual(acknowledged);

    expect(test.outcomes()).toEqual(['retry', 'processed', 'duplicate']);
    expect(attempts).toBe(2);
    expect(await test.record('order-1')).toMatchObject({ status: INBOX_STATUS.completed });
  });
});

describe('a record expiring while its effect runs (issue 12 item 3)', () => {
  it('two-phase with heartbeats: a delivery after the record’s TTL, while the owner still holds the lease, finds the claim in flight', async () => {
    const test = harness('fm-expiry-mid-effect');
    let beatsAfterJump = 0;
    const beat = signal();
    let jumped = false;
    const owner = faultyClient(() => undefined, {
      onServerResponse: (request, status) => {
        if (jumped && writeOf(request) === 'extend' && status === 200 && ++beatsAfterJump === 1)
          beat.resolve();
      },
    });
    const rivalClient = local.documentClient({ maxAttempts: 3 });
    let executions = 0;
    const message = sqsRecord(randomUUID(), { id: 'order-1', amount: 1 });
    let rival: ReturnType<typeof createSqsHandler> | undefined;
    const rivalResponses: unknown[] = [];
    const handle = (_message: unknown, effects: { run: (effect: () => Promise<void>) => Promise<unknown> }) =>
      effects.run(async () => {
        executions += 1;
        if (executions > 1) return;
        // The effect runs for longer than the record's TTL; its heartbeat keeps the lease.
        test.clock.advance(TTL_SECONDS * 1000 + 60_000);
        jumped = true;
        await beat.promise;
        rivalResponses.push(await invoke(rival!, message));
      });
    const common = { mode: twoPhase({ handle, leaseMillis: 1000, heartbeat: true }) };
    const a = createSqsHandler<Body>({ ...test.options(owner), ...common });
    rival = createSqsHandler<Body>({ ...test.options(rivalClient), ...common });

    const response = await invoke(a, message);

    expect({ response, rivalResponses, outcomes: test.outcomes(), executions }).toEqual({
      response: acknowledged,
      rivalResponses: [failed(message)],
      outcomes: ['in-flight', 'processed'],
      executions: 1,
    });
    expect(await test.record('order-1')).toMatchObject({ status: INBOX_STATUS.completed });
  });

  it('two-phase with heartbeats: a delivery whose clock is past the lease the owner’s last heartbeat wrote takes the claim over, and the owner, fenced off, leaves the message to a redelivery', async () => {
    const test = harness('fm-expiry-lease-ended');
    let beatsAfterJump = 0;
    const beat = signal();
    let jumped = false;
    const owner = faultyClient(() => undefined, {
      onServerResponse: (request, status) => {
        if (jumped && writeOf(request) === 'extend' && status === 200 && ++beatsAfterJump === 1)
          beat.resolve();
      },
    });
    const rivalClient = local.documentClient({ maxAttempts: 3 });
    let executions = 0;
    const message = sqsRecord(randomUUID(), { id: 'order-1', amount: 1 });
    let rival: ReturnType<typeof createSqsHandler> | undefined;
    const rivalResponses: unknown[] = [];
    const handle = (_message: unknown, effects: { run: (effect: () => Promise<void>) => Promise<unknown> }) =>
      effects.run(async () => {
        executions += 1;
        if (executions > 1) return;
        test.clock.advance(TTL_SECONDS * 1000 + 60_000);
        jumped = true;
        await beat.promise;
        rivalResponses.push(await invoke(rival!, message));
      });
    const leaseMillis = 1000;
    const common = { mode: twoPhase<Body>({ leaseMillis, heartbeat: true, handle }) };
    const a = createSqsHandler<Body>({ ...test.options(owner), ...common });
    // The rival's clock runs past any lease the owner's heartbeats write (they read the owner's
    // clock, which stands still here): what a starved machine or clocks beyond the skew
    // tolerance amount to. The lease has ended by the rival's clock; the record has not expired.
    const rivalClock = () => test.clock() + 2 * leaseMillis;
    rival = createSqsHandler<Body>({ ...test.options(rivalClient), clock: rivalClock, ...common });

    const response = await invoke(a, message);

    expect({ response, rivalResponses, outcomes: test.outcomes(), executions }).toEqual({
      response: failed(message),
      rivalResponses: [acknowledged],
      // The rival ran the effect again (deduplicated downstream by the idempotency key); the
      // owner lost its lease and leaves the message to a redelivery, which finds it completed.
      outcomes: ['processed', 'retry'],
      executions: 2,
    });
    expect(await test.record('order-1')).toMatchObject({ status: INBOX_STATUS.completed });
  });
});

describe('a heartbeat in flight when the effect fails (issue 12 item 4)', () => {
  it('two-phase: the heartbeat landing after the release leaves the claim released, so the retry runs the effect at once', async () => {
    const test = harness('fm-late-heartbeat');
    const sent = signal();
    const released = signal();
    const effectEnded = signal();
    const landed = signal();
    const client = faultyClient(
      (request) => {
        if (writeOf(request) !== 'extend') return undefined;
        sent.resolve();
        // Held on the network past the effect's end: until the release was answered, or (when the
        // toolkit waits for its heartbeats before releasing) a moment after the effect failed.
        return {
          kind: 'hold',
          until: Promise.race([released.promise, effectEnded.promise.then(() => pause(200))]),
        };
      },
      {
        onServerResponse: (request) => {
          if (writeOf(request) === 'release') released.resolve();
          if (writeOf(request) === 'extend') landed.resolve();
        },
      },
    );
    let attempts = 0;
    const handler = createSqsHandler<Body>({
      ...test.options(client),
      mode: twoPhase({
        handle: (_message, effects) =>
          effects.run(async () => {
            attempts += 1;
            if (attempts > 1) return;
            await sent.promise;
            effectEnded.resolve();
            throw new Error('the downstream service failed after a heartbeat was sent (injected)');
          }),
        leaseMillis: 1000,
        heartbeat: true,
      }),
    });
    const message = sqsRecord(randomUUID(), { id: 'order-1', amount: 1 });

    expect(await invoke(handler, message)).toEqual(failed(message));
    await landed.promise;

    expect(await test.record('order-1')).toMatchObject({
      status: INBOX_STATUS.inProgress,
      leaseExpiresAt: 0,
    });
    test.clock.advance(10);
    expect(await invoke(handler, message)).toEqual(acknowledged);
    expect(test.outcomes()).toEqual(['retry', 'processed']);
    expect(attempts).toBe(2);
  });
});

describe('a dead-letter redrive with the ids AWS gives redriven messages (issue 12 item 5)', () => {
  it('two-phase keyed by fromDeduplicationId: a half-completed message dead-lettered directly and redriven from the FIFO dead-letter queue with a new deduplication id runs only its missing effect', async () => {
    const source = await local.createQueue('fm-source', { FifoQueue: 'true' });
    const deadLetterQueue = await local.createQueue('fm-dlq', { FifoQueue: 'true' });
    const test = harness('fm-redrive');
    const executions: string[] = [];
    let outage = true;
    const handler = createSqsHandler<Body>({
      ...test.options(local.documentClient({ maxAttempts: 3 })),
      dedupKey: fromDeduplicationId(),
      deadLetterSender: createSqsDeadLetterSender({ client: local.sqs, queueUrl: deadLetterQueue.url }),
      mode: twoPhase({
        handle: async (_message, effects) => {
          await effects.run('charge', () => void executions.push('charge'));
          await effects.run('notify', () => {
            if (outage) throw new PermanentError('the mailer rejected the address (injected)');
            executions.push('notify');
          });
        },
        leaseMillis: 30_000,
      }),
    });
    await local.sqs.send(
      new SendMessageCommand({
        QueueUrl: source.url,
        MessageBody: JSON.stringify({ id: 'order-7', amount: 7 }),
        MessageGroupId: 'orders',
        MessageDeduplicationId: 'order-7-created',
      }),
    );
    const [original] = await local.receive(source.url);
    expect(await invoke(handler, toSqsRecord(original!))).toEqual(acknowledged);
    // Acknowledged: deleted from the source queue, as the event source mapping does.
    await local.sqs.send(
      new DeleteMessageCommand({ QueueUrl: source.url, ReceiptHandle: original!.ReceiptHandle }),
    );
    const [deadLettered] = await local.receive(deadLetterQueue.url);
    // Dead-lettered with its body and the deduplication id it was first delivered with.
    expect(deadLettered).toMatchObject({
      Body: JSON.stringify({ id: 'order-7', amount: 7 }),
      MessageAttributes: { 'eo-deduplication-id': { DataType: 'String', StringValue: 'order-7-created' } },
    });
    await local.sqs.send(
      new DeleteMessageCommand({ QueueUrl: deadLetterQueue.url, ReceiptHandle: deadLettered!.ReceiptHandle }),
    );

    // The outage is over; a redrive moves the message back with a new message id and, on FIFO
    // queues, a new deduplication id; body and message attributes stay.
    outage = false;
    test.clock.advance(60_000);
    await local.sqs.send(
      new SendMessageCommand({
        QueueUrl: source.url,
        MessageBody: deadLettered!.Body!,
        MessageAttributes: Object.fromEntries(
          Object.entries(deadLettered!.MessageAttributes ?? {}).map(([name, value]) => [
            name,
            { DataType: value.DataType, StringValue: value.StringValue, BinaryValue: value.BinaryValue },
          ]),
        ),
        MessageGroupId: 'orders',
        MessageDeduplicationId: `redrive-${deadLettered!.MessageId}`,
      }),
    );
    const [redriven] = await local.receive(source.url);
    expect(redriven?.MessageId).not.toBe(original!.MessageId);
    expect(redriven?.Attributes?.MessageDeduplicationId).not.toBe('order-7-created');
    expect(await invoke(handler, toSqsRecord(redriven!))).toEqual(acknowledged);

    expect(executions).toEqual(['charge', 'notify']);
    expect(test.outcomes()).toEqual(['permanent', 'processed']);
  });
});

describe('keys the toolkit must not merge', () => {
  it('atomic mode: processes numeric ids beyond 2^53 that round to the same double separately, or dead-letters both as INVALID_KEY (issue 12 item 1)', async () => {
    const test = harness('fm-big-ids');
    const keys: string[] = [];
    const handler = createSqsHandler<Body>({
      ...test.options(local.documentClient({ maxAttempts: 3 })),
      mode: atomic((message, unitOfWork) => {
        keys.push(message.scopedKey);
        countEffect(unitOfWork, businessTable, message.scopedKey);
      }),
    });
    const first = sqsRecord(randomUUID(), undefined, { rawBody: '{"id":1152921504606846977,"amount":1}' });
    const second = sqsRecord(randomUUID(), undefined, { rawBody: '{"id":1152921504606846978,"amount":2}' });

    expect(await invoke(handler, first)).toEqual(acknowledged);
    expect(await invoke(handler, second)).toEqual(acknowledged);

    const separately = { outcomes: ['processed', 'processed'], codes: [], keys: 2 };
    const rejected = { outcomes: ['permanent', 'permanent'], codes: ['INVALID_KEY', 'INVALID_KEY'], keys: 0 };
    expect([separately, rejected]).toContainEqual({
      outcomes: test.outcomes(),
      codes: test.deadLetters.map((letter) => letter.code),
      keys: new Set(keys).size,
    });
  });

  it('atomic mode: dead-letters keys differing only in a lone surrogate as INVALID_KEY (issue 12 item 11)', async () => {
    const test = harness('fm-lone-surrogates');
    let handled = 0;
    const handler = createSqsHandler<Body>({
      ...test.options(local.documentClient({ maxAttempts: 3 })),
      mode: atomic(() => {
        handled += 1;
      }),
    });
    const high = sqsRecord(randomUUID(), { id: 'order-\ud800', amount: 1 });
    const low = sqsRecord(randomUUID(), { id: 'order-\udfff', amount: 2 });

    expect(await invoke(handler, high, low)).toEqual(acknowledged);

    expect(test.deadLetters.map((letter) => [letter.sourceMessageId, letter.code])).toEqual([
      [high.messageId, 'INVALID_KEY'],
      [low.messageId, 'INVALID_KEY'],
    ]);
    expect(handled).toBe(0);
  });
});
