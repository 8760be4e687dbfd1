/**
 * The benchmark's one workload, shared by every implementation so they do the same work: an
 * SQS message carries an order status change; the effect is one business item per message,
 * `pk = ORDER#<orderId>#<status>`, in the orders table. The dedup key is the natural key
 * `orderId` + `status`.
 */
import type { SqsBatchResponse, SqsEvent, SqsRecord } from '../lambda';

/** Table names the implementations write to. */
export interface BenchTables {
  /** The toolkit's inbox table (partition key `pk`). */
  readonly inbox: string;
  /** The business table (partition key `pk`). */
  readonly orders: string;
  /** Powertools' idempotency table (partition key `id`). */
  readonly powertools: string;
}

/**
 * Who sent a request: the deduplication layer, or the user's own code. Every implementation
 * gets one DynamoDB client of each role, so their requests can be told apart.
 */
export type ClientRole = 'dedup' | 'business';

/** Default table names (the stub's schemas use these; the emulator run makes unique ones). */
export const DEFAULT_TABLES: BenchTables = {
  inbox: 'bench-inbox',
  orders: 'bench-orders',
  powertools: 'bench-idempotency',
};

/** Environment variables naming the tables in a deployed handler. */
export const TABLE_ENV = {
  inbox: 'BENCH_INBOX_TABLE',
  orders: 'BENCH_ORDERS_TABLE',
  powertools: 'BENCH_IDEMPOTENCY_TABLE',
} as const;

/** The tables named by the environment (a deployed handler reads them at cold start). */
export function tablesFromEnv(env: NodeJS.ProcessEnv = process.env): BenchTables {
  return {
    inbox: env[TABLE_ENV.inbox] ?? DEFAULT_TABLES.inbox,
    orders: env[TABLE_ENV.orders] ?? DEFAULT_TABLES.orders,
    powertools: env[TABLE_ENV.powertools] ?? DEFAULT_TABLES.powertools,
  };
}

/** The key schema of each table, for the stub. */
export function tableSchemas(tables: BenchTables): Record<string, readonly string[]> {
  return { [tables.inbox]: ['pk'], [tables.orders]: ['pk'], [tables.powertools]: ['id'] };
}

/** One order status change, as the producer sends it. */
export interface OrderEvent {
  readonly orderId: string;
  readonly status: string;
  readonly amount: number;
  readonly currency: string;
  readonly occurredAt: string;
  readonly eventId: string;
  /** Makes the user's code throw before it writes anything: the "handler failure" case. */
  readonly simulateFailure?: boolean;
}

/** The business item written for an order event. */
export type OrderItem = Record<string, string | number> & { readonly pk: string };

/** The error the user's code throws for `simulateFailure`. */
export class SimulatedFailure extends Error {
  override readonly name = 'SimulatedFailure';
}

/**
 * The user's business logic, identical in every implementation: validate the event and build
 * the business item; throws for an invalid event or a simulated failure.
 */
export function orderItemOf(event: OrderEvent): OrderItem {
  if (typeof event !== 'object' || event === null) throw new Error('An order event must be an object');
  if (typeof event.orderId !== 'string' || event.orderId === '') throw new Error('`orderId` is required');
  if (typeof event.status !== 'string' || event.status === '') throw new Error('`status` is required');
  if (typeof event.amount !== 'number') throw new Error('`amount` must be a number');
  if (event.simulateFailure) throw new SimulatedFailure('Simulated failure of the user code');
  return {
    pk: `ORDER#${event.orderId}#${event.status}`,
    orderId: event.orderId,
    status: event.status,
    amount: event.amount,
    currency: event.currency,
    occurredAt: event.occurredAt,
    eventId: event.eventId,
  };
}

/** A handler of SQS batches, as every implementation exposes it. */
export type BatchHandler = (event: SqsEvent, context: BenchContext) => Promise<SqsBatchResponse>;

/** The Lambda context the benchmark passes (what both libraries read from it). */
export interface BenchContext {
  readonly functionName: string;
  readonly functionVersion: string;
  readonly invokedFunctionArn: string;
  readonly memoryLimitInMB: string;
  readonly awsRequestId: string;
  readonly logGroupName: string;
  readonly logStreamName: string;
  readonly callbackWaitsForEmptyEventLoop: boolean;
  getRemainingTimeInMillis(): number;
}

/** A context with 60 s left on every call. */
export function benchContext(): BenchContext {
  return {
    functionName: 'bench-consumer',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:bench-consumer',
    memoryLimitInMB: '1024',
    awsRequestId: 'bench-request',
    logGroupName: '/aws/lambda/bench-consumer',
    logStreamName: 'bench',
    callbackWaitsForEmptyEventLoop: false,
    getRemainingTimeInMillis: () => 60_000,
  };
}

/** Fixed base time of every event (the body carries no receive timestamps). */
const OCCURRED_AT = '2026-01-01T00:00:00.000Z';

/** The order event number `n` of a run: distinct keys per run and per `n`. */
export function orderEvent(run: string, n: number, options: { simulateFailure?: boolean } = {}): OrderEvent {
  return {
    orderId: `${run}-${n}`,
    status: 'PAID',
    amount: 1000 + (n % 9000),
    currency: 'EUR',
    occurredAt: OCCURRED_AT,
    eventId: `evt-${run}-${n}`,
    ...(options.simulateFailure ? { simulateFailure: true } : {}),
  };
}

/**
 * An SQS record as Lambda delivers it; `delivery` changes the message id (a producer resend).
 * With `fifo`, the record comes from a FIFO queue (`.fifo` ARN) in message group `fifo.group`.
 */
export function sqsRecordOf(
  body: OrderEvent,
  delivery = 0,
  fifo?: { readonly group: string; readonly sequenceNumber: number },
): SqsRecord {
  const messageId = `${body.eventId}-d${delivery}`;
  return {
    messageId,
    receiptHandle: `rh-${messageId}`,
    body: JSON.stringify(body),
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: '1767225600000',
      SenderId: 'AIDABENCH',
      ApproximateFirstReceiveTimestamp: '1767225600000',
      ...(fifo
        ? {
            MessageGroupId: fifo.group,
            MessageDeduplicationId: messageId,
            SequenceNumber: String(fifo.sequenceNumber).padStart(20, '1'),
          }
        : {}),
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: `arn:aws:sqs:us-east-1:000000000000:bench-orders${fifo ? '.fifo' : ''}`,
    awsRegion: 'us-east-1',
  } as SqsRecord;
}

/**
 * A batch of `size` fresh events numbered from `first`. With `groups`, from a FIFO queue, the
 * events dealt round-robin over that many message groups (as `BatchShape` describes).
 */
export function batchOf(
  run: string,
  first: number,
  size: number,
  options: { delivery?: number; simulateFailure?: boolean; groups?: number } = {},
): SqsEvent {
  const records: SqsRecord[] = [];
  for (let n = first; n < first + size; n++) {
    const fifo =
      options.groups === undefined
        ? undefined
        : { group: `${run}-g${(n - first) % options.groups}`, sequenceNumber: n };
    records.push(sqsRecordOf(orderEvent(run, n, options), options.delivery ?? 0, fifo));
  }
  return { Records: records };
}
