/**
 * The construct on global tables: an eventually consistent (MREC) `TableV2` with replicas, as
 * the inbox or a business table, deduplicates per Region only (a synth-time warning); a strongly
 * consistent (MRSC) one takes no transactions, which `atomic` mode commits with (a synth-time
 * error). Single-Region tables, and MRSC tables in a mode without transactions, pass silently.
 */
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { describe, expect, it } from 'vitest';
import { IdempotentConsumer, type IdempotentConsumerProps } from '../../lib';
import { FIXTURE_ENTRY, newStack } from './support';

type Replication = 'single-region' | 'eventual' | 'strong';

/** A stack with one `TableV2` replicated as `replication` says, and a consumer built on it. */
function consumerOn(
  replication: Replication,
  props: (table: dynamodb.TableV2) => Partial<IdempotentConsumerProps>,
) {
  const { stack } = newStack();
  const table = new dynamodb.TableV2(stack, 'Table', {
    partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
    ...(replication === 'single-region'
      ? {}
      : { replicas: [{ region: 'eu-west-2' }, { region: 'eu-west-3' }] }),
    ...(replication === 'strong' ? { multiRegionConsistency: dynamodb.MultiRegionConsistency.STRONG } : {}),
  });
  const create = () =>
    new IdempotentConsumer(stack, 'Consumer', {
      mode: 'marker',
      entry: FIXTURE_ENTRY,
      ...props(table),
    } as IdempotentConsumerProps);
  return { stack, create };
}

const multiRegionWarnings = (stack: Parameters<typeof Annotations.fromStack>[0]) =>
  Annotations.fromStack(stack)
    .findWarning('/TestStack/Consumer', Match.stringLikeRegexp('global table'))
    .map((warning) => warning.entry.data);

describe('IdempotentConsumer on a multi-Region table', () => {
  it('warns that an eventually consistent global inbox table deduplicates per Region only', () => {
    const { stack, create } = consumerOn('eventual', (table) => ({ mode: 'marker', table }));
    create();

    expect(multiRegionWarnings(stack)).toEqual([
      expect.stringContaining(
        '`table` is a global table with 3 replicas and eventual consistency (MREC): a dedup marker written in one Region is not seen in another until it replicates, so a message delivered in two Regions is processed in both.',
      ),
    ]);
    expect(multiRegionWarnings(stack)[0]).toContain('[ack: effectively-once:multiRegionTable]');
  });

  it('warns about an eventually consistent global business table in entity mode, by its index', () => {
    const { stack, create } = consumerOn('eventual', (table) => ({
      mode: 'entity',
      businessTables: [{ table, access: ['write'] }],
    }));
    create();

    expect(multiRegionWarnings(stack)).toEqual([
      expect.stringContaining('`businessTables[0].table` is a global table with 3 replicas'),
    ]);
  });

  it('refuses a strongly consistent global table in atomic mode, naming the prop and the way out', () => {
    const { create } = consumerOn('strong', (table) => ({
      mode: 'atomic',
      businessTables: [{ table }],
    }));

    expect(create).toThrow(
      'Expected `businessTables[0].table` not to be a multi-Region strongly consistent (MRSC) global table in `atomic` mode: MRSC tables take no transactions',
    );
  });

  it.each(['marker', 'entity', 'two-phase'] as const)(
    'accepts a strongly consistent global table in %s mode without a warning',
    (mode) => {
      const { stack, create } = consumerOn('strong', (table) => ({
        mode,
        ...(mode === 'entity' ? { businessTables: [{ table, access: ['write'] }] } : { table }),
      }));
      create();

      expect(multiRegionWarnings(stack)).toEqual([]);
    },
  );

  it('says nothing about a single-Region TableV2', () => {
    const { stack, create } = consumerOn('single-region', (table) => ({ mode: 'atomic', table }));
    create();

    expect(multiRegionWarnings(stack)).toEqual([]);
  });
});
