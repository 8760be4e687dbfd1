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
 *
 * With `fifo`, it is a FIFO queue as the SQS Developer Guide describes it (sources beside each
 * rule):
 * - every message has a message group, and a sequence number that grows in send order ("The
 *   large, non-consecutive number that Amazon SQS assigns to each message [...] continues to
 *   increase for a particular MessageGroupId", SendMessage API reference);
 * - a receive returns a group's messages in send order and never a later message of a group
 *   while an earlier one is in flight: the group is blocked until that message is deleted, its
 *   visibility timeout ends, or the redrive policy moves it to the dead-letter queue ("Inflight
 *   messages block delivery of available messages within the same message group", knowledge
 *   center "sqs-fifo-messages-not-returned"; "FIFO queue delivery logic": you cannot receive
 *   more of a group "unless the messages you received are deleted or become visible again");
 * - one receive may carry several groups, each in order ("FIFO queue delivery logic": "Amazon
 *   SQS might include messages from other message group IDs in the same batch, but each group
 *   retains FIFO order"); a receive that passes over a group's first visible message (the
 *   `skipChance`, or a message that must come `alone`) passes over the rest of that group too;
 * - a send whose deduplication id was sent successfully within the last 5 minutes is accepted
 *   and never delivered (`deduplicated`), and does not extend the interval ("If a message with a
 *   particular MessageDeduplicationId is sent successfully, any messages sent with the same
 *   MessageDeduplicationId are accepted successfully but aren't delivered during the 5-minute
 *   deduplication interval", SendMessage API reference; the id is tracked "even after the
 *   message has been received and deleted", "FIFO queue key terms"); a send after the interval
 *   is a new message;
 * - FIFO queues take no per-message delay ("When you set FifoQueue, you can't set DelaySeconds
 *   per message", SendMessage API reference): a send with a delay stands for the producer
 *   sending it that much later, so it is deduplicated and sequenced then.
 */
import type { SqsMessageAttribute, SqsRecord } from '../../../lambda/sqs/sqs-event';
import type { Random } from './prng';

/**
 * Where a message is; `deduplicated`: a FIFO queue accepted the send and will never deliver it
 * (its deduplication id was sent within the last 5 minutes).
 */
export type MessageState = 'queued' | 'in-flight' | 'deleted' | 'dead-lettered' | 'deduplicated';

/** The FIFO deduplication interval. */
export const FIFO_DEDUPLICATION_WINDOW_MILLIS = 5 * 60_000;

/** What a FIFO queue reads of each message it is sent. */
export interface FifoSettings<TMeta> {
  /** The `MessageGroupId` the producer set. */
  readonly groupOf: (message: OutgoingMessage<TMeta>) => string;
  /** The `MessageDeduplicationId` the producer set, or the body's SHA-256 (content-based deduplication). */
  readonly deduplicationIdOf: (message: OutgoingMessage<TMeta>) => string;
}

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
  /** FIFO: the message group. */
  readonly groupId?: string;
  /** FIFO: the deduplication id the queue deduplicated the send by. */
  readonly deduplicationId?: string;
  /** FIFO: the sequence number, a decimal integer beyond 2^64 growing in send order. */
  readonly sequenceNumber?: string;
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
  /** Makes the queue a FIFO queue (see the module's comment). @default a standard queue */
  readonly fifo?: FifoSettings<TMeta>;
}

/** The queue. */
export interface SimulatedQueue<TMeta> {
  /** Virtual epoch milliseconds now. */
  now(): number;
  /**
   * Sends a message, visible after `delayMillis` (FIFO: sent by the producer `delayMillis` later,
   * when the deduplication interval and the sequence number apply).
   */
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
  /** FIFO: the message group, deduplication id and sequence number. */
  readonly fifo?: {
    readonly groupId: string;
    readonly deduplicationId: string;
    readonly sequenceNumber: string;
  };
}

/** FIFO sequence numbers start here: 20 digits, as SQS's 128-bit numbers print. */
const FIRST_SEQUENCE_NUMBER = 18_000_000_000_000_000_000n;

/** Creates an empty queue. */
export function createSimulatedQueue<TMeta>(options: SimulatedQueueOptions<TMeta>): SimulatedQueue<TMeta> {
  const {
    visibilityTimeoutMillis,
    maxReceiveCount,
    random,
    skipChance = 0,
    alone = () => false,
    fifo,
  } = options;
  let now = options.startMillis;
  let order: Entry<TMeta>[] = [];
  const byId = new Map<string, Entry<TMeta>>();
  const byHandle = new Map<string, Entry<TMeta>>();
  const redriven: RedrivenMessage<TMeta>[] = [];
  let pending = 0;
  /** FIFO: sends the producer makes later, in the order they were asked for. */
  const scheduled: { readonly at: number; readonly message: OutgoingMessage<TMeta> }[] = [];
  /** FIFO: when each deduplication id was last sent successfully. */
  const sentIds = new Map<string, number>();
  let sequence = FIRST_SEQUENCE_NUMBER;

  const isPending = (entry: Entry<TMeta>) => entry.state === 'queued' || entry.state === 'in-flight';
  const compact = () => {
    if (order.length > 64 && pending < order.length / 2) order = order.filter(isPending);
  };

  const enqueue = (message: OutgoingMessage<TMeta>, delayMillis: number): void => {
    let state: MessageState = 'queued';
    let fifoFields: Entry<TMeta>['fifo'];
    if (fifo !== undefined) {
      const deduplicationId = fifo.deduplicationIdOf(message);
      const last = sentIds.get(deduplicationId);
      if (last !== undefined && now - last < FIFO_DEDUPLICATION_WINDOW_MILLIS) state = 'deduplicated';
      else {
        sentIds.set(deduplicationId, now);
        sequence += 1n + BigInt(random.int(1000));
        fifoFields = { groupId: fifo.groupOf(message), deduplicationId, sequenceNumber: sequence.toString() };
      }
    }
    const entry: Entry<TMeta> = {
      message,
      sentAt: now,
      state,
      visibleAt: now + delayMillis,
      receiveCount: 0,
      receiptHandle: undefined,
      ...(fifoFields === undefined ? {} : { fifo: fifoFields }),
    };
    byId.set(message.messageId, entry);
    if (state === 'deduplicated') return;
    order.push(entry);
    pending += 1;
  };
  /** FIFO: the producer's later sends whose moment has come. */
  const sendScheduled = () => {
    while (scheduled.length > 0 && scheduled[0]!.at <= now) enqueue(scheduled.shift()!.message, 0);
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
      ...(entry.fifo === undefined
        ? {}
        : {
            groupId: entry.fifo.groupId,
            deduplicationId: entry.fifo.deduplicationId,
            sequenceNumber: entry.fifo.sequenceNumber,
          }),
    };
  };

  return {
    now: () => now,
    send(message, delayMillis = 0) {
      if (
        byId.has(message.messageId) ||
        scheduled.some((later) => later.message.messageId === message.messageId)
      )
        throw new Error(`Duplicate message id ${message.messageId}`);
      if (fifo === undefined || delayMillis <= 0) {
        enqueue(message, delayMillis);
        return;
      }
      // Kept sorted by moment; sends for one moment in the order they were asked for.
      const at = now + delayMillis;
      let index = scheduled.length;
      while (index > 0 && scheduled[index - 1]!.at > at) index -= 1;
      scheduled.splice(index, 0, { at, message });
    },
    receive(max) {
      sendScheduled();
      const batch: ReceivedMessage<TMeta>[] = [];
      // FIFO: a group with a message in flight gives nothing; a group whose first visible
      // message this receive passes over gives nothing after it either.
      const closed = new Set<string>();
      if (fifo !== undefined) {
        for (const entry of order) {
          if (entry.state === 'in-flight' && entry.visibleAt > now) closed.add(entry.fifo!.groupId);
        }
      }
      for (const entry of order) {
        if (batch.length >= max) break;
        if (!isPending(entry) || entry.visibleAt > now) continue;
        const group = entry.fifo?.groupId;
        if (group !== undefined && closed.has(group)) continue;
        if (entry.receiveCount >= maxReceiveCount) {
          // The redrive policy moves it: its group's next message is free to go.
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
        const passOver =
          (single && batch.length > 0) ||
          // A receive never comes back empty while a message is visible.
          (!single && batch.length > 0 && skipChance > 0 && random.chance(skipChance));
        if (passOver) {
          if (group !== undefined) closed.add(group);
          continue;
        }
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
      let next = scheduled[0]?.at ?? Number.POSITIVE_INFINITY;
      for (const entry of order) {
        if (isPending(entry) && entry.visibleAt > now && entry.visibleAt < next) next = entry.visibleAt;
      }
      if (next === Number.POSITIVE_INFINITY) return false;
      now = next;
      for (const entry of order) {
        if (entry.state === 'in-flight' && entry.visibleAt <= now) entry.state = 'queued';
      }
      sendScheduled();
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
    pendingCount: () => pending + scheduled.length,
  };
}

/** How {@link sqsRecordOf} builds a record. */
export interface SqsRecordSettings {
  /** The queue's ARN (a FIFO queue's name ends in `.fifo`). */
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
      // A FIFO queue's records carry the group, the deduplication id and the sequence number.
      ...(received.groupId === undefined ? {} : { MessageGroupId: received.groupId }),
      ...(received.deduplicationId === undefined ? {} : { MessageDeduplicationId: received.deduplicationId }),
      ...(received.sequenceNumber === undefined ? {} : { SequenceNumber: received.sequenceNumber }),
      ...settings.attributes,
    },
    messageAttributes: { ...settings.messageAttributes },
    eventSource: 'aws:sqs',
    eventSourceARN: settings.eventSourceARN,
    awsRegion: 'us-east-1',
  };
}
