/**
 * The size check before the commit, exact for each destination kind: what SQS and SNS count
 * (body and message attributes) and what EventBridge counts (Source, DetailType and the Detail
 * envelope, "Calculating PutEvents event entry size"), with events at the limit accepted and
 * one byte over rejected, through `emit` and the standalone writer.
 */
import { describe, expect, it } from 'vitest';
import { ENV, OUTBOX_ENV } from '../../../lambda/core/contract';
import { fromBody, scopeKey } from '../../../lambda/core/dedup-key';
import { atomic } from '../../../lambda/modes/atomic';
import { createUnitOfWork } from '../../../lambda/modes/unit-of-work';
import {
  createOutboxWriter,
  eventBridgeDetail,
  MAX_DESTINATION_MESSAGE_BYTES,
  type OutboxDestinationSizing,
  outboxEventId,
  publishedMessageBytes,
} from '../../../lambda/outbox';
import { createSqsHandler } from '../../../lambda/sqs/sqs-handler';
import { captureLogger, manualClock, sqsEvent, sqsRecord } from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';

const SCOPE = scopeKey('orders', 'o-1');
const ID = outboxEventId(SCOPE, 'T#0');

/** A unit of work whose `emit` sizes events for `destination`. */
function unitOfWorkFor(destination: OutboxDestinationSizing) {
  return createUnitOfWork(createMemoryStore(), 'inbox', {
    tableName: 'Outbox',
    retentionSeconds: 3600,
    scope: SCOPE,
    source: 'orders',
    nowMillis: 0,
    destination,
  });
}

/** A detail string whose event is exactly `MAX_DESTINATION_MESSAGE_BYTES` for `destination`. */
function detailAtLimit(destination: OutboxDestinationSizing): string {
  // The detail is JSON text: a string of n `x` is n + 2 bytes.
  const overhead = publishedMessageBytes({ id: ID, type: 'T', body: '""' }, destination);
  return 'x'.repeat(MAX_DESTINATION_MESSAGE_BYTES - overhead);
}

describe('the destination size check', () => {
  it('counts an SQS or SNS message as its body plus each attribute name, `String` and value', () => {
    const message = { id: 'e-1', type: 'OrderConfirmed', body: '{"n":"é"}' };
    const expected =
      Buffer.byteLength('{"n":"é"}') + ('idempotency-key'.length + 6 + 3) + ('eo-event-type'.length + 6 + 14);
    expect(publishedMessageBytes(message, { kind: 'sqs' })).toBe(expected);
    expect(publishedMessageBytes(message, { kind: 'sns' })).toBe(expected);
  });

  it('counts an EventBridge entry as Source, DetailType and the Detail envelope, in UTF-8', () => {
    const message = { id: 'e-1', type: 'OrderConfirmed', body: '{"n":"é"}' };
    const detail = eventBridgeDetail(message);
    expect(detail).toBe('{"metadata":{"idempotency-key":"e-1","type":"OrderConfirmed"},"data":{"n":"é"}}');
    expect(publishedMessageBytes(message, { kind: 'eventbridge', eventSource: 'orders.relay' })).toBe(
      'orders.relay'.length + 'OrderConfirmed'.length + Buffer.byteLength(detail),
    );
  });

  for (const destination of [
    { kind: 'sqs' },
    { kind: 'sns' },
    { kind: 'eventbridge', eventSource: 'orders' },
    { kind: 'eventbridge', eventSource: 'é'.repeat(200) },
  ] as const) {
    const label =
      destination.kind === 'eventbridge'
        ? `eventbridge (Source of ${Buffer.byteLength(destination.eventSource)} bytes)`
        : destination.kind;
    it(`accepts an event at exactly the ${label} limit and rejects one byte more (ITEM_TOO_LARGE)`, () => {
      const fits = detailAtLimit(destination);

      expect(unitOfWorkFor(destination).emit({ type: 'T', detail: fits })).toBe(ID);
      expect(() => unitOfWorkFor(destination).emit({ type: 'T', detail: `${fits}x` })).toThrow(
        expect.objectContaining({ code: 'ITEM_TOO_LARGE' }),
      );
    });
  }

  it('names the destination in the error: an EventBridge entry larger than the limit', () => {
    const destination = { kind: 'eventbridge', eventSource: 'orders' } as const;
    const over = `${detailAtLimit(destination)}x`;
    expect(() => unitOfWorkFor(destination).emit({ type: 'T', detail: over })).toThrow(
      expect.objectContaining({
        code: 'ITEM_TOO_LARGE',
        message: `Event \`T\` would be a PutEvents entry of ${MAX_DESTINATION_MESSAGE_BYTES + 1} bytes; its eventbridge destination takes at most ${MAX_DESTINATION_MESSAGE_BYTES} bytes`,
      }),
    );
  });

  it('sizes for an SQS queue when no destination is given', () => {
    const fits = detailAtLimit({ kind: 'sqs' });
    const unitOfWork = createUnitOfWork(createMemoryStore(), 'inbox', {
      tableName: 'Outbox',
      retentionSeconds: 3600,
      scope: SCOPE,
      source: 'orders',
      nowMillis: 0,
    });
    expect(unitOfWork.emit({ type: 'T', detail: fits })).toBe(ID);
  });

  it("sizes the standalone writer's events for its destinationKind and eventSource", async () => {
    const store = createMemoryStore();
    const writer = createOutboxWriter({
      client: {} as never,
      tableName: 'Outbox',
      producer: 'orders-api',
      destinationKind: 'eventbridge',
      eventSource: 'orders',
      store,
    });
    const destination = { kind: 'eventbridge', eventSource: 'orders' } as const;
    const id = outboxEventId(scopeKey('orders-api', 'k-1'), 'T#0');
    const overhead = publishedMessageBytes({ id, type: 'T', body: '""' }, destination);
    const fits = 'x'.repeat(MAX_DESTINATION_MESSAGE_BYTES - overhead);

    await expect(writer.write([{ type: 'T', detail: `${fits}x` }], [], 'k-1')).rejects.toMatchObject({
      code: 'ITEM_TOO_LARGE',
    });
    expect(await writer.write([{ type: 'T', detail: fits }], [], 'k-1')).toEqual({
      kind: 'written',
      ids: [id],
    });
  });

  it("sizes atomic mode's events for the construct's EO_OUTBOX_DESTINATION_KIND and EO_OUTBOX_EVENT_SOURCE", async () => {
    const environment = {
      [ENV.consumer]: 'orders',
      [ENV.inboxTable]: 'Inbox',
      [OUTBOX_ENV.tableName]: 'OrderEvents',
      [OUTBOX_ENV.destinationKind]: 'eventbridge',
      [OUTBOX_ENV.eventSource]: 'é'.repeat(100),
    };
    const logger = captureLogger();
    const handler = createSqsHandler<{ orderId: string; note: string }>({
      dedupKey: fromBody('orderId'),
      mode: atomic((message, unitOfWork) => {
        unitOfWork.emit({ type: 'T', detail: message.body.note });
      }),
      store: createMemoryStore(),
      clock: manualClock(),
      logger,
      logLevel: 'debug',
      metrics: false,
      environment,
    });
    const destination = { kind: 'eventbridge', eventSource: 'é'.repeat(100) } as const;
    const id = (orderId: string) => outboxEventId(scopeKey('orders', orderId), 'T#0');
    const overhead = publishedMessageBytes({ id: id('o-1'), type: 'T', body: '""' }, destination);
    const fits = 'x'.repeat(MAX_DESTINATION_MESSAGE_BYTES - overhead);

    expect(
      await handler(
        sqsEvent(
          sqsRecord('m-1', { orderId: 'o-1', note: fits }),
          sqsRecord('m-2', { orderId: 'o-2', note: `${fits}x` }),
        ),
        {} as never,
      ),
    ).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-2' }] });
    // The two messages run concurrently: their lines come in either order.
    expect(
      logger.entries
        .map(({ messageId, outcome, code }) => ({ messageId, outcome, code }))
        .sort((a, b) => String(a.messageId).localeCompare(String(b.messageId))),
    ).toEqual([
      { messageId: 'm-1', outcome: 'processed', code: undefined },
      { messageId: 'm-2', outcome: 'permanent', code: 'ITEM_TOO_LARGE' },
    ]);
  });

  it('fails fast on a destination kind it does not know, or an event source that does not fit the kind', () => {
    const base = { client: {} as never, tableName: 'Outbox', producer: 'orders-api' };
    const cases: [Record<string, unknown>, string][] = [
      [
        { destinationKind: 'kinesis' },
        "Expected `destinationKind` to be one of 'sqs', 'eventbridge', 'sns', got `\"kinesis\"`",
      ],
      [
        { destinationKind: 'eventbridge' },
        "Expected `eventSource` to be the relay's EventBridge `Source` (1 to 256 characters) when `destinationKind` is 'eventbridge', got `undefined`",
      ],
      [
        { destinationKind: 'sqs', eventSource: 'orders' },
        'Expected `eventSource` to be left out unless `destinationKind` is \'eventbridge\', got `"orders"`',
      ],
    ];
    for (const [options, message] of cases) {
      expect(() => createOutboxWriter({ ...base, ...options } as never)).toThrow(
        expect.objectContaining({ code: 'INVALID_OPTIONS', message }),
      );
    }
  });
});
