/**
 * The shapes of the Lambda SQS event, context and partial batch response that the core
 * reads. Declared here (structurally compatible with `@types/aws-lambda`) so the runtime
 * needs no type package and no AWS client.
 */

/** One message attribute as Lambda delivers it (binary values are base64 strings). */
export interface SqsMessageAttribute {
  readonly stringValue?: string;
  readonly binaryValue?: string;
  readonly stringListValues?: readonly string[];
  readonly binaryListValues?: readonly string[];
  readonly dataType: string;
}

/** System attributes of a delivered message; FIFO queues add the group and deduplication ids. */
export interface SqsRecordAttributes {
  readonly ApproximateReceiveCount?: string;
  readonly SentTimestamp?: string;
  readonly SenderId?: string;
  readonly ApproximateFirstReceiveTimestamp?: string;
  readonly AWSTraceHeader?: string;
  readonly MessageGroupId?: string;
  readonly MessageDeduplicationId?: string;
  readonly SequenceNumber?: string;
  readonly [name: string]: string | undefined;
}

/** One message of an SQS batch as Lambda delivers it. */
export interface SqsRecord {
  readonly messageId: string;
  readonly receiptHandle?: string;
  readonly body: string;
  readonly attributes: SqsRecordAttributes;
  readonly messageAttributes: Readonly<Record<string, SqsMessageAttribute>>;
  readonly md5OfBody?: string;
  readonly eventSource?: string;
  readonly eventSourceARN?: string;
  readonly awsRegion?: string;
}

/** The Lambda event for an SQS event source mapping. */
export interface SqsEvent {
  readonly Records: readonly SqsRecord[];
}

/** One entry of a partial batch response: the message id of a message to redeliver. */
export interface SqsBatchItemFailure {
  readonly itemIdentifier: string;
}

/** The partial batch response (`ReportBatchItemFailures`): only ids from the batch. */
export interface SqsBatchResponse {
  readonly batchItemFailures: SqsBatchItemFailure[];
}

/** The part of the Lambda context the core reads; every field is optional for tests. */
export interface LambdaContext {
  readonly awsRequestId?: string;
  readonly functionName?: string;
  getRemainingTimeInMillis?(): number;
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
