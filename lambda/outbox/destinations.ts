/**
 * The relay's destinations: an SQS queue, an EventBridge bus or an SNS topic (standard or
 * FIFO), each publishing one outbox event per request with its event id where the receiving
 * consumer keys on it.
 */
import { type EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { PublishCommand, type SNSClient } from '@aws-sdk/client-sns';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import {
  EVENT_TYPE_ATTRIBUTE,
  FAIR_QUEUE_IS_STANDARD,
  FAIR_TOPIC_IS_STANDARD,
  IDEMPOTENCY_KEY_ATTRIBUTE,
} from '../core/contract';
import { expectMethods, expectOption } from '../core/errors';
import { classifyPutEventsEntryError } from '../store/classify-aws-error';
import { eventBridgeDetail, type OutboxMessage } from './outbox-item';

/**
 * Where the relay publishes. `publish` resolves once the destination has the message, and
 * throws otherwise. The relay classifies what it throws (`classifyPublishError`): a refusal of
 * the request itself (an SDK validation error, or an `EffectivelyOnceError` whose code is
 * permanent, such as `VALIDATION`) dead-letters the event and the relay moves on; anything else
 * is retried (the relay checkpoints and the stream delivers the record again). Publishing
 * the same message twice must be harmless downstream: carry `message.id` so the receiver dedups.
 */
export interface OutboxDestination {
  /** Publishes one event; resolves once the destination has it. */
  publish(message: OutboxMessage): Promise<void>;
}

/** The message attributes of a published event: its id and its type, as `String` values. */
function eventAttributes(message: OutboxMessage) {
  return {
    [IDEMPOTENCY_KEY_ATTRIBUTE]: { DataType: 'String', StringValue: message.id },
    [EVENT_TYPE_ATTRIBUTE]: { DataType: 'String', StringValue: message.type },
  };
}

/** An event's `MessageGroupId` on a FIFO queue or topic or toward fair queues: its entity, else its type. */
function groupIdOf(message: OutboxMessage): string {
  return message.entity ?? message.type;
}

/**
 * The ids that group a send: on a FIFO queue or topic the event id as `MessageDeduplicationId`
 * and the group id; toward fair queues (`fair`) the group id alone, since a standard queue or
 * topic takes no deduplication id (the receiving consumer dedups on the event id); else none.
 * AWS: "We recommend setting a MessageGroupId on every message you send to a fair queue, using an
 * identifier that maps to a real entity in your system" (Amazon SQS Developer Guide, How Amazon
 * SQS fair queues work); "For standard topics: The MessageGroupId is optional and is forwarded
 * only to Amazon SQS standard subscriptions to activate fair queues" (Amazon SNS API Reference,
 * Publish).
 */
function groupingOf(
  fifo: boolean,
  fair: boolean,
): (message: OutboxMessage) => {
  readonly MessageDeduplicationId?: string;
  readonly MessageGroupId?: string;
} {
  if (fifo) return (message) => ({ MessageDeduplicationId: message.id, MessageGroupId: groupIdOf(message) });
  if (fair) return (message) => ({ MessageGroupId: groupIdOf(message) });
  return () => ({});
}

/** Options of {@link sqsDestination}. */
export interface SqsDestinationOptions {
  /** The SQS client, created once at module scope. */
  readonly client: Pick<SQSClient, 'send'>;
  /** The queue's URL (`EO_OUTBOX_DESTINATION_QUEUE_URL`); a `.fifo` URL is a FIFO queue. */
  readonly queueUrl: string;
  /**
   * Whether the queue is a fair queue (`EO_OUTBOX_DESTINATION_FAIR`): a standard queue whose
   * messages name their tenant in `MessageGroupId`. Each send then carries the event's entity
   * (else its type) as the `MessageGroupId`, as on a FIFO queue, and no deduplication id. A
   * `.fifo` URL is refused with it: a FIFO queue already groups by `MessageGroupId`.
   * @default false: on a standard queue, every message is a tenant of its own
   */
  readonly fairQueue?: boolean;
}

/**
 * An SQS queue as the relay's destination: the detail as the body, the event id and type as the
 * `idempotency-key` and `eo-event-type` attributes. On a FIFO queue the event id is the
 * `MessageDeduplicationId` (a re-publish within 5 minutes is dropped by SQS itself) and the
 * entity (else the type) the `MessageGroupId`. On a fair queue (`fairQueue: true`) the entity
 * (else the type) is the `MessageGroupId` too, the tenant SQS keeps fair. The receiving consumer
 * keys on `fromAttribute('idempotency-key')`.
 *
 * @example
 * const destination = sqsDestination({ client: new SQSClient({}), queueUrl });
 * const fair = sqsDestination({ client: new SQSClient({}), queueUrl: tenantsQueueUrl, fairQueue: true });
 */
export function sqsDestination(options: SqsDestinationOptions): OutboxDestination {
  expectOption(
    typeof options === 'object' && options !== null,
    'sqsDestination(options)',
    'an object',
    options,
  );
  const { client, queueUrl, fairQueue = false } = options;
  expectMethods('client', client, ['send']);
  expectOption(typeof queueUrl === 'string' && queueUrl !== '', 'queueUrl', 'a non-empty string', queueUrl);
  expectOption(typeof fairQueue === 'boolean', 'fairQueue', 'a boolean', fairQueue);
  const fifo = queueUrl.endsWith('.fifo');
  expectOption(
    !(fairQueue && fifo),
    'queueUrl',
    `a standard queue's URL (not ending in '.fifo') with \`fairQueue: true\`: ${FAIR_QUEUE_IS_STANDARD}`,
    queueUrl,
  );
  const grouping = groupingOf(fifo, fairQueue);
  return {
    async publish(message) {
      await client.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: message.body,
          MessageAttributes: eventAttributes(message),
          ...grouping(message),
        }),
      );
    },
  };
}

/** Options of {@link eventBridgeDestination}. */
export interface EventBridgeDestinationOptions {
  /** The EventBridge client, created once at module scope. */
  readonly client: Pick<EventBridgeClient, 'send'>;
  /** The bus's name or ARN (`EO_OUTBOX_DESTINATION_ARN`): `PutEvents` takes either. */
  readonly eventBusName: string;
  /**
   * The entries' `Source`, which the bus's rules match on (1-256 characters, not starting with
   * `aws.`, which AWS services use). The writer counts it in an entry's size, so it must be the
   * one the writer was given (`EO_OUTBOX_EVENT_SOURCE`).
   */
  readonly source: string;
}

/** The longest EventBridge `Source` and `DetailType`, characters. */
const MAX_EVENT_SOURCE_LENGTH = 256;

/**
 * Throws `INVALID_OPTIONS` unless `source` is an EventBridge `Source` an application may use:
 * 1-256 characters, not starting with `aws.`.
 */
export function assertEventSource(name: string, source: unknown): void {
  expectOption(
    typeof source === 'string' &&
      source.length > 0 &&
      source.length <= MAX_EVENT_SOURCE_LENGTH &&
      !source.startsWith('aws.'),
    name,
    "a string of 1 to 256 characters not starting with 'aws.'",
    source,
  );
}

/**
 * An EventBridge bus as the relay's destination. EventBridge carries no message attributes, so
 * the event id travels in the event: one `PutEvents` entry per event with `Source` the `source`
 * option, `DetailType` the event's type and `Detail` the metadata/data envelope
 * `{"metadata":{"idempotency-key":<id>,"type":<type>},"data":<detail>}`. An SQS queue that a rule
 * targets receives the whole event as its body, so its consumer takes its key and fingerprint
 * from `fromOutboxEnvelope()`: the key in `detail.metadata['idempotency-key']`, the fingerprint
 * over the detail. EventBridge gives each put its own `id` and `time`, so a re-published event's
 * body differs, and fingerprinting the whole body would make it a payload mismatch instead of a
 * duplicate.
 *
 * `PutEvents` answers success with `FailedEntryCount` above 0 when the entry was not accepted:
 * that is a failed publish, never a success. It throws `classifyPutEventsEntryError`'s error
 * with the entry's error code: `VALIDATION` for `InvalidArgument` and `MalformedDetail` (the
 * relay dead-letters the event), a retried code for `ThrottlingException`, `InternalFailure` and
 * the rest (the relay checkpoints).
 *
 * @example
 * const destination = eventBridgeDestination({ client: new EventBridgeClient({}), eventBusName: 'orders', source: 'orders' });
 */
export function eventBridgeDestination(options: EventBridgeDestinationOptions): OutboxDestination {
  expectOption(
    typeof options === 'object' && options !== null,
    'eventBridgeDestination(options)',
    'an object',
    options,
  );
  const { client, eventBusName, source } = options;
  expectMethods('client', client, ['send']);
  expectOption(
    typeof eventBusName === 'string' && eventBusName !== '',
    'eventBusName',
    'a bus name or ARN',
    eventBusName,
  );
  assertEventSource('source', source);
  return {
    async publish(message) {
      const result = await client.send(
        new PutEventsCommand({
          Entries: [
            {
              EventBusName: eventBusName,
              Source: source,
              DetailType: message.type,
              Detail: eventBridgeDetail(message),
            },
          ],
        }),
      );
      if ((result.FailedEntryCount ?? 0) > 0) throw classifyPutEventsEntryError(result.Entries?.[0]);
    },
  };
}

/** Options of {@link snsDestination}. */
export interface SnsDestinationOptions {
  /** The SNS client, created once at module scope. */
  readonly client: Pick<SNSClient, 'send'>;
  /** The topic's ARN (`EO_OUTBOX_DESTINATION_ARN`); a `.fifo` ARN is a FIFO topic. */
  readonly topicArn: string;
  /**
   * Whether the topic feeds SQS fair queues (`EO_OUTBOX_DESTINATION_FAIR`): each publish to the
   * standard topic then carries the event's entity (else its type) as the `MessageGroupId`,
   * which SNS forwards to the topic's SQS standard subscriptions only, and no deduplication id.
   * A `.fifo` ARN is refused with it: a FIFO topic already groups by `MessageGroupId`.
   * @default false: the topic's standard queues count every message as a tenant of its own
   */
  readonly fairQueue?: boolean;
}

/**
 * An SNS topic as the relay's destination: the detail as the `Message`, the event id and type as
 * the `idempotency-key` and `eo-event-type` message attributes. On a FIFO topic the event id is
 * the `MessageDeduplicationId` and the entity (else the type) the `MessageGroupId`. On a
 * standard topic feeding fair queues (`fairQueue: true`) the entity (else the type) is the
 * `MessageGroupId` too, which its SQS standard subscriptions receive as their tenant.
 *
 * The receiving consumer takes its key and fingerprint from `fromOutboxEnvelope()`, with or
 * without raw message delivery (`RawMessageDelivery`). With it, the message attributes arrive as
 * SQS message attributes and the body is the detail. Without it, the SQS body is SNS's JSON
 * notification (the attributes under `MessageAttributes`, the detail's JSON text in `Message`):
 * the helper fingerprints `Message` only, since `MessageId`, `Timestamp` and `Signature` differ
 * per publish and would make a re-published copy a payload mismatch.
 *
 * @example
 * const destination = snsDestination({ client: new SNSClient({}), topicArn });
 * const fair = snsDestination({ client: new SNSClient({}), topicArn: tenantsTopicArn, fairQueue: true });
 */
export function snsDestination(options: SnsDestinationOptions): OutboxDestination {
  expectOption(
    typeof options === 'object' && options !== null,
    'snsDestination(options)',
    'an object',
    options,
  );
  const { client, topicArn, fairQueue = false } = options;
  expectMethods('client', client, ['send']);
  expectOption(
    typeof topicArn === 'string' && topicArn.startsWith('arn:'),
    'topicArn',
    'a topic ARN',
    topicArn,
  );
  expectOption(typeof fairQueue === 'boolean', 'fairQueue', 'a boolean', fairQueue);
  const fifo = topicArn.endsWith('.fifo');
  expectOption(
    !(fairQueue && fifo),
    'topicArn',
    `a standard topic's ARN (not ending in '.fifo') with \`fairQueue: true\`: ${FAIR_TOPIC_IS_STANDARD}`,
    topicArn,
  );
  const grouping = groupingOf(fifo, fairQueue);
  return {
    async publish(message) {
      await client.send(
        new PublishCommand({
          TopicArn: topicArn,
          Message: message.body,
          MessageAttributes: eventAttributes(message),
          ...grouping(message),
        }),
      );
    },
  };
}
