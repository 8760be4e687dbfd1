/**
 * The Kafka sample (`examples/kafka-orders.ts`, shown in docs/kafka.md), imported as it is and
 * run against the emulator: the real DynamoDB store and a real dead-letter queue over HTTP (every
 * send through the SQS conformance layer). The events are built as Lambda delivers a Kafka batch
 * (records grouped by topic-partition, key, value and header bytes as Lambda encodes them); a
 * real broker driving the handler is not part of this test. Two partitions, a producer duplicate,
 * dead-letter sends failing mid-partition (each partition resumed at its reported offset), a poison
 * record, a record with an empty value and one without its key: each effect once, the bad records dead-lettered losslessly with their
 * coordinates, and a re-read of both partitions from the start changes no item.
 */
import { randomBytes } from 'node:crypto';
import { CreateQueueCommand, DeleteQueueCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENV } from '../../lambda';
import type { KafkaEvent, KafkaRecord } from '../../lambda/kafka';
import type { StreamDeadLetterBody } from '../../lambda/streams';
import { localAwsEnv } from '../../scripts/local-aws/harness';
import { uniqueName } from '../support/aws';
import { captureStdout, createLocalResources, lambdaContext, receiveMessages } from '../support/fixtures';

const local = createLocalResources();
const run = randomBytes(3).toString('hex');
const inboxTable = uniqueName('eo-kafka-inbox');
const ordersTable = uniqueName('eo-kafka-orders');
/** Created only after the first invocation: until then every dead-letter send fails, a transient failure. */
const deadLetterQueueName = uniqueName('eo-kafka-dlq');
const savedEnv = { ...process.env };
let deadLetterQueueUrl: string;

beforeAll(async () => {
  await Promise.all([local.createTable(inboxTable), local.createTable(ordersTable, ['pk', 'sk'])]);
  // The URL the queue will have: another queue's, with its name in place of the last segment.
  const { url } = await local.createQueue('eo-kafka-url-probe');
  deadLetterQueueUrl = url.replace(/[^/]+$/, deadLetterQueueName);
  // What the construct sets on the deployed function; the sample's unconfigured SDK clients then
  // reach the local endpoint.
  Object.assign(process.env, localAwsEnv(local.aws), {
    [ENV.consumer]: 'kafka-orders',
    [ENV.inboxTable]: inboxTable,
    [ENV.deadLetterMode]: 'direct',
    [ENV.deadLetterQueueUrl]: deadLetterQueueUrl,
    ORDERS_TABLE: ordersTable,
  });
});

afterAll(async () => {
  process.env = savedEnv;
  await local.sqs.send(new DeleteQueueCommand({ QueueUrl: deadLetterQueueUrl })).catch(() => undefined);
  await local.dispose();
});

const header = (name: string, text: string) => ({ [name]: [...Buffer.from(text, 'utf8')] });

/** A record of `orders`, partition `partition`, at `offset`; `value` is JSON unless raw text is given. */
function orderRecord(
  partition: number,
  offset: number,
  value: { readonly orderId: string; readonly status: string } | string,
  idempotencyKey?: string,
): KafkaRecord {
  return {
    topic: 'orders',
    partition,
    offset,
    timestamp: 1_767_225_600_000 + offset,
    timestampType: 'CREATE_TIME',
    key: Buffer.from(typeof value === 'string' ? 'raw' : value.orderId).toString('base64'),
    value: Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64'),
    headers: idempotencyKey === undefined ? [] : [header('idempotency-key', idempotencyKey)],
  };
}

function eventOf(...records: KafkaRecord[]): KafkaEvent {
  const grouped: Record<string, KafkaRecord[]> = {};
  for (const record of records) {
    const topicPartition = `${record.topic}-${record.partition}`;
    grouped[topicPartition] = [...(grouped[topicPartition] ?? []), record];
  }
  return { eventSource: 'SelfManagedKafka', bootstrapServers: '127.0.0.1:9092', records: grouped };
}

describe('createKafkaHandler against the emulator', () => {
  it('kafka-orders.ts applies each effect once across a producer duplicate, partitions resumed at their reported offsets and a re-read; dead-letters a poison and an empty record losslessly', async () => {
    const order = (n: number) => ({ orderId: `o-${run}-${n}`, status: 'PAID' });
    const partition0 = [
      orderRecord(0, 100, order(1), `evt-${run}-1`),
      orderRecord(0, 101, order(1), `evt-${run}-1`), // the producer's retry of the same event
      orderRecord(0, 102, '{"orderId": "o-poison", "status": }', `evt-${run}-poison`),
      orderRecord(0, 103, order(2), `evt-${run}-2`),
    ];
    const partition1 = [
      orderRecord(1, 50, order(3), `evt-${run}-3`),
      orderRecord(1, 51, order(4), `evt-${run}-4`),
      orderRecord(1, 52, '', `evt-${run}-empty`),
      orderRecord(1, 53, order(5)), // no idempotency-key header
    ];
    const { handler } = await import('../../examples/kafka-orders');
    const ordered = (n: number) => local.readItem(ordersTable, { pk: `ORDER#o-${run}-${n}`, sk: 'ORDER' });

    // The dead-letter queue does not exist yet: the poison and the empty record cannot be sent, so
    // each partition resumes at its first one, and the records after them do not run.
    const { result: first } = await captureStdout(() =>
      handler(eventOf(...partition0, ...partition1), lambdaContext()),
    );
    expect(first).toEqual({
      batchItemFailures: [
        { itemIdentifier: { partition: 'orders-0', offset: 102 } },
        { itemIdentifier: { partition: 'orders-1', offset: 52 } },
      ],
    });
    expect(await ordered(2)).toBeUndefined();
    expect(await ordered(5)).toBeUndefined();

    // The event source resumes each partition at its reported offset.
    await local.sqs.send(new CreateQueueCommand({ QueueName: deadLetterQueueName }));
    const resumed = eventOf(...partition0.slice(2), ...partition1.slice(2));
    const { result: second } = await captureStdout(() => handler(resumed, lambdaContext()));
    expect(second).toEqual({ batchItemFailures: [] });
    for (const n of [1, 2, 3, 4]) expect(await ordered(n)).toMatchObject({ status: 'PAID' });
    expect(await ordered(5)).toBeUndefined();

    // A re-read of both partitions from the start changes no item.
    const before = await local.scanItems(ordersTable);
    const { result: third, lines } = await captureStdout(() =>
      handler(eventOf(...partition0, ...partition1), lambdaContext()),
    );
    expect(third).toEqual({ batchItemFailures: [] });
    expect(lines.filter((line) => line.outcome === 'processed')).toEqual([]);
    expect(await local.scanItems(ordersTable)).toEqual(before);
    expect(before).toHaveLength(4);

    // Dead letters: from the resumed invocation and again from the re-read, each lossless.
    const letters = await receiveMessages(local, deadLetterQueueUrl, 6);
    const envelopes = letters.map((letter) => JSON.parse(letter.Body!) as StreamDeadLetterBody);
    const at = (offset: number) => envelopes.filter((envelope) => envelope.source.offset === offset);
    expect(at(102)).toHaveLength(2);
    expect(at(102)[0]).toMatchObject({
      code: 'MALFORMED_BODY',
      source: {
        eventSource: 'SelfManagedKafka',
        topic: 'orders',
        partition: 0,
        offset: 102,
        shardId: 'orders-0',
        sequenceNumber: '102',
        recordKey: Buffer.from('raw').toString('base64'),
        headers: [{ name: 'idempotency-key', value: Buffer.from(`evt-${run}-poison`).toString('base64') }],
      },
      data: { encoding: 'utf-8', value: '{"orderId": "o-poison", "status": }' },
    });
    expect(at(52)[0]).toMatchObject({
      code: 'MALFORMED_BODY',
      source: { topic: 'orders', partition: 1, offset: 52 },
      data: { encoding: 'utf-8', value: '', bytes: 0 },
    });
    expect(at(53).map((envelope) => envelope.code)).toEqual(['MISSING_KEY', 'MISSING_KEY']);
  });
});
