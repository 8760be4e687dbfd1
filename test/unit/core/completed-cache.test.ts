import { describe, expect, it } from 'vitest';
import { createCompletedCache, expectCompletedCacheOptions } from '../../../lambda/core/completed-cache';
import { MAX_COMPLETED_CACHE_ENTRIES } from '../../../lambda/core/contract';
import { epochSeconds } from '../../../lambda/core/time';
import { T0 } from '../../support/fixtures';

const NOW_SECONDS = epochSeconds(T0);
const LATER = NOW_SECONDS + 3600;

describe('completed-record cache', () => {
  it('answers a remembered key with the same fingerprint, and nothing else', () => {
    const cache = createCompletedCache({ maxEntries: 10 });
    cache.remember('orders#o-1', 'fp-1', LATER, T0);

    expect({
      same: cache.has('orders#o-1', 'fp-1', T0),
      otherFingerprint: cache.has('orders#o-1', 'fp-2', T0),
      otherKey: cache.has('orders#o-2', 'fp-1', T0),
    }).toEqual({ same: true, otherFingerprint: false, otherKey: false });
  });

  it('keeps an entry with another fingerprint after a miss, so the first payload still hits', () => {
    const cache = createCompletedCache({ maxEntries: 10 });
    cache.remember('orders#o-1', 'fp-1', LATER, T0);

    cache.has('orders#o-1', 'fp-2', T0);

    expect({ size: cache.size, hit: cache.has('orders#o-1', 'fp-1', T0) }).toEqual({ size: 1, hit: true });
  });

  it('evicts the least recently used entry beyond maxEntries, a hit counting as a use', () => {
    const cache = createCompletedCache({ maxEntries: 2 });
    cache.remember('k#1', 'fp', LATER, T0);
    cache.remember('k#2', 'fp', LATER, T0);
    // k#1 is used: k#2 is now the least recently used.
    expect(cache.has('k#1', 'fp', T0)).toBe(true);

    cache.remember('k#3', 'fp', LATER, T0);

    expect({
      size: cache.size,
      k1: cache.has('k#1', 'fp', T0),
      k2: cache.has('k#2', 'fp', T0),
      k3: cache.has('k#3', 'fp', T0),
    }).toEqual({ size: 2, k1: true, k2: false, k3: true });
  });

  it('moves a remembered key to the most recent place when it is remembered again', () => {
    const cache = createCompletedCache({ maxEntries: 2 });
    cache.remember('k#1', 'fp', LATER, T0);
    cache.remember('k#2', 'fp', LATER, T0);
    cache.remember('k#1', 'fp', LATER, T0);

    cache.remember('k#3', 'fp', LATER, T0);

    expect({ k1: cache.has('k#1', 'fp', T0), k2: cache.has('k#2', 'fp', T0) }).toEqual({
      k1: true,
      k2: false,
    });
  });

  it('treats an entry as absent from the second its expiresAt names, and removes it', () => {
    const cache = createCompletedCache({ maxEntries: 10 });
    cache.remember('orders#o-1', 'fp-1', NOW_SECONDS + 10, T0);

    const justBefore = cache.has('orders#o-1', 'fp-1', T0 + 9_999);
    const atExpiry = cache.has('orders#o-1', 'fp-1', T0 + 10_000);

    expect({ justBefore, atExpiry, size: cache.size }).toEqual({
      justBefore: true,
      atExpiry: false,
      size: 0,
    });
  });

  it('removes an expired entry even when the fingerprint differs', () => {
    const cache = createCompletedCache({ maxEntries: 10 });
    cache.remember('orders#o-1', 'fp-1', NOW_SECONDS + 10, T0);

    expect(cache.has('orders#o-1', 'fp-2', T0 + 10_000)).toBe(false);
    expect(cache.size).toBe(0);
  });

  it('does not keep a record already expired, and forgets the entry it replaces', () => {
    const cache = createCompletedCache({ maxEntries: 10 });
    cache.remember('orders#o-1', 'fp-1', LATER, T0);

    cache.remember('orders#o-1', 'fp-1', NOW_SECONDS, T0);

    expect({ size: cache.size, hit: cache.has('orders#o-1', 'fp-1', T0) }).toEqual({ size: 0, hit: false });
  });

  it('keeps a record that never expires (Number.MAX_SAFE_INTEGER) however late it is read', () => {
    const cache = createCompletedCache({ maxEntries: 10 });
    cache.remember('customers#c-1', 'fp-1', Number.MAX_SAFE_INTEGER, T0);

    expect(cache.has('customers#c-1', 'fp-1', T0 + 100 * 365 * 86_400_000)).toBe(true);
  });

  it('holds at most maxEntries entries however many keys it is given', () => {
    const cache = createCompletedCache({ maxEntries: 100 });
    for (let index = 0; index < 1000; index++) cache.remember(`k#${index}`, 'fp', LATER, T0);

    expect(cache.size).toBe(100);
    expect(cache.has('k#899', 'fp', T0)).toBe(false);
    expect(cache.has('k#900', 'fp', T0)).toBe(true);
  });
});

describe('completed-record cache options', () => {
  it.each([
    [null, 'Expected `completedCache` to be an object, got `null`'],
    [100, 'Expected `completedCache` to be an object, got `100`'],
    [{}, 'Expected `completedCache.maxEntries` to be an integer from 1 to 10000, got `undefined`'],
    [{ maxEntries: 0 }, 'Expected `completedCache.maxEntries` to be an integer from 1 to 10000, got `0`'],
    [{ maxEntries: 1.5 }, 'Expected `completedCache.maxEntries` to be an integer from 1 to 10000, got `1.5`'],
    [
      { maxEntries: '10' },
      'Expected `completedCache.maxEntries` to be an integer from 1 to 10000, got `"10"`',
    ],
    [
      { maxEntries: MAX_COMPLETED_CACHE_ENTRIES + 1 },
      'Expected `completedCache.maxEntries` to be an integer from 1 to 10000, got `10001`',
    ],
  ])('rejects %j with INVALID_OPTIONS', (value, message) => {
    expect(() => expectCompletedCacheOptions(value)).toThrow(
      expect.objectContaining({ code: 'INVALID_OPTIONS', message }),
    );
    expect(() => createCompletedCache(value as never)).toThrow(expect.objectContaining({ message }));
  });

  it('accepts no options (the cache is off) and the bounds 1 and 10000', () => {
    expect(() => expectCompletedCacheOptions(undefined)).not.toThrow();
    expect(createCompletedCache({ maxEntries: 1 }).size).toBe(0);
    expect(createCompletedCache({ maxEntries: MAX_COMPLETED_CACHE_ENTRIES }).size).toBe(0);
  });
});
