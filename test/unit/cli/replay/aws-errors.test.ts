import { describe, expect, it } from 'vitest';
import { toReplayError } from '../../../../cli/replay/aws';

const queue = { action: 'GetQueueAttributes', queueUrl: 'http://127.0.0.1:4566/000000000000/orders' };
const table = { action: 'Scan', table: 'orders' };

/** An error shaped like the SDK's: a name, a message and response metadata. */
function awsError(name: string, message: string): Error {
  return Object.assign(new Error(message), { name, $fault: 'client', $metadata: { httpStatusCode: 400 } });
}

describe('toReplayError', () => {
  it('turns network failures into CONNECTION errors that name the queue or table', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), {
      code: 'ECONNREFUSED',
      $metadata: {},
    });
    const unknownHost = Object.assign(new Error('getaddrinfo ENOTFOUND sqs.invalid'), { code: 'ENOTFOUND' });

    expect(toReplayError(refused, queue)).toMatchObject({
      name: 'ReplayError',
      code: 'CONNECTION',
      message:
        'Cannot reach the endpoint for queue http://127.0.0.1:4566/000000000000/orders (connect ECONNREFUSED 127.0.0.1:1).',
      cause: refused,
    });
    expect(toReplayError(unknownHost, table)).toMatchObject({
      code: 'CONNECTION',
      message: 'Cannot reach the endpoint for table orders (getaddrinfo ENOTFOUND sqs.invalid).',
    });
  });

  it('turns a missing region or credentials into CONFIGURATION errors', () => {
    const credentials = Object.assign(new Error('Could not load credentials from any providers'), {
      name: 'CredentialsProviderError',
    });

    expect(toReplayError(new Error('Region is missing'), queue)).toMatchObject({
      code: 'CONFIGURATION',
      message: 'No AWS region: pass --region or set AWS_REGION.',
    });
    expect(toReplayError(credentials, queue)).toMatchObject({
      code: 'CONFIGURATION',
      message: 'No AWS credentials found (Could not load credentials from any providers).',
    });
  });

  it('turns a missing queue or table into NOT_FOUND', () => {
    expect(
      toReplayError(awsError('QueueDoesNotExist', 'The specified queue does not exist.'), queue),
    ).toMatchObject({
      code: 'NOT_FOUND',
      message:
        'The queue http://127.0.0.1:4566/000000000000/orders does not exist (GetQueueAttributes: QueueDoesNotExist).',
    });
    expect(
      toReplayError(awsError('ResourceNotFoundException', 'Requested resource not found'), table),
    ).toMatchObject({
      code: 'NOT_FOUND',
      message: 'The table orders does not exist (Scan: ResourceNotFoundException).',
    });
  });

  it('wraps any other AWS error with the action and the resource', () => {
    expect(toReplayError(awsError('AccessDeniedException', 'not authorized to scan'), table)).toMatchObject({
      code: 'AWS',
      message: 'Scan on table orders failed: AccessDeniedException: not authorized to scan',
    });
  });

  it('returns errors that are neither from AWS nor the network unchanged, keeping their stack', () => {
    const bug = new TypeError('cannot read properties of undefined');

    expect(toReplayError(bug, queue)).toBe(bug);
    expect(toReplayError('thrown string', queue)).toBe('thrown string');
  });
});
