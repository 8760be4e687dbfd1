import type { PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { InvalidParameterException, type PublishCommand, ThrottledException } from '@aws-sdk/client-sns';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { OUTBOX_ATTRIBUTES, STREAM_RECORD_ATTRIBUTES } from '../../../lambda/core/contract';
import { toDeadLetterAttributes } from '../../../lambda/dead-letter/sqs-dead-letter-sender';
import { sqsMessageBytes } from '../../../lambda/dead-letter/sqs-limits';
import {
  createOutboxRelay,
  eventBridgeDestination,
  type RelayCounts,
  type RelayMetricsSink,
  snsDestination,
  sqsDestination,
} from '../../../lambda/outbox';
import { STREAM_DEAD_LETTER_FORMAT } from '../../../lambda/streams/stream-dead-letter';
import type { AttributeValue, DynamoDbStreamRecord } from '../../../lambda/streams/stream-event';
import { createConformingEventBridgeClient } from '../../support/aws-limits/eventbridge';
import { createConformingSnsClient } from '../../support/aws-limits/sns';
import { createConformingSqsClient } from '../../support/aws-limits/sqs';
import { captureLogger } from '../../support/fixtures';
import {
  captureDeadLetters,
  dynamoDbStreamRecord,
  recoveredData,
  streamDeadLetterOf,
  TABLE_STREAM_ARN,
} from '../../support/stream-fixtures';

const QUEUE_URL = 'https://sqs.us-east-1.amazonaws.com/123456789012/shipping';
const FIFO_QUEUE_URL = 'https://sqs.us-east-1.amazonaws.com/123456789012/shipping.fifo';

const image = (id: string, body: string, entity?: string): Record<string, AttributeValue> => ({
  [OUTBOX_ATTRIBUTES.pk]: { S: id },
  [OUTBOX_ATTRIBUTES.type]: { S: 'OrderConfirmed' },
  [OUTBOX_ATTRIBUTES.body]: { S: body },
  ...(entity === undefined ? {} : { [OUTBOX_ATTRIBUTES.entity]: { S: entity } }),
});

const inserted = (sequenceNumber: string, id: string, body = `{"orderId":"${id}"}`, entity?: string) =>
  dynamoDbStreamRecord(sequenceNumber, {
    eventName: 'INSERT',
    keys: { [OUTBOX_ATTRIBUTES.pk]: { S: id } },
    newImage: image(id, body, entity),
    eventId: `ev-${sequenceNumber}`,
  });

/** The exact log line of an event the destination refused and the relay dead-lettered. */
const deadLetteredLine = (sequenceNumber: string, eventId: string, errorName: string) => ({
  level: 'error',
  message: 'Outbox relay: the destination refused the event; dead-lettered',
  relay: 'outbox-relay',
  sequenceNumber,
  eventId,
  eventType: 'OrderConfirmed',
  errorName,
  code: 'VALIDATION',
});

/** Four events `e-1` to `e-4` at sequence numbers 1 to 4. */
const fourEvents = () => ({ Records: ['1', '2', '3', '4'].map((n) => inserted(n, `e-${n}`)) });

/** An SQS client that records what reaches it, behind the SQS conformance layer. */
function conformingSqs() {
  const sent: SendMessageCommand['input'][] = [];
  const inner = {
    async send(command: unknown) {
      if (command instanceof SendMessageCommand) sent.push(command.input);
      return { MessageId: `m-${sent.length}`, $metadata: { httpStatusCode: 200 } };
    },
  };
  return { sent, client: createConformingSqsClient(inner) };
}

/** An SNS client that records what reaches it, behind the SNS conformance layer. */
function conformingSns() {
  const sent: PublishCommand['input'][] = [];
  const inner = {
    async send(command: { input: PublishCommand['input'] }) {
      sent.push(command.input);
      return { MessageId: `m-${sent.length}`, $metadata: { httpStatusCode: 200 } };
    },
  };
  return { sent, client: createConformingSnsClient(inner) as never };
}

function captureRelayMetrics(): RelayMetricsSink & { readonly counts: RelayCounts[] } {
  const counts: RelayCounts[] = [];
  return { counts, publish: (published) => counts.push(published) };
}

/** A Lambda context whose remaining time follows `clock`, from `remainingMillis` at `now()`. */
function lambdaContext(clock: { now: number }, remainingMillis: number) {
  const end = clock.now + remainingMillis;
  return { getRemainingTimeInMillis: () => end - clock.now };
}

describe('the outbox relay with a destination that refuses an event', () => {
  it('dead-letters an event whose body SQS refuses (U+FFFF), logs it without the body, and publishes the next events in the same invocation', async () => {
    const { sent, client } = conformingSqs();
    const deadLetter = captureDeadLetters();
    const logger = captureLogger();
    const metrics = captureRelayMetrics();
    const relay = createOutboxRelay({
      destination: sqsDestination({ client, queueUrl: QUEUE_URL }),
      deadLetter,
      logger,
      metrics,
    });
    const refused = inserted('2', 'e-2', '{"note":"\uffff"}');

    expect(await relay({ Records: [inserted('1', 'e-1'), refused, inserted('3', 'e-3')] })).toEqual({
      batchItemFailures: [],
    });

    expect(sent.map((input) => input.MessageAttributes?.['idempotency-key']?.StringValue)).toEqual([
      'e-1',
      'e-3',
    ]);
    expect(metrics.counts).toEqual([{ published: 2, retry: 0, permanent: 1 }]);
    expect(logger.entries).toEqual([deadLetteredLine('2', 'e-2', 'InvalidMessageContents')]);
    expect(deadLetter.sent).toHaveLength(1);
    const [letter] = deadLetter.sent;
    expect(letter).toMatchObject({
      code: 'VALIDATION',
      consumer: 'outbox-relay',
      dedupKey: 'e-2',
      sourceMessageId: 'ev-2',
      attributes: {
        [STREAM_RECORD_ATTRIBUTES.eventSourceArn]: { dataType: 'String', stringValue: TABLE_STREAM_ARN },
        [STREAM_RECORD_ATTRIBUTES.sequenceNumber]: { dataType: 'String', stringValue: '2' },
      },
    });
    expect(letter!.reason).toBe(
      "The destination refused event e-2 (`OrderConfirmed`): publish: the destination refused the request (InvalidMessageContents: Invalid binary character '#xFFFF' was found in the message body, the set of allowed characters is #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF)",
    );
    const envelope = streamDeadLetterOf(letter!);
    expect(envelope).toMatchObject({
      format: STREAM_DEAD_LETTER_FORMAT,
      source: {
        eventSource: 'aws:dynamodb',
        eventSourceArn: TABLE_STREAM_ARN,
        sequenceNumber: '2',
        eventId: 'ev-2',
        eventName: 'INSERT',
        keys: { pk: { S: 'e-2' } },
      },
      code: 'VALIDATION',
      reason: letter!.reason,
    });
    // The whole event, U+FFFF included, is in the dead letter, escaped where SQS refuses it.
    expect(JSON.parse(recoveredData(envelope)!.toString('utf8'))).toEqual(refused.dynamodb);
    expect(letter!.body).not.toMatch(/\uffff/);
  });

  it('dead-letters an event whose entity a FIFO queue refuses as its MessageGroupId, and publishes the next one', async () => {
    const { sent, client } = conformingSqs();
    const deadLetter = captureDeadLetters();
    const relay = createOutboxRelay({
      destination: sqsDestination({ client, queueUrl: FIFO_QUEUE_URL }),
      deadLetter,
      logger: captureLogger(),
    });

    expect(
      await relay({
        Records: [inserted('1', 'e-1', '{}', 'order 1 (Zürich)'), inserted('2', 'e-2', '{}', 'order-2')],
      }),
    ).toEqual({ batchItemFailures: [] });

    expect(sent.map((input) => [input.MessageDeduplicationId, input.MessageGroupId])).toEqual([
      ['e-2', 'order-2'],
    ]);
    expect(deadLetter.sent.map(({ code, dedupKey }) => ({ code, dedupKey }))).toEqual([
      { code: 'VALIDATION', dedupKey: 'e-1' },
    ]);
    expect(deadLetter.sent[0]!.reason).toContain('InvalidParameterValue');
  });

  it.each([
    {
      destination: 'a fair queue',
      refusal: 'InvalidParameterValue',
      create: () => {
        const { sent, client } = conformingSqs();
        return { sent, destination: sqsDestination({ client, queueUrl: QUEUE_URL, fairQueue: true }) };
      },
    },
    {
      destination: 'a standard topic feeding fair queues',
      refusal: 'InvalidParameterException',
      create: () => {
        const { sent, client } = conformingSns();
        return {
          sent,
          destination: snsDestination({
            client,
            topicArn: 'arn:aws:sns:us-east-1:123456789012:tenants',
            fairQueue: true,
          }),
        };
      },
    },
  ])(
    'dead-letters an event whose entity $destination refuses as its MessageGroupId (written before the writers knew), and publishes the next one',
    async ({ create, refusal }) => {
      const { sent, destination } = create();
      const deadLetter = captureDeadLetters();
      const relay = createOutboxRelay({ destination, deadLetter, logger: captureLogger() });

      expect(
        await relay({
          Records: [inserted('1', 'e-1', '{}', 'tenant 1 (Zürich)'), inserted('2', 'e-2', '{}', 'tenant-2')],
        }),
      ).toEqual({ batchItemFailures: [] });

      expect(sent.map((input) => [input.MessageDeduplicationId, input.MessageGroupId])).toEqual([
        [undefined, 'tenant-2'],
      ]);
      expect(deadLetter.sent.map(({ code, dedupKey }) => ({ code, dedupKey }))).toEqual([
        { code: 'VALIDATION', dedupKey: 'e-1' },
      ]);
      expect(deadLetter.sent[0]!.reason).toContain(refusal);
    },
  );
  it('dead-letters an event SNS refuses (InvalidParameterException) and checkpoints at one it throttles', async () => {
    const published: string[] = [];
    const client = {
      async send(command: PublishCommand) {
        const id = command.input.MessageAttributes?.['idempotency-key']?.StringValue ?? '';
        if (id === 'e-1') {
          throw new InvalidParameterException({
            message: 'Invalid parameter: Message too long',
            $metadata: { httpStatusCode: 400 },
          });
        }
        if (id === 'e-3') {
          throw new ThrottledException({ message: 'Rate exceeded', $metadata: { httpStatusCode: 400 } });
        }
        published.push(id);
        return {};
      },
    };
    const deadLetter = captureDeadLetters();
    const logger = captureLogger();
    const metrics = captureRelayMetrics();
    const relay = createOutboxRelay({
      destination: snsDestination({
        client: client as never,
        topicArn: 'arn:aws:sns:us-east-1:123456789012:orders',
      }),
      deadLetter,
      logger,
      metrics,
    });

    expect(await relay(fourEvents())).toEqual({ batchItemFailures: [{ itemIdentifier: '3' }] });

    expect(published).toEqual(['e-2']);
    expect(deadLetter.sent.map(({ dedupKey }) => dedupKey)).toEqual(['e-1']);
    expect(metrics.counts).toEqual([{ published: 1, retry: 1, permanent: 1 }]);
    expect(logger.entries).toEqual([
      deadLetteredLine('1', 'e-1', 'InvalidParameterException'),
      {
        level: 'warn',
        message: 'Outbox relay: publish failed',
        relay: 'outbox-relay',
        sequenceNumber: '3',
        eventId: 'e-3',
        eventType: 'OrderConfirmed',
        errorName: 'ThrottledException',
      },
    ]);
  });

  it('dead-letters an EventBridge entry refused as InvalidArgument or MalformedDetail, and checkpoints at one failed with ThrottlingException or InternalFailure', async () => {
    const entryErrors: Record<string, string> = {
      'e-1': 'InvalidArgument',
      'e-2': 'MalformedDetail',
      'e-4': 'ThrottlingException',
    };
    const published: string[] = [];
    const client = {
      async send(command: PutEventsCommand) {
        const detail = JSON.parse(command.input.Entries![0]!.Detail!) as {
          metadata: { 'idempotency-key': string };
        };
        const id = detail.metadata['idempotency-key'];
        const errorCode = entryErrors[id];
        if (errorCode === undefined) {
          published.push(id);
          return { FailedEntryCount: 0, Entries: [{ EventId: `x-${id}` }] };
        }
        return { FailedEntryCount: 1, Entries: [{ ErrorCode: errorCode, ErrorMessage: 'refused' }] };
      },
    };
    const deadLetter = captureDeadLetters();
    const metrics = captureRelayMetrics();
    const relay = createOutboxRelay({
      destination: eventBridgeDestination({
        client: client as never,
        eventBusName: 'orders',
        source: 'orders',
      }),
      deadLetter,
      logger: captureLogger(),
      metrics,
    });

    expect(await relay(fourEvents())).toEqual({ batchItemFailures: [{ itemIdentifier: '4' }] });
    expect(published).toEqual(['e-3']);
    expect(deadLetter.sent.map(({ dedupKey, reason }) => [dedupKey, reason])).toEqual([
      [
        'e-1',
        'The destination refused event e-1 (`OrderConfirmed`): publish: EventBridge did not accept the event (InvalidArgument: refused)',
      ],
      [
        'e-2',
        'The destination refused event e-2 (`OrderConfirmed`): publish: EventBridge did not accept the event (MalformedDetail: refused)',
      ],
    ]);
    expect(metrics.counts).toEqual([{ published: 1, retry: 1, permanent: 2 }]);

    entryErrors['e-4'] = 'InternalFailure';
    expect(await relay({ Records: [inserted('4', 'e-4')] })).toEqual({
      batchItemFailures: [{ itemIdentifier: '4' }],
    });
    expect(deadLetter.sent).toHaveLength(2);
  });

  it("dead-letters what SNS's and EventBridge's documented limits refuse (a FIFO group id with a space, a DetailType over 128 characters), and publishes the next events", async () => {
    // What reaches the services past the conformance layers: the ids of the events sent.
    const published: string[] = [];
    const recorder = {
      async send(command: { input: unknown }) {
        const input = command.input as {
          MessageAttributes?: Record<string, { StringValue?: string }>;
          Entries?: { Detail?: string }[];
        };
        published.push(
          input.MessageAttributes?.['idempotency-key']?.StringValue ??
            JSON.parse(input.Entries?.[0]?.Detail ?? '{}').metadata?.['idempotency-key'],
        );
        return { FailedEntryCount: 0, Entries: [{ EventId: 'x' }], MessageId: 'm' };
      },
    };
    const snsDeadLetters = captureDeadLetters();
    const snsRelay = createOutboxRelay({
      destination: snsDestination({
        client: createConformingSnsClient(recorder) as never,
        topicArn: 'arn:aws:sns:us-east-1:123456789012:orders.fifo',
      }),
      deadLetter: snsDeadLetters,
      logger: captureLogger(),
    });

    expect(
      await snsRelay({
        Records: [inserted('1', 'e-1', '{}', 'order 1'), inserted('2', 'e-2', '{}', 'order-2')],
      }),
    ).toEqual({ batchItemFailures: [] });
    expect(published).toEqual(['e-2']);
    expect(snsDeadLetters.sent.map(({ code, dedupKey }) => ({ code, dedupKey }))).toEqual([
      { code: 'VALIDATION', dedupKey: 'e-1' },
    ]);

    // An item written before `emit` checked the type's length (or by another writer).
    const longType = dynamoDbStreamRecord('3', {
      eventName: 'INSERT',
      keys: { [OUTBOX_ATTRIBUTES.pk]: { S: 'e-3' } },
      newImage: { ...image('e-3', '{}'), [OUTBOX_ATTRIBUTES.type]: { S: 'T'.repeat(129) } },
      eventId: 'ev-3',
    });
    const eventBridgeDeadLetters = captureDeadLetters();
    const eventBridgeRelay = createOutboxRelay({
      destination: eventBridgeDestination({
        client: createConformingEventBridgeClient(recorder) as never,
        eventBusName: 'orders',
        source: 'orders',
      }),
      deadLetter: eventBridgeDeadLetters,
      logger: captureLogger(),
    });

    expect(await eventBridgeRelay({ Records: [longType, inserted('4', 'e-4')] })).toEqual({
      batchItemFailures: [],
    });
    expect(published).toEqual(['e-2', 'e-4']);
    expect(
      eventBridgeDeadLetters.sent.map(({ code, dedupKey, reason }) => ({ code, dedupKey, reason })),
    ).toEqual([{ code: 'VALIDATION', dedupKey: 'e-3', reason: expect.stringContaining('InvalidArgument') }]);
  });

  it('checkpoints at a refused event when it has no dead-letter queue, or the dead letter cannot be sent', async () => {
    const { client } = conformingSqs();
    const failing = captureDeadLetters();
    failing.fail = true;
    for (const deadLetter of [undefined, failing]) {
      const logger = captureLogger();
      const relay = createOutboxRelay({
        destination: sqsDestination({ client, queueUrl: QUEUE_URL }),
        ...(deadLetter === undefined ? {} : { deadLetter }),
        logger,
      });
      expect(await relay({ Records: [inserted('1', 'e-1', '\uffff'), inserted('2', 'e-2')] })).toEqual({
        batchItemFailures: [{ itemIdentifier: '1' }],
      });
      expect(logger.entries).toEqual([
        {
          level: 'warn',
          message:
            deadLetter === undefined
              ? 'Outbox relay: the destination refused the event; no dead-letter queue'
              : 'Outbox relay: the destination refused the event; dead-lettering failed',
          relay: 'outbox-relay',
          sequenceNumber: '1',
          eventId: 'e-1',
          eventType: 'OrderConfirmed',
          errorName: 'InvalidMessageContents',
          code: 'VALIDATION',
        },
      ]);
    }
  });

  it('sends the dead letter of an event too large for the dead-letter queue marked truncated, with the item key to read it again from the outbox table', async () => {
    const { client } = conformingSqs();
    for (const maxBytes of [4096, 1024]) {
      const deadLetter = captureDeadLetters();
      const relay = createOutboxRelay({
        destination: sqsDestination({ client, queueUrl: QUEUE_URL }),
        deadLetter,
        deadLetterMaxMessageBytes: maxBytes,
        logger: captureLogger(),
      });

      await relay({ Records: [inserted('1', 'e-1', `"${'x'.repeat(5000)}\uffff"`)] });

      const [letter] = deadLetter.sent;
      const envelope = streamDeadLetterOf(letter!);
      expect(sqsMessageBytes(letter!.body, toDeadLetterAttributes(letter!))).toBeLessThanOrEqual(maxBytes);
      expect(envelope).toMatchObject({
        source: { sequenceNumber: '1', eventId: 'ev-1' },
        code: 'VALIDATION',
        data: { truncated: true },
      });
      // The reason names the event id even when cut to fit the smallest queue.
      expect(envelope.reason).toMatch(/^The destination refused event e-1 \(`OrderConfirmed`\)/);
      if (maxBytes === 4096) {
        expect(envelope.source.keys).toEqual({ pk: { S: 'e-1' } });
        expect(letter!.dedupKey).toBe('e-1');
      }
    }
  });

  it('a relay with a deadline-margin option outside its range fails at cold start', () => {
    expect(() =>
      createOutboxRelay({ destination: { publish: async () => {} }, deadlineMarginMillis: -1 }),
    ).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }));
    expect(() =>
      createOutboxRelay({ destination: { publish: async () => {} }, deadLetterMaxMessageBytes: 1023 }),
    ).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }));
  });
});

describe('the outbox relay at its deadline', () => {
  /** A destination that takes `millis` of the clock per publish. */
  function slowDestination(clock: { now: number }, millis: number) {
    const published: string[] = [];
    return {
      published,
      async publish(message: { id: string }) {
        clock.now += millis;
        published.push(message.id);
      },
    };
  }

  it('returns the first unpublished record as the checkpoint once the margin is reached, and the next invocation publishes nothing twice', async () => {
    const clock = { now: 1_000 };
    const destination = slowDestination(clock, 1_000);
    const logger = captureLogger();
    const metrics = captureRelayMetrics();
    const relay = createOutboxRelay({ destination, logger, metrics, clock: () => clock.now });
    const records = [inserted('1', 'e-1'), inserted('2', 'e-2'), inserted('3', 'e-3'), inserted('4', 'e-4')];

    // 4.5 s left, a 2 s margin: records start during the first 2.5 s.
    expect(await relay({ Records: records }, lambdaContext(clock, 4_500))).toEqual({
      batchItemFailures: [{ itemIdentifier: '4' }],
    });
    expect(destination.published).toEqual(['e-1', 'e-2', 'e-3']);
    expect(metrics.counts).toEqual([{ published: 3, retry: 1, permanent: 0 }]);
    expect(logger.entries).toEqual([
      {
        level: 'warn',
        message: 'Outbox relay: too close to the Lambda timeout, checkpointing',
        relay: 'outbox-relay',
        sequenceNumber: '4',
      },
    ]);

    // The mapping resumes at the checkpoint.
    expect(await relay({ Records: records.slice(3) }, lambdaContext(clock, 60_000))).toEqual({
      batchItemFailures: [],
    });
    expect(destination.published).toEqual(['e-1', 'e-2', 'e-3', 'e-4']);
  });

  it('caps the margin at half the time left, so a relay with a timeout under the margin still publishes', async () => {
    const clock = { now: 0 };
    const destination = slowDestination(clock, 400);
    const relay = createOutboxRelay({ destination, logger: captureLogger(), clock: () => clock.now });

    // 1.5 s left, a 2 s margin: records start during the first 750 ms.
    expect(
      await relay(
        { Records: [inserted('1', 'e-1'), inserted('2', 'e-2'), inserted('3', 'e-3')] },
        lambdaContext(clock, 1_500),
      ),
    ).toEqual({ batchItemFailures: [{ itemIdentifier: '3' }] });
    expect(destination.published).toEqual(['e-1', 'e-2']);
  });

  it('publishes nothing and checkpoints at the first insert when no time is left, and has no deadline without a context', async () => {
    const clock = { now: 0 };
    const destination = slowDestination(clock, 10_000);
    const relay = createOutboxRelay({ destination, logger: captureLogger(), clock: () => clock.now });
    const records: DynamoDbStreamRecord[] = [inserted('1', 'e-1'), inserted('2', 'e-2')];

    expect(await relay({ Records: records }, lambdaContext(clock, 0))).toEqual({
      batchItemFailures: [{ itemIdentifier: '1' }],
    });
    expect(destination.published).toEqual([]);
    expect(await relay({ Records: records })).toEqual({ batchItemFailures: [] });
    expect(destination.published).toEqual(['e-1', 'e-2']);
  });
});
