/**
 * Checks of the payment notifier's external effect, from what the downstream service saw: each
 * payment status notified exactly once, under one `Idempotency-Key`, whatever the resends,
 * redeliveries, retries and replays. Pure.
 */
import { type Check, check } from './checks';
import type { DownstreamSnapshot } from './downstream';
import type { StoredNotification } from './observations';
import { downstreamFailures, expectedNotifications, expectedOutcome, type SampleLog } from './sample-logs';

/** What the downstream saw, summed: requests, distinct keys and applications. */
export interface ExternalEffectTotals {
  readonly requests: number;
  /** Distinct `Idempotency-Key` values among the requests. */
  readonly keys: number;
  /** Notifications applied: the external effects. */
  readonly applications: number;
  /** Requests answered from an earlier application of their key. */
  readonly replayed: number;
  /** Requests answered with a configured failure. */
  readonly failed: number;
}

/** Sums a downstream snapshot (see {@link ExternalEffectTotals}). */
export function externalEffectTotals(snapshot: DownstreamSnapshot): ExternalEffectTotals {
  const count = (answer: string) => snapshot.requests.filter((request) => request.answer === answer).length;
  return {
    requests: snapshot.requests.length,
    keys: new Set(snapshot.requests.flatMap((request) => (request.key === undefined ? [] : [request.key])))
      .size,
    applications: snapshot.applications.length,
    replayed: count('replayed'),
    failed: count('failed'),
  };
}

/**
 * Checks a first run of the payment log against what the downstream saw and what the inbox
 * stored: every request carried a key; one request per processed payment status plus one per
 * retry; exactly the log's payment statuses applied, each once, under as many distinct keys as
 * there are `paymentId:status` pairs, no key applied twice; each transient failure retried with
 * the same key and applied once; and every inbox record of the notifier completed with the
 * notification id the downstream applied.
 */
export function checkExternalEffects(
  log: SampleLog,
  downstream: DownstreamSnapshot,
  stored: readonly StoredNotification[],
): Check[] {
  const expected = expectedOutcome(log);
  const notifications = expectedNotifications(log);
  const { requests, applications } = downstream;
  const pairs = new Set(applications.map((application) => application.payment));
  const keys = new Set(applications.map((application) => application.key));
  const timesApplied = new Map<string, number>();
  for (const { key } of applications) timesApplied.set(key, (timesApplied.get(key) ?? 0) + 1);

  const checks: Check[] = [
    check(
      `${log.name} downstream: every request carried an Idempotency-Key`,
      [],
      requests.filter((request) => request.key === undefined).map((request) => request.payment ?? '?'),
    ),
    check(
      `${log.name} downstream: ${expected.processed + expected.retried} requests, one per notified payment status plus one per retry`,
      expected.processed + expected.retried,
      requests.length,
    ),
    check(
      `${log.name} downstream: ${notifications.length} notifications applied, one per payment status (${notifications.join(', ')})`,
      notifications,
      applications.map((application) => application.payment).sort(),
    ),
    check(
      `${log.name} downstream: distinct applied keys = distinct paymentId:status pairs = ${notifications.length}`,
      { keys: notifications.length, pairs: notifications.length },
      { keys: keys.size, pairs: pairs.size },
    ),
    check(
      `${log.name} downstream: no Idempotency-Key applied twice`,
      [],
      [...timesApplied].filter(([, times]) => times > 1).map(([key]) => key),
    ),
  ];

  for (const failure of downstreamFailures(log)) {
    const seen = requests.filter((request) => request.payment === failure.payment);
    const what = failure.applied
      ? `applied it but its answer was lost (${failure.status}); the retry sent the same key and got the first notification id back`
      : `answered ${failure.status} (nothing applied); the retry sent the same key and was applied`;
    const first = seen[0]?.notificationId;
    checks.push(
      check(
        `${log.name} line ${failure.line} (${failure.payment}): the downstream ${what}, once in all`,
        {
          answers: ['failed', failure.applied ? 'replayed' : 'applied'],
          keys: 1,
          applications: 1,
          sameNotificationId: true,
        },
        {
          answers: seen.map((request) => request.answer),
          keys: new Set(seen.map((request) => request.key)).size,
          applications: applications.filter((application) => application.payment === failure.payment).length,
          sameNotificationId: failure.applied
            ? first !== undefined && seen[1]?.notificationId === first
            : first === undefined,
        },
      ),
    );
  }

  checks.push(
    check(
      `${log.name} inbox records: ${notifications.length}, all COMPLETED, each holding the notification id the downstream applied`,
      applications
        .map((application) => ({ status: 'COMPLETED', notificationId: application.notificationId }))
        .sort(byId),
      stored.map((record) => ({ status: record.status, notificationId: record.notificationId })).sort(byId),
    ),
  );
  return checks;
}

/**
 * Checks that a replay reached the downstream not at all: every replayed payment event is a
 * duplicate of a completed record (or poison), so no request and no new application.
 */
export function checkReplayEffects(
  log: SampleLog,
  before: DownstreamSnapshot,
  after: DownstreamSnapshot,
): Check[] {
  return [
    check(
      `${log.name} replay: no downstream request, no notification applied again`,
      { requests: 0, applications: 0 },
      {
        requests: after.requests.length - before.requests.length,
        applications: after.applications.length - before.applications.length,
      },
    ),
  ];
}

function byId(a: { notificationId?: string }, b: { notificationId?: string }): number {
  return String(a.notificationId).localeCompare(String(b.notificationId));
}
