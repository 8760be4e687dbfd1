import { describe, expect, it } from 'vitest';
import { parseOnFailureRecord, tableOfStream } from '../../../../cli/outbox/on-failure-record';

const streamArn = 'arn:aws:dynamodb:us-east-2:123456789012:table/mytable/stream/2019-11-14T00:04:06.388';

/** The on-failure record of a DynamoDB Streams event source, as the Lambda developer guide shows it. */
const batchInfo = {
  shardId: 'shardId-00000001573689847184-864758bb',
  startSequenceNumber: '800000000003126276362',
  endSequenceNumber: '800000000003126276370',
  approximateArrivalOfFirstRecord: '2019-11-14T00:13:19Z',
  approximateArrivalOfLastRecord: '2019-11-14T00:13:21Z',
  batchSize: 3,
  streamArn,
};
const record = {
  requestContext: {
    requestId: '316aa6d0-8154-xmpl-9af7-85d5f4a6bc81',
    functionArn: 'arn:aws:lambda:us-east-2:123456789012:function:myfunction',
    condition: 'RetryAttemptsExhausted',
    approximateInvokeCount: 1,
  },
  responseContext: { statusCode: 200, executedVersion: '$LATEST', functionError: 'Unhandled' },
  version: '1.0',
  timestamp: '2019-11-14T00:13:49.717Z',
  DDBStreamBatchInfo: batchInfo,
};

describe('parseOnFailureRecord', () => {
  it('reads the batch: shard, sequence numbers, arrival times, size, stream and condition', () => {
    expect(parseOnFailureRecord(JSON.stringify(record))).toEqual({
      kind: 'batch',
      batch: {
        shardId: 'shardId-00000001573689847184-864758bb',
        startSequenceNumber: '800000000003126276362',
        endSequenceNumber: '800000000003126276370',
        firstArrivalMillis: Date.UTC(2019, 10, 14, 0, 13, 19),
        lastArrivalMillis: Date.UTC(2019, 10, 14, 0, 13, 21),
        batchSize: 3,
        streamArn,
        condition: 'RetryAttemptsExhausted',
      },
    });
  });

  it('reads a record without a request context (the condition left out)', () => {
    expect(parseOnFailureRecord(JSON.stringify({ DDBStreamBatchInfo: batchInfo }))).toMatchObject({
      kind: 'batch',
      batch: { batchSize: 3 },
    });
  });

  it.each([
    [undefined, 'the body is not JSON'],
    ['{"DDBStreamBatchInfo":', 'the body is not JSON'],
    ['[1]', 'it has no `DDBStreamBatchInfo` object'],
    ['"text"', 'the body is not a JSON object'],
    [JSON.stringify({ version: '1.0' }), 'it has no `DDBStreamBatchInfo` object'],
    [
      JSON.stringify({ KinesisBatchInfo: batchInfo }),
      'it describes a Kinesis batch, not a DynamoDB Streams one',
    ],
    [
      JSON.stringify({ DDBStreamBatchInfo: { ...batchInfo, streamArn: '' } }),
      '`DDBStreamBatchInfo.streamArn` is not a non-empty string',
    ],
    [
      JSON.stringify({ DDBStreamBatchInfo: { ...batchInfo, startSequenceNumber: 800 } }),
      '`DDBStreamBatchInfo.startSequenceNumber` is not a non-empty string',
    ],
    [
      JSON.stringify({ DDBStreamBatchInfo: { ...batchInfo, approximateArrivalOfFirstRecord: 'yesterday' } }),
      '`DDBStreamBatchInfo.approximateArrivalOfFirstRecord` is not a time',
    ],
    [
      JSON.stringify({
        DDBStreamBatchInfo: { ...batchInfo, approximateArrivalOfLastRecord: '2019-11-14T00:13:18Z' },
      }),
      '`DDBStreamBatchInfo.approximateArrivalOfLastRecord` is before the first record',
    ],
    [
      JSON.stringify({ DDBStreamBatchInfo: { ...batchInfo, batchSize: 0 } }),
      '`DDBStreamBatchInfo.batchSize` is not a positive integer',
    ],
  ])('refuses %s: %s', (body, reason) => {
    expect(parseOnFailureRecord(body)).toEqual({ kind: 'invalid', reason });
  });
});

describe('tableOfStream', () => {
  it('names the table of a table stream ARN', () => {
    expect(tableOfStream(streamArn)).toBe('mytable');
  });

  it('names none for another ARN', () => {
    expect(tableOfStream('arn:aws:kinesis:us-east-2:123456789012:stream/mystream')).toBeUndefined();
  });
});
