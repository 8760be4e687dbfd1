/**
 * The message a dead-letter queue receives, and the port that sends it: each transport formats
 * its dead letters into a `DeadLetterMessage` (an SQS message's original body and attributes; a
 * stream record's coordinates and data, see `stream-dead-letter.ts`), and a `DeadLetterSender`
 * sends it. The SQS sender lives in `sqs-dead-letter-sender.ts`; the message attribute names it
 * sets are `DEAD_LETTER_ATTRIBUTES` in `contract.ts`.
 */
import type { ErrorCode } from '../core/errors';
import type { MessageAttribute } from '../core/inbound-message';

/**
 * How a permanent failure leaves the queue: `redrive` lets the queue's `maxReceiveCount` move it
 * (SQS keeps the body and message attributes; a FIFO dead-letter queue replaces the
 * deduplication id with the message id), `direct` sends it at once with its reason (a new
 * message, carrying the original deduplication id in `eo-deduplication-id`).
 *
 * What a later redrive (a new message with the same body and attributes and a new message id)
 * does to each key source: `fromAttribute`, `fromBody` and `fromCloudEvent` keep their key, and so
 * does `fromRecord` when it reads only the body and attributes; `fromDeduplicationId` keeps it
 * after a direct dead letter only (it prefers `eo-deduplication-id`), and gets a new key after a
 * native one, so completed effects run again; `fromMessageId` always gets a new key.
 */
export type { DeadLetterMode } from '../core/contract';

/** One message to dead-letter, with the reason it can never succeed. */
export interface DeadLetterMessage {
  /**
   * The body of the dead letter: an SQS message's original body, unchanged, so the message can be
   * redriven after a fix; a stream record's envelope (`StreamDeadLetterBody`).
   */
  readonly body: string;
  /** Why the message can never succeed. */
  readonly reason: string;
  /** The error code of the failure. */
  readonly code: ErrorCode;
  /** The consumer that dead-letters it. */
  readonly consumer: string;
  /** The dedup key, when the message got as far as having one. */
  readonly dedupKey?: string;
  /** The transport's id of the failed delivery: an SQS message id, a stream event id. */
  readonly sourceMessageId: string;
  /** The original message attributes (a stream record's: where it came from). */
  readonly attributes: Readonly<Record<string, MessageAttribute>>;
  /** The message group, when the message has one (FIFO, or a fair queue's tenant). */
  readonly groupId?: string;
  /**
   * The original FIFO deduplication id (`fromDeduplicationId`'s key), when the message has one:
   * sent as `eo-deduplication-id` so a redriven message keeps its key.
   */
  readonly deduplicationId?: string;
}

/** Sends one message to the dead-letter queue; a rejection means it was not sent. */
export interface DeadLetterSender {
  /** Sends `message`; resolves once the queue accepted it. */
  send(message: DeadLetterMessage): Promise<void>;
}
