/**
 * Outbox items: what `unitOfWork.emit` and the outbox writer put in the outbox table, in the
 * same transaction as the business writes, for the relay to publish. Transport-free: ids,
 * attributes and the destination's size limit, checked before the commit.
 */
import {
  EVENT_TYPE_ATTRIBUTE,
  IDEMPOTENCY_KEY_ATTRIBUTE,
  MAX_DESTINATION_MESSAGE_BYTES,
  OUTBOX_ATTRIBUTES,
} from '../core/contract';
import { describeValue, EffectivelyOnceError } from '../core/errors';
import { sha256Hex } from '../core/fingerprint';
import { expiresAt } from '../core/time';

/** An event to publish once its commit succeeds. */
export interface OutboxEvent<TDetail = unknown> {
  /** The event's type, as the receiving side dispatches on it (`OrderConfirmed`). 1-256 characters. */
  readonly type: string;
  /** The event's content, published as JSON text (the message body). */
  readonly detail: TDetail;
}

/** Options of one emitted event. */
export interface EmitOptions {
  /**
   * The entity the event is about (an order id): the `MessageGroupId` on a FIFO queue, so the
   * events of one entity keep their order.
   * @default none: a FIFO destination groups by the event's type
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
}

/** A put of one outbox item in document shape (`TableName`, `Item`), unconditional. */
export interface OutboxPut {
  readonly TableName: string;
  readonly Item: Record<string, unknown>;
}

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
  const size = publishedMessageBytes(body, settings.id, type);
  if (size > MAX_DESTINATION_MESSAGE_BYTES) {
    throw new EffectivelyOnceError(
      'ITEM_TOO_LARGE',
      `Event \`${type}\` would be a message of ${size} bytes; its destination takes at most ${MAX_DESTINATION_MESSAGE_BYTES} bytes`,
    );
  }
  return {
    TableName: settings.tableName,
    Item: {
      [OUTBOX_ATTRIBUTES.pk]: settings.id,
      [OUTBOX_ATTRIBUTES.type]: type,
      [OUTBOX_ATTRIBUTES.body]: body,
      ...(entity === undefined ? {} : { [OUTBOX_ATTRIBUTES.entity]: entity }),
      [OUTBOX_ATTRIBUTES.source]: settings.source,
      [OUTBOX_ATTRIBUTES.createdAt]: settings.nowMillis,
      [OUTBOX_ATTRIBUTES.expiresAt]: expiresAt(settings.nowMillis, settings.retentionSeconds),
    },
  };
}

/**
 * Bytes of the message the relay publishes for an event: the body and the message attributes
 * (name, data type `String` and value of each), as SQS and SNS count a message's size.
 */
export function publishedMessageBytes(body: string, id: string, type: string): number {
  const attribute = (name: string, value: string) =>
    Buffer.byteLength(name, 'utf8') + 'String'.length + Buffer.byteLength(value, 'utf8');
  return (
    Buffer.byteLength(body, 'utf8') +
    attribute(IDEMPOTENCY_KEY_ATTRIBUTE, id) +
    attribute(EVENT_TYPE_ATTRIBUTE, type)
  );
}

function detailJson(detail: unknown, type: string): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(detail);
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
    });
  };
}
