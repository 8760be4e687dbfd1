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
  LOG_LEVELS,
  MAX_DESTINATION_MESSAGE_BYTES,
  OUTBOX_ATTRIBUTES,
  OUTBOX_DESTINATION_KINDS,
  OUTBOX_ENV,
  OUTBOX_RELAY_METRICS,
  type OutboxDestinationKind,
} from '../core/contract';
export type { Environment } from '../core/environment';
export type { LineWriter, Logger, LogLevel } from '../core/logger';
export { fromOutboxEnvelope, type OutboxEnvelope } from '../core/outbox-envelope';
export type { TransactWriteAction } from '../core/store-port';
export type { Clock } from '../core/time';
// The types the outbox's signatures use (also exported by the entry points that define them).
export type { DeadLetterSender } from '../dead-letter/dead-letter-message';
export type { AttributeValue, DynamoDbStreamEvent, StreamBatchResponse } from '../streams/stream-event';
export {
  assertEventSource,
  type EventBridgeDestinationOptions,
  eventBridgeDestination,
  type OutboxDestination,
  type SnsDestinationOptions,
  type SqsDestinationOptions,
  snsDestination,
  sqsDestination,
} from './destinations';
export {
  DEFAULT_OUTBOX_RETENTION_SECONDS,
  type DestinationSizingOptions,
  type EmitOptions,
  eventBridgeDetail,
  OUTBOX_PUT_CONDITION,
  type OutboxDestinationSizing,
  type OutboxEvent,
  type OutboxMessage,
  outboxEventId,
  publishedMessageBytes,
} from './outbox-item';
export {
  createOutboxRelay,
  createRelayEmfMetricsSink,
  type OutboxRelay,
  type OutboxRelayOptions,
  outboxMessageOf,
  type RelayCounts,
  type RelayMetricsSink,
} from './outbox-relay';
export {
  createOutboxWriter,
  type OutboxWriteResult,
  type OutboxWriter,
  type OutboxWriterOptions,
  type WriterEvent,
} from './outbox-writer';
export {
  DEFAULT_RELAY_NAME,
  type OutboxDestinationClients,
  type OutboxRelaySettings,
  outboxDestinationFromEnvironment,
  readOutboxRelaySettings,
} from './relay-environment';
