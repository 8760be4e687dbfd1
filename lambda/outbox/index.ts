/**
 * effectively-once/outbox: the transactional outbox. Events are written as outbox items in the
 * same transaction as the business writes (atomic mode's `unitOfWork.emit`, or
 * `createOutboxWriter` for a producer that is not a consumer), and the relay publishes each new
 * item from the outbox table's stream with its id as the `idempotency-key` attribute. Every
 * public name is listed here explicitly.
 */

export {
  EVENT_TYPE_ATTRIBUTE,
  IDEMPOTENCY_KEY_ATTRIBUTE,
  MAX_DESTINATION_MESSAGE_BYTES,
  OUTBOX_ATTRIBUTES,
  OUTBOX_DESTINATION_KINDS,
  OUTBOX_ENV,
  type OutboxDestinationKind,
} from '../core/contract';
// The types the outbox's signatures use (also exported by the entry points that define them).
export type { DeadLetterSender } from '../core/dead-letter';
export type { Logger } from '../core/logger';
export type { TransactWriteAction } from '../core/store-port';
export type { Clock } from '../core/time';
export type { AttributeValue, DynamoDbStreamEvent, StreamBatchResponse } from '../streams/stream-event';
export {
  DEFAULT_OUTBOX_RETENTION_SECONDS,
  type EmitOptions,
  type OutboxEvent,
  outboxEventId,
} from './outbox-item';
export {
  createOutboxRelay,
  type OutboxDestination,
  type OutboxMessage,
  type OutboxRelay,
  type OutboxRelayOptions,
  outboxMessageOf,
  type SqsDestinationOptions,
  sqsDestination,
} from './outbox-relay';
export {
  createOutboxWriter,
  type OutboxWriteResult,
  type OutboxWriter,
  type OutboxWriterOptions,
  type WriterEvent,
} from './outbox-writer';
