/**
 * An outbox publishing to an SQS fair queue (a standard queue whose messages name their tenant
 * in `MessageGroupId`), directly or through a standard SNS topic (which forwards the group id to
 * its SQS standard subscriptions): the relay's sends carry the event's entity, else its type, as
 * the group id and no deduplication id; a fair FIFO queue or topic is refused in the
 * destination's options and in the construct's environment; and a writer told the destination
 * is fair refuses, before the commit, an event whose group id SQS or SNS would refuse on a
 * standard queue or topic as on a FIFO one.
 */
import { SNSClient } from '@aws-sdk/client-sns';
import { SQSClient } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ENV, OUTBOX_ENV } from '../../../lambda/core/contract';
import { fromBody } from '../../../lambda/core/dedup-key';
import { atomic } from '../../../lambda/modes/atomic';
import {
  createOutboxWriter,
  type OutboxMessage,
  outboxDestinationFromEnvironment,
  readOutboxRelaySettings,
  snsDestination,
  sqsDestination,
} from '../../../lambda/outbox';
import { createSqsHandler } from '../../../lambda/sqs/sqs-handler';
import { checkSnsPublish, snsTopicLimits } from '../../support/aws-limits/sns';
import { checkSqsSendMessage, sqsQueueLimits } from '../../support/aws-limits/sqs';
import { capturingClient } from '../../support/capturing-client';
import { captureLogger, manualClock, sqsEvent, sqsRecord } from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';

const QUEUE_URL = 'https://sqs.eu-west-1.amazonaws.com/000000000000/tenant-orders';
const FIFO_QUEUE_URL = `${QUEUE_URL}.fifo`;
const TOPIC_ARN = 'arn:aws:sns:eu-west-1:000000000000:tenant-orders';
const FIFO_TOPIC_ARN = `${TOPIC_ARN}.fifo`;
const FAIR_TOPIC_IS_STANDARD =
  'a FIFO topic already groups by `MessageGroupId` for its FIFO queues; a standard topic forwards the group id to its SQS standard subscriptions, the fair queues';

/** Expects `run` to throw `INVALID_OPTIONS` with `message`. */
function expectInvalidOptions(run: () => unknown, message: string): void {
  expect(run).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS', message }));
}

const ofTenant: OutboxMessage = {
  id: 'e-1',
  type: 'OrderPlaced',
  body: '{"orderId":"o-1"}',
  entity: 'tenant-a',
};
const untyped: OutboxMessage = { id: 'e-2', type: 'StockLow', body: '{}' };

afterEach(() => {
  vi.restoreAllMocks();
});

describe('sqsDestination on a fair queue', () => {
  it('sends the entity, else the type, as MessageGroupId on every message, with no deduplication id', async () => {
    const { inputs, client } = capturingClient();
    const fair = sqsDestination({ client, queueUrl: QUEUE_URL, fairQueue: true });
    await fair.publish(ofTenant);
    await fair.publish(untyped);

    expect(inputs).toEqual([
      {
        QueueUrl: QUEUE_URL,
        MessageBody: '{"orderId":"o-1"}',
        MessageAttributes: {
          'idempotency-key': { DataType: 'String', StringValue: 'e-1' },
          'eo-event-type': { DataType: 'String', StringValue: 'OrderPlaced' },
        },
        MessageGroupId: 'tenant-a',
      },
      {
        QueueUrl: QUEUE_URL,
        MessageBody: '{}',
        MessageAttributes: {
          'idempotency-key': { DataType: 'String', StringValue: 'e-2' },
          'eo-event-type': { DataType: 'String', StringValue: 'StockLow' },
        },
        MessageGroupId: 'StockLow',
      },
    ]);
    // What SQS documents it takes on a standard queue (the conformance layer): both sends.
    for (const input of inputs) {
      expect(checkSqsSendMessage(input as never, sqsQueueLimits(QUEUE_URL))).toBeUndefined();
    }
  });

  it('sends no MessageGroupId to a standard queue not marked fair (each message its own tenant)', async () => {
    for (const fairQueue of [undefined, false]) {
      const { inputs, client } = capturingClient();
      await sqsDestination({
        client,
        queueUrl: QUEUE_URL,
        ...(fairQueue === undefined ? {} : { fairQueue }),
      }).publish(ofTenant);
      expect(inputs[0]).not.toHaveProperty('MessageGroupId');
      expect(inputs[0]).not.toHaveProperty('MessageDeduplicationId');
    }
  });

  it('refuses a FIFO queue marked fair, and a fairQueue that is not a boolean', () => {
    const { client } = capturingClient();
    expectInvalidOptions(
      () => sqsDestination({ client, queueUrl: FIFO_QUEUE_URL, fairQueue: true }),
      `Expected \`queueUrl\` to be a standard queue's URL (not ending in '.fifo') with \`fairQueue: true\`: a FIFO queue already groups by \`MessageGroupId\` and keeps order; a fair queue is a standard one, got \`"${FIFO_QUEUE_URL}"\``,
    );
    expectInvalidOptions(
      () => sqsDestination({ client, queueUrl: QUEUE_URL, fairQueue: 'yes' as never }),
      'Expected `fairQueue` to be a boolean, got `"yes"`',
    );
    // A FIFO queue not marked fair is the FIFO destination it was.
    expect(() => sqsDestination({ client, queueUrl: FIFO_QUEUE_URL, fairQueue: false })).not.toThrow();
  });
});

describe('snsDestination on a standard topic feeding fair queues', () => {
  it('publishes the entity, else the type, as MessageGroupId, with no deduplication id; none when not marked', async () => {
    const { inputs, client } = capturingClient();
    const fair = snsDestination({ client, topicArn: TOPIC_ARN, fairQueue: true });
    await fair.publish(ofTenant);
    await fair.publish(untyped);
    await snsDestination({ client, topicArn: TOPIC_ARN }).publish(ofTenant);

    expect(inputs).toEqual([
      {
        TopicArn: TOPIC_ARN,
        Message: '{"orderId":"o-1"}',
        MessageAttributes: {
          'idempotency-key': { DataType: 'String', StringValue: 'e-1' },
          'eo-event-type': { DataType: 'String', StringValue: 'OrderPlaced' },
        },
        MessageGroupId: 'tenant-a',
      },
      expect.objectContaining({ TopicArn: TOPIC_ARN, MessageGroupId: 'StockLow' }),
      expect.not.objectContaining({ MessageGroupId: expect.anything() }),
    ]);
    expect(inputs.some((input) => Object.hasOwn(input as object, 'MessageDeduplicationId'))).toBe(false);
    // What SNS documents it takes on a standard topic (the conformance layer): every publish.
    for (const input of inputs)
      expect(checkSnsPublish(input as never, snsTopicLimits(TOPIC_ARN))).toBeUndefined();
  });

  it('refuses a FIFO topic marked fair, and a fairQueue that is not a boolean', () => {
    const { client } = capturingClient();
    expectInvalidOptions(
      () => snsDestination({ client, topicArn: FIFO_TOPIC_ARN, fairQueue: true }),
      `Expected \`topicArn\` to be a standard topic's ARN (not ending in '.fifo') with \`fairQueue: true\`: ${FAIR_TOPIC_IS_STANDARD}, got \`"${FIFO_TOPIC_ARN}"\``,
    );
    expectInvalidOptions(
      () => snsDestination({ client, topicArn: TOPIC_ARN, fairQueue: 1 as never }),
      'Expected `fairQueue` to be a boolean, got `1`',
    );
    expect(() => snsDestination({ client, topicArn: FIFO_TOPIC_ARN, fairQueue: false })).not.toThrow();
  });

  it('is what the construct environment of a fair topic builds', async () => {
    const inputs: unknown[] = [];
    vi.spyOn(
      SNSClient.prototype as { send: (command: unknown) => Promise<unknown> },
      'send',
    ).mockImplementation(async (command) => {
      inputs.push((command as { input: unknown }).input);
      return {};
    });
    const destination = outboxDestinationFromEnvironment({
      [OUTBOX_ENV.destinationKind]: 'sns',
      [OUTBOX_ENV.destinationArn]: TOPIC_ARN,
      [OUTBOX_ENV.destinationFifo]: 'false',
      [OUTBOX_ENV.destinationFair]: 'true',
    });
    await destination.publish(ofTenant);
    expect(inputs).toEqual([expect.objectContaining({ TopicArn: TOPIC_ARN, MessageGroupId: 'tenant-a' })]);
  });
});

describe('the relay on a fair queue from the construct environment (EO_OUTBOX_DESTINATION_FAIR)', () => {
  const fairEnvironment = {
    [OUTBOX_ENV.destinationKind]: 'sqs',
    [OUTBOX_ENV.destinationQueueUrl]: QUEUE_URL,
    [OUTBOX_ENV.destinationFifo]: 'false',
    [OUTBOX_ENV.destinationFair]: 'true',
  };

  it("groups every send by the event's entity, else its type", async () => {
    const inputs: unknown[] = [];
    vi.spyOn(
      SQSClient.prototype as { send: (command: unknown) => Promise<unknown> },
      'send',
    ).mockImplementation(async (command) => {
      inputs.push((command as { input: unknown }).input);
      return {};
    });
    const destination = outboxDestinationFromEnvironment(fairEnvironment);
    await destination.publish(ofTenant);
    await destination.publish(untyped);

    expect(inputs).toMatchObject([{ MessageGroupId: 'tenant-a' }, { MessageGroupId: 'StockLow' }]);
    expect(inputs.every((input) => !Object.hasOwn(input as object, 'MessageDeduplicationId'))).toBe(true);
    expect(readOutboxRelaySettings(fairEnvironment)).toMatchObject({
      outboxDestinationFair: true,
      destinationFair: true,
    });
  });

  it('refuses a fair flag that is not a boolean, on a FIFO queue or topic, or for a bus', () => {
    const cases: [Record<string, string>, string][] = [
      [
        { ...fairEnvironment, [OUTBOX_ENV.destinationFair]: 'yes' },
        "Expected `EO_OUTBOX_DESTINATION_FAIR` to be 'true' or 'false', got `\"yes\"`",
      ],
      [
        {
          ...fairEnvironment,
          [OUTBOX_ENV.destinationQueueUrl]: FIFO_QUEUE_URL,
          [OUTBOX_ENV.destinationFifo]: 'true',
        },
        `Expected \`EO_OUTBOX_DESTINATION_QUEUE_URL\` to be a standard queue's URL (not ending in '.fifo') as \`EO_OUTBOX_DESTINATION_FAIR\` is 'true': a FIFO queue already groups by \`MessageGroupId\` and keeps order; a fair queue is a standard one, got \`"${FIFO_QUEUE_URL}"\``,
      ],
      [
        {
          [OUTBOX_ENV.destinationKind]: 'sns',
          [OUTBOX_ENV.destinationArn]: FIFO_TOPIC_ARN,
          [OUTBOX_ENV.destinationFifo]: 'true',
          [OUTBOX_ENV.destinationFair]: 'true',
        },
        `Expected \`EO_OUTBOX_DESTINATION_ARN\` to be a standard topic's ARN (not ending in '.fifo') as \`EO_OUTBOX_DESTINATION_FAIR\` is 'true': ${FAIR_TOPIC_IS_STANDARD}, got \`"${FIFO_TOPIC_ARN}"\``,
      ],
      [
        {
          [OUTBOX_ENV.destinationKind]: 'eventbridge',
          [OUTBOX_ENV.destinationArn]: 'arn:aws:events:eu-west-1:000000000000:event-bus/orders',
          [OUTBOX_ENV.destinationFair]: 'true',
        },
        "Expected `EO_OUTBOX_DESTINATION_FAIR` to be 'false' or unset unless `EO_OUTBOX_DESTINATION_KIND` is 'sqs' or 'sns' (a fair queue is an SQS standard queue, fed directly or by a standard SNS topic), got `\"true\"`",
      ],
    ];
    for (const [environment, expected] of cases) {
      expectInvalidOptions(() => outboxDestinationFromEnvironment(environment), expected);
    }
  });
});

describe('writers sizing events for a fair queue', () => {
  const base = { client: {} as never, tableName: 'Outbox', producer: 'orders-api' };
  const refusal =
    'emit: on a fair queue `entity` is the `MessageGroupId`, which SQS and SNS take only as 1 to 128 ASCII letters, digits and punctuation; it has character U+0020 at position 7';

  it('the standalone writer given destinationFair refuses an entity SQS would refuse as a group id, writing nothing', async () => {
    // SQS refuses that group id on a standard queue too (the conformance layer, quoting SendMessage).
    expect(
      checkSqsSendMessage(
        { QueueUrl: QUEUE_URL, MessageBody: '{}', MessageGroupId: 'tenant a' },
        sqsQueueLimits(QUEUE_URL),
      ),
    ).toMatchObject({ name: 'InvalidParameterValue' });

    const store = createMemoryStore();
    const writer = createOutboxWriter({ ...base, destinationKind: 'sqs', destinationFair: true, store });
    await expect(
      writer.write([{ type: 'OrderPlaced', detail: {}, entity: 'tenant a' }], [], 'k-1'),
    ).rejects.toMatchObject({ code: 'VALIDATION', message: refusal });
    expect(store.items('Outbox')).toEqual([]);

    // Without an entity the type is the group id, held to the same rule.
    await expect(writer.write([{ type: 'Order Placed', detail: {} }], [], 'k-2')).rejects.toMatchObject({
      code: 'VALIDATION',
      message:
        "emit: on a fair queue the event's `type` (it has no `entity`) is the `MessageGroupId`, which SQS and SNS take only as 1 to 128 ASCII letters, digits and punctuation; it has character U+0020 at position 6",
    });
    expect(
      await writer.write([{ type: 'OrderPlaced', detail: {}, entity: 'tenant-a' }], [], 'k-1'),
    ).toMatchObject({ kind: 'written' });

    // A standard queue not marked fair sends no group id: the same event is taken.
    const plain = createOutboxWriter({ ...base, destinationKind: 'sqs', store: createMemoryStore() });
    expect(
      await plain.write([{ type: 'OrderPlaced', detail: {}, entity: 'tenant a' }], [], 'k-1'),
    ).toMatchObject({ kind: 'written' });
  });

  it('atomic mode dead-letters such an event when the construct marks the queue fair, committing nothing', async () => {
    const run = async (fair: string | undefined) => {
      const store = createMemoryStore();
      const logger = captureLogger();
      const handler = createSqsHandler<{ orderId: string; tenant: string }>({
        dedupKey: fromBody('orderId'),
        mode: atomic((message, unitOfWork) => {
          unitOfWork.emit({ type: 'OrderPlaced', detail: {} }, { entity: message.body.tenant });
        }),
        store,
        clock: manualClock(),
        logger,
        metrics: false,
        environment: {
          [ENV.consumer]: 'orders',
          [ENV.inboxTable]: 'Inbox',
          [OUTBOX_ENV.tableName]: 'OrderEvents',
          [OUTBOX_ENV.destinationKind]: 'sqs',
          [OUTBOX_ENV.destinationFifo]: 'false',
          ...(fair === undefined ? {} : { [OUTBOX_ENV.destinationFair]: fair }),
        },
      });
      const response = await handler(
        sqsEvent(sqsRecord('m-1', { orderId: 'o-1', tenant: 'tenant a' })),
        {} as never,
      );
      return { response, store, entries: logger.entries };
    };

    const onFair = await run('true');
    expect(onFair.response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-1' }] });
    expect(onFair.entries).toContainEqual(expect.objectContaining({ code: 'VALIDATION' }));
    expect(onFair.store.items('OrderEvents')).toEqual([]);
    expect(onFair.store.items('Inbox')).toEqual([]);
    for (const flag of ['false', undefined]) {
      const onStandard = await run(flag);
      expect(onStandard.response).toEqual({ batchItemFailures: [] });
      expect(onStandard.store.items('OrderEvents')).toHaveLength(1);
    }
  });

  it('a writer for a topic feeding fair queues holds the entity to the same rule', async () => {
    const writer = createOutboxWriter({
      ...base,
      destinationKind: 'sns',
      destinationFair: true,
      store: createMemoryStore(),
    });
    await expect(
      writer.write([{ type: 'OrderPlaced', detail: {}, entity: 'tenant a' }], [], 'k-1'),
    ).rejects.toMatchObject({
      code: 'VALIDATION',
      message: refusal.replace('a fair queue', 'a topic feeding fair queues'),
    });
    expect(
      await writer.write([{ type: 'OrderPlaced', detail: {}, entity: 'tenant-a' }], [], 'k-1'),
    ).toMatchObject({ kind: 'written' });
  });

  it('refuses destinationFair that is not a boolean, for a bus, or with destinationFifo: true', () => {
    const cases: [Record<string, unknown>, string][] = [
      [
        { destinationKind: 'sqs', destinationFair: 'yes' },
        'Expected `destinationFair` to be a boolean, got `"yes"`',
      ],
      [
        { destinationKind: 'sns', destinationFifo: true, destinationFair: true },
        `Expected \`destinationFair\` to be left out with \`destinationFifo: true\` (${FAIR_TOPIC_IS_STANDARD}), got \`true\``,
      ],
      [
        { destinationKind: 'eventbridge', eventSource: 'orders', destinationFair: true },
        "Expected `destinationFair` to be left out unless `destinationKind` is 'sqs' or 'sns' (a fair queue is an SQS standard queue, fed directly or by a standard SNS topic), got `true`",
      ],
      [
        { destinationKind: 'sqs', destinationFifo: true, destinationFair: true },
        'Expected `destinationFair` to be left out with `destinationFifo: true` (a FIFO queue already groups by `MessageGroupId` and keeps order; a fair queue is a standard one), got `true`',
      ],
    ];
    for (const [options, message] of cases) {
      expectInvalidOptions(() => createOutboxWriter({ ...base, ...options } as never), message);
    }
    // Atomic mode's own outbox options name the field with their prefix.
    expectInvalidOptions(
      () =>
        createSqsHandler({
          dedupKey: fromBody('orderId'),
          mode: atomic(() => {}, {
            outbox: {
              tableName: 'OrderEvents',
              destinationKind: 'eventbridge',
              eventSource: 'orders',
              destinationFair: true,
            },
          }),
          store: createMemoryStore(),
          metrics: false,
          environment: { [ENV.consumer]: 'orders', [ENV.inboxTable]: 'Inbox' },
        }),
      "Expected `atomic.outbox.destinationFair` to be left out unless `destinationKind` is 'sqs' or 'sns' (a fair queue is an SQS standard queue, fed directly or by a standard SNS topic), got `true`",
    );
  });
});
