import { describe, expect, it } from 'vitest';
import { dynamoDbStreamRecordFrom, kinesisRecordFrom } from '../../../../scripts/support/stream-reader';

describe('dynamoDbStreamRecordFrom', () => {
  it('turns a GetRecords record into the Lambda event record, creation time in epoch seconds', () => {
    expect(
      dynamoDbStreamRecordFrom('arn:stream', {
        eventID: 'e-1',
        eventName: 'INSERT',
        eventVersion: '1.1',
        awsRegion: 'us-east-1',
        dynamodb: {
          ApproximateCreationDateTime: new Date(1_767_225_600_000),
          Keys: { pk: { S: 'ORDER#o-1' } },
          NewImage: { pk: { S: 'ORDER#o-1' }, amount: { N: '4200' } },
          SequenceNumber: '100',
          SizeBytes: 0,
          StreamViewType: 'NEW_AND_OLD_IMAGES',
        },
      }),
    ).toEqual({
      eventID: 'e-1',
      eventName: 'INSERT',
      eventVersion: '1.1',
      eventSource: 'aws:dynamodb',
      awsRegion: 'us-east-1',
      dynamodb: {
        ApproximateCreationDateTime: 1_767_225_600,
        Keys: { pk: { S: 'ORDER#o-1' } },
        NewImage: { pk: { S: 'ORDER#o-1' }, amount: { N: '4200' } },
        SequenceNumber: '100',
        SizeBytes: 0,
        StreamViewType: 'NEW_AND_OLD_IMAGES',
      },
      eventSourceARN: 'arn:stream',
    });
  });
});

describe('kinesisRecordFrom', () => {
  it('turns a GetRecords record into the Lambda event record, data in base64 and arrival in epoch seconds', () => {
    expect(
      kinesisRecordFrom('arn:kinesis', 'shardId-000000000001', {
        PartitionKey: 'order-1',
        SequenceNumber: '4960',
        Data: new Uint8Array([0x1f, 0x8b, 0x00, 0xff]),
        ApproximateArrivalTimestamp: new Date(1_767_225_600_500),
      }),
    ).toEqual({
      kinesis: {
        kinesisSchemaVersion: '1.0',
        partitionKey: 'order-1',
        sequenceNumber: '4960',
        data: 'H4sA/w==',
        approximateArrivalTimestamp: 1_767_225_600.5,
      },
      eventSource: 'aws:kinesis',
      eventVersion: '1.0',
      eventID: 'shardId-000000000001:4960',
      eventName: 'aws:kinesis:record',
      invokeIdentityArn: 'arn:aws:iam::000000000000:role/consumer',
      awsRegion: 'us-east-1',
      eventSourceARN: 'arn:kinesis',
    });
  });
});
