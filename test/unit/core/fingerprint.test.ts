import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  canonicalJsonOfParsedText,
  canonicalJsonText,
  fingerprintOf,
  sha256Hex,
} from '../../../lambda/core/fingerprint';
import { check } from '../../support/fixtures';

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

describe('canonicalJsonText', () => {
  it('keeps every digit of a number, so bodies differing only beyond a double differ', () => {
    const first = canonicalJsonText('{"orderId":"o-1","amount":12345678901234567890}');
    const second = canonicalJsonText('{"orderId":"o-1","amount":12345678901234567891}');
    expect(first).toBe('{"amount":1234567890123456789E1,"orderId":"o-1"}');
    expect(second).toBe('{"amount":12345678901234567891E0,"orderId":"o-1"}');
    // Parsed first, the two bodies are one payload.
    expect(canonicalJson(JSON.parse('{"amount":12345678901234567890}'))).toBe(
      canonicalJson(JSON.parse('{"amount":12345678901234567891}')),
    );
  });

  it('ignores key order, whitespace and how an exact number is written', () => {
    expect(canonicalJsonText('{ "b" : [ 1.0, 2e0 ],\n "a" : { "y": 0.50, "x": -0 } }')).toBe(
      '{"a":{"x":0,"y":0.5},"b":[1,2]}',
    );
  });

  it('escapes lone surrogates as JSON.stringify does, so they never merge', () => {
    expect(canonicalJsonText('"\\ud800"')).toBe('"\\ud800"');
    expect(canonicalJsonText('"\\ud800"')).not.toBe(canonicalJsonText('"\\udc00"'));
  });

  it('is canonicalJson of the parsed body for every payload a double carries exactly (property)', () =>
    check(
      fc.property(fc.jsonValue(), fc.constantFrom(undefined, 1, '\t'), (value, indent) => {
        const text = JSON.stringify(value, null, indent);
        expect(canonicalJsonText(text)).toBe(canonicalJson(JSON.parse(text)));
      }),
    ));
});

describe('canonicalJsonOfParsedText', () => {
  /** Number literals JSON allows, written every way: exact, inexact, beyond a double, signed zeros. */
  const numberLiteral = fc.oneof(
    fc.constantFrom('0', '-0', '1.0', '1e0', '1E+2', '0.50', '-0.0e-5', '1.0e400', '-1e-400', '4.2e1'),
    fc.constantFrom('12345678901234567890', '9007199254740993', '0.1000000000000000055511151231257827'),
    fc
      .tuple(
        fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }),
        fc.nat(40),
        fc.integer({ min: -30, max: 30 }),
      )
      .map(
        ([digits, fraction, power]) =>
          `${digits}${fraction > 0 ? `.${String(fraction).padStart(3, '0')}` : ''}${power === 0 ? '' : `e${power}`}`,
      ),
  );
  /**
   * Member names, among them those an object written in insertion order would get wrong: array
   * indices (written first, in numeric order) and `__proto__`.
   */
  const memberName = fc.oneof(
    fc.string({ maxLength: 4 }),
    fc.constantFrom('__proto__', '0', '9', '10', '01', '-1', '1a', 'toJSON', 'constructor'),
  );
  /** JSON texts with such literals in objects and arrays, and strings holding digits, quotes and escapes. */
  const text = fc.letrec<{ value: string }>((tie) => ({
    value: fc.oneof(
      { depthSize: 'small' },
      numberLiteral,
      fc.constantFrom('"12"', '"-1e5 \\\\"', '"\\"1.0\\""', '"\\u0031.50"', 'true', 'null', '""'),
      fc.string().map((s) => JSON.stringify(s)),
      fc.array(tie('value'), { maxLength: 4 }).map((items) => `[${items.join(',')}]`),
      fc
        .array(fc.tuple(memberName, tie('value')), { maxLength: 4 })
        .map((members) => `{ ${members.map(([k, v]) => `${JSON.stringify(k)} : ${v}`).join(',\n')} }`),
    ),
  })).value;

  it('is the lossless reading of every JSON text, numbers written any way and duplicate keys included (property)', () =>
    check(
      fc.property(text, (json) => {
        expect(canonicalJsonOfParsedText(json, JSON.parse(json))).toBe(canonicalJsonText(json));
      }),
    ));

  it('sorts members as canonicalJson does, array-index names and __proto__ included', () => {
    for (const body of [
      '{"b":1,"a":{"d":[{"z":0,"y":null}],"c":"x"}}',
      '{"9":1,"10":2,"a":3}',
      '{"__proto__":{"x":1},"a":[]}',
      '[{"b":{"__proto__":null}},{"10":{},"9":[]}]',
      // More members than are sorted by insertion.
      JSON.stringify(Object.fromEntries(Array.from({ length: 20 }, (_, n) => [`k${(n * 7) % 20}é`, n]))),
    ]) {
      const parsed: unknown = JSON.parse(body);
      expect(canonicalJsonOfParsedText(body, parsed)).toBe(canonicalJson(parsed));
    }
    expect(canonicalJsonOfParsedText('{"9":1,"10":2}', JSON.parse('{"9":1,"10":2}'))).toBe('{"10":2,"9":1}');
  });

  it('keeps every digit where the parsed body has lost some', () => {
    const body = '{"amount":12345678901234567891,"id":"12345678901234567890"}';
    expect(canonicalJsonOfParsedText(body, JSON.parse(body))).toBe(
      '{"amount":12345678901234567891E0,"id":"12345678901234567890"}',
    );
    // A number after a string that ends in an escaped quote is still found.
    const escaped = '["\\"",12345678901234567891,"x"]';
    expect(canonicalJsonOfParsedText(escaped, JSON.parse(escaped))).toBe(
      '["\\"",12345678901234567891E0,"x"]',
    );
    // Digits inside a string are not numbers, and an exact literal reads as its double.
    const plain = '{"b":[1.0,2e0],"a":"12345678901234567891"}';
    expect(canonicalJsonOfParsedText(plain, JSON.parse(plain))).toBe(
      '{"a":"12345678901234567891","b":[1,2]}',
    );
  });
});

describe('sha256Hex', () => {
  it('hashes well-formed text as UTF-8, and text with lone surrogates so that they stay distinct', () => {
    expect(sha256Hex('é😀')).toBe(createHash('sha256').update(Buffer.from('é😀', 'utf8')).digest('hex'));
    const hashes = ['\ud800', '\udc00', '\ufffd', 'a\ud800b', 'a\udbffb'].map(sha256Hex);
    expect(new Set(hashes).size).toBe(5);
    // 0xFF, then the UTF-16 code units: 'a' is 61 00, the lone surrogate U+D800 is 00 D8.
    expect(sha256Hex('a\ud800')).toBe(
      createHash('sha256')
        .update(Buffer.from([0xff, 0x61, 0x00, 0x00, 0xd8]))
        .digest('hex'),
    );
  });
});
