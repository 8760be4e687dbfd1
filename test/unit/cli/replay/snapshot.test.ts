import { describe, expect, it } from 'vitest';
import { createTableSnapshot, itemKey, keyId } from '../../../../cli/replay/snapshot';

describe('createTableSnapshot', () => {
  it('sorts items by partition key, then numeric sort key numerically', () => {
    const snapshot = createTableSnapshot(
      'orders',
      ['pk', 'sk'],
      [
        { pk: { S: 'b' }, sk: { N: '2' } },
        { pk: { S: 'a' }, sk: { N: '10' } },
        { pk: { S: 'a' }, sk: { N: '9' } },
        { pk: { S: 'a' }, sk: { N: '-1.5' } },
      ],
    );

    expect(snapshot).toEqual({
      table: 'orders',
      keyAttributes: ['pk', 'sk'],
      items: [
        { pk: { S: 'a' }, sk: { N: '-1.5' } },
        { pk: { S: 'a' }, sk: { N: '9' } },
        { pk: { S: 'a' }, sk: { N: '10' } },
        { pk: { S: 'b' }, sk: { N: '2' } },
      ],
    });
  });

  it('sorts binary keys by unsigned bytes and string keys by code unit', () => {
    const binary = createTableSnapshot(
      't',
      ['id'],
      [{ id: { B: Uint8Array.of(0xff) } }, { id: { B: Uint8Array.of(0x01, 0x02) } }],
    );
    const strings = createTableSnapshot(
      't',
      ['id'],
      [{ id: { S: 'b' } }, { id: { S: 'B' } }, { id: { S: 'a' } }],
    );

    expect(binary.items.map((item) => [...item.id!.B!])).toEqual([[1, 2], [255]]);
    expect(strings.items.map((item) => item.id!.S)).toEqual(['B', 'a', 'b']);
  });

  it('puts attributes and map entries in name order and set members in order, keeping list order', () => {
    const snapshot = createTableSnapshot(
      't',
      ['id'],
      [
        {
          z: { SS: ['b', 'a'] },
          id: { S: '1' },
          m: { M: { y: { NS: ['10', '9'] }, x: { L: [{ S: 'second' }, { S: 'first' }] } } },
        },
      ],
    );

    const [item] = snapshot.items;
    expect(JSON.stringify(item)).toBe(
      '{"id":{"S":"1"},"m":{"M":{"x":{"L":[{"S":"second"},{"S":"first"}]},"y":{"NS":["9","10"]}}},"z":{"SS":["a","b"]}}',
    );
  });
});

describe('itemKey and keyId', () => {
  it('extracts the key attributes in key schema order and identifies equal keys by equal strings', () => {
    const item = { total: { N: '3' }, sk: { N: '1' }, pk: { S: 'a' } };

    expect(itemKey(item, ['pk', 'sk'])).toEqual({ pk: { S: 'a' }, sk: { N: '1' } });
    expect(keyId(item, ['pk', 'sk'])).toBe(keyId({ pk: { S: 'a' }, sk: { N: '1' } }, ['pk', 'sk']));
    expect(keyId(item, ['pk', 'sk'])).not.toBe(keyId({ pk: { S: 'a' }, sk: { S: '1' } }, ['pk', 'sk']));
  });
});
