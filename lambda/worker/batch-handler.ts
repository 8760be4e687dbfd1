/**
 * The `handleMessageBatch` of an `sqs-consumer` worker, built from the same options object as
 * `createSqsHandler`: received messages become Lambda-shaped records, the core batch processor
 * decides each outcome, and its partial batch response becomes the worker's answer. Messages
 * to acknowledge are returned (`sqs-consumer` deletes them); messages to retry get their
 * visibility timeout set to the retry delay, so they come back without waiting for the whole
 * visibility timeout.
 *
 * This module needs `@aws-sdk/client-sqs` only, not `sqs-consumer`: use it with a `Consumer`
 * you build yourself, or let `createSqsWorker` build one.
 */
import { ChangeMessageVisibilityBatchCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';
import { EffectivelyOnceError } from '../core/errors';
import { createJsonLogger, createLevelLog, type LogEntry, type Logger, type LogLevel } from '../core/logger';
import type { ModeDefaults } from '../core/mode';
import type { SqsBatchResponse, SqsRecord } from '../sqs/sqs-event';
import {
  createSqsHandlerWithDefaults,
  resolveSqsHandlerOptions,
  type SqsHandlerOptions,
} from '../sqs/sqs-handler';
import { clampVisibilityTimeout, type RetryDelay, resolveRetryDelay } from './retry-delay';
import { recordSourceOf, toSqsRecord } from './sqs-record';

/** Options of {@link createWorkerBatchHandler}: where the messages come from. */
export interface WorkerBatchHandlerOptions {
  /** The SQS client, created once (also used by the worker to receive and delete). */
  readonly sqs: SQSClient;
  /** URL of the queue the messages were received from. */
  readonly queueUrl: string;
  /**
   * Seconds a message reported for retry stays hidden before it comes back: a number, or a
   * function of the record (for example of its `ApproximateReceiveCount`). `0` returns it at once.
   * @default 1, 2, 4, ... seconds by receive count, at most 300 (`defaultRetryDelay`)
   */
  readonly retryDelaySeconds?: number | RetryDelay;
}

/** The batch handler `sqs-consumer` calls: resolves with the messages to acknowledge (delete). */
export type MessageBatchHandler = (messages: Message[]) => Promise<Message[]>;

/** One message to hand back to the queue, and for how long it stays hidden first. */
export interface RetryPlan {
  /** The message to make visible again. */
  readonly message: Message;
  /** Its new visibility timeout, seconds. */
  readonly delaySeconds: number;
}

/** What to do with each message of a batch after the core has answered. */
export interface BatchPlan {
  /** Messages to acknowledge: processed, duplicates, and permanent failures sent to the dead-letter queue. */
  readonly acknowledge: Message[];
  /** Messages to retry: transient failures, blocked FIFO successors, permanent failures left for redrive. */
  readonly retry: RetryPlan[];
}

/**
 * Splits a batch by the core's partial batch response: every message whose id is reported
 * is retried with its delay; every other message is acknowledged. Messages that could not be
 * converted (`unconvertible`) are retried too, never acknowledged unseen. A delay function that
 * throws, or returns something unusable, means `0`.
 */
export function planBatch(
  messages: readonly Message[],
  records: readonly (SqsRecord | undefined)[],
  response: SqsBatchResponse,
  retryDelay: RetryDelay,
): BatchPlan {
  const failed = new Set(response.batchItemFailures.map((failure) => failure.itemIdentifier));
  const plan: BatchPlan = { acknowledge: [], retry: [] };
  messages.forEach((message, index) => {
    const record = records[index];
    if (record !== undefined && !failed.has(record.messageId)) {
      plan.acknowledge.push(message);
      return;
    }
    let delay = 0;
    try {
      delay = record === undefined ? 0 : clampVisibilityTimeout(retryDelay(record));
    } catch {
      // A failing delay function must not keep the message from coming back.
    }
    plan.retry.push({ message, delaySeconds: delay });
  });
  return plan;
}

/** SQS accepts at most 10 entries per batch request. */
const MAX_BATCH_ENTRIES = 10;

/** Logs through the options' logger at their level; a failing logger changes nothing. */
export function createWorkerLog(options: {
  readonly logger?: Logger;
  readonly logLevel?: LogLevel;
}): (entry: LogEntry) => void {
  return createLevelLog(options.logger ?? createJsonLogger(), options.logLevel ?? 'info');
}

/**
 * Sets the visibility timeout of each planned message to its delay (`ChangeMessageVisibilityBatch`,
 * ten at a time). Never throws: a message whose change failed comes back when its current
 * visibility timeout ends instead, which is logged.
 */
export async function handBack(
  sqs: SQSClient,
  queueUrl: string,
  retry: readonly RetryPlan[],
  log: (entry: LogEntry) => void,
  consumer: string,
): Promise<void> {
  for (let start = 0; start < retry.length; start += MAX_BATCH_ENTRIES) {
    const chunk = retry.slice(start, start + MAX_BATCH_ENTRIES);
    const entries = chunk.map(({ message, delaySeconds }, index) => ({
      Id: `m${start + index}`,
      ReceiptHandle: message.ReceiptHandle,
      VisibilityTimeout: delaySeconds,
    }));
    let failedIds: string[];
    let errorName: string | undefined;
    try {
      const { Failed = [] } = await sqs.send(
        new ChangeMessageVisibilityBatchCommand({ QueueUrl: queueUrl, Entries: entries }),
      );
      failedIds = Failed.map((failure) => failure.Id ?? '');
    } catch (error) {
      failedIds = entries.map((entry) => entry.Id);
      errorName = (error as Error | undefined)?.name;
    }
    for (const id of failedIds) {
      const planned = chunk[Number(id.slice(1)) - start];
      log({
        level: 'warn',
        message:
          'Changing the visibility timeout failed; the message comes back when its visibility timeout ends',
        consumer,
        messageId: planned?.message.MessageId,
        ...(errorName === undefined ? {} : { errorName }),
      });
    }
  }
}

/**
 * Creates the `handleMessageBatch` function of an `sqs-consumer` `Consumer` from the same
 * options as `createSqsHandler` (consumer, dedup key, mode, store, dead letters, ...).
 * Outcomes are those of the Lambda handler: duplicates are acknowledged; transient failures
 * and the later messages of a failed FIFO group are handed back to the queue after their retry
 * delay; permanent failures are dead-lettered with their reason (`deadLetter: 'direct'`) or
 * handed back until the queue's redrive policy moves them (`'redrive'`).
 *
 * Receive with every attribute (`RECEIVE_ALL_ATTRIBUTES`), or FIFO group order and key
 * sources that read attributes will not see them. Options are validated here; a bad option
 * throws `INVALID_OPTIONS`.
 *
 * @example
 * const consumer = Consumer.create({
 *   queueUrl,
 *   sqs,
 *   batchSize: 10,
 *   attributeNames: ['All'],
 *   messageSystemAttributeNames: ['All'],
 *   messageAttributeNames: ['All'],
 *   handleMessageBatch: createWorkerBatchHandler(orderProjector, { sqs, queueUrl }),
 * });
 * consumer.start();
 */
export function createWorkerBatchHandler<TBody = unknown, TStore = unknown>(
  given: SqsHandlerOptions<TBody, TStore>,
  worker: WorkerBatchHandlerOptions,
): MessageBatchHandler {
  return createWorkerBatchHandlerWithDefaults(given, worker, {});
}

/**
 * `createWorkerBatchHandler` with mode defaults of the worker's own (`createSqsWorker`'s lease
 * from its visibility timeout), which win over the construct's `EO_LEASE_MILLIS`.
 */
export function createWorkerBatchHandlerWithDefaults<TBody, TStore>(
  given: SqsHandlerOptions<TBody, TStore>,
  worker: WorkerBatchHandlerOptions,
  modeDefaults: ModeDefaults,
): MessageBatchHandler {
  const { sqs, queueUrl } = validateWorkerBatchOptions(worker);
  // FIFO or not by the queue's name, as for a Lambda record: a fair queue's group id is no order.
  const source = recordSourceOf(queueUrl);
  const retryDelay = resolveRetryDelay(worker.retryDelaySeconds);
  // The construct's `EO_*` settings, resolved once, so the logs name the same consumer.
  const options = resolveSqsHandlerOptions(given);
  const processBatch = createSqsHandlerWithDefaults(options, modeDefaults);
  const log = createWorkerLog(options);
  // Checked by `createSqsHandler` above.
  const consumer = options.consumer as string;

  return async (messages) => {
    const records = messages.map((message) => {
      try {
        return toSqsRecord(message, source);
      } catch {
        return undefined;
      }
    });
    const present = records.filter((record): record is SqsRecord => record !== undefined);
    const response =
      present.length === 0 ? { batchItemFailures: [] } : await processBatch({ Records: present });
    const plan = planBatch(messages, records, response, retryDelay);
    // Handed back before sqs-consumer deletes the acknowledged ones: a FIFO queue still holds
    // the group back until those are deleted, so order is kept.
    if (plan.retry.length > 0) await handBack(sqs, queueUrl, plan.retry, log, consumer);
    return plan.acknowledge;
  };
}

/** Checks the options shared by the batch handler and the worker. */
export function validateWorkerBatchOptions<T extends WorkerBatchHandlerOptions>(worker: T): T {
  const given = worker ?? ({} as T);
  if (typeof given.sqs?.send !== 'function') {
    throw new EffectivelyOnceError(
      'INVALID_OPTIONS',
      `Expected \`sqs\` to be an SQSClient, got \`${typeof given.sqs}\``,
    );
  }
  if (typeof given.queueUrl !== 'string' || !/^https?:\/\//.test(given.queueUrl)) {
    throw new EffectivelyOnceError(
      'INVALID_OPTIONS',
      `Expected \`queueUrl\` to be a queue URL, got \`${String(given.queueUrl)}\``,
    );
  }
  return given;
}
