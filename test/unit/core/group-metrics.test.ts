/**
 * A fair queue's per-group metrics: the shape of the lines, the bound on distinct `MessageGroup`
 * values, the option checks, and the engine writing them next to its metrics line.
 */
import { describe, expect, it } from 'vitest';
import { fromBody } from '../../../lambda/core/dedup-key';
import { createGroupMetrics } from '../../../lambda/core/group-metrics';
import type { InboxStore } from '../../../lambda/core/store-port';
import { marker } from '../../../lambda/modes/marker';
import { createSqsBatchHandler } from '../../../lambda/sqs/sqs-handler';
import { captureStdout, manualClock, sqsEvent, sqsRecord, T0 } from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';

const context = { consumer: 'orders', timestampMillis: T0, requestId: 'req-1' };

/** The per-group line of `group` as the sink writes it. */
const groupLine = (group: string, duplicate: number, inFlight: number, requestId = 'req-1') => ({
  _aws: {
    Timestamp: T0,
    CloudWatchMetrics: [
      {
        Namespace: 'Shop',
        Dimensions: [['Consumer', 'MessageGroup']],
        Metrics: [
          { Name: 'Duplicate', Unit: 'Count' },
          { Name: 'InFlight', Unit: 'Count' },
        ],
      },
    ],
  },
  Consumer: 'orders',
  MessageGroup: group,
  requestId,
  Duplicate: duplicate,
  InFlight: inFlight,
});

describe('createGroupMetrics', () => {
  it('writes one line per group with a duplicate or an in-flight message, and none for the others', () => {
    const lines: string[] = [];
    const tally = createGroupMetrics({ maxGroups: 10 }, 'Shop', (line) => lines.push(line)).tally();
    tally.add('tenant-a', 'duplicate');
    tally.add('tenant-a', 'in-flight');
    tally.add('tenant-a', 'duplicate');
    tally.add('tenant-b', 'in-flight');
    tally.add('tenant-c', 'processed');
    tally.add('tenant-c', 'retry');
    tally.add(undefined, 'duplicate');

    tally.publish(context);

    expect(lines.map((line) => JSON.parse(line))).toEqual([
      groupLine('tenant-a', 2, 1),
      groupLine('tenant-b', 0, 1),
    ]);
  });

  it('names the first maxGroups groups of the environment, for good, and counts later ones as (other)', () => {
    const lines: string[] = [];
    const groups = createGroupMetrics({ maxGroups: 2 }, 'Shop', (line) => lines.push(line));
    const first = groups.tally();
    first.add('tenant-a', 'duplicate');
    first.add('tenant-b', 'duplicate');
    first.add('tenant-c', 'duplicate');
    first.publish(context);
    const second = groups.tally();
    second.add('tenant-d', 'in-flight');
    second.add('tenant-b', 'in-flight');
    second.add('tenant-e', 'duplicate');
    second.publish({ ...context, requestId: 'req-2' });

    expect(lines.map((line) => JSON.parse(line))).toEqual([
      groupLine('tenant-a', 1, 0),
      groupLine('tenant-b', 1, 0),
      groupLine('(other)', 1, 0),
      groupLine('(other)', 1, 1, 'req-2'),
      groupLine('tenant-b', 0, 1, 'req-2'),
    ]);
  });

  it('refuses a maxGroups that is not an integer from 1 to 1000', () => {
    for (const maxGroups of [0, 1001, 2.5]) {
      expect(() => createGroupMetrics({ maxGroups }, 'Shop', () => undefined)).toThrow(
        `Expected \`groupMetrics.maxGroups\` to be an integer from 1 to 1000, got \`${maxGroups}\``,
      );
    }
  });
});

describe('a handler with groupMetrics', () => {
  const handlerWith = (groupMetrics?: { maxGroups: number }, metrics?: false) =>
    createSqsBatchHandler<{ id: string }, InboxStore>({
      consumer: 'orders',
      dedupKey: fromBody('id'),
      mode: marker(() => undefined),
      store: createMemoryStore(),
      clock: manualClock(),
      metricNamespace: 'Shop',
      logLevel: 'silent',
      ...(groupMetrics === undefined ? {} : { groupMetrics }),
      ...(metrics === undefined ? {} : { metrics }),
    });
  // A fair queue: a standard queue (`orders`) whose records carry a group id.
  const fair = (messageId: string, id: string, groupId: string) =>
    sqsRecord(messageId, { id }, { groupId, queue: 'orders' });
  const event = sqsEvent(
    fair('m-1', 'o-1', 'tenant-a'),
    fair('m-2', 'o-1', 'tenant-a'),
    fair('m-3', 'o-2', 'tenant-b'),
    sqsRecord('m-4', { id: 'o-1' }),
  );

  it('writes the per-group lines of a fair queue after its metrics line, with its request id', async () => {
    const { lines } = await captureStdout(() =>
      handlerWith({ maxGroups: 100 })(event, {
        awsRequestId: 'req-1',
        getRemainingTimeInMillis: () => 60_000,
      }),
    );

    expect(lines.map((line) => (line as { MessageGroup?: string }).MessageGroup)).toEqual([
      undefined,
      'tenant-a',
    ]);
    expect(lines[1]).toEqual(groupLine('tenant-a', 1, 0));
  });

  it('writes no per-group line without groupMetrics, nor with metrics off', async () => {
    const plain = await captureStdout(() => handlerWith()(event));
    const off = await captureStdout(() => handlerWith({ maxGroups: 100 }, false)(event));

    expect(plain.lines.map((line) => 'MessageGroup' in line)).toEqual([false]);
    expect(off.lines).toEqual([]);
  });
});
