/**
 * effectively-once/streams: idempotent consumers of Kinesis Data Streams and DynamoDB Streams,
 * with the modes, stores and outcomes of the package root. Every public name is listed here
 * explicitly.
 *
 * @module effectively-once/streams
 */

export { STREAM_RECORD_ATTRIBUTES } from '../core/contract';
export {
  createDynamoDbStreamHandler,
  type DynamoDbChange,
  type DynamoDbStreamHandlerOptions,
  dynamoDbChangeJson,
} from './dynamodb-stream-handler';
export { fromData, fromKeysAndVersion } from './key-sources';
export { createKinesisHandler, type KinesisHandlerOptions } from './kinesis-handler';
export type {
  AttributeValue,
  DynamoDbStreamChange,
  DynamoDbStreamEvent,
  DynamoDbStreamRecord,
  KinesisRecordData,
  KinesisStreamEvent,
  KinesisStreamRecord,
  StreamBatchResponse,
} from './stream-event';
export {
  type StreamHandler,
  type StreamHandlerOptions,
  type StreamKeySource,
  streamRecordOf,
} from './stream-handler';
