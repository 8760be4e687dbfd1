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
  defaultBusinessTableAccess,
  INBOX_TABLE_ACTIONS,
  inboxKeyPatterns,
  ownInboxRecordsCondition,
} from './consumer-permissions';
export { IdempotentConsumer } from './idempotent-consumer/construct';
export type {
  BusinessTable,
  ConsumerLogLevel,
  DeadLetterMode,
  IdempotentConsumerProps,
} from './idempotent-consumer/props';
export { InboxTable, type InboxTableProps } from './inbox-table';
export {
  DEFAULT_REDRIVE_ALLOWANCE,
  deriveRedeliveryWindow,
  PRODUCER_RETRY_FACTOR,
  RECORD_TTL_MARGIN,
  type RedeliveryWindow,
  type RedeliveryWindowInputs,
  SQS_DEFAULT_RETENTION,
  SQS_MAX_RETENTION,
} from './record-ttl';
