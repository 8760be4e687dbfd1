/**
 * The shapes of the Lambda events of Kinesis and DynamoDB Streams event source mappings that the
 * stream entry points read, and of their partial batch response. Declared here (structurally
 * compatible with `@types/aws-lambda`) so the runtime needs no type package.
 */

/** The Kinesis part of a record: the producer's partition key and data, and where it sits. */
export interface KinesisRecordData {
  /** The Kinesis record schema version. */
  readonly kinesisSchemaVersion?: string;
  /** The producer's partition key, which picked the shard. */
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
  /** The Kinesis record. */
  readonly kinesis: KinesisRecordData;
  /** `aws:kinesis`. */
  readonly eventSource?: string;
  /** The event format version. */
  readonly eventVersion?: string;
  /** `<shard id>:<sequence number>`. */
  readonly eventID?: string;
  /** `aws:kinesis:record`. */
  readonly eventName?: string;
  /** The role the event source mapping invoked the function with. */
  readonly invokeIdentityArn?: string;
  /** The stream's region. */
  readonly awsRegion?: string;
  /** The stream's ARN. */
  readonly eventSourceARN?: string;
}

/** The Lambda event of a Kinesis event source mapping. */
export interface KinesisStreamEvent {
  /** The batch's records, in shard order. */
  readonly Records: readonly KinesisStreamRecord[];
}

/** A DynamoDB attribute value as a stream record carries it (binary values are base64). */
export type AttributeValue =
  | {
      /** A string. */
      readonly S: string;
    }
  | {
      /** A number, as its decimal text. */
      readonly N: string;
    }
  | {
      /** Binary, base64-encoded. */
      readonly B: string;
    }
  | {
      /** A string set. */
      readonly SS: readonly string[];
    }
  | {
      /** A number set, as decimal texts. */
      readonly NS: readonly string[];
    }
  | {
      /** A binary set, base64-encoded. */
      readonly BS: readonly string[];
    }
  | {
      /** A map. */
      readonly M: Readonly<Record<string, AttributeValue>>;
    }
  | {
      /** A list. */
      readonly L: readonly AttributeValue[];
    }
  | {
      /** Null. */
      readonly NULL: boolean;
    }
  | {
      /** A boolean. */
      readonly BOOL: boolean;
    };

/** The DynamoDB part of a stream record: the item's key, its images and where it sits. */
export interface DynamoDbStreamChange {
  /** When the change was made, epoch seconds. */
  readonly ApproximateCreationDateTime?: number;
  /** The item's key attributes. */
  readonly Keys?: Readonly<Record<string, AttributeValue>>;
  /** The item after the change (`NEW_IMAGE`, `NEW_AND_OLD_IMAGES`). */
  readonly NewImage?: Readonly<Record<string, AttributeValue>>;
  /** The item before the change (`OLD_IMAGE`, `NEW_AND_OLD_IMAGES`). */
  readonly OldImage?: Readonly<Record<string, AttributeValue>>;
  /** The record's position in its shard: the checkpoint a failure reports. */
  readonly SequenceNumber: string;
  /** The size of the stream record, bytes. */
  readonly SizeBytes?: number;
  /** What the stream records: `KEYS_ONLY`, `NEW_IMAGE`, `OLD_IMAGE` or `NEW_AND_OLD_IMAGES`. */
  readonly StreamViewType?: string;
}

/** One record of a DynamoDB Streams batch as Lambda delivers it. */
export interface DynamoDbStreamRecord {
  /** The stream record's id. */
  readonly eventID?: string;
  /** What changed the item. */
  readonly eventName?: 'INSERT' | 'MODIFY' | 'REMOVE';
  /** The event format version. */
  readonly eventVersion?: string;
  /** `aws:dynamodb`. */
  readonly eventSource?: string;
  /** The table's region. */
  readonly awsRegion?: string;
  /** The change. */
  readonly dynamodb: DynamoDbStreamChange;
  /** The stream's ARN. */
  readonly eventSourceARN?: string;
  /** Set for a TTL deletion: the DynamoDB service principal. */
  readonly userIdentity?: unknown;
}

/** The Lambda event of a DynamoDB Streams event source mapping. */
export interface DynamoDbStreamEvent {
  /** The batch's records, in shard order. */
  readonly Records: readonly DynamoDbStreamRecord[];
}

/**
 * The partial batch response of a stream (`ReportBatchItemFailures`): at most one entry per
 * shard, the sequence number of the first record of that shard to retry. The event source
 * resumes the shard from there; an empty list checkpoints the whole batch.
 */
export interface StreamBatchResponse {
  /** The records to retry from; the stream resumes at the first one. */
  readonly batchItemFailures: {
    /** The sequence number of the record. */
    readonly itemIdentifier: string;
  }[];
}
