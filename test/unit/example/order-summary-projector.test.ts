/**
 * The example's stream consumer over the memory store: Orders changes counted into one summary
 * per status, committed with the inbox record, so a change delivered again (a retry from the
 * checkpoint, a re-read from TRIM_HORIZON with new event ids) changes nothing.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createDynamoDbStreamHandler, type DynamoDbStreamRecord } from '../../../lambda/streams';
import { captureLogger, lambdaContext, T0 } from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';
import { captureDeadLetters, dynamoDbStreamRecord } from '../../support/stream-fixtures';

const environment = {
  EO_INBOX_TABLE: 'inbox',
  EO_CONSUMER: 'order-summary-projector',
  EO_TTL_SECONDS: '86400',
  EO_DEAD_LETTER_MODE: 'direct',
  EO_DEAD_LETTER_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/order-summary-projector-dlq',
  ORDER_SUMMARIES_TABLE: 'OrderSummaries',
  AWS_REGION: 'us-east-1',
};

// The module builds its Lambda handler from process.env when imported.
beforeEach(() => {
  for (const [name, value] of Object.entries(environment)) vi.stubEnv(name, value);
});

afterEach(() => {
  vi.unstubAllEnvs();
});

async function setup() {
  const { orderSummaryProjectorDefinition } = await import('../../../lambda/example/order-summary-projector');
  const store = createMemoryStore({ keys: { OrderSummaries: ['pk'] } });
  const deadLetters = captureDeadLetters();
  const handler = createDynamoDbStreamHandler({
    ...orderSummaryProjectorDefinition(environment),
    store,
    clock: () => T0,
    deadLetterSender: deadLetters,
    logger: captureLogger(),
    metrics: false,
  });
  const run = (...records: DynamoDbStreamRecord[]) => handler({ Records: records }, lambdaContext());
  const summaries = () =>
    store
      .items('OrderSummaries')
      .map(({ pk, orders, amount }) => ({ pk, orders, amount }))
      .sort((a, b) => String(a.pk).localeCompare(String(b.pk)));
  return { run, store, deadLetters, summaries };
}

/** The order projector's writes, as stream records: a transition item inserted, the order item changed. */
const statusInserted = (sequenceNumber: string, orderId: string, status: string, amount: number) =>
  dynamoDbStreamRecord(sequenceNumber, {
    eventName: 'INSERT',
    keys: { pk: { S: `ORDER#${orderId}` }, sk: { S: `STATUS#${status}` } },
    newImage: {
      pk: { S: `ORDER#${orderId}` },
      sk: { S: `STATUS#${status}` },
      status: { S: status },
      amount: { N: String(amount) },
    },
  });
const orderChanged = (sequenceNumber: string, orderId: string, status: string, amount: number) =>
  dynamoDbStreamRecord(sequenceNumber, {
    eventName: 'MODIFY',
    keys: { pk: { S: `ORDER#${orderId}` }, sk: { S: 'ORDER' } },
    newImage: {
      pk: { S: `ORDER#${orderId}` },
      sk: { S: 'ORDER' },
      status: { S: status },
      amount: { N: String(amount) },
    },
  });

const stream = () => [
  statusInserted('1', 'o-1', 'PLACED', 4200),
  orderChanged('2', 'o-1', 'PLACED', 4200),
  statusInserted('3', 'o-2', 'PLACED', 1500),
  statusInserted('4', 'o-1', 'PAID', 4200),
  orderChanged('5', 'o-1', 'PAID', 4200),
];

describe('order summary projector', () => {
  it('counts each status transition item into its status summary, with the amounts, and records order item changes only', async () => {
    const { run, store, summaries } = await setup();

    expect(await run(...stream())).toEqual({ batchItemFailures: [] });

    expect(summaries()).toEqual([
      { pk: 'STATUS#PAID', orders: 1, amount: 4200 },
      { pk: 'STATUS#PLACED', orders: 2, amount: 5700 },
    ]);
    expect(store.items('inbox').map((record) => record.pk)).toEqual([
      'order-summary-projector#ORDER#o-1:STATUS#PLACED:INSERT:PLACED',
      'order-summary-projector#ORDER#o-1:ORDER:MODIFY:PLACED',
      'order-summary-projector#ORDER#o-2:STATUS#PLACED:INSERT:PLACED',
      'order-summary-projector#ORDER#o-1:STATUS#PAID:INSERT:PAID',
      'order-summary-projector#ORDER#o-1:ORDER:MODIFY:PAID',
    ]);
  });

  it('changes no counter when the whole stream is fed again with new event ids', async () => {
    const { run, summaries, deadLetters } = await setup();
    await run(...stream());
    const before = summaries();

    expect(await run(...stream())).toEqual({ batchItemFailures: [] });

    expect(summaries()).toEqual(before);
    expect(deadLetters.sent).toEqual([]);
  });

  it('takes a removed transition item away from its status summary', async () => {
    const { run, summaries } = await setup();
    const inserted = statusInserted('1', 'o-1', 'PLACED', 4200);

    await run(
      inserted,
      dynamoDbStreamRecord('2', {
        eventName: 'REMOVE',
        keys: inserted.dynamodb.Keys!,
        oldImage: inserted.dynamodb.NewImage!,
      }),
    );

    expect(summaries()).toEqual([{ pk: 'STATUS#PLACED', orders: 0, amount: 0 }]);
  });

  it('dead-letters a change without a status as MISSING_KEY and a transition item without an amount as permanent, and moves on', async () => {
    const { run, summaries, deadLetters } = await setup();

    const response = await run(
      dynamoDbStreamRecord('1', {
        eventName: 'INSERT',
        keys: { pk: { S: 'ORDER#o-9' }, sk: { S: 'ORDER' } },
        newImage: { pk: { S: 'ORDER#o-9' }, sk: { S: 'ORDER' } },
      }),
      dynamoDbStreamRecord('2', {
        eventName: 'INSERT',
        keys: { pk: { S: 'ORDER#o-9' }, sk: { S: 'STATUS#PLACED' } },
        newImage: { pk: { S: 'ORDER#o-9' }, sk: { S: 'STATUS#PLACED' }, status: { S: 'PLACED' } },
      }),
      statusInserted('3', 'o-1', 'PLACED', 4200),
    );

    expect(response).toEqual({ batchItemFailures: [] });
    expect(deadLetters.sent.map((message) => message.code)).toEqual(['MISSING_KEY', 'PERMANENT']);
    expect(summaries()).toEqual([{ pk: 'STATUS#PLACED', orders: 1, amount: 4200 }]);
  });

  it('fails the cold start without ORDER_SUMMARIES_TABLE, naming it', async () => {
    const { orderSummaryProjectorDefinition } = await import(
      '../../../lambda/example/order-summary-projector'
    );

    expect(() => orderSummaryProjectorDefinition({})).toThrow(
      'Expected environment variable `ORDER_SUMMARIES_TABLE` to be set, got `undefined`',
    );
  });
});
