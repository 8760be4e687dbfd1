/**
 * The fakes every simulation's Lambda instances share (no I/O): what a drawn fault becomes, and
 * the dead-letter sender and metrics sink an invocation hands the real handler; the kind of
 * request a throttle is counted by, and the failures the deliberately broken stores recognise.
 */
import { describe, expect, it } from 'vitest';
import { createOutcomeCounts } from '../../lambda/core/metrics';
import type { DeadLetterMessage } from '../../lambda/dead-letter/dead-letter-message';
import { isSimulatedCrash, isThrottle, isTransactionConflict } from './support/fault-injection';
import { chanceOf } from './support/prng';
import {
  claimRequestFault,
  createCapturingDeadLetterSender,
  createCrashingMetrics,
  drawFault,
  losesResponse,
  type SimulatedInvocation,
} from './support/simulated-lambda';
import { sqsRecordOf } from './support/simulated-queue';
import { requestKindOf } from './support/simulation';

const letter = (sourceMessageId: string): DeadLetterMessage => ({
  body: '{}',
  reason: 'bad',
  code: 'MALFORMED_BODY',
  consumer: 'orders',
  sourceMessageId,
  attributes: {},
});

describe('drawFault', () => {
  const table = [
    ['a', 0.1],
    ['b', 0.2],
  ] as const;

  it('gives each fault its chance of the range in turn, and the rest no fault', () => {
    expect(drawFault(table, 0)).toBe('a');
    expect(drawFault(table, 0.099)).toBe('a');
    expect(drawFault(table, 0.1)).toBe('b');
    expect(drawFault(table, 0.299)).toBe('b');
    expect(drawFault(table, 0.301)).toBeUndefined();
    expect(drawFault(table, 0.999)).toBeUndefined();
  });
});

describe('claimRequestFault', () => {
  const points = { before: 'before the commit', after: 'after the commit' };

  it('turns each claim fault into the request fault it stands for, crashing at the named points', () => {
    expect(claimRequestFault('throttle', points)).toEqual({ kind: 'throttle' });
    expect(claimRequestFault('throttle-after-applied', points)).toEqual({ kind: 'throttle', applied: true });
    expect(claimRequestFault('conflict', points)).toEqual({ kind: 'conflict' });
    expect(claimRequestFault('lost-response', points)).toEqual({ kind: 'lost-response' });
    expect(claimRequestFault('lost-response-retried', points)).toEqual({ kind: 'lost-response-retried' });
    expect(claimRequestFault('late-duplicate', points)).toEqual({ kind: 'late-duplicate' });
    expect(claimRequestFault('crash-before-claim', points)).toEqual({
      kind: 'crash-before',
      label: 'before the commit',
    });
    expect(claimRequestFault('crash-after-claim', points)).toEqual({
      kind: 'crash-after',
      label: 'after the commit',
    });
  });

  it('leaves the claim alone for no fault and for a fault of another step', () => {
    expect(claimRequestFault(undefined, points)).toBeUndefined();
    expect(claimRequestFault('crash-after-outcome', points)).toBeUndefined();
  });

  it('counts exactly the faults that lose a response as lost responses', () => {
    expect(['lost-response', 'lost-response-retried', 'late-duplicate'].map(losesResponse)).toEqual([
      true,
      true,
      true,
    ]);
    expect(
      [
        'throttle',
        'throttle-after-applied',
        'conflict',
        'crash-before-claim',
        'crash-after-claim',
        undefined,
      ].map(losesResponse),
    ).toEqual([false, false, false, false, false, false]);
  });
});

describe('createCapturingDeadLetterSender', () => {
  const senderFor = (invocation: SimulatedInvocation | undefined, sent: DeadLetterMessage[]) =>
    createCapturingDeadLetterSender({
      seed: 7,
      labels: ['dead-letter'],
      current: () => invocation,
      deliveryOf: () => 1,
      sent,
    });

  it('keeps what it sends, and fails a send exactly where the seed draws a failure in an invocation with faults', async () => {
    const sent: DeadLetterMessage[] = [];
    const sender = senderFor({ faults: true, responseCrash: false, crashed: false }, sent);
    const ids = Array.from({ length: 60 }, (_, index) => `m${index}`);
    const failing = ids.filter((id) => chanceOf(7, 'dead-letter', id, 1) < 0.1);

    const results = await Promise.allSettled(ids.map((id) => sender.send(letter(id))));

    expect(failing.length).toBeGreaterThan(0);
    expect(ids.filter((_, index) => results[index]!.status === 'rejected')).toEqual(failing);
    expect(sent.map((message) => message.sourceMessageId)).toEqual(ids.filter((id) => !failing.includes(id)));
  });

  it('never fails a send in an invocation without faults', async () => {
    const sent: DeadLetterMessage[] = [];
    const sender = senderFor({ faults: false, responseCrash: false, crashed: false }, sent);
    const ids = Array.from({ length: 60 }, (_, index) => `m${index}`);

    for (const id of ids) await sender.send(letter(id));

    expect(sent).toHaveLength(60);
  });

  it('refuses the send of a crashed invocation with a simulated crash, keeping nothing', async () => {
    const sent: DeadLetterMessage[] = [];
    const sender = senderFor({ faults: false, responseCrash: false, crashed: true }, sent);

    const error = await sender.send(letter('m1')).catch((caught: unknown) => caught);

    expect(isSimulatedCrash(error)).toBe(true);
    expect(sent).toEqual([]);
  });
});

describe('createCrashingMetrics', () => {
  const context = { consumer: 'orders', timestampMillis: 0 };

  it('crashes an invocation drawn to crash while its batch response is built, once, after the counts were seen', () => {
    const invocation = { faults: true, responseCrash: true, crashed: false };
    const seen: number[] = [];
    const metrics = createCrashingMetrics({
      current: () => invocation,
      crash: (crashed) => {
        crashed.crashed = true;
      },
      onPublish: (counts) => seen.push(counts.processed),
    });
    const counts = { ...createOutcomeCounts(), processed: 3 };

    let thrown: unknown;
    try {
      metrics.publish(counts, context);
    } catch (error) {
      thrown = error;
    }

    expect(isSimulatedCrash(thrown)).toBe(true);
    expect(invocation.crashed).toBe(true);
    expect(seen).toEqual([3]);
    // Already crashed: it does not crash again.
    expect(() => metrics.publish(counts, context)).not.toThrow();
  });

  it('lets an invocation not drawn to crash publish its counts', () => {
    const invocation = { faults: true, responseCrash: false, crashed: false };
    const metrics = createCrashingMetrics({ current: () => invocation, crash: () => undefined });

    expect(() => metrics.publish(createOutcomeCounts(), context)).not.toThrow();
    expect(invocation.crashed).toBe(false);
  });
});

describe('sqsRecordOf', () => {
  it('builds the Lambda record of a receive: its id, handle, body, receive count, timestamps and attributes', () => {
    const record = sqsRecordOf(
      {
        messageId: 'm1',
        body: '{"id":"a"}',
        meta: undefined,
        receiptHandle: 'rh-m1-2',
        receiveCount: 2,
        sentAt: 1000,
      },
      {
        eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:orders',
        messageAttributes: { 'idempotency-key': { dataType: 'String', stringValue: 'e1' } },
        attributes: { MessageDeduplicationId: 'a' },
      },
    );

    expect(record).toEqual({
      messageId: 'm1',
      receiptHandle: 'rh-m1-2',
      body: '{"id":"a"}',
      attributes: {
        ApproximateReceiveCount: '2',
        SentTimestamp: '1000',
        SenderId: 'AIDAEXAMPLE',
        ApproximateFirstReceiveTimestamp: '1000',
        MessageDeduplicationId: 'a',
      },
      messageAttributes: { 'idempotency-key': { dataType: 'String', stringValue: 'e1' } },
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:orders',
      awsRegion: 'us-east-1',
    });
  });
});

describe('the request kinds throttles are counted by', () => {
  const inbox = 'inbox';
  const update = (UpdateExpression: string) => ({
    operation: 'UpdateItem',
    input: { TableName: inbox, Key: { pk: 'c#k1' }, UpdateExpression },
  });

  it('tells claims, commits, completes, releases, heartbeats and reads apart', () => {
    expect(requestKindOf({ operation: 'PutItem', input: { TableName: inbox, Item: { pk: 'c#k1' } } })).toBe(
      'claim',
    );
    expect(
      requestKindOf({
        operation: 'TransactWriteItems',
        input: { TransactItems: [{ Put: { TableName: inbox, Item: { pk: 'c#k1' } } }] },
      }),
    ).toBe('commit');
    expect(requestKindOf(update('SET #status = :completed'))).toBe('complete');
    expect(requestKindOf(update('SET #status = :inProgress, #leaseExpiresAt = :released'))).toBe('release');
    expect(requestKindOf(update('SET #leaseExpiresAt = :leaseExpiresAt, #expiresAt = :expiresAt'))).toBe(
      'heartbeat',
    );
    expect(requestKindOf({ operation: 'GetItem', input: { TableName: inbox, Key: { pk: 'c#k1' } } })).toBe(
      'read',
    );
    expect(requestKindOf(update('ADD #effects :one'))).toBe('other');
  });
});

describe('the failures a deliberately broken store recognises', () => {
  it('knows the three throttling errors DynamoDB documents, and nothing else, as throttles', () => {
    const named = (name: string) => Object.assign(new Error(name), { name });
    expect(
      ['ProvisionedThroughputExceededException', 'ThrottlingException', 'RequestLimitExceeded'].map((name) =>
        isThrottle(named(name)),
      ),
    ).toEqual([true, true, true]);
    expect(isThrottle(named('TransactionCanceledException'))).toBe(false);
  });

  it('knows a cancelled transaction by its TransactionConflict reason', () => {
    const cancelled = (codes: string[]) => ({
      name: 'TransactionCanceledException',
      CancellationReasons: codes.map((Code) => ({ Code })),
    });
    expect(isTransactionConflict(cancelled(['None', 'TransactionConflict']))).toBe(true);
    expect(isTransactionConflict(cancelled(['ConditionalCheckFailed', 'None']))).toBe(false);
    expect(isTransactionConflict(new Error('socket hang up'))).toBe(false);
  });
});
