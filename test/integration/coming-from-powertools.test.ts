/**
 * The switch from Powertools idempotency to effectively-once, on the local emulator with the real
 * Powertools packages (docs/coming-from-powertools.md): the Powertools consumer processes an order,
 * then the switch consumer (which reads the Powertools records through Powertools' own
 * persistence layer) meets the same order again and commits only its marker, processes an order
 * Powertools never saw, retries one Powertools holds in progress, and dead-letters an order id
 * reused with another amount. The samples are the page's own files.
 */
import { randomBytes } from 'node:crypto';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqsEvent } from '../../lambda';
import { createOrderHandler } from '../samples/coming-from-powertools/effectively-once-handler';
import {
  createPowertoolsHandler,
  POWERTOOLS_KEY_PREFIX,
  powertoolsConfig,
} from '../samples/coming-from-powertools/powertools-handler';
import { createSwitchHandler } from '../samples/coming-from-powertools/switch-handler';
import { uniqueName } from '../support/aws';
import { createLocalResources, lambdaContext, sqsEvent, sqsRecord } from '../support/fixtures';

const local = createLocalResources();
const run = randomBytes(3).toString('hex');
const tables = {
  idempotencyTable: uniqueName('eo-pt-idempotency'),
  inboxTable: uniqueName('eo-pt-inbox'),
  ordersTable: uniqueName('eo-pt-orders'),
};
const client = local.dynamoDbClient();
const documentClient = local.documentClient();
const settings = { client, documentClient, ...tables };
/** The event as `@types/aws-lambda` types it for Powertools' batch processor: a mutable list. */
const mutable = (event: SqsEvent) => ({ Records: [...event.Records] });
const powertoolsContext = { getRemainingTimeInMillis: () => 60_000 };
const order = (suffix: string, amount: number) => ({ orderId: `order-${run}-${suffix}`, amount });

beforeAll(async () => {
  await local.createTable(tables.idempotencyTable, ['id']);
  await local.createTable(tables.inboxTable);
  await local.createTable(tables.ordersTable);
});

afterAll(() => local.dispose());

describe('switching from Powertools idempotency', () => {
  it('keeps the records apart: Powertools under `id` in its table, effectively-once under `pk` in the inbox', async () => {
    const first = order('a', 10);
    const powertools = createPowertoolsHandler(settings);
    expect(await powertools(mutable(sqsEvent(sqsRecord('m-a1', first))), powertoolsContext)).toEqual({
      batchItemFailures: [],
    });

    const [record] = await local.scanItems(tables.idempotencyTable);
    expect(record).toMatchObject({
      status: 'COMPLETED',
      id: expect.stringMatching(`^${POWERTOOLS_KEY_PREFIX}#`),
    });
    expect(await local.scanItems(tables.inboxTable)).toEqual([]);
  });

  it('commits only the marker for an order Powertools completed, and processes one it never saw', async () => {
    const seen = order('b', 20);
    const unseen = order('c', 30);
    const powertools = createPowertoolsHandler(settings);
    await powertools(mutable(sqsEvent(sqsRecord('m-b1', seen))), powertoolsContext);
    // Mark the order Powertools wrote, to see whether the switch writes it again.
    await documentClient.send(
      new PutCommand({
        TableName: tables.ordersTable,
        Item: { pk: seen.orderId, amount: 20, by: 'powertools' },
      }),
    );

    const switched = createSwitchHandler(settings);
    expect(
      await switched(sqsEvent(sqsRecord('m-b2', seen), sqsRecord('m-c1', unseen)), lambdaContext()),
    ).toEqual({ batchItemFailures: [] });

    expect(await local.readItem(tables.ordersTable, { pk: seen.orderId })).toEqual({
      pk: seen.orderId,
      amount: 20,
      by: 'powertools',
    });
    expect(await local.readItem(tables.ordersTable, { pk: unseen.orderId })).toEqual({
      pk: unseen.orderId,
      amount: 30,
    });
    expect(await local.readItem(tables.inboxTable, { pk: `orders#${seen.orderId}` })).toMatchObject({
      status: 'COMPLETED',
    });
    expect(await local.readItem(tables.inboxTable, { pk: `orders#${unseen.orderId}` })).toMatchObject({
      status: 'COMPLETED',
    });
  });

  it('retries an order Powertools holds in progress, and dead-letters an order id reused with another amount', async () => {
    const running = order('d', 40);
    const powertools = createPowertoolsHandler(settings);
    const reused = order('e', 50);
    await powertools(mutable(sqsEvent(sqsRecord('m-e1', reused))), powertoolsContext);
    // What a Powertools invocation cut off by the deploy leaves: its in-progress record, written by
    // Powertools' own persistence layer configured as the Powertools consumer is.
    const cutOff = new DynamoDBPersistenceLayer({
      tableName: tables.idempotencyTable,
      awsSdkV3Client: client,
    });
    cutOff.configure({ config: powertoolsConfig(), keyPrefix: POWERTOOLS_KEY_PREFIX });
    await cutOff.saveInProgress(running, 60_000);

    const switched = createSwitchHandler(settings);
    expect(
      await switched(
        sqsEvent(sqsRecord('m-d1', running), sqsRecord('m-e2', { ...reused, amount: 51 })),
        lambdaContext(),
      ),
    ).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-d1' }, { itemIdentifier: 'm-e2' }] });
    expect(await local.readItem(tables.ordersTable, { pk: running.orderId })).toBeUndefined();
  });

  it('needs nothing of Powertools once its records have expired: the plain consumer is a duplicate-safe drop-in', async () => {
    const later = order('f', 60);
    const handler = createOrderHandler(settings);
    const event = sqsEvent(sqsRecord('m-f1', later));
    expect(await handler(event, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(await handler(sqsEvent(sqsRecord('m-f2', later)), lambdaContext())).toEqual({
      batchItemFailures: [],
    });
    expect(await local.readItem(tables.ordersTable, { pk: later.orderId })).toEqual({
      pk: later.orderId,
      amount: 60,
    });
  });
});
