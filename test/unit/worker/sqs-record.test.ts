import type { Message } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { RECEIVE_ALL_ATTRIBUTES, recordSourceOf, toSqsRecord } from '../../../lambda/worker/sqs-record';

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

describe('recordSourceOf', () => {
  it('names the queue of a URL as an event source mapping does', () => {
    expect(recordSourceOf('https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo')).toEqual({
      eventSourceARN: 'arn:aws:sqs:eu-west-1:123456789012:orders.fifo',
      awsRegion: 'eu-west-1',
    });
    expect(recordSourceOf('https://sqs.cn-north-1.amazonaws.com.cn/123456789012/orders')).toEqual({
      eventSourceARN: 'arn:aws-cn:sqs:cn-north-1:123456789012:orders',
      awsRegion: 'cn-north-1',
    });
    expect(recordSourceOf('https://us-gov-west-1.queue.amazonaws.com/123456789012/orders')).toEqual({
      eventSourceARN: 'arn:aws-us-gov:sqs:us-gov-west-1:123456789012:orders',
      awsRegion: 'us-gov-west-1',
    });
    // Another endpoint (a local emulator) tells no region.
    expect(recordSourceOf('http://127.0.0.1:4566/000000000000/orders.fifo')).toEqual({
      eventSourceARN: 'arn:aws:sqs::000000000000:orders.fifo',
    });
  });

  it('rejects a URL without an account and a queue name', () => {
    expect(() => recordSourceOf('https://sqs.eu-west-1.amazonaws.com/orders')).toThrow(
      'Expected `queueUrl` to end in /<account>/<queue name>, got `https://sqs.eu-west-1.amazonaws.com/orders`',
    );
  });
});

describe('toSqsRecord and its source', () => {
  it('carries the source queue, so a FIFO record is told by its ARN', () => {
    const source = recordSourceOf('https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo');

    const record = toSqsRecord({ MessageId: 'm-1', Body: 'x' }, source);

    expect(record).toMatchObject({
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:eu-west-1:123456789012:orders.fifo',
      awsRegion: 'eu-west-1',
    });
  });

  it('keeps a message attribute named __proto__ as an attribute, not as the prototype', () => {
    const record = toSqsRecord({
      MessageId: 'm-1',
      Body: 'x',
      MessageAttributes: JSON.parse('{"__proto__": {"DataType": "String", "StringValue": "p-1"}}'),
    });

    expect(Object.keys(record.messageAttributes)).toEqual(['__proto__']);
    expect(Object.getOwnPropertyDescriptor(record.messageAttributes, '__proto__')?.value).toEqual({
      dataType: 'String',
      stringValue: 'p-1',
      stringListValues: [],
      binaryListValues: [],
    });
  });
});

describe('toSqsRecord and unreadable attributes', () => {
  it('skips an attribute whose value the SDK could not read instead of failing the message', () => {
    // The JS SDK's receive leaves a `__proto__` entry with no value.
    const attributes = Object.defineProperty(
      { tenant: { DataType: 'String', StringValue: 't-1' } },
      '__proto__',
      {
        value: undefined,
        enumerable: true,
      },
    );

    const record = toSqsRecord({ MessageId: 'm-1', Body: 'x', MessageAttributes: attributes as never });

    expect(Object.keys(record.messageAttributes)).toEqual(['tenant']);
  });
});
