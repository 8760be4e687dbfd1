/**
 * The shapes of the Lambda events of Kinesis and DynamoDB Streams event source mappings that the
 * stream entry points read, and of their partial batch response. Declared here (structurally
 * compatible with `@types/aws-lambda`) so the runtime needs no type package.
 */

/** The Kinesis part of a record: the producer's partition key and data, and where it sits. */
export interface KinesisRecordData {
  readonly kinesisSchemaVersion?: string;
  readonly partitionKey: string;
  /** The record's position in its shard: the checkpoint a failure reports. */
  readonly sequenceNumber: string;
  /** The producer's data, base64. */
  readonly data: string;
  /** Epoch seconds (with a fraction) when the stream accepted the record. */
  readonly approximateArrivalTimestamp?: number;
}

/** One record of a Kinesis batch as Lambda delivers it. */
export interface KinesisStreamRecord {
  readonly kinesis: KinesisRecordData;
  readonly eventSource?: string;
  readonly eventVersion?: string;
  /** `<shard id>:<sequence number>`. */
  readonly eventID?: string;
  readonly eventName?: string;
  readonly invokeIdentityArn?: string;
  readonly awsRegion?: string;
  readonly eventSourceARN?: string;
}

/** The Lambda event of a Kinesis event source mapping. */
export interface KinesisStreamEvent {
  readonly Records: readonly KinesisStreamRecord[];
}

/** A DynamoDB attribute value as a stream record carries it (binary values are base64). */
export type AttributeValue =
  | { readonly S: string }
  | { readonly N: string }
  | { readonly B: string }
  | { readonly SS: readonly string[] }
  | { readonly NS: readonly string[] }
  | { readonly BS: readonly string[] }
  | { readonly M: Readonly<Record<string, AttributeValue>> }
  | { readonly L: readonly AttributeValue[] }
  | { readonly NULL: boolean }
  | { readonly BOOL: boolean };

/** The DynamoDB part of a stream record: the item's key, its images and where it sits. */
export interface DynamoDbStreamChange {
  readonly ApproximateCreationDateTime?: number;
  readonly Keys?: Readonly<Record<string, AttributeValue>>;
  readonly NewImage?: Readonly<Record<string, AttributeValue>>;
  readonly OldImage?: Readonly<Record<string, AttributeValue>>;
  /** The record's position in its shard: the checkpoint a failure reports. */
  readonly SequenceNumber: string;
  readonly SizeBytes?: number;
  readonly StreamViewType?: string;
}

/** One record of a DynamoDB Streams batch as Lambda delivers it. */
export interface DynamoDbStreamRecord {
  readonly eventID?: string;
  readonly eventName?: 'INSERT' | 'MODIFY' | 'REMOVE';
  readonly eventVersion?: string;
  readonly eventSource?: string;
  readonly awsRegion?: string;
  readonly dynamodb: DynamoDbStreamChange;
  readonly eventSourceARN?: string;
  readonly userIdentity?: unknown;
}

/** The Lambda event of a DynamoDB Streams event source mapping. */
export interface DynamoDbStreamEvent {
  readonly Records: readonly DynamoDbStreamRecord[];
}

/**
 * The partial batch response of a stream (`ReportBatchItemFailures`): at most one entry per
 * shard, the sequence number of the first record of that shard to retry. The event source
 * resumes the shard from there; an empty list checkpoints the whole batch.
 */
export interface StreamBatchResponse {
  readonly batchItemFailures: { readonly itemIdentifier: string }[];
}
