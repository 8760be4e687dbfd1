/**
 * Driving the deployed consumers: sending a log to a queue (keeping each line's SQS message id),
 * delivering a processed message a second time, and waiting for queues to drain. Sending and
 * draining reuse the replay tool's building blocks.
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LambdaClient } from '@aws-sdk/client-lambda';
import { GetQueueAttributesCommand, SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { describeQueue, readQueueCounters } from '../../cli/replay/aws';
import { type QueueCounters, waitForDrain } from '../../cli/replay/drain';
import type { LogEntry } from '../../cli/replay/log';
import { entryId, planBatches } from '../../cli/replay/send-plan';
import { invokeFunction } from './functions';

/** The SQS message id each line of a log was sent as, by line number. */
export type SentMessages = ReadonlyMap<number, string>;

/**
 * Sends every entry of a log to a queue in log order (batches of up to 10) and returns the
 * message id SQS gave each line. A FIFO resend within the deduplication window is accepted like
 * any other send; SQS just never delivers it.
 *
 * @throws Error naming the lines SQS refused.
 */
export async function sendLog(
  sqs: SQSClient,
  queueUrl: string,
  entries: readonly LogEntry[],
): Promise<SentMessages> {
  const batches = planBatches(entries, await describeQueue(sqs, queueUrl));
  const lineOf = new Map(entries.map((entry) => [entryId(entry), entry.line]));
  const sent = new Map<number, string>();
  for (const batch of batches) {
    const response = await sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: batch }));
    if (response.Failed?.length) {
      const refused = response.Failed.map(
        (failure) => `${failure.Id}: ${failure.Code} ${failure.Message ?? ''}`,
      );
      throw new Error(`SQS refused messages of the log: ${refused.join('; ')}`);
    }
    for (const success of response.Successful ?? []) {
      const line = lineOf.get(success.Id ?? '');
      if (line !== undefined && success.MessageId) sent.set(line, success.MessageId);
    }
  }
  return sent;
}

/** One message to deliver again, as SQS would after its first delivery was not deleted. */
export interface Redelivery {
  readonly functionName: string;
  readonly queueUrl: string;
  readonly entry: LogEntry;
  /** The SQS message id of its first delivery. */
  readonly messageId: string;
}

/** What the function answered to a redelivery. */
export interface RedeliveryResult {
  readonly messageId: string;
  /** Message ids the function reported as batch item failures (none for a duplicate). */
  readonly failures: readonly string[];
}

/**
 * Delivers a processed message to its consumer a second time: invokes the function with the
 * event SQS would send on a redelivery (same message id, body and attributes, receive count 2).
 * That is what happens when a function commits its effects but its batch is not deleted, for
 * example because the invocation timed out after the commit.
 */
export async function redeliver(
  clients: { readonly lambda: LambdaClient; readonly sqs: SQSClient },
  redelivery: Redelivery,
): Promise<RedeliveryResult> {
  const { lambda, sqs } = clients;
  const { entry, messageId } = redelivery;
  const { Attributes: queue = {} } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: redelivery.queueUrl, AttributeNames: ['QueueArn'] }),
  );
  const now = String(Date.now());
  const record = {
    messageId,
    receiptHandle: `redelivery-${messageId}`,
    body: entry.body,
    attributes: {
      ApproximateReceiveCount: '2',
      SentTimestamp: now,
      SenderId: 'effectively-once-main-job',
      ApproximateFirstReceiveTimestamp: now,
      ...(entry.groupId === undefined ? {} : { MessageGroupId: entry.groupId }),
      ...(entry.deduplicationId === undefined ? {} : { MessageDeduplicationId: entry.deduplicationId }),
    },
    messageAttributes: Object.fromEntries(
      Object.entries(entry.attributes).map(([name, value]) => [
        name,
        { stringValue: String(value), dataType: typeof value === 'number' ? 'Number' : 'String' },
      ]),
    ),
    md5OfBody: createHash('md5').update(entry.body, 'utf8').digest('hex'),
    eventSource: 'aws:sqs',
    eventSourceARN: queue.QueueArn,
    awsRegion: await lambda.config.region(),
  };
  const response = (await invokeFunction(lambda, redelivery.functionName, { Records: [record] })) as
    | { batchItemFailures?: { itemIdentifier?: string }[] }
    | undefined;
  return {
    messageId,
    failures: (response?.batchItemFailures ?? []).map((failure) => failure.itemIdentifier ?? '?'),
  };
}

/** Options of {@link waitForQueues}. */
export interface WaitForQueuesOptions {
  /** @default 60000 */
  readonly timeoutMillis?: number;
  /** @default 250 */
  readonly pollIntervalMillis?: number;
  /**
   * Consecutive all-zero reads of every queue that count as drained.
   * @default 3
   */
  readonly stablePolls?: number;
}

/**
 * Waits until no message is visible, in flight or delayed in any of the queues, judged by the
 * replay tool's drain logic, and returns how long that took.
 *
 * @throws ReplayError `DRAIN_TIMEOUT` with the last counters.
 */
export async function waitForQueues(
  sqs: SQSClient,
  queueUrls: readonly string[],
  options: WaitForQueuesOptions = {},
): Promise<number> {
  return waitForDrain({
    readCounters: async () => {
      const all = await Promise.all(queueUrls.map((queueUrl) => readQueueCounters(sqs, queueUrl)));
      return all.reduce<QueueCounters>(
        (sum, counters) => ({
          visible: sum.visible + counters.visible,
          inFlight: sum.inFlight + counters.inFlight,
          delayed: sum.delayed + counters.delayed,
        }),
        { visible: 0, inFlight: 0, delayed: 0 },
      );
    },
    timeoutMillis: options.timeoutMillis ?? 60_000,
    pollIntervalMillis: options.pollIntervalMillis ?? 250,
    stablePolls: options.stablePolls ?? 3,
    sleep: (millis) => sleep(millis),
    now: () => Date.now(),
  });
}
