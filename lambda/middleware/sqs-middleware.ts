/**
 * The middy adapter: the same engine as `createSqsHandler`, as a `@middy/core` middleware.
 * Thin by design; all behaviour lives in the core.
 */
import type { LambdaContext, SqsBatchResponse, SqsEvent } from '../core/sqs-event';
import { createSqsHandler, type SqsHandlerOptions } from '../sqs-handler';

/** A middy middleware object (structurally compatible with `@middy/core`'s `MiddlewareObj`). */
export interface SqsMiddleware {
  /** Processes the batch and returns the partial batch response as the early response. */
  readonly before: (request: {
    readonly event: SqsEvent;
    readonly context: LambdaContext;
  }) => Promise<SqsBatchResponse>;
}

/**
 * Creates a middy middleware that processes the SQS batch in its `before` phase and returns
 * the partial batch response as middy's early response. The batch response is exactly what
 * `createSqsHandler` returns for the same options and batch. Middlewares registered before it
 * run first; as with any early response, the base handler and the `after` phases are skipped,
 * so pass the per-message logic in the mode. Options are validated when this is called.
 *
 * @example
 * import middy from '@middy/core';
 *
 * export const handler = middy().use(
 *   createSqsMiddleware({
 *     consumer: 'audit-recorder',
 *     client,
 *     tableName: process.env.EO_INBOX_TABLE!,
 *     dedupKey: fromCloudEvent(),
 *     mode: marker(async (message) => notify(message.body)),
 *   }),
 * );
 */
export function createSqsMiddleware<TBody = unknown, TStore = unknown>(
  options: SqsHandlerOptions<TBody, TStore>,
): SqsMiddleware {
  const handler = createSqsHandler(options);
  return { before: (request) => handler(request.event, request.context) };
}
