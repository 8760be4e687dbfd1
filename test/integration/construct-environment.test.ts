/**
 * A handler as a user writes it in a function `IdempotentConsumer` deployed: only `dedupKey`,
 * `mode` and `handle`. Everything else comes from the `EO_*` variables the construct sets
 * (here a direct dead-letter mode with its queue, a record TTL, the consumer name, a metric
 * namespace and a log level; the completed-record cache), and the SDK clients are the defaults,
 * which reach the local endpoint through `AWS_ENDPOINT_URL` as they would inside the emulator's
 * Lambda.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createSqsHandler, fromBody, type Message, PermanentError, type UnitOfWork } from '../../lambda';
import { defaultDocumentClient } from '../../lambda/construct-environment';
import { atomic } from '../../lambda/modes/atomic';
import { marker } from '../../lambda/modes/marker';
import { localAwsEnv } from '../../scripts/local-aws/harness';
import { uniqueName } from '../support/aws';
import { createLocalResources, lambdaContext, sqsRecord } from '../support/fixtures';
import { attachRequestCounter } from '../support/request-counter';

const local = createLocalResources();
const inboxTable = uniqueName('eo-env-inbox');
const ordersTable = uniqueName('eo-env-orders');
const consumer = `billing-${randomUUID().slice(0, 8)}`;
const TTL_SECONDS = 7200;

interface Order {
  readonly orderId: string;
  readonly amount: number;
}

/** The stdout lines of the default logger and metrics sink. */
const lines: string[] = [];

beforeAll(async () => {
  await local.createTable(inboxTable);
  await local.createTable(ordersTable);
  // As in the emulator's Lambda: unconfigured SDK clients reach the local endpoint.
  for (const [name, value] of Object.entries(localAwsEnv(local.aws))) vi.stubEnv(name, value);
});

afterAll(async () => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
  await local.dispose();
});

describe('a handler in a function the construct configured', () => {
  it('takes the consumer, TTL, dead letters, metric namespace and log level from the EO_* variables', async () => {
    const deadLetters = await local.createQueue('eo-env-dlq');
    const environment = {
      EO_CONSUMER: consumer,
      EO_INBOX_TABLE: inboxTable,
      EO_TTL_SECONDS: String(TTL_SECONDS),
      EO_DEAD_LETTER_MODE: 'direct',
      EO_DEAD_LETTER_QUEUE_URL: deadLetters.url,
      EO_LEASE_MILLIS: '30000',
      EO_METRIC_NAMESPACE: 'ShopLocal',
      EO_LOG_LEVEL: 'warn',
    };
    const handler = createSqsHandler<Order>({
      dedupKey: fromBody('orderId'),
      mode: atomic((message: Message<Order>, unitOfWork: UnitOfWork) => {
        if (message.body.amount < 0) throw new PermanentError('An order amount cannot be negative');
        unitOfWork.put({
          TableName: ordersTable,
          Item: { pk: message.body.orderId, amount: message.body.amount },
        });
      }),
      environment,
    });
    const order = { orderId: `o-${randomUUID()}`, amount: 1250 };
    const poison = sqsRecord(randomUUID(), { orderId: `o-${randomUUID()}`, amount: -5 });
    vi.spyOn(process.stdout, 'write').mockImplementation((line) => {
      lines.push(String(line).trim());
      return true;
    });

    const before = Math.floor(Date.now() / 1000);
    const response = await handler(
      { Records: [sqsRecord(randomUUID(), order), sqsRecord(randomUUID(), order), poison] },
      lambdaContext(),
    );
    const after = Math.ceil(Date.now() / 1000);
    vi.mocked(process.stdout.write).mockRestore();

    expect(response).toEqual({ batchItemFailures: [] });
    expect(await local.readItem(ordersTable, { pk: order.orderId })).toEqual({
      pk: order.orderId,
      amount: 1250,
    });
    const record = await local.readItem(inboxTable, { pk: `${consumer}#${order.orderId}` });
    expect(record).toMatchObject({ consumer, status: 'COMPLETED' });
    expect(record?.expiresAt).toBeGreaterThanOrEqual(before + TTL_SECONDS);
    expect(record?.expiresAt).toBeLessThanOrEqual(after + TTL_SECONDS);

    const deadLettered = await local.receive(deadLetters.url);
    expect(
      deadLettered.map(({ Body, MessageAttributes = {} }) => ({
        Body,
        reason: MessageAttributes['eo-reason']?.StringValue,
        code: MessageAttributes['eo-code']?.StringValue,
        consumer: MessageAttributes['eo-consumer']?.StringValue,
        sourceMessageId: MessageAttributes['eo-source-message-id']?.StringValue,
      })),
    ).toEqual([
      {
        Body: poison.body,
        reason: 'An order amount cannot be negative',
        code: 'PERMANENT',
        consumer,
        sourceMessageId: poison.messageId,
      },
    ]);

    const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const metrics = parsed.filter((line) => '_aws' in line);
    const logs = parsed.filter((line) => !('_aws' in line));
    expect(metrics).toEqual([
      expect.objectContaining({
        _aws: expect.objectContaining({
          CloudWatchMetrics: [
            expect.objectContaining({ Namespace: 'ShopLocal', Dimensions: [['Consumer']] }),
          ],
        }),
        Consumer: consumer,
        Processed: 1,
        Duplicate: 1,
        Permanent: 1,
      }),
    ]);
    // At `warn`, only the dead letter is logged (`error`); the duplicate (`info`) is not.
    expect(logs.map((line) => [line.level, line.consumer, line.code, line.deadLetter])).toEqual([
      ['error', consumer, 'PERMANENT', 'sent'],
    ]);
  });

  it('turns the completed-record cache on from EO_COMPLETED_CACHE_MAX_ENTRIES: a warm duplicate makes no request', async () => {
    const environment = {
      EO_CONSUMER: `${consumer}-cache`,
      EO_INBOX_TABLE: inboxTable,
      EO_COMPLETED_CACHE_MAX_ENTRIES: '100',
      EO_LOG_LEVEL: 'silent',
    };
    const ran: string[] = [];
    const handler = createSqsHandler<Order>({
      dedupKey: fromBody('orderId'),
      mode: marker((message: Message<Order>) => {
        ran.push(message.messageId);
      }),
      metrics: false,
      environment,
    });
    // The handler's client is the default one of the cold start: count what it sends.
    const counter = attachRequestCounter(defaultDocumentClient());
    const order = { orderId: `o-${randomUUID()}`, amount: 10 };
    try {
      await handler({ Records: [sqsRecord('m-1', order)] }, lambdaContext());
      const first = counter.counts();
      counter.reset();

      const response = await handler({ Records: [sqsRecord('m-2', order)] }, lambdaContext());

      expect({ first, duplicate: counter.counts(), response, ran }).toEqual({
        first: { PutItem: 1 },
        duplicate: {},
        response: { batchItemFailures: [] },
        ran: ['m-1'],
      });
    } finally {
      counter.detach();
    }
  });
});
