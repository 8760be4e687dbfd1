import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type { ConsumerMode } from '../lambda/core/contract';

/**
 * The DynamoDB actions each mode's runtime calls on the inbox table, and nothing else.
 *
 * `TransactWriteItems` has no IAM action of its own: DynamoDB authorises each item of the
 * transaction with the action it performs on that item's table. "Permissions for Put, Update,
 * Delete, and Get actions are governed by the permissions used for the underlying PutItem,
 * UpdateItem, DeleteItem, and GetItem operations. For the ConditionCheck action, you can use the
 * dynamodb:ConditionCheckItem permission" (Amazon DynamoDB Developer Guide, "Using IAM with
 * DynamoDB transactions",
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis-iam.html).
 * An atomic commit writes its marker with a `Put` (so `PutItem`), never a `ConditionCheck` on
 * the inbox table, so no mode is granted `ConditionCheckItem` there.
 *
 * | mode        | inbox table actions                                           |
 * |-------------|---------------------------------------------------------------|
 * | `marker`    | `dynamodb:PutItem`, `dynamodb:GetItem`, `dynamodb:UpdateItem` |
 * | `atomic`    | `dynamodb:PutItem`, `dynamodb:GetItem`                        |
 * | `entity`    | none (the business item is the marker)                        |
 * | `two-phase` | `dynamodb:PutItem`, `dynamodb:GetItem`, `dynamodb:UpdateItem` |
 *
 * No mode deletes an inbox record: a marker or claim released after a failed run is kept with
 * its fingerprint (an `UpdateItem`), and expiry is DynamoDB TTL's job. The reliability suite
 * checks both sides against the requests the runtime sends in each mode: every one is granted,
 * and every action granted here is sent by some outcome. The construct grants these actions
 * only on the consumer's own records (see `ownInboxRecordsCondition`).
 */
export const INBOX_TABLE_ACTIONS: Readonly<Record<ConsumerMode, readonly string[]>> = Object.freeze({
  marker: ['dynamodb:PutItem', 'dynamodb:GetItem', 'dynamodb:UpdateItem'],
  atomic: ['dynamodb:PutItem', 'dynamodb:GetItem'],
  entity: [],
  'two-phase': ['dynamodb:PutItem', 'dynamodb:GetItem', 'dynamodb:UpdateItem'],
});

/**
 * The partition keys of a consumer's own inbox records, as IAM `StringLike` patterns:
 * `<consumer>#*` for its dedup keys and `<consumer>/*` for its per-effect keys
 * (`<consumer>/<effect>#<dedup key>`), the two shapes `scopeKey` builds. A long key hashed to
 * `#sha256:…` keeps its scope prefix, and a consumer name cannot hold `#`, `/`, `*` or `?`, so
 * the patterns of two consumers never match each other's records.
 */
export function inboxKeyPatterns(consumerName: string): string[] {
  return [`${consumerName}#*`, `${consumerName}/*`];
}

/**
 * The condition on every statement that grants a consumer item actions on an inbox table: each
 * item the request touches (`dynamodb:LeadingKeys`, the partition key; every item of a
 * transaction is authorised on its own) must be one of the consumer's own records, so
 * consumers sharing an inbox table cannot write, read or release each other's records.
 */
export function ownInboxRecordsCondition(consumerName: string): Record<string, Record<string, unknown>> {
  return { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': inboxKeyPatterns(consumerName) } };
}

/** Every access a consumer may have to a business table's items, in a stable order. */
export const BUSINESS_TABLE_ACCESSES = Object.freeze(['read', 'write', 'conditionCheck'] as const);

/** What a consumer may do with a business table's items. */
export type BusinessTableAccess = (typeof BUSINESS_TABLE_ACCESSES)[number];

/**
 * The DynamoDB actions granted on a business table for each access, always on the table's
 * ARN only (reads and writes by key need no index ARN).
 *
 * | access           | actions                                                        |
 * |------------------|----------------------------------------------------------------|
 * | `read`           | `dynamodb:GetItem`                                             |
 * | `write`          | `dynamodb:PutItem`, `dynamodb:UpdateItem`, `dynamodb:DeleteItem` |
 * | `conditionCheck` | `dynamodb:ConditionCheckItem`                                  |
 */
export const BUSINESS_TABLE_ACTIONS: Readonly<Record<BusinessTableAccess, readonly string[]>> = Object.freeze(
  {
    read: ['dynamodb:GetItem'],
    write: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
    conditionCheck: ['dynamodb:ConditionCheckItem'],
  },
);

/**
 * Access granted on a business table when `BusinessTable.access` is not set: `read` and
 * `write` in every mode, plus `conditionCheck` in `atomic` mode (a transaction's business
 * items may be condition checks).
 */
export function defaultBusinessTableAccess(mode: ConsumerMode): readonly BusinessTableAccess[] {
  return mode === 'atomic' ? ['read', 'write', 'conditionCheck'] : ['read', 'write'];
}

/** KMS actions DynamoDB needs from the caller to read items of a table under a customer-managed key. */
export const TABLE_KEY_READ_ACTIONS: readonly string[] = Object.freeze(['kms:Decrypt', 'kms:DescribeKey']);

/** KMS actions DynamoDB needs from the caller to write items of a table under a customer-managed key. */
export const TABLE_KEY_WRITE_ACTIONS: readonly string[] = Object.freeze([
  'kms:Decrypt',
  'kms:DescribeKey',
  'kms:Encrypt',
  'kms:GenerateDataKey',
]);

/** KMS actions SQS needs from a producer sending to a queue under a customer-managed key. */
export const QUEUE_KEY_SEND_ACTIONS: readonly string[] = Object.freeze([
  'kms:GenerateDataKey',
  'kms:Decrypt',
]);

/**
 * Grants exactly `actions` on the items of `table` (the table ARN, no index ARNs), under
 * `conditions` when given, plus the KMS actions its customer-managed key needs, if it has one.
 */
export function grantItemActions(
  grantee: iam.IGrantable,
  table: dynamodb.ITable,
  actions: readonly string[],
  conditions?: Record<string, Record<string, unknown>>,
): void {
  if (actions.length === 0) return;
  iam.Grant.addToPrincipal({ grantee, actions: [...actions], resourceArns: [table.tableArn], conditions });
  if (table.encryptionKey) {
    const reads = actions.every((action) => action === 'dynamodb:GetItem');
    table.encryptionKey.grant(grantee, ...(reads ? TABLE_KEY_READ_ACTIONS : TABLE_KEY_WRITE_ACTIONS));
  }
}

/** The distinct actions for a list of accesses, in a stable order. */
export function actionsForAccess(access: readonly BusinessTableAccess[]): string[] {
  const actions = new Set<string>();
  for (const name of BUSINESS_TABLE_ACCESSES) {
    if (access.includes(name)) {
      for (const action of BUSINESS_TABLE_ACTIONS[name]) actions.add(action);
    }
  }
  return [...actions];
}

/**
 * The Kinesis actions a stream event source mapping calls with the function's role to read a
 * data stream through a standard iterator (`kinesis:SubscribeToShard` is for enhanced fan-out
 * consumers, which the construct does not create), granted on the stream's ARN only.
 */
export const KINESIS_STREAM_READ_ACTIONS: readonly string[] = Object.freeze([
  'kinesis:DescribeStream',
  'kinesis:DescribeStreamSummary',
  'kinesis:GetRecords',
  'kinesis:GetShardIterator',
  'kinesis:ListShards',
]);

/**
 * The DynamoDB Streams actions a stream event source mapping calls with the function's role,
 * granted on the table's stream ARN only (never `*`).
 */
export const DYNAMODB_STREAM_READ_ACTIONS: readonly string[] = Object.freeze([
  'dynamodb:DescribeStream',
  'dynamodb:GetRecords',
  'dynamodb:GetShardIterator',
  'dynamodb:ListStreams',
]);

/** KMS actions a reader of a stream encrypted with a customer-managed key needs. */
export const STREAM_KEY_READ_ACTIONS: readonly string[] = Object.freeze(['kms:Decrypt']);

/** KMS actions SNS needs from a publisher to a topic under a customer-managed key. */
export const TOPIC_KEY_PUBLISH_ACTIONS: readonly string[] = Object.freeze([
  'kms:GenerateDataKey',
  'kms:Decrypt',
]);
