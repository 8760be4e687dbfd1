import { describe, expect, it } from 'vitest';
import {
  expectLeaseWithinTtl,
  expectPortOption,
  positiveOption,
  resolveLogOption,
} from '../../../lambda/core/entry-options';
import type { LogEntry } from '../../../lambda/core/logger';

describe('positiveOption', () => {
  it('answers the value, or the fallback when none was given', () => {
    expect(positiveOption('ttlSeconds', 60, 3600)).toBe(60);
    expect(positiveOption('ttlSeconds', undefined, 3600)).toBe(3600);
    expect(positiveOption('leaseMillis', undefined, undefined)).toBeUndefined();
    expect(positiveOption('maxResponseBytes', 10, 10, 10)).toBe(10);
  });

  it('rejects anything but an integer from 1 to the maximum, showing the value', () => {
    expect(() => positiveOption('ttlSeconds', 0, 3600)).toThrow(
      expect.objectContaining({
        code: 'INVALID_OPTIONS',
        message: 'Expected `ttlSeconds` to be a positive integer, got `0`',
      }) as Error,
    );
    expect(() => positiveOption('ttlSeconds', '60', 3600)).toThrow(
      'Expected `ttlSeconds` to be a positive integer, got `"60"`',
    );
    expect(() => positiveOption('maxResponseBytes', 11, 10, 10)).toThrow(
      'Expected `maxResponseBytes` to be an integer from 1 to 10, got `11`',
    );
  });
});

describe('expectLeaseWithinTtl', () => {
  it('accepts a lease shorter than the TTL and rejects one as long', () => {
    expect(() => expectLeaseWithinTtl(59_999, 60)).not.toThrow();
    expect(() => expectLeaseWithinTtl(60_000, 60)).toThrow(
      'Expected `leaseMillis` to be shorter than `ttlSeconds` (60000 milliseconds), got `60000`',
    );
  });
});

describe('expectPortOption', () => {
  it('needs an object with every method, and names them all', () => {
    expect(() => expectPortOption('store', { a() {}, b() {} }, ['a', 'b'])).not.toThrow();
    expect(() => expectPortOption('store', { a() {} }, ['a', 'b'])).toThrow(
      'Expected `store` to be an object with `a`, `b`, got `an object`',
    );
    expect(() => expectPortOption('store', null, ['a'])).toThrow(
      'Expected `store` to be an object with `a`, got `null`',
    );
  });
});

describe('resolveLogOption', () => {
  it('passes entries at or above the level to the logger, and swallows a failing logger', () => {
    const entries: LogEntry[] = [];
    const log = resolveLogOption({ logLevel: 'warn', logger: { log: (entry) => void entries.push(entry) } });
    log({ level: 'info', message: 'dropped' });
    log({ level: 'warn', message: 'kept' });
    const failing = resolveLogOption({
      logger: {
        log() {
          throw new Error('disk full');
        },
      },
    });

    expect(entries).toEqual([{ level: 'warn', message: 'kept' }]);
    expect(() => failing({ level: 'error', message: 'lost' })).not.toThrow();
  });

  it('rejects an unknown level and a logger without log', () => {
    expect(() => resolveLogOption({ logLevel: 'loud' as never })).toThrow(
      "Expected `logLevel` to be one of 'debug', 'info', 'warn', 'error', 'silent', got `\"loud\"`",
    );
    expect(() => resolveLogOption({ logger: {} as never })).toThrow(
      'Expected `logger` to be an object with `log`, got `an object`',
    );
  });
});
