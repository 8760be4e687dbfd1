/**
 * The shapes of the Lambda SQS event and partial batch response that the SQS adapter reads.
 * Declared here (structurally compatible with `@types/aws-lambda`) so the runtime needs no type
 * package and no AWS client.
 */
import type { LambdaContext, MessageAttribute } from '../core/inbound-message';

export type { LambdaContext } from '../core/inbound-message';

/** One message attribute as Lambda delivers it (binary values are base64 strings). */
export type SqsMessageAttribute = MessageAttribute;

/** System attributes of a delivered message; FIFO queues add the group and deduplication ids. */
export interface SqsRecordAttributes {
  /** How many times the message was received, this delivery included. */
  readonly ApproximateReceiveCount?: string;
  /** When the message was sent, epoch milliseconds. */
  readonly SentTimestamp?: string;
  /** The sender's AWS account or principal id. */
  readonly SenderId?: string;
  /** When the message was first received, epoch milliseconds. */
  readonly ApproximateFirstReceiveTimestamp?: string;
  /** The X-Ray trace header the producer sent. */
  readonly AWSTraceHeader?: string;
  /** The message group (FIFO queues, and fair standard queues). */
  readonly MessageGroupId?: string;
  /** The deduplication id (FIFO queues). */
  readonly MessageDeduplicationId?: string;
  /** The sequence number within the message group (FIFO queues). */
  readonly SequenceNumber?: string;
  /** Any other system attribute SQS adds. */
  readonly [name: string]: string | undefined;
}

/** One message of an SQS batch as Lambda delivers it. */
export interface SqsRecord {
  /** The SQS message id; the partial batch response names failed messages by it. */
  readonly messageId: string;
  /** The receipt handle of this delivery. */
  readonly receiptHandle?: string;
  /** The message body, as sent. */
  readonly body: string;
  /** The system attributes of the message. */
  readonly attributes: SqsRecordAttributes;
  /** The producer's message attributes, by name. */
  readonly messageAttributes: Readonly<Record<string, SqsMessageAttribute>>;
  /** The MD5 digest of the body. */
  readonly md5OfBody?: string;
  /** `aws:sqs`. */
  readonly eventSource?: string;
  /** The queue's ARN; a name ending in `.fifo` makes the record FIFO. */
  readonly eventSourceARN?: string;
  /** The queue's region. */
  readonly awsRegion?: string;
}

/** The Lambda event for an SQS event source mapping. */
export interface SqsEvent {
  /** The batch's messages, in delivery order. */
  readonly Records: readonly SqsRecord[];
}

/** One entry of a partial batch response: the message id of a message to redeliver. */
export interface SqsBatchItemFailure {
  /** The `messageId` of the message to redeliver. */
  readonly itemIdentifier: string;
}

/** The partial batch response (`ReportBatchItemFailures`): only ids from the batch. */
export interface SqsBatchResponse {
  /** The messages to redeliver; every other message of the batch is deleted from the queue. */
  readonly batchItemFailures: SqsBatchItemFailure[];
}

/** The complete Lambda SQS handler that the entry points return. */
export type SqsHandler = (event: SqsEvent, context?: LambdaContext) => Promise<SqsBatchResponse>;

/**
 * True for a FIFO queue, by its ARN or URL: FIFO queue names end in `.fifo`. A message group id
 * alone does not make a queue FIFO: standard queues accept one for fairness (fair queues), and
 * their messages are neither ordered nor held back by a failure in their group.
 */
export function isFifoQueue(arnOrUrl: string | undefined): boolean {
  return typeof arnOrUrl === 'string' && arnOrUrl.endsWith('.fifo');
}

/**
 * The FIFO message group of a record: its `MessageGroupId` when it comes from a FIFO queue (by
 * `eventSourceARN`, see {@link isFifoQueue}), else `undefined`.
 */
export function fifoGroupOf(record: SqsRecord): string | undefined {
  return isFifoQueue(record.eventSourceARN) ? record.attributes?.MessageGroupId : undefined;
}
