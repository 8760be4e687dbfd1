/**
 * The relay publishing to a fair queue on the emulator, configured as the `Outbox` construct
 * configures it with `fairQueue: true` (`EO_OUTBOX_DESTINATION_FAIR`, the SQS client the relay
 * creates itself, which sends through the SQS conformance layer): events written by a writer told
 * the queue is fair, read from the outbox table's real stream, reach a standard queue with each
 * event's entity (else its type) as `MessageGroupId`, and the receiving consumer's records carry
 * it in `attributes.MessageGroupId`, its tenant. An entity SQS would refuse as a group id is
 * refused by the writer, nothing written. Through a standard SNS topic marked as feeding fair
 * queues, the relay publishes the same group ids, which reach the topic's SQS standard
 * subscription.
 */
import { randomBytes } from 'node:crypto';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { CreateTopicCommand, DeleteTopicCommand, SNSClient } from '@aws-sdk/client-sns';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSqsHandler, fromAttribute } from '../../lambda';
import { ENV, OUTBOX_ENV } from '../../lambda/core/contract';
import { marker } from '../../lambda/modes/marker';
import { createOutboxRelay, createOutboxWriter, IDEMPOTENCY_KEY_ATTRIBUTE } from '../../lambda/outbox';
import { toSqsRecord } from '../../lambda/worker';
import { readTableStream } from '../../scripts/support/stream-reader';
import { uniqueName } from '../support/aws';
import { captureLogger, createLocalResources, lambdaContext, receiveMessages } from '../support/fixtures';
import { createStreamTable } from '../support/stream-fixtures';
import { subscribeQueueRaw } from '../support/topic-to-queue';

const local = createLocalResources();
const admin = local.dynamoDbClient();
const client = local.documentClient();
const streams = new DynamoDBStreamsClient(local.aws);
const runId = randomBytes(3).toString('hex');
const inboxTable = uniqueName('eo-fair-inbox');
const outboxTable = uniqueName('eo-fair-outbox');
const topicOutboxTable = uniqueName('eo-fair-topic-outbox');
const sns = new SNSClient(local.aws);

beforeAll(async () => {
  await local.createTable(inboxTable);
});

afterAll(async () => {
  for (const TableName of [outboxTable, topicOutboxTable]) {
    await admin.send(new DeleteTableCommand({ TableName })).catch(() => undefined);
  }
  streams.destroy();
  sns.destroy();
  await local.dispose();
});

/**
 * Runs the relay, configured by `destination` as the construct configures it, over the records
 * of the outbox table's stream, checks it published them all without a log line, and receives
 * `count` messages from the queue: returns them, and each event's group id by event id.
 */
async function relayAndReceive(
  destination: Record<string, string>,
  streamArn: string,
  queueUrl: string,
  count: number,
) {
  const logger = captureLogger();
  const relay = createOutboxRelay({
    environment: {
      ...destination,
      [OUTBOX_ENV.destinationFifo]: 'false',
      [OUTBOX_ENV.destinationFair]: 'true',
      [ENV.consumer]: 'order-events-relay',
    },
    metrics: false,
    logger,
  });
  const records = await readTableStream(streams, streamArn);
  expect(records.map((record) => record.eventName)).toEqual(Array(count).fill('INSERT'));
  expect({ response: await relay({ Records: records }), logs: logger.entries }).toEqual({
    response: { batchItemFailures: [] },
    logs: [],
  });
  const received = await receiveMessages(local, queueUrl, count);
  const groupOf = (id: string | undefined) =>
    received.find((message) => message.MessageAttributes?.[IDEMPOTENCY_KEY_ATTRIBUTE]?.StringValue === id)
      ?.Attributes?.MessageGroupId;
  return { received, groupOf };
}

/** The API's outbox writer, told the destination (a queue or a topic) feeds fair queues. */
const fairWriter = (tableName: string, destinationKind: 'sqs' | 'sns') =>
  createOutboxWriter({ client, tableName, producer: 'orders-api', destinationKind, destinationFair: true });

describe('the relay publishing to a fair queue on the emulator', () => {
  it("sends each event's entity, else its type, as MessageGroupId, which the receiving consumer's records carry", async () => {
    const queue = await local.createQueue('eo-fair-tenants');
    const streamArn = await createStreamTable(admin, outboxTable);
    const writer = fairWriter(outboxTable, 'sqs');
    const [tenantA, tenantB] = [`tenant-a-${runId}`, `tenant-b-${runId}`];

    const written = await writer.write(
      [
        { type: 'OrderPlaced', detail: { orderId: 'o-1' }, entity: tenantA, name: 'o-1' },
        { type: 'OrderPlaced', detail: { orderId: 'o-2' }, entity: tenantA, name: 'o-2' },
        { type: 'OrderPlaced', detail: { orderId: 'o-3' }, entity: tenantB, name: 'o-3' },
        { type: 'StockLow', detail: { sku: 'sku-1' } },
      ],
      [],
      `request-${runId}`,
    );
    expect(written.kind).toBe('written');
    // An entity SQS refuses as a group id (a space) is refused before the commit.
    await expect(
      writer.write([{ type: 'OrderPlaced', detail: {}, entity: 'tenant c' }], [], `refused-${runId}`),
    ).rejects.toMatchObject({ code: 'VALIDATION' });

    const { received, groupOf } = await relayAndReceive(
      { [OUTBOX_ENV.destinationKind]: 'sqs', [OUTBOX_ENV.destinationQueueUrl]: queue.url },
      streamArn,
      queue.url,
      4,
    );
    // MiniStack keeps a standard queue's MessageGroupId and returns it, as SQS does for a fair queue.
    expect(written.ids.map(groupOf)).toEqual([tenantA, tenantA, tenantB, 'StockLow']);
    expect(received.every((message) => message.Attributes?.MessageDeduplicationId === undefined)).toBe(true);

    // The receiving consumer, marked fair (per-group metrics), keyed on the event id: each
    // record's `attributes.MessageGroupId` is its tenant, the message's `groupId`.
    const seen: { orderId?: string; sku?: string; groupId: string | undefined }[] = [];
    const consumer = createSqsHandler<{ orderId?: string; sku?: string }>({
      consumer: 'tenant-orders',
      client,
      tableName: inboxTable,
      environment: {},
      dedupKey: fromAttribute(IDEMPOTENCY_KEY_ATTRIBUTE),
      mode: marker((message) => {
        seen.push({ ...message.body, groupId: message.groupId });
      }),
      groupMetrics: { maxGroups: 10 },
      logLevel: 'silent',
      metrics: false,
    });
    const lambdaRecords = received.map((message) =>
      toSqsRecord(message, { eventSourceARN: queue.arn, awsRegion: local.aws.region }),
    );
    expect(lambdaRecords.map((record) => record.attributes.MessageGroupId).sort()).toEqual(
      [tenantA, tenantA, tenantB, 'StockLow'].sort(),
    );
    expect(await consumer({ Records: lambdaRecords }, lambdaContext('tenant-orders'))).toEqual({
      batchItemFailures: [],
    });
    expect(seen.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))).toEqual([
      { orderId: 'o-1', groupId: tenantA },
      { orderId: 'o-2', groupId: tenantA },
      { orderId: 'o-3', groupId: tenantB },
      { sku: 'sku-1', groupId: 'StockLow' },
    ]);
  });

  it('publishes the same group ids through a standard topic feeding fair queues, which its SQS subscription receives', async () => {
    const queue = await local.createQueue('eo-fair-topic-tenants');
    const { TopicArn } = await sns.send(new CreateTopicCommand({ Name: uniqueName('eo-fair-topic') }));
    try {
      await subscribeQueueRaw(sns, TopicArn!, queue.arn);
      const streamArn = await createStreamTable(admin, topicOutboxTable);
      const writer = fairWriter(topicOutboxTable, 'sns');
      const tenant = `tenant-a-${runId}`;
      const written = await writer.write(
        [
          { type: 'OrderPlaced', detail: { orderId: 'o-1' }, entity: tenant },
          { type: 'StockLow', detail: { sku: 'sku-1' } },
        ],
        [],
        `topic-request-${runId}`,
      );
      expect(written.kind).toBe('written');
      // SNS takes a standard topic's group id under the FIFO rule: the writer refuses a space.
      await expect(
        writer.write([{ type: 'OrderPlaced', detail: {}, entity: 'tenant c' }], [], `topic-refused-${runId}`),
      ).rejects.toMatchObject({ code: 'VALIDATION' });

      const { groupOf } = await relayAndReceive(
        { [OUTBOX_ENV.destinationKind]: 'sns', [OUTBOX_ENV.destinationArn]: TopicArn! },
        streamArn,
        queue.url,
        2,
      );
      expect(written.ids.map(groupOf)).toEqual([tenant, 'StockLow']);
    } finally {
      await sns.send(new DeleteTopicCommand({ TopicArn })).catch(() => undefined);
    }
  });
});
