/**
 * Regressions found by the reliability suite (`test/reliability/`), pinned here on the in-memory
 * store (and, for the marshaller, on a real document client that fails before sending):
 *
 * - marker mode and two-phase: an SDK retry of a marker put (a claim) whose response was lost
 *   meets the claim's own record; the effect must still run, at once;
 * - two-phase: a claim released after a failed effect must keep the payload's fingerprint, or
 *   another payload reusing the key runs as if new;
 * - no body in logs or dead-letter reasons: a handler's `SyntaxError` and a marshalling error
 *   quote the input.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { fromBody } from '../../../lambda/core/dedup-key';
import { PermanentError } from '../../../lambda/core/errors';
import { fingerprintOf } from '../../../lambda/core/fingerprint';
import { SYNTAX_ERROR_REASON } from '../../../lambda/core/outcome';
import type { InboxStore } from '../../../lambda/core/store-port';
import type { DeadLetterMessage } from '../../../lambda/dead-letter/dead-letter-message';
import { atomic } from '../../../lambda/modes/atomic';
import { marker } from '../../../lambda/modes/marker';
import { twoPhase } from '../../../lambda/modes/two-phase';
import type { SqsBatchHandlerOptions } from '../../../lambda/sqs/sqs-handler';
import { createSqsBatchHandler, createSqsHandler } from '../../../lambda/sqs/sqs-handler';
import {
  captureLogger,
  captureMetrics,
  counts,
  manualClock,
  sqsEvent,
  sqsRecord,
  T0,
} from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';

interface Payment {
  readonly id: string;
  readonly amount: number;
  readonly payload?: string;
}

const ids = (...messageIds: string[]) => ({
  batchItemFailures: messageIds.map((itemIdentifier) => ({ itemIdentifier })),
});

function setup(options: Partial<SqsBatchHandlerOptions<Payment>>, store: InboxStore = createMemoryStore()) {
  const logger = captureLogger();
  const metrics = captureMetrics();
  const deadLetters: DeadLetterMessage[] = [];
  const processBatch = createSqsBatchHandler<Payment>({
    consumer: 'payments',
    dedupKey: fromBody('id'),
    store,
    clock: manualClock(),
    logger,
    metrics,
    logLevel: 'debug',
    ttlSeconds: 3600,
    deadLetter: 'direct',
    deadLetterSender: { send: async (message) => void deadLetters.push(message) },
    ...options,
  } as SqsBatchHandlerOptions<Payment>);
  return { processBatch, logger, metrics, deadLetters };
}

describe('a lost response to the claim, retried by the SDK', () => {
  const cases: [string, 'insert' | 'claimLease', Partial<SqsBatchHandlerOptions<Payment>>][] = [
    ['marker mode', 'insert', { mode: marker((message) => void performed.push(message.body.amount)) }],
    [
      'two-phase',
      'claimLease',
      {
        mode: twoPhase({
          handle: (message, effects) => effects.run(() => void performed.push(message.body.amount)),
          leaseMillis: 30_000,
        }),
      },
    ],
  ];
  let performed: number[] = [];

  it.each(cases)(
    '%s: runs the effect at once when the retried claim meets the claim its own first attempt wrote',
    async (_, method, options) => {
      performed = [];
      const memory = createMemoryStore();
      const send = memory[method] as (...args: unknown[]) => Promise<unknown>;
      let lost = 1;
      // The first attempt is applied, its answer lost; the SDK sends the same request again.
      const store = {
        ...memory,
        [method]: async (...args: unknown[]) => {
          const first = await send(...args);
          return lost-- > 0 ? send(...args) : first;
        },
      } as InboxStore;
      const { processBatch, metrics } = setup(options, store);

      expect(await processBatch(sqsEvent(sqsRecord('m-1', { id: 'p-1', amount: 1 })))).toEqual(ids());
      expect(await processBatch(sqsEvent(sqsRecord('m-2', { id: 'p-1', amount: 1 })))).toEqual(ids());

      expect(performed).toEqual([1]);
      expect(metrics.published.map((published) => published.counts)).toEqual([
        counts({ processed: 1 }),
        counts({ duplicate: 1 }),
      ]);
    },
  );
});

describe('two-phase: a key reused with another payload after a failed effect', () => {
  it('dead-letters the other payload as a mismatch when the first effect ran and its answer was lost, then completes the first on its retry', async () => {
    const store = createMemoryStore();
    const performed: number[] = [];
    let lostAnswers = 1;
    const { processBatch, deadLetters, metrics } = setup(
      {
        mode: twoPhase({
          handle: (message, effects) =>
            effects.run(() => {
              performed.push(message.body.amount);
              if (lostAnswers-- > 0) throw new Error('downstream timed out after applying the effect');
            }),
          leaseMillis: 30_000,
        }),
      },
      store,
    );
    const first = sqsRecord('m-1', { id: 'p-1', amount: 1 });

    expect(await processBatch(sqsEvent(first))).toEqual(ids('m-1'));
    expect(await processBatch(sqsEvent(sqsRecord('m-2', { id: 'p-1', amount: 2 })))).toEqual(ids());
    expect(await processBatch(sqsEvent(first))).toEqual(ids());

    expect(performed).toEqual([1, 1]);
    expect(deadLetters.map((letter) => [letter.sourceMessageId, letter.code])).toEqual([
      ['m-2', 'PAYLOAD_MISMATCH'],
    ]);
    expect(metrics.published.map((published) => published.counts)).toEqual([
      counts({ retry: 1 }),
      counts({ mismatch: 1 }),
      counts({ processed: 1 }),
    ]);
    expect(store.read('inbox', 'payments#p-1')).toMatchObject({
      status: 'COMPLETED',
      fingerprint: fingerprintOf({ id: 'p-1', amount: 1 }),
    });
  });
});

describe('no body in logs or dead-letter reasons', () => {
  const mark = 'S3NT1NEL-4f2a9c';

  it('logs a SyntaxError from the handler by its class only, never its message', async () => {
    const { processBatch, logger } = setup({
      mode: atomic((message) => JSON.parse(message.body.payload ?? '')),
    });

    expect(
      await processBatch(
        sqsEvent(sqsRecord('m-1', { id: 'p-1', amount: 1, payload: `${mark} is not JSON` })),
      ),
    ).toEqual(ids('m-1'));

    expect(logger.entries).toEqual([
      expect.objectContaining({
        outcome: 'retry',
        code: 'HANDLER_FAILED',
        errorName: 'SyntaxError',
        reason: SYNTAX_ERROR_REASON,
      }),
    ]);
    expect(JSON.stringify(logger.entries)).not.toContain(mark);
  });

  it('logs a SyntaxError from a two-phase effect by its class only', async () => {
    const { processBatch, logger } = setup({
      mode: twoPhase({
        handle: (message, effects) => effects.run(() => JSON.parse(message.body.payload ?? '')),
      }),
    });

    await processBatch(sqsEvent(sqsRecord('m-1', { id: 'p-1', amount: 1, payload: `{"a":${mark}` })));

    expect(logger.entries.at(-1)).toMatchObject({ errorName: 'SyntaxError', reason: SYNTAX_ERROR_REASON });
    expect(JSON.stringify(logger.entries)).not.toContain(mark);
  });

  it('keeps the reason of a PermanentError verbatim: what it says is the user’s explicit choice', async () => {
    const { processBatch, deadLetters } = setup({
      mode: atomic((message) => {
        throw new PermanentError(`order ${message.body.id} has no items`);
      }),
    });

    await processBatch(sqsEvent(sqsRecord('m-1', { id: 'p-1', amount: 1 })));

    expect(deadLetters.map((letter) => [letter.code, letter.reason])).toEqual([
      ['PERMANENT', 'order p-1 has no items'],
    ]);
  });

  it('names a value the document client cannot marshal by the error class only, in the log and the dead-letter reason', async () => {
    const digits = '98765432109876543210';
    // Marshalling fails inside the document client, before anything is sent.
    const client = DynamoDBDocumentClient.from(
      new DynamoDBClient({
        region: 'us-east-1',
        endpoint: 'http://127.0.0.1:9',
        credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
        maxAttempts: 1,
      }),
      { marshallOptions: { removeUndefinedValues: true } },
    );
    const logger = captureLogger();
    const deadLetters: DeadLetterMessage[] = [];
    const handler = createSqsHandler<Payment>({
      consumer: 'payments',
      client,
      tableName: 'inbox',
      clock: () => T0,
      dedupKey: fromBody('id'),
      mode: atomic((message, unitOfWork) => {
        unitOfWork.put({ TableName: 'payments', Item: { pk: message.body.id, amount: message.body.amount } });
      }),
      logger,
      metrics: false,
      deadLetter: 'direct',
      deadLetterSender: { send: async (message) => void deadLetters.push(message) },
    });

    const response = await handler(
      sqsEvent(sqsRecord('m-1', {}, { rawBody: `{"id":"p-1","note":"${mark}","amount":${digits}}` })),
    );

    expect(response).toEqual(ids());
    expect(logger.entries).toEqual([
      expect.objectContaining({
        outcome: 'permanent',
        code: 'VALIDATION',
        reason: expect.stringMatching(/^commit: the item cannot be marshalled .*\(Error\)$/),
      }),
    ]);
    expect(deadLetters.map((letter) => [letter.code, letter.reason])).toEqual([
      ['VALIDATION', logger.entries[0]?.reason],
    ]);
    for (const text of [JSON.stringify(logger.entries), deadLetters[0]?.reason]) {
      expect(text).not.toContain(digits.slice(0, 12));
      expect(text).not.toContain(mark);
    }
    client.destroy();
  });
});
