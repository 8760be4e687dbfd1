import type { Message } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { RECEIVE_ALL_ATTRIBUTES, toSqsRecord } from '../../lambda/worker/sqs-record';

describe('toSqsRecord', () => {
  it('converts a received FIFO message into the record shape Lambda delivers', () => {
    const message: Message = {
      MessageId: 'm-1',
      ReceiptHandle: 'rh-1',
      MD5OfBody: 'md5',
      Body: '{"orderId":"o-1"}',
      Attributes: {
        ApproximateReceiveCount: '2',
        SentTimestamp: '1767225600000',
        MessageGroupId: 'g-1',
        MessageDeduplicationId: 'd-1',
        SequenceNumber: '1',
      },
      MessageAttributes: {
        'correlation-id': { DataType: 'String', StringValue: 'c-1' },
        blob: { DataType: 'Binary', BinaryValue: new Uint8Array([1, 2, 255]) },
        tags: { DataType: 'String', StringListValues: ['a', 'b'] },
      },
    };

    expect(toSqsRecord(message)).toEqual({
      messageId: 'm-1',
      receiptHandle: 'rh-1',
      body: '{"orderId":"o-1"}',
      attributes: {
        ApproximateReceiveCount: '2',
        SentTimestamp: '1767225600000',
        MessageGroupId: 'g-1',
        MessageDeduplicationId: 'd-1',
        SequenceNumber: '1',
      },
      messageAttributes: {
        'correlation-id': {
          dataType: 'String',
          stringValue: 'c-1',
          stringListValues: [],
          binaryListValues: [],
        },
        blob: { dataType: 'Binary', binaryValue: 'AQL/', stringListValues: [], binaryListValues: [] },
        tags: { dataType: 'String', stringListValues: ['a', 'b'], binaryListValues: [] },
      },
      md5OfBody: 'md5',
      eventSource: 'aws:sqs',
    });
  });

  it('encodes a binary value that is a view into a larger buffer by its own bytes only', () => {
    const backing = new Uint8Array([9, 9, 1, 2, 9]);
    const record = toSqsRecord({
      MessageId: 'm-1',
      Body: 'x',
      MessageAttributes: { blob: { DataType: 'Binary', BinaryValue: backing.subarray(2, 4) } },
    });

    expect(record.messageAttributes.blob?.binaryValue).toBe(Buffer.from([1, 2]).toString('base64'));
  });

  it('gives a message without body or attributes an empty body and empty attribute maps', () => {
    expect(toSqsRecord({ MessageId: 'm-1' })).toEqual({
      messageId: 'm-1',
      body: '',
      attributes: {},
      messageAttributes: {},
      eventSource: 'aws:sqs',
    });
  });

  it('rejects a message without a MessageId as INVALID_EVENT', () => {
    expect(() => toSqsRecord({ Body: 'x' })).toThrow(
      expect.objectContaining({ code: 'INVALID_EVENT' }) as unknown as Error,
    );
  });

  it('asks ReceiveMessage for every system and message attribute', () => {
    expect(RECEIVE_ALL_ATTRIBUTES).toEqual({
      AttributeNames: ['All'],
      MessageSystemAttributeNames: ['All'],
      MessageAttributeNames: ['All'],
    });
  });
});
