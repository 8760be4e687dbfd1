/**
 * The shapes of the Lambda event of an Amazon MSK or self-managed Apache Kafka event source
 * mapping that `createKafkaHandler` reads, and of its partial batch response. Declared here
 * (structurally compatible with `@types/aws-lambda`'s `MSKEvent`) so the runtime needs no type
 * package.
 */

/**
 * One header of a Kafka record as Lambda delivers it: an object with one member, the header's
 * name, whose value is the header value's bytes as a list of numbers.
 */
export type KafkaRecordHeader = Readonly<Record<string, readonly number[]>>;

/** One Kafka record as Lambda delivers it. */
export interface KafkaRecord {
  /** The record's topic. */
  readonly topic: string;
  /** The record's partition of its topic. */
  readonly partition: number;
  /** The record's offset in its partition: where the partition resumes when it must be retried. */
  readonly offset: number;
  /** The record's timestamp, epoch milliseconds. */
  readonly timestamp?: number;
  /** What the timestamp is: `CREATE_TIME` (the producer's) or `LOG_APPEND_TIME` (the broker's). */
  readonly timestampType?: string;
  /** The record's key, base64; absent (or `null`) for a record without a key. */
  readonly key?: string | null;
  /** The record's value, base64; absent (or `null`) for a tombstone. */
  readonly value?: string | null;
  /** The record's headers, in order (a name may appear more than once). */
  readonly headers?: readonly KafkaRecordHeader[];
}

/** The Lambda event of a Kafka event source mapping: records by topic-partition. */
export interface KafkaEvent {
  /** `aws:kafka` (Amazon MSK) or `SelfManagedKafka`. */
  readonly eventSource?: string;
  /** The MSK cluster's ARN (Amazon MSK only). */
  readonly eventSourceArn?: string;
  /** The brokers, comma-separated. */
  readonly bootstrapServers?: string;
  /** The batch's records by `<topic>-<partition>`, each list in offset order. */
  readonly records: Readonly<Record<string, readonly KafkaRecord[]>>;
}

/** Where a partition resumes: its `<topic>-<partition>` and the offset of its first record to retry. */
export interface KafkaItemIdentifier {
  /** The topic-partition, as the event's `records` names it (`orders-0`). */
  readonly partition: string;
  /** The offset of the partition's first record to retry. */
  readonly offset: number;
}

/**
 * The partial batch response of a Kafka event source mapping (with `ReportBatchItemFailures`):
 * for each topic-partition that must be retried, the offset it resumes from.
 */
export interface KafkaBatchResponse {
  /** The partitions to retry, each from its first record not acknowledged. */
  readonly batchItemFailures: {
    /** The topic-partition and offset. */
    readonly itemIdentifier: KafkaItemIdentifier;
  }[];
}
