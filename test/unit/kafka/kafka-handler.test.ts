/**
 * The Kafka entry point over the memory store: records grouped by topic-partition, each partition
 * an ordering group whose first record to retry is reported by topic-partition and offset (its
 * later records do not run, other partitions go on); producer duplicates and re-read partitions
 * acknowledged by the inbox; keys from the record key, a header or the value; permanent failures
 * (a mismatch, a missing key, a malformed or empty value, a tombstone) dead-lettered losslessly
 * with their coordinates; start-up and event checks.
 */
import { describe, expect, it } from 'vitest';
import { STREAM_RECORD_ATTRIBUTES } from '../../../lambda/core/contract';
import { fingerprintOf } from '../../../lambda/core/fingerprint';
import type { Message } from '../../../lambda/core/message';
import type { KafkaEvent, KafkaRecord } from '../../../lambda/kafka/kafka-event';
import {
  createKafkaHandler,
  type KafkaHandlerOptions,
  type KafkaSourceRecord,
} from '../../../lambda/kafka/kafka-handler';
import { fromHeader, fromKafkaKey } from '../../../lambda/kafka/key-sources';
import { atomic } from '../../../lambda/modes/atomic';
import { entity } from '../../../lambda/modes/entity';
import { marker } from '../../../lambda/modes/marker';
import { fromData } from '../../../lambda/streams/key-sources';
import { STREAM_DEAD_LETTER_FORMAT } from '../../../lambda/streams/stream-dead-letter';
import { captureLogger, lambdaContext, T0 } from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';
import { captureDeadLetters, recoveredData, streamDeadLetterOf } from '../../support/stream-fixtures';

interface OrderEvent {
  readonly eventId: string;
  readonly orderId?: string;
  /** `retry` throws a transient error. */
  readonly fail?: 'retry';
}

const CLUSTER_ARN =
  'arn:aws:kafka:us-east-1:123456789012:cluster/orders/abcd1234-0000-0000-0000-000000000000-1';

/** Header bytes as Lambda lists them. */
const headerBytes = (text: string): number[] => [...Buffer.from(text, 'utf8')];

/** A Kafka record of `topic`/`partition` at `offset` whose value is `value` (JSON unless a string or bytes). */
function kafkaRecord(
  topic: string,
  partition: number,
  offset: number,
  value: unknown,
  extra: Partial<KafkaRecord> = {},
): KafkaRecord {
  const bytes =
    value === undefined
      ? Buffer.alloc(0)
      : value instanceof Uint8Array
        ? Buffer.from(value)
        : Buffer.from(typeof value === 'string' ? value : JSON.stringify(value), 'utf8');
  return {
    topic,
    partition,
    offset,
    timestamp: 1_767_225_600_000 + offset,
    timestampType: 'CREATE_TIME',
    key: Buffer.from(`key-${offset}`).toString('base64'),
    value: bytes.toString('base64'),
    headers: [],
    ...extra,
  };
}

/** The event Lambda delivers for `records`, grouped by topic-partition in the order given. */
function kafkaEvent(...records: KafkaRecord[]): KafkaEvent {
  const grouped: Record<string, KafkaRecord[]> = {};
  for (const record of records) {
    const topicPartition = `${record.topic}-${record.partition}`;
    grouped[topicPartition] = [...(grouped[topicPartition] ?? []), record];
  }
  return {
    eventSource: 'aws:kafka',
    eventSourceArn: CLUSTER_ARN,
    bootstrapServers: 'b-1.orders.kafka.us-east-1.amazonaws.com:9092',
    records: grouped,
  };
}

function setup(options: Partial<KafkaHandlerOptions<OrderEvent>> = {}) {
  const deadLetters = captureDeadLetters();
  const store = createMemoryStore();
  const handled: string[] = [];
  const logger = captureLogger();
  const handler = createKafkaHandler<OrderEvent>({
    consumer: 'orders',
    dedupKey: fromData('eventId'),
    mode: marker((message: Message<OrderEvent, KafkaSourceRecord>) => {
      if (message.body.fail === 'retry') throw new Error('downstream unavailable');
      handled.push(`${message.record.topicPartition}:${message.body.eventId}`);
    }),
    store,
    clock: () => T0,
    environment: {},
    deadLetterSender: deadLetters,
    logger,
    metrics: false,
    ...options,
  } as KafkaHandlerOptions<OrderEvent>);
  const run = (...records: KafkaRecord[]) => handler(kafkaEvent(...records), lambdaContext());
  return { handler, run, handled, deadLetters, store, logger };
}

const resume = (...points: [string, number][]) => ({
  batchItemFailures: points.map(([partition, offset]) => ({ itemIdentifier: { partition, offset } })),
});

describe('createKafkaHandler: partitions and offsets', () => {
  it('processes every record of every partition and reports nothing to retry', async () => {
    const { run, handled } = setup();
    const response = await run(
      kafkaRecord('orders', 0, 10, { eventId: 'e-1' }),
      kafkaRecord('orders', 0, 11, { eventId: 'e-2' }),
      kafkaRecord('orders', 1, 4, { eventId: 'e-3' }),
    );
    expect(response).toEqual(resume());
    // Partitions run side by side: in order within each.
    expect(handled.filter((entry) => entry.startsWith('orders-0'))).toEqual(['orders-0:e-1', 'orders-0:e-2']);
    expect(handled.filter((entry) => entry.startsWith('orders-1'))).toEqual(['orders-1:e-3']);
  });

  it('resumes a partition at its first record to retry, runs none of its later records, and lets the others go on', async () => {
    const { run, handled } = setup();
    const response = await run(
      kafkaRecord('orders', 0, 10, { eventId: 'e-1' }),
      kafkaRecord('orders', 0, 11, { eventId: 'e-2', fail: 'retry' }),
      kafkaRecord('orders', 0, 12, { eventId: 'e-3' }),
      kafkaRecord('orders', 1, 4, { eventId: 'e-4' }),
      kafkaRecord('payments', 0, 7, { eventId: 'e-5' }),
    );
    expect(response).toEqual(resume(['orders-0', 11]));
    expect([...handled].sort()).toEqual(['orders-0:e-1', 'orders-1:e-4', 'payments-0:e-5']);
  });

  it('reads the records it processed before the reported offset as duplicates when the partition resumes', async () => {
    let down = true;
    const handled: string[] = [];
    const { run } = setup({
      mode: marker((message: Message<OrderEvent>) => {
        if (message.body.eventId === 'e-2' && down) throw new Error('downstream unavailable');
        handled.push(message.body.eventId);
      }),
    });
    const records = [
      kafkaRecord('orders', 0, 10, { eventId: 'e-1' }),
      kafkaRecord('orders', 0, 11, { eventId: 'e-2' }),
    ];
    expect(await run(...records)).toEqual(resume(['orders-0', 11]));
    down = false;
    // A re-read from before the reported offset brings offset 10 again: a duplicate.
    expect(await run(...records)).toEqual(resume());
    expect(handled).toEqual(['e-1', 'e-2']);
  });

  it('acknowledges a producer duplicate (the same event at a later offset) without running it again', async () => {
    const { run, handled, store } = setup();
    await run(
      kafkaRecord('orders', 0, 10, { eventId: 'e-1' }),
      kafkaRecord('orders', 0, 11, { eventId: 'e-1' }),
    );
    expect(handled).toEqual(['orders-0:e-1']);
    expect(store.items('inbox')).toHaveLength(1);
  });

  it('commits in atomic and entity mode, each effect once across a re-read', async () => {
    for (const mode of ['atomic', 'entity'] as const) {
      const store = createMemoryStore();
      const handler = createKafkaHandler<OrderEvent>({
        consumer: 'orders',
        dedupKey: fromData('eventId'),
        mode:
          mode === 'atomic'
            ? atomic((message, unitOfWork) => {
                unitOfWork.put({ TableName: 'Orders', Item: { pk: message.body.orderId } });
              })
            : entity((message) => ({
                tableName: 'Orders',
                keyAttribute: 'pk',
                item: { pk: message.body.orderId },
              })),
        store,
        clock: () => T0,
        environment: {},
        deadLetterSender: captureDeadLetters(),
        metrics: false,
      } as KafkaHandlerOptions<OrderEvent>);
      const records = [
        kafkaRecord('orders', 0, 1, { eventId: 'e-1', orderId: 'o-1' }),
        kafkaRecord('orders', 1, 1, { eventId: 'e-2', orderId: 'o-2' }),
      ];
      expect(await handler(kafkaEvent(...records))).toEqual(resume());
      expect(await handler(kafkaEvent(...records))).toEqual(resume());
      expect(store.items('Orders').map((item) => item.pk)).toEqual(['o-1', 'o-2']);
    }
  });
});

describe('createKafkaHandler: keys', () => {
  it('keys by the record key, and a header, as UTF-8 text', async () => {
    const byKey = setup({ dedupKey: fromKafkaKey() });
    await byKey.run(
      kafkaRecord('orders', 0, 1, { eventId: 'e-1' }, { key: Buffer.from('evt-1').toString('base64') }),
      kafkaRecord('orders', 0, 2, { eventId: 'e-1' }, { key: Buffer.from('evt-1').toString('base64') }),
    );
    expect(byKey.store.items('inbox').map((item) => item.pk)).toEqual(['orders#evt-1']);

    const byHeader = setup({ dedupKey: fromHeader('idempotency-key') });
    await byHeader.run(
      kafkaRecord(
        'orders',
        0,
        1,
        { eventId: 'e-1' },
        {
          headers: [{ 'idempotency-key': headerBytes('first') }, { 'idempotency-key': headerBytes('last') }],
        },
      ),
    );
    // A repeated header counts by its last value, as Kafka's lastHeader reads it.
    expect(byHeader.store.items('inbox').map((item) => item.pk)).toEqual(['orders#last']);
  });

  it("reads a binary key with { encoding: 'base64' }, and dead-letters one read as text (INVALID_KEY)", async () => {
    const binary = Buffer.from([0xff, 0x00, 0x81]).toString('base64');
    const asText = setup({ dedupKey: fromKafkaKey() });
    expect(await asText.run(kafkaRecord('orders', 0, 1, { eventId: 'e-1' }, { key: binary }))).toEqual(
      resume(),
    );
    expect(asText.deadLetters.sent.map((letter) => letter.code)).toEqual(['INVALID_KEY']);

    const asBase64 = setup({ dedupKey: fromKafkaKey({ encoding: 'base64' }) });
    await asBase64.run(kafkaRecord('orders', 0, 1, { eventId: 'e-1' }, { key: binary }));
    expect(asBase64.store.items('inbox').map((item) => item.pk)).toEqual([`orders#${binary}`]);
  });

  it('reads a header value of Java signed bytes as the same bytes', async () => {
    const { run, store } = setup({ dedupKey: fromHeader('id', { encoding: 'base64' }) });
    await run(kafkaRecord('orders', 0, 1, { eventId: 'e-1' }, { headers: [{ id: [-1, 0, 127, -128] }] }));
    expect(store.items('inbox').map((item) => item.pk)).toEqual([
      `orders#${Buffer.from([0xff, 0x00, 0x7f, 0x80]).toString('base64')}`,
    ]);
  });

  it('dead-letters a record without its key or header as MISSING_KEY, naming where the key is read', async () => {
    const { run, deadLetters } = setup({ dedupKey: fromHeader('idempotency-key') });
    expect(await run(kafkaRecord('orders', 0, 1, { eventId: 'e-1' }))).toEqual(resume());
    expect(deadLetters.sent.map((letter) => [letter.code, letter.reason])).toEqual([
      ['MISSING_KEY', expect.stringContaining('Kafka header `idempotency-key`')],
    ]);
  });

  it('refuses a bad encoding or header name at start-up', () => {
    expect(() => fromKafkaKey({ encoding: 'hex' as never })).toThrow(/encoding/);
    expect(() => fromHeader('')).toThrow(/name/);
  });
});

describe('createKafkaHandler: dead letters', () => {
  it('dead-letters a tombstone, an empty value and a binary value losslessly, with their coordinates, and moves on', async () => {
    const { run, deadLetters, handled } = setup();
    const binary = new Uint8Array([0x1f, 0x8b, 0x08, 0x00, 0xff]);
    const response = await run(
      kafkaRecord('orders', 0, 20, undefined, { value: null }),
      kafkaRecord('orders', 0, 21, ''),
      kafkaRecord('orders', 0, 22, binary, { headers: [{ trace: headerBytes('t-1') }] }),
      kafkaRecord('orders', 0, 23, { eventId: 'e-1' }),
    );
    expect(response).toEqual(resume());
    expect(handled).toEqual(['orders-0:e-1']);
    const envelopes = deadLetters.sent.map(streamDeadLetterOf);
    expect(envelopes.map((envelope) => envelope.code)).toEqual([
      'MALFORMED_BODY',
      'MALFORMED_BODY',
      'MALFORMED_BODY',
    ]);
    expect(envelopes.map((envelope) => envelope.format)).toEqual(Array(3).fill(STREAM_DEAD_LETTER_FORMAT));
    expect(envelopes.map((envelope) => recoveredData(envelope))).toEqual([
      Buffer.alloc(0),
      Buffer.alloc(0),
      Buffer.from(binary),
    ]);
    expect(envelopes[2]!.source).toEqual({
      eventSource: 'aws:kafka',
      eventSourceArn: CLUSTER_ARN,
      shardId: 'orders-0',
      sequenceNumber: '22',
      topic: 'orders',
      partition: 0,
      offset: 22,
      timestamp: 1_767_225_600_022,
      timestampType: 'CREATE_TIME',
      recordKey: Buffer.from('key-22').toString('base64'),
      headers: [{ name: 'trace', value: Buffer.from('t-1').toString('base64') }],
    });
    expect(deadLetters.sent[2]!.attributes).toMatchObject({
      [STREAM_RECORD_ATTRIBUTES.shardId]: { stringValue: 'orders-0' },
      [STREAM_RECORD_ATTRIBUTES.sequenceNumber]: { stringValue: '22' },
    });
    expect(deadLetters.sent[2]!.sourceMessageId).toBe('orders-0:22');
  });

  it('dead-letters the same key with another value as PAYLOAD_MISMATCH', async () => {
    const { run, deadLetters } = setup();
    await run(kafkaRecord('orders', 0, 1, { eventId: 'e-1', orderId: 'o-1' }));
    await run(kafkaRecord('orders', 0, 2, { eventId: 'e-1', orderId: 'o-2' }));
    expect(deadLetters.sent.map((letter) => letter.code)).toEqual(['PAYLOAD_MISMATCH']);
  });

  it('retries the partition from the record whose dead letter could not be sent', async () => {
    const { run, deadLetters } = setup();
    deadLetters.fail = true;
    const response = await run(
      kafkaRecord('orders', 0, 5, 'not json'),
      kafkaRecord('orders', 0, 6, { eventId: 'e-1' }),
      kafkaRecord('orders', 1, 9, { eventId: 'e-2' }),
    );
    expect(response).toEqual(resume(['orders-0', 5]));
  });

  it('never logs a value', async () => {
    const { run, logger } = setup();
    await run(
      kafkaRecord('orders', 0, 1, { eventId: 'e-1', orderId: 'secret-order-4111' }),
      kafkaRecord('orders', 0, 2, 'secret-body-4111'),
    );
    expect(JSON.stringify(logger.entries)).not.toContain('secret');
  });
});

describe('createKafkaHandler: events and options', () => {
  it('refuses an event without a records map, and a record without its coordinates (INVALID_EVENT)', async () => {
    const { handler } = setup();
    await expect(handler({ Records: [] } as never)).rejects.toMatchObject({ code: 'INVALID_EVENT' });
    await expect(
      handler({ records: { 'orders-0': [{ topic: 'orders', partition: 0, value: '' }] } } as never),
    ).rejects.toMatchObject({ code: 'INVALID_EVENT', message: expect.stringContaining('offset') });
    await expect(
      handler(
        kafkaEvent(kafkaRecord('orders', 0, 1, { eventId: 'e-1' }, { headers: [{ id: 'abc' }] as never })),
      ),
    ).rejects.toMatchObject({ code: 'INVALID_EVENT' });
  });

  it('refuses a redrive dead letter and a missing dead-letter sender at start-up', () => {
    expect(() => setup({ deadLetter: 'redrive' as never })).toThrow(/deadLetter/);
    expect(() => setup({ deadLetterSender: undefined })).toThrow(/deadLetterSender/);
  });

  it('fingerprints the value as the SQS and stream handlers do', async () => {
    const { run, store } = setup();
    await run(kafkaRecord('orders', 0, 1, '{ "eventId": "e-1", "b": 1.0 }'));
    expect(store.items('inbox')[0]!.fingerprint).toBe(fingerprintOf({ b: 1, eventId: 'e-1' }));
  });
});
