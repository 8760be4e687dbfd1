import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { type DoubleTapOptions, doubleTap } from '../../../../cli/replay/double-tap';

/** A client that fails the test if anything is sent: bad options must stop before any request. */
const untouchable = {
  send: () => {
    throw new Error('no request expected');
  },
};

const base: DoubleTapOptions = {
  log: [{ body: 'x' }],
  queueUrl: 'http://127.0.0.1:9/000000000000/q',
  tables: ['orders'],
  sqs: untouchable as unknown as SQSClient,
  dynamodb: untouchable as unknown as DynamoDBClient,
};

describe('doubleTap', () => {
  it.each([
    [{ tables: [] }, 'Expected `tables` to name at least one table, got `[]`'],
    [{ timeoutSeconds: 0 }, 'Expected `timeoutSeconds` to be a positive number, got `0`'],
    [{ pollIntervalMillis: -1 }, 'Expected `pollIntervalMillis` to be a number of at least 0, got `-1`'],
    [{ stablePolls: 2.5 }, 'Expected `stablePolls` to be a positive integer, got `2.5`'],
    [
      { dedupWindowSeconds: Number.NaN },
      'Expected `dedupWindowSeconds` to be a number of at least 0, got `NaN`',
    ],
  ])('rejects %j as a usage error before sending anything', async (override, message) => {
    await expect(doubleTap({ ...base, ...override })).rejects.toMatchObject({ code: 'USAGE', message });
  });

  it('rejects an invalid log before sending anything', async () => {
    await expect(doubleTap({ ...base, log: '{"body": 1}\n' })).rejects.toMatchObject({
      code: 'INVALID_LOG',
      message:
        'The message log is invalid:\n  line 1: Expected `body` to be a non-empty string or an object, got a number',
    });
  });
});
