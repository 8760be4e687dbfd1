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
  type DynamoDbStreamMessage,
  dynamoDbChangeJson,
} from './dynamodb-stream-handler';
export { fromData, fromKeysAndVersion } from './key-sources';
export { createKinesisHandler, type KinesisHandlerOptions, type KinesisMessage } from './kinesis-handler';
export {
  STREAM_DEAD_LETTER_FORMAT,
  type StreamCoordinates,
  type StreamDeadLetterBody,
  type StreamDeadLetterData,
} from './stream-dead-letter';
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
export type { StreamHandler, StreamHandlerOptions, StreamKeySource } from './stream-handler';
