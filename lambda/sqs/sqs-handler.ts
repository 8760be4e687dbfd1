/**
 * The SQS transport: a Lambda SQS event's records become the engine's messages (a FIFO queue's
 * message group is their ordering group), the engine's results become the partial batch
 * response, and a permanent failure sent directly (`deadLetter: 'direct'`) is the original
 * message, body and attributes unchanged, with its reason. `createSqsHandler` is the complete
 * Lambda handler; the middy middleware and the `sqs-consumer` worker are built on it.
 */

import {
  type ConsumerEntryOptions,
  createEntryEngine,
  type DeadLetterOptions,
  directDeadLetterSender,
  resolveEntryOptions,
} from '../consumer-entry';
import { type BatchProcessor, createBatchProcessor } from '../core/batch-processor';
import { DEDUPLICATION_ID_ATTRIBUTE } from '../core/contract';
import { attributeValue } from '../core/dedup-key';
import type { ConstructSettings } from '../core/environment';
import { EffectivelyOnceError, expectOption } from '../core/errors';
import type { DeadLetterWriter, InboundMessage, MessageResult } from '../core/inbound-message';
import type { Message } from '../core/message';
import type { ModeDefaults } from '../core/mode';
import type { BatchProcessorOptions } from '../core/options';
import type { DeadLetterMessage, DeadLetterSender } from '../dead-letter/dead-letter-message';
import {
  SHORT_REASON_LENGTH,
  toAttributeText,
  toDeadLetterAttributes,
} from '../dead-letter/sqs-dead-letter-sender';
import { SQS_MAX_MESSAGE_BYTES, sqsMessageBytes } from '../dead-letter/sqs-limits';
import {
  fifoGroupOf,
  type LambdaContext,
  type SqsBatchResponse,
  type SqsEvent,
  type SqsHandler,
  type SqsRecord,
} from './sqs-event';

/**
 * The message an SQS entry point's handler receives: `message.record` is the SQS record (for
 * system attributes such as `ApproximateReceiveCount`).
 */
export type SqsMessage<TBody = unknown> = Message<TBody, SqsRecord>;

/** Options of {@link createSqsHandler} (and of `createSqsMiddleware` and the worker). */
export type SqsHandlerOptions<TBody = unknown, TStore = unknown> = ConsumerEntryOptions<
  TBody,
  TStore,
  SqsRecord
>;

/**
 * Options of {@link createSqsBatchHandler}: the engine's options over an injected store and
 * clock, with how permanent failures leave the queue. Reads no environment.
 */
export type SqsBatchHandlerOptions<TBody = unknown, TStore = unknown> = Omit<
  BatchProcessorOptions<TBody, TStore, SqsRecord>,
  'deadLetterWriter'
> &
  DeadLetterOptions;

/**
 * One SQS record as the engine's message: its body as text, its message attributes, its
 * message group, and the group as its ordering group when the queue is FIFO (a fair queue's
 * group id keeps no order).
 */
export function sqsInboundMessage(record: SqsRecord): InboundMessage<SqsRecord> {
  const groupId = record.attributes?.MessageGroupId;
  const orderingGroup = fifoGroupOf(record);
  return {
    id: record.messageId,
    text: record.body,
    attributes: record.messageAttributes ?? {},
    ...(groupId === undefined ? {} : { groupId }),
    ...(orderingGroup === undefined ? {} : { orderingGroup }),
    record,
  };
}

/** The partial batch response: the ids of the messages the engine did not acknowledge, once each. */
export function sqsBatchResponse(
  records: readonly SqsRecord[],
  results: readonly MessageResult[],
): SqsBatchResponse {
  const failed = new Set<string>();
  records.forEach((record, index) => {
    if (!results[index]?.acknowledged) failed.add(record.messageId);
  });
  return { batchItemFailures: [...failed].map((itemIdentifier) => ({ itemIdentifier })) };
}

/**
 * The SQS dead letter of a record: its body and attributes unchanged (so it can be redriven
 * after a fix), its group, and its original FIFO deduplication id (kept also after an earlier
 * dead letter and redrive: the key `fromDeduplicationId` reads). A message near the queue's size
 * limit may leave no room for the reason: the reason is then cut to 128 code points and the
 * dedup key left out; when even that does not fit `maxMessageBytes` (SQS counts the body and every
 * attribute), the send is refused here as `DEAD_LETTER_FAILED`, so the message is retried until
 * the queue's redrive policy moves it, whole, to the dead-letter queue.
 */
export function sqsDeadLetterWriter(
  sender: DeadLetterSender,
  maxMessageBytes = SQS_MAX_MESSAGE_BYTES,
): DeadLetterWriter<SqsRecord> {
  return async ({ message, reason, code, consumer, dedupKey }) => {
    const record = message.record;
    const deduplicationId =
      attributeValue(record.messageAttributes, DEDUPLICATION_ID_ATTRIBUTE) ??
      record.attributes?.MessageDeduplicationId;
    const letter: DeadLetterMessage = {
      body: record.body,
      reason,
      code,
      consumer,
      sourceMessageId: record.messageId,
      attributes: record.messageAttributes ?? {},
      ...(dedupKey === undefined ? {} : { dedupKey }),
      ...(message.groupId === undefined ? {} : { groupId: message.groupId }),
      ...(deduplicationId === undefined ? {} : { deduplicationId }),
    };
    const fits = (candidate: DeadLetterMessage) =>
      sqsMessageBytes(candidate.body, toDeadLetterAttributes(candidate)) <= maxMessageBytes;
    if (fits(letter)) return sender.send(letter);
    const { dedupKey: _left, ...withoutKey } = letter;
    const short: DeadLetterMessage = { ...withoutKey, reason: toAttributeText(reason, SHORT_REASON_LENGTH) };
    if (fits(short)) return sender.send(short);
    throw new EffectivelyOnceError(
      'DEAD_LETTER_FAILED',
      `The message with its reason is larger than the dead-letter queue accepts (${maxMessageBytes} bytes): left to the queue's redrive policy`,
    );
  };
}

/** The Lambda SQS handler over an engine: event in, partial batch response out. */
function sqsHandlerOver(processBatch: BatchProcessor<SqsRecord>): SqsHandler {
  return async (event: SqsEvent, context?: LambdaContext): Promise<SqsBatchResponse> => {
    if (typeof event !== 'object' || event === null || !Array.isArray(event.Records)) {
      throw new EffectivelyOnceError('INVALID_EVENT', 'Expected an SQS event with a `Records` list');
    }
    const records = event.Records;
    const results = await processBatch(records.map(sqsInboundMessage), context);
    return sqsBatchResponse(records, results);
  };
}

/**
 * `options` with the construct's `EO_*` settings (from `options.environment`, else
 * `process.env`) and the default clients filled in, checked against the construct's. The
 * worker resolves its options with it once, so its logs name the same consumer.
 */
export function resolveSqsHandlerOptions<TBody, TStore>(
  options: SqsHandlerOptions<TBody, TStore>,
): SqsHandlerOptions<TBody, TStore> {
  return resolveEntryOptions(options as ConsumerEntryOptions<never, never, never>) as SqsHandlerOptions<
    TBody,
    TStore
  >;
}

/**
 * The dead-letter writer the options ask for, within the construct's
 * `EO_DEAD_LETTER_MAX_MESSAGE_BYTES` when it set one: `undefined` for `redrive`.
 */
function sqsWriterOf(
  options: DeadLetterOptions,
  settings: ConstructSettings = {},
): DeadLetterWriter<SqsRecord> | undefined {
  const sender = directDeadLetterSender(options);
  return sender === undefined ? undefined : sqsDeadLetterWriter(sender, settings.deadLetterMaxMessageBytes);
}

/**
 * Creates a Lambda SQS handler over an injected store and clock, reading no environment: the
 * engine of `createSqsHandler` for tests and for callers that build everything themselves.
 * Options are validated here; a bad option throws `INVALID_OPTIONS`.
 *
 * @example
 * const handler = createSqsBatchHandler({
 *   consumer: 'billing',
 *   dedupKey: fromBody('invoiceId'),
 *   mode: marker(async (message) => sendInvoice(message.body)),
 *   store,
 *   clock: Date.now,
 * });
 * const response = await handler(event, context);
 */
export function createSqsBatchHandler<TBody = unknown, TStore = unknown>(
  options: SqsBatchHandlerOptions<TBody, TStore>,
  modeDefaults: ModeDefaults = {},
): SqsHandler {
  expectOption(typeof options === 'object' && options !== null, 'options', 'an object', options);
  const { deadLetter: _mode, deadLetterSender: _sender, ...engineOptions } = options;
  const deadLetterWriter = sqsWriterOf(options);
  return sqsHandlerOver(
    createBatchProcessor(
      { ...engineOptions, ...(deadLetterWriter === undefined ? {} : { deadLetterWriter }) },
      modeDefaults,
    ),
  );
}

/**
 * Creates a complete Lambda SQS handler that deduplicates every message and returns a partial
 * batch response (enable `ReportBatchItemFailures` on the event source mapping). Call it once,
 * at module scope: options are validated here and a bad option throws at cold start. In a
 * function the construct configured, the consumer, inbox table, TTL, dead letters, lease,
 * metric namespace and log level come from its `EO_*` variables
 * (`SqsHandlerEnvironmentOptions`).
 *
 * @example
 * export const handler = createSqsHandler<OrderEvent>({
 *   dedupKey: fromBody((order: OrderEvent) => [order.orderId, order.status]),
 *   mode: atomic((message, unitOfWork) => {
 *     unitOfWork.put({ TableName: 'Orders', Item: { pk: message.body.orderId, status: message.body.status } });
 *   }),
 * });
 */
export function createSqsHandler<TBody = unknown, TStore = unknown>(
  options: SqsHandlerOptions<TBody, TStore>,
): SqsHandler {
  return createSqsHandlerWithDefaults(options, {});
}

/**
 * `createSqsHandler` for an entry point that supplies mode defaults of its own (the worker's
 * visibility timeout as the two-phase lease); they win over the construct's `EO_LEASE_MILLIS`.
 */
export function createSqsHandlerWithDefaults<TBody, TStore>(
  options: SqsHandlerOptions<TBody, TStore>,
  modeDefaults: ModeDefaults,
): SqsHandler {
  return sqsHandlerOver(createEntryEngine(options, modeDefaults, sqsWriterOf));
}
