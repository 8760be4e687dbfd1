/**
 * The DynamoDB adapter of the inbox store: the only place that knows expression syntax and
 * AWS error names.
 */
export {
  type CancellationOutcome,
  type ConditionalCheckFailure,
  classifyAwsError,
  readConditionalCheckFailure,
  readTransactionCancellation,
} from './classify-aws-error';
export { createDynamoDbStore, type DynamoDbStoreOptions } from './dynamodb-store';
