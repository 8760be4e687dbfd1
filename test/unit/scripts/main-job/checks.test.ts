import { describe, expect, it } from 'vitest';
import { check } from '../../../../scripts/main-job/checks';
import type { DownstreamSnapshot } from '../../../../scripts/main-job/downstream';
import {
  checkExternalEffects,
  checkReplayEffects,
  externalEffectTotals,
} from '../../../../scripts/main-job/external-effects';
import type { ReplayLogsResult } from '../../../../scripts/main-job/replay-logs';
import {
  checkFirstRun,
  checkReplay,
  type ExampleObservation,
  replayDeliveries,
} from '../../../../scripts/main-job/scenario';
import { keyOf, sampleLogs, storyRun } from './story';

const logs = sampleLogs();
const failed = (checks: readonly { ok: boolean; name: string }[]) =>
  checks.filter((one) => !one.ok).map((one) => one.name);

describe('check', () => {
  it('compares as JSON and shows both sides when they differ', () => {
    expect(check('five items', 5, 5)).toEqual({ ok: true, name: 'five items' });
    expect(check('five items', { items: 5 }, { items: 6 })).toEqual({
      ok: false,
      name: 'five items',
      detail: 'expected {"items":5}, got {"items":6}',
    });
  });
});

describe('checkFirstRun', () => {
  it('holds for a run that goes as the story says', () => {
    const { run, observation } = storyRun(logs);
    const checks = checkFirstRun(logs, run, observation);
    expect(failed(checks)).toEqual([]);
    expect(checks).toHaveLength(28);
  });

  it('allows a payment delivery found in flight in a concurrent batch, which comes back as a duplicate', () => {
    const { run, observation } = storyRun(logs);
    const payments = { ...observation.outcomes.payments, inFlight: 1 };
    const checks = checkFirstRun(logs, run, {
      ...observation,
      outcomes: { ...observation.outcomes, payments },
    });
    expect(failed(checks)).toEqual([]);
    expect(checks[10]?.name).toBe(
      'payments: 8 of 8 messages delivered by SQS (0 suppressed by the broker), 1 redelivered, 2 delivered again after a transient failure + 1 in flight elsewhere and delivered again',
    );
  });

  it('fails when a transient failure was not retried, or a redelivery was reported as a failure', () => {
    const { run, observation } = storyRun(logs);
    const checks = checkFirstRun(
      logs,
      {
        ...run,
        redeliveries: { ...run.redeliveries, audit: [{ messageId: 'm-audit-2', failures: ['m-audit-2'] }] },
      },
      {
        ...observation,
        outcomes: {
          ...observation.outcomes,
          payments: { ...observation.outcomes.payments, retry: 0, processed: 4 },
        },
      },
    );
    expect(failed(checks)).toEqual([
      'audit: every redelivery acknowledged (no batch item failure)',
      'payments: 8 of 8 messages delivered by SQS (0 suppressed by the broker), 1 redelivered, 2 delivered again after a transient failure',
      'payments: 5 processed, 3 suppressed by the inbox, 2 retried, 1 failed permanently',
    ]);
  });

  it('fails when an inbox record is missing or a poison message was not dead-lettered', () => {
    const { run, observation } = storyRun(logs);
    const broken: ExampleObservation = {
      ...observation,
      tables: {
        ...observation.tables,
        inboxRecords: { ...observation.tables.inboxRecords, payments: 4 },
        inboxTotal: 10,
      },
      deadLetters: { ...observation.deadLetters, payments: [] },
    };
    expect(failed(checkFirstRun(logs, run, broken))).toEqual([
      'payments dead-letter queue: 1 message(s), the poison line 7',
      'payments line 7 dead-lettered 1× with code MALFORMED_BODY and a reason containing "`amount` must be an integer"',
      "payments line 7's dead letter names its source message",
      "Inbox table: 6 records of the order projector (one per processed order event) + 5 of the payment notifier (one per notified payment status), besides the stream consumer's",
    ]);
  });
});

describe('checkExternalEffects', () => {
  const { observation } = storyRun(logs);
  const { downstream, tables } = observation;

  it('names every expectation about the downstream', () => {
    expect(
      checkExternalEffects(logs.payments, downstream, tables.notifications).map((one) => one.name),
    ).toEqual([
      'payments downstream: every request carried an Idempotency-Key',
      'payments downstream: 7 requests, one per notified payment status plus one per retry',
      'payments downstream: 5 notifications applied, one per payment status (pay-2001:AUTHORIZED, pay-2001:CAPTURED, pay-2002:AUTHORIZED, pay-2002:CAPTURED, pay-2003:AUTHORIZED)',
      'payments downstream: distinct applied keys = distinct paymentId:status pairs = 5',
      'payments downstream: no Idempotency-Key applied twice',
      'payments line 5 (pay-2003:AUTHORIZED): the downstream answered 503 (nothing applied); the retry sent the same key and was applied, once in all',
      'payments line 6 (pay-2002:CAPTURED): the downstream applied it but its answer was lost (504); the retry sent the same key and got the first notification id back, once in all',
      'payments inbox records: 5, all COMPLETED, each holding the notification id the downstream applied',
    ]);
  });

  it('catches a payment status applied twice under a key that changed (one taken from the SQS message id)', () => {
    const twice: DownstreamSnapshot = {
      requests: [
        ...downstream.requests,
        {
          key: 'key-m-payments-4',
          payment: 'pay-2001:AUTHORIZED',
          status: 201,
          answer: 'applied',
          notificationId: 'ntf-6',
        },
      ],
      applications: [
        ...downstream.applications,
        { key: 'key-m-payments-4', payment: 'pay-2001:AUTHORIZED', notificationId: 'ntf-6' },
      ],
    };
    const checks = checkExternalEffects(logs.payments, twice, tables.notifications);
    expect(failed(checks)).toEqual([
      'payments downstream: 7 requests, one per notified payment status plus one per retry',
      'payments downstream: 5 notifications applied, one per payment status (pay-2001:AUTHORIZED, pay-2001:CAPTURED, pay-2002:AUTHORIZED, pay-2002:CAPTURED, pay-2003:AUTHORIZED)',
      'payments downstream: distinct applied keys = distinct paymentId:status pairs = 5',
      'payments inbox records: 5, all COMPLETED, each holding the notification id the downstream applied',
    ]);
    expect(checks[3]?.detail).toBe('expected {"keys":5,"pairs":5}, got {"keys":6,"pairs":5}');
  });

  it('catches a retry that sent another key, and a request without one', () => {
    const requests = downstream.requests.map((request, index) =>
      request.payment === 'pay-2003:AUTHORIZED' && request.answer === 'applied'
        ? { ...request, key: 'another-key' }
        : index === 0
          ? { ...request, key: undefined }
          : request,
    );
    expect(
      failed(checkExternalEffects(logs.payments, { ...downstream, requests }, tables.notifications)),
    ).toEqual([
      'payments downstream: every request carried an Idempotency-Key',
      'payments line 5 (pay-2003:AUTHORIZED): the downstream answered 503 (nothing applied); the retry sent the same key and was applied, once in all',
    ]);
  });

  it('catches an inbox record left in progress, or without the notification id', () => {
    const stored = tables.notifications.map((record, index) =>
      index === 0 ? { status: 'IN_PROGRESS', notificationId: undefined } : record,
    );
    expect(failed(checkExternalEffects(logs.payments, downstream, stored))).toEqual([
      'payments inbox records: 5, all COMPLETED, each holding the notification id the downstream applied',
    ]);
  });

  it('sums what the downstream saw', () => {
    expect(externalEffectTotals(downstream)).toEqual({
      requests: 7,
      keys: 5,
      applications: 5,
      replayed: 1,
      failed: 2,
    });
    expect(new Set(downstream.applications.map((application) => application.key))).toEqual(
      new Set(downstream.applications.map((application) => keyOf(application.payment))),
    );
  });
});

describe('checkReplay', () => {
  const { observation: before } = storyRun(logs);
  const deliveries = replayDeliveries(logs);
  const noChange: ReplayLogsResult = {
    replays: (['orders', 'audit', 'payments'] as const).map((name) => ({
      name,
      fifo: name === 'orders',
      doubleTap: {
        changed: false,
        differences: [],
      } as unknown as ReplayLogsResult['replays'][number]['doubleTap'],
      sinceBefore: [],
    })),
    overall: [],
    changed: false,
  };
  /** The observation after a replay in which every delivery was a duplicate or poison. */
  const afterReplay = (): ExampleObservation => {
    const outcomes = { ...before.outcomes };
    const deadLetters = { ...before.deadLetters };
    for (const name of ['orders', 'audit', 'payments'] as const) {
      const passes = name === 'orders' ? 1 : 2;
      const poison = before.deadLetters[name].length * passes;
      outcomes[name] = {
        ...before.outcomes[name],
        duplicate: before.outcomes[name].duplicate + deliveries[name] - poison,
        permanent: before.outcomes[name].permanent + poison,
      };
      deadLetters[name] = [
        ...before.deadLetters[name],
        ...Array.from({ length: passes }, () => before.deadLetters[name]).flat(),
      ];
    }
    return { ...before, outcomes, deadLetters };
  };

  it('replays the standard logs twice and the FIFO log once', () => {
    expect(deliveries).toEqual({ orders: 9, audit: 14, payments: 16 });
  });

  it('holds when every replayed delivery was a duplicate or poison, and the downstream was not called', () => {
    expect(failed(checkReplay(logs, before, afterReplay(), noChange))).toEqual([]);
  });

  it('fails when the replay called the downstream again', () => {
    const after = afterReplay();
    const downstream: DownstreamSnapshot = {
      ...after.downstream,
      requests: [
        ...after.downstream.requests,
        {
          key: keyOf('pay-2001:AUTHORIZED'),
          payment: 'pay-2001:AUTHORIZED',
          status: 200,
          answer: 'replayed',
        },
      ],
    };
    expect(failed(checkReplay(logs, before, { ...after, downstream }, noChange))).toEqual([
      'payments replay: no downstream request, no notification applied again',
    ]);
    expect(checkReplayEffects(logs.payments, before.downstream, downstream)[0]?.detail).toBe(
      'expected {"requests":0,"applications":0}, got {"requests":1,"applications":0}',
    );
  });
});
