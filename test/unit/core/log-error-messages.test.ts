/**
 * `logErrorMessages` at every entry point (issue 12 item 15): by default no entry point logs the
 * message of an error thrown by user code (`assert.match(card, ...)` quotes the card); with the
 * option, the message is logged.
 */
import assert from 'node:assert/strict';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { fromBody } from '../../../lambda/core/dedup-key';
import type { LogEntry } from '../../../lambda/core/logger';
import { createIdempotentHttpHandler } from '../../../lambda/http/idempotent-http-handler';
import { createJobGuard } from '../../../lambda/jobs/job-guard';
import { createSqsMiddleware } from '../../../lambda/middleware/sqs-middleware';
import { marker } from '../../../lambda/modes/marker';
import { createSqsWorker } from '../../../lambda/worker/sqs-worker';
import { sqsEvent, sqsRecord, T0 } from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';

const CARD = '4111111111111111';
const matchCard = () => {
  assert.match(CARD, /^x$/);
};

function capture() {
  const entries: LogEntry[] = [];
  return { entries, logger: { log: (entry: LogEntry) => void entries.push(entry) } };
}

const post = {
  httpMethod: 'POST',
  path: '/payments',
  resource: '/payments',
  headers: { 'Idempotency-Key': 'k-1' },
  multiValueHeaders: { 'Idempotency-Key': ['k-1'] },
  body: '{"amount":5}',
  isBase64Encoded: false,
};

describe('logErrorMessages', () => {
  it('keeps user error messages out of the HTTP wrapper log by default, and logs them when asked', async () => {
    const run = async (logErrorMessages?: boolean) => {
      const { entries, logger } = capture();
      const handler = createIdempotentHttpHandler({
        consumer: 'payments-api',
        store: createMemoryStore(),
        clock: () => T0,
        leaseMillis: 10_000,
        logger,
        metrics: false,
        logErrorMessages,
        handle: async () => matchCard(),
      });
      await expect(handler(post)).rejects.toMatchObject({ code: 'ERR_ASSERTION' });
      return entries.find((entry) => entry.code === 'HANDLER_FAILED');
    };

    const hidden = await run();
    expect(hidden).toMatchObject({ errorName: 'AssertionError' });
    expect(hidden).not.toHaveProperty('errorMessage');
    expect(JSON.stringify(hidden)).not.toContain('4111');
    expect((await run(true))?.errorMessage).toContain(CARD);
  });

  it('keeps user error messages out of the job guard log by default, and logs them when asked', async () => {
    const run = async (logErrorMessages?: boolean) => {
      const { entries, logger } = capture();
      const guard = createJobGuard({
        consumer: 'reports',
        store: createMemoryStore(),
        clock: () => T0,
        leaseMillis: 60_000,
        logger,
        logErrorMessages,
      });
      await expect(guard.run({ job: 'nightly', slot: 's-1' }, matchCard)).rejects.toMatchObject({
        code: 'ERR_ASSERTION',
      });
      return entries.find((entry) => entry.code === 'HANDLER_FAILED');
    };

    const hidden = await run();
    expect(hidden).toMatchObject({ errorName: 'AssertionError' });
    expect(JSON.stringify(hidden)).not.toContain('4111');
    expect((await run(true))?.errorMessage).toContain(CARD);
  });

  it('keeps user error messages out of the middleware log by default, and logs them when asked', async () => {
    const run = async (logErrorMessages?: boolean) => {
      const { entries, logger } = capture();
      const middleware = createSqsMiddleware({
        consumer: 'orders',
        store: createMemoryStore(),
        clock: () => T0,
        dedupKey: fromBody('id'),
        mode: marker(matchCard),
        logger,
        metrics: false,
        logErrorMessages,
      });
      await middleware.before({ event: sqsEvent(sqsRecord('m-1', { id: 'o-1' })), context: {} });
      return entries[0];
    };

    expect(JSON.stringify(await run())).not.toContain('4111');
    expect((await run(true))?.reason).toContain(CARD);
  });

  it('keeps the message of an error sqs-consumer reports out of the worker log by default, and logs it when asked', () => {
    const run = (logErrorMessages?: boolean) => {
      const { entries, logger } = capture();
      const worker = createSqsWorker(
        {
          consumer: 'orders',
          store: createMemoryStore(),
          clock: () => T0,
          dedupKey: fromBody('id'),
          mode: marker(() => undefined),
          logger,
          metrics: false,
          logErrorMessages,
        },
        { sqs: { send: async () => ({}) } as unknown as SQSClient, queueUrl: 'https://sqs.example/1/orders' },
      );
      worker.consumer.emit('processing_error', new Error(`Unexpected failure: ${CARD}`), {
        MessageId: 'm-1',
      });
      return entries[0];
    };

    expect(run()).not.toHaveProperty('errorMessage');
    expect(JSON.stringify(run())).not.toContain('4111');
    expect(run(true)?.errorMessage).toBe(`Unexpected failure: ${CARD}`);
  });

  it('rejects a logErrorMessages that is not a boolean at every entry point', () => {
    const common = { consumer: 'c', store: createMemoryStore(), clock: () => T0 };
    expect(() =>
      createIdempotentHttpHandler({ ...common, handle: async () => ({}), logErrorMessages: 1 as never }),
    ).toThrow('Expected `logErrorMessages` to be a boolean, got `1`');
    expect(() => createJobGuard({ ...common, logErrorMessages: 'no' as never })).toThrow(
      'Expected `logErrorMessages` to be a boolean, got `"no"`',
    );
  });
});
