/**
 * The sample message logs of the main job and what each line stands for. The logs are JSON Lines
 * files in the replay tool's `--log` format (`test/fixtures/order-log.jsonl` for the FIFO order
 * queue, `test/fixtures/audit-log.jsonl` for the standard audit queue,
 * `test/fixtures/payment-log.jsonl` for the standard payment queue); this module pairs every line
 * with its role in the story, checks the files against the story, and derives every expected
 * count from it.
 *
 * How the example handlers key messages decides what counts as a duplicate:
 * - the order projector keys an order event by `orderId` + `status` (a natural key), so the same
 *   order event sent again is a duplicate whatever its SQS message id or deduplication id;
 * - the audit recorder keys a CloudEvent by `source` + `id`;
 * - the payment notifier keys a payment event by `paymentId` + `status`, and passes a key derived
 *   from it downstream as `Idempotency-Key`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type LogEntry, parseLog } from '../../cli/replay/log';

/** The role of one log line. */
export type LineRole =
  /** The first send of a business event: processed once, its effects written. */
  | { readonly kind: 'first' }
  /**
   * A FIFO resend with the deduplication id of line `of`, inside SQS's five-minute window (a
   * producer retrying a send that timed out): the broker accepts it and never delivers it.
   */
  | { readonly kind: 'broker-resend'; readonly of: number }
  /**
   * The body of line `of` sent again as a new SQS message (a producer resend; on a FIFO queue with
   * a new deduplication id, as a retry after the five-minute window gets): it reaches the
   * consumer, whose inbox recognises the dedup key and writes nothing.
   */
  | { readonly kind: 'producer-resend'; readonly of: number }
  /**
   * A first send whose first attempt fails transiently downstream: the service answers `status`
   * without applying the notification (`applied: false`), or applies it and its answer is lost
   * (`applied: true`). The consumer releases its claim and reports a batch item failure; SQS
   * delivers the message again after its visibility timeout, and that delivery completes it,
   * calling downstream with the same `Idempotency-Key`.
   */
  | { readonly kind: 'retried'; readonly status: number; readonly applied: boolean }
  /** A message that can never succeed: dead-lettered with `code` and a reason containing `reason`. */
  | { readonly kind: 'poison'; readonly code: string; readonly reason: string };

/** Which consumer a sample log feeds. */
export type SampleLogName = 'orders' | 'audit' | 'payments';

/** Every sample log, in the order the main job presents them. */
export const SAMPLE_LOG_NAMES: readonly SampleLogName[] = Object.freeze(['orders', 'audit', 'payments']);

/** A sample log with its story. */
export interface SampleLog {
  readonly name: SampleLogName;
  /** Path of the JSON Lines file. */
  readonly file: string;
  /** The parsed lines, in order. */
  readonly entries: readonly LogEntry[];
  /** Whether the log feeds a FIFO queue (its lines carry group and deduplication ids). */
  readonly fifo: boolean;
  /** The role of each line (index 0 is line 1). */
  readonly roles: readonly LineRole[];
  /**
   * Lines whose message is delivered to the consumer a second time after it was processed (same
   * SQS message id, receive count 2), as when a function commits but its batch is not deleted.
   */
  readonly redeliver: readonly number[];
  /** Names a line by its business key (never by its body), for output. */
  describe(line: number): string;
}

/** What one consumer should see, derived from a log's story. */
export interface ExpectedOutcome {
  readonly sent: number;
  /** FIFO resends within the deduplication window. */
  readonly brokerSuppressed: number;
  /** Messages SQS delivers: sent minus broker-suppressed. */
  readonly delivered: number;
  /** Messages delivered once more after processing. */
  readonly redelivered: number;
  /**
   * Messages whose first delivery failed transiently (reported as a batch item failure) and
   * which SQS delivered again after the visibility timeout.
   */
  readonly retried: number;
  /** Messages whose effects were committed: one per business event. */
  readonly processed: number;
  /** Deliveries the inbox acknowledged without writing: producer resends and redeliveries. */
  readonly duplicates: number;
  readonly deadLetters: number;
}

const ORDER_ROLES: readonly LineRole[] = [
  { kind: 'first' }, // 1  o-1001 PLACED
  { kind: 'first' }, // 2  o-1002 PLACED
  { kind: 'first' }, // 3  o-1001 PAID
  { kind: 'broker-resend', of: 2 }, // 4  o-1002 PLACED, same deduplication id
  { kind: 'producer-resend', of: 3 }, // 5  o-1001 PAID, new deduplication id
  { kind: 'first' }, // 6  o-1003 PLACED
  { kind: 'poison', code: 'MALFORMED_BODY', reason: '`status` must be a non-empty string' }, // 7  o-1004, no status
  { kind: 'first' }, // 8  o-1002 PAID
  { kind: 'first' }, // 9  o-1001 SHIPPED
  { kind: 'producer-resend', of: 6 }, // 10 o-1003 PLACED, new deduplication id
  { kind: 'broker-resend', of: 1 }, // 11 o-1001 PLACED, same deduplication id
];

const AUDIT_ROLES: readonly LineRole[] = [
  { kind: 'first' }, // 1 aud-1
  { kind: 'first' }, // 2 aud-2
  { kind: 'first' }, // 3 aud-3
  { kind: 'producer-resend', of: 1 }, // 4 aud-1 again
  { kind: 'first' }, // 5 aud-4
  { kind: 'producer-resend', of: 3 }, // 6 aud-3 again
  { kind: 'first' }, // 7 aud-5
];

const PAYMENT_ROLES: readonly LineRole[] = [
  { kind: 'first' }, // 1 pay-2001 AUTHORIZED
  { kind: 'first' }, // 2 pay-2002 AUTHORIZED
  { kind: 'first' }, // 3 pay-2001 CAPTURED
  { kind: 'producer-resend', of: 1 }, // 4 pay-2001 AUTHORIZED again
  { kind: 'retried', status: 503, applied: false }, // 5 pay-2003 AUTHORIZED, downstream unavailable once
  { kind: 'retried', status: 504, applied: true }, // 6 pay-2002 CAPTURED, applied but the answer lost once
  { kind: 'poison', code: 'MALFORMED_BODY', reason: '`amount` must be an integer' }, // 7 pay-2004, amount "12.50"
  { kind: 'producer-resend', of: 3 }, // 8 pay-2001 CAPTURED again
];

/** The fixture directory holding the sample logs. */
export function sampleLogDir(root: string): string {
  return join(root, 'test', 'fixtures');
}

/**
 * Reads the three sample logs and checks each against its story (see {@link createSampleLog}).
 *
 * @throws Error naming the line when a file and its story disagree, or a file is not a valid log.
 */
export function loadSampleLogs(root: string): {
  readonly orders: SampleLog;
  readonly audit: SampleLog;
  readonly payments: SampleLog;
} {
  const dir = sampleLogDir(root);
  const read = (file: string) => ({ file: join(dir, file), text: readFileSync(join(dir, file), 'utf8') });
  return {
    orders: createSampleLog({
      name: 'orders',
      ...read('order-log.jsonl'),
      roles: ORDER_ROLES,
      redeliver: [3],
      label: (body) => {
        const status = typeof body.status === 'string' ? body.status : 'without a status';
        return `order ${String(body.orderId)} ${status}`;
      },
    }),
    audit: createSampleLog({
      name: 'audit',
      ...read('audit-log.jsonl'),
      roles: AUDIT_ROLES,
      redeliver: [2],
      label: (body) => `audit event ${String(body.id)} (${String(body.type)})`,
    }),
    payments: createSampleLog({
      name: 'payments',
      ...read('payment-log.jsonl'),
      roles: PAYMENT_ROLES,
      redeliver: [1],
      label: (body) => `payment ${String(body.paymentId)} ${String(body.status)}`,
    }),
  };
}

/** What {@link createSampleLog} pairs: a log's text and its story. */
export interface SampleLogSource {
  readonly name: SampleLogName;
  /** Path of the file, for messages. */
  readonly file: string;
  /** The JSON Lines text. */
  readonly text: string;
  /** One role per message, in order. */
  readonly roles: readonly LineRole[];
  /** Lines delivered once more after processing; each must be a first send. */
  readonly redeliver: readonly number[];
  /** Names a parsed body by its business key, for output (see {@link SampleLog.describe}). */
  readonly label: (body: Record<string, unknown>) => string;
}

/**
 * Parses a log and checks it against its story: one role per message; resends repeat the body of
 * an earlier line they name; broker resends reuse its deduplication id, producer resends on a
 * FIFO queue do not; only first sends are redelivered; and a line that fails transiently is
 * never resent (the resend could take its place, and the counts would depend on timing).
 *
 * @throws Error naming the file and line when the text and the story disagree, or the text is not a valid log.
 */
export function createSampleLog(source: SampleLogSource): SampleLog {
  const { name, file, roles, redeliver, label } = source;
  const entries = parseLog(source.text).map((entry, index) => ({ ...entry, line: index + 1 }));
  const problem = (line: number, what: string) => new Error(`${file} line ${line}: ${what}`);
  if (entries.length !== roles.length) {
    throw new Error(
      `${file}: expected ${roles.length} messages (one per role of the story), got ${entries.length}`,
    );
  }
  roles.forEach((role, index) => {
    const entry = entries[index]!;
    if (role.kind !== 'broker-resend' && role.kind !== 'producer-resend') return;
    const original = entries[role.of - 1];
    if (!original || role.of >= entry.line)
      throw problem(entry.line, `repeats line ${role.of}, which does not precede it`);
    if (original.body !== entry.body) throw problem(entry.line, `expected the body of line ${role.of}`);
    const sameId = entry.deduplicationId === original.deduplicationId;
    if (role.kind === 'broker-resend' && (!sameId || entry.deduplicationId === undefined)) {
      throw problem(entry.line, `expected the deduplication id of line ${role.of}`);
    }
    if (role.kind === 'producer-resend' && entry.deduplicationId !== undefined && sameId) {
      throw problem(entry.line, `expected a deduplication id other than line ${role.of}'s`);
    }
  });
  roles.forEach((role, index) => {
    if (role.kind !== 'retried') return;
    const resentBy = roles.findIndex(
      (other) =>
        (other.kind === 'producer-resend' || other.kind === 'broker-resend') && other.of === index + 1,
    );
    if (resentBy !== -1) throw problem(resentBy + 1, `resends line ${index + 1}, which fails transiently`);
  });
  for (const line of redeliver) {
    if (roles[line - 1]?.kind !== 'first')
      throw problem(line, 'only a processed first send can be redelivered');
  }
  return {
    name,
    file,
    fifo: entries.some((entry) => entry.groupId !== undefined),
    entries,
    roles,
    redeliver,
    describe(line) {
      const entry = entries[line - 1];
      if (!entry) return `line ${line}`;
      try {
        const body: unknown = JSON.parse(entry.body);
        return typeof body === 'object' && body !== null
          ? label(body as Record<string, unknown>)
          : 'not an object';
      } catch {
        return 'not JSON';
      }
    },
  };
}

/** The counts one consumer should report for a run of `log` (with its redeliveries). */
export function expectedOutcome(log: SampleLog): ExpectedOutcome {
  const count = (kind: LineRole['kind']) => log.roles.filter((role) => role.kind === kind).length;
  const sent = log.entries.length;
  const brokerSuppressed = count('broker-resend');
  return {
    sent,
    brokerSuppressed,
    delivered: sent - brokerSuppressed,
    redelivered: log.redeliver.length,
    retried: count('retried'),
    processed: count('first') + count('retried'),
    duplicates: count('producer-resend') + log.redeliver.length,
    deadLetters: count('poison'),
  };
}

/** Every delivery a consumer sees for a run of `log`: SQS's, the redeliveries and the retries. */
export function expectedDeliveries(log: SampleLog): number {
  const expected = expectedOutcome(log);
  return expected.delivered + expected.redelivered + expected.retried;
}

/**
 * The `paymentId:status` of every payment status the payment log leads to notify, sorted: one per
 * processed line (first sends and retried ones).
 */
export function expectedNotifications(log: SampleLog): readonly string[] {
  return log.roles
    .flatMap((role, index) => {
      if (role.kind !== 'first' && role.kind !== 'retried') return [];
      const body = JSON.parse(log.entries[index]!.body) as { paymentId: string; status: string };
      return [`${body.paymentId}:${body.status}`];
    })
    .sort();
}

/** A transient downstream failure of the story: the shape of `DownstreamFailure`, with its line. */
export interface StoryFailure {
  readonly line: number;
  /** `paymentId:status` of the line. */
  readonly payment: string;
  readonly status: number;
  readonly applied: boolean;
}

/** The downstream failures a log's `retried` lines stand for. */
export function downstreamFailures(log: SampleLog): readonly StoryFailure[] {
  return log.roles.flatMap((role, index) => {
    if (role.kind !== 'retried') return [];
    const body = JSON.parse(log.entries[index]!.body) as { paymentId: string; status: string };
    return [
      {
        line: index + 1,
        payment: `${body.paymentId}:${body.status}`,
        status: role.status,
        applied: role.applied,
      },
    ];
  });
}

/** The poison lines of a log, with the code and reason each must be dead-lettered with. */
export function poisonLines(
  log: SampleLog,
): readonly { readonly line: number; readonly code: string; readonly reason: string }[] {
  return log.roles.flatMap((role, index) =>
    role.kind === 'poison' ? [{ line: index + 1, code: role.code, reason: role.reason }] : [],
  );
}

/** The order items the order log leaves: per order, the status and amount of its last processed event. */
export function expectedOrders(
  log: SampleLog,
): ReadonlyMap<string, { readonly status: string; readonly amount: number; readonly statuses: number }> {
  const orders = new Map<string, { status: string; amount: number; statuses: number }>();
  log.roles.forEach((role, index) => {
    if (role.kind !== 'first') return;
    const body = JSON.parse(log.entries[index]!.body) as { orderId: string; status: string; amount: number };
    const statuses = (orders.get(body.orderId)?.statuses ?? 0) + 1;
    orders.set(body.orderId, { status: body.status, amount: body.amount, statuses });
  });
  return orders;
}

/** In plain words, what a line of a log is there for. */
export function describeRole(log: SampleLog, line: number): string {
  const role = log.roles[line - 1];
  switch (role?.kind) {
    case 'first':
      return 'first send';
    case 'broker-resend':
      return `resend of line ${role.of} with its deduplication id: the broker drops it`;
    case 'producer-resend':
      return log.entries[line - 1]?.deduplicationId === undefined
        ? `resend of line ${role.of} (a new SQS message): the inbox drops it`
        : `resend of line ${role.of} with a new deduplication id: the inbox drops it`;
    case 'retried':
      return role.applied
        ? `first send; the downstream applies it but its answer is lost (${role.status}): retried with the same key`
        : `first send; the downstream answers ${role.status} once, nothing applied: retried`;
    case 'poison':
      return `poison (${role.code}): to the dead-letter queue`;
    default:
      return 'not in the story';
  }
}
