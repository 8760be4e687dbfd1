/**
 * Plain-text output of the main job: aligned tables, check lists and step timings. Pure: returns
 * strings.
 */
import type { Difference } from '../../cli/replay/diff';
import { formatDifferences } from '../../cli/replay/format';
import { type ChainExpectation, type ChainRun, expectedPublishes } from './chain';
import type { Check } from './checks';
import { externalEffectTotals } from './external-effects';
import { bodySha256, type DeadLetter, deliveriesOf } from './observations';
import type { ReplayLogsResult } from './replay-logs';
import {
  describeRole,
  downstreamFailures,
  expectedNotifications,
  expectedOutcome,
  SAMPLE_LOG_NAMES,
  type SampleLog,
  type SampleLogName,
} from './sample-logs';
import type { ExampleObservation, SampleLogs, SampleRun } from './scenario';
import type { StreamProjection, StreamReplay } from './stream-projection';
import type { WorkerSwitchResult } from './worker-switch';

/**
 * Aligns rows into columns two spaces apart, every line indented by `indent`. Numbers read best
 * right-aligned: by default the first column is left-aligned and the others right-aligned;
 * `leftAligned` left-aligns every column.
 */
export function formatTable(
  rows: readonly (readonly string[])[],
  indent = '  ',
  leftAligned = false,
): string {
  const widths: number[] = [];
  for (const row of rows) {
    for (const [index, cell] of row.entries()) widths[index] = Math.max(widths[index] ?? 0, cell.length);
  }
  return rows
    .map(
      (row) =>
        indent +
        row
          .map((cell, index) =>
            index === 0 || leftAligned ? cell.padEnd(widths[index]!) : cell.padStart(widths[index]!),
          )
          .join('  ')
          .trimEnd(),
    )
    .join('\n');
}

/** The lines of each log, by business key and role (never the bodies). */
export function formatLogStory(log: SampleLog, what: string): string {
  const rows = log.entries.map((entry) => [
    `line ${entry.line}`,
    log.describe(entry.line),
    describeRole(log, entry.line),
  ]);
  return `  ${what}: ${log.entries.length} messages\n${formatTable(rows, '    ', true)}`;
}

/** One number of the summary, with the expectation when it differs. */
function cell(actual: number, expected: number): string {
  return actual === expected ? String(actual) : `${actual} (expected ${expected})`;
}

/** The rows of the run summary, per consumer. */
interface SummaryValues {
  readonly sent: number;
  readonly brokerSuppressed: number;
  readonly delivered: number;
  readonly retried: number;
  readonly redelivered: number;
  readonly duplicates: number;
  readonly processed: number;
  readonly deadLetters: number;
}

const CONSUMER_HEADINGS: Readonly<Record<SampleLogName, string>> = {
  orders: '(FIFO, atomic)',
  audit: '(standard, entity)',
  payments: '(standard, two-phase)',
};

/**
 * The summary table of a first run: per consumer and in total, messages sent, suppressed by the
 * broker, delivered, delivered again after a transient failure, redelivered after processing,
 * suppressed by the inbox, processed and dead-lettered; then the external effects, the
 * notifications the downstream service applied (the payment notifier's only).
 *
 * A delivery found in flight elsewhere comes back like a retried one; it is counted in the
 * "delivered again" row and is not a failure, so it is added to that row's expectation.
 */
export function formatRunSummary(logs: SampleLogs, observation: ExampleObservation): string {
  const expected = {} as Record<SampleLogName, SummaryValues>;
  const values = {} as Record<SampleLogName, SummaryValues>;
  for (const name of SAMPLE_LOG_NAMES) {
    const story = expectedOutcome(logs[name]);
    const outcomes = observation.outcomes[name];
    const retried = outcomes.retry + outcomes.inFlight;
    const delivered = deliveriesOf(outcomes) - story.redelivered - retried;
    expected[name] = { ...story, retried: story.retried + outcomes.inFlight };
    values[name] = {
      sent: story.sent,
      brokerSuppressed: story.sent - delivered,
      delivered,
      retried,
      redelivered: story.redelivered,
      duplicates: outcomes.duplicate,
      processed: outcomes.processed,
      deadLetters: observation.deadLetters[name].length,
    };
  }
  const row = (label: string, key: keyof SummaryValues) => [
    label,
    ...SAMPLE_LOG_NAMES.map((name) => cell(values[name][key], expected[name][key])),
    String(SAMPLE_LOG_NAMES.reduce((sum, name) => sum + values[name][key], 0)),
  ];
  const applied = observation.downstream.applications.length;
  return formatTable([
    ['', ...SAMPLE_LOG_NAMES, 'total'],
    ['', ...SAMPLE_LOG_NAMES.map((name) => CONSUMER_HEADINGS[name]), ''],
    row('messages sent', 'sent'),
    row('suppressed by the broker (FIFO dedup)', 'brokerSuppressed'),
    row('delivered by SQS', 'delivered'),
    row('delivered again after a transient failure', 'retried'),
    row('redelivered after processing', 'redelivered'),
    row('suppressed by the inbox (duplicates)', 'duplicates'),
    row('processed (effects committed)', 'processed'),
    row('dead-lettered', 'deadLetters'),
    [
      'external effects (downstream calls applied)',
      '-',
      '-',
      cell(applied, expectedNotifications(logs.payments).length),
      String(applied),
    ],
  ]);
}

/** The effects in the tables and at the downstream service, in plain words. */
export function formatEffects(logs: SampleLogs, observation: ExampleObservation): string {
  const { tables } = observation;
  const orders = [...tables.orders].sort(([a], [b]) => a.localeCompare(b));
  const statuses = orders.reduce((sum, [, order]) => sum + order.statuses, 0);
  const completed = tables.notifications.filter((record) => record.status === 'COMPLETED').length;
  return [
    `  Orders table: ${tables.ordersItems} items (${orders.length} orders + ${statuses} status transitions)`,
    `    ${orders.map(([id, order]) => `${id} ${String(order.status)}`).join(', ')}`,
    `  Inbox table:  ${tables.inboxTotal} records: ${tables.inboxRecords.orders} of the order projector, ` +
      `${tables.inboxRecords.payments} of the payment notifier (${completed} completed, with the downstream's notification id),`,
    `    ${tables.streamInboxRecords} of the order summary projector (the stream consumer, so far); none of the audit recorder's: the audit item is its own marker`,
    `  Audit table:  ${tables.auditItems} items`,
    formatDownstream(logs.payments, observation),
  ].join('\n');
}

/**
 * What the downstream service saw: requests, keys and applications, each notification applied
 * with its id, and how each transient failure ended. Names payments by `paymentId:status` only.
 */
export function formatDownstream(log: SampleLog, observation: ExampleObservation): string {
  const { downstream } = observation;
  const totals = externalEffectTotals(downstream);
  const lines = [
    `  Downstream service: ${totals.requests} requests with ${totals.keys} distinct Idempotency-Keys; ` +
      `${totals.applications} notifications applied, ${totals.replayed} answered from an earlier application, ${totals.failed} failed on purpose`,
    `    ${downstream.applications.map((application) => `${application.payment} → ${application.notificationId}`).join(', ')}`,
  ];
  for (const failure of downstreamFailures(log)) {
    const seen = downstream.requests.filter((request) => request.payment === failure.payment);
    const answers = seen.map((request) => `${request.status} ${request.answer}`).join(', then ');
    lines.push(`    ${failure.payment} (line ${failure.line}): ${answers || 'never called'}`);
  }
  return lines.join('\n');
}

/** The dead letters of each queue, matched to their log lines, with code and reason. */
export function formatDeadLetters(
  logs: SampleLogs,
  run: SampleRun | undefined,
  observation: ExampleObservation,
): string {
  const lines: string[] = [];
  for (const name of SAMPLE_LOG_NAMES) {
    const letters = observation.deadLetters[name];
    if (letters.length === 0) {
      lines.push(`  ${name} dead-letter queue: empty`);
      continue;
    }
    lines.push(`  ${name} dead-letter queue: ${letters.length} message${letters.length === 1 ? '' : 's'}`);
    for (const letter of letters) lines.push(`    ${describeDeadLetter(logs[name], run, letter)}`);
  }
  return lines.join('\n');
}

function describeDeadLetter(log: SampleLog, run: SampleRun | undefined, letter: DeadLetter): string {
  const line = log.entries.find(
    (entry) => run?.sent[log.name].get(entry.line) === letter.sourceMessageId,
  )?.line;
  const source =
    line !== undefined
      ? `line ${line} (${log.describe(line)})`
      : `a replayed copy of ${describeByBody(log, letter)}`;
  return `${source}: ${letter.code ?? 'no code'}: ${letter.reason ?? 'no reason attribute (redriven?)'}`;
}

function describeByBody(log: SampleLog, letter: DeadLetter): string {
  // Hashing the log's bodies matches a dead letter to its line without showing either body.
  const entry = log.entries.find((candidate) => bodySha256(candidate.body) === letter.bodySha256);
  return entry ? `line ${entry.line} (${log.describe(entry.line)})` : 'a message not in the log';
}

/**
 * Checks as PASS/FAIL lines, with what was seen for failures. Unless `verbose`, the PASS lines are
 * folded into one count (every FAIL line stays).
 */
export function formatChecks(checks: readonly Check[], options: { readonly verbose?: boolean } = {}): string {
  const line = (check: Check) =>
    `  ${check.ok ? 'PASS' : 'FAIL'}  ${check.name}${check.ok ? '' : `\n        ${check.detail}`}`;
  if (options.verbose) return checks.map(line).join('\n');
  const passed = checks.filter((check) => check.ok).length;
  const folded = `  PASS  ${passed} of ${checks.length} checks (npm start -- --verbose lists them)`;
  return [...(passed > 0 ? [folded] : []), ...checks.filter((check) => !check.ok).map(line)].join('\n');
}

/** The tables the replay compares (see `replayExample`). */
const REPLAYED_TABLES = 'Orders, Audit, inbox, outbox and Shipments tables';

/** The outcome of a replay: per log and pass, and the differences if any. */
export function formatReplay(replay: ReplayLogsResult): string {
  const lines: string[] = [];
  for (const result of replay.replays) {
    const verdict = (differences: readonly Difference[]) =>
      differences.length === 0 ? 'no change' : `${differences.length} change(s)`;
    lines.push(
      `  ${result.name}: ${result.doubleTap.messages} messages per pass; ` +
        `before the replay vs after pass 1: ${verdict(result.sinceBefore)}; ` +
        `pass 1 vs pass 2: ${verdict(result.doubleTap.differences)}`,
    );
    for (const differences of [result.sinceBefore, result.doubleTap.differences]) {
      if (differences.length > 0) lines.push(indent(formatDifferences(differences), '      '));
    }
  }
  const items = replay.replays
    .at(-1)
    ?.doubleTap.secondSnapshot.reduce((sum, table) => sum + table.items.length, 0);
  lines.push(
    replay.overall.length === 0
      ? `  ${REPLAYED_TABLES} before vs after the whole replay: identical (${items ?? 0} items compared field by field)`
      : `  ${REPLAYED_TABLES} before vs after the whole replay: ${replay.overall.length} change(s)\n${indent(formatDifferences(replay.overall), '      ')}`,
  );
  return lines.join('\n');
}

/** The chain after the sample logs, one line per link: outbox, relay, shipment scheduler, Shipments. */
export function formatChain(expected: ChainExpectation, run: ChainRun): string {
  const { observation } = run;
  const short = (id: string) => `${id.slice(0, 12)}…`;
  const { published, crashes } = observation.relay;
  const shipping = observation.shipping;
  const lines = [
    `  Orders confirmed by the log: ${expected.confirmed.map((order) => `${order.orderId} (line ${order.line})`).join(', ')}.`,
    `  Outbox table: ${observation.outbox.length} OrderConfirmed item(s), committed with the order writes: ` +
      observation.outbox.map((item) => `${String(item.entity)} → ${short(item.id)}`).join(', '),
    `  Relay: ${published.length} publish(es) to the shipment queue (expected ${expectedPublishes(expected)}): ` +
      `${published.map(short).join(', ')}` +
      (crashes.length > 0
        ? `; crashed ${crashes.length}× after publishing ${crashes.map(short).join(', ')}, before its checkpoint, and the stream delivered the batch again`
        : expected.crash
          ? '; it did not crash'
          : ''),
    `  Shipment scheduler: ${shipping.processed} processed, ${shipping.duplicate} duplicate (suppressed by the Shipments item, its own marker), ` +
      `${shipping.permanent} dead-lettered, ${shipping.retry} retried`,
    `  Shipments table: ${observation.shipments.length} item(s): ${observation.shipments.map((item) => item.pk).join(', ')}`,
    run.missing.length === 0
      ? `  The chain settled in ${seconds(run.waitMillis)}.`
      : `  The chain had not completed after ${seconds(run.waitMillis)} (the wait is ${seconds(run.timeoutMillis)}); missing: ${run.missing.join('; ')}`,
  ];
  return lines.join('\n');
}

/** The read model next to what the Orders table implies, one row per status. */
export function formatStreamProjection(projection: StreamProjection): string {
  const statuses = [
    ...new Set([...Object.keys(projection.implied), ...Object.keys(projection.summaries)]),
  ].sort();
  const cell = (summary: { orders: number; amount: number } | undefined) =>
    summary ? `${summary.orders} (${summary.amount})` : '-';
  const rows = [
    ['status', 'OrderSummaries: orders (amount)', 'implied by Orders'],
    ...statuses.map((status) => [
      status,
      cell(projection.summaries[status]),
      cell(projection.implied[status]),
    ]),
  ];
  const { outcomes } = projection;
  return [
    `  The mapping delivered the ${projection.records} records of the Orders stream in ${seconds(projection.waitMillis)}: ` +
      `${outcomes.processed} processed, ${outcomes.duplicate} duplicate, ${outcomes.permanent} dead-lettered, ${outcomes.retry} retried.`,
    formatTable(rows),
  ].join('\n');
}

/** The stream's double tap, in two lines. */
export function formatStreamReplay(replay: StreamReplay): string {
  const { outcomes } = replay;
  const same = JSON.stringify(replay.before) === JSON.stringify(replay.after);
  return [
    `  Re-read ${replay.records} records from TRIM_HORIZON and invoked the projector with them (${replay.batches} batch(es)): ` +
      `${outcomes.duplicate} duplicate, ${outcomes.processed} processed, ${replay.failures.length} batch item failure(s).`,
    same
      ? '  OrderSummaries before vs after the replay: identical. Every counter was incremented once.'
      : `  OrderSummaries before vs after the replay: changed, from ${JSON.stringify(replay.before)} to ${JSON.stringify(replay.after)}`,
  ].join('\n');
}

/** What the order projector did as a worker, in a few lines. */
export function formatWorkerSwitch(result: WorkerSwitchResult): string {
  const { worker } = result;
  const lines = [
    `  Sent ${result.sent} messages; ${result.expectedDeliveries} reached the worker (the broker dropped the resends of a reused id).`,
    `  Worker outcomes: ${worker.processed} processed, ${worker.duplicate} duplicate, ${worker.permanent} dead-lettered, ` +
      `${worker.retry} retried; the Lambda received ${deliveriesOf(result.lambda)} while switched off.`,
    result.differences.length === 0
      ? '  Orders and inbox tables before vs after the worker: identical. Moving the consumer reprocessed nothing.'
      : `  Orders and inbox tables before vs after the worker: ${result.differences.length} change(s)\n${indent(formatDifferences(result.differences), '      ')}`,
  ];
  return lines.join('\n');
}

function indent(text: string, prefix: string): string {
  return text
    .split('\n')
    .map((line) => prefix + line)
    .join('\n');
}

/** One timed step. */
export interface Timing {
  readonly step: string;
  readonly millis: number;
}

/** The step timings and their total. */
export function formatTimings(timings: readonly Timing[], totalMillis: number): string {
  return formatTable([
    ...timings.map(({ step, millis }) => [step, seconds(millis)]),
    ['total', seconds(totalMillis)],
  ]);
}

/** Milliseconds as seconds with one decimal, for example `12.3 s`. */
export function seconds(millis: number): string {
  return `${(millis / 1000).toFixed(1)} s`;
}
