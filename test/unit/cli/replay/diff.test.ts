import { describe, expect, it } from 'vitest';
import { diffSnapshots, diffTable } from '../../../../cli/replay/diff';
import { createTableSnapshot, type Item } from '../../../../cli/replay/snapshot';

const orders = (items: Item[]) => createTableSnapshot('orders', ['pk'], items);

describe('diffTable', () => {
  it('finds no differences between equal snapshots, whatever order sets and maps came in', () => {
    const first = orders([
      { pk: { S: 'a' }, tags: { SS: ['x', 'y'] }, m: { M: { b: { N: '1' }, a: { N: '2' } } } },
    ]);
    const second = orders([
      { m: { M: { a: { N: '2' }, b: { N: '1' } } }, tags: { SS: ['y', 'x'] }, pk: { S: 'a' } },
    ]);

    expect(diffTable(first, second)).toEqual([]);
  });

  it('reports a changed attribute with its key, path and both values', () => {
    const first = orders([{ pk: { S: 'o-1' }, processedAt: { N: '1000' }, status: { S: 'PAID' } }]);
    const second = orders([{ pk: { S: 'o-1' }, processedAt: { N: '2000' }, status: { S: 'PAID' } }]);

    expect(diffTable(first, second)).toEqual([
      {
        table: 'orders',
        key: { pk: { S: 'o-1' } },
        change: 'changed',
        path: 'processedAt',
        before: { N: '1000' },
        after: { N: '2000' },
      },
    ]);
  });

  it('reports added and removed attributes, nested map entries and list elements by path, in name order', () => {
    const first = orders([
      {
        pk: { S: 'a' },
        note: { S: 'x' },
        address: { M: { city: { S: 'Oslo' } } },
        lines: { L: [{ N: '1' }] },
      },
    ]);
    const second = orders([
      {
        pk: { S: 'a' },
        retries: { N: '1' },
        address: { M: { city: { S: 'Bergen' }, zip: { S: '5003' } } },
        lines: { L: [{ N: '1' }, { M: { qty: { N: '2' } } }] },
      },
    ]);

    expect(
      diffTable(first, second).map(({ change, path, before, after }) => ({ change, path, before, after })),
    ).toEqual([
      { change: 'changed', path: 'address.city', before: { S: 'Oslo' }, after: { S: 'Bergen' } },
      { change: 'added', path: 'address.zip', before: undefined, after: { S: '5003' } },
      { change: 'added', path: 'lines[1]', before: undefined, after: { M: { qty: { N: '2' } } } },
      { change: 'removed', path: 'note', before: { S: 'x' }, after: undefined },
      { change: 'added', path: 'retries', before: undefined, after: { N: '1' } },
    ]);
  });

  it('reports a change of type as a change, and quotes names that are not identifiers', () => {
    const first = orders([
      { pk: { S: 'a' }, 'order.total': { N: '5' }, m: { M: { 'two words': { N: '1' } } } },
    ]);
    const second = orders([
      { pk: { S: 'a' }, 'order.total': { S: '5' }, m: { M: { 'two words': { N: '2' } } } },
    ]);

    expect(diffTable(first, second).map((difference) => difference.path)).toEqual([
      'm["two words"]',
      '["order.total"]',
    ]);
  });

  it('compares binaries by content', () => {
    const first = orders([
      { pk: { S: 'a' }, raw: { B: Uint8Array.of(1, 2) }, same: { BS: [Uint8Array.of(2), Uint8Array.of(1)] } },
    ]);
    const second = orders([
      { pk: { S: 'a' }, raw: { B: Uint8Array.of(1, 3) }, same: { BS: [Uint8Array.of(1), Uint8Array.of(2)] } },
    ]);

    expect(diffTable(first, second).map((difference) => difference.path)).toEqual(['raw']);
  });

  it('reports added and removed items whole, in key order among changed ones', () => {
    const first = orders([{ pk: { S: 'a' } }, { pk: { S: 'c' }, n: { N: '1' } }]);
    const second = orders([
      { pk: { S: 'b' }, n: { N: '1' } },
      { pk: { S: 'c' }, n: { N: '2' } },
    ]);

    expect(diffTable(first, second)).toEqual([
      {
        table: 'orders',
        key: { pk: { S: 'a' } },
        change: 'item-removed',
        path: '',
        before: { M: { pk: { S: 'a' } } },
      },
      {
        table: 'orders',
        key: { pk: { S: 'b' } },
        change: 'item-added',
        path: '',
        after: { M: { n: { N: '1' }, pk: { S: 'b' } } },
      },
      {
        table: 'orders',
        key: { pk: { S: 'c' } },
        change: 'changed',
        path: 'n',
        before: { N: '1' },
        after: { N: '2' },
      },
    ]);
  });
});

describe('diffSnapshots', () => {
  it('diffs table by table in the order of the first snapshot', () => {
    const inbox = (status: string) =>
      createTableSnapshot('inbox', ['pk'], [{ pk: { S: 'k' }, status: { S: status } }]);

    const differences = diffSnapshots(
      [orders([{ pk: { S: 'a' }, n: { N: '1' } }]), inbox('IN_PROGRESS')],
      [inbox('COMPLETED'), orders([{ pk: { S: 'a' }, n: { N: '2' } }])],
    );

    expect(differences.map(({ table, path }) => `${table}:${path}`)).toEqual(['orders:n', 'inbox:status']);
  });
});
