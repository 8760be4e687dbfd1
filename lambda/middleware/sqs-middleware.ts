/**
 * The middy adapter: the same engine as `createSqsHandler`, as a `@middy/core` middleware.
 * Thin by design; all behaviour lives in the core.
 */
import type { LambdaContext, SqsBatchResponse, SqsEvent } from '../sqs/sqs-event';
import { createSqsHandler, type SqsHandlerOptions } from '../sqs/sqs-handler';

/**
 * The key prefix under which Powertools for AWS Lambda middlewares (`logMetrics`,
 * `captureLambdaHandler`, `injectLambdaContext`) keep, in middy's `request.internal`, the cleanup
 * that a middleware answering early must run for them: their `after` phase (a metrics flush, a
 * trace segment closed, a log context cleared) is skipped by the early response.
 */
export const MIDDLEWARE_CLEANUP_PREFIX = 'powertools-for-aws.';

/** The part of middy's request that the middleware reads. */
export interface SqsMiddlewareRequest {
  /** The Lambda event: an SQS batch. */
  readonly event: SqsEvent;
  /** The Lambda context. */
  readonly context: LambdaContext;
  /** middy's per-invocation state, where middlewares registered earlier keep their cleanups. */
  readonly internal?: Readonly<Record<string, unknown>>;
}

/** A middy middleware object (structurally compatible with `@middy/core`'s `MiddlewareObj`). */
export interface SqsMiddleware {
  /**
   * Processes the batch, runs the cleanups that middlewares registered before it left for an
   * early response, then returns the partial batch response as the early response.
   */
  readonly before: (request: SqsMiddlewareRequest) => Promise<SqsBatchResponse>;
}

/**
 * Runs the cleanups kept under {@link MIDDLEWARE_CLEANUP_PREFIX} in `request.internal`, the last
 * registered first (the order middy runs `after` phases in). A cleanup that throws fails the
 * invocation, as its `after` phase would have: the batch is delivered again and its processed
 * messages are acknowledged as duplicates.
 */
async function runEarlyResponseCleanups(request: SqsMiddlewareRequest): Promise<void> {
  const internal = request.internal ?? {};
  const cleanups = Object.keys(internal)
    .filter((key) => key.startsWith(MIDDLEWARE_CLEANUP_PREFIX))
    .map((key) => internal[key])
    .filter((cleanup): cleanup is (request: SqsMiddlewareRequest) => unknown => typeof cleanup === 'function')
    .reverse();
  for (const cleanup of cleanups) await cleanup(request);
}

/**
 * Creates a middy middleware that processes the SQS batch in its `before` phase and returns
 * the partial batch response as middy's early response. The batch response is exactly what
 * `createSqsHandler` returns for the same options and batch. Middlewares registered before it
 * run first. An early response makes middy skip the base handler and every `after` phase, so
 * pass the per-message logic in the mode; before answering, the middleware runs the cleanups
 * that Powertools middlewares registered before it keep for an early response (see
 * {@link MIDDLEWARE_CLEANUP_PREFIX}), so `logMetrics` still flushes its metrics and the tracer
 * closes its segment. The `after` phase of any other middleware does not run. Options are
 * validated when this is called.
 *
 * @example
 * import middy from '@middy/core';
 * import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
 *
 * export const handler = middy()
 *   .use(logMetrics(metrics))
 *   .use(
 *     createSqsMiddleware({
 *       consumer: 'audit-recorder',
 *       client,
 *       tableName: process.env.EO_INBOX_TABLE!,
 *       dedupKey: fromCloudEvent(),
 *       mode: marker(async (message) => notify(message.body)),
 *     }),
 *   );
 */
export function createSqsMiddleware<TBody = unknown, TStore = unknown>(
  options: SqsHandlerOptions<TBody, TStore>,
): SqsMiddleware {
  const handler = createSqsHandler(options);
  return {
    before: async (request) => {
      const response = await handler(request.event, request.context);
      await runEarlyResponseCleanups(request);
      return response;
    },
  };
}
