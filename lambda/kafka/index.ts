/**
 * effectively-once/kafka: idempotent consumers of Amazon MSK and self-managed Apache Kafka, with
 * the modes, stores and outcomes of the package root. Every public name is listed here
 * explicitly.
 *
 * @module effectively-once/kafka
 */

export { STREAM_RECORD_ATTRIBUTES } from '../core/contract';
export { fromData } from '../streams/key-sources';
export {
  STREAM_DEAD_LETTER_FORMAT,
  type StreamCoordinates,
  type StreamDeadLetterBody,
  type StreamDeadLetterData,
} from '../streams/stream-dead-letter';
export type { StreamHandlerOptions, StreamKeySource } from '../streams/stream-handler';
export type {
  KafkaBatchResponse,
  KafkaEvent,
  KafkaItemIdentifier,
  KafkaRecord,
  KafkaRecordHeader,
} from './kafka-event';
export {
  createKafkaHandler,
  type KafkaHandler,
  type KafkaHandlerOptions,
  type KafkaMessage,
  type KafkaSourceRecord,
} from './kafka-handler';
export { fromHeader, fromKafkaKey, type KafkaKeyOptions } from './key-sources';
