/**
 * Runtime regressions found by the reliability suite, replayed against `createSqsHandler` and the
 * DynamoDB store on the local endpoint:
 *
 * - marker mode: the response to the marker put is lost and the SDK retries the put; the retry
 *   meets the claim's own marker (its owner token), and the effect runs once;
 * - two-phase: an effect that happened but whose answer was lost releases its claim keeping the
 *   payload's fingerprint (one `UpdateItem`), so another payload reusing the key is dead-lettered
 *   as a mismatch, and the first payload's retry takes the released claim in one request.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromBody } from '../../lambda/core/dedup-key';
import { fingerprintOf } from '../../lambda/core/fingerprint';
import type { DeadLetterMessage } from '../../lambda/dead-letter/dead-letter-message';
import { marker } from '../../lambda/modes/marker';
import { twoPhase } from '../../lambda/modes/two-phase';
import type { SqsHandlerOptions } from '../../lambda/sqs/sqs-handler';
import { createSqsHandler } from '../../lambda/sqs/sqs-handler';
import { uniqueName } from '../support/aws';
import { captureMetrics, counts, createLocalResources, sqsEvent, sqsRecord } from '../support/fixtures';
import { attachRequestCounter } from '../support/request-counter';

interface Payment {
  readonly id: string;
  readonly amount: number;
}

const local = createLocalResources();
const inboxTable = uniqueName('eo-runtime-regressions');

/** A document client on the local endpoint; `loseFirst` loses the first response to that operation. */
function newClient(options: { readonly maxAttempts?: number; readonly loseFirst?: string } = {}) {
  const client = local.documentClient({ maxAttempts: options.maxAttempts ?? 1 });
  let lose = options.loseFirst !== undefined;
  // Inside the SDK's retry loop, next to the transport: the request reaches DynamoDB and is
  // applied, then its answer is replaced by a connection reset, which the SDK retries.
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      if (lose && context.commandName === `${options.loseFirst}Command`) {
        lose = false;
        throw Object.assign(new Error('socket hang up (the response was lost)'), { code: 'ECONNRESET' });
      }
      return result;
    },
    { step: 'deserialize', priority: 'low', name: 'loseResponse' },
  );
  return client;
}

const readItem = (pk: string) => local.readItem(inboxTable, { pk });

beforeAll(() => local.createTable(inboxTable));

afterAll(() => local.dispose());

const now = Date.now();

function handlerOptions(client: DynamoDBDocumentClient) {
  const metrics = captureMetrics();
  const deadLetters: DeadLetterMessage[] = [];
  const common = {
    consumer: uniqueName('regressions'),
    client,
    tableName: inboxTable,
    clock: () => now,
    ttlSeconds: 3600,
    dedupKey: fromBody<Payment>((body) => body.id),
    logLevel: 'silent',
    metrics,
    deadLetter: 'direct',
    deadLetterSender: { send: async (message: DeadLetterMessage) => void deadLetters.push(message) },
  } satisfies Partial<SqsHandlerOptions<Payment>>;
  return { common, metrics, deadLetters };
}

describe('marker mode: a lost response to the marker put, retried by the SDK', () => {
  it('runs the effect once: the retry meets the marker carrying its own owner token', async () => {
    const client = newClient({ maxAttempts: 3, loseFirst: 'PutItem' });
    const counter = attachRequestCounter(client);
    const { common, metrics } = handlerOptions(client);
    const performed: number[] = [];
    const handler = createSqsHandler<Payment>({
      ...common,
      mode: marker((message) => void performed.push(message.body.amount)),
    });
    const record = sqsRecord('m-lost', { id: 'lost-marker', amount: 1 });

    expect(await handler(sqsEvent(record))).toEqual({ batchItemFailures: [] });
    expect(counter.counts()).toEqual({ PutItem: 2 });
    expect(await handler(sqsEvent(sqsRecord('m-again', { id: 'lost-marker', amount: 1 })))).toEqual({
      batchItemFailures: [],
    });

    expect(performed).toEqual([1]);
    expect(metrics.published.map((published) => published.counts)).toEqual([
      counts({ processed: 1 }),
      counts({ duplicate: 1 }),
    ]);
    expect(await readItem(`${common.consumer}#lost-marker`)).toMatchObject({
      status: 'COMPLETED',
      owner: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
  });
});

describe('two-phase: a key reused with another payload after the first effect’s answer was lost', () => {
  it('dead-letters the other payload as a mismatch and completes the first on its retry, the effect run with the first payload only', async () => {
    const client = newClient();
    const counter = attachRequestCounter(client);
    const { common, metrics, deadLetters } = handlerOptions(client);
    const performed: number[] = [];
    let lostAnswers = 1;
    const handler = createSqsHandler<Payment>({
      ...common,
      mode: twoPhase({
        handle: (message, effects) =>
          effects.run(() => {
            performed.push(message.body.amount);
            if (lostAnswers-- > 0) throw new Error('downstream timed out after applying the effect');
          }),
        leaseMillis: 30_000,
      }),
    });
    const pk = `${common.consumer}#reused`;
    const first = sqsRecord('m-first', { id: 'reused', amount: 1 });

    expect(await handler(sqsEvent(first))).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-first' }] });
    expect(counter.counts()).toEqual({ PutItem: 1, UpdateItem: 1 });
    expect(await readItem(pk)).toMatchObject({
      status: 'IN_PROGRESS',
      fingerprint: fingerprintOf({ id: 'reused', amount: 1 }),
      leaseExpiresAt: 0,
    });

    expect(await handler(sqsEvent(sqsRecord('m-other', { id: 'reused', amount: 2 })))).toEqual({
      batchItemFailures: [],
    });
    counter.reset();
    expect(await handler(sqsEvent(first))).toEqual({ batchItemFailures: [] });
    // The released claim is taken in one request, as a first claim: no takeover.
    expect(counter.counts()).toEqual({ PutItem: 1, UpdateItem: 1 });

    expect(performed).toEqual([1, 1]);
    expect(deadLetters.map((letter) => [letter.sourceMessageId, letter.code])).toEqual([
      ['m-other', 'PAYLOAD_MISMATCH'],
    ]);
    expect(metrics.published.map((published) => published.counts)).toEqual([
      counts({ retry: 1 }),
      counts({ mismatch: 1 }),
      counts({ processed: 1 }),
    ]);
    expect(await readItem(pk)).toMatchObject({
      status: 'COMPLETED',
      fingerprint: fingerprintOf({ id: 'reused', amount: 1 }),
    });
  });
});
