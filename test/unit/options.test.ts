import { describe, expect, it } from 'vitest';
import { fromBody } from '../../lambda/core/dedup-key';
import { claimExpiresAt, isLeaseWithinTtl } from '../../lambda/core/lease';
import {
  type BatchProcessorOptions,
  DEFAULT_CONCURRENCY,
  DEFAULT_DEADLINE_MARGIN_MILLIS,
  DEFAULT_TTL_SECONDS,
  resolveOptions,
} from '../../lambda/core/options';
import { T0 } from '../support/fixtures';
import { createMemoryStore } from '../support/memory-store';

const valid: BatchProcessorOptions<unknown> = {
  consumer: 'orders',
  dedupKey: fromBody('id'),
  mode: 'marker',
  handle: () => undefined,
  store: createMemoryStore(),
  clock: () => T0,
};

const resolve = (overrides: Record<string, unknown>) =>
  resolveOptions({ ...valid, ...overrides } as BatchProcessorOptions<unknown>);

describe('resolveOptions', () => {
  it('applies the documented defaults and freezes the result', () => {
    const resolved = resolveOptions(valid);
    expect(resolved).toMatchObject({
      parse: 'json',
      ttlSeconds: DEFAULT_TTL_SECONDS,
      concurrency: DEFAULT_CONCURRENCY,
      deadlineMarginMillis: DEFAULT_DEADLINE_MARGIN_MILLIS,
      deadLetter: 'redrive',
      logLevel: 'info',
      logKeys: 'plain',
      metricNamespace: 'EffectivelyOnce',
    });
    expect(DEFAULT_TTL_SECONDS).toBe(1_296_000);
    expect(Object.isFrozen(resolved)).toBe(true);
  });

  it.each([
    [{ ttlSeconds: -1 }, 'Expected `ttlSeconds` to be a positive integer, got `-1`'],
    [{ ttlSeconds: 1.5 }, 'Expected `ttlSeconds` to be a positive integer, got `1.5`'],
    [{ ttlSeconds: '60' }, 'Expected `ttlSeconds` to be a positive integer, got `"60"`'],
    [{ concurrency: 0 }, 'Expected `concurrency` to be a positive integer, got `0`'],
    [{ deadlineMarginMillis: -5 }, 'Expected `deadlineMarginMillis` to be a non-negative integer, got `-5`'],
    [
      { consumer: 'a#b' },
      'Expected `consumer` to be a name matching /^[A-Za-z0-9._:-]{1,100}$/, got `"a#b"`',
    ],
    [{ dedupKey: 'id' }, 'Expected `dedupKey` to be a key source such as `fromBody(...)`, got `"id"`'],
    [
      { mode: 'twice' },
      "Expected `mode` to be one of 'marker', 'atomic', 'entity', 'two-phase', got `\"twice\"`",
    ],
    [{ handle: undefined }, 'Expected `handle` to be a function, got `undefined`'],
    [{ parse: 'xml' }, "Expected `parse` to be 'json', 'text' or a function, got `\"xml\"`"],
    [{ fingerprint: {} }, 'Expected `fingerprint` to be a function, got `an object`'],
    [{ correlationId: [] }, 'Expected `correlationId` to be a function, got `an array`'],
    [{ deadLetter: 'drop' }, "Expected `deadLetter` to be one of 'redrive', 'direct', got `\"drop\"`"],
    [{ deadLetter: 'direct' }, 'Expected `deadLetterSender` to be an object with `send`, got `undefined`'],
    [
      { logLevel: 'trace' },
      "Expected `logLevel` to be one of 'debug', 'info', 'warn', 'error', 'silent', got `\"trace\"`",
    ],
    [{ logKeys: 'none' }, "Expected `logKeys` to be one of 'plain', 'hash', got `\"none\"`"],
    [{ logger: console.log }, 'Expected `logger` to be an object with `log`, got `a function`'],
    [{ metrics: true }, 'Expected `metrics` to be an object with `publish`, got `true`'],
    [
      { metricNamespace: '' },
      'Expected `metricNamespace` to be a non-empty string of at most 255 characters, got `""`',
    ],
    [
      { store: {} },
      'Expected `store` to be an object with `insert`, `commit`, `insertEntity`, `release`, got `an object`',
    ],
    [{ clock: 0 }, 'Expected `clock` to be a function returning epoch milliseconds, got `0`'],
  ])('rejects %j at cold start with a message naming the option', (overrides, message) => {
    expect(() => resolve(overrides)).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS', message }));
  });

  it('rejects a missing options object', () => {
    expect(() => resolveOptions(null as never)).toThrow('Expected `options` to be an object, got `null`');
  });

  it('accepts metrics: false and a direct dead-letter sender', () => {
    const sender = { send: async () => undefined };
    expect(resolve({ metrics: false, deadLetter: 'direct', deadLetterSender: sender })).toMatchObject({
      metrics: false,
      deadLetter: 'direct',
      deadLetterSender: sender,
    });
  });
});

describe('the lease and TTL rule', () => {
  it('accepts only a lease shorter than the TTL, the rule the construct mirrors at synth', () => {
    expect(isLeaseWithinTtl(3_599_999, 3600)).toBe(true);
    expect(isLeaseWithinTtl(3_600_000, 3600)).toBe(false);
    expect(() => resolve({ mode: 'two-phase', ttlSeconds: 60, leaseMillis: 60_000 })).toThrow(
      expect.objectContaining({
        code: 'INVALID_OPTIONS',
        message: 'Expected `leaseMillis` to be shorter than `ttlSeconds` (60000 milliseconds), got `60000`',
      }) as Error,
    );
    expect(() => resolve({ mode: 'two-phase', ttlSeconds: 60, leaseMillis: 59_999 })).not.toThrow();
  });

  it('keeps an in-progress claim its TTL past the lease end, rounded up to the second', () => {
    expect(claimExpiresAt(1_700_000_030_000, 3600)).toBe(1_700_003_630);
    expect(claimExpiresAt(1_700_000_030_001, 3600)).toBe(1_700_003_631);
  });
});
