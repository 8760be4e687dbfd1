import { describe, expect, it } from 'vitest';
import {
  itemSize,
  readUnits,
  transactionalWriteUnits,
  valueSize,
  writeUnits,
} from '../../../bench/stub/capacity';

describe('bench capacity formula', () => {
  it('sizes strings by UTF-8 bytes and numbers by significant digits', () => {
    expect(valueSize({ S: 'héllo' })).toBe(6);
    expect(valueSize({ N: '12345' })).toBe(4);
    expect(valueSize({ N: '1000' })).toBe(2);
    expect(valueSize({ BOOL: true })).toBe(1);
  });

  it('sizes an item as attribute names plus values, maps and lists with their overhead', () => {
    expect(itemSize({ pk: { S: 'abc' }, n: { N: '7' } })).toBe(2 + 3 + 1 + 2);
    expect(valueSize({ L: [{ S: 'a' }, { S: 'b' }] })).toBe(3 + 2 + 2);
    expect(valueSize({ M: { a: { S: 'b' } } })).toBe(3 + 1 + 1 + 1);
  });

  it('charges at least one write unit, one per started KB of the larger image', () => {
    expect(writeUnits(0)).toBe(1);
    expect(writeUnits(1024)).toBe(1);
    expect(writeUnits(1025)).toBe(2);
    expect(writeUnits(300, 2100)).toBe(3);
  });

  it('doubles write units inside a committed transaction', () => {
    expect(transactionalWriteUnits(500)).toBe(2);
    expect(transactionalWriteUnits(1500)).toBe(4);
  });

  it('charges reads per started 4 KB, halved when eventually consistent, also for a missing item', () => {
    expect(readUnits(0, true)).toBe(1);
    expect(readUnits(4097, true)).toBe(2);
    expect(readUnits(100, false)).toBe(0.5);
  });
});
