/**
 * The HTTP `Idempotency-Key` wrapper over the DynamoDB store on the local endpoint: a retry gets
 * the stored response, a changed request 422, a retry during the first request 409 with
 * `Retry-After`, and a crashed first request is taken over after its lease (injected clock).
 */
import { CreateTableCommand, DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ApiGatewayProxyEventV1,
  type ApiGatewayProxyEventV2,
  createIdempotentHttpHandler,
  type HttpEvent,
} from '../../lambda/http';
import { awsConfig, uniqueName } from '../support/aws';

const aws = awsConfig();
const raw = new DynamoDBClient(aws);
const client = DynamoDBDocumentClient.from(raw, { marshallOptions: { removeUndefinedValues: true } });
const tableName = uniqueName('eo-http-inbox');
const runId = uniqueName('run');
let sequence = 0;
const newKey = () => `${runId}-${++sequence}`;

beforeAll(async () => {
  await raw.send(
    new CreateTableCommand({
      TableName: tableName,
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
});

afterAll(async () => {
  // Matters when AWS_ENDPOINT_URL points at a long-lived emulator.
  await Promise.allSettled([raw.send(new DeleteTableCommand({ TableName: tableName }))]);
  raw.destroy();
});

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

function manualClock() {
  let now = Date.now();
  const clock = () => now;
  clock.advance = (millis: number) => {
    now += millis;
  };
  return clock;
}

function paymentsHandler<TEvent extends HttpEvent>(
  charge: (event: TEvent) => Promise<unknown>,
  clock = manualClock(),
) {
  return createIdempotentHttpHandler<TEvent, unknown>({
    consumer: 'payments-api',
    client,
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

  it('answers 409 with Retry-After while the first request runs, and takes a crashed one over after its lease', async () => {
    const clock = manualClock();
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
});
