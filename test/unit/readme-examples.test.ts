/**
 * The README's code samples cannot rot: every block tagged ```ts file=<path> must equal that
 * file, which `tsc` type-checks (and `test/integration/sqs-handler-examples.test.ts` runs). The
 * tables that restate code (error dispositions, option defaults, metric names) are checked
 * against the definitions they restate.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as keySources from '../../examples/sqs-key-sources';
import { DEFAULT_METRIC_NAMESPACE, ERROR_CODES, METRICS } from '../../lambda';
import {
  DEFAULT_CONCURRENCY,
  DEFAULT_DEADLINE_MARGIN_MILLIS,
  DEFAULT_TTL_SECONDS,
} from '../../lambda/core/options';
import type { SqsRecord } from '../../lambda/core/sqs-event';

const root = join(__dirname, '..', '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

/** The README's tagged code blocks, in order. */
const taggedBlocks = [...readme.matchAll(/^```ts file=(\S+)\n([\s\S]*?)^```$/gm)].map((match) => ({
  file: match[1]!,
  code: match[2]!,
}));

/** The cells of the README table row whose first cell is `first` (cells are padded by the formatter). */
function row(first: string): string[] {
  const cells = readme
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .map((line) =>
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    )
    .find((candidate) => candidate[0] === first);
  if (cells === undefined) throw new Error(`README has no table row starting with "${first}"`);
  return cells;
}

const codesIn = (cell: string) => [...cell.matchAll(/`([A-Z_]+)`/g)].map((match) => match[1]!);

describe('README code samples', () => {
  it('has tagged samples for the SQS handler examples', () => {
    expect(taggedBlocks.map((block) => block.file)).toEqual(
      expect.arrayContaining([
        'examples/sqs-order-projector.ts',
        'examples/sqs-middy.ts',
        'examples/sqs-key-sources.ts',
        'examples/sqs-marker-mode.ts',
        'examples/sqs-entity-mode.ts',
        'examples/sqs-dead-letter-direct.ts',
        'examples/sqs-observability.ts',
        'examples/sqs-two-phase.ts',
      ]),
    );
  });

  it.each(taggedBlocks)('shows $file exactly as the file is', ({ file, code }) => {
    expect(code).toBe(readFileSync(join(root, file), 'utf8'));
  });

  it('lists every error code under the disposition the code has', () => {
    const documented = (['retry later', 'permanent', 'configuration'] as const).flatMap((disposition) =>
      codesIn(row(disposition)[1]!).map((code) => ({ code, disposition })),
    );

    expect(documented.length).toBeGreaterThan(20);
    for (const { code, disposition } of documented) {
      expect({ code, disposition: ERROR_CODES[code as keyof typeof ERROR_CODES] }).toEqual({
        code,
        disposition: disposition === 'retry later' ? 'retry' : disposition,
      });
    }
  });

  it('states the option defaults and metric names the code defines', () => {
    expect(row('`ttlSeconds`')[1]).toContain(`\`${DEFAULT_TTL_SECONDS}\``);
    expect(row('`concurrency`')[1]).toBe(`\`${DEFAULT_CONCURRENCY}\``);
    expect(row('`deadlineMarginMillis`')[1]).toBe(`\`${DEFAULT_DEADLINE_MARGIN_MILLIS}\``);
    expect(row('`metricNamespace`')[1]).toBe(`\`'${DEFAULT_METRIC_NAMESPACE}'\``);
    for (const outcome of [
      'processed',
      'duplicate',
      'stale',
      'in-flight',
      'mismatch',
      'retry',
      'permanent',
    ]) {
      expect(Object.values(METRICS)).toContain(row(`\`${outcome}\``)[4]!.replaceAll('`', ''));
    }
  });

  it('picks the keys the key-source sample describes', () => {
    const record: SqsRecord = {
      messageId: 'm-1',
      body: '{}',
      attributes: { MessageDeduplicationId: 'dedup-1' },
      messageAttributes: {
        'idempotency-key': { stringValue: 'idem-1', dataType: 'String' },
        tenant: { stringValue: 'acme', dataType: 'String' },
      },
    };
    const body = { tenant: 'acme', payment: { id: 'pay-1', version: 3 }, metadata: { 'event.id': 'evt-1' } };
    const cloudEvent = { specversion: '1.0', source: 'https://shop.example.com', id: 'evt-9' };

    expect({
      byAttribute: keySources.byAttribute(record, body),
      byPath: keySources.byPath(record, body),
      bySegments: keySources.bySegments(record, body),
      byNaturalKey: keySources.byNaturalKey(record, body),
      byCloudEvent: keySources.byCloudEvent(record, cloudEvent),
      byDeduplicationId: keySources.byDeduplicationId(record, body),
      byMessageId: keySources.byMessageId(record, body),
      byTenantAndPayment: keySources.byTenantAndPayment(record, body),
    }).toEqual({
      byAttribute: 'idem-1',
      byPath: 'pay-1',
      bySegments: 'evt-1',
      byNaturalKey: ['acme', 'pay-1', 3],
      byCloudEvent: ['https://shop.example.com', 'evt-9'],
      byDeduplicationId: 'dedup-1',
      byMessageId: 'm-1',
      byTenantAndPayment: ['acme', 'pay-1'],
    });
  });
});
