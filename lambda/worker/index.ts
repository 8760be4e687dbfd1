/**
 * effectively-once for long-running SQS workers (`sqs-consumer`). A separate entry point: it
 * loads `sqs-consumer` (an optional peer dependency), so the Lambda handler never bundles it.
 *
 * @example
 * import { createSqsWorker } from 'effectively-once/worker';
 *
 * @module effectively-once/worker
 */
export {
  type BatchPlan,
  createWorkerBatchHandler,
  type MessageBatchHandler,
  planBatch,
  type RetryPlan,
  type WorkerBatchHandlerOptions,
} from './batch-handler';
export {
  DEFAULT_MAX_RETRY_DELAY_SECONDS,
  defaultRetryDelay,
  MAX_VISIBILITY_TIMEOUT_SECONDS,
  type RetryDelay,
  receiveCountOf,
} from './retry-delay';
export { RECEIVE_ALL_ATTRIBUTES, type RecordSource, recordSourceOf, toSqsRecord } from './sqs-record';
export { createSqsWorker, type SqsWorker, type SqsWorkerOptions } from './sqs-worker';
