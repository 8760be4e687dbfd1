/**
 * `createOutboxRelay`: the Lambda handler of the outbox table's DynamoDB Streams event source
 * mapping. It publishes each new outbox item to its destination with the event id as the
 * `idempotency-key` message attribute, in stream order, and checkpoints at the first record it
 * could not publish. It keeps no inbox: the stream is at-least-once, and the receiving consumer
 * dedups on the event id.
 */
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { EVENT_TYPE_ATTRIBUTE, IDEMPOTENCY_KEY_ATTRIBUTE, OUTBOX_ATTRIBUTES } from '../core/contract';
import type { DeadLetterSender } from '../core/dead-letter';
import { EffectivelyOnceError, expectMethods, expectOption } from '../core/errors';
import { createJsonLogger, type Logger } from '../core/logger';
import type {
  AttributeValue,
  DynamoDbStreamEvent,
  DynamoDbStreamRecord,
  StreamBatchResponse,
} from '../streams/stream-event';

/** One outbox event as the relay publishes it. */
export interface OutboxMessage {
  /** The event id: the `idempotency-key` attribute (and a FIFO queue's `MessageDeduplicationId`). */
  readonly id: string;
  /** The event's type: the `eo-event-type` attribute. */
  readonly type: string;
  /** The detail's JSON text, the message body. */
  readonly body: string;
  /** The entity, when the event names one: a FIFO queue's `MessageGroupId`. */
  readonly entity?: string;
}

/**
 * Where the relay publishes. `publish` resolves once the destination has the message, and
 * throws otherwise (the relay checkpoints and the stream delivers the record again). Publishing
 * the same message twice must be harmless downstream: carry `message.id` so the receiver dedups.
 */
export interface OutboxDestination {
  /** Publishes one event; resolves once the destination has it. */
  publish(message: OutboxMessage): Promise<void>;
}

/** Options of {@link sqsDestination}. */
export interface SqsDestinationOptions {
  /** The SQS client, created once at module scope. */
  readonly client: Pick<SQSClient, 'send'>;
  /** The queue's URL (`EO_OUTBOX_DESTINATION_QUEUE_URL`); a `.fifo` URL is a FIFO queue. */
  readonly queueUrl: string;
}

/**
 * An SQS queue as the relay's destination: the detail as the body, the event id and type as the
 * `idempotency-key` and `eo-event-type` attributes. On a FIFO queue the event id is the
 * `MessageDeduplicationId` (a re-publish within 5 minutes is dropped by SQS itself) and the
 * entity (else the type) the `MessageGroupId`.
 */
export function sqsDestination(options: SqsDestinationOptions): OutboxDestination {
  expectOption(
    typeof options === 'object' && options !== null,
    'sqsDestination(options)',
    'an object',
    options,
  );
  const { client, queueUrl } = options;
  expectMethods('client', client, ['send']);
  expectOption(typeof queueUrl === 'string' && queueUrl !== '', 'queueUrl', 'a non-empty string', queueUrl);
  const fifo = queueUrl.endsWith('.fifo');
  return {
    async publish(message) {
      await client.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: message.body,
          MessageAttributes: {
            [IDEMPOTENCY_KEY_ATTRIBUTE]: { DataType: 'String', StringValue: message.id },
            [EVENT_TYPE_ATTRIBUTE]: { DataType: 'String', StringValue: message.type },
          },
          ...(fifo
            ? { MessageDeduplicationId: message.id, MessageGroupId: message.entity ?? message.type }
            : {}),
        }),
      );
    },
  };
}

/** Options of {@link createOutboxRelay}, checked once (cold start). */
export interface OutboxRelayOptions {
  /** Where events go: {@link sqsDestination}, or an {@link OutboxDestination} of your own. */
  readonly destination: OutboxDestination;
  /**
   * Where a new item that is not an outbox event goes (no event id, type or body: written by
   * something else), with the reason, so the stream moves on.
   * @default none: such a record is retried, and the stream stops there until the mapping's
   * retries or record age run out
   */
  readonly deadLetter?: DeadLetterSender;
  /** Names the relay in its dead letters (`eo-consumer`) and log lines. @default 'outbox-relay' */
  readonly name?: string;
  /**
   * Where the relay logs a record it could not publish or that is not an outbox event: one
   * `warn` line with the sequence number, the event id and the error's name and code, never the
   * body. @default JSON lines on stdout
   */
  readonly logger?: Logger;
}

/** The relay's Lambda handler: a table stream event in, the checkpoint out. */
export type OutboxRelay = (event: DynamoDbStreamEvent) => Promise<StreamBatchResponse>;

/**
 * Creates the relay: the handler of the outbox table's stream mapping (enable
 * `ReportBatchItemFailures`; `StartingPosition: 'TRIM_HORIZON'`). Call it once, at module scope.
 *
 * Records run in order. An `INSERT` is published; a `MODIFY` or `REMOVE` (a rewrite of the same
 * event, its TTL expiry) is not. On the first record that cannot be published, the later ones
 * do not run and the response names its sequence number, where the mapping resumes: records
 * published before it may be published again, with the same id. The relay never loses an
 * event, and the receiving consumer, keyed by `fromAttribute('idempotency-key')`, applies each
 * once.
 *
 * @example
 * export const handler = createOutboxRelay({
 *   destination: sqsDestination({ client: sqs, queueUrl: process.env.EO_OUTBOX_DESTINATION_QUEUE_URL! }),
 * });
 */
export function createOutboxRelay(options: OutboxRelayOptions): OutboxRelay {
  expectOption(
    typeof options === 'object' && options !== null,
    'createOutboxRelay(options)',
    'an object',
    options,
  );
  const { destination, deadLetter, name = 'outbox-relay', logger = createJsonLogger() } = options;
  expectMethods('destination', destination, ['publish']);
  expectMethods('logger', logger, ['log']);
  if (deadLetter !== undefined) expectMethods('deadLetter', deadLetter, ['send']);
  expectOption(typeof name === 'string' && name !== '', 'name', 'a non-empty string', name);

  return async (event) => {
    const records = event?.Records;
    if (!Array.isArray(records)) {
      throw new EffectivelyOnceError('INVALID_EVENT', 'The outbox relay expects a DynamoDB Streams event');
    }
    for (const record of records as readonly DynamoDbStreamRecord[]) {
      const sequenceNumber = record?.dynamodb?.SequenceNumber;
      if (typeof sequenceNumber !== 'string' || sequenceNumber === '') {
        throw new EffectivelyOnceError(
          'INVALID_EVENT',
          'The outbox relay expects DynamoDB Streams records with `dynamodb.SequenceNumber`',
        );
      }
      if (record.eventName !== 'INSERT') continue;
      const message = outboxMessageOf(record.dynamodb.NewImage);
      try {
        if (message === undefined) await sendInvalid(record, sequenceNumber);
        else await destination.publish(message);
      } catch (error) {
        const { name: errorName, code } = (error ?? {}) as { name?: unknown; code?: unknown };
        logger.log({
          level: 'warn',
          message:
            message === undefined ? 'Outbox relay: not an outbox event' : 'Outbox relay: publish failed',
          relay: name,
          sequenceNumber,
          ...(message === undefined ? {} : { eventId: message.id, eventType: message.type }),
          ...(typeof errorName === 'string' ? { errorName } : {}),
          ...(typeof code === 'string' ? { code } : {}),
        });
        // Checkpoint here: this record and every later one come again.
        return { batchItemFailures: [{ itemIdentifier: sequenceNumber }] };
      }
    }
    return { batchItemFailures: [] };
  };

  async function sendInvalid(record: DynamoDbStreamRecord, sequenceNumber: string): Promise<void> {
    if (deadLetter === undefined) {
      throw new EffectivelyOnceError('VALIDATION', 'A new item of the outbox table is not an outbox event');
    }
    await deadLetter.send({
      body: JSON.stringify(record.dynamodb.Keys ?? {}),
      reason: `The new item is not an outbox event: it needs String \`${OUTBOX_ATTRIBUTES.pk}\`, \`${OUTBOX_ATTRIBUTES.type}\` and \`${OUTBOX_ATTRIBUTES.body}\` (the stream must carry new images)`,
      code: 'VALIDATION',
      consumer: name,
      sourceMessageId: record.eventID ?? sequenceNumber,
      attributes: {},
    });
  }
}

/** The message of an outbox item's new image; `undefined` when the image is not an outbox item. */
export function outboxMessageOf(
  image: Readonly<Record<string, AttributeValue>> | undefined,
): OutboxMessage | undefined {
  const text = (attribute: string): string | undefined => {
    const value = image?.[attribute];
    return value !== undefined && 'S' in value && value.S !== '' ? value.S : undefined;
  };
  const id = text(OUTBOX_ATTRIBUTES.pk);
  const type = text(OUTBOX_ATTRIBUTES.type);
  const body = text(OUTBOX_ATTRIBUTES.body);
  if (id === undefined || type === undefined || body === undefined) return undefined;
  const entity = text(OUTBOX_ATTRIBUTES.entity);
  return { id, type, body, ...(entity === undefined ? {} : { entity }) };
}
