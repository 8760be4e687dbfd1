import { describe, expect, it } from 'vitest';
import { parseOutboxArgs } from '../../../../cli/outbox/args';

const queueUrl = 'https://sqs.eu-west-1.amazonaws.com/123456789012/order-events';
const onFailureUrl = 'https://sqs.eu-west-1.amazonaws.com/123456789012/outbox-on-failure';
const topicArn = 'arn:aws:sns:eu-west-1:123456789012:order-events.fifo';
const busArn = 'arn:aws:events:eu-west-1:123456789012:event-bus/orders';

function usageError(argv: string[]): { code?: string; message?: string } {
  try {
    parseOutboxArgs(argv);
  } catch (error) {
    const { code, message } = error as { code?: string; message?: string };
    return { code, message };
  }
  throw new Error(`Expected ${argv.join(' ')} to be refused`);
}

describe('parseOutboxArgs', () => {
  it('reads a redrive of on-failure records through the relay, with the default margin', () => {
    expect(
      parseOutboxArgs(['redrive', '--relay', 'orders-relay', '--on-failure-queue', onFailureUrl]),
    ).toEqual({
      kind: 'redrive',
      options: {
        target: { kind: 'relay', relay: 'orders-relay' },
        selection: { kind: 'on-failure', queueUrl: onFailureUrl, marginMillis: 900_000, keep: false },
        dryRun: false,
        debug: false,
      },
    });
  });

  it('reads ids once each, an explicit queue and every option', () => {
    expect(
      parseOutboxArgs([
        'redrive',
        '--table',
        'orders-outbox',
        '--queue-url',
        queueUrl,
        '--id',
        'e-1',
        '--id',
        'e-2',
        '--id',
        'e-1',
        '--dry-run',
        '--endpoint-url',
        'http://127.0.0.1:4566',
        '--region',
        'eu-west-1',
        '--debug',
      ]),
    ).toEqual({
      kind: 'redrive',
      options: {
        target: {
          kind: 'explicit',
          table: 'orders-outbox',
          destination: { kind: 'sqs', queueUrl, fair: false },
        },
        selection: { kind: 'ids', ids: ['e-1', 'e-2'] },
        dryRun: true,
        endpointUrl: 'http://127.0.0.1:4566',
        region: 'eu-west-1',
        debug: true,
      },
    });
  });

  it('reads a time window, an SNS topic and an EventBridge bus with its source', () => {
    const window = ['--since', '2026-12-01T08:00:00Z', '--until', '2026-12-01T09:30:00+01:00'];
    expect(parseOutboxArgs(['redrive', '--table', 't', '--topic-arn', topicArn, ...window])).toMatchObject({
      options: {
        target: { kind: 'explicit', table: 't', destination: { kind: 'sns', topicArn } },
        selection: {
          kind: 'window',
          sinceMillis: Date.UTC(2026, 11, 1, 8),
          untilMillis: Date.UTC(2026, 11, 1, 8, 30),
        },
      },
    });
    expect(
      parseOutboxArgs([
        'redrive',
        '--table',
        't',
        '--event-bus',
        busArn,
        '--event-source',
        'orders',
        ...window,
      ]),
    ).toMatchObject({
      options: {
        target: { destination: { kind: 'eventbridge', eventBusArn: busArn, eventSource: 'orders' } },
      },
    });
  });

  it('leaves --until out of a window without one (the run takes now)', () => {
    expect(parseOutboxArgs(['redrive', '--relay', 'r', '--since', '2026-12-01T08:00:00.250Z'])).toMatchObject(
      {
        options: { selection: { kind: 'window', sinceMillis: Date.UTC(2026, 11, 1, 8, 0, 0, 250) } },
      },
    );
  });

  it('reads --margin and --keep with an on-failure queue', () => {
    expect(
      parseOutboxArgs([
        'redrive',
        '--relay',
        'r',
        '--on-failure-queue',
        onFailureUrl,
        '--margin',
        '60',
        '--keep',
      ]),
    ).toMatchObject({ options: { selection: { marginMillis: 60_000, keep: true } } });
  });

  it('reads a fair queue named by URL, and a standard topic feeding fair queues', () => {
    expect(
      parseOutboxArgs(['redrive', '--table', 't', '--queue-url', queueUrl, '--fair-queue', '--id', 'e']),
    ).toMatchObject({
      options: {
        target: { kind: 'explicit', table: 't', destination: { kind: 'sqs', queueUrl, fair: true } },
      },
    });
    const standardTopic = topicArn.replace('.fifo', '');
    expect(
      parseOutboxArgs(['redrive', '--table', 't', '--topic-arn', standardTopic, '--fair-queue', '--id', 'e']),
    ).toMatchObject({
      options: { target: { destination: { kind: 'sns', topicArn: standardTopic, fair: true } } },
    });
  });

  it('answers help for --help, before or after redrive', () => {
    expect(parseOutboxArgs(['--help'])).toEqual({ kind: 'help' });
    expect(parseOutboxArgs(['redrive', '-h'])).toEqual({ kind: 'help' });
  });

  it.each([
    [[], 'Expected a subcommand: redrive'],
    [['republish'], 'Unknown subcommand `republish`; expected redrive'],
    [['redrive', '--id', 'e-1'], 'Expected `--relay FUNCTION`, or `--table NAME` and a destination'],
    [
      ['redrive', '--relay', 'r', '--table', 't', '--id', 'e-1'],
      '`--relay` names the table and the destination; leave out `--table`',
    ],
    [
      ['redrive', '--table', 't', '--id', 'e-1'],
      'Expected a destination with `--table`: `--queue-url`, `--topic-arn` or `--event-bus`',
    ],
    [
      ['redrive', '--table', 't', '--queue-url', queueUrl, '--topic-arn', topicArn, '--id', 'e'],
      'Expected one destination, got `--queue-url` and `--topic-arn`',
    ],
    [
      ['redrive', '--table', 't', '--event-bus', busArn, '--event-source', 's', '--fair-queue', '--id', 'e'],
      '`--fair-queue` goes with `--queue-url` or `--topic-arn` only',
    ],
    [
      ['redrive', '--table', 't', '--queue-url', `${queueUrl}.fifo`, '--fair-queue', '--id', 'e'],
      '`--fair-queue` goes with a standard queue or topic; `--queue-url` is FIFO',
    ],
    [
      ['redrive', '--table', 't', '--topic-arn', topicArn, '--fair-queue', '--id', 'e'],
      '`--fair-queue` goes with a standard queue or topic; `--topic-arn` is FIFO',
    ],
    [
      ['redrive', '--relay', 'r', '--fair-queue', '--id', 'e'],
      '`--relay` names the table and the destination; leave out `--fair-queue`',
    ],
    [
      ['redrive', '--table', 't', '--event-bus', busArn, '--id', 'e'],
      '`--event-bus` needs `--event-source SOURCE`: the Source the relay gives its entries',
    ],
    [
      ['redrive', '--table', 't', '--queue-url', queueUrl, '--event-source', 'orders', '--id', 'e'],
      '`--event-source` goes with `--event-bus` only',
    ],
    [
      ['redrive', '--table', 't', '--event-bus', 'orders', '--event-source', 'orders', '--id', 'e'],
      'Expected `--event-bus` to be an ARN, got `orders`',
    ],
    [
      ['redrive', '--relay', 'r'],
      'Expected what to redrive: `--id EVENT_ID`, `--since TIME` or `--on-failure-queue URL`',
    ],
    [
      ['redrive', '--relay', 'r', '--id', 'e', '--on-failure-queue', onFailureUrl],
      'Expected one of `--id`, `--since` and `--on-failure-queue`, got `--id` and `--on-failure-queue`',
    ],
    [['redrive', '--relay', 'r', '--id', 'e', '--keep'], '`--keep` goes with `--on-failure-queue` only'],
    [
      ['redrive', '--relay', 'r', '--id', 'e', '--margin', '60'],
      '`--margin` goes with `--on-failure-queue` only',
    ],
    [
      ['redrive', '--relay', 'r', '--id', 'e', '--until', '2026-12-01T08:00:00Z'],
      '`--until` goes with `--since` only',
    ],
    [
      ['redrive', '--relay', 'r', '--since', '2026-12-01 08:00'],
      'Expected `--since` to be an ISO 8601 time with a zone (2026-12-01T08:00:00Z), got `2026-12-01 08:00`',
    ],
    [
      ['redrive', '--relay', 'r', '--since', '2026-12-01T08:00:00'],
      'Expected `--since` to be an ISO 8601 time with a zone (2026-12-01T08:00:00Z), got `2026-12-01T08:00:00`',
    ],
    [
      ['redrive', '--relay', 'r', '--since', '2026-12-01T09:00:00Z', '--until', '2026-12-01T08:00:00Z'],
      'Expected `--until` to be at or after `--since`, got `2026-12-01T08:00:00Z` before `2026-12-01T09:00:00Z`',
    ],
    [
      ['redrive', '--relay', 'r', '--on-failure-queue', onFailureUrl, '--margin', '-5'],
      'Option `--margin` needs a value; write `--margin=-...` for a value that starts with `-`',
    ],
    [
      ['redrive', '--relay', 'r', '--on-failure-queue', onFailureUrl, '--margin', 'soon'],
      'Expected `--margin` to be a number of seconds, got `soon`',
    ],
    [
      ['redrive', '--relay', 'r', '--on-failure-queue', 'queue'],
      'Expected `--on-failure-queue` to be an http(s) URL, got `queue`',
    ],
    [['redrive', '--relay', '', '--id', 'e'], 'Expected `--relay` to be non-empty, got ``'],
    [['redrive', '--relay', 'r', '--id', 'e', '--force'], 'Unknown option `--force`'],
    [['redrive', '--relay', 'r', 'e-1'], 'Unexpected argument `e-1`'],
  ])('refuses %j: %s', (argv, message) => {
    expect(usageError(argv)).toEqual({ code: 'USAGE', message });
  });
});
