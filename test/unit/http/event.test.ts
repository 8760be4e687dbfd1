import { describe, expect, it } from 'vitest';
import {
  type ApiGatewayProxyEventV1,
  type ApiGatewayProxyEventV2,
  readIdempotencyKey,
  toHttpRequest,
} from '../../../lambda/http/http-event';

const v1 = (overrides: Partial<ApiGatewayProxyEventV1> = {}): ApiGatewayProxyEventV1 => ({
  httpMethod: 'POST',
  path: '/orders/42/refunds',
  resource: '/orders/{id}/refunds',
  headers: { 'Idempotency-Key': 'k-1', 'Content-Type': 'application/json' },
  multiValueHeaders: { 'Idempotency-Key': ['k-1'], 'Content-Type': ['application/json'] },
  body: '{"amount":5}',
  isBase64Encoded: false,
  ...overrides,
});

const v2 = (overrides: Partial<ApiGatewayProxyEventV2> = {}): ApiGatewayProxyEventV2 => ({
  version: '2.0',
  routeKey: 'POST /orders/{id}/refunds',
  rawPath: '/orders/42/refunds',
  headers: { 'idempotency-key': 'k-1', 'content-type': 'application/json' },
  body: '{"amount":5}',
  isBase64Encoded: false,
  requestContext: { http: { method: 'POST' } },
  ...overrides,
});

describe('toHttpRequest', () => {
  it('normalises a REST (payload 1.0) event, scoping by the resource template', () => {
    const event = v1();
    expect(toHttpRequest(event)).toEqual({
      event,
      version: '1.0',
      method: 'POST',
      route: 'POST /orders/{id}/refunds',
      path: '/orders/42/refunds',
      query: [],
      headers: { 'idempotency-key': 'k-1', 'content-type': 'application/json' },
      body: '{"amount":5}',
      isBase64Encoded: false,
    });
  });

  it('reads payload 2.0 query parameters from the raw query string, as sent and in order', () => {
    expect(toHttpRequest(v2({ rawQueryString: 'b=2&a=x%20y&flag&b=1&&c=' })).query).toEqual([
      ['b', '2'],
      ['a', 'x%20y'],
      ['flag', ''],
      ['b', '1'],
      ['c', ''],
    ]);
    expect(toHttpRequest(v2({ rawQueryString: '' })).query).toEqual([]);
    expect(toHttpRequest(v2({ queryStringParameters: { a: '1,2' } })).query).toEqual([['a', '1,2']]);
  });

  it('reads payload 1.0 (and ALB) query parameters from the multi-value map, else the single-value map', () => {
    const both = v1({
      queryStringParameters: { a: '2', b: 'x' },
      multiValueQueryStringParameters: { a: ['1', '2'], b: ['x'] },
    });
    expect(toHttpRequest(both).query).toEqual([
      ['a', '1'],
      ['a', '2'],
      ['b', 'x'],
    ]);
    expect(toHttpRequest(v1({ queryStringParameters: { a: '2', b: undefined } })).query).toEqual([
      ['a', '2'],
    ]);
    expect(
      toHttpRequest(v1({ queryStringParameters: null, multiValueQueryStringParameters: null })).query,
    ).toEqual([]);
  });

  it('normalises an HTTP API (payload 2.0) event by its route key', () => {
    const event = v2();
    expect(toHttpRequest(event)).toMatchObject({
      version: '2.0',
      method: 'POST',
      route: 'POST /orders/{id}/refunds',
      path: '/orders/42/refunds',
      body: '{"amount":5}',
    });
  });

  it('scopes a function URL ($default route) by its concrete path', () => {
    expect(toHttpRequest(v2({ routeKey: '$default' })).route).toBe('POST /orders/42/refunds');
    expect(
      toHttpRequest(v2({ routeKey: 'ANY /{proxy+}', requestContext: { http: { method: 'put' } } })).route,
    ).toBe('PUT /{proxy+}');
  });

  it('reads a missing body as empty and joins repeated 1.0 headers', () => {
    const request = toHttpRequest(
      v1({
        body: null,
        headers: null,
        multiValueHeaders: { Accept: ['a', 'b'] },
        isBase64Encoded: undefined,
      }),
    );
    expect(request).toMatchObject({ body: '', headers: { accept: 'a, b' }, isBase64Encoded: false });
  });

  it('rejects anything that is not an API Gateway or function URL event', () => {
    for (const event of [null, {}, { version: '2.0', rawPath: '/' }, { Records: [] }]) {
      expect(() => toHttpRequest(event as never)).toThrow(
        expect.objectContaining({ code: 'INVALID_EVENT' }) as unknown as Error,
      );
    }
  });
});

describe('readIdempotencyKey', () => {
  const withKey = (value: string) => v2({ headers: { 'idempotency-key': value } });

  it('finds the header whatever its case', () => {
    expect(
      readIdempotencyKey(v1({ headers: { 'IDEMPOTENCY-KEY': 'k-9' }, multiValueHeaders: null })),
    ).toEqual({
      kind: 'present',
      key: 'k-9',
    });
    expect(readIdempotencyKey(v1())).toEqual({ kind: 'present', key: 'k-1' });
  });

  it('reads a Structured Field string and, leniently, a bare token', () => {
    expect(readIdempotencyKey(withKey('"8e03978e-40d5"'))).toEqual({ kind: 'present', key: '8e03978e-40d5' });
    expect(readIdempotencyKey(withKey('"a \\"quoted\\" key"'))).toEqual({
      kind: 'present',
      key: 'a "quoted" key',
    });
    expect(readIdempotencyKey(withKey('  8e03978e-40d5  '))).toEqual({
      kind: 'present',
      key: '8e03978e-40d5',
    });
  });

  it('reports an absent header', () => {
    expect(readIdempotencyKey(v2({ headers: {} }))).toEqual({ kind: 'absent' });
    expect(readIdempotencyKey(v1({ headers: null, multiValueHeaders: null }))).toEqual({ kind: 'absent' });
  });

  it('rejects repeated, listed, empty, overlong and non-ASCII keys', () => {
    const invalid = (event: ApiGatewayProxyEventV1 | ApiGatewayProxyEventV2) =>
      readIdempotencyKey(event).kind;
    expect(invalid(v1({ multiValueHeaders: { 'idempotency-key': ['a', 'b'] } }))).toBe('invalid');
    expect(invalid(withKey('a, b'))).toBe('invalid');
    expect(invalid(withKey('"a", "b"'))).toBe('invalid');
    expect(invalid(withKey(''))).toBe('invalid');
    expect(invalid(withKey('""'))).toBe('invalid');
    expect(invalid(withKey('k'.repeat(256)))).toBe('invalid');
    expect(invalid(withKey('k'.repeat(255)))).toBe('present');
    expect(invalid(withKey('clé'))).toBe('invalid');
    expect(readIdempotencyKey(withKey('a, b'))).toEqual({
      kind: 'invalid',
      reason: 'The Idempotency-Key header must hold exactly one key',
    });
  });
});
