/**
 * The SQS conformance layer: one test per documented limit, each with the boundary SQS accepts
 * and the value just past it that it refuses (by the exact error name the SDK would throw), then
 * the client wrapper that applies the checks before sending.
 */
import {
  type MessageAttributeValue,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SendMessageBatchCommandInput,
  type SendMessageBatchRequestEntry,
  SendMessageCommand,
  type SendMessageCommandInput,
  SQSServiceException,
} from '@aws-sdk/client-sqs';
import { describe, expect, it, vi } from 'vitest';
import {
  checkSqsSendMessage,
  checkSqsSendMessageBatch,
  createConformingSqsClient,
  SQS_MAX_BATCH_BYTES,
  SQS_MAX_MESSAGE_BYTES,
  type SqsQueueLimits,
  sqsMessageBytes,
} from '../../support/aws-limits/sqs';

const STANDARD_URL = 'https://sqs.us-east-1.amazonaws.com/123456789012/orders';
const FIFO_URL = 'https://sqs.us-east-1.amazonaws.com/123456789012/orders.fifo';
const standard: SqsQueueLimits = { fifo: false };
const fifo: SqsQueueLimits = { fifo: true };

/** The error name SQS would answer `input` with on `queue`, or `undefined` when it accepts it. */
function refusal(
  input: Partial<SendMessageCommandInput>,
  queue: SqsQueueLimits = standard,
): string | undefined {
  const message = { QueueUrl: STANDARD_URL, MessageBody: 'm', ...input };
  if (queue.fifo && !('MessageGroupId' in input)) message.MessageGroupId = 'g';
  return checkSqsSendMessage(message, queue)?.name;
}

/** The error name SQS would answer a message with one attribute `name` = `attribute`. */
const attributeRefusal = (name: string, attribute: MessageAttributeValue) =>
  refusal({ MessageAttributes: { [name]: attribute } });
const text = (value: string, DataType = 'String'): MessageAttributeValue => ({
  DataType,
  StringValue: value,
});
const number = (value: string) => attributeRefusal('n', text(value, 'Number'));

/** `count` batch entries with ids `e0`, `e1`, ... */
const entries = (count: number, body = 'm'): SendMessageBatchRequestEntry[] =>
  Array.from({ length: count }, (_, index) => ({ Id: `e${index}`, MessageBody: body }));
const batch = (
  Entries: SendMessageBatchRequestEntry[],
  QueueUrl = STANDARD_URL,
): SendMessageBatchCommandInput => ({
  QueueUrl,
  Entries,
});
/** The request-level error name SQS would answer the batch with, or `undefined` when it takes the request. */
function batchRefusal(
  input: SendMessageBatchCommandInput,
  queue: SqsQueueLimits = standard,
): string | undefined {
  const check = checkSqsSendMessageBatch(input, queue);
  return check.kind === 'refused' ? check.error.name : undefined;
}

describe('checkSqsSendMessage', () => {
  it('answers a refusal with the exception the SDK throws: its class, name, client fault and HTTP 400', () => {
    expect(checkSqsSendMessage({ QueueUrl: STANDARD_URL, MessageBody: 'hello' }, standard)).toBeUndefined();
    const error = checkSqsSendMessage({ QueueUrl: STANDARD_URL, MessageBody: '\uFFFF' }, standard);
    expect(error).toBeInstanceOf(SQSServiceException);
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({
      name: 'InvalidMessageContents',
      $fault: 'client',
      $metadata: { httpStatusCode: 400 },
    });
    expect(error?.message).toContain("'#xFFFF'");
  });

  it('refuses an empty body with MissingParameter and accepts a one-character body', () => {
    expect(refusal({ MessageBody: 'x' })).toBeUndefined();
    expect(refusal({ MessageBody: '' })).toBe('MissingParameter');
  });

  it('refuses a body character outside #x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF', () => {
    for (const body of ['\t\n\r', ' ', '\uD7FF', '\uE000', '\uFFFD', '\u{10000}', '\u{10FFFF}']) {
      expect({ body, name: refusal({ MessageBody: body }) }).toEqual({ body, name: undefined });
    }
    for (const body of ['\u0000', '\u0008', '\u001F', 'ok\uD800', '\uDFFF', '\uFFFE', '\uFFFF']) {
      expect({ body, name: refusal({ MessageBody: body }) }).toEqual({
        body,
        name: 'InvalidMessageContents',
      });
    }
  });

  it('refuses a message over 1 MiB, counting the UTF-8 body and every attribute name, data type and value', () => {
    const attributes = {
      k: text('v'), // 1 + 6 + 1 bytes
      b: { DataType: 'Binary', BinaryValue: new Uint8Array(3) }, // 1 + 6 + 3 bytes
    };
    const attributeBytes = 8 + 10;
    const atLimit = `é${'x'.repeat(SQS_MAX_MESSAGE_BYTES - attributeBytes - 2)}`;
    expect(sqsMessageBytes({ MessageBody: atLimit, MessageAttributes: attributes })).toBe(
      SQS_MAX_MESSAGE_BYTES,
    );
    expect(refusal({ MessageBody: atLimit, MessageAttributes: attributes })).toBeUndefined();
    expect(refusal({ MessageBody: `${atLimit}x`, MessageAttributes: attributes })).toBe(
      'InvalidParameterValue',
    );
    expect(refusal({ MessageBody: 'x'.repeat(SQS_MAX_MESSAGE_BYTES + 1) })).toBe('InvalidParameterValue');
  });

  it("refuses a message over the queue's own MaximumMessageSize", () => {
    const small = { fifo: false, maximumMessageSize: 1024 };
    expect(refusal({ MessageBody: 'x'.repeat(1024) }, small)).toBeUndefined();
    expect(refusal({ MessageBody: 'x'.repeat(1025) }, small)).toBe('InvalidParameterValue');
  });

  it('refuses more than ten message attributes', () => {
    const attributes = (count: number) =>
      Object.fromEntries(Array.from({ length: count }, (_, index) => [`a${index}`, text('v')]));
    expect(refusal({ MessageAttributes: attributes(10) })).toBeUndefined();
    expect(refusal({ MessageAttributes: attributes(11) })).toBe('InvalidParameterValue');
  });

  it('refuses an attribute name longer than 256 characters', () => {
    expect(attributeRefusal('a'.repeat(256), text('v'))).toBeUndefined();
    expect(attributeRefusal('a'.repeat(257), text('v'))).toBe('InvalidParameterValue');
  });

  it('refuses an attribute name with a character other than A-Z, a-z, 0-9, underscore, hyphen and period', () => {
    expect(attributeRefusal('Az09_-.x', text('v'))).toBeUndefined();
    for (const name of ['', 'a b', 'a:b', 'é', 'a/b']) {
      expect({ name, error: attributeRefusal(name, text('v')) }).toEqual({
        name,
        error: 'InvalidParameterValue',
      });
    }
  });

  it('refuses an attribute name starting with AWS. or Amazon. in any casing', () => {
    for (const name of ['AWSx', 'Amazonian', 'my.AWS.x', 'AWS-x']) {
      expect({ name, error: attributeRefusal(name, text('v')) }).toEqual({ name, error: undefined });
    }
    for (const name of ['AWS.x', 'aws.x', 'Amazon.x', 'AMAZON.x']) {
      expect({ name, error: attributeRefusal(name, text('v')) }).toEqual({
        name,
        error: 'InvalidParameterValue',
      });
    }
  });

  it('refuses an attribute name that starts or ends with a period or has two periods in a row', () => {
    expect(attributeRefusal('a.b.c', text('v'))).toBeUndefined();
    for (const name of ['.a', 'a.', 'a..b']) {
      expect({ name, error: attributeRefusal(name, text('v')) }).toEqual({
        name,
        error: 'InvalidParameterValue',
      });
    }
  });

  it('refuses a data type other than String, Number or Binary, each with an optional custom label', () => {
    for (const type of ['String', 'Number.int', 'Binary.png', 'String.x-y']) {
      const attribute = type.startsWith('Binary')
        ? { DataType: type, BinaryValue: new Uint8Array(1) }
        : text('1', type);
      expect({ type, error: attributeRefusal('a', attribute) }).toEqual({ type, error: undefined });
    }
    for (const type of ['string', 'Text', 'Integer', 'StringList', '']) {
      expect({ type, error: attributeRefusal('a', text('1', type)) }).toEqual({
        type,
        error: 'InvalidParameterValue',
      });
    }
  });

  it('refuses a data type longer than 256 characters', () => {
    expect(attributeRefusal('a', text('v', `String.${'x'.repeat(249)}`))).toBeUndefined();
    expect(attributeRefusal('a', text('v', `String.${'x'.repeat(250)}`))).toBe('InvalidParameterValue');
  });

  it('refuses an attribute with an empty or missing value', () => {
    expect(attributeRefusal('a', text('v'))).toBeUndefined();
    expect(attributeRefusal('a', { DataType: 'Binary', BinaryValue: new Uint8Array([0]) })).toBeUndefined();
    expect(attributeRefusal('a', text(''))).toBe('InvalidParameterValue');
    expect(attributeRefusal('a', { DataType: 'Number' })).toBe('InvalidParameterValue');
    expect(attributeRefusal('a', { DataType: 'Binary', BinaryValue: new Uint8Array(0) })).toBe(
      'InvalidParameterValue',
    );
    // A Binary attribute travels in BinaryValue: a StringValue does not count.
    expect(attributeRefusal('a', { DataType: 'Binary', StringValue: 'v' })).toBe('InvalidParameterValue');
  });

  it('refuses a String or Number value with a character outside the characters a body allows', () => {
    expect(attributeRefusal('a', text('\uFFFD\u{10FFFF}'))).toBeUndefined();
    expect(attributeRefusal('a', text('\uFFFF'))).toBe('InvalidMessageContents');
    expect(attributeRefusal('a', text('1\u0000', 'Number'))).toBe('InvalidMessageContents');
  });

  it('refuses a Number value that is not a decimal number', () => {
    for (const value of ['0', '-1.5', '+7', '.5', '5.', '12.5e3', '1E-3', '007']) {
      expect({ value, error: number(value) }).toEqual({ value, error: undefined });
    }
    for (const value of ['abc', '1,5', 'NaN', 'Infinity', '0x10', '1e', ' 1', '.', '-']) {
      expect({ value, error: number(value) }).toEqual({ value, error: 'InvalidParameterValue' });
    }
  });

  it('refuses a Number value with more than 38 significant digits, not counting leading and trailing zeros', () => {
    expect(number('1'.repeat(38))).toBeUndefined();
    expect(number(`000${'1'.repeat(38)}000`)).toBeUndefined();
    expect(number(`0.${'1'.repeat(38)}`)).toBeUndefined();
    expect(number('1'.repeat(39))).toBe('InvalidParameterValue');
    expect(number(`1.${'1'.repeat(38)}`)).toBe('InvalidParameterValue');
  });

  it('refuses a Number value whose magnitude is outside 10^-128 to 10^+126', () => {
    for (const value of ['1E+126', '-1E+126', '1E-128', '-1E-128', '0E+999', '0.000']) {
      expect({ value, error: number(value) }).toEqual({ value, error: undefined });
    }
    for (const value of [
      `1.${'0'.repeat(36)}1E+126`,
      '1E+127',
      '-2E+126',
      '9.9999999999999999999999999999999999999E-129',
      '1E-129',
      '1e99999999999999999999',
    ]) {
      expect({ value, error: number(value) }).toEqual({ value, error: 'InvalidParameterValue' });
    }
  });

  it('requires a MessageGroupId on a FIFO queue, not on a standard one', () => {
    expect(refusal({ MessageGroupId: 'g' }, fifo)).toBeUndefined();
    expect(refusal({}, standard)).toBeUndefined();
    expect(checkSqsSendMessage({ QueueUrl: FIFO_URL, MessageBody: 'm' }, fifo)?.name).toBe(
      'MissingParameter',
    );
  });

  it('refuses a MessageGroupId that is empty, over 128 characters or not printable ASCII, on either queue type', () => {
    for (const queue of [standard, fifo]) {
      for (const id of ['g', 'x'.repeat(128), `Az09!"#$%&'()*+,-./:;<=>?@[\\]^_\`{|}~`]) {
        expect({ id, error: refusal({ MessageGroupId: id }, queue) }).toEqual({ id, error: undefined });
      }
      for (const id of ['', 'x'.repeat(129), 'group 1', 'é', 'tab\t']) {
        expect({ id, error: refusal({ MessageGroupId: id }, queue) }).toEqual({
          id,
          error: 'InvalidParameterValue',
        });
      }
    }
  });

  it('refuses a MessageDeduplicationId on a FIFO queue that is empty, over 128 characters or not printable ASCII', () => {
    for (const id of ['d', 'x'.repeat(128), '~!a-Z_9']) {
      expect({ id, error: refusal({ MessageDeduplicationId: id }, fifo) }).toEqual({ id, error: undefined });
    }
    for (const id of ['', 'x'.repeat(129), 'dedup 1', 'é']) {
      expect({ id, error: refusal({ MessageDeduplicationId: id }, fifo) }).toEqual({
        id,
        error: 'InvalidParameterValue',
      });
    }
  });

  it('requires a MessageDeduplicationId on a FIFO queue known to be without content-based deduplication', () => {
    const explicitOnly = { fifo: true, contentBasedDeduplication: false };
    expect(refusal({ MessageDeduplicationId: 'd' }, explicitOnly)).toBeUndefined();
    expect(refusal({}, { fifo: true, contentBasedDeduplication: true })).toBeUndefined();
    expect(refusal({}, fifo)).toBeUndefined(); // attribute not given: not checked
    expect(refusal({}, explicitOnly)).toBe('InvalidParameterValue');
  });

  it('refuses a per-message DelaySeconds other than 0 on a FIFO queue', () => {
    expect(refusal({ DelaySeconds: 0 }, fifo)).toBeUndefined();
    expect(refusal({ DelaySeconds: 1 }, fifo)).toBe('InvalidParameterValue');
  });

  it('refuses a DelaySeconds outside 0 to 900 seconds on a standard queue', () => {
    expect(refusal({ DelaySeconds: 0 })).toBeUndefined();
    expect(refusal({ DelaySeconds: 900 })).toBeUndefined();
    expect(refusal({ DelaySeconds: 901 })).toBe('InvalidParameterValue');
    expect(refusal({ DelaySeconds: -1 })).toBe('InvalidParameterValue');
    expect(refusal({ DelaySeconds: 1.5 })).toBe('InvalidParameterValue');
  });
});

describe('checkSqsSendMessageBatch', () => {
  it('refuses a batch without entries with EmptyBatchRequest', () => {
    expect(batchRefusal(batch(entries(1)))).toBeUndefined();
    expect(batchRefusal(batch([]))).toBe('EmptyBatchRequest');
  });

  it('refuses more than ten entries with TooManyEntriesInBatchRequest', () => {
    expect(batchRefusal(batch(entries(10)))).toBeUndefined();
    expect(batchRefusal(batch(entries(11)))).toBe('TooManyEntriesInBatchRequest');
  });

  it('refuses an entry id over 80 characters or with characters other than alphanumerics, hyphens and underscores', () => {
    for (const id of ['a', 'x'.repeat(80), 'Az-09_']) {
      expect({ id, error: batchRefusal(batch([{ Id: id, MessageBody: 'm' }])) }).toEqual({
        id,
        error: undefined,
      });
    }
    for (const id of ['', 'x'.repeat(81), 'a:b', 'a.b', 'a b']) {
      expect({ id, error: batchRefusal(batch([{ Id: id, MessageBody: 'm' }])) }).toEqual({
        id,
        error: 'InvalidBatchEntryId',
      });
    }
  });

  it('refuses two entries with the same id with BatchEntryIdsNotDistinct', () => {
    expect(
      batchRefusal(
        batch([
          { Id: 'a', MessageBody: 'm' },
          { Id: 'A', MessageBody: 'm' },
        ]),
      ),
    ).toBeUndefined();
    expect(
      batchRefusal(
        batch([
          { Id: 'a', MessageBody: 'm' },
          { Id: 'a', MessageBody: 'n' },
        ]),
      ),
    ).toBe('BatchEntryIdsNotDistinct');
  });

  it('refuses a batch whose messages, attributes included, add up to more than 1 MiB with BatchRequestTooLong', () => {
    const withAttribute = (body: string): SendMessageBatchRequestEntry => ({
      Id: 'big',
      MessageBody: body,
      MessageAttributes: { k: text('x') }, // 1 + 6 + 1 bytes
    });
    const body = 'a'.repeat(SQS_MAX_BATCH_BYTES - 8 - 1);
    expect(batchRefusal(batch([withAttribute(body), { Id: 'small', MessageBody: 'a' }]))).toBeUndefined();
    const over = checkSqsSendMessageBatch(
      batch([withAttribute(`${body}a`), { Id: 'small', MessageBody: 'a' }]),
      standard,
    );
    expect(over.kind === 'refused' && over.error).toMatchObject({
      name: 'BatchRequestTooLong',
      message: 'Batch requests cannot be longer than 1048576 bytes. You have sent 1048577 bytes.',
    });
  });

  it('reports each entry that breaks a message limit as a sender-fault failure and accepts the others', () => {
    const queue = { fifo: false, maximumMessageSize: 1024 };
    const check = checkSqsSendMessageBatch(
      batch([
        { Id: 'fits', MessageBody: 'a'.repeat(1024) },
        { Id: 'too-big', MessageBody: 'a'.repeat(1025) },
        { Id: 'bad-character', MessageBody: '\uFFFF' },
        { Id: 'empty', MessageBody: '' },
      ]),
      queue,
    );
    expect(check.kind === 'checked' && check.accepted.map((entry) => entry.Id)).toEqual(['fits']);
    expect(check.kind === 'checked' && check.failed).toEqual([
      {
        Id: 'too-big',
        SenderFault: true,
        Code: 'InvalidParameterValue',
        Message: expect.stringContaining('1024'),
      },
      { Id: 'bad-character', SenderFault: true, Code: 'InvalidMessageContents', Message: expect.any(String) },
      { Id: 'empty', SenderFault: true, Code: 'MissingParameter', Message: expect.any(String) },
    ]);
  });

  it('refuses a whole FIFO batch in which an entry has no MessageGroupId', () => {
    const grouped = { Id: 'a', MessageBody: 'm', MessageGroupId: 'g' };
    expect(batchRefusal(batch([grouped, { ...grouped, Id: 'b' }], FIFO_URL), fifo)).toBeUndefined();
    expect(batchRefusal(batch([grouped, { Id: 'b', MessageBody: 'm' }], FIFO_URL), fifo)).toBe(
      'InvalidParameterValue',
    );
  });

  it('refuses a whole FIFO batch without a MessageDeduplicationId on a queue without content-based deduplication', () => {
    const queue = { fifo: true, contentBasedDeduplication: false };
    const entry = { Id: 'a', MessageBody: 'm', MessageGroupId: 'g', MessageDeduplicationId: 'd' };
    expect(batchRefusal(batch([entry], FIFO_URL), queue)).toBeUndefined();
    expect(batchRefusal(batch([{ ...entry, MessageDeduplicationId: undefined }], FIFO_URL), queue)).toBe(
      'InvalidParameterValue',
    );
  });
});

describe('createConformingSqsClient', () => {
  /** A stand-in for an SQSClient: records what it is sent, answers `answer`. */
  function innerClient(answer: unknown = { MessageId: 'id-1' }) {
    return { region: 'eu-west-1', send: vi.fn(async (_command: unknown) => answer) };
  }

  it('passes other commands, accepted messages and client properties through unchanged', async () => {
    const inner = innerClient();
    const sqs = createConformingSqsClient(inner);
    const receive = new ReceiveMessageCommand({ QueueUrl: STANDARD_URL });
    const sendOne = new SendMessageCommand({
      QueueUrl: STANDARD_URL,
      MessageBody: 'x'.repeat(SQS_MAX_MESSAGE_BYTES),
    });
    const sendMany = new SendMessageBatchCommand(batch(entries(10)));

    await expect(sqs.send(receive)).resolves.toEqual({ MessageId: 'id-1' });
    await sqs.send(sendOne);
    await sqs.send(sendMany);

    const sent = inner.send.mock.calls.map(([command]) => command);
    expect(sent).toHaveLength(3);
    expect(sent[0]).toBe(receive);
    expect(sent[1]).toBe(sendOne);
    expect(sent[2]).toBe(sendMany);
    expect(sqs.region).toBe('eu-west-1');
  });

  it('throws a refused SendMessage without calling the inner client', async () => {
    const inner = innerClient();
    const sqs = createConformingSqsClient(inner);
    await expect(
      sqs.send(
        new SendMessageCommand({
          QueueUrl: STANDARD_URL,
          MessageBody: 'x'.repeat(SQS_MAX_MESSAGE_BYTES + 1),
        }),
      ),
    ).rejects.toMatchObject({
      name: 'InvalidParameterValue',
      $fault: 'client',
      $metadata: { httpStatusCode: 400 },
    });
    expect(inner.send).not.toHaveBeenCalled();
  });

  it('throws a batch refused as a whole without calling the inner client', async () => {
    const inner = innerClient();
    const sqs = createConformingSqsClient(inner);
    await expect(sqs.send(new SendMessageBatchCommand(batch(entries(11))))).rejects.toMatchObject({
      name: 'TooManyEntriesInBatchRequest',
    });
    expect(inner.send).not.toHaveBeenCalled();
  });

  it('sends only the accepted entries of a batch and adds the refused ones to Failed', async () => {
    const inner = innerClient({ Successful: [{ Id: 'ok', MessageId: 'm-1' }], Failed: [] });
    const sqs = createConformingSqsClient(inner);
    const output = await sqs.send(
      new SendMessageBatchCommand(
        batch([
          { Id: 'ok', MessageBody: 'm' },
          { Id: 'bad', MessageBody: '\u0001' },
        ]),
      ),
    );
    expect(inner.send).toHaveBeenCalledTimes(1);
    const sent = inner.send.mock.calls[0]![0] as SendMessageBatchCommand;
    expect(sent).toBeInstanceOf(SendMessageBatchCommand);
    expect(sent.input).toEqual(batch([{ Id: 'ok', MessageBody: 'm' }]));
    expect(output).toEqual({
      Successful: [{ Id: 'ok', MessageId: 'm-1' }],
      Failed: [{ Id: 'bad', SenderFault: true, Code: 'InvalidMessageContents', Message: expect.any(String) }],
    });
  });

  it('answers a batch whose entries are all refused without calling the inner client', async () => {
    const inner = innerClient();
    const sqs = createConformingSqsClient(inner);
    const output = await sqs.send(new SendMessageBatchCommand(batch([{ Id: 'bad', MessageBody: '\u0001' }])));
    expect(inner.send).not.toHaveBeenCalled();
    expect(output).toEqual({
      Successful: [],
      Failed: [{ Id: 'bad', SenderFault: true, Code: 'InvalidMessageContents', Message: expect.any(String) }],
      $metadata: { httpStatusCode: 200 },
    });
  });

  it("takes FIFO-ness from the queue URL and a queue's MaximumMessageSize from the options", async () => {
    const inner = innerClient();
    const sqs = createConformingSqsClient(inner, {
      queues: { [STANDARD_URL]: { maximumMessageSize: 1024 } },
    });
    await expect(
      sqs.send(new SendMessageCommand({ QueueUrl: FIFO_URL, MessageBody: 'm' })),
    ).rejects.toMatchObject({
      name: 'MissingParameter',
    });
    await expect(
      sqs.send(new SendMessageCommand({ QueueUrl: STANDARD_URL, MessageBody: 'x'.repeat(1025) })),
    ).rejects.toMatchObject({ name: 'InvalidParameterValue' });
    await sqs.send(
      new SendMessageCommand({ QueueUrl: `${STANDARD_URL}-other`, MessageBody: 'x'.repeat(1025) }),
    );
    await sqs.send(new SendMessageCommand({ QueueUrl: FIFO_URL, MessageBody: 'm', MessageGroupId: 'g' }));
    expect(inner.send).toHaveBeenCalledTimes(2);
  });
});
