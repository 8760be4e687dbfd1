/**
 * The HTTP `Idempotency-Key` wrapper over the DynamoDB store on the local endpoint: a retry gets
 * the stored response, a changed request 422, a retry during the first request 409 with
 * `Retry-After`, a crashed first request is taken over after its lease (injected clock), and a
 * key released after a failure stays bound to its request.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fingerprintOf } from '../../lambda/core/fingerprint';
import {
  type ApiGatewayProxyEventV1,
  type ApiGatewayProxyEventV2,
  createIdempotentHttpHandler,
  type HttpEvent,
} from '../../lambda/http';
import { uniqueName } from '../support/aws';
import { createLocalResources, manualClock } from '../support/fixtures';
import { attachRequestCounter } from '../support/request-counter';

const local = createLocalResources();
const client = local.documentClient();
const tableName = uniqueName('eo-http-inbox');
const runId = uniqueName('run');
let sequence = 0;
const newKey = () => `${runId}-${++sequence}`;

beforeAll(() => local.createTable(tableName));
afterAll(() => local.dispose());

const restEvent = (key: string, body: unknown): ApiGatewayProxyEventV1 => ({
  httpMethod: 'POST',
  path: '/payments',
  resource: '/payments',
  headers: { 'Idempotency-Key': key, 'Content-Type': 'application/json' },
  multiValueHeaders: { 'Idempotency-Key': [key], 'Content-Type': ['application/json'] },
  body: JSON.stringify(body),
  isBase64Encoded: false,
});

const urlEvent = (key: string, body: unknown): ApiGatewayProxyEventV2 => ({
  version: '2.0',
  routeKey: '$default',
  rawPath: '/payments',
  headers: { 'idempotency-key': key },
  body: JSON.stringify(body),
  isBase64Encoded: false,
  requestContext: { http: { method: 'POST' } },
});

function paymentsHandler<TEvent extends HttpEvent>(
  charge: (event: TEvent) => Promise<unknown>,
  clock = manualClock(Date.now()),
  handlerClient = client,
) {
  return createIdempotentHttpHandler<TEvent, unknown>({
    consumer: 'payments-api',
    client: handlerClient,
    tableName,
    clock,
    leaseMillis: 5_000,
    logLevel: 'silent',
    metrics: false,
    handle: charge,
  });
}

describe('createIdempotentHttpHandler with DynamoDB', () => {
  it('returns the stored response on a retry, without charging twice', async () => {
    let charges = 0;
    const handler = paymentsHandler<ApiGatewayProxyEventV1>(async (event) => {
      charges += 1;
      return {
        statusCode: 201,
        headers: { 'Content-Type': 'application/json', Location: `/payments/p-${charges}` },
        body: JSON.stringify({ id: `p-${charges}`, ...JSON.parse(event.body ?? '{}') }),
      };
    });
    const key = newKey();

    const first = await handler(restEvent(key, { amount: 5 }));
    const retry = await handler(restEvent(key, { amount: 5 }));

    expect(first).toEqual({
      statusCode: 201,
      headers: { 'Content-Type': 'application/json', Location: '/payments/p-1' },
      body: '{"id":"p-1","amount":5}',
    });
    expect(retry).toEqual({
      statusCode: 201,
      headers: {
        'Content-Type': 'application/json',
        Location: '/payments/p-1',
        'Idempotent-Replayed': 'true',
      },
      body: '{"id":"p-1","amount":5}',
      isBase64Encoded: false,
    });
    expect(charges).toBe(1);
    const { Item } = await client.send(
      new GetCommand({
        TableName: tableName,
        Key: { pk: `payments-api#POST /payments:${key}` },
        ConsistentRead: true,
      }),
    );
    expect(Item).toMatchObject({ status: 'COMPLETED', consumer: 'payments-api' });
  });

  it('answers 422 when the same key comes with a different request', async () => {
    let charges = 0;
    const handler = paymentsHandler<ApiGatewayProxyEventV2>(async () => {
      charges += 1;
      return { statusCode: 201, body: 'charged' };
    });
    const key = newKey();

    await handler(urlEvent(key, { amount: 5 }));
    const changed = await handler(urlEvent(key, { amount: 50 }));

    expect(changed).toMatchObject({
      statusCode: 422,
      headers: { 'Content-Type': 'application/problem+json' },
    });
    expect(charges).toBe(1);
  });

  it('answers 422 when the same key comes with another query string, and replays the same query in any parameter order', async () => {
    let charges = 0;
    const handler = paymentsHandler<ApiGatewayProxyEventV2>(async () => {
      charges += 1;
      return { statusCode: 201, body: 'charged' };
    });
    const key = newKey();
    const withQuery = (rawQueryString: string) => ({ ...urlEvent(key, { amount: 5 }), rawQueryString });

    await handler(withQuery('currency=EUR&split=1&split=2'));
    const reordered = await handler(withQuery('split=1&currency=EUR&split=2'));
    const otherCurrency = await handler(withQuery('currency=USD&split=1&split=2'));
    const swappedRepeats = await handler(withQuery('currency=EUR&split=2&split=1'));
    const noQuery = await handler(withQuery(''));

    expect(reordered).toMatchObject({ statusCode: 201, headers: { 'Idempotent-Replayed': 'true' } });
    expect([otherCurrency, swappedRepeats, noQuery]).toMatchObject([
      { statusCode: 422 },
      { statusCode: 422 },
      { statusCode: 422 },
    ]);
    expect(charges).toBe(1);
  });

  it('answers 422 to a REST request whose multi-value query parameters differ', async () => {
    let charges = 0;
    const handler = paymentsHandler<ApiGatewayProxyEventV1>(async () => {
      charges += 1;
      return { statusCode: 201, body: 'charged' };
    });
    const key = newKey();
    const withQuery = (values: string[]) => ({
      ...restEvent(key, { amount: 5 }),
      queryStringParameters: { to: values.at(-1)! },
      multiValueQueryStringParameters: { to: values },
    });

    await handler(withQuery(['acct-1', 'acct-2']));
    const retry = await handler(withQuery(['acct-1', 'acct-2']));
    const changed = await handler(withQuery(['acct-9', 'acct-2']));

    expect(retry).toMatchObject({ statusCode: 201, headers: { 'Idempotent-Replayed': 'true' } });
    expect(changed).toMatchObject({ statusCode: 422 });
    expect(charges).toBe(1);
  });

  it('answers 409 with Retry-After while the first request runs, and takes a crashed one over after its lease', async () => {
    const clock = manualClock(Date.now());
    let release!: () => void;
    const firstRunning = new Promise<void>((resolve) => {
      release = resolve;
    });
    let started!: () => void;
    const firstStarted = new Promise<void>((resolve) => {
      started = resolve;
    });
    let calls = 0;
    const handler = paymentsHandler<ApiGatewayProxyEventV1>(async () => {
      calls += 1;
      if (calls === 1) {
        started();
        await firstRunning;
        return { statusCode: 201, body: 'first' };
      }
      return { statusCode: 201, body: 'second' };
    }, clock);
    const key = newKey();

    const first = handler(restEvent(key, { amount: 5 }));
    await firstStarted;
    clock.advance(1_500);
    const during = await handler(restEvent(key, { amount: 5 }));
    // The first request is now considered crashed: its lease of 5 s has ended.
    clock.advance(4_000);
    const takeover = await handler(restEvent(key, { amount: 5 }));
    release();
    const late = await first;
    const replay = await handler(restEvent(key, { amount: 5 }));

    expect(during).toMatchObject({ statusCode: 409, headers: { 'Retry-After': '4' } });
    expect(takeover).toEqual({ statusCode: 201, body: 'second' });
    // The crashed request's own caller still gets its answer; only the takeover's is stored.
    expect(late).toEqual({ statusCode: 201, body: 'first' });
    expect(replay).toMatchObject({
      statusCode: 201,
      body: 'second',
      headers: { 'Idempotent-Replayed': 'true' },
    });
    expect(calls).toBe(2);
  });

  it('releases the key after a handler error so the retry runs', async () => {
    let calls = 0;
    const handler = paymentsHandler<ApiGatewayProxyEventV1>(async () => {
      calls += 1;
      if (calls === 1) throw new Error('provider down');
      return { statusCode: 201, body: 'charged' };
    });
    const key = newKey();

    await expect(handler(restEvent(key, { amount: 5 }))).rejects.toThrow('provider down');
    expect(await handler(restEvent(key, { amount: 5 }))).toEqual({ statusCode: 201, body: 'charged' });
    expect(calls).toBe(2);
  });

  it('keeps a released key bound to its request: a different request gets 422, the retry claims it in one request', async () => {
    const clock = manualClock(Date.now());
    const handlerClient = local.documentClient();
    const counter = attachRequestCounter(handlerClient);
    const charged: unknown[] = [];
    let fail = true;
    const handler = paymentsHandler<ApiGatewayProxyEventV1>(
      async (event) => {
        if (fail) throw new Error('provider down');
        charged.push(JSON.parse(event.body ?? '{}'));
        return { statusCode: 201, body: 'charged' };
      },
      clock,
      handlerClient,
    );
    const key = newKey();
    const pk = `payments-api#POST /payments:${key}`;
    const readClaim = async () =>
      (await client.send(new GetCommand({ TableName: tableName, Key: { pk }, ConsistentRead: true }))).Item;

    await expect(handler(restEvent(key, { amount: 5 }))).rejects.toThrow('provider down');
    const released = await readClaim();
    clock.advance(1_000);
    fail = false;
    const changed = await handler(restEvent(key, { amount: 50 }));
    const afterChanged = await readClaim();
    counter.reset();
    const retry = await handler(restEvent(key, { amount: 5 }));
    const retryRequests = counter.counts();

    // Released, the claim stays with the request's fingerprint and lease end 0.
    expect(released).toEqual({
      pk,
      status: 'IN_PROGRESS',
      fingerprint: fingerprintOf({ method: 'POST', path: '/payments', body: '{"amount":5}' }),
      consumer: 'payments-api',
      committedAt: clock() - 1_000,
      // In progress (released or not), the claim lives its TTL past its lease end.
      expiresAt: Math.ceil((clock() - 1_000 + 5_000) / 1000) + 86_400,
      leaseExpiresAt: 0,
      owner: expect.any(String),
    });
    expect(changed).toMatchObject({
      statusCode: 422,
      headers: { 'Content-Type': 'application/problem+json' },
    });
    // The different request neither ran nor took the released claim over.
    expect(afterChanged).toEqual(released);
    expect(retry).toEqual({ statusCode: 201, body: 'charged' });
    // One claim (a conditional put) and one completion, no takeover.
    expect(retryRequests).toEqual({ PutItem: 1, UpdateItem: 1 });
    expect(charged).toEqual([{ amount: 5 }]);
    expect(await readClaim()).toMatchObject({ status: 'COMPLETED', fingerprint: released!.fingerprint });
    expect(await handler(restEvent(key, { amount: 5 }))).toMatchObject({
      statusCode: 201,
      body: 'charged',
      headers: { 'Idempotent-Replayed': 'true' },
    });
  });

  it('keeps a key released after a 5xx bound to its request as well', async () => {
    const statuses = [503, 201];
    const handler = paymentsHandler<ApiGatewayProxyEventV2>(async () => ({
      statusCode: statuses.shift()!,
      body: 'answer',
    }));
    const key = newKey();

    const unavailable = await handler(urlEvent(key, { amount: 5 }));
    const changed = await handler(urlEvent(key, { amount: 50 }));
    const retry = await handler(urlEvent(key, { amount: 5 }));

    expect(unavailable).toEqual({ statusCode: 503, body: 'answer' });
    expect(changed).toMatchObject({ statusCode: 422 });
    expect(retry).toEqual({ statusCode: 201, body: 'answer' });
    expect(statuses).toEqual([]);
  });
});
