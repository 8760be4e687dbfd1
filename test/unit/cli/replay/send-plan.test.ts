import { describe, expect, it } from 'vitest';
import type { LogEntry } from '../../../../cli/replay/log';
import { planBatches } from '../../../../cli/replay/send-plan';

const standard = { fifo: false, contentBasedDeduplication: false };

function entries(count: number, make: (line: number) => Partial<LogEntry> = () => ({})): LogEntry[] {
  return Array.from({ length: count }, (_, index) => ({
    line: index + 1,
    body: `m${index + 1}`,
    attributes: {},
    ...make(index + 1),
  }));
}

describe('planBatches', () => {
  it('sends the log in order in batches of at most ten, with entry ids naming the lines', () => {
    const batches = planBatches(entries(23), standard);

    expect(batches.map((batch) => batch.map((entry) => entry.Id))).toEqual([
      ['line-1', 'line-2', 'line-3', 'line-4', 'line-5', 'line-6', 'line-7', 'line-8', 'line-9', 'line-10'],
      [
        'line-11',
        'line-12',
        'line-13',
        'line-14',
        'line-15',
        'line-16',
        'line-17',
        'line-18',
        'line-19',
        'line-20',
      ],
      ['line-21', 'line-22', 'line-23'],
    ]);
  });

  it('types string attributes as String and numbers as Number, and passes group and deduplication ids', () => {
    const [batch] = planBatches(
      [
        {
          line: 4,
          body: '{"a":1}',
          attributes: { key: 'k-1', version: 2.5 },
          groupId: 'g',
          deduplicationId: 'd',
        },
      ],
      { fifo: true, contentBasedDeduplication: false },
    );

    expect(batch).toEqual([
      {
        Id: 'line-4',
        MessageBody: '{"a":1}',
        MessageAttributes: {
          key: { DataType: 'String', StringValue: 'k-1' },
          version: { DataType: 'Number', StringValue: '2.5' },
        },
        MessageGroupId: 'g',
        MessageDeduplicationId: 'd',
      },
    ]);
  });

  it('starts a new batch before the payload would pass 256 KiB', () => {
    const big = 'x'.repeat(100 * 1024);
    const batches = planBatches(
      entries(5, (line) => ({ body: line === 5 ? 'small' : big })),
      standard,
    );

    expect(batches.map((batch) => batch.map((entry) => entry.Id))).toEqual([
      ['line-1', 'line-2'],
      ['line-3', 'line-4', 'line-5'],
    ]);
  });

  it('sends a message larger than a batch alone and lets SQS judge it', () => {
    const batches = planBatches(
      entries(3, (line) => ({ body: line === 2 ? 'x'.repeat(300 * 1024) : 's' })),
      standard,
    );

    expect(batches.map((batch) => batch.map((entry) => entry.Id))).toEqual([
      ['line-1'],
      ['line-2'],
      ['line-3'],
    ]);
  });

  it('names the lines a FIFO queue would refuse: no group id, or no deduplication id without content-based deduplication', () => {
    const log = entries(3, (line) =>
      line === 1 ? { groupId: 'g', deduplicationId: 'd' } : line === 2 ? {} : { groupId: 'g' },
    );

    expect(() => planBatches(log, { fifo: true, contentBasedDeduplication: false })).toThrow(
      [
        'The message log does not fit the FIFO queue:',
        '  line 2: a FIFO queue needs `groupId`',
        '  line 3: the FIFO queue has no content-based deduplication, so `deduplicationId` is required',
      ].join('\n'),
    );
  });

  it('names the lines with a deduplication id, which a standard queue refuses, and passes group ids through', () => {
    const log = entries(2, (line) =>
      line === 1 ? { groupId: 'g' } : { groupId: 'g', deduplicationId: 'd' },
    );

    expect(() => planBatches(log, standard)).toThrow(
      'The message log does not fit the standard queue:\n  line 2: `deduplicationId` applies to FIFO queues only',
    );
    expect(planBatches(log.slice(0, 1), standard)).toEqual([
      [{ Id: 'line-1', MessageBody: 'm1', MessageGroupId: 'g' }],
    ]);
  });

  it('accepts FIFO entries without deduplication ids when the queue deduplicates by content', () => {
    const [batch] = planBatches(
      entries(1, () => ({ groupId: 'g' })),
      { fifo: true, contentBasedDeduplication: true },
    );

    expect(batch).toEqual([{ Id: 'line-1', MessageBody: 'm1', MessageGroupId: 'g' }]);
  });
});
