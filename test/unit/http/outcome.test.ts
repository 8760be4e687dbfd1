import { describe, expect, it } from 'vitest';
import type { InboxRecord } from '../../../lambda/core/store-port';
import {
  capStoredResponse,
  DEFAULT_MAX_RESPONSE_BYTES,
  decideClaim,
  isReplayableStatus,
  PROBLEMS,
  retryAfterSeconds,
  type StoredHttpResponse,
  storedResponseBytes,
  toReplayResponse,
  toStoredResponse,
} from '../../../lambda/http/http-outcome';

const NOW = Date.UTC(2026, 0, 1);
const record = (overrides: Partial<InboxRecord> = {}): InboxRecord => ({
  pk: 'api#POST /orders:k-1',
  status: 'COMPLETED',
  fingerprint: 'f-1',
  expiresAt: NOW / 1000 + 3600,
  consumer: 'api',
  result: JSON.stringify({ statusCode: 201, body: 'created' }),
  ...overrides,
});

describe('decideClaim', () => {
  it('runs the handler when the claim was inserted, also as a takeover', () => {
    expect(decideClaim({ kind: 'inserted' }, 'f-1', NOW)).toEqual({ kind: 'run' });
  });

  it('replays the stored response of a completed request with the same fingerprint', () => {
    expect(decideClaim({ kind: 'existing', record: record() }, 'f-1', NOW)).toEqual({
      kind: 'replay',
      response: { statusCode: 201, body: 'created' },
    });
  });

  it('answers a different request with the same key as a mismatch, even while the first runs', () => {
    expect(decideClaim({ kind: 'existing', record: record() }, 'f-2', NOW)).toEqual({ kind: 'mismatch' });
    const running = record({ status: 'IN_PROGRESS', leaseExpiresAt: NOW + 5000, result: undefined });
    expect(decideClaim({ kind: 'existing', record: running }, 'f-2', NOW)).toEqual({ kind: 'mismatch' });
  });

  it('answers a retry while the first request runs with the seconds until its lease ends', () => {
    const running = record({ status: 'IN_PROGRESS', leaseExpiresAt: NOW + 2001, result: undefined });
    expect(decideClaim({ kind: 'existing', record: running }, 'f-1', NOW)).toEqual({
      kind: 'in-progress',
      retryAfterSeconds: 3,
    });
  });

  it('answers a retry that meets a crashed or a released claim it could not take with Retry-After 1', () => {
    const crashed = record({ status: 'IN_PROGRESS', owner: 'a', leaseExpiresAt: NOW - 1, result: undefined });
    const released = record({ status: 'IN_PROGRESS', owner: 'a', leaseExpiresAt: 0, result: undefined });
    expect(decideClaim({ kind: 'existing', record: crashed }, 'f-1', NOW)).toEqual({
      kind: 'in-progress',
      retryAfterSeconds: 1,
    });
    expect(decideClaim({ kind: 'existing', record: released }, 'f-1', NOW)).toEqual({
      kind: 'in-progress',
      retryAfterSeconds: 1,
    });
  });

  it('names why it retries: an expired record, or a completed one without a readable response', () => {
    expect(decideClaim({ kind: 'existing', record: record({ expiresAt: NOW / 1000 }) }, 'f-1', NOW)).toEqual({
      kind: 'retry',
      reason: 'The store returned an expired inbox record',
    });
    expect(decideClaim({ kind: 'existing', record: record({ result: 'not json' }) }, 'f-1', NOW)).toEqual({
      kind: 'retry',
      reason: 'The completed inbox record holds no readable response',
    });
  });

  it('retries on an expired or unreadable record instead of guessing', () => {
    expect(
      decideClaim({ kind: 'existing', record: record({ expiresAt: NOW / 1000 }) }, 'f-1', NOW),
    ).toMatchObject({
      kind: 'retry',
    });
    expect(
      decideClaim({ kind: 'existing', record: record({ result: 'not json' }) }, 'f-1', NOW),
    ).toMatchObject({
      kind: 'retry',
    });
    expect(
      decideClaim({ kind: 'existing', record: record({ result: undefined }) }, 'f-1', NOW),
    ).toMatchObject({
      kind: 'retry',
    });
  });
});

describe('retryAfterSeconds', () => {
  it('rounds up and never answers less than one second', () => {
    expect(retryAfterSeconds(NOW + 1, NOW)).toBe(1);
    expect(retryAfterSeconds(NOW + 1000, NOW)).toBe(1);
    expect(retryAfterSeconds(NOW + 1001, NOW)).toBe(2);
    expect(retryAfterSeconds(NOW - 5000, NOW)).toBe(1);
    expect(retryAfterSeconds(undefined, NOW)).toBe(1);
  });
});

describe('isReplayableStatus', () => {
  it('stores successes and client errors, but not server errors or try-again-later answers', () => {
    expect([200, 201, 204, 301, 400, 404, 422].every(isReplayableStatus)).toBe(true);
    expect([408, 409, 425, 429, 500, 502, 503].some(isReplayableStatus)).toBe(false);
  });
});

describe('toStoredResponse', () => {
  it('keeps a structured result with stringified header values', () => {
    expect(
      toStoredResponse(
        {
          statusCode: 201,
          headers: { Location: '/orders/1', 'X-Count': 3, 'X-Flag': true },
          multiValueHeaders: { 'Set-Cookie': ['a=1', 'b=2'] },
          body: '{"id":1}',
          isBase64Encoded: false,
        },
        '1.0',
      ),
    ).toEqual({
      statusCode: 201,
      headers: { Location: '/orders/1', 'X-Count': '3', 'X-Flag': 'true' },
      multiValueHeaders: { 'Set-Cookie': ['a=1', 'b=2'] },
      body: '{"id":1}',
    });
  });

  it('reads a payload 2.0 shorthand result as API Gateway does: 200, JSON', () => {
    expect(toStoredResponse({ welcome: 'a@b' }, '2.0')).toEqual({
      statusCode: 200,
      headers: { 'content-type': 'application/json' },
      body: '{"welcome":"a@b"}',
    });
    expect(toStoredResponse('hello', '2.0')).toMatchObject({ statusCode: 200, body: 'hello' });
    expect(toStoredResponse({ statusCode: 204, cookies: ['s=1'] }, '2.0')).toEqual({
      statusCode: 204,
      cookies: ['s=1'],
    });
  });

  it('finds no response in a payload 1.0 result without a status code, or in nothing', () => {
    expect(toStoredResponse({ body: 'x' }, '1.0')).toBeUndefined();
    expect(toStoredResponse(undefined, '2.0')).toBeUndefined();
  });
});

describe('capStoredResponse', () => {
  const big: StoredHttpResponse = {
    statusCode: 201,
    headers: { Location: '/orders/1', 'Content-Type': 'application/json', 'Content-Length': '500' },
    body: 'x'.repeat(500),
  };

  it('stores a response within the cap as it is', () => {
    expect(capStoredResponse(big, 1000)).toBe(big);
    expect(storedResponseBytes(big)).toBeLessThan(1000);
  });

  it('drops the body and the headers describing it over the cap, keeping status and other headers', () => {
    expect(capStoredResponse(big, 200)).toEqual({
      statusCode: 201,
      headers: { Location: '/orders/1' },
      omitted: 'too-large',
    });
  });

  it('keeps only the status when even the headers do not fit', () => {
    expect(capStoredResponse(big, 40)).toEqual({ statusCode: 201, omitted: 'too-large' });
  });

  it('defaults to the DynamoDB item limit less 16 KB', () => {
    expect(DEFAULT_MAX_RESPONSE_BYTES).toBe(400 * 1024 - 16 * 1024);
  });
});

describe('toReplayResponse', () => {
  it('replays the stored response with Idempotent-Replayed: true', () => {
    expect(
      toReplayResponse({ statusCode: 201, headers: { Location: '/o/1' }, cookies: ['s=1'], body: 'created' }),
    ).toEqual({
      statusCode: 201,
      headers: { Location: '/o/1', 'Idempotent-Replayed': 'true' },
      cookies: ['s=1'],
      body: 'created',
      isBase64Encoded: false,
    });
  });

  it('marks a replay whose body was not stored', () => {
    expect(toReplayResponse({ statusCode: 200, omitted: 'too-large' })).toEqual({
      statusCode: 200,
      headers: { 'Idempotent-Replayed': 'true', 'Idempotent-Response-Omitted': 'too-large' },
      body: '',
      isBase64Encoded: false,
    });
  });
});

describe('PROBLEMS', () => {
  it('answers problem+json with the status, and Retry-After on a 409', () => {
    expect(PROBLEMS.inProgress(1)).toEqual({
      statusCode: 409,
      headers: { 'Content-Type': 'application/problem+json', 'Retry-After': '1' },
      body: JSON.stringify({
        type: 'about:blank',
        title: 'A request with this Idempotency-Key is still being processed',
        status: 409,
        detail: 'Retry after 1 second.',
      }),
      isBase64Encoded: false,
    });
    expect(PROBLEMS.mismatch().statusCode).toBe(422);
    expect(PROBLEMS.missingKey().statusCode).toBe(400);
    expect(PROBLEMS.unavailable().headers['Retry-After']).toBe('1');
  });
});
