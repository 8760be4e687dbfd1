/**
 * effectively-once's CDK constructs: `IdempotentConsumer` and `IdempotentStreamConsumer` (the
 * consumer function, its queue or stream wiring, grants, alarms and dashboard, on the shared
 * `ConsumerBase`), `InboxTable` and `Outbox`, with the helpers that derive a record TTL from the
 * source's settings. Loads `aws-cdk-lib` and `constructs` (optional peer dependencies), so the
 * Lambda runtime entry never does.
 *
 * @module effectively-once/construct
 */
export {
  CONSUMER_MODES,
  type ConsumerMode,
  OUTBOX_ATTRIBUTES,
  OUTBOX_DESTINATION_KINDS,
  OUTBOX_ENV,
  type OutboxDestinationKind,
} from '../lambda/core/contract';
export {
  CAPACITY_LIMITS,
  type CapacityPlan,
  type EventSourceConcurrency,
  MODE_CAPACITY,
  type ModeCapacity,
  type PlannedTable,
  type TableCapacity,
} from './capacity-planner';
export { ConsumerBase, type ConsumerBaseProps } from './consumer-base';
export {
  BUSINESS_TABLE_ACCESSES,
  BUSINESS_TABLE_ACTIONS,
  type BusinessTableAccess,
  DYNAMODB_STREAM_READ_ACTIONS,
  defaultBusinessTableAccess,
  INBOX_TABLE_ACTIONS,
  inboxKeyPatterns,
  KINESIS_STREAM_READ_ACTIONS,
  ownInboxRecordsCondition,
} from './consumer-permissions';
export type { ConsumerNote, PropsValidation } from './consumer-validation';
export type {
  BusinessTable,
  ConsumerLogLevel,
  ConsumerWiring,
  SourceReadAccess,
  TerminalQueueOptions,
} from './consumer-wiring';
export { IdempotentConsumer } from './idempotent-consumer/construct';
export type {
  DeadLetterMode,
  IdempotentConsumerProps,
  ProvisionedPollers,
} from './idempotent-consumer/props';
export { IdempotentStreamConsumer } from './idempotent-stream-consumer/construct';
export { KAFKA_VPC_ACTIONS, MSK_CLUSTER_ACTIONS, MSK_IAM_ACTIONS } from './idempotent-stream-consumer/kafka';
export type {
  IdempotentStreamConsumerProps,
  KafkaAuthentication,
  KafkaTopicSource,
} from './idempotent-stream-consumer/props';
export { InboxTable, type InboxTableProps } from './inbox-table';
export type { ManagedInstances } from './managed-instances';
export { OUTBOX_PUBLISH_ACTIONS, OUTBOX_WRITER_ACTIONS, Outbox } from './outbox/construct';
export {
  DEFAULT_RELAY_MAX_RECORD_AGE,
  DEFAULT_RELAY_RETRY_ATTEMPTS,
  DEFAULT_RELAY_TIMEOUT,
  OPERATOR_ALLOWANCE,
} from './outbox/defaults';
export type { OutboxProps } from './outbox/props';
export { deriveOutboxRetention, type OutboxRetention, type OutboxRetentionInputs } from './outbox/timing';
export {
  DEFAULT_REDRIVE_ALLOWANCE,
  DYNAMODB_STREAMS_RETENTION,
  deriveRedeliveryWindow,
  deriveStreamReplayWindow,
  KINESIS_DEFAULT_RETENTION,
  KINESIS_MAX_RETENTION,
  PRODUCER_RETRY_FACTOR,
  RECORD_TTL_MARGIN,
  type RedeliveryWindow,
  type RedeliveryWindowInputs,
  SQS_DEFAULT_RETENTION,
  SQS_MAX_RETENTION,
  STREAM_MAX_RECORD_AGE_LIMIT,
  type StreamReplayWindowInputs,
} from './record-ttl';
