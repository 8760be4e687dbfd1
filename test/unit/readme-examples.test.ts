/**
 * The code samples of the README and the pages under `docs/` cannot rot: every block tagged
 * ```ts file=<path> must equal that file, which `tsc` type-checks (and `test/integration/sqs-handler-examples.test.ts` runs for the
 * SQS handler samples), and every file under `examples/` must be shown. The tables that restate
 * code (error dispositions, option defaults, metric names, construct props and grants, cdk-nag
 * acknowledgments, replay options, HTTP statuses) are checked against the definitions they
 * restate.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPLAY_USAGE } from '../../cli/replay/args';
import * as keySources from '../../examples/sqs-key-sources';
import { DEFAULT_METRIC_NAMESPACE, ERROR_CODES, METRICS } from '../../lambda';
import { CONSUMER_MODES } from '../../lambda/core/contract';
import {
  DEFAULT_CONCURRENCY,
  DEFAULT_DEADLINE_MARGIN_MILLIS,
  DEFAULT_TTL_SECONDS,
} from '../../lambda/core/options';
import { PROBLEMS } from '../../lambda/http/http-outcome';
import type { SqsRecord } from '../../lambda/sqs/sqs-event';
import {
  BUSINESS_TABLE_ACTIONS,
  DYNAMODB_STREAM_READ_ACTIONS,
  defaultBusinessTableAccess,
  INBOX_TABLE_ACTIONS,
  KINESIS_STREAM_READ_ACTIONS,
} from '../../lib/consumer-permissions';
import { PRODUCER_RETRY_FACTOR, RECORD_TTL_MARGIN } from '../../lib/record-ttl';
import { keyArgs } from '../support/fixtures';
import { DOC_PAGES, page, root, rowsOf, section } from './doc-pages';

/** The README and docs pages' tagged code blocks, page by page, in order. */
const taggedBlocks = DOC_PAGES.flatMap(({ text }) =>
  [...text.matchAll(/^```ts file=(\S+)\n([\s\S]*?)^```$/gm)].map((match) => ({
    file: match[1]!,
    code: match[2]!,
  })),
);

/** The cells of the table row whose first cell is `first`, in the text under `heading`. */
function row(first: string, heading: string): string[] {
  return rowIn(heading, first);
}

const codesIn = (cell: string) => [...cell.matchAll(/`([A-Z_]+)`/g)].map((match) => match[1]!);

/** The cells of the row whose first cell is `first`, in the text under `heading`. */
function rowIn(heading: string, first: string): string[] {
  const cells = rowsOf(section(heading)).find((candidate) => candidate[0] === first);
  if (cells === undefined) throw new Error(`section "${heading}" has no table row "${first}"`);
  return cells;
}

/** The `dynamodb:`, `sqs:`, ... actions named in a cell, sorted. */
const actionsIn = (cell: string) =>
  [...cell.matchAll(/`([a-z0-9]+:[A-Za-z]+)`/g)].map((match) => match[1]!).sort();

/** Props of a construct's props interface with the first line of their `@default`, read from the source. */
function constructProps(file: string, name: string): { name: string; defaultValue: string | undefined }[] {
  const source = readFileSync(join(root, file), 'utf8');
  const start = source.indexOf(`export interface ${name} {`);
  if (start < 0) throw new Error(`${file} has no interface ${name}`);
  const body = source.slice(start, source.indexOf('\n}\n', start));
  return [...body.matchAll(/\/\*\*([\s\S]*?)\*\/\s*readonly (\w+)\??:/g)].map((match) => ({
    name: match[2]!,
    defaultValue: /@default\s+(.+)/.exec(match[1]!)?.[1]?.trim(),
  }));
}

describe('the README', () => {
  // What it is, why, install, the quickstart, the two commands and links; the rest is in docs/.
  it('stays under 200 lines', () => {
    expect(page('README.md').text.trimEnd().split('\n').length).toBeLessThan(200);
  });
});

describe('README and docs code samples', () => {
  it('has tagged samples for the handler, construct, replay and adapter examples', () => {
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
        'examples/cdk-consumer-stack.ts',
        'examples/replay-double-tap.test-sample.ts',
        'examples/worker-order-projector.ts',
        'examples/worker-main.ts',
        'examples/http-payments-api.ts',
        'examples/http-function-url.ts',
        'examples/job-nightly-report.ts',
        'examples/job-replay-batch.ts',
        'examples/outbox-order-confirmed.ts',
      ]),
    );
  });

  it('shows the quickstart app (handler, stack and app) and its message log as they are', () => {
    expect(taggedBlocks.map((block) => block.file)).toEqual(
      expect.arrayContaining([
        'examples/my-app/lambda/orders.ts',
        'examples/my-app/lib/my-app-stack.ts',
        'examples/my-app/bin/my-app.ts',
      ]),
    );
    const log = /^```jsonl file=examples\/my-app\/orders-log\.jsonl\n([\s\S]*?)^```$/m.exec(
      page('docs/getting-started.md').text,
    )?.[1];
    expect(log).toBe(readFileSync(join(root, 'examples', 'my-app', 'orders-log.jsonl'), 'utf8'));
  });

  it('shows every file under examples/ as a tagged sample', () => {
    const files = readdirSync(join(root, 'examples'), { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.ts'))
      .map((name) => `examples/${name}`)
      .sort();
    expect(
      [...new Set(taggedBlocks.map((block) => block.file))]
        .filter((file) => file.startsWith('examples/'))
        .sort(),
    ).toEqual(files);
  });

  it('type-checks the samples: tsconfig.json includes examples/', () => {
    const tsconfig = JSON.parse(readFileSync(join(root, 'tsconfig.json'), 'utf8')) as { include: string[] };
    expect(tsconfig.include).toContain('examples');
  });

  it.each(taggedBlocks)('shows $file exactly as the file is', ({ file, code }) => {
    expect(code).toBe(readFileSync(join(root, file), 'utf8'));
  });

  it('lists every error code under the disposition the code has', () => {
    const documented = (['retry later', 'permanent', 'configuration'] as const).flatMap((disposition) =>
      codesIn(row(disposition, '# Outcomes and errors')[1]!).map((code) => ({ code, disposition })),
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
    expect(row('`ttlSeconds`', '### Options')[1]).toContain(`\`${DEFAULT_TTL_SECONDS}\``);
    expect(row('`concurrency`', '### Options')[1]).toBe(`\`${DEFAULT_CONCURRENCY}\``);
    expect(row('`deadlineMarginMillis`', '### Options')[1]).toBe(`\`${DEFAULT_DEADLINE_MARGIN_MILLIS}\``);
    expect(row('`metricNamespace`', '### Options')[1]).toBe(`\`'${DEFAULT_METRIC_NAMESPACE}'\``);
    for (const outcome of [
      'processed',
      'duplicate',
      'stale',
      'in-flight',
      'mismatch',
      'retry',
      'permanent',
    ]) {
      expect(Object.values(METRICS)).toContain(
        row(`\`${outcome}\``, '# Outcomes and errors')[4]!.replaceAll('`', ''),
      );
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
      byAttribute: keySources.byAttribute(...keyArgs(record, body)),
      byPath: keySources.byPath(...keyArgs(record, body)),
      bySegments: keySources.bySegments(...keyArgs(record, body)),
      byNaturalKey: keySources.byNaturalKey(...keyArgs(record, body)),
      byCloudEvent: keySources.byCloudEvent(...keyArgs(record, cloudEvent)),
      byDeduplicationId: keySources.byDeduplicationId(...keyArgs(record, body)),
      byMessageId: keySources.byMessageId(...keyArgs(record, body)),
      byTenantAndPayment: keySources.byTenantAndPayment(...keyArgs(record, body)),
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

  it.each([
    {
      construct: 'IdempotentConsumer',
      heading: '### Props',
      file: 'lib/idempotent-consumer/props.ts',
      least: 40,
    },
    {
      construct: 'IdempotentStreamConsumer',
      heading: '### Stream consumer props',
      file: 'lib/idempotent-stream-consumer/props.ts',
      least: 30,
    },
    {
      construct: 'Outbox',
      heading: '### Outbox props',
      file: 'lib/outbox/props.ts',
      least: 20,
    },
  ])(
    'lists every $construct prop under "$heading", with the default its TSDoc states',
    ({ construct, heading, file, least }) => {
      const props = constructProps(file, `${construct}Props`);
      expect(props.length).toBeGreaterThan(least);
      for (const { name, defaultValue } of props) {
        const cells = rowIn(heading, `\`${name}\``);
        // A literal default (not "- prose") must appear verbatim, in backticks.
        if (defaultValue !== undefined && !defaultValue.startsWith('-')) {
          expect({ name, cell: cells[1] }).toEqual({
            name,
            cell: expect.stringContaining(`\`${defaultValue}\``),
          });
        }
      }
      const documented = rowsOf(section(heading))
        .slice(1)
        .map((cells) => cells[0]!.replaceAll('`', ''));
      expect(documented.sort()).toEqual(props.map(({ name }) => name).sort());
    },
  );

  it('states the stream read grants and the stream record TTL formula the stream construct uses', () => {
    const text = section('## Stream consumer construct');
    const named = actionsIn(text);
    for (const action of [...KINESIS_STREAM_READ_ACTIONS, ...DYNAMODB_STREAM_READ_ACTIONS]) {
      expect(named).toContain(action);
    }
    expect(text).toContain(
      `max(replayAllowance, ${PRODUCER_RETRY_FACTOR} × producerRetryHorizon) + ${RECORD_TTL_MARGIN.toDays()} day`,
    );
  });

  it('states the grants of each mode and business table access the construct makes', () => {
    for (const mode of CONSUMER_MODES) {
      const cells = rowIn('### Permissions', `\`${mode}\``);
      expect({ mode, actions: actionsIn(cells[1]!) }).toEqual({
        mode,
        actions: [...INBOX_TABLE_ACTIONS[mode]].sort(),
      });
      expect({ mode, access: [...cells[2]!.matchAll(/`(\w+)`/g)].map((match) => match[1]) }).toEqual({
        mode,
        access: [...defaultBusinessTableAccess(mode)],
      });
    }
    for (const [access, actions] of Object.entries(BUSINESS_TABLE_ACTIONS)) {
      expect(actionsIn(rowIn('### Permissions', `\`${access}\``)[1]!)).toEqual([...actions].sort());
    }
  });

  it('states the record TTL formula the construct derives', () => {
    expect(section('### Record TTL')).toContain(
      `${PRODUCER_RETRY_FACTOR} × producerRetryHorizon) + ${RECORD_TTL_MARGIN.toDays()} day`,
    );
  });

  it('lists exactly the cdk-nag rules the construct acknowledges', () => {
    const acknowledged = readdirSync(join(root, 'lib'), { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.ts'))
      .flatMap((name) => [
        ...readFileSync(join(root, 'lib', name), 'utf8').matchAll(/acknowledge\(\{\s*id: '([^']+)'/g),
      ])
      .map((match) => match[1]!);
    const documented = rowsOf(section('### cdk-nag'))
      .slice(1)
      .map((cells) => cells[0]!.replaceAll('`', ''));
    expect(documented.sort()).toEqual([...new Set(acknowledged)].sort());
  });

  it('lists every option of the replay command', () => {
    const options = [...new Set([...REPLAY_USAGE.matchAll(/^\s+(--[a-z-]+)/gm)].map((match) => match[1]!))];
    expect(options.length).toBeGreaterThan(8);
    const documented = rowsOf(section('# Double-tap replay'))
      .slice(1)
      .map((cells) => cells[0]!.replaceAll('`', '').split(' ')[0]);
    expect(documented.sort()).toEqual(options.filter((option) => option !== '--help').sort());
  });

  it('names every status the HTTP wrapper answers with itself', () => {
    const statuses = [
      PROBLEMS.missingKey(),
      PROBLEMS.invalidKey('reason'),
      PROBLEMS.inProgress(1),
      PROBLEMS.mismatch(),
      PROBLEMS.unavailable(),
      PROBLEMS.misconfigured(),
    ].map((response) => response.statusCode);
    const table = section('### HTTP: `Idempotency-Key`');
    for (const status of statuses) expect(table).toContain(`\`${status}\``);
  });
});
