import { describe, expect, it } from 'vitest';
import { OUTBOX_ATTRIBUTES } from '../../../lambda/core/contract';
import {
  createOutboxRelay,
  createRelayEmfMetricsSink,
  type OutboxMessage,
  type RelayCounts,
  type RelayMetricsSink,
  sqsDestination,
} from '../../../lambda/outbox';
import type { AttributeValue, DynamoDbStreamRecord } from '../../../lambda/streams/stream-event';
import { capturingClient } from '../../support/capturing-client';
import { captureLogger } from '../../support/fixtures';
import { captureDeadLetters, dynamoDbStreamRecord } from '../../support/stream-fixtures';

const outboxImage = (id: string, entity?: string): Record<string, AttributeValue> => ({
  [OUTBOX_ATTRIBUTES.pk]: { S: id },
  [OUTBOX_ATTRIBUTES.type]: { S: 'OrderConfirmed' },
  [OUTBOX_ATTRIBUTES.body]: { S: `{"orderId":"${id}"}` },
  ...(entity === undefined ? {} : { [OUTBOX_ATTRIBUTES.entity]: { S: entity } }),
  [OUTBOX_ATTRIBUTES.expiresAt]: { N: '1767229200' },
});

const inserted = (sequenceNumber: string, id: string, entity?: string): DynamoDbStreamRecord =>
  dynamoDbStreamRecord(sequenceNumber, {
    eventName: 'INSERT',
    keys: { pk: { S: id } },
    newImage: outboxImage(id, entity),
  });

type CapturedMetrics = {
  counts: RelayCounts;
  consumer: string;
  timestampMillis: number;
  eventAgesMillis: readonly number[];
};

function captureRelayMetrics(): RelayMetricsSink & { readonly published: CapturedMetrics[] } {
  const published: CapturedMetrics[] = [];
  return {
    published,
    publish: (counts, context, eventAgesMillis) => published.push({ counts, ...context, eventAgesMillis }),
  };
}

/** An outbox event committed at `createdAt` (the item's attribute as given). */
const committed = (sequenceNumber: string, id: string, createdAt?: AttributeValue): DynamoDbStreamRecord =>
  dynamoDbStreamRecord(sequenceNumber, {
    eventName: 'INSERT',
    keys: { pk: { S: id } },
    newImage: {
      ...outboxImage(id),
      ...(createdAt === undefined ? {} : { [OUTBOX_ATTRIBUTES.createdAt]: createdAt }),
    },
  });

function recordingDestination(failOn?: string) {
  const published: OutboxMessage[] = [];
  return {
    published,
    async publish(message: OutboxMessage) {
      if (message.id === failOn) throw new Error('SQS is unavailable');
      published.push(message);
    },
  };
}

describe('the outbox relay', () => {
  it('publishes each INSERT in order with its id, type, body and entity, and skips MODIFY and REMOVE records', async () => {
    const destination = recordingDestination();
    const relay = createOutboxRelay({ destination });
    const modified = dynamoDbStreamRecord('3', {
      eventName: 'MODIFY',
      keys: { pk: { S: 'e-1' } },
      newImage: outboxImage('e-1'),
    });
    const removed = dynamoDbStreamRecord('4', {
      eventName: 'REMOVE',
      keys: { pk: { S: 'e-2' } },
      oldImage: outboxImage('e-2'),
    });

    expect(
      await relay({ Records: [inserted('1', 'e-1', 'o-1'), inserted('2', 'e-2'), modified, removed] }),
    ).toEqual({
      batchItemFailures: [],
    });

    expect(destination.published).toEqual([
      { id: 'e-1', type: 'OrderConfirmed', body: '{"orderId":"e-1"}', entity: 'o-1' },
      { id: 'e-2', type: 'OrderConfirmed', body: '{"orderId":"e-2"}' },
    ]);
  });

  it('checkpoints at the first record it cannot publish, runs none of the later ones, and logs its keys without the body', async () => {
    const destination = recordingDestination('e-2');
    const logger = captureLogger();
    const relay = createOutboxRelay({ destination, logger });

    expect(
      await relay({ Records: [inserted('1', 'e-1'), inserted('2', 'e-2'), inserted('3', 'e-3')] }),
    ).toEqual({
      batchItemFailures: [{ itemIdentifier: '2' }],
    });

    expect(destination.published.map((message) => message.id)).toEqual(['e-1']);
    expect(logger.entries).toEqual([
      {
        level: 'warn',
        message: 'Outbox relay: publish failed',
        relay: 'outbox-relay',
        sequenceNumber: '2',
        eventId: 'e-2',
        eventType: 'OrderConfirmed',
        errorName: 'Error',
      },
    ]);
  });

  it('dead-letters a new item that is not an outbox event, with the reason, and moves on', async () => {
    const destination = recordingDestination();
    const deadLetter = captureDeadLetters();
    const relay = createOutboxRelay({ destination, deadLetter });
    const foreign = dynamoDbStreamRecord('1', {
      eventName: 'INSERT',
      keys: { pk: { S: 'x' } },
      newImage: { pk: { S: 'x' } },
      eventId: 'ev-1',
    });

    expect(await relay({ Records: [foreign, inserted('2', 'e-2')] })).toEqual({ batchItemFailures: [] });

    expect(deadLetter.sent).toEqual([
      {
        body: '{"pk":{"S":"x"}}',
        reason:
          'The new item is not an outbox event: it needs String `pk`, `eventType` and `body` (the stream must carry new images)',
        code: 'VALIDATION',
        consumer: 'outbox-relay',
        sourceMessageId: 'ev-1',
        attributes: {},
      },
    ]);
    expect(destination.published.map((message) => message.id)).toEqual(['e-2']);
  });

  it('checkpoints at an item that is not an outbox event when it has no dead-letter queue, or the send fails', async () => {
    const foreign = dynamoDbStreamRecord('1', {
      eventName: 'INSERT',
      keys: { pk: { S: 'x' } },
      newImage: { pk: { S: 'x' } },
    });
    const deadLetter = captureDeadLetters();
    deadLetter.fail = true;

    for (const relay of [
      createOutboxRelay({ destination: recordingDestination(), logger: captureLogger() }),
      createOutboxRelay({ destination: recordingDestination(), deadLetter, logger: captureLogger() }),
    ]) {
      expect(await relay({ Records: [foreign, inserted('2', 'e-2')] })).toEqual({
        batchItemFailures: [{ itemIdentifier: '1' }],
      });
    }
  });

  it('emits Retry 1 with the relay name as Consumer when a publish fails, after the events it published', async () => {
    const metrics = captureRelayMetrics();
    const relay = createOutboxRelay({
      destination: recordingDestination('e-2'),
      name: 'order-events-relay',
      metrics,
      logger: captureLogger(),
      clock: () => 42,
    });

    await relay({ Records: [inserted('1', 'e-1'), inserted('2', 'e-2'), inserted('3', 'e-3')] });

    expect(metrics.published).toEqual([
      {
        counts: { published: 1, retry: 1, permanent: 0 },
        consumer: 'order-events-relay',
        timestampMillis: 42,
        eventAgesMillis: [],
      },
    ]);
  });

  it("emits each published event's age, the relay's clock after its publish less its createdAt, clamped at 0, and none for an item without a numeric createdAt or not published", async () => {
    let now = 10_000;
    const destination = recordingDestination('e-5');
    const metrics = captureRelayMetrics();
    const relay = createOutboxRelay({
      destination: {
        async publish(message) {
          now += 250;
          await destination.publish(message);
        },
      },
      metrics,
      logger: captureLogger(),
      clock: () => now,
    });

    await relay({
      Records: [
        committed('1', 'e-1', { N: '4000' }),
        // Committed by a writer whose clock runs ahead of the relay's.
        committed('2', 'e-2', { N: '99000' }),
        committed('3', 'e-3'),
        committed('4', 'e-4', { S: '4000' }),
        committed('5', 'e-5', { N: '4000' }),
      ],
    });

    expect(destination.published.map(({ id }) => id)).toEqual(['e-1', 'e-2', 'e-3', 'e-4']);
    expect(metrics.published.map(({ counts, eventAgesMillis }) => ({ counts, eventAgesMillis }))).toEqual([
      { counts: { published: 4, retry: 1, permanent: 0 }, eventAgesMillis: [10_250 - 4000, 0] },
    ]);
  });

  it('emits no event age when nothing is published', async () => {
    const metrics = captureRelayMetrics();
    const relay = createOutboxRelay({
      destination: recordingDestination('e-1'),
      metrics,
      logger: captureLogger(),
      clock: () => 42,
    });

    await relay({ Records: [committed('1', 'e-1', { N: '7' })] });

    expect(metrics.published.map(({ eventAgesMillis }) => eventAgesMillis)).toEqual([[]]);
  });

  it('counts a dead-lettered item as Permanent and skipped MODIFY and REMOVE records as nothing', async () => {
    const metrics = captureRelayMetrics();
    const relay = createOutboxRelay({
      destination: recordingDestination(),
      deadLetter: captureDeadLetters(),
      metrics,
      clock: () => 42,
    });
    const foreign = dynamoDbStreamRecord('2', {
      eventName: 'INSERT',
      keys: { pk: { S: 'x' } },
      newImage: { pk: { S: 'x' } },
    });
    const removed = dynamoDbStreamRecord('3', {
      eventName: 'REMOVE',
      keys: { pk: { S: 'e-1' } },
      oldImage: outboxImage('e-1'),
    });

    await relay({ Records: [inserted('1', 'e-1'), foreign, removed] });

    expect(metrics.published.map(({ counts }) => counts)).toEqual([{ published: 1, retry: 0, permanent: 1 }]);
  });

  it('writes the default metrics as one Embedded Metric Format line in the namespace given', () => {
    const lines: string[] = [];
    createRelayEmfMetricsSink('Orders', (line) => lines.push(line)).publish(
      { published: 3, retry: 1, permanent: 0 },
      { consumer: 'order-events-relay', timestampMillis: 7 },
      [],
    );

    expect(lines.map((line) => JSON.parse(line))).toEqual([
      {
        _aws: {
          Timestamp: 7,
          CloudWatchMetrics: [
            {
              Namespace: 'Orders',
              Dimensions: [['Consumer']],
              Metrics: [
                { Name: 'Published', Unit: 'Count' },
                { Name: 'Retry', Unit: 'Count' },
                { Name: 'Permanent', Unit: 'Count' },
              ],
            },
          ],
        },
        Consumer: 'order-events-relay',
        Published: 3,
        Retry: 1,
        Permanent: 0,
      },
    ]);
  });

  it('writes the event ages as a Milliseconds array on the counts line, the ages past 100 in lines of their own', () => {
    const lines: string[] = [];
    const ages = Array.from({ length: 250 }, (_, index) => index);
    createRelayEmfMetricsSink('Orders', (line) => lines.push(line)).publish(
      { published: 250, retry: 0, permanent: 0 },
      { consumer: 'order-events-relay', timestampMillis: 7 },
      ages,
    );

    const parsed = lines.map((line) => JSON.parse(line));
    expect(parsed.map((line) => line._aws.CloudWatchMetrics[0].Metrics)).toEqual([
      [
        { Name: 'Published', Unit: 'Count' },
        { Name: 'Retry', Unit: 'Count' },
        { Name: 'Permanent', Unit: 'Count' },
        { Name: 'EventAge', Unit: 'Milliseconds' },
      ],
      [{ Name: 'EventAge', Unit: 'Milliseconds' }],
      [{ Name: 'EventAge', Unit: 'Milliseconds' }],
    ]);
    expect(parsed.map((line) => line.EventAge)).toEqual([
      ages.slice(0, 100),
      ages.slice(100, 200),
      ages.slice(200),
    ]);
    expect(parsed.map((line) => [line.Published, line.Consumer, line._aws.Timestamp])).toEqual([
      [250, 'order-events-relay', 7],
      [undefined, 'order-events-relay', 7],
      [undefined, 'order-events-relay', 7],
    ]);
  });

  it('logs a failing metrics sink and still returns the checkpoint', async () => {
    const logger = captureLogger();
    const relay = createOutboxRelay({
      destination: recordingDestination(),
      metrics: {
        publish() {
          throw new TypeError('sink down');
        },
      },
      logger,
    });

    expect(await relay({ Records: [inserted('1', 'e-1')] })).toEqual({ batchItemFailures: [] });
    expect(logger.entries).toEqual([
      { level: 'error', message: 'Publishing metrics failed', relay: 'outbox-relay', errorName: 'TypeError' },
    ]);
  });

  it('throws INVALID_EVENT for an invocation without Records, which cannot be checkpointed, and counts it as Retry', async () => {
    const metrics = captureRelayMetrics();
    const logger = captureLogger();
    const relay = createOutboxRelay({ destination: recordingDestination(), metrics, logger });

    await expect(relay({} as never)).rejects.toMatchObject({
      code: 'INVALID_EVENT',
      message: 'The outbox relay expects a DynamoDB Streams event',
    });
    expect(metrics.published.map(({ counts }) => counts)).toEqual([{ published: 0, retry: 1, permanent: 0 }]);
    expect(logger.entries).toEqual([
      { level: 'error', message: 'Outbox relay: not a DynamoDB Streams event', relay: 'outbox-relay' },
    ]);
  });

  it('publishes the records before one without a sequence number, then throws INVALID_EVENT at it: it cannot be named as the checkpoint', async () => {
    const destination = recordingDestination();
    const metrics = captureRelayMetrics();
    const logger = captureLogger();
    const relay = createOutboxRelay({ destination, metrics, logger });
    const unnumbered = { eventName: 'INSERT', dynamodb: { NewImage: outboxImage('e-2') } } as never;

    await expect(
      relay({ Records: [inserted('1', 'e-1'), unnumbered, inserted('3', 'e-3')] }),
    ).rejects.toMatchObject({
      code: 'INVALID_EVENT',
      message:
        'The outbox relay expects DynamoDB Streams records with `dynamodb.SequenceNumber` (record 1 has none): it cannot be checkpointed',
    });
    expect(destination.published.map(({ id }) => id)).toEqual(['e-1']);
    expect(metrics.published.map(({ counts }) => counts)).toEqual([{ published: 1, retry: 1, permanent: 0 }]);
    expect(logger.entries).toEqual([
      {
        level: 'error',
        message: 'Outbox relay: a record without a sequence number',
        relay: 'outbox-relay',
        recordIndex: 1,
      },
    ]);
  });

  it('throws INVALID_EVENT for an event that is not a DynamoDB Streams event', async () => {
    const relay = createOutboxRelay({ destination: recordingDestination() });

    await expect(relay({} as never)).rejects.toMatchObject({ code: 'INVALID_EVENT' });
    await expect(relay({ Records: [{ eventName: 'INSERT', dynamodb: {} } as never] })).rejects.toMatchObject({
      code: 'INVALID_EVENT',
    });
  });

  it('fails fast on a destination without publish', () => {
    expect(() => createOutboxRelay({ destination: {} as never })).toThrow(
      expect.objectContaining({ code: 'INVALID_OPTIONS' }),
    );
  });
});

describe('the SQS destination', () => {
  const message: OutboxMessage = {
    id: 'e-1',
    type: 'OrderConfirmed',
    body: '{"orderId":"o-1"}',
    entity: 'o-1',
  };

  it('sends the body with the event id as `idempotency-key` and the type as `eo-event-type`', async () => {
    const { inputs, client } = capturingClient();
    await sqsDestination({ client: client as never, queueUrl: 'http://sqs/q/shipping' }).publish(message);

    expect(inputs).toEqual([
      {
        QueueUrl: 'http://sqs/q/shipping',
        MessageBody: '{"orderId":"o-1"}',
        MessageAttributes: {
          'idempotency-key': { DataType: 'String', StringValue: 'e-1' },
          'eo-event-type': { DataType: 'String', StringValue: 'OrderConfirmed' },
        },
      },
    ]);
  });

  it('on a FIFO queue, deduplicates by the event id and groups by the entity, else by the type', async () => {
    const { inputs, client } = capturingClient();
    const fifo = sqsDestination({ client: client as never, queueUrl: 'http://sqs/q/shipping.fifo' });
    await fifo.publish(message);
    await fifo.publish({ id: 'e-2', type: 'StockLow', body: '{}' });

    expect(inputs).toMatchObject([
      { MessageDeduplicationId: 'e-1', MessageGroupId: 'o-1' },
      { MessageDeduplicationId: 'e-2', MessageGroupId: 'StockLow' },
    ]);
  });
});
