import { describe, expect, it } from 'vitest';
import type { Difference } from '../../../../cli/replay/diff';
import {
  formatDifferences,
  formatJsonReport,
  formatValue,
  formatVerdict,
} from '../../../../cli/replay/format';
import { createTableSnapshot } from '../../../../cli/replay/snapshot';

const differences: Difference[] = [
  {
    table: 'orders',
    key: { pk: { S: 'o-1' }, sk: { N: '1' } },
    change: 'changed',
    path: 'processedAt',
    before: { N: '1700000000123' },
    after: { N: '1700000000456' },
  },
  {
    table: 'orders',
    key: { pk: { S: 'o-1' }, sk: { N: '1' } },
    change: 'added',
    path: 'retries',
    after: { N: '1' },
  },
  {
    table: 'orders',
    key: { pk: { S: 'o-1' }, sk: { N: '1' } },
    change: 'removed',
    path: 'note',
    before: { S: 'x' },
  },
  {
    table: 'orders',
    key: { pk: { S: 'o-9' }, sk: { N: '1' } },
    change: 'item-added',
    path: '',
    after: { M: { pk: { S: 'o-9' }, sk: { N: '1' }, total: { N: '3' } } },
  },
  {
    table: 'audit',
    key: { id: { S: 'e-1' } },
    change: 'item-removed',
    path: '',
    before: { M: { id: { S: 'e-1' } } },
  },
];

describe('formatDifferences', () => {
  it('groups differences by item and marks changed, added and removed values', () => {
    expect(formatDifferences(differences)).toBe(
      [
        'orders {pk: "o-1", sk: 1}',
        '  ~ processedAt: 1700000000123 -> 1700000000456',
        '  + retries: 1',
        '  - note: "x"',
        'orders {pk: "o-9", sk: 1}',
        '  + item added: {pk: "o-9", sk: 1, total: 3}',
        'audit {id: "e-1"}',
        '  - item removed: {id: "e-1"}',
      ].join('\n'),
    );
  });

  it('says so when there are no differences', () => {
    expect(formatDifferences([])).toBe('No differences.');
  });

  it('cuts long values and says how much was left out', () => {
    const long: Difference = {
      table: 't',
      key: { id: { S: 'a' } },
      change: 'added',
      path: 'blob',
      after: { S: 'y'.repeat(30) },
    };

    expect(formatDifferences([long], { maxValueLength: 10 })).toBe(
      't {id: "a"}\n  + blob: "yyyyyyyyy... (22 more characters)',
    );
  });
});

describe('formatValue', () => {
  it('renders every DynamoDB type compactly', () => {
    expect(
      formatValue({
        M: {
          s: { S: 'a"b' },
          n: { N: '-1.5' },
          t: { BOOL: true },
          z: { NULL: true },
          b: { B: Uint8Array.of(0, 1, 2) },
          ss: { SS: ['a', 'b'] },
          ns: { NS: ['1', '2'] },
          bs: { BS: [Uint8Array.of(255)] },
          l: { L: [{ N: '1' }, { S: 'x' }] },
          'odd name': { M: {} },
        },
      }),
    ).toBe(
      '{s: "a\\"b", n: -1.5, t: true, z: null, b: <base64 AAEC>, ss: <<"a", "b">>, ns: <<1, 2>>, bs: <<<base64 /w==>>>, l: [1, "x"], "odd name": {}}',
    );
  });
});

describe('formatVerdict', () => {
  const snapshot = [
    createTableSnapshot('orders', ['pk'], [{ pk: { S: 'a' } }, { pk: { S: 'b' } }]),
    createTableSnapshot('audit', ['id'], [{ id: { S: 'e' } }]),
  ];

  it('passes with the number of messages, tables and items', () => {
    expect(
      formatVerdict({ messages: 3, firstSnapshot: snapshot, secondSnapshot: snapshot, differences: [] }),
    ).toBe('PASS: replaying 3 messages a second time changed nothing in tables orders, audit (3 items).');
  });

  it('fails with the changed, added and removed items and the tables they are in', () => {
    expect(
      formatVerdict({ messages: 1, firstSnapshot: snapshot, secondSnapshot: snapshot, differences }),
    ).toBe(
      'FAIL: replaying 1 message a second time changed 1 item, added 1 item and removed 1 item in tables orders, audit (5 differences).',
    );
    expect(
      formatVerdict({
        messages: 2,
        firstSnapshot: snapshot,
        secondSnapshot: snapshot,
        differences: differences.slice(0, 1),
      }),
    ).toBe('FAIL: replaying 2 messages a second time changed 1 item in table orders (1 difference).');
  });
});

describe('formatJsonReport', () => {
  it('reports the verdict, item counts per table and differences in DynamoDB JSON with base64 binaries', () => {
    const first = [createTableSnapshot('orders', ['pk'], [{ pk: { S: 'a' }, raw: { B: Uint8Array.of(1) } }])];
    const second = [
      createTableSnapshot('orders', ['pk'], [{ pk: { S: 'a' }, raw: { B: Uint8Array.of(2) } }]),
    ];
    const change: Difference = {
      table: 'orders',
      key: { pk: { S: 'a' } },
      change: 'changed',
      path: 'raw',
      before: { B: Uint8Array.of(1) },
      after: { B: Uint8Array.of(2) },
    };

    const text = formatJsonReport({
      messages: 1,
      firstSnapshot: first,
      secondSnapshot: second,
      differences: [change],
    });

    expect(text.endsWith('}\n')).toBe(true);
    expect(JSON.parse(text)).toEqual({
      changed: true,
      verdict: 'FAIL: replaying 1 message a second time changed 1 item in table orders (1 difference).',
      messages: 1,
      tables: [{ table: 'orders', itemsAfterFirstReplay: 1, itemsAfterSecondReplay: 1 }],
      differences: [
        {
          table: 'orders',
          key: { pk: { S: 'a' } },
          change: 'changed',
          path: 'raw',
          before: { B: 'AQ==' },
          after: { B: 'Ag==' },
        },
      ],
    });
  });
});
