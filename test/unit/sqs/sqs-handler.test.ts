import middy from '@middy/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createSqsMiddleware } from '../../../lambda/middleware/sqs-middleware';
import { entity } from '../../../lambda/modes/entity';
import type { SqsEvent } from '../../../lambda/sqs/sqs-event';
import { createSqsHandler } from '../../../lambda/sqs/sqs-handler';
import { outcomeHandlerOptions as options, sqsEvent, sqsRecord, T0 } from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';

const batch: SqsEvent = sqsEvent(
  sqsRecord('m-1', { id: 'o-1' }, { groupId: 'g-1' }),
  sqsRecord('m-2', { id: 'o-2', outcome: 'throw' }, { groupId: 'g-2' }),
  sqsRecord('m-3', { id: 'o-3' }, { groupId: 'g-2' }),
  sqsRecord('m-4', { id: 'o-1' }, { groupId: 'g-3' }),
  sqsRecord('m-5', { outcome: 'ok' }, { groupId: 'g-4' }),
  sqsRecord('m-6', { id: 'o-6', outcome: 'permanent' }, { groupId: 'g-5' }),
);
const context = { awsRequestId: 'req-1', getRemainingTimeInMillis: () => 60_000 };

afterEach(() => {
  vi.useRealTimers();
});

describe('createSqsHandler', () => {
  it('returns a Lambda SQS handler that answers with the partial batch response', async () => {
    const handler = createSqsHandler(options());

    expect(await handler(batch, context)).toEqual({
      batchItemFailures: [
        { itemIdentifier: 'm-2' },
        { itemIdentifier: 'm-3' },
        { itemIdentifier: 'm-5' },
        { itemIdentifier: 'm-6' },
      ],
    });
  });

  it('stamps inbox records with the system clock unless a clock is given', async () => {
    vi.useFakeTimers({ now: T0 + 5000, toFake: ['Date'] });
    const store = createMemoryStore();
    const handler = createSqsHandler(options({ store, clock: undefined }));

    await handler(sqsEvent(sqsRecord('m-1', { id: 'o-1' })));

    expect(store.items('inbox')[0]).toMatchObject({
      committedAt: T0 + 5000,
      expiresAt: Math.floor(T0 / 1000) + 5 + 1_296_000,
    });
  });

  it('builds the DynamoDB store from the document client and table name when no store is given', async () => {
    const sent: { constructor: { name: string }; input: Record<string, unknown> }[] = [];
    const client = { send: async (command: (typeof sent)[number]) => void sent.push(command) };
    const handler = createSqsHandler(
      options({ store: undefined, client: client as never, tableName: 'inbox' }),
    );

    expect(await handler(sqsEvent(sqsRecord('m-1', { id: 'o-1' })))).toEqual({ batchItemFailures: [] });
    expect(sent).toHaveLength(1);
    expect(sent[0]?.constructor.name).toBe('PutCommand');
    expect(sent[0]?.input).toMatchObject({
      TableName: 'inbox',
      Item: { pk: 'orders#o-1', status: 'COMPLETED' },
    });
  });

  it('needs no inbox table in entity mode, and fails at cold start without one in the other modes', async () => {
    const sent: { input: Record<string, unknown> }[] = [];
    const client = { send: async (command: (typeof sent)[number]) => void sent.push(command) };
    const entityHandler = createSqsHandler<{ id: string }>({
      consumer: 'audit',
      client: client as never,
      dedupKey: (record) => JSON.parse(record.body).id,
      mode: entity((message) => ({
        tableName: 'Audit',
        keyAttribute: 'pk',
        item: { pk: message.scopedKey },
      })),
      logLevel: 'silent',
      metrics: false,
    });

    expect(await entityHandler(sqsEvent(sqsRecord('m-1', { id: 'o-1' })))).toEqual({ batchItemFailures: [] });
    expect(sent.map((command) => command.input.TableName)).toEqual(['Audit']);
    expect(() => createSqsHandler(options({ store: undefined, client: client as never }))).toThrow(
      expect.objectContaining({ code: 'INVALID_OPTIONS', message: expect.stringContaining('`tableName`') }),
    );
  });

  it('fails at cold start without a store or a table name (the document client has a default)', () => {
    expect(() => createSqsHandler(options({ store: undefined, environment: {} }))).toThrow(
      'Expected `tableName` to be a non-empty string, got `undefined`',
    );
    expect(() => createSqsHandler(options({ ttlSeconds: -1 }))).toThrow(
      'Expected `ttlSeconds` to be a positive integer, got `-1`',
    );
  });
});

describe('createSqsMiddleware', () => {
  it('gives the same batch response as createSqsHandler for the same batch', async () => {
    const direct = createSqsHandler(options());
    const wrapped = middy<SqsEvent>().use(createSqsMiddleware(options()));

    const expected = await direct(batch, context);
    expect(await wrapped(batch, context as never)).toEqual(expected);
    expect(expected.batchItemFailures).toHaveLength(4);
  });

  it('answers early, so the base handler never runs', async () => {
    const base = vi.fn(async () => ({ batchItemFailures: [{ itemIdentifier: 'wrong' }] }));
    const wrapped = middy<SqsEvent>().use(createSqsMiddleware(options())).handler(base);

    expect(await wrapped(sqsEvent(sqsRecord('m-1', { id: 'o-1' })), context as never)).toEqual({
      batchItemFailures: [],
    });
    expect(base).not.toHaveBeenCalled();
  });

  it('runs after the middlewares registered before it', async () => {
    const seen: string[] = [];
    const wrapped = middy<SqsEvent>()
      .use({ before: async () => void seen.push('first') })
      .use(
        createSqsMiddleware(
          options({
            handle: () => {
              seen.push('handle');
            },
          }),
        ),
      );

    await wrapped(sqsEvent(sqsRecord('m-1', { id: 'o-1' })), context as never);
    expect(seen).toEqual(['first', 'handle']);
  });
});
