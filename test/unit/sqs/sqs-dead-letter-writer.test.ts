/**
 * The SQS transport's direct dead letters against what SQS refuses: sent through
 * `createSqsDeadLetterSender` over the test conformance layer, a message near the queue's size
 * limit keeps its body and attributes and loses only what does not fit of the reason, and one
 * that cannot fit is left to the queue's redrive policy (retried), never sent to be refused.
 */
import type { SendMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { fromBody } from '../../../lambda/core/dedup-key';
import { PermanentError } from '../../../lambda/core/errors';
import { createSqsDeadLetterSender } from '../../../lambda/dead-letter/sqs-dead-letter-sender';
import { marker } from '../../../lambda/modes/marker';
import { createSqsBatchHandler } from '../../../lambda/sqs/sqs-handler';
import { createConformingSqsClient, sqsMessageBytes } from '../../support/aws-limits/sqs';
import { captureLogger, lambdaContext, sqsEvent, sqsRecord, T0 } from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';

const QUEUE_URL = 'https://sqs.us-east-1.amazonaws.com/000000000000/orders-dlq';

function setup(reason: string) {
  const accepted: SendMessageCommand['input'][] = [];
  const client = createConformingSqsClient({
    send: async (command: SendMessageCommand) => {
      accepted.push(command.input);
      return {};
    },
  });
  const logger = captureLogger();
  const handler = createSqsBatchHandler<{ id: string; pad: string }>({
    consumer: 'orders',
    dedupKey: fromBody('id'),
    mode: marker(() => {
      throw new PermanentError(reason);
    }),
    store: createMemoryStore(),
    clock: () => T0,
    deadLetter: 'direct',
    deadLetterSender: createSqsDeadLetterSender({ client: client as never, queueUrl: QUEUE_URL }),
    logger,
    metrics: false,
  });
  return { handler, accepted, logger };
}

/** A body of `bytes` UTF-8 bytes: `{"id":"o-1","pad":"xxx…"}`. */
const bodyOf = (bytes: number) => {
  const frame = JSON.stringify({ id: 'o-1', pad: '' });
  return JSON.stringify({ id: 'o-1', pad: 'x'.repeat(bytes - frame.length) });
};

describe('SQS direct dead letters near the message size limit', () => {
  it('keeps the body and attributes and cuts the reason to 128 code points when the whole dead letter would be over 1 MiB', async () => {
    const { handler, accepted } = setup('r'.repeat(1000));
    const body = bodyOf(1_048_576 - 600);

    const response = await handler(
      sqsEvent(sqsRecord('m-1', undefined, { rawBody: body, attributes: { tenant: 't-1' } })),
      lambdaContext(),
    );

    expect(response).toEqual({ batchItemFailures: [] });
    expect(accepted).toHaveLength(1);
    expect(accepted[0]!.MessageBody).toBe(body);
    expect(accepted[0]!.MessageAttributes?.tenant?.StringValue).toBe('t-1');
    expect(Array.from(accepted[0]!.MessageAttributes?.['eo-reason']?.StringValue ?? '')).toHaveLength(128);
    expect(accepted[0]!.MessageAttributes?.['eo-dedup-key']).toBeUndefined();
    expect(sqsMessageBytes(accepted[0]!)).toBeLessThanOrEqual(1_048_576);
  });

  it('leaves a message that cannot fit with its reason to the redrive policy: retried, nothing sent', async () => {
    const { handler, accepted, logger } = setup('too large');
    const body = bodyOf(1_048_576 - 20);

    const response = await handler(sqsEvent(sqsRecord('m-1', undefined, { rawBody: body })), lambdaContext());

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-1' }] });
    expect(accepted).toEqual([]);
    expect(logger.entries.at(-1)).toMatchObject({
      outcome: 'permanent',
      deadLetter: 'send-failed',
      deadLetterCode: 'DEAD_LETTER_FAILED',
    });
  });
});
