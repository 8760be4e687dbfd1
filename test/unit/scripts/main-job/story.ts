/**
 * A first run of the main job as its sample logs' story says it goes, built without AWS: the
 * outcome counts, tables, dead letters and downstream ledger a correct example app leaves. The
 * main job's unit tests change one thing in it and see which check notices.
 */
import { join } from 'node:path';
import { createDownstreamLedger } from '../../../../scripts/main-job/downstream';
import { bodySha256, type OutcomeTotals } from '../../../../scripts/main-job/observations';
import {
  expectedOrders,
  expectedOutcome,
  loadSampleLogs,
  poisonLines,
  SAMPLE_LOG_NAMES,
  type SampleLog,
  type SampleLogName,
} from '../../../../scripts/main-job/sample-logs';
import {
  type ExampleObservation,
  type SampleLogs,
  type SampleRun,
  sampleDownstreamFailures,
} from '../../../../scripts/main-job/scenario';

/** The project's sample logs. */
export function sampleLogs(): SampleLogs {
  return loadSampleLogs(join(__dirname, '..', '..', '..', '..'));
}

/** The Idempotency-Key the story's notifier sends for a payment status (one per `paymentId:status`). */
export const keyOf = (payment: string): string => `key-${payment}`;

/** What {@link storyRun} returns. */
export interface StoryRun {
  readonly run: SampleRun;
  readonly observation: ExampleObservation;
}

/** A first run exactly as the logs' story says. */
export function storyRun(logs: SampleLogs): StoryRun {
  const sent = {} as Record<SampleLogName, Map<number, string>>;
  const outcomes = {} as Record<SampleLogName, OutcomeTotals>;
  const deadLetters = {} as Record<SampleLogName, ExampleObservation['deadLetters'][SampleLogName]>;
  for (const name of SAMPLE_LOG_NAMES) {
    const log = logs[name];
    sent[name] = new Map(log.entries.map((entry) => [entry.line, `m-${name}-${entry.line}`]));
    const expected = expectedOutcome(log);
    outcomes[name] = {
      processed: expected.processed,
      duplicate: expected.duplicates,
      inFlight: 0,
      mismatch: 0,
      stale: 0,
      retry: expected.retried,
      permanent: expected.deadLetters,
      invocations: 3,
    };
    deadLetters[name] = poisonLines(log).map(({ line, code, reason }) => ({
      messageId: `dl-${name}-${line}`,
      code,
      reason: `The body was rejected by the \`parse\` option: ${reason}`,
      consumer: name,
      sourceMessageId: `m-${name}-${line}`,
      bodySha256: bodySha256(log.entries[line - 1]!.body),
    }));
  }

  const ledger = createDownstreamLedger(sampleDownstreamFailures(logs));
  notifyAsTheStorySays(logs.payments, (payment, body) =>
    ledger.answer({ method: 'POST', path: '/notifications', key: keyOf(payment), body }),
  );
  const downstream = ledger.snapshot();

  const orders = expectedOrders(logs.orders);
  const statuses = [...orders.values()].reduce((sum, order) => sum + order.statuses, 0);
  return {
    run: {
      sent,
      redeliveries: {
        orders: logs.orders.redeliver.map((line) => ({ messageId: `m-orders-${line}`, failures: [] })),
        audit: logs.audit.redeliver.map((line) => ({ messageId: `m-audit-${line}`, failures: [] })),
        payments: logs.payments.redeliver.map((line) => ({ messageId: `m-payments-${line}`, failures: [] })),
      },
      drainMillis: 31_000,
    },
    observation: {
      outcomes,
      tables: {
        ordersItems: orders.size + statuses,
        inboxRecords: {
          orders: expectedOutcome(logs.orders).processed,
          audit: 0,
          payments: expectedOutcome(logs.payments).processed,
        },
        streamInboxRecords: 0,
        inboxTotal: expectedOutcome(logs.orders).processed + expectedOutcome(logs.payments).processed,
        auditItems: expectedOutcome(logs.audit).processed,
        orders,
        notifications: downstream.applications.map((application) => ({
          status: 'COMPLETED',
          notificationId: application.notificationId,
        })),
      },
      deadLetters,
      downstream,
    },
  };
}

/** Calls `post` as the notifier does for the payment log: once per processed line, twice for a retried one. */
function notifyAsTheStorySays(log: SampleLog, post: (payment: string, body: string) => void): void {
  log.roles.forEach((role, index) => {
    if (role.kind !== 'first' && role.kind !== 'retried') return;
    const { body } = log.entries[index]!;
    const { paymentId, status } = JSON.parse(body) as { paymentId: string; status: string };
    post(`${paymentId}:${status}`, body);
    if (role.kind === 'retried') post(`${paymentId}:${status}`, body);
  });
}
