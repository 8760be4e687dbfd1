/**
 * What order a receiver sees, as `docs/outbox.md` ("What is not guaranteed") states it: on one
 * shard the relay publishes first copies in stream order and, after a failure, resumes at the
 * checkpoint, so no event is first published after a later one of its shard; copies published
 * again (a batch retried whole after the relay died past its publishes) arrive after later
 * events, and the receiving inbox makes them duplicates. Across shards nothing orders the events.
 */
import { describe, expect, it } from 'vitest';
import { OUTBOX_ATTRIBUTES } from '../../../lambda/core/contract';
import { createOutboxRelay, type OutboxMessage } from '../../../lambda/outbox';
import type { DynamoDbStreamRecord } from '../../../lambda/streams/stream-event';
import { captureLogger } from '../../support/fixtures';
import { dynamoDbStreamRecord } from '../../support/stream-fixtures';

const event = (sequenceNumber: string, id: string): DynamoDbStreamRecord =>
  dynamoDbStreamRecord(sequenceNumber, {
    eventName: 'INSERT',
    keys: { pk: { S: id } },
    newImage: {
      [OUTBOX_ATTRIBUTES.pk]: { S: id },
      [OUTBOX_ATTRIBUTES.type]: { S: 'OrderChanged' },
      [OUTBOX_ATTRIBUTES.body]: { S: `{"version":${sequenceNumber}}` },
      [OUTBOX_ATTRIBUTES.entity]: { S: 'o-1' },
    },
  });

/** A receiver keyed on the event id, as `fromAttribute('idempotency-key')` keys it: first copies apply, later ones are duplicates. */
function receiver() {
  const arrived: string[] = [];
  const applied: string[] = [];
  return {
    arrived,
    applied,
    async publish(message: OutboxMessage) {
      arrived.push(message.id);
      if (!applied.includes(message.id)) applied.push(message.id);
    },
  };
}

describe('the order a receiver sees', () => {
  it('on one shard: first copies in stream order, a failure resumed at its checkpoint, re-published copies after later events and applied once', async () => {
    const shard = [event('1', 'e-1'), event('2', 'e-2'), event('3', 'e-3')];
    const destination = receiver();
    let failing = true;
    const relay = createOutboxRelay({
      destination: {
        async publish(message) {
          // e-2 fails once (throttled): the relay checkpoints there, e-3 waits.
          if (message.id === 'e-2' && failing) {
            failing = false;
            throw Object.assign(new Error('Rate exceeded'), {
              name: 'ThrottlingException',
              $fault: 'client',
            });
          }
          await destination.publish(message);
        },
      },
      logger: captureLogger(),
      metrics: false,
    });

    expect(await relay({ Records: shard })).toEqual({ batchItemFailures: [{ itemIdentifier: '2' }] });
    // The event source resumes at the checkpoint.
    expect(await relay({ Records: shard.slice(1) })).toEqual({ batchItemFailures: [] });
    // The relay died after its publishes, before its answer: the mapping delivers the batch again.
    expect(await relay({ Records: shard })).toEqual({ batchItemFailures: [] });

    expect(destination.arrived).toEqual(['e-1', 'e-2', 'e-3', 'e-1', 'e-2', 'e-3']);
    expect(destination.applied).toEqual(['e-1', 'e-2', 'e-3']);
  });

  it('across shards: each shard in its own order, the shards in whatever order their invocations run', async () => {
    const destination = receiver();
    const relay = createOutboxRelay({ destination, logger: captureLogger(), metrics: false });
    // One transaction's two events whose items hash to two shards: the second shard's invocation may run first.
    await relay({ Records: [event('10', 'e-b1'), event('11', 'e-b2')] });
    await relay({ Records: [event('5', 'e-a1'), event('6', 'e-a2')] });
    expect(destination.applied).toEqual(['e-b1', 'e-b2', 'e-a1', 'e-a2']);
  });
});
