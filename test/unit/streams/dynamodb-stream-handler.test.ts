/**
 * The DynamoDB Streams entry point over the memory store: the change as plain JSON, keys from
 * the item's key and version (never the event id alone), the same change emitted twice as a
 * duplicate, a different change under the same version dead-lettered, and the checkpoint.
 */
import { describe, expect, it } from 'vitest';
import type { Message } from '../../../lambda/core/message';
import { marker } from '../../../lambda/modes/marker';
import {
  createDynamoDbStreamHandler,
  type DynamoDbChange,
  type DynamoDbStreamHandlerOptions,
  dynamoDbChangeJson,
} from '../../../lambda/streams/dynamodb-stream-handler';
import { fromData, fromKeysAndVersion } from '../../../lambda/streams/key-sources';
import type { DynamoDbStreamRecord } from '../../../lambda/streams/stream-event';
import { captureLogger, lambdaContext, T0 } from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';
import {
  captureDeadLetters,
  dynamoDbStreamRecord,
  recoveredData,
  streamDeadLetterOf,
} from '../../support/stream-fixtures';

interface Order {
  readonly pk: string;
  readonly version: number;
  readonly status: string;
}

function setup(options: Partial<DynamoDbStreamHandlerOptions<DynamoDbChange<Order>>> = {}) {
  const deadLetters = captureDeadLetters();
  const handled: string[] = [];
  const handler = createDynamoDbStreamHandler<DynamoDbChange<Order>>({
    consumer: 'order-projection',
    dedupKey: fromKeysAndVersion('version'),
    mode: marker((message: Message<DynamoDbChange<Order>>) => {
      if (message.body.newImage?.status === 'BROKEN') throw new Error('read model unavailable');
      handled.push(message.dedupKey);
    }),
    store: createMemoryStore(),
    clock: () => T0,
    environment: {},
    deadLetterSender: deadLetters,
    logger: captureLogger(),
    metrics: false,
    ...options,
  } as DynamoDbStreamHandlerOptions<DynamoDbChange<Order>>);
  const run = (...records: DynamoDbStreamRecord[]) => handler({ Records: records }, lambdaContext());
  return { handler, run, handled, deadLetters };
}

/** A change of order `pk` to `version` with `status`. */
const orderChange = (
  sequenceNumber: string,
  pk: string,
  version: number,
  status: string,
  eventName: 'INSERT' | 'MODIFY' = 'MODIFY',
) =>
  dynamoDbStreamRecord(sequenceNumber, {
    eventName,
    keys: { pk: { S: pk } },
    newImage: { pk: { S: pk }, version: { N: String(version) }, status: { S: status } },
  });

const checkpoint = (...sequenceNumbers: string[]) => ({
  batchItemFailures: sequenceNumbers.map((itemIdentifier) => ({ itemIdentifier })),
});

describe('createDynamoDbStreamHandler', () => {
  it("keys each change by the item's key, the event name and the version", async () => {
    const { run, handled } = setup();

    await run(
      orderChange('1', 'order-1', 1, 'NEW', 'INSERT'),
      orderChange('2', 'order-1', 2, 'PAID'),
      dynamoDbStreamRecord('3', {
        eventName: 'REMOVE',
        keys: { pk: { S: 'order-1' } },
        oldImage: { pk: { S: 'order-1' }, version: { N: '2' }, status: { S: 'PAID' } },
      }),
    );

    expect(handled).toEqual(['order-1:INSERT:1', 'order-1:MODIFY:2', 'order-1:REMOVE:2']);
  });

  it('acknowledges the same change emitted twice (a new event id and sequence number) as a duplicate', async () => {
    const { run, handled } = setup();

    const response = await run(
      orderChange('1', 'order-1', 2, 'PAID'),
      orderChange('9', 'order-1', 2, 'PAID'),
    );

    expect(response).toEqual(checkpoint());
    expect(handled).toEqual(['order-1:MODIFY:2']);
  });

  it('dead-letters a different change under the same key and version with the reason and the change as the body', async () => {
    const { run, handled, deadLetters } = setup();

    const response = await run(
      orderChange('1', 'order-1', 2, 'PAID'),
      orderChange('2', 'order-1', 2, 'REFUNDED'),
    );

    expect(response).toEqual(checkpoint());
    expect(handled).toEqual(['order-1:MODIFY:2']);
    expect(deadLetters.sent.map(({ code, dedupKey }) => ({ code, dedupKey }))).toEqual([
      { code: 'PAYLOAD_MISMATCH', dedupKey: 'order-1:MODIFY:2' },
    ]);
    // The record's `dynamodb` field as delivered, byte for byte, and where to read it again.
    const envelope = streamDeadLetterOf(deadLetters.sent[0]!);
    expect(JSON.parse(recoveredData(envelope)!.toString('utf8'))).toEqual(
      orderChange('2', 'order-1', 2, 'REFUNDED').dynamodb,
    );
    expect(envelope.source).toMatchObject({
      sequenceNumber: '2',
      eventName: 'MODIFY',
      keys: { pk: { S: 'order-1' } },
    });
  });

  it('dead-letters a change without its version (a REMOVE on a NEW_IMAGE stream) as MISSING_KEY', async () => {
    const { run, deadLetters } = setup();

    const response = await run(
      dynamoDbStreamRecord('5', { eventName: 'REMOVE', keys: { pk: { S: 'order-1' } } }),
    );

    expect(response).toEqual(checkpoint());
    expect(deadLetters.sent.map(({ code }) => code)).toEqual(['MISSING_KEY']);
  });

  it('reports the sequence number of the first change to retry and does not run the later ones', async () => {
    const { run, handled } = setup();

    const response = await run(
      orderChange('1', 'order-1', 1, 'NEW'),
      orderChange('2', 'order-2', 1, 'BROKEN'),
      orderChange('3', 'order-3', 1, 'NEW'),
    );

    expect(response).toEqual(checkpoint('2'));
    expect(handled).toEqual(['order-1:MODIFY:1']);
  });

  it('keys by a field of the change with fromData, a number keeping every digit', async () => {
    const { run, handled } = setup({ dedupKey: fromData('newImage.eventId') });

    await run(
      dynamoDbStreamRecord('1', {
        keys: { pk: { S: 'order-1' } },
        newImage: { pk: { S: 'order-1' }, eventId: { N: '12345678901234567890123' } },
      }),
    );

    expect(handled).toEqual(['12345678901234567890123']);
  });

  it('throws INVALID_EVENT for a record without a sequence number', async () => {
    const { handler } = setup();

    await expect(
      handler({ Records: [{ eventName: 'INSERT', dynamodb: {} } as never] }),
    ).rejects.toMatchObject({
      code: 'INVALID_EVENT',
      message: 'Expected a DynamoDB Streams record with `dynamodb.SequenceNumber`',
    });
  });

  it('rejects an empty version attribute name at start-up', () => {
    expect(() => fromKeysAndVersion('')).toThrow(
      expect.objectContaining({
        code: 'INVALID_OPTIONS',
        message: 'Expected `versionAttribute` to be an attribute name, got `""`',
      }),
    );
  });
});

describe('dynamoDbChangeJson', () => {
  it('writes every attribute type as plain JSON: exact numbers, base64 binary, sorted sets', () => {
    const record = dynamoDbStreamRecord('1', {
      eventName: 'INSERT',
      keys: { pk: { S: 'a' }, sk: { N: '10' } },
      newImage: {
        pk: { S: 'a' },
        sk: { N: '10' },
        big: { N: '12345678901234567890123' },
        ratio: { N: '-0.5' },
        blob: { B: 'AAE=' },
        tags: { SS: ['z', 'a'] },
        sizes: { NS: ['3', '1'] },
        blobs: { BS: ['Ag==', 'AQ=='] },
        nested: { M: { ok: { BOOL: true }, none: { NULL: true }, list: { L: [{ S: 'x' }, { N: '1' }] } } },
      },
    });

    expect(dynamoDbChangeJson(record)).toBe(
      '{"eventName":"INSERT","keys":{"pk":"a","sk":10},"newImage":{"pk":"a","sk":10,"big":12345678901234567890123,' +
        '"ratio":-0.5,"blob":"AAE=","tags":["a","z"],"sizes":[1,3],"blobs":["AQ==","Ag=="],' +
        '"nested":{"ok":true,"none":null,"list":["x",1]}}}',
    );
  });

  it('leaves out the creation time and size, so two emissions of one change read the same', () => {
    const first = orderChange('1', 'order-1', 2, 'PAID');
    const second = {
      ...first,
      eventID: 'other',
      dynamodb: { ...first.dynamodb, SequenceNumber: '7', SizeBytes: 99, ApproximateCreationDateTime: 1 },
    };

    expect(dynamoDbChangeJson(second)).toBe(dynamoDbChangeJson(first));
  });
});
