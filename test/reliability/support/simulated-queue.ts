/**
 * An in-process SQS standard queue on a virtual clock, with the semantics the consumer relies
 * on: a received message is invisible for the visibility timeout and comes back unless it is
 * deleted with its latest receipt handle; every receive increments its receive count; a
 * message received `maxReceiveCount` times moves to the dead-letter queue on its next receive
 * (the redrive policy). Nothing is ever dropped: every message ends deleted or dead-lettered,
 * or is still queued.
 *
 * Time only moves when `advance()` is called, to the moment the next message becomes visible,
 * so a test waits for nothing.
 */
import type { SqsMessageAttribute, SqsRecord } from '../../../lambda/sqs/sqs-event';
import type { Random } from './prng';

/** Where a message is. */
export type MessageState = 'queued' | 'in-flight' | 'deleted' | 'dead-lettered';

/** A message as sent: SQS body and attributes, plus whatever the test attaches (`meta`). */
export interface OutgoingMessage<TMeta> {
  readonly messageId: string;
  readonly body: string;
  readonly meta: TMeta;
}

/** One receive of one message. */
export interface ReceivedMessage<TMeta> {
  readonly messageId: string;
  readonly body: string;
  readonly meta: TMeta;
  readonly receiptHandle: string;
  /** 1 on the first receive. */
  readonly receiveCount: number;
  /** Virtual epoch milliseconds of the first send. */
  readonly sentAt: number;
}

/** A message moved to the dead-letter queue by the redrive policy. */
export interface RedrivenMessage<TMeta> {
  readonly messageId: string;
  readonly body: string;
  readonly meta: TMeta;
  readonly receiveCount: number;
}

/** Options of {@link createSimulatedQueue}. */
export interface SimulatedQueueOptions<TMeta> {
  /** Virtual epoch milliseconds the queue starts at. */
  readonly startMillis: number;
  readonly visibilityTimeoutMillis: number;
  readonly maxReceiveCount: number;
  /** Decides which visible messages a receive skips (standard queues do not keep order). */
  readonly random: Random;
  /** Chance that a receive passes over a visible message, leaving it for a later batch. @default 0 */
  readonly skipChance?: number;
  /** Messages that must be received alone, in a batch of one. @default none */
  readonly alone?: (meta: TMeta) => boolean;
}

/** The queue. */
export interface SimulatedQueue<TMeta> {
  /** Virtual epoch milliseconds now. */
  now(): number;
  /** Sends a message, visible after `delayMillis`. */
  send(message: OutgoingMessage<TMeta>, delayMillis?: number): void;
  /**
   * Receives up to `max` visible messages, oldest first, moving any that exhausted
   * `maxReceiveCount` to the dead-letter queue instead. A message marked `alone` is received in
   * a batch of its own.
   */
  receive(max: number): ReceivedMessage<TMeta>[];
  /** Deletes a message by its latest receipt handle; `false` for a stale or unknown handle. */
  delete(receiptHandle: string): boolean;
  /** Moves the clock to the moment the next message becomes visible; `false` when none will. */
  advance(): boolean;
  /** Where a message is. */
  stateOf(messageId: string): MessageState | undefined;
  /** Messages moved to the dead-letter queue by the redrive policy, in order. */
  readonly redriven: readonly RedrivenMessage<TMeta>[];
  /** Messages neither deleted nor dead-lettered. */
  pendingCount(): number;
}

interface Entry<TMeta> {
  readonly message: OutgoingMessage<TMeta>;
  readonly sentAt: number;
  state: MessageState;
  visibleAt: number;
  receiveCount: number;
  receiptHandle: string | undefined;
}

/** Creates an empty queue. */
export function createSimulatedQueue<TMeta>(options: SimulatedQueueOptions<TMeta>): SimulatedQueue<TMeta> {
  const { visibilityTimeoutMillis, maxReceiveCount, random, skipChance = 0, alone = () => false } = options;
  let now = options.startMillis;
  let order: Entry<TMeta>[] = [];
  const byId = new Map<string, Entry<TMeta>>();
  const byHandle = new Map<string, Entry<TMeta>>();
  const redriven: RedrivenMessage<TMeta>[] = [];
  let pending = 0;

  const isPending = (entry: Entry<TMeta>) => entry.state === 'queued' || entry.state === 'in-flight';
  const compact = () => {
    if (order.length > 64 && pending < order.length / 2) order = order.filter(isPending);
  };

  const deliver = (entry: Entry<TMeta>): ReceivedMessage<TMeta> => {
    entry.receiveCount += 1;
    entry.state = 'in-flight';
    entry.visibleAt = now + visibilityTimeoutMillis;
    if (entry.receiptHandle !== undefined) byHandle.delete(entry.receiptHandle);
    entry.receiptHandle = `rh-${entry.message.messageId}-${entry.receiveCount}`;
    byHandle.set(entry.receiptHandle, entry);
    return {
      messageId: entry.message.messageId,
      body: entry.message.body,
      meta: entry.message.meta,
      receiptHandle: entry.receiptHandle,
      receiveCount: entry.receiveCount,
      sentAt: entry.sentAt,
    };
  };

  return {
    now: () => now,
    send(message, delayMillis = 0) {
      if (byId.has(message.messageId)) throw new Error(`Duplicate message id ${message.messageId}`);
      const entry: Entry<TMeta> = {
        message,
        sentAt: now,
        state: 'queued',
        visibleAt: now + delayMillis,
        receiveCount: 0,
        receiptHandle: undefined,
      };
      order.push(entry);
      byId.set(message.messageId, entry);
      pending += 1;
    },
    receive(max) {
      const batch: ReceivedMessage<TMeta>[] = [];
      for (const entry of order) {
        if (batch.length >= max) break;
        if (!isPending(entry) || entry.visibleAt > now) continue;
        if (entry.receiveCount >= maxReceiveCount) {
          entry.state = 'dead-lettered';
          pending -= 1;
          redriven.push({
            messageId: entry.message.messageId,
            body: entry.message.body,
            meta: entry.message.meta,
            receiveCount: entry.receiveCount,
          });
          continue;
        }
        const single = alone(entry.message.meta);
        if (single && batch.length > 0) continue;
        // A receive never comes back empty while a message is visible.
        if (!single && batch.length > 0 && skipChance > 0 && random.chance(skipChance)) continue;
        batch.push(deliver(entry));
        if (single) break;
      }
      compact();
      return batch;
    },
    delete(receiptHandle) {
      const entry = byHandle.get(receiptHandle);
      if (entry === undefined || entry.state !== 'in-flight') return false;
      byHandle.delete(receiptHandle);
      entry.state = 'deleted';
      pending -= 1;
      return true;
    },
    advance() {
      let next = Number.POSITIVE_INFINITY;
      for (const entry of order) {
        if (isPending(entry) && entry.visibleAt > now && entry.visibleAt < next) next = entry.visibleAt;
      }
      if (next === Number.POSITIVE_INFINITY) return false;
      now = next;
      for (const entry of order) {
        if (entry.state === 'in-flight' && entry.visibleAt <= now) entry.state = 'queued';
      }
      return true;
    },
    stateOf: (messageId) => {
      const entry = byId.get(messageId);
      if (entry === undefined) return undefined;
      // An in-flight message whose visibility timeout ended is queued again.
      if (entry.state === 'in-flight' && entry.visibleAt <= now) return 'queued';
      return entry.state;
    },
    redriven,
    pendingCount: () => pending,
  };
}

/** How {@link sqsRecordOf} builds a record. */
export interface SqsRecordSettings {
  /** The queue's ARN. */
  readonly eventSourceARN: string;
  /** The message's attributes, as the producer set them. @default none */
  readonly messageAttributes?: Readonly<Record<string, SqsMessageAttribute>>;
  /** System attributes beyond the receive count and timestamps (a FIFO deduplication id). @default none */
  readonly attributes?: Readonly<Record<string, string>>;
}

/** The Lambda record of one receive, as the SQS event source mapping delivers it. */
export function sqsRecordOf<TMeta>(received: ReceivedMessage<TMeta>, settings: SqsRecordSettings): SqsRecord {
  return {
    messageId: received.messageId,
    receiptHandle: received.receiptHandle,
    body: received.body,
    attributes: {
      ApproximateReceiveCount: String(received.receiveCount),
      SentTimestamp: String(received.sentAt),
      SenderId: 'AIDAEXAMPLE',
      ApproximateFirstReceiveTimestamp: String(received.sentAt),
      ...settings.attributes,
    },
    messageAttributes: { ...settings.messageAttributes },
    eventSource: 'aws:sqs',
    eventSourceARN: settings.eventSourceARN,
    awsRegion: 'us-east-1',
  };
}
