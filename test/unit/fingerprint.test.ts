import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, fingerprintOf, sha256Hex } from '../../lambda/core/fingerprint';
import { check } from './sqs-fixtures';

describe('canonicalJson', () => {
  it('sorts keys at every depth and writes no whitespace', () => {
    expect(canonicalJson({ b: 1, a: { d: [true, null], c: 'x' } })).toBe(
      '{"a":{"c":"x","d":[true,null]},"b":1}',
    );
  });

  it('omits undefined members, writes undefined array items as null, honours toJSON and writes bigints as strings', () => {
    expect(canonicalJson({ a: undefined, b: [undefined, () => 1], c: new Date(0), d: 10n })).toBe(
      '{"b":[null,null],"c":"1970-01-01T00:00:00.000Z","d":"10"}',
    );
    expect(canonicalJson(undefined)).toBe('null');
    expect(canonicalJson('text')).toBe('"text"');
  });

  it('rejects a cyclic structure but accepts a shared one', () => {
    const shared = { x: 1 };
    expect(canonicalJson({ a: shared, b: shared })).toBe('{"a":{"x":1},"b":{"x":1}}');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => canonicalJson(cyclic)).toThrow(TypeError);
  });

  it('parses back to the same value and ignores key order (property)', () =>
    check(
      fc.property(fc.jsonValue(), (value) => {
        const canonical = canonicalJson(value);
        expect(JSON.parse(canonical)).toEqual(JSON.parse(JSON.stringify(value)));
        const reordered = JSON.parse(JSON.stringify(value), (_key, v) =>
          v && typeof v === 'object' && !Array.isArray(v)
            ? Object.fromEntries(Object.entries(v).reverse())
            : v,
        );
        expect(canonicalJson(reordered)).toBe(canonical);
      }),
    ));
});

describe('fingerprintOf', () => {
  it('is the SHA-256 hex of the canonical JSON', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(fingerprintOf({ b: 2, a: 1 })).toBe(sha256Hex('{"a":1,"b":2}'));
  });
});
