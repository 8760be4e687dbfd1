/**
 * The same handler definition as the Lambda in `worker-order-projector.ts`, run as a
 * long-running worker (a container, an EC2 instance, a laptop): `sqs-consumer` polls the queue
 * in batches, the toolkit deduplicates exactly as the Lambda does, the visibility of a batch is
 * extended while it runs, and failures come back after a backoff.
 *
 * Run it with `ORDERS_QUEUE_URL=... tsx examples/worker-main.ts`.
 */
import { SQSClient } from '@aws-sdk/client-sqs';
import { createSqsWorker, type SqsWorker } from 'effectively-once/worker';
import { orderProjector } from './worker-order-projector';

/** Starts the worker on `queueUrl` and stops it gracefully on SIGTERM or SIGINT. */
export function startWorker(queueUrl: string): SqsWorker {
  const worker = createSqsWorker(orderProjector, {
    sqs: new SQSClient({}),
    queueUrl,
    // Extended every 20 s while a batch runs, so a slow batch is never delivered twice.
    visibilityTimeoutSeconds: 60,
    heartbeatIntervalSeconds: 20,
    // Failed messages come back after 1, 2, 4, ... seconds (at most 5 minutes) by default;
    // here a fixed 10 seconds.
    retryDelaySeconds: 10,
  });
  worker.start();
  const stop = () => void worker.stop().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  return worker;
}

if (require.main === module) {
  const queueUrl = process.env.ORDERS_QUEUE_URL;
  if (!queueUrl) throw new Error('Set ORDERS_QUEUE_URL to the queue to consume');
  startWorker(queueUrl);
}
