import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  bodyPathOf,
  fromAttribute,
  fromBody,
  fromCloudEvent,
  fromMessageId,
  isValidName,
  keySourceDescription,
  SCOPED_KEY_HASH_THRESHOLD_BYTES,
  scopeKey,
  toDedupKey,
  toKeyPart,
} from '../../../lambda/core/dedup-key';
import { isWellFormedText, sha256Hex } from '../../../lambda/core/fingerprint';
import { fromDeduplicationId, fromRecord } from '../../../lambda/sqs/key-sources';
import { check, keyArgs, sqsRecord } from '../../support/fixtures';

describe('key sources', () => {
  const record = sqsRecord(
    'm-1',
    { eventId: 'e-1', order: { id: 42 }, 'a.b': 'dotted' },
    {
      attributes: { 'idempotency-key': 'k-1' },
      deduplicationId: 'd-1',
    },
  );
  const body = JSON.parse(record.body);

  it('reads a message attribute by name', () => {
    expect(fromAttribute('idempotency-key')(...keyArgs(record, body))).toBe('k-1');
    expect(fromAttribute('absent')(...keyArgs(record, body))).toBeUndefined();
  });

  it('reads a base64 binary attribute when there is no string value', () => {
    const binary = { ...record, messageAttributes: { key: { binaryValue: 'AQI=', dataType: 'Binary' } } };
    expect(fromAttribute('key')(...keyArgs(binary, body))).toBe('AQI=');
  });

  it('reads a body field by dotted path, by segments, or by function', () => {
    expect(fromBody('eventId')(...keyArgs(record, body))).toBe('e-1');
    expect(fromBody('order.id')(...keyArgs(record, body))).toBe(42);
    expect(fromBody(['a.b'])(...keyArgs(record, body))).toBe('dotted');
    expect(fromBody((b: { eventId: string }) => b.eventId)(...keyArgs(record, body))).toBe('e-1');
  });

  it('finds nothing along a path through a missing field, a primitive or an inherited property', () => {
    expect(fromBody('order.missing.deeper')(...keyArgs(record, body))).toBeUndefined();
    expect(fromBody('eventId.length')(...keyArgs(record, body))).toBeUndefined();
    expect(fromBody('constructor')(...keyArgs(record, body))).toBeUndefined();
    expect(fromBody('x')(...keyArgs(record, 'a text body'))).toBeUndefined();
  });

  it('takes the FIFO deduplication id and, only when asked, the message id', () => {
    expect(fromDeduplicationId()(...keyArgs(record, body))).toBe('d-1');
    expect(fromMessageId()(...keyArgs(record, body))).toBe('m-1');
    expect(fromRecord((r) => r.attributes.SentTimestamp)(...keyArgs(record, body))).toBe(
      record.attributes.SentTimestamp,
    );
  });

  it('keys a structured CloudEvent by source and id', () => {
    const event = { specversion: '1.0', source: 'https://shop.example/orders', id: 'evt-1', type: 't' };
    const key = toDedupKey(fromCloudEvent()(...keyArgs(sqsRecord('m', event), event)));
    expect(key).toBe('https%3A//shop.example/orders:evt-1');
  });

  it('keys a binary-mode CloudEvent by its ce-source and ce-id attributes, or ce_source and ce_id', () => {
    const dashed = sqsRecord('m', { data: 1 }, { attributes: { 'ce-source': 'src', 'ce-id': 'id-1' } });
    const underscored = sqsRecord('m', { data: 1 }, { attributes: { ce_source: 'src', ce_id: 'id-1' } });
    expect(toDedupKey(fromCloudEvent()(...keyArgs(dashed, { data: 1 })))).toBe('src:id-1');
    expect(toDedupKey(fromCloudEvent()(...keyArgs(underscored, { data: 1 })))).toBe('src:id-1');
  });

  it('finds no CloudEvents key in a body without specversion, or without source', () => {
    const plain = { source: 's', id: 'i' };
    expect(fromCloudEvent()(...keyArgs(sqsRecord('m', plain), plain))).toBeUndefined();
    expect(fromCloudEvent()(...keyArgs(sqsRecord('m', 'text'), 'text'))).toBeUndefined();
    const noSource = { specversion: '1.0', id: 'i' };
    expect(() => toDedupKey(fromCloudEvent()(...keyArgs(sqsRecord('m', noSource), noSource)))).toThrow(
      expect.objectContaining({
        code: 'MISSING_KEY',
        message: 'Part 0 of the dedup key is missing or empty',
      }),
    );
    const binaryWithoutSource = sqsRecord('m', {}, { attributes: { 'ce-id': 'i' } });
    expect(() => toDedupKey(fromCloudEvent()(...keyArgs(binaryWithoutSource, {})))).toThrow(
      expect.objectContaining({ code: 'MISSING_KEY' }),
    );
  });
});

describe('toDedupKey', () => {
  it('keeps strings, writes numbers and bigints in decimal', () => {
    expect(toDedupKey('k')).toBe('k');
    expect(toDedupKey(42)).toBe('42');
    expect(toDedupKey(12345678901234567890n)).toBe('12345678901234567890');
  });

  it('rejects a missing or empty key as MISSING_KEY', () => {
    for (const value of [undefined, null, '', []]) {
      expect(() => toDedupKey(value)).toThrow(expect.objectContaining({ code: 'MISSING_KEY' }));
    }
    expect(() => toDedupKey(['a', ''])).toThrow(
      expect.objectContaining({
        code: 'MISSING_KEY',
        message: 'Part 1 of the dedup key is missing or empty',
      }),
    );
  });

  it('rejects objects, booleans and non-finite numbers as INVALID_KEY without quoting them', () => {
    expect(() => toDedupKey({ secret: 'x' } as never)).toThrow(
      expect.objectContaining({
        code: 'INVALID_KEY',
        message: 'The dedup key must be a string, a finite number or a bigint, got object',
      }),
    );
    expect(() => toDedupKey(true as never)).toThrow(expect.objectContaining({ code: 'INVALID_KEY' }));
    expect(() => toDedupKey(Number.NaN)).toThrow(
      expect.objectContaining({ message: expect.stringMatching(/got NaN$/) }),
    );
  });

  it('joins composite parts so that different part lists never give the same key', () => {
    expect(toDedupKey(['a:b', 'c'])).toBe('a%3Ab:c');
    expect(toDedupKey(['a', 'b:c'])).toBe('a:b%3Ac');
    expect(toDedupKey(['100%', 7])).toBe('100%25:7');
  });

  it('escapes a plain key like a one-part composite, so it never equals a composite of several parts', () => {
    expect(toDedupKey('a:b')).toBe('a%3Ab');
    expect(toDedupKey(['a', 'b'])).toBe('a:b');
    expect(toDedupKey('100%')).toBe('100%25');
    expect(toDedupKey(['a:b'])).toBe(toDedupKey('a:b'));
    // Keys without `%` or `:` read as themselves.
    expect(toDedupKey('8e03978e-40d5-43e8-bc93-6894a57f9324')).toBe('8e03978e-40d5-43e8-bc93-6894a57f9324');
  });

  it('is injective over plain keys and composite keys (property)', () => {
    const part = fc.string({ minLength: 1, unit: fc.constantFrom('a', ':', '%', '3', 'A', '2', '5') });
    const key = fc.oneof(part, fc.array(part, { minLength: 2, maxLength: 4 }));
    return check(
      fc.property(key, key, (left, right) => {
        fc.pre(JSON.stringify(left) !== JSON.stringify(right));
        expect(toDedupKey(left)).not.toBe(toDedupKey(right));
      }),
    );
  });

  it('rejects an integer beyond Number.MAX_SAFE_INTEGER as INVALID_KEY, asking for a string without quoting it', () => {
    const message = 'The dedup key is a number that a double cannot hold exactly; send it as a string';
    for (const value of [Number('12345678901234567890'), 2 ** 53, -(2 ** 53), 1e300]) {
      expect(() => toDedupKey(value)).toThrow(expect.objectContaining({ code: 'INVALID_KEY', message }));
    }
    expect(() => toDedupKey(['o', 2 ** 60])).toThrow(
      expect.objectContaining({
        code: 'INVALID_KEY',
        message: expect.stringMatching(/^Part 1 of the dedup key/),
      }),
    );
    expect(toDedupKey(Number.MAX_SAFE_INTEGER)).toBe('9007199254740991');
    expect(toDedupKey(-Number.MAX_SAFE_INTEGER)).toBe('-9007199254740991');
    expect(toDedupKey(1.5)).toBe('1.5');
    expect(toDedupKey(2n ** 64n)).toBe('18446744073709551616');
  });

  it('rejects a key holding a lone surrogate as INVALID_KEY without quoting it, and keeps surrogate pairs', () => {
    const message = 'The dedup key is not well-formed UTF-16 (it holds a lone surrogate)';
    for (const value of ['\ud800', 'o-\udc00', 'o-\ude00\ud83d']) {
      expect(() => toDedupKey(value)).toThrow(expect.objectContaining({ code: 'INVALID_KEY', message }));
    }
    expect(() => toDedupKey(['ok', '\ud800'])).toThrow(
      expect.objectContaining({
        code: 'INVALID_KEY',
        message: expect.stringMatching(/^Part 1 of the dedup key/),
      }),
    );
    expect(toDedupKey('o-\ud83d\ude00')).toBe('o-😀');
  });

  it('checks one part without escaping it (toKeyPart)', () => {
    expect(toKeyPart('2026-01-01T00:00:00.000Z')).toBe('2026-01-01T00:00:00.000Z');
    expect(toKeyPart(7)).toBe('7');
    expect(() => toKeyPart(undefined)).toThrow(expect.objectContaining({ code: 'MISSING_KEY' }));
    expect(() => toKeyPart(['a'])).toThrow(expect.objectContaining({ code: 'INVALID_KEY' }));
  });
});

describe('fromBody(path)', () => {
  it('rejects an array or an object at the path as INVALID_KEY: only a function returns a composite', () => {
    const body = { ids: ['a', 'b'], order: { id: 'o-1' } };
    const record = sqsRecord('m', body);
    expect(() => fromBody('ids')(...keyArgs(record, body))).toThrow(
      expect.objectContaining({
        code: 'INVALID_KEY',
        message: 'The body field `ids` must be a string, a finite number or a bigint, got an array',
      }),
    );
    expect(() => fromBody('order')(...keyArgs(record, body))).toThrow(
      expect.objectContaining({
        code: 'INVALID_KEY',
        message: expect.stringMatching(/^The body field `order` .* got an object$/),
      }),
    );
    expect(toDedupKey(fromBody((input: typeof body) => input.ids)(...keyArgs(record, body)))).toBe('a:b');
  });

  it('remembers the path of a path source, for the lossless number check, and none for a function', () => {
    expect(bodyPathOf(fromBody('order.id'))).toEqual(['order', 'id']);
    expect(bodyPathOf(fromBody(['metadata', 'event.id']))).toEqual(['metadata', 'event.id']);
    expect(bodyPathOf(fromBody(() => 'k') as never)).toBeUndefined();
  });
});

describe('scopeKey', () => {
  it('scopes by consumer, and by consumer and effect', () => {
    expect(scopeKey('billing', 'order-1:PAID')).toBe('billing#order-1:PAID');
    expect(scopeKey('billing', 'order-1', 'send-invoice')).toBe('billing/send-invoice#order-1');
  });

  it('rejects consumer and effect names that would make the encoding ambiguous', () => {
    for (const name of ['', 'a#b', 'a/b', 'a b', 'x'.repeat(101)]) {
      expect(isValidName(name)).toBe(false);
      expect(() => scopeKey(name, 'k')).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }));
      expect(() => scopeKey('c', 'k', name)).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }));
    }
    expect(() => scopeKey('c', '')).toThrow(expect.objectContaining({ code: 'MISSING_KEY' }));
  });

  it('rejects a key holding a lone surrogate as INVALID_KEY, which hashing would merge with others', () => {
    for (const key of ['\ud800', `${'k'.repeat(2000)}\udc00`]) {
      expect(() => scopeKey('c', key)).toThrow(expect.objectContaining({ code: 'INVALID_KEY' }));
    }
  });

  it('hashes a key whose scoped form exceeds the threshold, counting UTF-8 bytes', () => {
    const fits = 'k'.repeat(SCOPED_KEY_HASH_THRESHOLD_BYTES - 'c#'.length);
    expect(scopeKey('c', fits)).toBe(`c#${fits}`);
    const long = `${fits}k`;
    expect(scopeKey('c', long)).toBe(`c#sha256:${sha256Hex(long)}`);
    const wide = 'é'.repeat(512); // 1024 bytes, 512 characters
    expect(scopeKey('c', wide)).toBe(`c#sha256:${sha256Hex(wide)}`);
  });

  it('hashes a literal key that starts with sha256:, so it cannot collide with a hashed key', () => {
    const long = 'x'.repeat(2000);
    const forged = `sha256:${sha256Hex(long)}`;
    expect(scopeKey('c', forged)).not.toBe(scopeKey('c', long));
    expect(scopeKey('c', forged)).toBe(`c#sha256:${sha256Hex(forged)}`);
  });

  it('always fits a DynamoDB partition key and keeps distinct keys distinct (property)', () =>
    check(
      fc.property(
        fc.stringMatching(/^[A-Za-z0-9._:-]{1,100}$/),
        fc.option(fc.stringMatching(/^[A-Za-z0-9._:-]{1,100}$/), { nil: undefined }),
        fc.string({ minLength: 1, maxLength: 1500, unit: 'binary' }),
        fc.string({ minLength: 1, maxLength: 1500, unit: 'binary' }),
        (consumer, effect, left, right) => {
          fc.pre(isWellFormedText(left) && isWellFormedText(right));
          const scoped = scopeKey(consumer, left, effect);
          expect(Buffer.byteLength(scoped, 'utf8')).toBeLessThanOrEqual(2048);
          expect(scoped.startsWith(effect === undefined ? `${consumer}#` : `${consumer}/${effect}#`)).toBe(
            true,
          );
          expect(scopeKey(consumer, left, effect)).toBe(scoped);
          if (left !== right) expect(scopeKey(consumer, right, effect)).not.toBe(scoped);
        },
      ),
    ));
});

describe('key errors name where the key is read, never its value', () => {
  it('names the body field, the message attribute, the CloudEvents pair and the deduplication id', () => {
    const missing = (source: string) =>
      expect.objectContaining({
        code: 'MISSING_KEY',
        message: `The dedup key (${source}) is missing or empty`,
      });
    expect(() => toDedupKey(undefined as never, keySourceDescription(fromBody('order.id')))).toThrow(
      missing('body field `order.id`'),
    );
    expect(() => toDedupKey('', keySourceDescription(fromAttribute('idempotency-key')))).toThrow(
      missing('message attribute `idempotency-key`'),
    );
    expect(() => toDedupKey(['s', undefined] as never, keySourceDescription(fromCloudEvent()))).toThrow(
      expect.objectContaining({
        code: 'MISSING_KEY',
        message: 'Part 1 of the dedup key (CloudEvents `source` and `id`) is missing or empty',
      }),
    );
    expect(keySourceDescription(fromDeduplicationId())).toBe(
      '`eo-deduplication-id` attribute, else the `MessageDeduplicationId`',
    );
    // A function of the user's is not described: the reason says only "the dedup key".
    expect(keySourceDescription(fromBody((body: { id: string }) => body.id))).toBeUndefined();
    expect(() => toDedupKey(undefined as never)).toThrow(
      expect.objectContaining({ message: 'The dedup key is missing or empty' }),
    );
  });
});
