/**
 * `handle` gets the Lambda context of the invocation as `message.context`, in every mode, and
 * `undefined` when the handler is called without one.
 */
import { describe, expect, it } from 'vitest';
import { atomic, entity, type Message, marker, twoPhase } from '../../../lambda';
import type { LambdaContext } from '../../../lambda/sqs/sqs-event';
import { createSqsHandler } from '../../../lambda/sqs/sqs-handler';
import { type OutcomeEvent, outcomeHandlerOptions, sqsEvent, sqsRecord } from '../../support/fixtures';

const context: LambdaContext = {
  awsRequestId: 'req-1',
  functionName: 'orders',
  getRemainingTimeInMillis: () => 60_000,
};

/** Each mode with a `handle` that keeps the context it was given. */
function modes(seen: (LambdaContext | undefined)[]) {
  const keep = (message: Message<OutcomeEvent>) => void seen.push(message.context);
  return {
    marker: marker<OutcomeEvent>(keep),
    atomic: atomic<OutcomeEvent>(keep),
    entity: entity<OutcomeEvent>((message) => {
      keep(message);
      return { tableName: 'Orders', keyAttribute: 'pk', item: { pk: message.dedupKey } };
    }),
    twoPhase: twoPhase<OutcomeEvent>({ handle: keep }),
  };
}

describe('message.context', () => {
  for (const name of ['marker', 'atomic', 'entity', 'twoPhase'] as const) {
    it(`is the invocation's Lambda context in ${name} mode`, async () => {
      const seen: (LambdaContext | undefined)[] = [];
      const handler = createSqsHandler(outcomeHandlerOptions({ mode: modes(seen)[name] }));

      expect(await handler(sqsEvent(sqsRecord('m-1', { id: 'o-1' })), context)).toEqual({
        batchItemFailures: [],
      });
      expect(seen).toHaveLength(1);
      expect(seen[0]).toBe(context);
    });
  }

  it('is undefined when the handler is called without a context', async () => {
    const seen: (LambdaContext | undefined)[] = [];
    const handler = createSqsHandler(outcomeHandlerOptions({ mode: modes(seen).marker }));

    await handler(sqsEvent(sqsRecord('m-1', { id: 'o-1' })));
    expect(seen).toEqual([undefined]);
  });
});
