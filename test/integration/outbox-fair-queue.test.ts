/**
 * The relay publishing to a fair queue on the emulator, configured as the `Outbox` construct
 * configures it with `fairQueue: true` (`EO_OUTBOX_DESTINATION_FAIR`, the SQS client the relay
 * creates itself, which sends through the SQS conformance layer): events written by a writer told
 * the queue is fair, read from the outbox table's real stream, reach a standard queue with each
 * event's entity (else its type) as `MessageGroupId`, and the receiving consumer's records carry
 * it in `attributes.MessageGroupId`, its tenant. An entity SQS would refuse as a group id is
 * refused by the writer, nothing written.
 */
import { randomBytes } from 'node:crypto';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
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

const local = createLocalResources();
const admin = local.dynamoDbClient();
const client = local.documentClient();
const streams = new DynamoDBStreamsClient(local.aws);
const runId = randomBytes(3).toString('hex');
const inboxTable = uniqueName('eo-fair-inbox');
const outboxTable = uniqueName('eo-fair-outbox');

beforeAll(async () => {
  await local.createTable(inboxTable);
});

afterAll(async () => {
  await admin.send(new DeleteTableCommand({ TableName: outboxTable })).catch(() => undefined);
  streams.destroy();
  await local.dispose();
});

describe('the relay publishing to a fair queue on the emulator', () => {
  it("sends each event's entity, else its type, as MessageGroupId, which the receiving consumer's records carry", async () => {
    const queue = await local.createQueue('eo-fair-tenants');
    const streamArn = await createStreamTable(admin, outboxTable);
    const writer = createOutboxWriter({
      client,
      tableName: outboxTable,
      producer: 'orders-api',
      destinationKind: 'sqs',
      destinationFair: true,
    });
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

    const logger = captureLogger();
    const relay = createOutboxRelay({
      environment: {
        [OUTBOX_ENV.destinationKind]: 'sqs',
        [OUTBOX_ENV.destinationQueueUrl]: queue.url,
        [OUTBOX_ENV.destinationFifo]: 'false',
        [OUTBOX_ENV.destinationFair]: 'true',
        [ENV.consumer]: 'order-events-relay',
      },
      metrics: false,
      logger,
    });
    const records = await readTableStream(streams, streamArn);
    expect(records.map((record) => record.eventName)).toEqual(['INSERT', 'INSERT', 'INSERT', 'INSERT']);
    expect({ response: await relay({ Records: records }), logs: logger.entries }).toEqual({
      response: { batchItemFailures: [] },
      logs: [],
    });

    const received = await receiveMessages(local, queue.url, 4);
    const groupOf = (id: string | undefined) =>
      received.find((message) => message.MessageAttributes?.[IDEMPOTENCY_KEY_ATTRIBUTE]?.StringValue === id)
        ?.Attributes?.MessageGroupId;
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
});
