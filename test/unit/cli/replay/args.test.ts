import { describe, expect, it } from 'vitest';
import { parseReplayArgs } from '../../../../cli/replay/args';

const required = [
  '--log',
  'orders.jsonl',
  '--queue-url',
  'https://sqs.eu-west-1.amazonaws.com/123/orders',
  '--table',
  'orders',
];

describe('parseReplayArgs', () => {
  it('fills in the defaults around the required options', () => {
    expect(parseReplayArgs(required)).toEqual({
      kind: 'replay',
      options: {
        log: 'orders.jsonl',
        queueUrl: 'https://sqs.eu-west-1.amazonaws.com/123/orders',
        tables: ['orders'],
        json: false,
        debug: false,
        timeoutSeconds: 120,
        pollIntervalMillis: 1000,
        stablePolls: 5,
        dedupWindowSeconds: 300,
      },
    });
  });

  it('takes several tables, once each, and every option', () => {
    const command = parseReplayArgs([
      ...required,
      '--table',
      'inbox',
      '--table',
      'orders',
      '--endpoint-url',
      'http://127.0.0.1:4566',
      '--region',
      'eu-west-1',
      '--json',
      '--debug',
      '--timeout',
      '30',
      '--poll-interval',
      '0.25',
      '--stable-polls',
      '3',
      '--dedup-window',
      '0',
    ]);

    expect(command).toEqual({
      kind: 'replay',
      options: {
        log: 'orders.jsonl',
        queueUrl: 'https://sqs.eu-west-1.amazonaws.com/123/orders',
        tables: ['orders', 'inbox'],
        endpointUrl: 'http://127.0.0.1:4566',
        region: 'eu-west-1',
        json: true,
        debug: true,
        timeoutSeconds: 30,
        pollIntervalMillis: 250,
        stablePolls: 3,
        dedupWindowSeconds: 0,
      },
    });
  });

  it('asks for help with --help or -h, whatever else is given', () => {
    expect(parseReplayArgs(['--help'])).toEqual({ kind: 'help' });
    expect(parseReplayArgs(['--table', 'x', '-h'])).toEqual({ kind: 'help' });
  });

  it.each([
    [[], 'Missing required options `--log FILE`, `--queue-url URL`, `--table NAME`'],
    [['--log', 'a', '--queue-url', 'http://q'], 'Missing required option `--table NAME`'],
    [[...required, '--bogus'], 'Unknown option `--bogus`'],
    [[...required, '--timeout'], 'Option `--timeout` needs a value'],
    [[...required, '--json=yes'], 'Option `--json` takes no value'],
    [[...required, 'extra'], 'Unexpected argument `extra`'],
    [[...required, '--timeout', '0'], 'Expected `--timeout` to be a positive number of seconds, got `0`'],
    [[...required, '--timeout', '2m'], 'Expected `--timeout` to be a positive number of seconds, got `2m`'],
    [
      [...required, '--dedup-window', '-1'],
      'Option `--dedup-window` needs a value; write `--dedup-window=-...` for a value that starts with `-`',
    ],
    [[...required, '--dedup-window=-1'], 'Expected `--dedup-window` to be a number of seconds, got `-1`'],
    [[...required, '--stable-polls', '1.5'], 'Expected `--stable-polls` to be a positive integer, got `1.5`'],
    [
      ['--log', 'a', '--queue-url', 'orders', '--table', 't'],
      'Expected `--queue-url` to be an http(s) URL, got `orders`',
    ],
    [
      [...required, '--endpoint-url', 'ftp://x'],
      'Expected `--endpoint-url` to be an http(s) URL, got `ftp://x`',
    ],
    [[...required, '--table', ' '], 'Expected `--table` to be non-empty, got ``'],
  ])('rejects %j as a usage error: %s', (argv, message) => {
    expect(() => parseReplayArgs(argv)).toThrow(expect.objectContaining({ code: 'USAGE', message }));
  });
});
