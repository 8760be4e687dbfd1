/**
 * Turns validated log entries into `SendMessageBatch` entries, chunked to what SQS accepts.
 * Pure: the adapter sends the chunks.
 */

import type { MessageAttributeValue, SendMessageBatchRequestEntry } from '@aws-sdk/client-sqs';
import { ReplayError } from './errors';
import type { LogEntry } from './log';

/** What the sender needs to know about the queue. */
export interface QueueKind {
  readonly fifo: boolean;
  readonly contentBasedDeduplication: boolean;
}

/** SQS accepts at most 10 entries per `SendMessageBatch`. */
export const MAX_BATCH_ENTRIES = 10;
/**
 * Total payload per batch. SQS now accepts 1 MiB, but 256 KiB is the limit every region
 * and emulator has honoured, so batches stay under it; a single larger message is sent
 * alone and SQS decides.
 */
export const MAX_BATCH_BYTES = 256 * 1024;

/** The batch entry id of a log entry: it names the line, so a refused entry can be reported by line. */
export function entryId(entry: LogEntry): string {
  return `line-${entry.line}`;
}

/**
 * Plans the `SendMessageBatch` calls for a log: in log order, at most 10 entries and
 * 256 KiB per call. FIFO queues get `MessageGroupId` from `groupId` and
 * `MessageDeduplicationId` from `deduplicationId`.
 *
 * @throws {ReplayError} `INVALID_LOG` when the queue would refuse an entry: on a FIFO queue no
 *   `groupId`, or no `deduplicationId` without content-based deduplication; on a standard
 *   queue a `deduplicationId`.
 */
export function planBatches(
  entries: readonly LogEntry[],
  queue: QueueKind,
): SendMessageBatchRequestEntry[][] {
  assertFitsQueue(entries, queue);

  const batches: SendMessageBatchRequestEntry[][] = [];
  let batch: SendMessageBatchRequestEntry[] = [];
  let batchBytes = 0;
  for (const entry of entries) {
    const request = toRequestEntry(entry);
    const bytes = payloadBytes(entry);
    if (batch.length === MAX_BATCH_ENTRIES || (batch.length > 0 && batchBytes + bytes > MAX_BATCH_BYTES)) {
      batches.push(batch);
      batch = [];
      batchBytes = 0;
    }
    batch.push(request);
    batchBytes += bytes;
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

function toRequestEntry(entry: LogEntry): SendMessageBatchRequestEntry {
  const names = Object.keys(entry.attributes);
  const attributes: Record<string, MessageAttributeValue> = {};
  for (const name of names) {
    const value = entry.attributes[name]!;
    attributes[name] =
      typeof value === 'number'
        ? { DataType: 'Number', StringValue: String(value) }
        : { DataType: 'String', StringValue: value };
  }
  return {
    Id: entryId(entry),
    MessageBody: entry.body,
    ...(names.length > 0 ? { MessageAttributes: attributes } : {}),
    // FIFO queues need the group id; standard queues accept one too (fair queues).
    ...(entry.groupId === undefined ? {} : { MessageGroupId: entry.groupId }),
    ...(entry.deduplicationId === undefined ? {} : { MessageDeduplicationId: entry.deduplicationId }),
  };
}

/** Bytes SQS counts against the batch payload limit: body, attribute names, types and values. */
function payloadBytes(entry: LogEntry): number {
  let bytes = Buffer.byteLength(entry.body);
  for (const [name, value] of Object.entries(entry.attributes)) {
    const type = typeof value === 'number' ? 'Number' : 'String';
    bytes += Buffer.byteLength(name) + type.length + Buffer.byteLength(String(value));
  }
  return bytes;
}

function assertFitsQueue(entries: readonly LogEntry[], queue: QueueKind): void {
  const problems: string[] = [];
  for (const entry of entries) {
    if (!queue.fifo) {
      // AWS refuses a deduplication id on a standard queue (some emulators accept it): say so up front.
      if (entry.deduplicationId !== undefined) {
        problems.push(`line ${entry.line}: \`deduplicationId\` applies to FIFO queues only`);
      }
    } else if (entry.groupId === undefined) {
      problems.push(`line ${entry.line}: a FIFO queue needs \`groupId\``);
    } else if (entry.deduplicationId === undefined && !queue.contentBasedDeduplication) {
      problems.push(
        `line ${entry.line}: the FIFO queue has no content-based deduplication, so \`deduplicationId\` is required`,
      );
    }
  }
  if (problems.length === 0) return;
  const shown = problems.slice(0, 10);
  if (problems.length > shown.length) shown.push(`... and ${problems.length - shown.length} more`);
  const kind = queue.fifo ? 'FIFO' : 'standard';
  throw new ReplayError(
    'INVALID_LOG',
    `The message log does not fit the ${kind} queue:\n  ${shown.join('\n  ')}`,
  );
}
