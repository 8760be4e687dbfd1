import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canonicalNumber,
  exactIntegerText,
  isExactNumberLiteral,
  type JsonNode,
  type NumberLiteral,
  nodeAt,
  readJson,
} from '../../../lambda/core/json-text';
import { check } from '../../support/fixtures';

describe('readJson', () => {
  it('keeps number literals as written, objects as maps (the last duplicate wins), and decodes strings', () => {
    expect(
      readJson(' { "id" : 12345678901234567890, "tags": ["\\u0041", true, null], "id2": -1.50e3, "id": 1 } '),
    ).toEqual(
      new Map<string, unknown>([
        ['id', { literal: '1' }],
        ['tags', ['A', true, null]],
        ['id2', { literal: '-1.50e3' }],
      ]),
    );
  });

  it('rejects what JSON.parse rejects, giving the position but never the text', () => {
    for (const text of ['', '{', '[1,]', '{"a":1,}', '01', '1.', '-', 'nul', '[1] x', '{"a" 1}', "{'a':1}"]) {
      expect(() => JSON.parse(text)).toThrow(SyntaxError);
      expect(() => readJson(text)).toThrow(
        expect.objectContaining({
          name: 'SyntaxError',
          message: expect.stringMatching(/^Unexpected JSON at position \d+$/),
        }),
      );
    }
    expect(() => readJson('"a\nb"')).toThrow(SyntaxError);
  });

  it('reads every JSON text JSON.parse reads, to the same value (property)', () => {
    /** A node as `JSON.parse` gives it: maps as objects (`__proto__` an own member), literals as numbers. */
    const parsed = (node: JsonNode): unknown => {
      if (node instanceof Map)
        return Object.fromEntries([...node].map(([name, member]) => [name, parsed(member)]));
      if (Array.isArray(node)) return node.map(parsed);
      if (node !== null && typeof node === 'object') return Number((node as NumberLiteral).literal);
      return node;
    };
    return check(
      fc.property(fc.jsonValue(), fc.constantFrom(undefined, 2), (value, indent) => {
        const text = JSON.stringify(value, null, indent);
        expect(parsed(readJson(text))).toEqual(JSON.parse(text));
      }),
    );
  });

  it('finds the node at a path of member names, or nothing', () => {
    const root = readJson('{"order":{"id":42,"lines":[1]}}');
    expect(nodeAt(root, ['order', 'id'])).toEqual({ literal: '42' });
    expect(nodeAt(root, ['order', 'lines', '0'])).toBeUndefined();
    expect(nodeAt(root, ['order', 'missing'])).toBeUndefined();
  });
});

describe('numbers', () => {
  it('knows which literals a double carries exactly', () => {
    for (const literal of [
      '0',
      '-0',
      '0e5',
      '1.0',
      '1.50',
      '0.1',
      '-2.5E-3',
      '1e21',
      '9007199254740992',
      '12345678901234567000',
    ]) {
      expect([literal, isExactNumberLiteral(literal)]).toEqual([literal, true]);
    }
    for (const literal of [
      '9007199254740993',
      '12345678901234567890',
      '0.10000000000000000000001',
      '1e400',
      '-1e400',
    ]) {
      expect([literal, isExactNumberLiteral(literal)]).toEqual([literal, false]);
    }
  });

  it('writes exact literals as JSON.stringify writes their double, and others by their digits and power of ten', () => {
    expect(['1.0', '1e0', '100e-2', '-0', '1.50', '1e21', '1e-7'].map(canonicalNumber)).toEqual([
      '1',
      '1',
      '1',
      '0',
      '1.5',
      '1e+21',
      '1e-7',
    ]);
    expect(
      [
        '12345678901234567890',
        '12345678901234567891',
        '1234567890123456789.0e1',
        '1e400',
        '-0.10000000000000000000001',
      ].map(canonicalNumber),
    ).toEqual([
      '1234567890123456789E1',
      '12345678901234567891E0',
      '1234567890123456789E1',
      '1E400',
      '-10000000000000000000001E-23',
    ]);
  });

  it('gives the canonical text of a number JSON.stringify writes (property)', () =>
    check(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (value) => {
        const written = JSON.stringify(value);
        expect(canonicalNumber(written)).toBe(written);
        expect(canonicalNumber(value.toExponential())).toBe(written);
      }),
    ));

  it('writes the integer a literal denotes with every digit, and nothing for fractions or huge exponents', () => {
    expect(['12345678901234567891', '4.2e1', '-0', '-7', '1.0', '1e3'].map(exactIntegerText)).toEqual([
      '12345678901234567891',
      '42',
      '0',
      '-7',
      '1',
      '1000',
    ]);
    expect(['1.5', '1e-3', '1e1024', '1e999999999'].map(exactIntegerText)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });
});
