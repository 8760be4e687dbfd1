/**
 * The dead-letter port: how a permanent failure reaches the dead-letter queue when
 * `deadLetter: 'direct'`. The SQS adapter lives in `lambda/sqs/dead-letter-sender.ts`; the
 * message attribute names it sets are `DEAD_LETTER_ATTRIBUTES` in `contract.ts`.
 */
import type { ErrorCode } from './errors';
import type { SqsMessageAttribute } from './sqs-event';

/** How a permanent failure leaves the queue. */
export type DeadLetterMode = 'redrive' | 'direct';

/** One message to dead-letter, with the reason it can never succeed. */
export interface DeadLetterMessage {
  /** The original body, unchanged, so the message can be redriven after a fix. */
  readonly body: string;
  readonly reason: string;
  readonly code: ErrorCode;
  readonly consumer: string;
  /** The dedup key, when the message got as far as having one. */
  readonly dedupKey?: string;
  readonly sourceMessageId: string;
  /** The original message attributes. */
  readonly attributes: Readonly<Record<string, SqsMessageAttribute>>;
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
  send(message: DeadLetterMessage): Promise<void>;
}
