/**
 * Shared fixtures of the stream entry points' tests: Kinesis and DynamoDB Streams records as
 * Lambda's event source mappings deliver them, built by hand, a table with a stream, and a
 * dead-letter sender that keeps what it was given. Reading a real stream (`GetRecords` turned
 * into Lambda's records) is `scripts/support/stream-reader.ts`, which `npm start` uses too.
 */
import { CreateTableCommand, type DynamoDBClient, waitUntilTableExists } from '@aws-sdk/client-dynamodb';
import type { DeadLetterMessage, DeadLetterSender } from '../../lambda/dead-letter/dead-letter-message';
import type { StreamDeadLetterBody } from '../../lambda/streams/stream-dead-letter';
import type {
  AttributeValue,
  DynamoDbStreamRecord,
  KinesisStreamRecord,
} from '../../lambda/streams/stream-event';

/** The stream the hand-built Kinesis records come from. */
export const KINESIS_STREAM_ARN = 'arn:aws:kinesis:us-east-1:000000000000:stream/orders';
/** The table stream the hand-built DynamoDB Streams records come from. */
export const TABLE_STREAM_ARN =
  'arn:aws:dynamodb:us-east-1:000000000000:table/orders/stream/2026-01-01T00:00:00.000';

/** How {@link kinesisRecord} builds a record. */
export interface KinesisRecordOptions {
  /** @default 'shardId-000000000000' */
  readonly shardId?: string;
  /** @default 'pk' */
  readonly partitionKey?: string;
  /** The data exactly as produced. @default the JSON of `data` */
  readonly rawData?: string;
  /** The data's bytes exactly as produced (binary data: gzip, a KPL aggregate). */
  readonly rawBytes?: Uint8Array;
}

/**
 * One Kinesis record as Lambda delivers it: `data` as JSON (or `rawData`), base64, at
 * `sequenceNumber` of its shard.
 */
export function kinesisRecord(
  sequenceNumber: string,
  data: unknown,
  options: KinesisRecordOptions = {},
): KinesisStreamRecord {
  const shardId = options.shardId ?? 'shardId-000000000000';
  const bytes = options.rawBytes ?? Buffer.from(options.rawData ?? JSON.stringify(data), 'utf8');
  return {
    kinesis: {
      kinesisSchemaVersion: '1.0',
      partitionKey: options.partitionKey ?? 'pk',
      sequenceNumber,
      data: Buffer.from(bytes).toString('base64'),
      approximateArrivalTimestamp: 1767225600.5,
    },
    eventSource: 'aws:kinesis',
    eventVersion: '1.0',
    eventID: `${shardId}:${sequenceNumber}`,
    eventName: 'aws:kinesis:record',
    invokeIdentityArn: 'arn:aws:iam::000000000000:role/consumer',
    awsRegion: 'us-east-1',
    eventSourceARN: KINESIS_STREAM_ARN,
  };
}

/** How {@link dynamoDbStreamRecord} builds a record. */
export interface DynamoDbStreamRecordOptions {
  readonly eventName?: 'INSERT' | 'MODIFY' | 'REMOVE';
  readonly keys: Readonly<Record<string, AttributeValue>>;
  readonly newImage?: Readonly<Record<string, AttributeValue>>;
  readonly oldImage?: Readonly<Record<string, AttributeValue>>;
  /** @default a fresh id per call */
  readonly eventId?: string;
}

let eventCounter = 0;

/** One DynamoDB Streams record as Lambda delivers it, at `sequenceNumber` of the table stream. */
export function dynamoDbStreamRecord(
  sequenceNumber: string,
  options: DynamoDbStreamRecordOptions,
): DynamoDbStreamRecord {
  return {
    eventID: options.eventId ?? `event-${++eventCounter}`,
    eventName: options.eventName ?? 'MODIFY',
    eventVersion: '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: 'us-east-1',
    dynamodb: {
      ApproximateCreationDateTime: 1767225600,
      Keys: options.keys,
      ...(options.newImage === undefined ? {} : { NewImage: options.newImage }),
      ...(options.oldImage === undefined ? {} : { OldImage: options.oldImage }),
      SequenceNumber: sequenceNumber,
      SizeBytes: 64,
      StreamViewType: 'NEW_AND_OLD_IMAGES',
    },
    eventSourceARN: TABLE_STREAM_ARN,
  };
}

/** The envelope of a stream dead letter (its body, parsed). */
export function streamDeadLetterOf(message: DeadLetterMessage): StreamDeadLetterBody {
  return JSON.parse(message.body) as StreamDeadLetterBody;
}

/**
 * The record's data recovered from a stream dead letter, byte for byte: decoded from its encoding,
 * `undefined` when the dead letter was marked truncated.
 */
export function recoveredData(envelope: StreamDeadLetterBody): Buffer | undefined {
  const { data } = envelope;
  if ('truncated' in data) return undefined;
  return data.encoding === 'base64' ? Buffer.from(data.value, 'base64') : Buffer.from(data.value, 'utf8');
}

/** A dead-letter sender that keeps every message it sends; `fail` makes the next sends reject. */
export function captureDeadLetters(): DeadLetterSender & {
  readonly sent: DeadLetterMessage[];
  fail: boolean;
} {
  const sender = {
    sent: [] as DeadLetterMessage[],
    fail: false,
    async send(message: DeadLetterMessage) {
      if (sender.fail) throw new Error('SQS is unavailable');
      sender.sent.push(message);
    },
  };
  return sender;
}

/**
 * Creates the on-demand table `name` keyed by the String `pk`, with a `NEW_AND_OLD_IMAGES`
 * stream, waits until it exists, and returns its stream ARN. The caller deletes it.
 */
export async function createStreamTable(client: DynamoDBClient, name: string): Promise<string> {
  const { TableDescription } = await client.send(
    new CreateTableCommand({
      TableName: name,
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      BillingMode: 'PAY_PER_REQUEST',
      StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
    }),
  );
  await waitUntilTableExists({ client, maxWaitTime: 30 }, { TableName: name });
  return TableDescription!.LatestStreamArn!;
}
