import { describe, expect, it } from 'vitest';
import { fromBody } from '../../../lambda/core/dedup-key';
import { claimExpiresAt, isLeaseWithinTtl } from '../../../lambda/core/lease';
import {
  DEFAULT_CONCURRENCY,
  DEFAULT_DEADLINE_MARGIN_MILLIS,
  DEFAULT_TTL_SECONDS,
  resolveOptions,
} from '../../../lambda/core/options';
import { atomic } from '../../../lambda/modes/atomic';
import { entity } from '../../../lambda/modes/entity';
import { marker } from '../../../lambda/modes/marker';
import { twoPhase } from '../../../lambda/modes/two-phase';
import { createSqsBatchHandler, type SqsBatchHandlerOptions } from '../../../lambda/sqs/sqs-handler';
import { T0 } from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';

const valid: SqsBatchHandlerOptions<unknown> = {
  consumer: 'orders',
  dedupKey: fromBody('id'),
  mode: marker(() => undefined),
  store: createMemoryStore(),
  clock: () => T0,
};

/** Creates the processor, so the mode checks its own options and the store too. */
const resolve = (overrides: Record<string, unknown>) =>
  createSqsBatchHandler({ ...valid, ...overrides } as SqsBatchHandlerOptions<unknown>);

describe('resolveOptions', () => {
  it('applies the documented defaults and freezes the result', () => {
    const resolved = resolveOptions(valid);
    expect(resolved).toMatchObject({
      parse: 'json',
      ttlSeconds: DEFAULT_TTL_SECONDS,
      concurrency: DEFAULT_CONCURRENCY,
      deadlineMarginMillis: DEFAULT_DEADLINE_MARGIN_MILLIS,
      deadLetterWriter: undefined,
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
      'Expected `mode` to be a mode: `marker(handle)`, `atomic(handle)`, `entity(handle)` or `twoPhase({ handle })`, got `"twice"`',
    ],
    [
      { mode: undefined },
      'Expected `mode` to be a mode: `marker(handle)`, `atomic(handle)`, `entity(handle)` or `twoPhase({ handle })`, got `undefined`',
    ],
    [{ mode: marker(undefined as never) }, 'Expected `marker(handle)` to be a function, got `undefined`'],
    [{ mode: atomic('put' as never) }, 'Expected `atomic(handle)` to be a function, got `"put"`'],
    [{ mode: entity({} as never) }, 'Expected `entity(handle)` to be a function, got `an object`'],
    [{ mode: twoPhase(undefined as never) }, 'Expected `twoPhase(options)` to be an object, got `undefined`'],
    [{ mode: twoPhase({} as never) }, 'Expected `twoPhase.handle` to be a function, got `undefined`'],
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
    [{ store: {} }, 'Expected `store` to be an object with `insert`, `release`, got `an object`'],
    [
      { store: {}, mode: atomic(() => undefined) },
      'Expected `store` to be an object with `insert`, `commit`, got `an object`',
    ],
    [
      { store: {}, mode: entity(() => undefined as never) },
      'Expected `store` to be an object with `insertEntity`, got `an object`',
    ],
    [
      { store: {}, mode: twoPhase({ handle: () => undefined }) },
      'Expected `store` to be an object with `claimLease`, `complete`, `release`, `extendLease`, got `an object`',
    ],
    [{ clock: 0 }, 'Expected `clock` to be a function returning epoch milliseconds, got `0`'],
    [{ deadLetterWriter: 'sqs' }, 'Expected `deadLetterWriter` to be a function, got `"sqs"`'],
  ])('rejects %j at cold start with a message naming the option', (overrides, message) => {
    expect(() => resolve(overrides)).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS', message }));
  });

  it('rejects a missing options object', () => {
    expect(() => resolveOptions(null as never)).toThrow('Expected `options` to be an object, got `null`');
  });

  it("accepts metrics: false and a transport's dead-letter writer", () => {
    const deadLetterWriter = async () => undefined;
    expect(resolveOptions({ ...valid, metrics: false, deadLetterWriter })).toMatchObject({
      metrics: false,
      deadLetterWriter,
    });
  });
});

describe('the lease and TTL rule', () => {
  it('accepts only a lease shorter than the TTL, the rule the construct mirrors at synth', () => {
    expect(isLeaseWithinTtl(3_599_999, 3600)).toBe(true);
    expect(isLeaseWithinTtl(3_600_000, 3600)).toBe(false);
    const lease = (leaseMillis: number) => twoPhase({ handle: () => undefined, leaseMillis });
    expect(() => resolve({ mode: lease(60_000), ttlSeconds: 60 })).toThrow(
      expect.objectContaining({
        code: 'INVALID_OPTIONS',
        message:
          'Expected `twoPhase.leaseMillis` to be shorter than `ttlSeconds` (60000 milliseconds), got `60000`',
      }) as Error,
    );
    expect(() => resolve({ mode: lease(59_999), ttlSeconds: 60 })).not.toThrow();
  });

  it('keeps an in-progress claim its TTL past the lease end, rounded up to the second', () => {
    expect(claimExpiresAt(1_700_000_030_000, 3600)).toBe(1_700_003_630);
    expect(claimExpiresAt(1_700_000_030_001, 3600)).toBe(1_700_003_631);
  });
});
