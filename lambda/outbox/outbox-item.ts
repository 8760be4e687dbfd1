/**
 * Outbox items: what `unitOfWork.emit` and the outbox writer put in the outbox table, in the
 * same transaction as the business writes, for the relay to publish. Transport-free: ids,
 * attributes and the destination's size limit, checked before the commit.
 */

import {
  EVENT_TYPE_ATTRIBUTE,
  FAIR_QUEUE_IS_STANDARD,
  FAIR_TOPIC_IS_STANDARD,
  IDEMPOTENCY_KEY_ATTRIBUTE,
  MAX_DESTINATION_MESSAGE_BYTES,
  OUTBOX_ATTRIBUTES,
  OUTBOX_DESTINATION_KINDS,
  type OutboxDestinationKind,
} from '../core/contract';
import { describeValue, EffectivelyOnceError, expectOption } from '../core/errors';
import { fingerprintOf, sha256Hex } from '../core/fingerprint';
import { expiresAt } from '../core/time';
import { isSqsFifoId, isSqsText, toSqsJson } from '../dead-letter/sqs-limits';

/** An event to publish once its commit succeeds. */
export interface OutboxEvent<TDetail = unknown> {
  /** The event's type, as the receiving side dispatches on it (`OrderConfirmed`). 1-256 characters. */
  readonly type: string;
  /** The event's content, published as JSON text (the message body). */
  readonly detail: TDetail;
}

/** One outbox event as the relay publishes it. */
export interface OutboxMessage {
  /** The event id: the `idempotency-key` attribute (and a FIFO `MessageDeduplicationId`). */
  readonly id: string;
  /** The event's type: the `eo-event-type` attribute (an EventBridge entry's `DetailType`). */
  readonly type: string;
  /** The detail's JSON text, the message body. */
  readonly body: string;
  /** The entity, when the event names one: the `MessageGroupId` on a FIFO destination or a fair queue. */
  readonly entity?: string;
}

/**
 * What the destination's rules for a published event depend on: its kind, whether a queue or
 * topic is FIFO or a queue is fair (either way its events need a valid `MessageGroupId`) and, on
 * an EventBridge bus, the `Source` of its entries (counted in an entry's size).
 */
export type OutboxDestinationSizing =
  | {
      /** An SQS queue or SNS topic: the body and the two message attributes count. */
      readonly kind: Exclude<OutboxDestinationKind, 'eventbridge'>;
      /**
       * A FIFO queue or topic: the relay sends each event's `entity` (else its `type`) as the
       * `MessageGroupId`, which must be 1 to 128 ASCII letters, digits and punctuation.
       * @default false
       */
      readonly fifo?: boolean;
      /**
       * An SQS fair queue (a standard queue), or a standard SNS topic whose SQS subscriptions
       * are fair queues: the relay sends each event's `entity` (else its `type`) as the
       * `MessageGroupId`, under the same rule as on a FIFO queue or topic.
       * @default false
       */
      readonly fair?: boolean;
    }
  | {
      /** An EventBridge bus: the whole entry counts (`Source`, `DetailType`, the `Detail` envelope). */
      readonly kind: 'eventbridge';
      /** The entries' `Source`, part of their size. */
      readonly eventSource: string;
    };

/** The settings a writer takes to size events for its destination (`EO_OUTBOX_DESTINATION_KIND`, `EO_OUTBOX_EVENT_SOURCE`). */
export interface DestinationSizingOptions {
  /**
   * Where the relay publishes (`EO_OUTBOX_DESTINATION_KIND`): decides how an event's size is
   * counted against the destination's 256 KB (`MAX_DESTINATION_MESSAGE_BYTES`; see
   * `publishedMessageBytes` in `effectively-once/outbox`).
   * @default 'sqs'
   */
  readonly destinationKind?: OutboxDestinationKind;
  /**
   * The `Source` the relay gives EventBridge entries (`EO_OUTBOX_EVENT_SOURCE`), counted in an
   * entry's size: required when `destinationKind` is `'eventbridge'`, not allowed otherwise.
   * @default none
   */
  readonly eventSource?: string;
  /**
   * Whether the relay's queue or topic is FIFO (`EO_OUTBOX_DESTINATION_FIFO`): each event's
   * `entity` (else its `type`) is then its `MessageGroupId`, which SQS and SNS take only as 1 to
   * 128 ASCII letters, digits and punctuation; an event whose group id they would refuse is a
   * `VALIDATION` error before anything is committed. Not allowed with `'eventbridge'`.
   * @default false
   */
  readonly destinationFifo?: boolean;
  /**
   * Whether the relay's queue is an SQS fair queue, or its topic feeds fair queues
   * (`EO_OUTBOX_DESTINATION_FAIR`): a standard queue or topic to which the relay sends each
   * event's `entity` (else its `type`) as the `MessageGroupId`, the tenant SQS keeps fair (a
   * standard topic forwards it to its SQS standard subscriptions only). SQS and SNS take a
   * standard destination's group id under the FIFO rule (1 to 128 ASCII letters, digits and
   * punctuation), so an event whose group id they would refuse is a `VALIDATION` error before
   * anything is committed. Only with `'sqs'` or `'sns'`, and not with `destinationFifo: true`: a
   * FIFO queue or topic already groups by `MessageGroupId`.
   * @default false
   */
  readonly destinationFair?: boolean;
}

/**
 * Checks `options` (at cold start, `INVALID_OPTIONS` naming `<prefix>destinationKind`,
 * `<prefix>eventSource`, `<prefix>destinationFifo` or `<prefix>destinationFair`) and returns the
 * destination's rules events are checked against.
 */
export function resolveDestinationSizing(
  prefix: string,
  options: DestinationSizingOptions,
): OutboxDestinationSizing {
  const { destinationKind = 'sqs', eventSource, destinationFifo, destinationFair } = options;
  expectOption(
    (OUTBOX_DESTINATION_KINDS as readonly unknown[]).includes(destinationKind),
    `${prefix}destinationKind`,
    `one of ${OUTBOX_DESTINATION_KINDS.map((kind) => `'${kind}'`).join(', ')}`,
    destinationKind,
  );
  const fair = destinationFairOption(prefix, destinationKind, destinationFifo, destinationFair);
  if (destinationKind !== 'eventbridge') {
    expectOption(
      eventSource === undefined,
      `${prefix}eventSource`,
      "left out unless `destinationKind` is 'eventbridge'",
      eventSource,
    );
    expectOption(
      destinationFifo === undefined || typeof destinationFifo === 'boolean',
      `${prefix}destinationFifo`,
      'a boolean',
      destinationFifo,
    );
    if (destinationFifo === true) return { kind: destinationKind, fifo: true };
    return fair ? { kind: destinationKind, fair: true } : { kind: destinationKind };
  }
  expectOption(
    destinationFifo === undefined || destinationFifo === false,
    `${prefix}destinationFifo`,
    "left out unless `destinationKind` is 'sqs' or 'sns' (an EventBridge bus is not FIFO)",
    destinationFifo,
  );
  expectOption(
    typeof eventSource === 'string' && eventSource.length > 0 && eventSource.length <= 256,
    `${prefix}eventSource`,
    "the relay's EventBridge `Source` (1 to 256 characters) when `destinationKind` is 'eventbridge'",
    eventSource,
  );
  return { kind: 'eventbridge', eventSource: eventSource as string };
}

/**
 * Whether `destinationFair` marks a fair queue (or a topic feeding fair queues), after checking
 * it: a boolean, `true` only for an SQS or SNS destination that is not FIFO.
 */
function destinationFairOption(
  prefix: string,
  destinationKind: OutboxDestinationKind,
  destinationFifo: unknown,
  destinationFair: unknown,
): boolean {
  const name = `${prefix}destinationFair`;
  expectOption(
    destinationFair === undefined || typeof destinationFair === 'boolean',
    name,
    'a boolean',
    destinationFair,
  );
  if (destinationFair !== true) return false;
  expectOption(
    destinationKind !== 'eventbridge',
    name,
    "left out unless `destinationKind` is 'sqs' or 'sns' (a fair queue is an SQS standard queue, fed directly or by a standard SNS topic)",
    destinationFair,
  );
  expectOption(
    destinationFifo !== true,
    name,
    `left out with \`destinationFifo: true\` (${destinationKind === 'sns' ? FAIR_TOPIC_IS_STANDARD : FAIR_QUEUE_IS_STANDARD})`,
    destinationFair,
  );
  return true;
}

/** Options of one emitted event. */
export interface EmitOptions {
  /**
   * The entity the event is about (an order id): the `MessageGroupId` on a FIFO queue or topic,
   * so the destination delivers one entity's events in the order the relay published them, and
   * on a fair queue, where it is the tenant SQS keeps fair (name a real entity: a customer, a
   * client application). The relay publishes in stream order, but DynamoDB Streams orders the
   * changes of one item only and each event is an item of its own, so two events of one entity
   * written by separate commits can reach the relay in either order: carry a version in the
   * detail when the receiver needs the order (`putIfNewer`, `fromKeysAndVersion`).
   * @default none: a FIFO destination or a fair queue groups by the event's type
   */
  readonly entity?: string;
  /**
   * The event's name within its effect, which its id derives from. Give one when a handler
   * emits a varying number of events of one type (one per line of an order: `line-${sku}`).
   * @default `<type>#<n>`: the n-th event of that type the effect emits, counted from 0
   */
  readonly name?: string;
}

/** How long outbox items are kept when no retention is given: 7 days. */
export const DEFAULT_OUTBOX_RETENTION_SECONDS = 7 * 24 * 60 * 60;

/**
 * The id of the event named `name` within the effect whose scoped key is `scope`: the SHA-256
 * (hex) of both. The same input always yields the same id, so replaying a message (or an API
 * request with its idempotency key) can never mint a second identity for its events.
 */
export function outboxEventId(scope: string, name: string): string {
  return sha256Hex(`${scope}\n${name}`);
}

/** What {@link createOutboxPut} needs besides the event. */
export interface OutboxItemSettings {
  readonly tableName: string;
  /** The event id (see {@link outboxEventId}). */
  readonly id: string;
  /** The consumer name, or the writer's producer. */
  readonly source: string;
  readonly nowMillis: number;
  readonly retentionSeconds: number;
  readonly entity?: string;
  /** Where the relay publishes, which decides how the event's size is counted. @default an SQS queue */
  readonly destination?: OutboxDestinationSizing;
}

/**
 * A put of one outbox item in document shape, only if no other event has its id
 * ({@link OUTBOX_PUT_CONDITION}).
 */
export interface OutboxPut {
  readonly TableName: string;
  readonly Item: Record<string, unknown>;
  readonly ConditionExpression: string;
  readonly ExpressionAttributeNames: Readonly<Record<string, string>>;
  readonly ExpressionAttributeValues: Readonly<Record<string, unknown>>;
}

/** The longest EventBridge `DetailType`, the type of an event published to EventBridge. */
export const MAX_EVENTBRIDGE_DETAIL_TYPE_LENGTH = 128;

/**
 * The condition of every outbox put: no item has the event's id, or the item holds this very
 * event (the same `contentHash`, of its type, body and entity). The relay publishes inserts only, so an unconditional put
 * over another event's item would replace that event without a trace (a `MODIFY` is never
 * published); with the condition, that collision cancels the commit (`OUTBOX_COLLISION`). The
 * same event met again (a replay after its inbox record expired, a write retried after a lost
 * response) passes: it was published when it was first inserted.
 */
export const OUTBOX_PUT_CONDITION = 'attribute_not_exists(#pk) OR #contentHash = :contentHash';

/**
 * The put of `event`'s outbox item. Throws `VALIDATION` for an event without a type or whose
 * detail is not JSON, and `ITEM_TOO_LARGE` when its message would exceed what its destination
 * takes ({@link MAX_DESTINATION_MESSAGE_BYTES}): both dead-letter the input before anything is
 * committed.
 */
export function createOutboxPut(event: OutboxEvent, settings: OutboxItemSettings): OutboxPut {
  const type = event?.type;
  if (typeof type !== 'string' || type.length === 0 || type.length > 256) {
    throw new EffectivelyOnceError(
      'VALIDATION',
      `emit: expected the event's \`type\` to be a string of 1 to 256 characters, got ${describeValue(type)}`,
    );
  }
  const { entity } = settings;
  if (entity !== undefined && (typeof entity !== 'string' || entity.length === 0 || entity.length > 128)) {
    throw new EffectivelyOnceError(
      'VALIDATION',
      `emit: expected \`entity\` to be a string of 1 to 128 characters, got ${describeValue(entity)}`,
    );
  }
  const body = detailJson(event.detail, type);
  const destination = settings.destination ?? { kind: 'sqs' };
  // "DetailType … Length Constraints: … Maximum length of 128" (EventBridge API Reference,
  // PutEventsRequestEntry): a longer type would fail its entry at the relay, so it is refused here.
  if (destination.kind === 'eventbridge' && type.length > MAX_EVENTBRIDGE_DETAIL_TYPE_LENGTH) {
    throw new EffectivelyOnceError(
      'VALIDATION',
      `emit: the event's \`type\` is the EventBridge \`DetailType\`, at most ${MAX_EVENTBRIDGE_DETAIL_TYPE_LENGTH} characters; got ${type.length}`,
    );
  }
  if (destination.kind !== 'eventbridge') {
    // The type travels as the `eo-event-type` attribute, whose value SQS and SNS take only in
    // the characters of a message ("the same holds for String attribute values").
    const refused = firstOutsideSqsText(type);
    if (refused !== undefined) {
      throw new EffectivelyOnceError(
        'VALIDATION',
        `emit: the event's \`type\` is the \`${EVENT_TYPE_ATTRIBUTE}\` message attribute, whose characters SQS and SNS restrict; it has ${refused}`,
      );
    }
    if (destination.fifo === true) assertGroupId(entity, type, 'a FIFO destination');
    else if (destination.fair === true) {
      assertGroupId(
        entity,
        type,
        destination.kind === 'sns' ? 'a topic feeding fair queues' : 'a fair queue',
      );
    }
  }
  const size = publishedMessageBytes({ id: settings.id, type, body }, destination);
  if (size > MAX_DESTINATION_MESSAGE_BYTES) {
    throw new EffectivelyOnceError(
      'ITEM_TOO_LARGE',
      `Event \`${type}\` would be a ${destination.kind === 'eventbridge' ? 'PutEvents entry' : 'message'} of ${size} bytes; its ${destination.kind} destination takes at most ${MAX_DESTINATION_MESSAGE_BYTES} bytes`,
    );
  }
  const contentHash = fingerprintOf([type, body, entity ?? null]);
  return {
    TableName: settings.tableName,
    Item: {
      [OUTBOX_ATTRIBUTES.pk]: settings.id,
      [OUTBOX_ATTRIBUTES.type]: type,
      [OUTBOX_ATTRIBUTES.body]: body,
      ...(entity === undefined ? {} : { [OUTBOX_ATTRIBUTES.entity]: entity }),
      [OUTBOX_ATTRIBUTES.source]: settings.source,
      [OUTBOX_ATTRIBUTES.contentHash]: contentHash,
      [OUTBOX_ATTRIBUTES.createdAt]: settings.nowMillis,
      [OUTBOX_ATTRIBUTES.expiresAt]: expiresAt(settings.nowMillis, settings.retentionSeconds),
    },
    ConditionExpression: OUTBOX_PUT_CONDITION,
    ExpressionAttributeNames: { '#pk': OUTBOX_ATTRIBUTES.pk, '#contentHash': OUTBOX_ATTRIBUTES.contentHash },
    ExpressionAttributeValues: { ':contentHash': contentHash },
  };
}

/**
 * "character U+XXXX at position N" for the first character of `text` that `refuses` (positions
 * counted in code points, from 1), or `undefined`: a reason that names no value.
 */
function firstRefused(text: string, refuses: (character: string) => boolean): string | undefined {
  const characters = Array.from(text);
  const index = characters.findIndex(refuses);
  if (index < 0) return undefined;
  const codePoint = (characters[index]?.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0');
  return `character U+${codePoint} at position ${index + 1}`;
}

/** The first character of `text` SQS refuses in a message or attribute value, described. */
function firstOutsideSqsText(text: string): string | undefined {
  return firstRefused(text, (character) => !isSqsText(character));
}

/**
 * Throws `VALIDATION` unless the destination (`where`: a FIFO queue or topic, or a fair queue)
 * takes the event's group id, its `entity` or else its `type` (see `isSqsFifoId`, whose rule
 * SendMessage states for every `MessageGroupId`): the relay would have the send refused. The
 * message names the first character refused by its code point and position, not the value (an
 * entity may be a customer's identifier, and the reason travels into dead letters and logs).
 */
function assertGroupId(entity: string | undefined, type: string, where: string): void {
  const groupId = entity ?? type;
  if (isSqsFifoId(groupId)) return;
  const field = entity === undefined ? "the event's `type` (it has no `entity`)" : '`entity`';
  const why =
    firstRefused(groupId, (character) => !isSqsFifoId(character)) ??
    `${Array.from(groupId).length} characters`;
  throw new EffectivelyOnceError(
    'VALIDATION',
    `emit: on ${where} ${field} is the \`MessageGroupId\`, which SQS and SNS take only as 1 to 128 ASCII letters, digits and punctuation; it has ${why}`,
  );
}

/**
 * Bytes of what the relay publishes for an event, as its destination counts them against
 * {@link MAX_DESTINATION_MESSAGE_BYTES}:
 *
 * - SQS and SNS: the body and the message attributes (name, data type `String` and value of
 *   `idempotency-key` and `eo-event-type`), as both count a message's size. A FIFO
 *   destination's group and deduplication ids are not counted.
 * - EventBridge: the `PutEvents` entry as "Calculating PutEvents event entry size" counts it:
 *   `Source`, `DetailType` (the type) and `Detail` (the envelope of {@link eventBridgeDetail}),
 *   each in UTF-8; the relay sets no `Time` and no `Resources`.
 */
export function publishedMessageBytes(
  message: Pick<OutboxMessage, 'id' | 'type' | 'body'>,
  destination: OutboxDestinationSizing,
): number {
  const bytes = (text: string) => Buffer.byteLength(text, 'utf8');
  if (destination.kind === 'eventbridge') {
    return bytes(destination.eventSource) + bytes(message.type) + bytes(eventBridgeDetail(message));
  }
  const attribute = (name: string, value: string) => bytes(name) + bytes('String') + bytes(value);
  return (
    bytes(message.body) +
    attribute(IDEMPOTENCY_KEY_ATTRIBUTE, message.id) +
    attribute(EVENT_TYPE_ATTRIBUTE, message.type)
  );
}

/**
 * The `Detail` of the EventBridge entry the relay puts for an event, which carries no message
 * attributes: the common metadata/data envelope,
 * `{"metadata":{"idempotency-key":<id>,"type":<type>},"data":<detail>}`, so a consumer behind a
 * rule keys on `detail.metadata['idempotency-key']` (`fromOutboxEnvelope()`).
 */
export function eventBridgeDetail(message: Pick<OutboxMessage, 'id' | 'type' | 'body'>): string {
  const metadata = JSON.stringify({ [IDEMPOTENCY_KEY_ATTRIBUTE]: message.id, type: message.type });
  // The body is the detail's JSON text already: embedded as it is, not encoded again.
  return `{"metadata":${metadata},"data":${message.body}}`;
}

/**
 * The detail's JSON text, with the characters SQS and SNS refuse in a message (U+FFFE, U+FFFF)
 * written as JSON escapes (`toSqsJson`): the receiver parses the same detail, and no destination
 * refuses the body for its characters.
 */
function detailJson(detail: unknown, type: string): string {
  let text: string | undefined;
  try {
    text = toSqsJson(detail);
  } catch (error) {
    throw new EffectivelyOnceError('VALIDATION', `emit: the detail of event \`${type}\` is not JSON`, {
      cause: error,
    });
  }
  if (text === undefined) {
    throw new EffectivelyOnceError(
      'VALIDATION',
      `emit: the detail of event \`${type}\` is not JSON, got ${describeValue(detail)}`,
    );
  }
  return text;
}

/** What a unit of work needs to emit events: the outbox table and the effect's scope. */
export interface OutboxContext {
  readonly tableName: string;
  readonly retentionSeconds: number;
  /** The scoped dedup key of the message (or the writer's scoped idempotency key). */
  readonly scope: string;
  readonly source: string;
  readonly nowMillis: number;
  /** Where the relay publishes (sizes are counted for it). @default an SQS queue */
  readonly destination?: OutboxDestinationSizing;
}

/**
 * Builds the puts of the events one effect emits, naming each (`<type>#<n>` unless named) and
 * rejecting two events with one name (`VALIDATION`): they would share an id.
 */
export function createEventNamer(
  context: OutboxContext,
): (event: OutboxEvent, options?: EmitOptions) => OutboxPut {
  const names = new Set<string>();
  const perType = new Map<string, number>();
  return (event, options = {}) => {
    const type = event?.type;
    let name = options.name;
    if (name === undefined) {
      const ordinal = perType.get(type) ?? 0;
      perType.set(type, ordinal + 1);
      name = `${type}#${ordinal}`;
    } else if (typeof name !== 'string' || name.length === 0) {
      throw new EffectivelyOnceError(
        'VALIDATION',
        `emit: expected \`name\` to be a non-empty string, got ${describeValue(name)}`,
      );
    }
    if (names.has(name)) {
      throw new EffectivelyOnceError(
        'VALIDATION',
        `emit: two events of one effect are named \`${name}\`; they would share an id`,
      );
    }
    names.add(name);
    return createOutboxPut(event, {
      tableName: context.tableName,
      id: outboxEventId(context.scope, name),
      source: context.source,
      nowMillis: context.nowMillis,
      retentionSeconds: context.retentionSeconds,
      ...(options.entity === undefined ? {} : { entity: options.entity }),
      ...(context.destination === undefined ? {} : { destination: context.destination }),
    });
  };
}
