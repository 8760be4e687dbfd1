import { describe, expect, it, vi } from 'vitest';
import { EffectivelyOnceError } from '../../../lambda/core/errors';
import { fingerprintOf } from '../../../lambda/core/fingerprint';
import type { LogEntry } from '../../../lambda/core/logger';
import type { OutcomeCounts } from '../../../lambda/core/metrics';
import type {
  ApiGatewayProxyEventV1,
  ApiGatewayProxyEventV2,
  HttpEvent,
} from '../../../lambda/http/http-event';
import { toHttpRequest } from '../../../lambda/http/http-event';
import {
  createIdempotentHttpHandler,
  defaultHttpFingerprint,
  type IdempotentHttpHandlerOptions,
} from '../../../lambda/http/idempotent-http-handler';
import { deferred, manualClock, T0 } from '../../support/fixtures';
import { createMemoryStore, type MemoryStore } from '../../support/memory-store';

interface PaymentsEvent extends ApiGatewayProxyEventV1 {
  readonly requestContext?: { readonly authorizer?: { readonly principalId?: string } };
}

const post = (
  body: unknown,
  options: { key?: string; principal?: string; method?: string; path?: string } = {},
): PaymentsEvent => ({
  httpMethod: options.method ?? 'POST',
  path: options.path ?? '/payments',
  resource: '/payments',
  headers: options.key === undefined ? {} : { 'Idempotency-Key': options.key },
  multiValueHeaders: options.key === undefined ? {} : { 'Idempotency-Key': [options.key] },
  body: JSON.stringify(body),
  isBase64Encoded: false,
  requestContext: { authorizer: { principalId: options.principal ?? 'user-1' } },
});

/** Settles pending store calls (the memory store answers asynchronously). */
const settle = async () => {
  for (let i = 0; i < 20; i += 1) await Promise.resolve();
};

function setup<TEvent extends HttpEvent = PaymentsEvent>(
  overrides: Partial<IdempotentHttpHandlerOptions<TEvent, unknown>> = {},
) {
  const store: MemoryStore = createMemoryStore();
  const clock = manualClock();
  const logs: LogEntry[] = [];
  const metrics: OutcomeCounts[] = [];
  const handle = (overrides.handle ??
    vi.fn(async (event: TEvent) => ({
      statusCode: 201,
      headers: { 'Content-Type': 'application/json', Location: '/payments/p-1' },
      body: (event as { body?: string | null }).body ?? '',
    }))) as ReturnType<typeof vi.fn>;
  const handler = createIdempotentHttpHandler<TEvent, unknown>({
    consumer: 'payments-api',
    store,
    clock,
    leaseMillis: 10_000,
    logger: { log: (entry) => void logs.push(entry) },
    logLevel: 'debug',
    metrics: { publish: (counts) => void metrics.push({ ...counts }) },
    ...overrides,
    handle: handle as IdempotentHttpHandlerOptions<TEvent, unknown>['handle'],
  });
  const outcomes = () =>
    metrics.map((counts) => Object.entries(counts).find(([, value]) => value === 1)?.[0] ?? 'none');
  return { store, clock, logs, handle, handler, outcomes };
}

describe('createIdempotentHttpHandler', () => {
  it('runs the first request once and replays its stored response to a retry', async () => {
    const { handler, handle, store, outcomes } = setup();
    const event = post({ amount: 5 }, { key: 'k-1' });

    const first = await handler(event);
    const retry = await handler(event);

    expect(first).toEqual({
      statusCode: 201,
      headers: { 'Content-Type': 'application/json', Location: '/payments/p-1' },
      body: '{"amount":5}',
    });
    expect(retry).toEqual({
      statusCode: 201,
      headers: {
        'Content-Type': 'application/json',
        Location: '/payments/p-1',
        'Idempotent-Replayed': 'true',
      },
      body: '{"amount":5}',
      isBase64Encoded: false,
    });
    expect(handle).toHaveBeenCalledTimes(1);
    expect(store.items('inbox')).toEqual([
      expect.objectContaining({
        pk: 'payments-api#POST /payments:k-1',
        status: 'COMPLETED',
        expiresAt: T0 / 1000 + 86_400,
        result: JSON.stringify({
          statusCode: 201,
          headers: { 'Content-Type': 'application/json', Location: '/payments/p-1' },
          body: '{"amount":5}',
        }),
      }),
    ]);
    expect(outcomes()).toEqual(['processed', 'duplicate']);
  });

  it('answers 422 when the key is reused for a different request', async () => {
    const { handler, handle, outcomes } = setup();
    await handler(post({ amount: 5 }, { key: 'k-1' }));

    const changed = await handler(post({ amount: 6 }, { key: 'k-1' }));

    expect(changed).toMatchObject({
      statusCode: 422,
      headers: { 'Content-Type': 'application/problem+json' },
    });
    expect(JSON.parse((changed as { body: string }).body)).toMatchObject({
      status: 422,
      title: 'Idempotency-Key is already used',
    });
    expect(handle).toHaveBeenCalledTimes(1);
    expect(outcomes()).toEqual(['processed', 'mismatch']);
  });

  it('answers 409 with Retry-After while the first request runs, then replays once it is done', async () => {
    const gate = deferred<void>();
    const { handler, handle, clock } = setup({
      handle: vi.fn(async () => {
        await gate.promise;
        return { statusCode: 200, body: 'done' };
      }),
    });
    const event = post({ amount: 5 }, { key: 'k-1' });

    const first = handler(event);
    await settle();
    clock.advance(2_500);
    const during = await handler(event);
    gate.resolve();
    await first;
    const after = await handler(event);

    expect(during).toMatchObject({ statusCode: 409, headers: { 'Retry-After': '8' } });
    expect(after).toMatchObject({
      statusCode: 200,
      body: 'done',
      headers: { 'Idempotent-Replayed': 'true' },
    });
    expect(handle).toHaveBeenCalledTimes(1);
  });

  it('lets a retry take the key over once the lease of a crashed first request ends', async () => {
    const crashed = deferred<{ statusCode: number; body: string }>();
    let calls = 0;
    const { handler, clock, logs } = setup({
      handle: async () => {
        calls += 1;
        return calls === 1 ? crashed.promise : { statusCode: 201, body: 'second' };
      },
    });
    const event = post({ amount: 5 }, { key: 'k-1' });

    const first = handler(event);
    await settle();
    clock.advance(10_001);
    const takeover = await handler(event);
    crashed.resolve({ statusCode: 201, body: 'first' });
    await first;
    const replay = await handler(event);

    expect(takeover).toEqual({ statusCode: 201, body: 'second' });
    expect(replay).toMatchObject({ statusCode: 201, body: 'second' });
    expect(logs.map((entry) => entry.message)).toContain('Lease of a crashed request taken over');
    expect(logs.map((entry) => entry.message)).toContain(
      'The lease ended before the response was stored; another request took the key over',
    );
  });

  it('releases the key when the handler throws, so a retry runs again', async () => {
    let fail = true;
    const { handler, store, outcomes } = setup({
      handle: async () => {
        if (fail) throw new Error('downstream timeout');
        return { statusCode: 201, body: 'ok' };
      },
    });
    const event = post({ amount: 5 }, { key: 'k-1' });

    await expect(handler(event)).rejects.toThrow('downstream timeout');
    const [released] = store.items('inbox');
    expect(released).toMatchObject({ status: 'IN_PROGRESS', leaseExpiresAt: 0 });
    expect(store.calls.filter((call) => call.method === 'release')).toEqual([
      {
        method: 'release',
        args: [released!.pk, { owner: released!.owner }],
      },
    ]);
    fail = false;
    expect(await handler(event)).toEqual({ statusCode: 201, body: 'ok' });
    expect(outcomes()).toEqual(['retry', 'processed']);
  });

  it('keeps a released key bound to its request: a different request gets 422, the same one claims it in one request', async () => {
    let fail = true;
    const { handler, store, handle, outcomes, logs } = setup({
      handle: vi.fn(async () => {
        if (fail) throw new Error('downstream timeout');
        return { statusCode: 201, body: 'ok' };
      }),
    });
    const event = post({ amount: 5 }, { key: 'k-1' });

    await expect(handler(event)).rejects.toThrow('downstream timeout');
    const changed = await handler(post({ amount: 50 }, { key: 'k-1' }));
    fail = false;
    const claimsBefore = store.calls.filter((call) => call.method === 'claimLease').length;
    const retry = await handler(event);

    expect(changed).toMatchObject({ statusCode: 422 });
    expect(retry).toEqual({ statusCode: 201, body: 'ok' });
    // The different request neither took the released claim over nor ran.
    expect(handle).toHaveBeenCalledTimes(2);
    expect(store.calls.filter((call) => call.method === 'claimLease')).toHaveLength(claimsBefore + 1);
    expect(outcomes()).toEqual(['retry', 'mismatch', 'processed']);
    expect(logs.map((entry) => entry.message)).not.toContain('Lease of a crashed request taken over');
    expect(store.items('inbox')).toEqual([
      expect.objectContaining({ status: 'COMPLETED', result: expect.stringContaining('"body":"ok"') }),
    ]);
  });

  it('never lets a different request take over the ended lease of a crashed request: it gets 422', async () => {
    const crashed = deferred<{ statusCode: number; body: string }>();
    const { handler, clock, handle, store } = setup({ handle: vi.fn(() => crashed.promise) });

    const first = handler(post({ amount: 5 }, { key: 'k-1' }));
    await settle();
    clock.advance(10_001);
    const changed = await handler(post({ amount: 50 }, { key: 'k-1' }));
    crashed.resolve({ statusCode: 201, body: 'first' });
    await first;

    expect(changed).toMatchObject({ statusCode: 422 });
    expect(handle).toHaveBeenCalledTimes(1);
    expect(store.calls.filter((call) => call.method === 'claimLease')).toHaveLength(2);
  });

  it('does not store a 5xx or a try-again-later 4xx, and releases the key', async () => {
    const statuses = [503, 429, 201];
    const { handler, store, handle } = setup({
      handle: vi.fn(async () => ({ statusCode: statuses.shift()!, body: '' })),
    });
    const event = post({ amount: 5 }, { key: 'k-1' });

    expect(await handler(event)).toEqual({ statusCode: 503, body: '' });
    expect(await handler(event)).toEqual({ statusCode: 429, body: '' });
    expect(await handler(event)).toEqual({ statusCode: 201, body: '' });
    expect(handle).toHaveBeenCalledTimes(3);
    expect(store.items('inbox')).toHaveLength(1);
  });

  it('stores a client error, so the same request gets the same answer', async () => {
    const { handler, handle } = setup({
      handle: vi.fn(async () => ({ statusCode: 400, body: '{"message":"amount must be positive"}' })),
    });
    const event = post({ amount: -1 }, { key: 'k-1' });

    await handler(event);
    expect(await handler(event)).toMatchObject({
      statusCode: 400,
      headers: { 'Idempotent-Replayed': 'true' },
    });
    expect(handle).toHaveBeenCalledTimes(1);
  });

  it('stores with a custom replay rule', async () => {
    const { handler, handle } = setup({
      isReplayable: (status) => status === 201,
      handle: vi.fn(async () => ({ statusCode: 400, body: '' })),
    });
    const event = post({}, { key: 'k-1' });
    await handler(event);
    await handler(event);
    expect(handle).toHaveBeenCalledTimes(2);
  });

  it('runs a request without the key unprotected by default, and answers 400 when the key is required', async () => {
    const optional = setup();
    await optional.handler(post({ amount: 5 }));
    await optional.handler(post({ amount: 5 }));
    expect(optional.handle).toHaveBeenCalledTimes(2);
    expect(optional.store.calls).toEqual([]);
    expect(optional.outcomes()).toEqual([]);

    const required = setup({ required: true });
    expect(await required.handler(post({ amount: 5 }))).toMatchObject({
      statusCode: 400,
      headers: { 'Content-Type': 'application/problem+json' },
    });
    expect(required.handle).not.toHaveBeenCalled();
    expect(required.outcomes()).toEqual(['permanent']);
  });

  it('answers 400 to an invalid key and passes GET through even with a key', async () => {
    const { handler, handle, store } = setup();
    const invalid = post({}, { key: 'a, b' });
    expect(await handler(invalid)).toMatchObject({ statusCode: 400 });
    expect(handle).not.toHaveBeenCalled();

    const get = post({}, { key: 'k-1', method: 'GET' });
    await handler(get);
    await handler(get);
    expect(handle).toHaveBeenCalledTimes(2);
    expect(store.calls).toEqual([]);
  });

  it('scopes keys by caller, so two callers with the same key both run', async () => {
    const { handler, handle, store } = setup({
      caller: (request) => request.event.requestContext?.authorizer?.principalId,
    });

    await handler(post({ amount: 5 }, { key: 'k-1', principal: 'alice' }));
    await handler(post({ amount: 5 }, { key: 'k-1', principal: 'bob' }));
    await handler(post({ amount: 5 }, { key: 'k-1', principal: 'alice' }));

    expect(handle).toHaveBeenCalledTimes(2);
    expect(store.items('inbox').map((item) => item.pk)).toEqual([
      'payments-api#POST /payments:alice:k-1',
      'payments-api#POST /payments:bob:k-1',
    ]);
  });

  it('answers 500 when the caller cannot be found, never running in a shared scope', async () => {
    const { handler, handle, logs } = setup({ caller: () => undefined });
    expect(await handler(post({}, { key: 'k-1' }))).toMatchObject({ statusCode: 500 });
    expect(handle).not.toHaveBeenCalled();
    expect(logs[0]).toMatchObject({ level: 'error', code: 'MISSING_KEY' });
  });

  it('fingerprints method, path, query parameters sorted by name (repeated values in order) and body', () => {
    const request = toHttpRequest({
      ...post({ amount: 5 }),
      multiValueQueryStringParameters: { split: ['2', '1'], currency: ['EUR'] },
    });
    expect(defaultHttpFingerprint(request)).toEqual({
      method: 'POST',
      path: '/payments',
      query: [
        ['currency', 'EUR'],
        ['split', '2'],
        ['split', '1'],
      ],
      body: '{"amount":5}',
    });
    // Without a query string, the fingerprint is what it was before query strings counted.
    expect(defaultHttpFingerprint(toHttpRequest(post({ amount: 5 })))).toEqual({
      method: 'POST',
      path: '/payments',
      body: '{"amount":5}',
    });
  });

  it('answers 422 when the key is reused with another query string, and stores the query in the fingerprint', async () => {
    const { handler, handle, store, outcomes } = setup();
    const withQuery = (to: string) => ({
      ...post({ amount: 5 }, { key: 'k-1' }),
      multiValueQueryStringParameters: { to: [to] },
    });
    await handler(withQuery('acct-1'));

    expect(await handler(withQuery('acct-2'))).toMatchObject({ statusCode: 422 });
    expect(handle).toHaveBeenCalledTimes(1);
    expect(outcomes()).toEqual(['processed', 'mismatch']);
    expect(store.items('inbox')).toEqual([
      expect.objectContaining({
        fingerprint: fingerprintOf({
          method: 'POST',
          path: '/payments',
          query: [['to', 'acct-1']],
          body: '{"amount":5}',
        }),
      }),
    ]);
  });

  it('keeps a caller with a colon one part of the scoped key, escaped once', async () => {
    const { handler, store } = setup({ caller: () => 'arn:aws:iam::1:user/a' });
    await handler(post({}, { key: 'k-1' }));
    expect(store.items('inbox')).toEqual([
      expect.objectContaining({ pk: 'payments-api#POST /payments:arn%3Aaws%3Aiam%3A%3A1%3Auser/a:k-1' }),
    ]);
  });

  it('matches retries by a custom fingerprint', async () => {
    const { handler, handle } = setup({
      fingerprint: (request) => (JSON.parse(request.body) as { amount: number }).amount,
    });
    await handler(post({ amount: 5, sentAt: 'a' }, { key: 'k-1' }));
    expect(await handler(post({ amount: 5, sentAt: 'b' }, { key: 'k-1' }))).toMatchObject({
      statusCode: 201,
    });
    expect(handle).toHaveBeenCalledTimes(1);
  });

  it('answers 503 when the store is unavailable and 500 when it is misconfigured, without running', async () => {
    const { handler, handle, store } = setup();
    store.failNext('claimLease', new EffectivelyOnceError('THROTTLED', 'slow down'));
    store.failNext('claimLease', new EffectivelyOnceError('ACCESS_DENIED', 'no'));

    expect(await handler(post({}, { key: 'k-1' }))).toMatchObject({
      statusCode: 503,
      headers: { 'Retry-After': '1' },
    });
    expect(await handler(post({}, { key: 'k-1' }))).toMatchObject({ statusCode: 500 });
    expect(handle).not.toHaveBeenCalled();
  });

  it('still answers the first caller when storing the response fails', async () => {
    const { handler, store, logs } = setup();
    store.failNext('complete', new EffectivelyOnceError('THROTTLED', 'slow down'));

    expect(await handler(post({}, { key: 'k-1' }))).toMatchObject({ statusCode: 201 });
    expect(logs.at(-1)).toMatchObject({ level: 'error', code: 'THROTTLED' });
  });

  it('stores a response over the cap without its body and says so on replay', async () => {
    const { handler, store } = setup({
      maxResponseBytes: 100,
      handle: async () => ({
        statusCode: 201,
        headers: { Location: '/payments/p-1', 'Content-Type': 'application/json' },
        body: 'x'.repeat(500),
      }),
    });
    const event = post({}, { key: 'k-1' });

    expect((await handler(event)) as { body: string }).toMatchObject({ body: 'x'.repeat(500) });
    expect(await handler(event)).toEqual({
      statusCode: 201,
      headers: {
        Location: '/payments/p-1',
        'Idempotent-Replayed': 'true',
        'Idempotent-Response-Omitted': 'too-large',
      },
      body: '',
      isBase64Encoded: false,
    });
    expect(JSON.parse(store.items('inbox')[0]!.result as string)).toEqual({
      statusCode: 201,
      headers: { Location: '/payments/p-1' },
      omitted: 'too-large',
    });
  });

  it('forgets a key after the window, so the same request runs again', async () => {
    const { handler, handle, clock } = setup({ ttlSeconds: 60 });
    const event = post({}, { key: 'k-1' });
    await handler(event);
    clock.advance(59_000);
    await handler(event);
    clock.advance(1_000);
    await handler(event);
    expect(handle).toHaveBeenCalledTimes(2);
  });

  it('leases the key for the invocation time left, plus a second, by default', async () => {
    const gate = deferred<void>();
    const { handler } = setup({
      leaseMillis: undefined,
      handle: async () => {
        await gate.promise;
        return { statusCode: 200, body: '' };
      },
    });
    const context = { getRemainingTimeInMillis: () => 29_000 };

    const first = handler(post({}, { key: 'k-1' }), context);
    await settle();
    expect(await handler(post({}, { key: 'k-1' }), context)).toMatchObject({
      statusCode: 409,
      headers: { 'Retry-After': '30' },
    });
    gate.resolve();
    await first;
  });

  it('handles payload 2.0 events and shorthand results', async () => {
    const { handler, handle } = setup<ApiGatewayProxyEventV2>({
      handle: vi.fn(async () => ({ welcome: 'a@b' })),
    });
    const event: ApiGatewayProxyEventV2 = {
      version: '2.0',
      routeKey: '$default',
      rawPath: '/signup',
      headers: { 'idempotency-key': '"k-1"' },
      body: '{"email":"a@b"}',
      isBase64Encoded: false,
      requestContext: { http: { method: 'POST' } },
    };

    expect(await handler(event)).toEqual({ welcome: 'a@b' });
    expect(await handler(event)).toEqual({
      statusCode: 200,
      headers: { 'content-type': 'application/json', 'Idempotent-Replayed': 'true' },
      body: '{"welcome":"a@b"}',
      isBase64Encoded: false,
    });
    expect(handle).toHaveBeenCalledTimes(1);
  });

  it('logs keys as hashes when asked', async () => {
    const { handler, logs } = setup({ logKeys: 'hash' });
    await handler(post({}, { key: 'k-1' }));
    expect(logs[0]).toHaveProperty('scopedKeyHash');
    expect(logs[0]).not.toHaveProperty('scopedKey');
  });

  it('rejects bad options at creation with the option, what was expected and what was given', () => {
    const create = (extra: Record<string, unknown>) => () =>
      createIdempotentHttpHandler({
        consumer: 'api',
        store: createMemoryStore(),
        handle: async () => ({ statusCode: 200, body: '' }),
        ...extra,
      } as never);

    expect(create({ consumer: 'has space' })).toThrow(
      'Expected `consumer` to be a name matching /^[A-Za-z0-9._:-]{1,100}$/, got `"has space"`',
    );
    expect(create({ handle: 'nope' })).toThrow('Expected `handle` to be a function, got `"nope"`');
    expect(create({ ttlSeconds: 0 })).toThrow('Expected `ttlSeconds` to be a positive integer, got `0`');
    expect(create({ leaseMillis: 1.5 })).toThrow(
      'Expected `leaseMillis` to be a positive integer, got `1.5`',
    );
    expect(create({ ttlSeconds: 60, leaseMillis: 60_000 })).toThrow(
      'Expected `leaseMillis` to be shorter than `ttlSeconds` (60000 milliseconds), got `60000`',
    );
    expect(create({ maxResponseBytes: 500_000 })).toThrow(
      'Expected `maxResponseBytes` to be an integer from 1 to 393216, got `500000`',
    );
    expect(create({ required: 'yes' })).toThrow('Expected `required` to be a boolean, got `"yes"`');
    expect(create({ caller: 'principalId' })).toThrow(
      'Expected `caller` to be a function, got `"principalId"`',
    );
    expect(create({ store: {} })).toThrow(
      'Expected `store` to be an object with `claimLease`, `complete`, `release`, got `an object`',
    );
    expect(create({ metrics: {} })).toThrow(
      'Expected `metrics` to be an object with `publish`, got `an object`',
    );
    expect(create({ logger: { log: 'stdout' } })).toThrow(
      'Expected `logger` to be an object with `log`, got `an object`',
    );
    expect(create({ methods: ['POST', ''] })).toThrow(
      'Expected `methods` to be a list of HTTP methods, got `""`',
    );
    expect(create({ logLevel: 'verbose' })).toThrow(
      "Expected `logLevel` to be one of 'debug', 'info', 'warn', 'error', 'silent', got `\"verbose\"`",
    );
  });
});

describe('createIdempotentHttpHandler under concurrent invocations', () => {
  it('keeps the response, log lines and counts of two requests through one wrapper apart when they finish out of order', async () => {
    const holds = { 'k-a': deferred(), 'k-b': deferred() };
    const { handler, logs, outcomes } = setup({
      handle: async (event: PaymentsEvent) => {
        const { key } = JSON.parse(event.body ?? '{}') as { key: 'k-a' | 'k-b' };
        await holds[key].promise;
        if (key === 'k-a') throw new Error('payment API down');
        return { statusCode: 201, body: `paid ${key}` };
      },
    });
    const first = handler(post({ key: 'k-a' }, { key: 'k-a' }));
    const second = handler(post({ key: 'k-b' }, { key: 'k-b' }));
    await settle();

    holds['k-b'].resolve();
    expect(await second).toEqual(expect.objectContaining({ statusCode: 201, body: 'paid k-b' }));
    expect(outcomes()).toEqual(['processed']);
    holds['k-a'].resolve();
    await expect(first).rejects.toThrow('payment API down');

    expect(outcomes()).toEqual(['processed', 'retry']);
    expect(
      logs
        .filter((entry) => entry.outcome !== undefined)
        .map(({ scopedKey, outcome }) => ({ key: String(scopedKey).split('#').pop(), outcome })),
    ).toEqual([
      { key: 'POST /payments:k-b', outcome: 'processed' },
      { key: 'POST /payments:k-a', outcome: 'retry' },
    ]);
  });
});

describe('createIdempotentHttpHandler on Lambda Managed Instances', () => {
  it('names each invocation’s request id on its log lines and its metrics, interleaved in one process', async () => {
    const store: MemoryStore = createMemoryStore();
    const logs: LogEntry[] = [];
    const published: { requestId?: string; counts: OutcomeCounts }[] = [];
    const held = deferred();
    const handler = createIdempotentHttpHandler<PaymentsEvent, unknown>({
      consumer: 'payments-api',
      store,
      clock: manualClock(),
      leaseMillis: 10_000,
      logger: { log: (entry) => void logs.push(entry) },
      logLevel: 'debug',
      metrics: {
        publish: (counts, { requestId }) => void published.push({ requestId, counts: { ...counts } }),
      },
      handle: async () => {
        await held.promise;
        return { statusCode: 201, body: '' };
      },
    });
    const contextOf = (awsRequestId: string) => ({ awsRequestId, getRemainingTimeInMillis: () => 60_000 });
    const event = post({ amount: 5 }, { key: 'k-1' });

    const first = handler(event, contextOf('req-a'));
    await settle();
    const second = await handler(event, contextOf('req-b'));
    held.resolve();
    await first;

    expect((second as { statusCode: number }).statusCode).toBe(409);
    expect(logs.map(({ requestId, outcome }) => ({ requestId, outcome }))).toEqual([
      { requestId: 'req-b', outcome: 'in-flight' },
      { requestId: 'req-a', outcome: 'processed' },
    ]);
    expect(
      published.map(({ requestId, counts }) => ({
        requestId,
        inFlight: counts.inFlight,
        processed: counts.processed,
      })),
    ).toEqual([
      { requestId: 'req-b', inFlight: 1, processed: 0 },
      { requestId: 'req-a', inFlight: 0, processed: 1 },
    ]);
  });
});
