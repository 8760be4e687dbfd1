/**
 * A conformance layer for tests that send to Amazon SQS: it refuses what SQS documents it
 * refuses, so a test against the local emulator (which accepts oversize bodies, bad FIFO group
 * ids and more, see the shared LOCAL-AWS notes) fails where AWS would.
 *
 * Each limit is quoted beside its check from the AWS documentation, as the SQS API Reference
 * and the SDK model of `@aws-sdk/client-sqs` 3.11xx state it. Error names are the `name` the
 * SDK v3 gives the exception (SQS answers over AWS JSON with the query-compatible error code,
 * so `InvalidParameterValue`, not `InvalidParameterValueException`). Where the documentation
 * states a limit but not the error SQS answers with, the name comes from an SQS response
 * recorded against AWS, and the comment says so.
 *
 * @example
 * const sqs = createConformingSqsClient(new SQSClient(awsConfig()), {
 *   queues: { [smallQueueUrl]: { maximumMessageSize: 1024 } },
 * });
 * await sqs.send(new SendMessageCommand({ QueueUrl: smallQueueUrl, MessageBody: 'x'.repeat(1025) }));
 * // throws InvalidParameterValue, without sending
 */
import {
  BatchEntryIdsNotDistinct,
  BatchRequestTooLong,
  type BatchResultErrorEntry,
  EmptyBatchRequest,
  InvalidBatchEntryId,
  InvalidMessageContents,
  type MessageAttributeValue,
  SendMessageBatchCommand,
  type SendMessageBatchCommandInput,
  type SendMessageBatchCommandOutput,
  type SendMessageBatchRequestEntry,
  SendMessageCommand,
  type SendMessageCommandInput,
  SQSServiceException,
  TooManyEntriesInBatchRequest,
} from '@aws-sdk/client-sqs';
import { interceptSend, type Send } from './intercept';

/**
 * The largest message SQS accepts, and the default of a queue's `MaximumMessageSize`.
 *
 * "The maximum size is 1 MiB or 1,048,576 bytes"; `MaximumMessageSize`: "Valid values: An
 * integer from 1,024 bytes (1 KiB) up to 1,048,576 bytes (1 MiB). Default: 1,048,576 bytes".
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SetQueueAttributes.html
 */
export const SQS_MAX_MESSAGE_BYTES = 1_048_576;

/**
 * "The maximum allowed individual message size and the maximum total payload size (the sum of
 * the individual lengths of all of the batched messages) are both 1 MiB 1,048,576 bytes."
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessageBatch.html
 */
export const SQS_MAX_BATCH_BYTES = 1_048_576;

/**
 * "A single message batch request can include a maximum of 10 messages."
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html
 */
export const SQS_MAX_BATCH_ENTRIES = 10;

/**
 * "A message can contain up to 10 metadata attributes."
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html
 */
export const SQS_MAX_MESSAGE_ATTRIBUTES = 10;

/** The attributes of a queue that change what SQS accepts from a sender. */
export interface SqsQueueLimits {
  /** Whether the queue is a FIFO queue. */
  readonly fifo: boolean;
  /**
   * The queue's `MaximumMessageSize` attribute, in bytes.
   * @default SQS_MAX_MESSAGE_BYTES (1,048,576)
   */
  readonly maximumMessageSize?: number;
  /**
   * The FIFO queue's `ContentBasedDeduplication` attribute. When it is not given, a FIFO message
   * without a `MessageDeduplicationId` is not checked, since only the queue knows.
   * @default undefined
   */
  readonly contentBasedDeduplication?: boolean;
}

/** The names of the errors these checks answer with, as the SDK sets them on `error.name`. */
export type SqsRefusalName =
  | 'MissingParameter'
  | 'InvalidParameterValue'
  | 'InvalidMessageContents'
  | 'EmptyBatchRequest'
  | 'TooManyEntriesInBatchRequest'
  | 'InvalidBatchEntryId'
  | 'BatchEntryIdsNotDistinct'
  | 'BatchRequestTooLong';

/** What a batch check found: a refusal of the whole request, or the entries SQS would accept and fail. */
export type SqsBatchCheck =
  /** SQS refuses the whole request (HTTP 400), as `SendMessageBatch` throws. */
  | { readonly kind: 'refused'; readonly error: SQSServiceException }
  /** SQS answers 200: `failed` are the entries it would report in `Failed`, the others are `accepted`. */
  | {
      readonly kind: 'checked';
      readonly accepted: readonly SendMessageBatchRequestEntry[];
      readonly failed: readonly BatchResultErrorEntry[];
    };

/** Options of {@link createConformingSqsClient}. */
export interface ConformingSqsClientOptions {
  /**
   * Queue attributes that differ from AWS's defaults, by queue URL (for example a queue created
   * with `MaximumMessageSize: '1024'`). Whether a queue is FIFO comes from its URL.
   * @default {}
   */
  readonly queues?: Readonly<Record<string, Omit<SqsQueueLimits, 'fifo'>>>;
}

/** One refusal before it becomes an exception or a batch entry failure. */
interface Refusal {
  readonly name: SqsRefusalName;
  readonly message: string;
}

/** The message fields SendMessage and a SendMessageBatch entry share. */
type MessageFields = Omit<SendMessageCommandInput, 'QueueUrl'>;

const refuse = (name: SqsRefusalName, message: string): Refusal => ({ name, message });
const invalid = (message: string): Refusal => refuse('InvalidParameterValue', message);

/** The SDK's own class for each refusal SQS models as an error shape; the others are plain service exceptions. */
const MODELLED_ERRORS: Partial<
  Record<
    SqsRefusalName,
    new (options: {
      message: string;
      $metadata: { httpStatusCode: number };
    }) => SQSServiceException
  >
> = {
  InvalidMessageContents,
  EmptyBatchRequest,
  TooManyEntriesInBatchRequest,
  InvalidBatchEntryId,
  BatchEntryIdsNotDistinct,
  BatchRequestTooLong,
};

/** The exception the SDK throws for `refusal`: its class where SQS models one, with `$fault` and a 400. */
function toError(refusal: Refusal): SQSServiceException {
  const options = { message: refusal.message, $metadata: { httpStatusCode: 400 } };
  const Modelled = MODELLED_ERRORS[refusal.name];
  return Modelled
    ? new Modelled(options)
    : new SQSServiceException({ name: refusal.name, $fault: 'client', ...options });
}

// "#x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF. If a message
// contains characters outside the allowed set, Amazon SQS rejects the message and returns an
// InvalidMessageContents error."
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html
// (Earlier revisions of that page said SQS replaced such characters with U+FFFD; the current page
// and SDK model say it rejects them.) A lone UTF-16 surrogate is a code point in #xD800-#xDFFF,
// so it is refused too.
const ALLOWED_CHARACTERS =
  'the set of allowed characters is #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF';

function isAllowedCharacter(point: number): boolean {
  return (
    point === 0x9 ||
    point === 0xa ||
    point === 0xd ||
    (point >= 0x20 && point <= 0xd7ff) ||
    (point >= 0xe000 && point <= 0xfffd) ||
    (point >= 0x10000 && point <= 0x10ffff)
  );
}

/** The first character of `text` SQS does not allow, as `#xFFFF`, if any. */
function disallowedCharacter(text: string): string | undefined {
  for (const character of text) {
    const point = character.codePointAt(0)!;
    if (!isAllowedCharacter(point)) return `#x${point.toString(16).toUpperCase()}`;
  }
  return undefined;
}

const utf8Bytes = (text: string | undefined): number => Buffer.byteLength(text ?? '', 'utf8');
const characters = (text: string): number => [...text].length;

/** `String` or `Binary`: how an attribute's value travels, by the base of its data type. */
const transportOf = (dataType: string | undefined): 'String' | 'Binary' =>
  dataType?.startsWith('Binary') ? 'Binary' : 'String';

/**
 * The size SQS measures a message at: the body's UTF-8 bytes plus, for every message attribute,
 * its name, data type and value (UTF-8 for `String` and `Number`, raw bytes for `Binary`).
 *
 * "All parts of the message attribute, including Name, Type, and Value, are part of the message
 * size restriction (1 MiB or 1,048,576 bytes)."
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_MessageAttributeValue.html
 * Message system attributes (`AWSTraceHeader`) are not counted: "The size of a message system
 * attribute doesn't count towards the total size of a message." (API_SendMessage.html)
 */
export function sqsMessageBytes(message: MessageFields): number {
  let bytes = utf8Bytes(message.MessageBody);
  for (const [name, attribute] of Object.entries(message.MessageAttributes ?? {})) {
    const value =
      transportOf(attribute.DataType) === 'Binary'
        ? (attribute.BinaryValue?.byteLength ?? 0)
        : utf8Bytes(attribute.StringValue);
    bytes += utf8Bytes(name) + utf8Bytes(attribute.DataType) + value;
  }
  return bytes;
}

// MessageGroupId and MessageDeduplicationId: "The length of MessageGroupId is 128 characters.
// Valid values: alphanumeric characters and punctuation (!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~)."
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html
// Alphanumerics and that punctuation are exactly the printable ASCII characters but space.
const FIFO_ID = /^[\x21-\x7e]{1,128}$/;

/** The FIFO parameters SQS refuses for this queue, other than a missing group or deduplication id. */
function fifoParameterRefusal(message: MessageFields, queue: SqsQueueLimits): Refusal | undefined {
  const { MessageGroupId: groupId, MessageDeduplicationId: deduplicationId, DelaySeconds: delay } = message;
  // Checked on standard queues too, where a group id enables fair queues; AWS answers this
  // InvalidParameterValue on a standard queue (response recorded in LocalStack's AWS-validated
  // snapshot of test_send_message_to_standard_queue_with_invalid_message_group_id).
  if (groupId !== undefined && !FIFO_ID.test(groupId)) {
    return invalid(
      `Value ${groupId} for parameter MessageGroupId is invalid. Reason: MessageGroupId can only include ` +
        'alphanumeric and punctuation characters. 1 to 128 in length.',
    );
  }
  if (queue.fifo && deduplicationId !== undefined && !FIFO_ID.test(deduplicationId)) {
    return invalid(
      `Value ${deduplicationId} for parameter MessageDeduplicationId is invalid. Reason: MessageDeduplicationId ` +
        'can only include alphanumeric and punctuation characters. 1 to 128 in length.',
    );
  }
  if (delay === undefined) return undefined;
  // "When you set FifoQueue, you can't set DelaySeconds per message. You can set this parameter
  // only on a queue level." (API_SendMessage.html) AWS accepts an explicit 0 (LocalStack's
  // AWS-validated test_fifo_queue_send_message_with_zero_delay_defaults_to_queue_delay), so only a
  // delay is refused.
  if (queue.fifo && delay !== 0) {
    return invalid(
      `Value ${delay} for parameter DelaySeconds is invalid. Reason: The request include parameter that is ` +
        'not valid for this queue type.',
    );
  }
  // "DelaySeconds: ... Valid values: 0 to 900. Maximum: 15 minutes." (API_SendMessage.html)
  if (!Number.isInteger(delay) || delay < 0 || delay > 900) {
    return invalid(
      `Value ${delay} for parameter DelaySeconds is invalid. Reason: must be between 0 and 900, if provided.`,
    );
  }
  return undefined;
}

// Attribute names: "The message attribute name can contain the following characters: A-Z, a-z,
// 0-9, underscore (_), hyphen (-), and period (.). ... Can be up to 256 characters long; Can't
// start with AWS. or Amazon. (or any casing variations); ... Must not start or end with a period;
// Must not have periods in a sequence."
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-message-metadata.html
function attributeNameRefusal(name: string): Refusal | undefined {
  if (characters(name) > 256) {
    return invalid(`Message attribute name is ${characters(name)} characters long; at most 256 are allowed.`);
  }
  if (!/^[A-Za-z0-9_.-]+$/.test(name)) {
    return invalid(
      `Message attribute name '${name}' must be non-empty and contain only A-Z, a-z, 0-9, underscore, hyphen and period.`,
    );
  }
  if (/^(aws|amazon)\./i.test(name)) {
    return invalid(
      `Message attribute name '${name}' starts with 'AWS.' or 'Amazon.', which are reserved for AWS.`,
    );
  }
  if (name.startsWith('.') || name.endsWith('.') || name.includes('..')) {
    return invalid(
      `Message attribute name '${name}' must not start or end with a period or have two periods in a row.`,
    );
  }
  return undefined;
}

// Data types: "Amazon SQS supports the logical data types String, Number, and Binary with optional
// custom data type labels with the format .custom-data-type"; "Can be up to 256 characters long;
// Is case-sensitive". (sqs-message-metadata.html)
function dataTypeRefusal(name: string, dataType: string | undefined): Refusal | undefined {
  if (!dataType || !/^(String|Number|Binary)(\.|$)/.test(dataType)) {
    return invalid(
      `Message attribute '${name}' has data type '${dataType ?? ''}': it must be String, Number or Binary, ` +
        'optionally followed by a custom label (.label).',
    );
  }
  if (characters(dataType) > 256) {
    return invalid(
      `Message attribute '${name}' has a data type ${characters(dataType)} characters long; at most 256 are allowed.`,
    );
  }
  return undefined;
}

// Number: "A number can have up to 38 digits of precision, and it can be between 10^-128 and
// 10^+126. Amazon SQS removes leading and trailing zeroes." (sqs-message-metadata.html)
// The page does not say whether the two bounds themselves are accepted: they are, here.
const NUMBER = /^[+-]?(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;

function numberRefusal(name: string, text: string): Refusal | undefined {
  const match = NUMBER.exec(text);
  const whole = match?.[1] ?? '';
  const fraction = match?.[2] ?? '';
  if (!match || whole.length + fraction.length === 0) {
    return invalid(
      `Message attribute '${name}' has data type Number but its value '${text}' is not a number.`,
    );
  }
  const digits = (whole + fraction).replace(/^0+/, '');
  if (digits === '') return undefined;
  const significant = digits.replace(/0+$/, '');
  if (significant.length > 38) {
    return invalid(
      `Message attribute '${name}' has a Number with ${significant.length} significant digits; at most 38 are allowed.`,
    );
  }
  // The power of ten of the leading digit: 12.5e3 has its leading digit at 10^4.
  const leading = digits.length - 1 - fraction.length + Number(match[3] ?? '0');
  if (leading < -128 || leading > 126 || (leading === 126 && significant !== '1')) {
    return invalid(
      `Message attribute '${name}' has a Number '${text}' outside the range 10^-128 to 10^+126 (by magnitude).`,
    );
  }
  return undefined;
}

// "Name, type, value and the message body must not be empty or null."
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_MessageAttributeValue.html
// "For string data types, the Value attribute has the same restrictions on the content as the
// message body." (same page) The docs name no error for a character outside the set in an
// attribute value; this answers as for the body, InvalidMessageContents.
function attributeValueRefusal(name: string, attribute: MessageAttributeValue): Refusal | undefined {
  const transport = transportOf(attribute.DataType);
  const empty =
    transport === 'Binary' ? (attribute.BinaryValue?.byteLength ?? 0) === 0 : !attribute.StringValue;
  if (empty) {
    // The message AWS answers for an empty String value (LocalStack's AWS-validated snapshot of
    // test_send_message_with_empty_string_attribute).
    return invalid(
      `Message (user) attribute '${name}' must contain a non-empty value of type '${transport}'.`,
    );
  }
  if (transport === 'Binary') return undefined;
  const value = attribute.StringValue!;
  const character = disallowedCharacter(value);
  if (character) {
    return refuse(
      'InvalidMessageContents',
      `Invalid binary character '${character}' was found in the value of message attribute '${name}', ${ALLOWED_CHARACTERS}`,
    );
  }
  return attribute.DataType?.startsWith('Number') ? numberRefusal(name, value) : undefined;
}

function attributesRefusal(
  attributes: Record<string, MessageAttributeValue> | undefined,
): Refusal | undefined {
  const entries = Object.entries(attributes ?? {});
  if (entries.length > SQS_MAX_MESSAGE_ATTRIBUTES) {
    return invalid(
      `Number of message attributes [${entries.length}] exceeds the allowed maximum [${SQS_MAX_MESSAGE_ATTRIBUTES}].`,
    );
  }
  for (const [name, attribute] of entries) {
    const refusal =
      attributeNameRefusal(name) ??
      dataTypeRefusal(name, attribute.DataType) ??
      attributeValueRefusal(name, attribute);
    if (refusal) return refusal;
  }
  return undefined;
}

/** What SQS refuses in one message, whether sent alone or in a batch, save the FIFO ids a batch refuses whole. */
function messageRefusal(message: MessageFields, queue: SqsQueueLimits): Refusal | undefined {
  // "The minimum size is one character." (API_SendMessage.html) AWS answers MissingParameter for
  // an empty body (LocalStack's AWS-validated snapshot of test_send_empty_message).
  if (!message.MessageBody)
    return refuse('MissingParameter', 'The request must contain the parameter MessageBody.');
  const character = disallowedCharacter(message.MessageBody);
  if (character) {
    return refuse(
      'InvalidMessageContents',
      `Invalid binary character '${character}' was found in the message body, ${ALLOWED_CHARACTERS}`,
    );
  }
  const refusal = fifoParameterRefusal(message, queue) ?? attributesRefusal(message.MessageAttributes);
  if (refusal) return refusal;
  // The size is checked against the queue's MaximumMessageSize, inclusive: "The limit of how many
  // bytes a message can contain before Amazon SQS rejects it." (API_SetQueueAttributes.html)
  const maximum = queue.maximumMessageSize ?? SQS_MAX_MESSAGE_BYTES;
  const bytes = sqsMessageBytes(message);
  if (bytes > maximum) {
    return invalid(
      `One or more parameters are invalid. Reason: Message must be shorter than ${maximum} bytes ` +
        `(this one is ${bytes} bytes: body and message attributes).`,
    );
  }
  return undefined;
}

// "If you do not provide a MessageGroupId when sending a message to a FIFO queue, the action
// fails." "If you don't provide a MessageDeduplicationId and the queue doesn't have
// ContentBasedDeduplication set, the action fails with an error." (API_SendMessage.html)
// The error names and messages are AWS's as recorded in LocalStack's AWS-validated snapshots
// (test_posting_to_fifo_requires_deduplicationid_group_id and, for a batch, which fails whole
// with InvalidParameterValue, test_send_batch_missing_message_group_id_for_fifo_queue and
// test_send_batch_missing_deduplication_id_for_fifo_queue).
function missingFifoIdRefusal(
  message: MessageFields,
  queue: SqsQueueLimits,
  operation: 'SendMessage' | 'SendMessageBatch',
): Refusal | undefined {
  if (!queue.fifo) return undefined;
  if (message.MessageGroupId === undefined) {
    return refuse(
      operation === 'SendMessage' ? 'MissingParameter' : 'InvalidParameterValue',
      'The request must contain the parameter MessageGroupId.',
    );
  }
  if (message.MessageDeduplicationId === undefined && queue.contentBasedDeduplication === false) {
    return invalid(
      'The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly',
    );
  }
  return undefined;
}

/**
 * Checks a `SendMessage` request against SQS's documented limits for `queue`.
 *
 * @returns `undefined` when SQS would accept it, else the exception the AWS SDK v3 would throw
 * (`name` as SQS answers, `$fault: 'client'`, `$metadata.httpStatusCode` 400).
 */
export function checkSqsSendMessage(
  input: SendMessageCommandInput,
  queue: SqsQueueLimits,
): SQSServiceException | undefined {
  const refusal = messageRefusal(input, queue) ?? missingFifoIdRefusal(input, queue, 'SendMessage');
  return refusal ? toError(refusal) : undefined;
}

// Batch entry ids: "This identifier can have up to 80 characters. The following characters are
// accepted: alphanumeric characters, hyphens(-), and underscores (_)." "The Ids of a batch request
// need to be unique within a request."
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessageBatchRequestEntry.html
const BATCH_ENTRY_ID = /^[A-Za-z0-9_-]{1,80}$/;

/** What SQS refuses of a SendMessageBatch request as a whole. */
function batchRefusal(
  entries: readonly SendMessageBatchRequestEntry[],
  queue: SqsQueueLimits,
): Refusal | undefined {
  // EmptyBatchRequest: "The batch request doesn't contain any entries." (API_SendMessageBatch.html, Errors)
  if (entries.length === 0) {
    return refuse(
      'EmptyBatchRequest',
      'There should be at least one SendMessageBatchRequestEntry in the request.',
    );
  }
  if (entries.length > SQS_MAX_BATCH_ENTRIES) {
    return refuse(
      'TooManyEntriesInBatchRequest',
      `Maximum number of entries per request are ${SQS_MAX_BATCH_ENTRIES}. You have sent ${entries.length}.`,
    );
  }
  const badId = entries.find((entry) => !BATCH_ENTRY_ID.test(entry.Id ?? ''));
  if (badId) {
    return refuse(
      'InvalidBatchEntryId',
      'A batch entry id can only contain alphanumeric characters, hyphens and underscores. ' +
        'It can be at most 80 letters long.',
    );
  }
  const seen = new Set<string>();
  for (const { Id: id } of entries) {
    if (seen.has(id!)) return refuse('BatchEntryIdsNotDistinct', `Id ${id} repeated.`);
    seen.add(id!);
  }
  const bytes = entries.reduce((total, entry) => total + sqsMessageBytes(entry), 0);
  if (bytes > SQS_MAX_BATCH_BYTES) {
    return refuse(
      'BatchRequestTooLong',
      `Batch requests cannot be longer than ${SQS_MAX_BATCH_BYTES} bytes. You have sent ${bytes} bytes.`,
    );
  }
  for (const entry of entries) {
    const refusal = missingFifoIdRefusal(entry, queue, 'SendMessageBatch');
    if (refusal) return refusal;
  }
  return undefined;
}

/**
 * Checks a `SendMessageBatch` request against SQS's documented limits for `queue`: the limits of
 * the request as a whole (entry count, entry ids, total size, FIFO ids), which refuse it, then
 * each entry's message limits, which SQS reports per entry in `Failed` with `SenderFault: true`.
 */
export function checkSqsSendMessageBatch(
  input: SendMessageBatchCommandInput,
  queue: SqsQueueLimits,
): SqsBatchCheck {
  const entries = input.Entries ?? [];
  const refusal = batchRefusal(entries, queue);
  if (refusal) return { kind: 'refused', error: toError(refusal) };
  const accepted: SendMessageBatchRequestEntry[] = [];
  const failed: BatchResultErrorEntry[] = [];
  for (const entry of entries) {
    const entryRefusal = messageRefusal(entry, queue);
    if (entryRefusal) {
      failed.push({
        Id: entry.Id,
        SenderFault: true,
        Code: entryRefusal.name,
        Message: entryRefusal.message,
      });
    } else {
      accepted.push(entry);
    }
  }
  return { kind: 'checked', accepted, failed };
}

/** The limits of the queue at `queueUrl`: FIFO when its name ends in `.fifo`, with the attributes the options give it. */
export function sqsQueueLimits(
  queueUrl: string | undefined,
  options: ConformingSqsClientOptions = {},
): SqsQueueLimits {
  const url = queueUrl ?? '';
  return { ...options.queues?.[url], fifo: url.endsWith('.fifo') };
}

/**
 * Wraps an SQS client (an `SQSClient`, or anything with `send`) so that `SendMessageCommand` and
 * `SendMessageBatchCommand` are checked against SQS's documented limits before they are sent: a
 * refused message or batch throws the SDK's exception without reaching the inner client, and the
 * refused entries of a batch come back in `Failed` while the others are sent. Every other command,
 * and every property of the client, passes through unchanged.
 *
 * Commands are recognised with `instanceof`, so they must come from the same `@aws-sdk/client-sqs`
 * as this module (as they do in this repository's tests).
 */
export function createConformingSqsClient<Client extends { send(...args: never[]): unknown }>(
  client: Client,
  options: ConformingSqsClientOptions = {},
): Client {
  return interceptSend(client, (forward) => async (command, ...rest) => {
    if (command instanceof SendMessageCommand) {
      const error = checkSqsSendMessage(command.input, sqsQueueLimits(command.input.QueueUrl, options));
      if (error) throw error;
    } else if (command instanceof SendMessageBatchCommand) {
      const check = checkSqsSendMessageBatch(command.input, sqsQueueLimits(command.input.QueueUrl, options));
      if (check.kind === 'refused') throw check.error;
      if (check.failed.length > 0)
        return sendAcceptedEntries(forward, command, check.accepted, check.failed, rest);
    }
    return forward(command, ...rest);
  });
}

/** Sends the accepted entries of a batch (if any) and reports the refused ones in `Failed`, as SQS would. */
async function sendAcceptedEntries(
  forward: Send,
  command: SendMessageBatchCommand,
  accepted: readonly SendMessageBatchRequestEntry[],
  failed: readonly BatchResultErrorEntry[],
  rest: unknown[],
): Promise<SendMessageBatchCommandOutput> {
  if (accepted.length === 0) {
    return { Successful: [], Failed: [...failed], $metadata: { httpStatusCode: 200 } };
  }
  const output = (await forward(
    new SendMessageBatchCommand({ ...command.input, Entries: [...accepted] }),
    ...rest,
  )) as SendMessageBatchCommandOutput;
  return { ...output, Failed: [...(output.Failed ?? []), ...failed] };
}
