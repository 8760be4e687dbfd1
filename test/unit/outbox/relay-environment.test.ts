/**
 * The relay's defaults from the `Outbox` construct's environment: the destination each
 * `EO_OUTBOX_DESTINATION_KIND` describes (the SDK clients' `send` is spied on, so no request
 * leaves the process), the relay's name, dead-letter queue, log level and metric namespace, and
 * the cold-start error for each missing or malformed variable.
 */
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { SNSClient } from '@aws-sdk/client-sns';
import { SQSClient } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ENV, OUTBOX_ATTRIBUTES, OUTBOX_ENV } from '../../../lambda/core/contract';
import type { Environment } from '../../../lambda/core/environment';
import {
  createOutboxRelay,
  type OutboxMessage,
  outboxDestinationFromEnvironment,
  readOutboxRelaySettings,
} from '../../../lambda/outbox';
import { captureLogger } from '../../support/fixtures';
import { dynamoDbStreamRecord } from '../../support/stream-fixtures';

const QUEUE_URL = 'http://sqs.eu-west-1.localhost/000000000000/shipping';
const BUS_ARN = 'arn:aws:events:eu-west-1:000000000000:event-bus/orders';
const TOPIC_ARN = 'arn:aws:sns:eu-west-1:000000000000:order-events';
const DLQ_URL = 'http://sqs.eu-west-1.localhost/000000000000/relay-dlq';

const message: OutboxMessage = {
  id: 'e-1',
  type: 'OrderConfirmed',
  body: '{"orderId":"o-1"}',
  entity: 'o-1',
};

/** The inputs of every command the SDK client class was asked to send. */
function spyOnSend(clientClass: { prototype: { send: unknown } }) {
  const inputs: { command: string; input: unknown }[] = [];
  vi.spyOn(
    clientClass.prototype as { send: (command: unknown) => Promise<unknown> },
    'send',
  ).mockImplementation(async (command) => {
    const sent = command as { constructor: { name: string }; input: unknown };
    inputs.push({ command: sent.constructor.name, input: sent.input });
    return {};
  });
  return inputs;
}

/** The `INVALID_OPTIONS` message `run` throws. */
function invalidOptions(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect((error as { code?: string }).code).toBe('INVALID_OPTIONS');
    return (error as Error).message;
  }
  throw new Error('expected INVALID_OPTIONS');
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('outboxDestinationFromEnvironment', () => {
  it("publishes to EO_OUTBOX_DESTINATION_QUEUE_URL for kind 'sqs', as sqsDestination does", async () => {
    const inputs = spyOnSend(SQSClient);
    const destination = outboxDestinationFromEnvironment({
      [OUTBOX_ENV.destinationKind]: 'sqs',
      [OUTBOX_ENV.destinationQueueUrl]: `${QUEUE_URL}.fifo`,
      [OUTBOX_ENV.destinationArn]: 'arn:aws:sqs:eu-west-1:000000000000:shipping.fifo',
      [OUTBOX_ENV.destinationFifo]: 'true',
    });

    await destination.publish(message);

    expect(inputs).toEqual([
      {
        command: 'SendMessageCommand',
        input: {
          QueueUrl: `${QUEUE_URL}.fifo`,
          MessageBody: '{"orderId":"o-1"}',
          MessageAttributes: {
            'idempotency-key': { DataType: 'String', StringValue: 'e-1' },
            'eo-event-type': { DataType: 'String', StringValue: 'OrderConfirmed' },
          },
          MessageDeduplicationId: 'e-1',
          MessageGroupId: 'o-1',
        },
      },
    ]);
  });

  it("puts events on the bus EO_OUTBOX_DESTINATION_ARN for kind 'eventbridge', with EO_OUTBOX_EVENT_SOURCE as Source, else the relay's name", async () => {
    const inputs = spyOnSend(EventBridgeClient);
    const environment = {
      [OUTBOX_ENV.destinationKind]: 'eventbridge',
      [OUTBOX_ENV.destinationArn]: BUS_ARN,
      [OUTBOX_ENV.destinationFifo]: 'false',
      [ENV.consumer]: 'order-events-relay',
    };

    await outboxDestinationFromEnvironment({ ...environment, [OUTBOX_ENV.eventSource]: 'orders' }).publish(
      message,
    );
    await outboxDestinationFromEnvironment(environment).publish(message);

    const entry = (source: string) => ({
      command: 'PutEventsCommand',
      input: {
        Entries: [
          {
            EventBusName: BUS_ARN,
            Source: source,
            DetailType: 'OrderConfirmed',
            Detail: '{"metadata":{"idempotency-key":"e-1","type":"OrderConfirmed"},"data":{"orderId":"o-1"}}',
          },
        ],
      },
    });
    expect(inputs).toEqual([entry('orders'), entry('order-events-relay')]);
  });

  it("publishes to the topic EO_OUTBOX_DESTINATION_ARN for kind 'sns'", async () => {
    const inputs = spyOnSend(SNSClient);
    await outboxDestinationFromEnvironment({
      [OUTBOX_ENV.destinationKind]: 'sns',
      [OUTBOX_ENV.destinationArn]: TOPIC_ARN,
    }).publish(message);

    expect(inputs).toEqual([
      {
        command: 'PublishCommand',
        input: {
          TopicArn: TOPIC_ARN,
          Message: '{"orderId":"o-1"}',
          MessageAttributes: {
            'idempotency-key': { DataType: 'String', StringValue: 'e-1' },
            'eo-event-type': { DataType: 'String', StringValue: 'OrderConfirmed' },
          },
        },
      },
    ]);
  });

  it('publishes with the clients it is given, one per kind, instead of its own', async () => {
    const sent: { client: string; command: string }[] = [];
    const client = (name: string) => ({
      send: async (command: object) => {
        sent.push({ client: name, command: command.constructor.name });
        return {};
      },
    });
    const clients = { sqs: client('sqs'), eventBridge: client('eventBridge'), sns: client('sns') };
    const own = [spyOnSend(SQSClient), spyOnSend(EventBridgeClient), spyOnSend(SNSClient)];

    await outboxDestinationFromEnvironment(
      { [OUTBOX_ENV.destinationKind]: 'sqs', [OUTBOX_ENV.destinationQueueUrl]: QUEUE_URL },
      clients,
    ).publish(message);
    await outboxDestinationFromEnvironment(
      {
        [OUTBOX_ENV.destinationKind]: 'eventbridge',
        [OUTBOX_ENV.destinationArn]: BUS_ARN,
        [OUTBOX_ENV.eventSource]: 'orders',
      },
      clients,
    ).publish(message);
    await outboxDestinationFromEnvironment(
      { [OUTBOX_ENV.destinationKind]: 'sns', [OUTBOX_ENV.destinationArn]: TOPIC_ARN },
      clients,
    ).publish(message);

    expect(sent).toEqual([
      { client: 'sqs', command: 'SendMessageCommand' },
      { client: 'eventBridge', command: 'PutEventsCommand' },
      { client: 'sns', command: 'PublishCommand' },
    ]);
    expect(own).toEqual([[], [], []]);
  });

  it('fails fast with INVALID_OPTIONS naming each missing or malformed variable', () => {
    const cases: [Environment, string][] = [
      [
        {},
        "Expected `EO_OUTBOX_DESTINATION_KIND` to be one of 'sqs', 'eventbridge', 'sns' (the `Outbox` construct sets it; or pass `destination`), got `undefined`",
      ],
      [
        { [OUTBOX_ENV.destinationKind]: 'kinesis' },
        "Expected `EO_OUTBOX_DESTINATION_KIND` to be one of 'sqs', 'eventbridge', 'sns', got `\"kinesis\"`",
      ],
      [
        { [OUTBOX_ENV.destinationKind]: 'sqs' },
        "Expected `EO_OUTBOX_DESTINATION_QUEUE_URL` to be a queue URL when `EO_OUTBOX_DESTINATION_KIND` is 'sqs', got `undefined`",
      ],
      [
        { [OUTBOX_ENV.destinationKind]: 'eventbridge', [OUTBOX_ENV.destinationArn]: 'orders' },
        'Expected `EO_OUTBOX_DESTINATION_ARN` to be an ARN when `EO_OUTBOX_DESTINATION_KIND` is \'eventbridge\', got `"orders"`',
      ],
      [
        { [OUTBOX_ENV.destinationKind]: 'sns' },
        "Expected `EO_OUTBOX_DESTINATION_ARN` to be an ARN when `EO_OUTBOX_DESTINATION_KIND` is 'sns', got `undefined`",
      ],
      [
        {
          [OUTBOX_ENV.destinationKind]: 'sqs',
          [OUTBOX_ENV.destinationQueueUrl]: QUEUE_URL,
          [OUTBOX_ENV.destinationFifo]: 'yes',
        },
        "Expected `EO_OUTBOX_DESTINATION_FIFO` to be 'true' or 'false', got `\"yes\"`",
      ],
      [
        {
          [OUTBOX_ENV.destinationKind]: 'sqs',
          [OUTBOX_ENV.destinationQueueUrl]: QUEUE_URL,
          [OUTBOX_ENV.destinationFifo]: 'true',
        },
        `Expected \`EO_OUTBOX_DESTINATION_QUEUE_URL\` to be a FIFO address (ending in '.fifo') as \`EO_OUTBOX_DESTINATION_FIFO\` is 'true', got \`"${QUEUE_URL}"\``,
      ],
      [
        {
          [OUTBOX_ENV.destinationKind]: 'sns',
          [OUTBOX_ENV.destinationArn]: `${TOPIC_ARN}.fifo`,
          [OUTBOX_ENV.destinationFifo]: 'false',
        },
        `Expected \`EO_OUTBOX_DESTINATION_ARN\` to be a standard address (not ending in '.fifo') as \`EO_OUTBOX_DESTINATION_FIFO\` is 'false', got \`"${TOPIC_ARN}.fifo"\``,
      ],
      [
        {
          [OUTBOX_ENV.destinationKind]: 'eventbridge',
          [OUTBOX_ENV.destinationArn]: BUS_ARN,
          [OUTBOX_ENV.eventSource]: 'aws.orders',
        },
        'Expected `EO_OUTBOX_EVENT_SOURCE` to be a string of 1 to 256 characters not starting with \'aws.\', got `"aws.orders"`',
      ],
      [
        { [OUTBOX_ENV.destinationKind]: 'sqs', [ENV.deadLetterMode]: 'redrive' },
        'Expected `EO_DEAD_LETTER_MODE` to be \'direct\' for the outbox relay (a stream has no redrive: a record that can never be published goes to the dead-letter queue directly), got `"redrive"`',
      ],
    ];
    for (const [environment, expected] of cases) {
      expect(invalidOptions(() => outboxDestinationFromEnvironment(environment))).toBe(expected);
    }
  });

  it('reads every variable the construct sets, leaving out unset and empty ones', () => {
    expect(
      readOutboxRelaySettings({
        [OUTBOX_ENV.tableName]: 'outbox',
        [OUTBOX_ENV.destinationKind]: 'sns',
        [OUTBOX_ENV.destinationArn]: `${TOPIC_ARN}.fifo`,
        [OUTBOX_ENV.destinationFifo]: 'true',
        [OUTBOX_ENV.destinationQueueUrl]: '',
        [ENV.consumer]: 'order-events-relay',
        [ENV.deadLetterMode]: 'direct',
        [ENV.deadLetterQueueUrl]: DLQ_URL,
        [ENV.metricNamespace]: 'Orders',
        [ENV.logLevel]: 'warn',
      }),
    ).toEqual({
      outboxTableName: 'outbox',
      outboxDestinationKind: 'sns',
      outboxDestinationFifo: true,
      destinationKind: 'sns',
      destinationArn: `${TOPIC_ARN}.fifo`,
      destinationFifo: true,
      consumer: 'order-events-relay',
      deadLetter: 'direct',
      deadLetterQueueUrl: DLQ_URL,
      metricNamespace: 'Orders',
      logLevel: 'warn',
    });
  });
});

describe('createOutboxRelay with the construct environment', () => {
  const relayEnvironment = {
    [OUTBOX_ENV.destinationKind]: 'sqs',
    [OUTBOX_ENV.destinationQueueUrl]: QUEUE_URL,
    [OUTBOX_ENV.destinationFifo]: 'false',
    [ENV.consumer]: 'order-events-relay',
    [ENV.deadLetterMode]: 'direct',
    [ENV.deadLetterQueueUrl]: DLQ_URL,
    [ENV.metricNamespace]: 'Orders',
  };
  const inserted = dynamoDbStreamRecord('1', {
    eventName: 'INSERT',
    keys: { pk: { S: 'e-1' } },
    newImage: {
      [OUTBOX_ATTRIBUTES.pk]: { S: 'e-1' },
      [OUTBOX_ATTRIBUTES.type]: { S: 'OrderConfirmed' },
      [OUTBOX_ATTRIBUTES.body]: { S: '{"orderId":"o-1"}' },
    },
  });
  const foreign = dynamoDbStreamRecord('2', {
    eventName: 'INSERT',
    keys: { pk: { S: 'x' } },
    newImage: { pk: { S: 'x' } },
    eventId: 'ev-2',
  });

  it('needs no options: publishes to the queue, dead-letters to EO_DEAD_LETTER_QUEUE_URL as EO_CONSUMER, and emits metrics in EO_METRIC_NAMESPACE', async () => {
    const inputs = spyOnSend(SQSClient);
    const lines: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((line) => {
      lines.push(String(line));
      return true;
    });
    const relay = createOutboxRelay({ environment: relayEnvironment, clock: () => 1_000 });

    const response = await relay({ Records: [inserted, foreign] });
    vi.mocked(process.stdout.write).mockRestore();

    expect(response).toEqual({ batchItemFailures: [] });
    expect(inputs.map(({ input }) => (input as { QueueUrl: string }).QueueUrl)).toEqual([QUEUE_URL, DLQ_URL]);
    expect(inputs[1]?.input).toMatchObject({
      MessageBody: '{"pk":{"S":"x"}}',
      MessageAttributes: {
        'eo-code': { DataType: 'String', StringValue: 'VALIDATION' },
        'eo-consumer': { DataType: 'String', StringValue: 'order-events-relay' },
      },
    });
    const metrics = lines.map((line) => JSON.parse(line)).filter((line) => '_aws' in line);
    expect(metrics).toEqual([
      {
        _aws: {
          Timestamp: 1_000,
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
        Published: 1,
        Retry: 0,
        Permanent: 1,
      },
    ]);
  });

  it('lets an explicit destination win without reading the destination variables', async () => {
    const published: OutboxMessage[] = [];
    const relay = createOutboxRelay({
      environment: { [ENV.consumer]: 'order-events-relay' },
      destination: { publish: async (given) => void published.push(given) },
      metrics: false,
    });

    expect(await relay({ Records: [inserted] })).toEqual({ batchItemFailures: [] });
    expect(published.map(({ id }) => id)).toEqual(['e-1']);
  });

  it('logs at EO_LOG_LEVEL: at error, a failed publish writes no warn line', async () => {
    const logger = captureLogger();
    const failing = { publish: async () => Promise.reject(new Error('SQS is unavailable')) };
    const quiet = createOutboxRelay({
      environment: { ...relayEnvironment, [ENV.logLevel]: 'error' },
      destination: failing,
      logger,
      metrics: false,
    });
    const chatty = createOutboxRelay({
      environment: relayEnvironment,
      destination: failing,
      logger,
      metrics: false,
    });

    expect(await quiet({ Records: [inserted] })).toEqual({ batchItemFailures: [{ itemIdentifier: '1' }] });
    expect(logger.entries).toEqual([]);
    expect(await chatty({ Records: [inserted] })).toEqual({ batchItemFailures: [{ itemIdentifier: '1' }] });
    expect(logger.entries.map(({ level, message: text, relay }) => ({ level, text, relay }))).toEqual([
      { level: 'warn', text: 'Outbox relay: publish failed', relay: 'order-events-relay' },
    ]);
  });

  it('rejects a name other than EO_CONSUMER, whose metrics the construct alarms on', () => {
    expect(invalidOptions(() => createOutboxRelay({ environment: relayEnvironment, name: 'other' }))).toBe(
      "Expected `name` to be `order-events-relay` as the construct set it (`EO_CONSUMER`), got `other`: leave `name` out to use the construct's, or change the construct",
    );
  });

  it('fails fast at cold start without a destination or the variables that describe one', () => {
    expect(invalidOptions(() => createOutboxRelay({ environment: {} }))).toMatch(
      /^Expected `EO_OUTBOX_DESTINATION_KIND` to be one of 'sqs', 'eventbridge', 'sns'/,
    );
  });
});
