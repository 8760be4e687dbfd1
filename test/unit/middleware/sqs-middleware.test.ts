/**
 * The middy middleware's early response with the middlewares registered before it: the cleanups
 * Powertools middlewares keep for an early response run (the real `logMetrics` flushes), in the
 * order middy runs `after` phases, after the batch.
 */
import { Metrics } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPowertoolsMetricsSink } from '../../../lambda';
import { createSqsMiddleware, MIDDLEWARE_CLEANUP_PREFIX } from '../../../lambda/middleware/sqs-middleware';
import type { SqsEvent } from '../../../lambda/sqs/sqs-event';
import { captureStdout, outcomeHandlerOptions, sqsEvent, sqsRecord } from '../../support/fixtures';

const context = { awsRequestId: 'req-1', functionName: 'orders', getRemainingTimeInMillis: () => 60_000 };
const batch = sqsEvent(sqsRecord('m-1', { id: 'o-1' }), sqsRecord('m-2', { id: 'o-2', outcome: 'throw' }));

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('createSqsMiddleware with middlewares registered before it', () => {
  it('lets Powertools logMetrics flush on the early response: one EMF line with the handler and toolkit metrics', async () => {
    vi.stubEnv('POWERTOOLS_DEV', '');
    const metrics = new Metrics({ namespace: 'Orders', serviceName: 'orders' });
    const handler = middy<SqsEvent>()
      .use(logMetrics(metrics))
      .use({ before: async () => void metrics.addMetric('BatchesSeen', 'Count', 1) })
      .use(createSqsMiddleware(outcomeHandlerOptions({ metrics: createPowertoolsMetricsSink(metrics) })));

    const { result, lines } = await captureStdout(() => handler(batch, context as never));

    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-2' }] });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      _aws: { CloudWatchMetrics: [{ Namespace: 'Orders', Dimensions: [['service']] }] },
      service: 'orders',
      BatchesSeen: 1,
      Processed: 1,
      Retry: 1,
      Duplicate: 0,
    });
    expect(metrics.hasStoredMetrics()).toBe(false);
  });

  it('runs the early-response cleanups after the batch, the last registered first, and only those under the prefix', async () => {
    const seen: string[] = [];
    const keep =
      (name: string, value: unknown = () => void seen.push(name)) =>
      async (request: { internal: Record<string, unknown> }) => {
        request.internal[name] = value;
      };
    const handler = middy<SqsEvent>()
      .use({ before: keep(`${MIDDLEWARE_CLEANUP_PREFIX}tracer`) })
      .use({ before: keep(`${MIDDLEWARE_CLEANUP_PREFIX}metrics`) })
      .use({ before: keep('other.cleanup') })
      .use({ before: keep(`${MIDDLEWARE_CLEANUP_PREFIX}not-a-function`, 'text') })
      .use(
        createSqsMiddleware(
          outcomeHandlerOptions({
            handle: () => {
              seen.push('handle');
            },
          }),
        ),
      );

    expect(await handler(sqsEvent(sqsRecord('m-1', { id: 'o-1' })), context as never)).toEqual({
      batchItemFailures: [],
    });
    expect(seen).toEqual([
      'handle',
      `${MIDDLEWARE_CLEANUP_PREFIX}metrics`,
      `${MIDDLEWARE_CLEANUP_PREFIX}tracer`,
    ]);
  });

  it('fails the invocation when a cleanup throws, as its after phase would have', async () => {
    const handler = middy<SqsEvent>()
      .use({
        before: async (request: { internal: Record<string, unknown> }) => {
          request.internal[`${MIDDLEWARE_CLEANUP_PREFIX}metrics`] = () => {
            throw new Error('flush failed');
          };
        },
      })
      .use(createSqsMiddleware(outcomeHandlerOptions()));

    await expect(handler(sqsEvent(sqsRecord('m-1', { id: 'o-1' })), context as never)).rejects.toThrow(
      'flush failed',
    );
  });
});
