/**
 * Reading a stream as Lambda's event source mappings would deliver it: every record of a
 * Kinesis shard or of a table's stream, read from `TRIM_HORIZON` with `GetRecords` (what a
 * replay from the start of the retention sees), each turned into the record of a Lambda event.
 * Shared by the scripts (`npm start`) and the tests; not part of the package. Binary attributes
 * of a table stream's records are not converted back to base64 (the SDK decodes them).
 */
import {
  DescribeStreamCommand,
  type DynamoDBStreamsClient,
  type _Record as DynamoDbGetRecordsRecord,
  GetRecordsCommand as GetDynamoDbRecordsCommand,
  GetShardIteratorCommand as GetDynamoDbShardIteratorCommand,
} from '@aws-sdk/client-dynamodb-streams';
import {
  GetRecordsCommand,
  GetShardIteratorCommand,
  type KinesisClient,
  type _Record as KinesisGetRecordsRecord,
} from '@aws-sdk/client-kinesis';
import type { AttributeValue, DynamoDbStreamRecord, KinesisStreamRecord } from '../../lambda/streams';

/** A Kinesis record as Lambda would deliver what `GetRecords` returned from `shardId`. */
export function kinesisRecordFrom(
  streamArn: string,
  shardId: string,
  record: KinesisGetRecordsRecord,
): KinesisStreamRecord {
  return {
    kinesis: {
      kinesisSchemaVersion: '1.0',
      partitionKey: record.PartitionKey!,
      sequenceNumber: record.SequenceNumber!,
      data: Buffer.from(record.Data!).toString('base64'),
      approximateArrivalTimestamp: (record.ApproximateArrivalTimestamp?.getTime() ?? 0) / 1000,
    },
    eventSource: 'aws:kinesis',
    eventVersion: '1.0',
    eventID: `${shardId}:${record.SequenceNumber}`,
    eventName: 'aws:kinesis:record',
    invokeIdentityArn: 'arn:aws:iam::000000000000:role/consumer',
    awsRegion: 'us-east-1',
    eventSourceARN: streamArn,
  };
}

/** A DynamoDB Streams record as Lambda would deliver what `GetRecords` returned, creation time in epoch seconds. */
export function dynamoDbStreamRecordFrom(
  streamArn: string,
  record: DynamoDbGetRecordsRecord,
): DynamoDbStreamRecord {
  const change = record.dynamodb!;
  return {
    eventID: record.eventID,
    eventName: record.eventName,
    eventVersion: record.eventVersion,
    eventSource: 'aws:dynamodb',
    awsRegion: record.awsRegion,
    dynamodb: {
      ApproximateCreationDateTime: (change.ApproximateCreationDateTime?.getTime() ?? 0) / 1000,
      Keys: change.Keys as Record<string, AttributeValue>,
      ...(change.NewImage === undefined
        ? {}
        : { NewImage: change.NewImage as Record<string, AttributeValue> }),
      ...(change.OldImage === undefined
        ? {}
        : { OldImage: change.OldImage as Record<string, AttributeValue> }),
      SequenceNumber: change.SequenceNumber!,
      SizeBytes: change.SizeBytes,
      StreamViewType: change.StreamViewType,
    },
    eventSourceARN: streamArn,
  };
}

/** Every record of one shard of a Kinesis stream, read from `TRIM_HORIZON` to its tip. */
export async function readKinesisShard(
  kinesis: KinesisClient,
  streamArn: string,
  shardId: string,
): Promise<KinesisStreamRecord[]> {
  const { ShardIterator } = await kinesis.send(
    new GetShardIteratorCommand({
      StreamARN: streamArn,
      ShardId: shardId,
      ShardIteratorType: 'TRIM_HORIZON',
    }),
  );
  const records: KinesisStreamRecord[] = [];
  let iterator = ShardIterator;
  while (iterator !== undefined) {
    const page = await kinesis.send(new GetRecordsCommand({ StreamARN: streamArn, ShardIterator: iterator }));
    const batch = page.Records ?? [];
    records.push(...batch.map((record) => kinesisRecordFrom(streamArn, shardId, record)));
    // An empty page at the tip of the shard: everything written so far has been read.
    iterator = batch.length === 0 || page.MillisBehindLatest === 0 ? undefined : page.NextShardIterator;
  }
  return records;
}

/** Every record of a table's stream, every shard read from `TRIM_HORIZON` to its tip. */
export async function readTableStream(
  streams: DynamoDBStreamsClient,
  streamArn: string,
): Promise<DynamoDbStreamRecord[]> {
  const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
  const records: DynamoDbStreamRecord[] = [];
  for (const shard of StreamDescription?.Shards ?? []) {
    const { ShardIterator } = await streams.send(
      new GetDynamoDbShardIteratorCommand({
        StreamArn: streamArn,
        ShardId: shard.ShardId,
        ShardIteratorType: 'TRIM_HORIZON',
      }),
    );
    let iterator = ShardIterator;
    while (iterator !== undefined) {
      const page = await streams.send(new GetDynamoDbRecordsCommand({ ShardIterator: iterator }));
      const batch = page.Records ?? [];
      records.push(...batch.map((record) => dynamoDbStreamRecordFrom(streamArn, record)));
      // An empty page: the shard's tip, everything written so far has been read.
      iterator = batch.length === 0 ? undefined : page.NextShardIterator;
    }
  }
  return records;
}
