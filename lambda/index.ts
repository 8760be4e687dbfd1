/**
 * effectively-once: idempotent SQS → Lambda → DynamoDB consumers. The package root; every
 * public name is listed here explicitly.
 *
 * @module effectively-once
 */

export type {
  ConsumerEntryOptions,
  DeadLetterOptions,
  SqsHandlerEnvironmentOptions,
  SqsHandlerStoreOptions,
} from './consumer-entry';
export { type BatchProcessor, createBatchProcessor } from './core/batch-processor';
export type { CompletedCacheOptions } from './core/completed-cache';
export {
  DEAD_LETTER_ATTRIBUTES,
  DEAD_LETTER_MODES,
  DEFAULT_METRIC_NAMESPACE,
  ENTITY_FINGERPRINT_ATTRIBUTE,
  ENV,
  INBOX_ATTRIBUTES,
  INBOX_STATUS,
  LOG_LEVELS,
  METRIC_DIMENSION_CONSUMER,
  METRIC_DIMENSION_MESSAGE_GROUP,
  METRICS,
  OUTBOX_DESTINATION_KINDS,
  type OutboxDestinationKind,
} from './core/contract';
export {
  fromAttribute,
  fromBody,
  fromCloudEvent,
  fromMessageId,
  isValidName,
  type KeyPart,
  type KeySource,
  type KeyValue,
  SCOPED_KEY_HASH_THRESHOLD_BYTES,
  scopeKey,
  toDedupKey,
} from './core/dedup-key';
export { deriveEffectKeys, type EffectKeys } from './core/effect-keys';
export type { Environment } from './core/environment';
export {
  type Disposition,
  dispositionOf,
  EffectivelyOnceError,
  ERROR_CODES,
  type ErrorCode,
  isEffectivelyOnceError,
  PermanentError,
} from './core/errors';
export { canonicalJson, fingerprintOf, sha256Hex } from './core/fingerprint';
export type { GroupMetricsOptions } from './core/group-metrics';
export type {
  DeadLetter,
  DeadLetterWriter,
  InboundMessage,
  LambdaContext,
  MessageAttribute,
  MessageResult,
} from './core/inbound-message';
export {
  estimateItemSize,
  MAX_BUSINESS_WRITES,
  MAX_ITEM_BYTES,
  MAX_TRANSACTION_BYTES,
} from './core/item-size';
export {
  createJsonLogger,
  type LineWriter,
  type LogEntry,
  type Logger,
  type LogLevel,
} from './core/logger';
export type { BodyParser, CorrelationIdPicker, FingerprintPicker, Message } from './core/message';
export {
  createEmfMetricsSink,
  type EmfMetricsSinkOptions,
  type MetricsContext,
  type MetricsSink,
  type OutcomeCounts,
} from './core/metrics';
export type {
  Mode,
  ModeDefaults,
  ModeName,
  ModeProcessor,
  ModeSettings,
  ModeStepInput,
  ModeStepResult,
  OutboxDefaults,
  StoreCapability,
} from './core/mode';
export type { BatchProcessorOptions, CommonOptions } from './core/options';
export { fromOutboxEnvelope, type OutboxEnvelope } from './core/outbox-envelope';
export type { FailureDetails, Outcome, OutcomeKind } from './core/outcome';
export type {
  AtomicCommit,
  AtomicStore,
  CommitResult,
  EntityStore,
  EntityWrite,
  FencedResult,
  InboxRecord,
  InboxStatus,
  InboxStore,
  InsertResult,
  ItemMarker,
  LeaseStore,
  MarkerStore,
  ReleaseGuard,
  SharedCommitResult,
  TransactWriteAction,
  VersionedPutWrite,
} from './core/store-port';
export type { Clock } from './core/time';
export type { DeadLetterMessage, DeadLetterMode, DeadLetterSender } from './dead-letter/dead-letter-message';
export {
  createSqsDeadLetterSender,
  type SqsDeadLetterSenderOptions,
} from './dead-letter/sqs-dead-letter-sender';
export {
  type ApiGatewayProxyEventV1,
  type ApiGatewayProxyEventV2,
  createIdempotentHttpHandler,
  type HttpEvent,
  type HttpRequest,
  type HttpResponse,
  IDEMPOTENCY_KEY_HEADER,
  type IdempotentHttpHandler,
  type IdempotentHttpHandlerOptions,
  isReplayableStatus,
  OMITTED_HEADER,
  REPLAYED_HEADER,
  type StoredHttpResponse,
} from './http/index';
export {
  createPowertoolsLogger,
  createPowertoolsMetricsSink,
  type PowertoolsLoggerLike,
  type PowertoolsMetricsLike,
} from './interop/powertools';
export {
  createJobGuard,
  type JobGuard,
  type JobGuardOptions,
  type JobGuardStore,
  type JobResult,
  type JobRun,
  type JobSlot,
  jobSlotKey,
  type ScheduledEvent,
  scheduledEventSlot,
  toScheduleSlot,
} from './jobs/index';
export {
  createSqsMiddleware,
  MIDDLEWARE_CLEANUP_PREFIX,
  type SqsMiddleware,
  type SqsMiddlewareRequest,
} from './middleware/sqs-middleware';
export {
  type AtomicHandler,
  type AtomicOptions,
  type AtomicOutboxOptions,
  atomic,
  type ItemMarkerHandler,
} from './modes/atomic';
export { type EntityHandler, entity } from './modes/entity';
export { type MarkerHandler, marker } from './modes/marker';
export {
  type Effect,
  type EffectContext,
  type Effects,
  type TwoPhaseHandler,
  type TwoPhaseOptions,
  twoPhase,
} from './modes/two-phase';
export type {
  ConditionCheckWrite,
  DeleteWrite,
  ItemMarkerUnitOfWork,
  MarkerPlacement,
  MarkerPutWrite,
  PutWrite,
  UnitOfWork,
  UpdateWrite,
} from './modes/unit-of-work';
export type { DestinationSizingOptions, EmitOptions, OutboxEvent } from './outbox/outbox-item';
export { fromDeduplicationId, fromRecord } from './sqs/key-sources';
export type {
  SqsBatchItemFailure,
  SqsBatchResponse,
  SqsEvent,
  SqsHandler,
  SqsMessageAttribute,
  SqsRecord,
  SqsRecordAttributes,
} from './sqs/sqs-event';
export {
  createSqsBatchHandler,
  createSqsHandler,
  type SqsBatchHandlerOptions,
  type SqsHandlerOptions,
  type SqsMessage,
} from './sqs/sqs-handler';
export {
  createDynamoDbEntityStore,
  createDynamoDbStore,
  type DynamoDbEntityStoreOptions,
  type DynamoDbStoreOptions,
} from './store/dynamodb-store';
