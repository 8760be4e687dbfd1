/**
 * The batch processor's transport rules (issue 12): FIFO is decided by the queue, never by a
 * group id (fair queues); the deadline margin adapts to a short invocation; failures are logged
 * and dead-lettered without the messages of user errors unless asked; a dead letter carries the
 * original deduplication id.
 */
import assert from 'node:assert/strict';
import { describe, expect, it } from 'vitest';
import { deadlineMarginFor } from '../../../lambda/core/batch-processor';
import { DEAD_LETTER_ATTRIBUTES, DEADLINE_MARGIN_MAX_SHARE } from '../../../lambda/core/contract';
import { fromBody } from '../../../lambda/core/dedup-key';
import { PermanentError } from '../../../lambda/core/errors';
import type { Message } from '../../../lambda/core/message';
import type { DeadLetterMessage } from '../../../lambda/dead-letter/dead-letter-message';
import { type MarkerHandler, marker } from '../../../lambda/modes/marker';
import { fromDeduplicationId } from '../../../lambda/sqs/key-sources';
import { isFifoQueue } from '../../../lambda/sqs/sqs-event';
import type { SqsBatchHandlerOptions } from '../../../lambda/sqs/sqs-handler';
import { createSqsBatchHandler } from '../../../lambda/sqs/sqs-handler';
import { captureLogger, manualClock, sqsEvent, sqsRecord } from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';

interface OrderEvent {
  readonly id: string;
  readonly card?: string;
}

/** The batch processor in marker mode; `handle` replaces the handler that records each message. */
function setup({
  handle,
  ...options
}: Partial<SqsBatchHandlerOptions<OrderEvent>> & { handle?: MarkerHandler<OrderEvent> } = {}) {
  const clock = manualClock();
  const logger = captureLogger();
  const handled: string[] = [];
  const deadLetters: DeadLetterMessage[] = [];
  const processBatch = createSqsBatchHandler<OrderEvent>({
    consumer: 'orders',
    dedupKey: fromBody('id'),
    mode: marker(
      handle ??
        ((message: Message<OrderEvent>) => {
          handled.push(message.messageId);
        }),
    ),
    store: createMemoryStore(),
    clock,
    logger,
    metrics: false,
    ...options,
  } as SqsBatchHandlerOptions<OrderEvent>);
  return { processBatch, clock, logger, handled, deadLetters };
}

const ids = (...messageIds: string[]) => ({
  batchItemFailures: messageIds.map((itemIdentifier) => ({ itemIdentifier })),
});

describe('FIFO is decided by the queue, not by the group id', () => {
  it('tells FIFO queues by the .fifo ending of their ARN or URL', () => {
    expect(isFifoQueue('arn:aws:sqs:us-east-1:000000000000:orders.fifo')).toBe(true);
    expect(isFifoQueue('https://sqs.us-east-1.amazonaws.com/000000000000/orders.fifo')).toBe(true);
    expect(isFifoQueue('arn:aws:sqs:us-east-1:000000000000:orders')).toBe(false);
    expect(isFifoQueue('arn:aws:sqs:us-east-1:000000000000:orders-fifo')).toBe(false);
    expect(isFifoQueue(undefined)).toBe(false);
  });

  it('reports only the failed message of a fair-queue batch: a group id on a standard queue keeps no order', async () => {
    const { processBatch, handled } = setup({
      handle: (message: Message<OrderEvent>) => {
        if (message.body.id === 'o-1') throw new Error('downstream unavailable');
        handled.push(message.messageId);
      },
    });
    const fair = { groupId: 'tenant-a', queue: 'orders' };

    const response = await processBatch(
      sqsEvent(
        sqsRecord('m-1', { id: 'o-1' }, fair),
        sqsRecord('m-2', { id: 'o-2' }, fair),
        sqsRecord('m-3', { id: 'o-3' }, fair),
      ),
    );

    expect(response).toEqual(ids('m-1'));
    expect(handled).toEqual(['m-2', 'm-3']);
  });

  it('still blocks the rest of a group on a FIFO queue', async () => {
    const { processBatch, handled, logger } = setup({
      handle: (message: Message<OrderEvent>) => {
        if (message.body.id === 'o-1') throw new Error('downstream unavailable');
        handled.push(message.messageId);
      },
    });
    const fifo = { groupId: 'tenant-a', queue: 'orders.fifo' };

    const response = await processBatch(
      sqsEvent(sqsRecord('m-1', { id: 'o-1' }, fifo), sqsRecord('m-2', { id: 'o-2' }, fifo)),
    );

    expect(response).toEqual(ids('m-1', 'm-2'));
    expect(handled).toEqual([]);
    expect(logger.entries.map((entry) => [entry.messageId, entry.code])).toEqual([
      ['m-1', 'HANDLER_FAILED'],
      ['m-2', 'GROUP_BLOCKED'],
    ]);
  });
});

describe('deadlineMarginFor', () => {
  it('takes the configured margin while it is at most half the remaining time, else half of it', () => {
    expect(DEADLINE_MARGIN_MAX_SHARE).toBe(0.5);
    expect(deadlineMarginFor(2000, 60_000)).toBe(2000);
    expect(deadlineMarginFor(2000, 4000)).toBe(2000);
    expect(deadlineMarginFor(2000, 3000)).toBe(1500);
    expect(deadlineMarginFor(2000, 2000)).toBe(1000);
    expect(deadlineMarginFor(2000, 1501)).toBe(750);
    expect(deadlineMarginFor(2000, 1)).toBe(0);
    expect(deadlineMarginFor(0, 1000)).toBe(0);
    expect(deadlineMarginFor(2000, 0)).toBe(0);
    expect(deadlineMarginFor(2000, -5)).toBe(0);
  });

  it('processes records when the function timeout is at or below the margin, and stops at half the time left', async () => {
    const { processBatch, clock, handled, logger } = setup({
      concurrency: 1,
      deadlineMarginMillis: 2000,
      handle: (message: Message<OrderEvent>) => {
        handled.push(message.messageId);
        clock.advance(400);
      },
    });

    const response = await processBatch(
      sqsEvent(
        sqsRecord('m-1', { id: 'o-1' }),
        sqsRecord('m-2', { id: 'o-2' }),
        sqsRecord('m-3', { id: 'o-3' }),
      ),
      { getRemainingTimeInMillis: () => 1500 },
    );

    // Margin 750 ms: m-1 starts at 0, m-2 at 400, m-3 at 800 is past the deadline at 750.
    expect(handled).toEqual(['m-1', 'm-2']);
    expect(response).toEqual(ids('m-3'));
    expect(logger.entries.map((entry) => [entry.messageId, entry.code])).toEqual([['m-3', 'DEADLINE']]);
  });

  it('starts nothing when no time is left', async () => {
    const { processBatch, handled } = setup({ deadlineMarginMillis: 2000 });

    const response = await processBatch(sqsEvent(sqsRecord('m-1', { id: 'o-1' })), {
      getRemainingTimeInMillis: () => 0,
    });

    expect(handled).toEqual([]);
    expect(response).toEqual(ids('m-1'));
  });
});

describe('error messages of user code', () => {
  const card = '4111111111111111';
  const matchCard = (message: Message<OrderEvent>) => {
    assert.match(message.body.card ?? '', /^x$/);
  };
  const permanentAfterAssert = (message: Message<OrderEvent>) => {
    try {
      matchCard(message);
    } catch (error) {
      throw new PermanentError('The card was rejected', { cause: error });
    }
  };

  it('logs the class and code of a failed assertion, never its message, which quotes the card', async () => {
    const { processBatch, logger } = setup({ handle: matchCard });

    const response = await processBatch(sqsEvent(sqsRecord('m-1', { id: 'o-1', card })));

    expect(response).toEqual(ids('m-1'));
    expect(logger.entries).toEqual([
      expect.objectContaining({
        messageId: 'm-1',
        outcome: 'retry',
        code: 'HANDLER_FAILED',
        errorName: 'AssertionError',
        errorCode: 'ERR_ASSERTION',
        reason: 'AssertionError (code ERR_ASSERTION) thrown; its message is not logged',
      }),
    ]);
    expect(JSON.stringify(logger.entries)).not.toContain('4111');
  });

  it('dead-letters without the card: the reason attribute carries no user message by default', async () => {
    const deadLetters: DeadLetterMessage[] = [];
    const { processBatch, logger } = setup({
      // A library error with no toolkit code: retried, and its message hidden.
      handle: matchCard,
      deadLetter: 'direct',
      deadLetterSender: { send: async (message) => void deadLetters.push(message) },
      parse: (raw) => {
        const order = JSON.parse(raw) as OrderEvent;
        // A validator whose error quotes the value it rejects.
        if (order.id === 'o-2') throw new RangeError(`bad card ${order.card}`);
        return order;
      },
    });

    await processBatch(sqsEvent(sqsRecord('m-2', { id: 'o-2', card })));

    expect(deadLetters.map(({ code, reason }) => ({ code, reason }))).toEqual([
      { code: 'MALFORMED_BODY', reason: 'The body was rejected by the `parse` option (RangeError thrown)' },
    ]);
    expect(JSON.stringify(logger.entries)).not.toContain('4111');
  });

  it("keeps a toolkit error's own reason, a PermanentError's included", async () => {
    const deadLetters: DeadLetterMessage[] = [];
    const { processBatch, logger } = setup({
      handle: permanentAfterAssert,
      deadLetter: 'direct',
      deadLetterSender: { send: async (message) => void deadLetters.push(message) },
    });

    await processBatch(sqsEvent(sqsRecord('m-1', { id: 'o-1', card })));

    expect(deadLetters.map(({ code, reason }) => ({ code, reason }))).toEqual([
      { code: 'PERMANENT', reason: 'The card was rejected' },
    ]);
    expect(logger.entries[0]).toMatchObject({ errorName: 'PermanentError', reason: 'The card was rejected' });
    expect(JSON.stringify(logger.entries)).not.toContain('4111');
  });

  it('logs the user message with logErrorMessages', async () => {
    const { processBatch, logger } = setup({ handle: matchCard, logErrorMessages: true });

    await processBatch(sqsEvent(sqsRecord('m-1', { id: 'o-1', card })));

    expect(logger.entries[0]).toMatchObject({ errorName: 'AssertionError', errorCode: 'ERR_ASSERTION' });
    expect(logger.entries[0]?.reason).toContain(`'${card}'`);
  });

  it('dead-letters with the user message with logErrorMessages', async () => {
    const deadLetters: DeadLetterMessage[] = [];
    const { processBatch } = setup({
      parse: () => {
        throw new RangeError(`bad card ${card}`);
      },
      logErrorMessages: true,
      deadLetter: 'direct',
      deadLetterSender: { send: async (message) => void deadLetters.push(message) },
    });

    await processBatch(sqsEvent(sqsRecord('m-1', { id: 'o-1', card })));

    expect(deadLetters.map(({ reason }) => reason)).toEqual([
      `The body was rejected by the \`parse\` option: bad card ${card}`,
    ]);
  });

  it('never logs the message of a SyntaxError, even with logErrorMessages: it quotes the body', async () => {
    const { processBatch, logger } = setup({
      handle: () => JSON.parse(`{"card":${card}`),
      logErrorMessages: true,
    });

    await processBatch(sqsEvent(sqsRecord('m-1', { id: 'o-1' })));

    expect(logger.entries[0]).toMatchObject({ errorName: 'SyntaxError' });
    expect(JSON.stringify(logger.entries)).not.toContain('4111');
  });

  it('rejects a logErrorMessages that is not a boolean at cold start', () => {
    expect(() => setup({ logErrorMessages: 'yes' as never })).toThrow(
      'Expected `logErrorMessages` to be a boolean, got `"yes"`',
    );
  });
});

describe('dead letters keep the original deduplication id', () => {
  it('sends the record’s deduplication id, or the one an earlier dead letter carried', async () => {
    const deadLetters: DeadLetterMessage[] = [];
    const { processBatch } = setup({
      dedupKey: fromDeduplicationId(),
      handle: () => {
        throw new PermanentError('order has no items');
      },
      deadLetter: 'direct',
      deadLetterSender: { send: async (message) => void deadLetters.push(message) },
    });
    const redriven = sqsRecord(
      'm-2',
      { id: 'o-2' },
      {
        groupId: 'g',
        deduplicationId: 'm-2-dead-letter-id',
        attributes: { [DEAD_LETTER_ATTRIBUTES.deduplicationId]: 'order-2-v1' },
      },
    );

    await processBatch(
      sqsEvent(sqsRecord('m-1', { id: 'o-1' }, { groupId: 'g', deduplicationId: 'order-1-v1' }), redriven),
    );

    expect(
      deadLetters.map(({ sourceMessageId, dedupKey, deduplicationId }) => [
        sourceMessageId,
        dedupKey,
        deduplicationId,
      ]),
    ).toEqual([
      ['m-1', 'order-1-v1', 'order-1-v1'],
      ['m-2', 'order-2-v1', 'order-2-v1'],
    ]);
  });

  it('sends none for a record without one (a standard queue)', async () => {
    const deadLetters: DeadLetterMessage[] = [];
    const { processBatch } = setup({
      handle: () => {
        throw new PermanentError('order has no items');
      },
      deadLetter: 'direct',
      deadLetterSender: { send: async (message) => void deadLetters.push(message) },
    });

    await processBatch(sqsEvent(sqsRecord('m-1', { id: 'o-1' })));

    expect(deadLetters[0]).not.toHaveProperty('deduplicationId');
  });
});
