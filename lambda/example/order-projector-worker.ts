/**
 * The example app's order projector as a long-running worker (a container, an instance, a
 * laptop): the same handler definition as the Lambda in `order-projector.ts`, polled with
 * `sqs-consumer` in batches. Duplicates are acknowledged, transient failures come back after a
 * backoff, malformed events are dead-lettered with their reason, FIFO groups keep their order,
 * and the visibility of a batch is extended while it runs.
 *
 * Only this module loads the worker adapter (and `sqs-consumer`, an optional peer dependency);
 * the Lambda bundle built from `order-projector.ts` never contains it.
 *
 * Environment: the Lambda's (`ORDERS_TABLE` and the toolkit's `EO_*` variables) plus
 * `ORDERS_QUEUE_URL`, the queue to consume, and optionally `WORKER_VISIBILITY_TIMEOUT_SECONDS`
 * (default 60). Run it with `npx tsx lambda/example/order-projector-worker.ts`; SIGTERM or
 * SIGINT stops it after the batch in progress.
 */
import { SQSClient } from '@aws-sdk/client-sqs';
import { EffectivelyOnceError } from 'effectively-once';
import { createSqsWorker, type SqsWorker } from 'effectively-once/worker';
import { type HandlerEnvironment, orderProjectorDefinition } from './order-projector';

/** Visibility timeout of received messages, extended while a batch runs. */
const DEFAULT_VISIBILITY_TIMEOUT_SECONDS = 60;

/** Creates (does not start) the order projector worker from `env`; bad settings throw `INVALID_OPTIONS`. */
export function createOrderProjectorWorker(
  env: HandlerEnvironment = process.env,
  sqs: SQSClient = new SQSClient({}),
): SqsWorker {
  const definition = orderProjectorDefinition(env);
  const queueUrl = env.ORDERS_QUEUE_URL;
  if (queueUrl === undefined || queueUrl.trim() === '') {
    throw new EffectivelyOnceError(
      'INVALID_OPTIONS',
      `Expected environment variable \`ORDERS_QUEUE_URL\` to be set, got \`${String(queueUrl)}\``,
    );
  }
  const visibility = env.WORKER_VISIBILITY_TIMEOUT_SECONDS;
  if (visibility !== undefined && visibility !== '' && !/^\d+$/.test(visibility)) {
    throw new EffectivelyOnceError(
      'INVALID_OPTIONS',
      `Expected environment variable \`WORKER_VISIBILITY_TIMEOUT_SECONDS\` to be a positive integer, got \`${visibility}\``,
    );
  }
  return createSqsWorker(definition, {
    sqs,
    queueUrl,
    // The adapter checks the range (1 to 43,200).
    visibilityTimeoutSeconds: visibility ? Number(visibility) : DEFAULT_VISIBILITY_TIMEOUT_SECONDS,
  });
}

/** Starts the worker and stops it gracefully on SIGTERM or SIGINT (exit code 0). */
export function runOrderProjectorWorker(env: HandlerEnvironment = process.env): SqsWorker {
  const worker = createOrderProjectorWorker(env);
  worker.start();
  const stop = () => {
    void worker.stop().then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  return worker;
}

if (require.main === module) runOrderProjectorWorker();
