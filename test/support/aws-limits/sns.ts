/**
 * A conformance layer for tests that publish to Amazon SNS: it refuses what SNS documents it
 * refuses, so a test against the local emulator fails where AWS would.
 *
 * Each limit is quoted beside its check from the AWS documentation, as the SNS API Reference and
 * the SDK model of `@aws-sdk/client-sns` 3.11xx state it. Error names are the `name` the SDK v3
 * gives the exception: SNS answers over the query protocol with `InvalidParameter` or
 * `ParameterValueInvalid`, which the SDK throws as `InvalidParameterException` and
 * `InvalidParameterValueException`.
 *
 * @example
 * const sns = createConformingSnsClient(new SNSClient(awsConfig()), {
 *   topics: { [largeTopicArn]: { maximumMessageSize: 1_048_576 } },
 * });
 * await sns.send(new PublishCommand({ TopicArn: fifoTopicArn, Message: 'm' }));
 * // throws InvalidParameterException (no MessageGroupId), without sending
 */
import {
  InvalidParameterException,
  InvalidParameterValueException,
  type MessageAttributeValue,
  PublishCommand,
  type PublishCommandInput,
  type SNSServiceException,
} from '@aws-sdk/client-sns';
import { interceptSend } from './intercept';

/**
 * The default of a topic's `MaximumMessageSize`, the largest message a topic accepts unless it
 * says otherwise.
 *
 * "By default, a message can be at most 256 KiB in size (262,144 bytes, not 262,144 characters).
 * When you publish to a topic, the maximum size is determined by the topic's MaximumMessageSize
 * attribute, which supports values up to 1 MiB (1,048,576 bytes)."
 * https://docs.aws.amazon.com/sns/latest/api/API_Publish.html
 */
export const SNS_DEFAULT_MAX_MESSAGE_BYTES = 262_144;

/** The attributes of a topic that change what SNS accepts from a publisher. */
export interface SnsTopicLimits {
  /** Whether the topic is a FIFO topic. */
  readonly fifo: boolean;
  /**
   * The topic's `MaximumMessageSize` attribute, in bytes.
   * @default SNS_DEFAULT_MAX_MESSAGE_BYTES (262,144)
   */
  readonly maximumMessageSize?: number;
  /**
   * The FIFO topic's `ContentBasedDeduplication` attribute. When it is not given, a FIFO message
   * without a `MessageDeduplicationId` is not checked, since only the topic knows.
   * @default undefined
   */
  readonly contentBasedDeduplication?: boolean;
}

/** Options of {@link createConformingSnsClient}. */
export interface ConformingSnsClientOptions {
  /**
   * Topic attributes that differ from AWS's defaults, by topic ARN (for example a topic created
   * with `MaximumMessageSize: '1048576'`). Whether a topic is FIFO comes from its ARN.
   * @default {}
   */
  readonly topics?: Readonly<Record<string, Omit<SnsTopicLimits, 'fifo'>>>;
}

/** The names of the errors these checks answer with, as the SDK sets them on `error.name`. */
export type SnsRefusalName = 'InvalidParameterException' | 'InvalidParameterValueException';

const parameter = (message: string): SNSServiceException =>
  new InvalidParameterException({
    message: `Invalid parameter: ${message}`,
    $metadata: { httpStatusCode: 400 },
  });
const parameterValue = (message: string): SNSServiceException =>
  new InvalidParameterValueException({ message, $metadata: { httpStatusCode: 400 } });

const utf8Bytes = (text: string | undefined): number => Buffer.byteLength(text ?? '', 'utf8');
const characters = (text: string): number => [...text].length;
const isBinary = (dataType: string | undefined): boolean => dataType?.startsWith('Binary') ?? false;

/**
 * The size SNS measures a message at: the message's UTF-8 bytes plus, for every message
 * attribute, its name, data type and value (UTF-8 for strings, raw bytes for `Binary`).
 *
 * "Amazon SNS validates the combined size of the message body and message attributes against
 * this value" (https://docs.aws.amazon.com/sns/latest/api/API_Publish.html); "All parts of the
 * message attribute, including name, type, and value, are included in the message size
 * restriction" (https://docs.aws.amazon.com/sns/latest/api/API_MessageAttributeValue.html).
 */
export function snsMessageBytes(input: Pick<PublishCommandInput, 'Message' | 'MessageAttributes'>): number {
  let bytes = utf8Bytes(input.Message);
  for (const [name, attribute] of Object.entries(input.MessageAttributes ?? {})) {
    const value = isBinary(attribute.DataType)
      ? (attribute.BinaryValue?.byteLength ?? 0)
      : utf8Bytes(attribute.StringValue);
    bytes += utf8Bytes(name) + utf8Bytes(attribute.DataType) + value;
  }
  return bytes;
}

// "Constraints: Subjects must be UTF-8 text with no line breaks or control characters, and less
// than 100 characters long." https://docs.aws.amazon.com/sns/latest/api/API_Publish.html
// Taken as written: 99 characters are accepted, 100 are refused.
function subjectRefusal(subject: string | undefined): SNSServiceException | undefined {
  if (subject === undefined) return undefined;
  if (characters(subject) >= 100) {
    return parameter(`Subject is ${characters(subject)} characters long; it must be less than 100.`);
  }
  // Control characters are Unicode's Cc category: U+0000-U+001F and U+007F-U+009F, which include
  // the line breaks \n and \r.
  if (/\p{Cc}/u.test(subject)) {
    return parameter('Subject must be UTF-8 text with no line breaks or control characters.');
  }
  return undefined;
}

// MessageStructure: "If you set MessageStructure to json, the value of the Message parameter
// must: be a syntactically valid JSON object; and contain at least a top-level JSON key of
// "default" with a value that is a string." "Failure to parse or validate any key or value in
// the message will cause the Publish call to return an error (no partial delivery)."
// https://docs.aws.amazon.com/sns/latest/api/API_Publish.html
function structureRefusal(input: PublishCommandInput): SNSServiceException | undefined {
  if (input.MessageStructure === undefined) return undefined;
  if (input.MessageStructure !== 'json') {
    return parameter(`MessageStructure must be json, got '${input.MessageStructure}'.`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(input.Message ?? '');
  } catch {
    return parameter('Message Structure - JSON message body failed to parse.');
  }
  const isObject = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed);
  if (!isObject || typeof (parsed as Record<string, unknown>).default !== 'string') {
    return parameter('Message Structure - No default entry in JSON message body.');
  }
  return undefined;
}

// MessageGroupId and MessageDeduplicationId: "can contain up to 128 alphanumeric characters
// (a-z, A-Z, 0-9) and punctuation (!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~)." For a standard topic's
// MessageGroupId: "When provided, the same validation rules apply as for FIFO topics."
// https://docs.aws.amazon.com/sns/latest/api/API_Publish.html
// Alphanumerics and that punctuation are exactly the printable ASCII characters but space.
const FIFO_ID = /^[\x21-\x7e]{1,128}$/;

function fifoRefusal(input: PublishCommandInput, topic: SnsTopicLimits): SNSServiceException | undefined {
  const { MessageGroupId: groupId, MessageDeduplicationId: deduplicationId } = input;
  if (groupId !== undefined && !FIFO_ID.test(groupId)) {
    return parameter(
      'MessageGroupId can only include alphanumeric and punctuation characters, 1 to 128 in length.',
    );
  }
  if (!topic.fifo) return undefined;
  // "For FIFO topics: ... Every message must include a MessageGroupId." (API_Publish.html)
  if (groupId === undefined) {
    return parameter('The MessageGroupId parameter is required for FIFO topics.');
  }
  if (deduplicationId !== undefined && !FIFO_ID.test(deduplicationId)) {
    return parameter(
      'MessageDeduplicationId can only include alphanumeric and punctuation characters, 1 to 128 in length.',
    );
  }
  // "If you don't provide a MessageDeduplicationId and the topic doesn't have
  // ContentBasedDeduplication set, the action fails with an error." (API_Publish.html)
  if (deduplicationId === undefined && topic.contentBasedDeduplication === false) {
    return parameter(
      'The topic should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly.',
    );
  }
  return undefined;
}

// Attribute names: "The message attribute name can contain the following characters: A-Z, a-z,
// 0-9, underscore(_), hyphen(-), and period (.). The name must not start or end with a period,
// and it should not have successive periods. ... The name can be up to 256 characters long. The
// name can't start with "AWS." or "Amazon." (or any variations in casing)".
// https://docs.aws.amazon.com/sns/latest/dg/sns-message-attributes.html
// The docs name no error for a bad attribute; these answer with ParameterValueInvalid
// (InvalidParameterValueException), which API_Publish.html lists for a parameter that "does not
// comply with the associated constraints". A test should not depend on which of the two it gets.
function attributeNameRefusal(name: string): SNSServiceException | undefined {
  const valid =
    characters(name) <= 256 &&
    /^[A-Za-z0-9_.-]+$/.test(name) &&
    !/^(aws|amazon)\./i.test(name) &&
    !name.startsWith('.') &&
    !name.endsWith('.') &&
    !name.includes('..');
  return valid
    ? undefined
    : parameterValue(
        `The message attribute name '${name}' is invalid: it must be 1 to 256 characters of A-Z, a-z, 0-9, ` +
          "'_', '-' and '.', not start with 'AWS.' or 'Amazon.', not start or end with '.' nor have '..'.",
      );
}

// Data types: "The supported message attribute data types are String, String.Array, Number, and
// Binary. ... The data type is case-sensitive, and it can be up to 256 bytes long."
// https://docs.aws.amazon.com/sns/latest/dg/sns-message-attributes.html
// The page does not say whether a custom label (`String.label`, as SQS allows) is refused, so a
// type is accepted when it starts with one of the base types: this layer refuses only what the
// docs say AWS refuses.
const DATA_TYPE = /^(String|Number|Binary)(\.|$)/;

// Values: "Name, type, and value must not be empty or null." (API_MessageAttributeValue.html)
function attributeRefusal(name: string, attribute: MessageAttributeValue): SNSServiceException | undefined {
  const nameRefusal = attributeNameRefusal(name);
  if (nameRefusal) return nameRefusal;
  const { DataType: dataType } = attribute;
  if (!dataType || !DATA_TYPE.test(dataType) || utf8Bytes(dataType) > 256) {
    return parameterValue(
      `The message attribute '${name}' has an invalid message attribute type '${dataType ?? ''}': it must ` +
        'start with String, Number or Binary and be at most 256 bytes long.',
    );
  }
  const empty = isBinary(dataType) ? (attribute.BinaryValue?.byteLength ?? 0) === 0 : !attribute.StringValue;
  if (empty) {
    return parameterValue(`The message attribute '${name}' must contain non-empty message attribute value.`);
  }
  return undefined;
}

/**
 * Checks a `Publish` request to a topic against SNS's documented limits for `topic`.
 *
 * @returns `undefined` when SNS would accept it, else the exception the AWS SDK v3 would throw
 * (`name` as the SDK names it, `$fault: 'client'`, `$metadata.httpStatusCode` 400).
 */
export function checkSnsPublish(
  input: PublishCommandInput,
  topic: SnsTopicLimits,
): SNSServiceException | undefined {
  // "the message body should not be empty or null." (API_MessageAttributeValue.html)
  if (!input.Message) return parameter('Empty message');
  const refusal =
    subjectRefusal(input.Subject) ??
    structureRefusal(input) ??
    fifoRefusal(input, topic) ??
    Object.entries(input.MessageAttributes ?? {})
      .map(([name, attribute]) => attributeRefusal(name, attribute))
      .find((found) => found !== undefined);
  if (refusal) return refusal;
  // "Amazon SNS validates the combined size of the message body and message attributes against
  // this value and returns an InvalidParameter error if the limit is exceeded." (API_Publish.html)
  const maximum = topic.maximumMessageSize ?? SNS_DEFAULT_MAX_MESSAGE_BYTES;
  const bytes = snsMessageBytes(input);
  if (bytes > maximum) {
    return parameter(
      `Message too long: ${bytes} bytes (message and message attributes); the topic allows ${maximum}.`,
    );
  }
  return undefined;
}

/** The limits of the topic at `topicArn`: FIFO when its name ends in `.fifo`, with the attributes the options give it. */
export function snsTopicLimits(
  topicArn: string | undefined,
  options: ConformingSnsClientOptions = {},
): SnsTopicLimits {
  const arn = topicArn ?? '';
  return { ...options.topics?.[arn], fifo: arn.endsWith('.fifo') };
}

/**
 * Wraps an SNS client (an `SNSClient`, or anything with `send`) so that a `PublishCommand` to a
 * topic is checked against SNS's documented limits before it is sent: a refused message throws
 * the SDK's exception without reaching the inner client. Every other command (`PublishBatch`
 * included, which this layer does not check), a publish to a phone number or endpoint, and every
 * property of the client pass through unchanged.
 *
 * Commands are recognised with `instanceof`, so they must come from the same `@aws-sdk/client-sns`
 * as this module (as they do in this repository's tests).
 */
export function createConformingSnsClient<Client extends { send(...args: never[]): unknown }>(
  client: Client,
  options: ConformingSnsClientOptions = {},
): Client {
  return interceptSend(client, (forward) => async (command, ...rest) => {
    if (command instanceof PublishCommand && command.input.TopicArn !== undefined) {
      const error = checkSnsPublish(command.input, snsTopicLimits(command.input.TopicArn, options));
      if (error) throw error;
    }
    return forward(command, ...rest);
  });
}
