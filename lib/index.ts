/**
 * effectively-once's CDK constructs: `IdempotentConsumer` (the consumer function, its queue
 * wiring, grants, alarms and dashboard) and `InboxTable`, with the helpers that derive a record
 * TTL from the queue's settings. Loads `aws-cdk-lib` and `constructs` (optional peer
 * dependencies), so the Lambda runtime entry never does.
 *
 * @module effectively-once/construct
 */
export { CONSUMER_MODES, type ConsumerMode } from '../lambda/core/contract';
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
export { IdempotentConsumer } from './idempotent-consumer/construct';
export type {
  BusinessTable,
  ConsumerLogLevel,
  DeadLetterMode,
  IdempotentConsumerProps,
} from './idempotent-consumer/props';
export { IdempotentStreamConsumer } from './idempotent-stream-consumer/construct';
export type { IdempotentStreamConsumerProps } from './idempotent-stream-consumer/props';
export { InboxTable, type InboxTableProps } from './inbox-table';
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
