/**
 * `createKafkaHandler` (from `effectively-once/kafka`) against a real Apache Kafka broker
 * (`scripts/local-kafka/broker.ts`: KRaft, 127.0.0.1 only, started and stopped here) and the
 * emulator's DynamoDB and SQS. A real client (kafkajs) produces to a topic of two partitions:
 * producer duplicates, a poison record, a record with an empty value and one without its key
 * header. A real consumer group reads them back, and a player drives each handler with the
 * Kafka event source's semantics: batches of three records per partition, a partition resumed at
 * the offset the handler reports (the dead-letter queue does not exist at first, so a dead
 * letter fails mid-partition), the others moving on. Atomic mode counts every effect on its item
 * (`ADD effects :one`), entity mode writes each item once. Then a double tap: a new consumer
 * group reads both partitions from the start again, and no table changes.
 */
import { randomBytes } from 'node:crypto';
import { CreateQueueCommand, DeleteQueueCommand } from '@aws-sdk/client-sqs';
import { atomic, ENV, entity } from 'effectively-once';
import { createKafkaHandler, fromHeader, type StreamDeadLetterBody } from 'effectively-once/kafka';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalKafka, startLocalKafka } from '../../scripts/local-kafka/broker';
import { uniqueName } from '../support/aws';
import { createLocalResources, receiveMessages } from '../support/fixtures';
import { play, readTopic } from '../support/kafka-player';

const local = createLocalResources();
const run = randomBytes(3).toString('hex');
const topic = `orders-${run}`;
const inboxTable = uniqueName('eo-kafka-broker-inbox');
const ordersTable = uniqueName('eo-kafka-broker-orders');
const customersTable = uniqueName('eo-kafka-broker-customers');
const deadLetterQueueName = uniqueName('eo-kafka-broker-dlq');
let deadLetterQueueUrl: string;
let broker: LocalKafka;
let kafka: Kafka;

interface OrderEvent {
  readonly orderId: string;
  readonly customerId: string;
  readonly status: string;
}

beforeAll(async () => {
  broker = await startLocalKafka({ partitions: 2 });
  kafka = new Kafka({ clientId: 'eo-test', brokers: [...broker.brokers], logLevel: logLevel.NOTHING });
  await Promise.all([
    local.createTable(inboxTable),
    local.createTable(ordersTable),
    local.createTable(customersTable),
  ]);
  // The URL the dead-letter queue will have once created (after the first invocation).
  const { url } = await local.createQueue('eo-kafka-broker-url-probe');
  deadLetterQueueUrl = url.replace(/[^/]+$/, deadLetterQueueName);
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
  await admin.disconnect();
}, 180_000);

afterAll(async () => {
  await local.sqs.send(new DeleteQueueCommand({ QueueUrl: deadLetterQueueUrl })).catch(() => undefined);
  await local.dispose();
  await broker?.stop();
});

/** The settings the construct would give a consumer of this topic. */
const environment = (consumer: string) => ({
  [ENV.consumer]: consumer,
  [ENV.inboxTable]: inboxTable,
  [ENV.deadLetterMode]: 'direct',
  [ENV.deadLetterQueueUrl]: deadLetterQueueUrl,
});

/** Atomic mode: the order's item counts every effect (a second commit would make it 2). */
const atomicHandler = () =>
  createKafkaHandler<OrderEvent>({
    dedupKey: fromHeader('idempotency-key'),
    environment: environment('orders-atomic'),
    mode: atomic((message, unitOfWork) => {
      unitOfWork.update({
        TableName: ordersTable,
        Key: { pk: message.body.orderId },
        UpdateExpression: 'ADD effects :one SET #status = :status',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':one': 1, ':status': message.body.status },
      });
    }),
  });

/** Entity mode: the customer's item is the marker, written once. */
const entityHandler = () =>
  createKafkaHandler<OrderEvent>({
    dedupKey: fromHeader('idempotency-key'),
    environment: environment('customers-entity'),
    mode: entity((message) => ({
      tableName: customersTable,
      keyAttribute: 'pk',
      item: { pk: `${message.body.customerId}#${message.body.orderId}`, status: message.body.status },
    })),
  });

describe('createKafkaHandler with a real Kafka broker', () => {
  it('applies each effect once in atomic and entity mode through producer duplicates, partitions resumed at reported offsets and a double tap; dead-letters the poison, empty and keyless records losslessly', async () => {
    const order = (n: number): OrderEvent => ({
      orderId: `o-${run}-${n}`,
      customerId: `c-${n % 2}`,
      status: 'PAID',
    });
    const json = (value: unknown) => Buffer.from(JSON.stringify(value));
    const keyed = (id: string) => ({ 'idempotency-key': id });
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({
      topic,
      messages: [
        { partition: 0, key: 'o-1', value: json(order(1)), headers: keyed(`evt-${run}-1`) },
        { partition: 0, key: 'o-1', value: json(order(1)), headers: keyed(`evt-${run}-1`) }, // the producer's retry
        {
          partition: 0,
          key: 'poison',
          value: Buffer.from('{"orderId": '),
          headers: keyed(`evt-${run}-poison`),
        },
        { partition: 0, key: 'o-2', value: json(order(2)), headers: keyed(`evt-${run}-2`) },
        { partition: 1, key: 'o-3', value: json(order(3)), headers: keyed(`evt-${run}-3`) },
        { partition: 1, key: 'o-4', value: json(order(4)), headers: keyed(`evt-${run}-4`) },
        { partition: 1, key: 'empty', value: Buffer.alloc(0), headers: keyed(`evt-${run}-empty`) },
        { partition: 1, key: 'o-5', value: json(order(5)) }, // no idempotency-key header
        { partition: 1, key: 'o-3', value: json(order(3)), headers: keyed(`evt-${run}-3`) }, // again, later
      ],
    });
    await producer.disconnect();

    const partitions = await readTopic(kafka, topic, 9);
    expect([...partitions.keys()].sort()).toEqual([`${topic}-0`, `${topic}-1`]);
    const bootstrapServers = broker.brokers.join(',');
    const atomicEvents = await play(atomicHandler(), partitions, {
      bootstrapServers,
      afterFirst: async () => {
        await local.sqs.send(new CreateQueueCommand({ QueueName: deadLetterQueueName }));
      },
    });
    // The first invocation could not dead-letter the poison record: its partition came back from there.
    expect(atomicEvents[1]?.records[`${topic}-0`]?.[0]?.offset).toBe(
      partitions.get(`${topic}-0`)![2]!.offset,
    );
    await play(entityHandler(), partitions, { bootstrapServers });

    const orders = await local.scanItems(ordersTable);
    expect(orders.map((item) => [item.pk, item.effects]).sort()).toEqual(
      [1, 2, 3, 4].map((n) => [`o-${run}-${n}`, 1]),
    );
    expect((await local.scanItems(customersTable)).map((item) => item.pk).sort()).toEqual(
      [1, 2, 3, 4].map((n) => `${order(n).customerId}#o-${run}-${n}`).sort(),
    );

    // Dead letters: each bad record once per consumer, with its coordinates and its exact value.
    const letters = await receiveMessages(local, deadLetterQueueUrl, 6);
    const envelopes = letters.map((letter) => JSON.parse(letter.Body!) as StreamDeadLetterBody);
    const codes = envelopes.map(
      (envelope) =>
        `${envelope.source.partition}:${envelope.code}:${envelope.data && 'value' in envelope.data ? envelope.data.value : ''}`,
    );
    expect(codes.sort()).toEqual(
      [
        '0:MALFORMED_BODY:{"orderId": ',
        '0:MALFORMED_BODY:{"orderId": ',
        '1:MALFORMED_BODY:',
        '1:MALFORMED_BODY:',
        `1:MISSING_KEY:${JSON.stringify(order(5))}`,
        `1:MISSING_KEY:${JSON.stringify(order(5))}`,
      ].sort(),
    );
    for (const envelope of envelopes) {
      expect(envelope.source).toMatchObject({ topic, shardId: `${topic}-${envelope.source.partition}` });
      expect(envelope.source.headers === undefined || Array.isArray(envelope.source.headers)).toBe(true);
    }

    // The double tap: a new consumer group reads both partitions from the start; nothing changes.
    const before = [await local.scanItems(ordersTable), await local.scanItems(customersTable)];
    const again = await readTopic(kafka, topic, 9);
    await play(atomicHandler(), again, { bootstrapServers });
    await play(entityHandler(), again, { bootstrapServers });
    expect([await local.scanItems(ordersTable), await local.scanItems(customersTable)]).toEqual(before);
  }, 240_000);
});
