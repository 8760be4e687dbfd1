/**
 * The engine's port: one message as a transport adapter hands it over, and what the engine
 * answers for it. Each transport (the SQS Lambda handler, the middy middleware, the
 * `sqs-consumer` worker, Kinesis, DynamoDB Streams) maps its own event into these messages and
 * the answers into its own batch response, and owns its dead-letter format; the engine knows no
 * transport.
 */
import type { ErrorCode } from './errors';
import type { Outcome } from './outcome';

/**
 * One message attribute (binary values base64): the shape SQS and SNS deliver, and the one a
 * transport without attributes of its own uses for what it tells of a record.
 */
export interface MessageAttribute {
  /** The value of a `String` or `Number` attribute. */
  readonly stringValue?: string;
  /** The value of a `Binary` attribute, base64-encoded. */
  readonly binaryValue?: string;
  /** Reserved by SQS for list values. */
  readonly stringListValues?: readonly string[];
  /** Reserved by SQS for list values (base64-encoded). */
  readonly binaryListValues?: readonly string[];
  /** `String`, `Number` or `Binary`, with an optional custom suffix (`Number.int`). */
  readonly dataType: string;
}

/** The part of the Lambda context the engine reads; every field is optional for tests. */
export interface LambdaContext {
  /** The invocation's request id, logged with each outcome. */
  readonly awsRequestId?: string;
  /** The function's name. */
  readonly functionName?: string;
  /** Milliseconds until the invocation times out; the deadline margin is measured against it. */
  getRemainingTimeInMillis?(): number;
}

/**
 * One message of a batch, as a transport adapter gives it to the engine. The body is `text`
 * when it is text (an SQS body always is; a stream record's data when it is well-formed UTF-8)
 * and `bytes` when the transport delivers bytes (a stream record's data, exactly): a message
 * has at least one of them.
 */
export interface InboundMessage<TRecord = unknown> {
  /** The transport's id of this delivery, for logs and `fromMessageId`: an SQS message id, a stream event id. */
  readonly id: string;
  /** The body as text; `undefined` when the bytes are not well-formed UTF-8. */
  readonly text: string | undefined;
  /** The body's exact bytes, when the transport delivers bytes. */
  readonly bytes?: Uint8Array;
  /** The message attributes: the producer's, or what the transport tells of the record. */
  readonly attributes: Readonly<Record<string, MessageAttribute>>;
  /** The producer's message group (a FIFO group, a fair queue's tenant, a stream's shard). */
  readonly groupId?: string;
  /**
   * The engine's ordering group: messages of one group run one after the other in batch order,
   * and once one is not acknowledged the later ones are retried without running
   * (`GROUP_BLOCKED`). `undefined` for a message that keeps no order.
   */
  readonly orderingGroup?: string;
  /** The transport's own record, typed per entry point: what `message.record` is in a handler. */
  readonly record: TRecord;
}

/** The engine's answer for one message, in batch order. */
export interface MessageResult {
  /** What happened to it. */
  readonly outcome: Outcome;
  /**
   * `true` when the transport may let it go: processed, a duplicate, stale, or dead-lettered
   * through the entry point's dead-letter writer. Otherwise the transport delivers it again.
   */
  readonly acknowledged: boolean;
}

/** One message to dead-letter, with the reason it can never succeed. */
export interface DeadLetter<TRecord = unknown> {
  /** The message as the transport gave it: its writer reads its own record from it. */
  readonly message: InboundMessage<TRecord>;
  /** Why the message can never succeed. */
  readonly reason: string;
  /** The error code of the failure. */
  readonly code: ErrorCode;
  /** The consumer that dead-letters it. */
  readonly consumer: string;
  /** The dedup key, when the message got as far as having one. */
  readonly dedupKey?: string;
}

/**
 * Writes one dead letter in the transport's own format and resolves once it is stored (on a
 * dead-letter queue); a rejection means it was not, and the message is retried.
 */
export type DeadLetterWriter<TRecord = unknown> = (letter: DeadLetter<TRecord>) => Promise<void>;
