import {
  ConditionalCheckFailedException,
  DynamoDBServiceException,
  InternalServerError,
  ItemCollectionSizeLimitExceededException,
  ProvisionedThroughputExceededException,
  RequestLimitExceeded,
  ResourceNotFoundException,
  ThrottlingException,
  TransactionCanceledException,
  TransactionConflictException,
  TransactionInProgressException,
} from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { EffectivelyOnceError, type ErrorCode } from '../../../lambda/core/errors';
import {
  classifyAwsError,
  classifyUnmarshallError,
  readConditionalCheckFailure,
  readTransactionCancellation,
} from '../../../lambda/store/classify-aws-error';

const metadata = (httpStatusCode: number) => ({
  $metadata: { httpStatusCode, attempts: 1, totalRetryDelay: 0 },
});

/** An SDK service exception for an error the DynamoDB model has no class for. */
function serviceError(name: string, message: string, httpStatusCode = 400): Error {
  return new DynamoDBServiceException({
    name,
    message,
    $fault: httpStatusCode >= 500 ? 'server' : 'client',
    ...metadata(httpStatusCode),
  });
}

function nodeError(code: string, message = `connect ${code} 127.0.0.1:8000`): Error {
  return Object.assign(new Error(message), { code, $metadata: { attempts: 1, totalRetryDelay: 0 } });
}

function named(name: string, message: string): Error {
  return Object.assign(new Error(message), { name });
}

describe('classifyAwsError', () => {
  it.each<[string, unknown, ErrorCode]>([
    [
      'ThrottlingException',
      new ThrottlingException({ message: 'Rate exceeded', ...metadata(400) }),
      'THROTTLED',
    ],
    [
      'ProvisionedThroughputExceededException',
      new ProvisionedThroughputExceededException({ message: 'exceeded', ...metadata(400) }),
      'THROTTLED',
    ],
    ['RequestLimitExceeded', new RequestLimitExceeded({ message: 'limit', ...metadata(400) }), 'THROTTLED'],
    ['an unnamed HTTP 429', serviceError('SlowDownPlease', 'too many requests', 429), 'THROTTLED'],
    [
      'InternalServerError',
      new InternalServerError({ message: 'oops', ...metadata(500) }),
      'SERVICE_UNAVAILABLE',
    ],
    ['ServiceUnavailable', serviceError('ServiceUnavailable', 'unavailable', 503), 'SERVICE_UNAVAILABLE'],
    ['an unnamed HTTP 502', serviceError('BadGateway', 'bad gateway', 502), 'SERVICE_UNAVAILABLE'],
    [
      'TransactionConflictException',
      new TransactionConflictException({ message: 'conflict', ...metadata(400) }),
      'TRANSACTION_CONFLICT',
    ],
    [
      'TransactionInProgressException',
      new TransactionInProgressException({ message: 'in progress', ...metadata(400) }),
      'TRANSACTION_CONFLICT',
    ],
    [
      'a TransactionCanceledException without reasons',
      new TransactionCanceledException({ message: 'cancelled', ...metadata(400) }),
      'TRANSACTION_CONFLICT',
    ],
    ['ECONNRESET', nodeError('ECONNRESET', 'read ECONNRESET'), 'NETWORK'],
    ['ECONNREFUSED', nodeError('ECONNREFUSED'), 'NETWORK'],
    ['ETIMEDOUT', nodeError('ETIMEDOUT'), 'NETWORK'],
    ['ENOTFOUND', nodeError('ENOTFOUND', 'getaddrinfo ENOTFOUND dynamodb.local'), 'NETWORK'],
    ['TimeoutError', named('TimeoutError', 'the request socket timed out after 1000 ms'), 'NETWORK'],
    ['AbortError', named('AbortError', 'This operation was aborted'), 'NETWORK'],
    ['socket hang up', new Error('socket hang up'), 'NETWORK'],
    [
      'item too large',
      serviceError('ValidationException', 'Item size has exceeded the maximum allowed size'),
      'ITEM_TOO_LARGE',
    ],
    [
      'item too large on update',
      serviceError('ValidationException', 'Item size to update has exceeded the maximum allowed size'),
      'ITEM_TOO_LARGE',
    ],
    [
      'a transaction over 4 MB',
      serviceError('ValidationException', 'Transaction request cannot be larger than 4 MB'),
      'TRANSACTION_TOO_LARGE',
    ],
    [
      'more than 100 transaction items',
      serviceError(
        'ValidationException',
        "1 validation error detected: Value '[...]' at 'transactItems' failed to satisfy constraint: " +
          'Member must have length less than or equal to 100',
      ),
      'TOO_MANY_WRITES',
    ],
    [
      'another ValidationException',
      serviceError('ValidationException', 'One or more parameter values were invalid: Missing the key pk'),
      'VALIDATION',
    ],
    [
      'ItemCollectionSizeLimitExceededException',
      new ItemCollectionSizeLimitExceededException({ message: 'collection too large', ...metadata(400) }),
      'VALIDATION',
    ],
    [
      'a marshalling error',
      new Error('Pass options.removeUndefinedValues=true to remove undefined values from map/array/set.'),
      'VALIDATION',
    ],
    [
      'ResourceNotFoundException',
      new ResourceNotFoundException({ message: 'Requested resource not found', ...metadata(400) }),
      'MISSING_RESOURCE',
    ],
    ['AccessDeniedException', serviceError('AccessDeniedException', 'not authorized'), 'ACCESS_DENIED'],
    [
      'UnrecognizedClientException',
      serviceError('UnrecognizedClientException', 'The security token included in the request is invalid'),
      'ACCESS_DENIED',
    ],
    ['an unknown AWS error', serviceError('SomethingNewException', 'new'), 'SERVICE_UNAVAILABLE'],
    ['a plain Error', new Error('boom'), 'SERVICE_UNAVAILABLE'],
    ['a thrown string', 'boom', 'SERVICE_UNAVAILABLE'],
  ])('classifies %s as %s', (_, error, code) => {
    const classified = classifyAwsError(error, 'insert');

    expect(classified).toBeInstanceOf(EffectivelyOnceError);
    expect(classified.code).toBe(code);
    expect(classified.cause).toBe(error);
  });

  it('gives retry, permanent and configuration dispositions to the codes it returns', () => {
    const disposition = (error: unknown) => classifyAwsError(error).disposition;

    expect(disposition(new ThrottlingException({ message: 'x', ...metadata(400) }))).toBe('retry');
    expect(
      disposition(serviceError('ValidationException', 'Item size has exceeded the maximum allowed size')),
    ).toBe('permanent');
    expect(disposition(new ResourceNotFoundException({ message: 'x', ...metadata(400) }))).toBe(
      'configuration',
    );
  });

  it('names the operation, the AWS error and its message', () => {
    const error = new ThrottlingException({
      message: 'Rate of requests exceeds the allowed throughput',
      ...metadata(400),
    });

    expect(classifyAwsError(error, 'commit').message).toBe(
      'commit: DynamoDB throttled the request (ThrottlingException: Rate of requests exceeds the allowed throughput)',
    );
  });

  it('keeps the class but not the message of an error raised in the client, which may quote a value', () => {
    const marshalling = new Error(
      'Number 98765432109876540000 is greater than Number.MAX_SAFE_INTEGER. Use NumberValue from @aws-sdk/lib-dynamodb.',
    );
    const unsupported = new Error(
      'Unsupported type passed: S3NT1NEL. Pass options.convertClassInstanceToMap=true',
    );

    expect(classifyAwsError(marshalling, 'commit').message).toBe(
      'commit: the item cannot be marshalled (create the document client with marshallOptions ' +
        '{ removeUndefinedValues: true }, or write only plain JSON-like values) (Error)',
    );
    expect(classifyAwsError(unsupported, 'insert')).toMatchObject({
      code: 'VALIDATION',
      message: expect.not.stringContaining('S3NT1NEL'),
    });
    expect(classifyAwsError(new Error('a value S3NT1NEL'), 'insert').message).toBe(
      'insert: unrecognised failure, retried (Error)',
    );
  });

  it('names an unmarshalling error (the document client reading a response) by its class only, as an unrecognised failure', () => {
    const digits = '98765432109876543210.5';
    let unmarshalling: unknown;
    try {
      unmarshall({ amount: { N: digits } });
    } catch (error) {
      unmarshalling = error;
    }

    expect(classifyAwsError(unmarshalling, 'claimLease')).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      message: 'claimLease: unrecognised failure, retried (Error)',
    });
  });

  it('classifies any failure to unmarshall a returned item as VALIDATION, naming its class only', () => {
    const error = new TypeError('S3NT1NEL.map is not a function');

    expect(classifyUnmarshallError(error, 'commit (returned item)')).toMatchObject({
      code: 'VALIDATION',
      disposition: 'permanent',
      message: 'commit (returned item): a returned item cannot be unmarshalled (TypeError)',
      cause: error,
    });
  });

  it('keeps the message of a network error, which quotes no data', () => {
    expect(classifyAwsError(new Error('socket hang up'), 'insert').message).toBe(
      'insert: the request did not complete (Error: socket hang up)',
    );
  });

  it.each<[string, ErrorCode, string]>([
    ['ThrottlingException', 'THROTTLED', 'DynamoDB throttled the request'],
    ['ProvisionedThroughputExceededException', 'THROTTLED', 'DynamoDB throttled the request'],
    ['RequestLimitExceeded', 'THROTTLED', 'DynamoDB throttled the request'],
    ['LimitExceededException', 'THROTTLED', 'DynamoDB throttled the request'],
    ['TooManyRequestsException', 'THROTTLED', 'DynamoDB throttled the request'],
    ['TransactionConflictException', 'TRANSACTION_CONFLICT', 'a concurrent transaction touched the item'],
    ['TransactionInProgressException', 'TRANSACTION_CONFLICT', 'a concurrent transaction touched the item'],
    ['ReplicatedWriteConflictException', 'TRANSACTION_CONFLICT', 'a concurrent transaction touched the item'],
    [
      'TransactionCanceledException',
      'TRANSACTION_CONFLICT',
      'the transaction was cancelled, but no cancellation reason names a failed item',
    ],
    [
      'ItemCollectionSizeLimitExceededException',
      'VALIDATION',
      'the item collection exceeds the 10 GB item collection limit of a local secondary index',
    ],
    ['ResourceNotFoundException', 'MISSING_RESOURCE', 'the table does not exist'],
    ['AccessDeniedException', 'ACCESS_DENIED', 'the credentials may not perform this request'],
    ['UnrecognizedClientException', 'ACCESS_DENIED', 'the credentials may not perform this request'],
    ['InternalServerError', 'SERVICE_UNAVAILABLE', 'DynamoDB failed to serve the request'],
    ['InternalFailure', 'SERVICE_UNAVAILABLE', 'DynamoDB failed to serve the request'],
    ['ServiceUnavailable', 'SERVICE_UNAVAILABLE', 'DynamoDB failed to serve the request'],
    ['TimeoutError', 'NETWORK', 'the request did not complete'],
    ['RequestTimeout', 'NETWORK', 'the request did not complete'],
    ['RequestTimeoutException', 'NETWORK', 'the request did not complete'],
    ['AbortError', 'NETWORK', 'the request did not complete'],
    ['SomethingNewException', 'SERVICE_UNAVAILABLE', 'unrecognised failure, retried'],
    // Named like an Object member: looked up among the table's own entries only.
    ['constructor', 'SERVICE_UNAVAILABLE', 'unrecognised failure, retried'],
    ['toString', 'SERVICE_UNAVAILABLE', 'unrecognised failure, retried'],
  ])('reads the AWS error %s (HTTP 400) as %s: "%s"', (name, code, reason) => {
    expect(classifyAwsError(serviceError(name, 'msg'), 'op')).toMatchObject({
      code,
      message: `op: ${reason} (${name}: msg)`,
    });
  });

  it.each([
    'ECONNRESET',
    'ECONNREFUSED',
    'ECONNABORTED',
    'EPIPE',
    'ETIMEDOUT',
    'EHOSTUNREACH',
    'ENETUNREACH',
    'ENOTFOUND',
    'EAI_AGAIN',
  ])('reads the Node.js socket code %s as NETWORK, keeping its message', (code) => {
    expect(classifyAwsError(nodeError(code, `connect ${code}`), 'op')).toMatchObject({
      code: 'NETWORK',
      message: `op: the request did not complete (${code}: connect ${code})`,
    });
  });

  it('reads an unknown socket code as unrecognised, naming its class only', () => {
    expect(classifyAwsError(nodeError('EOTHER', 'connect EOTHER'), 'op').message).toBe(
      'op: unrecognised failure, retried (EOTHER)',
    );
  });

  it('checks HTTP 429 before the error name, the name before HTTP 5xx, and 5xx before a network name', () => {
    expect(
      classifyAwsError(
        serviceError('ValidationException', 'Item size has exceeded the maximum allowed size', 429),
      ).code,
    ).toBe('THROTTLED');
    expect(classifyAwsError(serviceError('ResourceNotFoundException', 'gone', 503)).code).toBe(
      'MISSING_RESOURCE',
    );
    expect(classifyAwsError(serviceError('TimeoutError', 'slow', 504)).code).toBe('SERVICE_UNAVAILABLE');
  });

  it('reads a marshaller message as a marshalling error only when no HTTP response came back', () => {
    expect(
      classifyAwsError(serviceError('Error', 'Pass options.removeUndefinedValues=true', 400), 'op').message,
    ).toBe('op: unrecognised failure, retried (Error: Pass options.removeUndefinedValues=true)');
  });

  it('returns a toolkit error unchanged', () => {
    const error = new EffectivelyOnceError('TRANSACTION_CONFLICT', 'already classified');

    expect(classifyAwsError(error)).toBe(error);
  });
});

describe('readConditionalCheckFailure', () => {
  it('returns the item that failed the condition', () => {
    const error = new ConditionalCheckFailedException({
      message: 'The conditional request failed',
      Item: { pk: { S: 'orders#1' } },
      ...metadata(400),
    });

    expect(readConditionalCheckFailure(error)).toEqual({
      item: { pk: { S: 'orders#1' } },
      message: 'The conditional request failed',
    });
  });

  it('recognises a failed condition that returned no item', () => {
    const error = new ConditionalCheckFailedException({
      message: 'The conditional request failed',
      ...metadata(400),
    });

    expect(readConditionalCheckFailure(error)).toEqual({ message: 'The conditional request failed' });
  });

  it('ignores every other error', () => {
    expect(
      readConditionalCheckFailure(new ThrottlingException({ message: 'x', ...metadata(400) })),
    ).toBeUndefined();
    expect(readConditionalCheckFailure(new Error('ConditionalCheckFailedException'))).toBeUndefined();
  });
});

describe('readTransactionCancellation', () => {
  it('explains every cancellation reason in transaction order', () => {
    const error = new TransactionCanceledException({
      message: 'Transaction cancelled',
      CancellationReasons: [
        {
          Code: 'ConditionalCheckFailed',
          Message: 'The conditional request failed',
          Item: { pk: { S: 'a' } },
        },
        { Code: 'None' },
        { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' },
        { Code: 'ThrottlingError' },
        { Code: 'ProvisionedThroughputExceeded' },
        { Code: 'ValidationError', Message: 'Item size has exceeded the maximum allowed size' },
        { Code: 'ValidationError', Message: 'Invalid UpdateExpression' },
        { Code: 'ItemCollectionSizeLimitExceeded' },
        { Code: 'SomethingNew' },
        { Code: 'ConditionalCheckFailed' },
      ],
      ...metadata(400),
    });

    const reasons = readTransactionCancellation(error);

    expect(reasons?.map((reason) => (reason.kind === 'failed' ? reason.error.code : reason.kind))).toEqual([
      'condition-failed',
      'none',
      'TRANSACTION_CONFLICT',
      'THROTTLED',
      'THROTTLED',
      'ITEM_TOO_LARGE',
      'VALIDATION',
      'VALIDATION',
      'SERVICE_UNAVAILABLE',
      'condition-failed',
    ]);
    expect(reasons?.[0]).toEqual({
      kind: 'condition-failed',
      item: { pk: { S: 'a' } },
      message: 'The conditional request failed',
    });
    expect(reasons?.[9]).toEqual({ kind: 'condition-failed' });
    const conflict = reasons?.[2];
    expect(conflict?.kind === 'failed' && conflict.error.message).toBe(
      'commit: transaction item 2 conflicted with a concurrent write (TransactionConflict: Transaction is ongoing for the item)',
    );
    expect(conflict?.kind === 'failed' && conflict.error.cause).toBe(error);
  });

  it('names the reason of every failed item, with the code and message DynamoDB sent', () => {
    const error = new TransactionCanceledException({
      message: 'Transaction cancelled',
      CancellationReasons: [
        { Code: 'ThrottlingError', Message: 'slow' },
        { Code: 'ProvisionedThroughputExceeded' },
        { Code: 'RequestLimitExceeded' },
        { Code: 'ItemCollectionSizeLimitExceeded' },
        { Code: 'ValidationError', Message: 'Item size has exceeded the maximum allowed size' },
        { Code: 'ValidationError' },
        { Code: 'SomethingNew' },
        { Code: 'constructor' },
      ],
      ...metadata(400),
    });

    expect(
      readTransactionCancellation(error)?.map((reason) =>
        reason.kind === 'failed' ? { code: reason.error.code, message: reason.error.message } : reason,
      ),
    ).toEqual([
      { code: 'THROTTLED', message: 'commit: transaction item 0 was throttled (ThrottlingError: slow)' },
      {
        code: 'THROTTLED',
        message: 'commit: transaction item 1 was throttled (ProvisionedThroughputExceeded)',
      },
      { code: 'THROTTLED', message: 'commit: transaction item 2 was throttled (RequestLimitExceeded)' },
      {
        code: 'VALIDATION',
        message:
          'commit: transaction item 3 exceeds the 10 GB item collection limit of a local secondary index (ItemCollectionSizeLimitExceeded)',
      },
      {
        code: 'ITEM_TOO_LARGE',
        message:
          'commit: transaction item 4 exceeds the DynamoDB limit of 400 KB (ValidationError: Item size has exceeded the maximum allowed size)',
      },
      { code: 'VALIDATION', message: 'commit: transaction item 5 is invalid (ValidationError)' },
      {
        code: 'SERVICE_UNAVAILABLE',
        message: 'commit: transaction item 6 failed for an unrecognised reason (SomethingNew)',
      },
      {
        code: 'SERVICE_UNAVAILABLE',
        message: 'commit: transaction item 7 failed for an unrecognised reason (constructor)',
      },
    ]);
  });

  it('returns no reasons for a cancellation that carries none', () => {
    expect(
      readTransactionCancellation(new TransactionCanceledException({ message: 'x', ...metadata(400) })),
    ).toEqual([]);
  });

  it('ignores every other error', () => {
    expect(
      readTransactionCancellation(new TransactionConflictException({ message: 'x', ...metadata(400) })),
    ).toBeUndefined();
  });
});
