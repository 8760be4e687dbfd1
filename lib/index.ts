export {
  BUSINESS_TABLE_ACTIONS,
  type BusinessTableAccess,
  CONSUMER_MODES,
  type ConsumerMode,
  defaultBusinessTableAccess,
  INBOX_TABLE_ACTIONS,
  inboxKeyPatterns,
  ownInboxRecordsCondition,
} from './consumer-permissions';
export {
  type BusinessTable,
  type ConsumerLogLevel,
  type DeadLetterMode,
  IdempotentConsumer,
  type IdempotentConsumerProps,
} from './idempotent-consumer';
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
