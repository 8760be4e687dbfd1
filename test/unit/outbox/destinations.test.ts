/**
 * The EventBridge and SNS destinations: the exact request each sends for an event, a
 * `PutEvents` answer with a failed entry as a failed publish, and the option checks.
 */
import { describe, expect, it } from 'vitest';
import { eventBridgeDestination, type OutboxMessage, snsDestination } from '../../../lambda/outbox';
import { capturingClient } from '../../support/capturing-client';

const message: OutboxMessage = {
  id: 'e-1',
  type: 'OrderConfirmed',
  body: '{"orderId":"o-1"}',
  entity: 'o-1',
};

describe('the EventBridge destination', () => {
  it('puts one entry: the type as DetailType, the source as Source, the id and type in the metadata of Detail, the detail as its data', async () => {
    const { inputs, client } = capturingClient({ FailedEntryCount: 0, Entries: [{ EventId: 'x' }] });
    await eventBridgeDestination({
      client: client as never,
      eventBusName: 'orders',
      source: 'orders.relay',
    }).publish(message);

    expect(inputs).toEqual([
      {
        Entries: [
          {
            EventBusName: 'orders',
            Source: 'orders.relay',
            DetailType: 'OrderConfirmed',
            Detail: '{"metadata":{"idempotency-key":"e-1","type":"OrderConfirmed"},"data":{"orderId":"o-1"}}',
          },
        ],
      },
    ]);
    expect(JSON.parse((inputs[0] as { Entries: { Detail: string }[] }).Entries[0]!.Detail)).toEqual({
      metadata: { 'idempotency-key': 'e-1', type: 'OrderConfirmed' },
      data: { orderId: 'o-1' },
    });
  });

  it('escapes a type that JSON must escape in the metadata, and keeps it as it is in DetailType', async () => {
    const { inputs, client } = capturingClient();
    await eventBridgeDestination({
      client: client as never,
      eventBusName: 'orders',
      source: 'orders',
    }).publish({
      id: 'e-2',
      type: 'Order "Confirmed"',
      body: '[1,2]',
    });

    const [entry] = (inputs[0] as { Entries: { DetailType: string; Detail: string }[] }).Entries;
    expect(entry!.DetailType).toBe('Order "Confirmed"');
    expect(JSON.parse(entry!.Detail)).toEqual({
      metadata: { 'idempotency-key': 'e-2', type: 'Order "Confirmed"' },
      data: [1, 2],
    });
  });

  it('throws a retried code for a failed entry EventBridge calls retryable, VALIDATION for one it refuses, with the entry error code', async () => {
    const cases = [
      ['InternalFailure', 'SERVICE_UNAVAILABLE'],
      ['ThrottlingException', 'THROTTLED'],
      ['NotAuthorizedForDetailTypeException', 'ACCESS_DENIED'],
      ['SomethingNew', 'SERVICE_UNAVAILABLE'],
      ['InvalidArgument', 'VALIDATION'],
      ['MalformedDetail', 'VALIDATION'],
    ] as const;
    for (const [errorCode, code] of cases) {
      const { client } = capturingClient({
        FailedEntryCount: 1,
        Entries: [{ ErrorCode: errorCode, ErrorMessage: 'try again' }],
      });
      const destination = eventBridgeDestination({
        client: client as never,
        eventBusName: 'orders',
        source: 'orders',
      });

      await expect(destination.publish(message)).rejects.toMatchObject({
        code,
        message: `publish: EventBridge did not accept the event (${errorCode}: try again)`,
      });
    }
  });

  it('rejects a source AWS reserves, an empty bus name and a client without send', () => {
    const { client } = capturingClient();
    for (const options of [
      { client, eventBusName: 'orders', source: 'aws.orders' },
      { client, eventBusName: 'orders', source: 'x'.repeat(257) },
      { client, eventBusName: '', source: 'orders' },
      { client: {}, eventBusName: 'orders', source: 'orders' },
    ]) {
      expect(() => eventBridgeDestination(options as never)).toThrow(
        expect.objectContaining({ code: 'INVALID_OPTIONS' }),
      );
    }
  });
});

describe('the SNS destination', () => {
  it('publishes the detail as Message with the id and type as message attributes', async () => {
    const { inputs, client } = capturingClient();
    const topicArn = 'arn:aws:sns:eu-west-1:000000000000:order-events';
    await snsDestination({ client: client as never, topicArn }).publish(message);

    expect(inputs).toEqual([
      {
        TopicArn: topicArn,
        Message: '{"orderId":"o-1"}',
        MessageAttributes: {
          'idempotency-key': { DataType: 'String', StringValue: 'e-1' },
          'eo-event-type': { DataType: 'String', StringValue: 'OrderConfirmed' },
        },
      },
    ]);
  });

  it('on a FIFO topic, deduplicates by the event id and groups by the entity, else by the type', async () => {
    const { inputs, client } = capturingClient();
    const fifo = snsDestination({
      client: client as never,
      topicArn: 'arn:aws:sns:eu-west-1:000000000000:order-events.fifo',
    });
    await fifo.publish(message);
    await fifo.publish({ id: 'e-2', type: 'StockLow', body: '{}' });

    expect(inputs).toMatchObject([
      { MessageDeduplicationId: 'e-1', MessageGroupId: 'o-1' },
      { MessageDeduplicationId: 'e-2', MessageGroupId: 'StockLow' },
    ]);
  });

  it('rejects a topic that is not an ARN', () => {
    const { client } = capturingClient();
    expect(() => snsDestination({ client: client as never, topicArn: 'order-events' })).toThrow(
      expect.objectContaining({
        code: 'INVALID_OPTIONS',
        message: 'Expected `topicArn` to be a topic ARN, got `"order-events"`',
      }),
    );
  });
});
