/**
 * `createSqsWorker`: a long-running SQS worker (`sqs-consumer` in batch mode) running the same
 * handler definition as a Lambda built with `createSqsHandler`. The only module that loads
 * `sqs-consumer` (an optional peer dependency); never imported by the Lambda entry points.
 */
import { Consumer } from 'sqs-consumer';
import { expectOption, isEffectivelyOnceError } from '../core/errors';
import type { ModeDefaults } from '../core/mode';
import { errorMessageField } from '../core/outcome';
import { resolveSqsHandlerOptions, type SqsHandlerOptions } from '../sqs/sqs-handler';
import {
  createWorkerBatchHandlerWithDefaults,
  createWorkerLog,
  handBack,
  validateWorkerBatchOptions,
  type WorkerBatchHandlerOptions,
} from './batch-handler';
import { MAX_VISIBILITY_TIMEOUT_SECONDS } from './retry-delay';

/** Options of {@link createSqsWorker}: the queue and how it is polled. */
export interface SqsWorkerOptions extends WorkerBatchHandlerOptions {
  /**
   * Messages per receive, 1 to 10.
   * @default 10
   */
  readonly batchSize?: number;
  /**
   * Long-poll wait per receive, 0 to 20 seconds.
   * @default 20
   */
  readonly waitTimeSeconds?: number;
  /**
   * Visibility timeout of received messages, and the length of each extension while a batch
   * runs. In two-phase mode it is also the default `leaseMillis`, extended by the lease
   * heartbeat while the visibility heartbeat runs (unless the options set `heartbeat`).
   * @default 30
   */
  readonly visibilityTimeoutSeconds?: number;
  /**
   * Seconds between visibility extensions while a batch runs (the heartbeat); must be less than
   * `visibilityTimeoutSeconds`. `false` turns the heartbeat off: a batch must then finish within
   * the visibility timeout, or its messages are delivered again while it runs (duplicates are
   * still caught, in-flight ones retried).
   * @default a third of `visibilityTimeoutSeconds`, at most 10 (none for a 1-second timeout)
   */
  readonly heartbeatIntervalSeconds?: number | false;
  /**
   * Pause between one batch and the next receive.
   * @default 0
   */
  readonly pollingWaitTimeMs?: number;
}

/** A running (or stopped) worker. */
export interface SqsWorker {
  /** The `sqs-consumer` instance, for its events (`message_processed`, `empty`, ...). */
  readonly consumer: Consumer;
  /** Starts polling. Calling it again while running does nothing. */
  start(): void;
  /**
   * Stops polling and resolves once the receive in flight has returned (an idle long poll ends
   * within `waitTimeSeconds`) and the batch in progress, if any, has finished and its
   * acknowledged messages are deleted. Messages a receive returns while stopping are handed back
   * to the queue untouched (visibility 0), so after `stop` resolves the worker holds none.
   */
  stop(): Promise<void>;
}

function whole(field: string, value: unknown, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  expectOption(
    Number.isSafeInteger(value) && (value as number) >= min && (value as number) <= max,
    field,
    `an integer from ${min} to ${max}`,
    value,
  );
  return value as number;
}

const SETTLE_CHECK_MILLIS = 10;

/**
 * The mode defaults of a worker, which has no invocation time to derive a lease from: the lease
 * of a two-phase claim is the visibility timeout, so a crashed worker's claim ends when its
 * messages come back and the first redelivery takes it over (a 15-minute lease against a
 * 30-second visibility timeout would see every receive answered in flight and the message
 * dead-lettered first); and while the visibility heartbeat keeps a batch hidden, the lease
 * heartbeat keeps its claims held. Options the mode sets win over these.
 */
function workerModeDefaults(visibilityTimeoutSeconds: number, visibilityHeartbeat: boolean): ModeDefaults {
  return { leaseMillis: visibilityTimeoutSeconds * 1000, heartbeat: visibilityHeartbeat };
}

/**
 * What is logged of an error `sqs-consumer` reports: its class, the AWS error name and HTTP
 * status it carries (`SQSError`), and the class and toolkit code of its cause. Never its
 * message: `sqs-consumer` quotes the message of the error it wraps (`Unexpected message batch
 * handler failure: ...`), and that may quote a message body.
 */
function describeWorkerError(error: unknown): Record<string, string | number> {
  const { name, code, statusCode, cause } = (error ?? {}) as Record<string, unknown>;
  const described: Record<string, string | number> = {};
  const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);
  const set = (field: string, value: string | number | undefined) => {
    if (value !== undefined) described[field] = value;
  };
  set('errorName', text(name) ?? typeof error);
  set('awsErrorName', text(code));
  set('statusCode', typeof statusCode === 'number' ? statusCode : undefined);
  if (typeof cause === 'object' && cause !== null) {
    set('causeName', text((cause as Error).name));
    if (isEffectivelyOnceError(cause)) set('code', cause.code);
  }
  return described;
}

/**
 * Creates a long-running worker that polls `queueUrl` with `sqs-consumer` in batch mode and
 * runs every batch through the same engine as `createSqsHandler(options)`: the same options
 * object, the same outcomes. Duplicates are acknowledged, transient failures come back after
 * their retry delay, permanent failures are dead-lettered with their reason (`deadLetter:
 * 'direct'`) or come back until the redrive policy moves them, FIFO groups keep their order
 * (within a batch by the core; across batches SQS holds a group while one of its messages is in
 * flight), and the visibility of the batch is extended every `heartbeatIntervalSeconds` while
 * it runs.
 *
 * Every attribute is received (`RECEIVE_ALL_ATTRIBUTES`). Options are validated here; a bad
 * option throws `INVALID_OPTIONS`. Errors the consumer reports (a failed receive or delete) are
 * logged through the options' logger at `error` level, by class and code (their message too with
 * `logErrorMessages`). A queue is FIFO when its URL ends in `.fifo`: group ids on a standard
 * (fair) queue keep no order.
 *
 * @example
 * const worker = createSqsWorker(orderProjector, {
 *   sqs: new SQSClient({}),
 *   queueUrl: process.env.ORDERS_QUEUE_URL!,
 *   visibilityTimeoutSeconds: 60,
 *   heartbeatIntervalSeconds: 20,
 * });
 * worker.start();
 * process.once('SIGTERM', () => void worker.stop());
 */
export function createSqsWorker<TBody = unknown, TStore = unknown>(
  given: SqsHandlerOptions<TBody, TStore>,
  worker: SqsWorkerOptions,
): SqsWorker {
  const { sqs, queueUrl } = validateWorkerBatchOptions(worker);
  const visibilityTimeout = whole(
    'visibilityTimeoutSeconds',
    worker.visibilityTimeoutSeconds,
    30,
    1,
    MAX_VISIBILITY_TIMEOUT_SECONDS,
  );
  // A heartbeat must come before the visibility timeout ends; none fits in one second.
  const heartbeat =
    worker.heartbeatIntervalSeconds === false ||
    (worker.heartbeatIntervalSeconds === undefined && visibilityTimeout < 2)
      ? undefined
      : whole(
          'heartbeatIntervalSeconds',
          worker.heartbeatIntervalSeconds,
          Math.min(10, Math.max(1, Math.floor(visibilityTimeout / 3))),
          1,
          visibilityTimeout - 1,
        );
  const batchSize = whole('batchSize', worker.batchSize, 10, 1, 10);
  const waitTimeSeconds = whole('waitTimeSeconds', worker.waitTimeSeconds, 20, 0, 20);
  const pollingWaitTimeMs = whole(
    'pollingWaitTimeMs',
    worker.pollingWaitTimeMs,
    0,
    0,
    Number.MAX_SAFE_INTEGER,
  );
  // The construct's `EO_*` settings, resolved once, so the logs name the same consumer. The
  // worker's lease follows its visibility timeout, over the construct's `EO_LEASE_MILLIS` (the
  // Lambda's timeout).
  const options = resolveSqsHandlerOptions(given);
  const handleBatch = createWorkerBatchHandlerWithDefaults(
    options,
    worker,
    workerModeDefaults(visibilityTimeout, heartbeat !== undefined),
  );
  const log = createWorkerLog(options);
  // Checked by `createWorkerBatchHandler` above.
  const consumerName = options.consumer as string;

  let stopping = false;

  const consumer = Consumer.create({
    queueUrl,
    sqs,
    batchSize,
    waitTimeSeconds,
    pollingWaitTimeMs,
    visibilityTimeout,
    ...(heartbeat === undefined ? {} : { heartbeatInterval: heartbeat }),
    attributeNames: ['All'],
    messageSystemAttributeNames: ['All'],
    messageAttributeNames: ['All'],
    // Group order is the core's job within a batch, and SQS's across batches.
    suppressFifoWarning: true,
    strictReturn: true,
    // Only reached if the engine itself throws: hand the whole batch back at once.
    terminateVisibilityTimeout: true,
    handleMessageBatch: async (messages) => {
      if (stopping) {
        // Received while stopping: hand back untouched so another worker takes them now.
        await handBack(
          sqs,
          queueUrl,
          messages.map((message) => ({ message, delaySeconds: 0 })),
          log,
          consumerName,
        );
        return [];
      }
      return handleBatch(messages);
    },
  });

  const report = (event: string) => (error: Error) => {
    log({
      level: 'error',
      message: `The SQS worker reported an error (${event})`,
      consumer: consumerName,
      queueUrl,
      ...describeWorkerError(error),
      ...errorMessageField(error, options.logErrorMessages),
    });
  };
  // Without an `error` listener an EventEmitter throws, which would end the process.
  consumer.on('error', report('error'));
  consumer.on('processing_error', report('processing_error'));
  consumer.on('timeout_error', report('timeout_error'));

  return {
    consumer,
    start() {
      stopping = false;
      consumer.start();
    },
    async stop() {
      if (!consumer.status.isRunning && !consumer.status.isPolling) return;
      stopping = true;
      // Never aborted: SQS keeps a long poll running after its client gives up, and a message
      // it then takes stays in flight, out of reach, until its visibility timeout ends. Waiting
      // for the receive to return gets such a message, which is handed back at once.
      consumer.stop();
      while (consumer.status.isPolling) {
        await new Promise((resolve) => setTimeout(resolve, SETTLE_CHECK_MILLIS));
      }
    },
  };
}
