/**
 * The SNS conformance layer: one test per documented limit, each with the boundary SNS accepts
 * and the value just past it that it refuses (by the exact error name the SDK would throw), then
 * the client wrapper that applies the checks before sending.
 */
import {
  InvalidParameterException,
  type MessageAttributeValue,
  PublishCommand,
  type PublishCommandInput,
  SubscribeCommand,
} from '@aws-sdk/client-sns';
import { describe, expect, it, vi } from 'vitest';
import {
  checkSnsPublish,
  createConformingSnsClient,
  SNS_DEFAULT_MAX_MESSAGE_BYTES,
  type SnsTopicLimits,
  snsMessageBytes,
} from '../../support/aws-limits/sns';

const STANDARD_ARN = 'arn:aws:sns:us-east-1:123456789012:orders';
const FIFO_ARN = 'arn:aws:sns:us-east-1:123456789012:orders.fifo';
const standard: SnsTopicLimits = { fifo: false };
const fifo: SnsTopicLimits = { fifo: true };

/** The error name SNS would answer `input` with on `topic`, or `undefined` when it accepts it. */
function refusal(input: Partial<PublishCommandInput>, topic: SnsTopicLimits = standard): string | undefined {
  const message = { TopicArn: STANDARD_ARN, Message: 'm', ...input };
  if (topic.fifo && !('MessageGroupId' in input)) message.MessageGroupId = 'g';
  return checkSnsPublish(message, topic)?.name;
}

/** The error name SNS would answer a message with one attribute `name` = `attribute`. */
const attributeRefusal = (name: string, attribute: MessageAttributeValue) =>
  refusal({ MessageAttributes: { [name]: attribute } });
const text = (value: string, DataType = 'String'): MessageAttributeValue => ({
  DataType,
  StringValue: value,
});

describe('checkSnsPublish', () => {
  it('refuses an empty message with InvalidParameterException', () => {
    expect(refusal({ Message: 'm' })).toBeUndefined();
    expect(refusal({ Message: '' })).toBe('InvalidParameterException');
  });

  it('refuses a message and attributes over 256 KiB on a topic with the default MaximumMessageSize', () => {
    const attributes = { k: text('x') }; // 1 + 6 + 1 bytes
    const body = 'é'.repeat((SNS_DEFAULT_MAX_MESSAGE_BYTES - 8) / 2); // 2 UTF-8 bytes each
    expect(snsMessageBytes({ Message: body, MessageAttributes: attributes })).toBe(
      SNS_DEFAULT_MAX_MESSAGE_BYTES,
    );
    expect(refusal({ Message: body, MessageAttributes: attributes })).toBeUndefined();
    const over = checkSnsPublish(
      { TopicArn: STANDARD_ARN, Message: `${body}a`, MessageAttributes: attributes },
      standard,
    );
    expect(over).toBeInstanceOf(InvalidParameterException);
    expect(over?.message).toContain('262145 bytes');
  });

  it("refuses a message over the topic's own MaximumMessageSize", () => {
    const topic = { fifo: false, maximumMessageSize: 1_048_576 };
    expect(refusal({ Message: 'x'.repeat(1_048_576) }, topic)).toBeUndefined();
    expect(refusal({ Message: 'x'.repeat(1_048_577) }, topic)).toBe('InvalidParameterException');
  });

  it('refuses a Subject of 100 characters or more', () => {
    expect(refusal({ Subject: 'é'.repeat(99) })).toBeUndefined();
    expect(refusal({ Subject: 'x'.repeat(100) })).toBe('InvalidParameterException');
  });

  it('refuses a Subject with a line break or control character', () => {
    expect(refusal({ Subject: 'Order shipped: #42 (ä)' })).toBeUndefined();
    for (const subject of [
      'line\nbreak',
      'carriage\rreturn',
      'tab\t',
      'nul\u0000',
      'del\u007F',
      'c1\u0085',
    ]) {
      expect({ subject, error: refusal({ Subject: subject }) }).toEqual({
        subject,
        error: 'InvalidParameterException',
      });
    }
  });

  it('refuses a json MessageStructure whose message is not a JSON object with a string default', () => {
    expect(refusal({ MessageStructure: 'json', Message: '{"default":"m","sqs":"n"}' })).toBeUndefined();
    for (const message of ['not json', '["default"]', '{"sqs":"n"}', '{"default":1}']) {
      expect({ message, error: refusal({ MessageStructure: 'json', Message: message }) }).toEqual({
        message,
        error: 'InvalidParameterException',
      });
    }
    expect(refusal({ MessageStructure: 'xml', Message: '{"default":"m"}' })).toBe(
      'InvalidParameterException',
    );
  });

  it('requires a MessageGroupId on a FIFO topic, not on a standard one', () => {
    expect(refusal({ MessageGroupId: 'g' }, fifo)).toBeUndefined();
    expect(refusal({}, standard)).toBeUndefined();
    expect(checkSnsPublish({ TopicArn: FIFO_ARN, Message: 'm' }, fifo)?.name).toBe(
      'InvalidParameterException',
    );
  });

  it('refuses a MessageGroupId that is empty, over 128 characters or not printable ASCII, on either topic type', () => {
    for (const topic of [standard, fifo]) {
      for (const id of ['g', 'x'.repeat(128), `Az09!"#$%&'()*+,-./:;<=>?@[\\]^_\`{|}~`]) {
        expect({ id, error: refusal({ MessageGroupId: id }, topic) }).toEqual({ id, error: undefined });
      }
      for (const id of ['', 'x'.repeat(129), 'group 1', 'é', 'tab\t']) {
        expect({ id, error: refusal({ MessageGroupId: id }, topic) }).toEqual({
          id,
          error: 'InvalidParameterException',
        });
      }
    }
  });

  it('refuses a MessageDeduplicationId on a FIFO topic that is empty, over 128 characters or not printable ASCII', () => {
    for (const id of ['d', 'x'.repeat(128), '~!a-Z_9']) {
      expect({ id, error: refusal({ MessageDeduplicationId: id }, fifo) }).toEqual({ id, error: undefined });
    }
    for (const id of ['', 'x'.repeat(129), 'dedup 1', 'é']) {
      expect({ id, error: refusal({ MessageDeduplicationId: id }, fifo) }).toEqual({
        id,
        error: 'InvalidParameterException',
      });
    }
  });

  it('requires a MessageDeduplicationId on a FIFO topic known to be without content-based deduplication', () => {
    const explicitOnly = { fifo: true, contentBasedDeduplication: false };
    expect(refusal({ MessageDeduplicationId: 'd' }, explicitOnly)).toBeUndefined();
    expect(refusal({}, { fifo: true, contentBasedDeduplication: true })).toBeUndefined();
    expect(refusal({}, fifo)).toBeUndefined(); // attribute not given: not checked
    expect(refusal({}, explicitOnly)).toBe('InvalidParameterException');
  });

  it('refuses a message attribute name over 256 characters or outside A-Z, a-z, 0-9, _, - and .', () => {
    for (const name of ['a', 'x'.repeat(256), 'Az09_-.x']) {
      expect({ name, error: attributeRefusal(name, text('v')) }).toEqual({ name, error: undefined });
    }
    for (const name of ['', 'x'.repeat(257), 'a b', 'a:b', 'é']) {
      expect({ name, error: attributeRefusal(name, text('v')) }).toEqual({
        name,
        error: 'InvalidParameterValueException',
      });
    }
  });

  it("refuses a message attribute name starting with 'AWS.' or 'Amazon.' in any casing", () => {
    expect(attributeRefusal('AWSx', text('v'))).toBeUndefined();
    expect(attributeRefusal('Amazonian.x', text('v'))).toBeUndefined();
    for (const name of ['AWS.x', 'aws.x', 'Amazon.x', 'AMAZON.x']) {
      expect({ name, error: attributeRefusal(name, text('v')) }).toEqual({
        name,
        error: 'InvalidParameterValueException',
      });
    }
  });

  it('refuses a message attribute name that starts or ends with a period or has two in a row', () => {
    expect(attributeRefusal('a.b.c', text('v'))).toBeUndefined();
    for (const name of ['.a', 'a.', 'a..b']) {
      expect({ name, error: attributeRefusal(name, text('v')) }).toEqual({
        name,
        error: 'InvalidParameterValueException',
      });
    }
  });

  it('refuses a data type that is not String, String.Array, Number or Binary, or is over 256 bytes', () => {
    for (const dataType of ['String', 'String.Array', 'Number', `String.${'x'.repeat(249)}`]) {
      expect({ dataType, error: attributeRefusal('a', text('1', dataType)) }).toEqual({
        dataType,
        error: undefined,
      });
    }
    expect(attributeRefusal('a', { DataType: 'Binary', BinaryValue: new Uint8Array([1]) })).toBeUndefined();
    for (const dataType of ['', 'string', 'Text', 'Numbers', `String.${'x'.repeat(250)}`]) {
      expect({ dataType, error: attributeRefusal('a', text('1', dataType)) }).toEqual({
        dataType,
        error: 'InvalidParameterValueException',
      });
    }
  });

  it('refuses an empty message attribute value', () => {
    expect(attributeRefusal('a', text(' '))).toBeUndefined();
    expect(attributeRefusal('a', text(''))).toBe('InvalidParameterValueException');
    expect(attributeRefusal('a', { DataType: 'Binary', BinaryValue: new Uint8Array() })).toBe(
      'InvalidParameterValueException',
    );
  });
});

describe('createConformingSnsClient', () => {
  /** A stand-in for an SNSClient: records what it is sent, answers `answer`. */
  function innerClient(answer: unknown = { MessageId: 'id-1' }) {
    return { region: 'eu-west-1', send: vi.fn(async (_command: unknown) => answer) };
  }

  it('passes other commands, accepted messages, non-topic publishes and client properties through unchanged', async () => {
    const inner = innerClient();
    const sns = createConformingSnsClient(inner);
    const subscribe = new SubscribeCommand({ TopicArn: STANDARD_ARN, Protocol: 'sqs' });
    const publish = new PublishCommand({
      TopicArn: STANDARD_ARN,
      Message: 'x'.repeat(SNS_DEFAULT_MAX_MESSAGE_BYTES),
    });
    const toPhone = new PublishCommand({ PhoneNumber: '+15555550100', Message: '' });

    await expect(sns.send(subscribe)).resolves.toEqual({ MessageId: 'id-1' });
    await sns.send(publish);
    await sns.send(toPhone);

    expect(inner.send.mock.calls.map(([command]) => command)).toEqual([subscribe, publish, toPhone]);
    expect(inner.send.mock.calls[1]![0]).toBe(publish);
    expect(sns.region).toBe('eu-west-1');
  });

  it('throws a refused Publish without calling the inner client', async () => {
    const inner = innerClient();
    const sns = createConformingSnsClient(inner);
    await expect(
      sns.send(
        new PublishCommand({
          TopicArn: STANDARD_ARN,
          Message: 'x'.repeat(SNS_DEFAULT_MAX_MESSAGE_BYTES + 1),
        }),
      ),
    ).rejects.toMatchObject({
      name: 'InvalidParameterException',
      $fault: 'client',
      $metadata: { httpStatusCode: 400 },
    });
    expect(inner.send).not.toHaveBeenCalled();
  });

  it("takes FIFO-ness from the topic ARN and a topic's MaximumMessageSize from the options", async () => {
    const inner = innerClient();
    const sns = createConformingSnsClient(inner, {
      topics: { [STANDARD_ARN]: { maximumMessageSize: 1024 } },
    });
    await expect(sns.send(new PublishCommand({ TopicArn: FIFO_ARN, Message: 'm' }))).rejects.toMatchObject({
      name: 'InvalidParameterException',
    });
    await expect(
      sns.send(new PublishCommand({ TopicArn: STANDARD_ARN, Message: 'x'.repeat(1025) })),
    ).rejects.toMatchObject({ name: 'InvalidParameterException' });
    await sns.send(new PublishCommand({ TopicArn: `${STANDARD_ARN}-other`, Message: 'x'.repeat(1025) }));
    await sns.send(new PublishCommand({ TopicArn: FIFO_ARN, Message: 'm', MessageGroupId: 'g' }));
    expect(inner.send).toHaveBeenCalledTimes(2);
  });
});
