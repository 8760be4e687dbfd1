import {
  InvalidParameterException,
  InvalidParameterValueException,
  KMSDisabledException,
  ValidationException,
} from '@aws-sdk/client-sns';
import {
  InvalidMessageContents,
  QueueDoesNotExist,
  RequestThrottled,
  SQSServiceException,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { EffectivelyOnceError } from '../../../lambda/core/errors';
import { classifyPublishError } from '../../../lambda/store/classify-aws-error';

const metadata = (httpStatusCode: number) => ({ $metadata: { httpStatusCode } });
/** An SQS error the SDK models no class for: a service exception named by SQS's error code. */
const sqsError = (name: string, message: string, status = 400) =>
  new SQSServiceException({ name, $fault: 'client', message, ...metadata(status) });

describe('classifyPublishError', () => {
  it('classifies each refusal of the request itself as VALIDATION, permanent, with the service message', () => {
    const refusals = [
      new InvalidMessageContents({ message: "Invalid binary character '#xFFFF'", ...metadata(400) }),
      sqsError('InvalidParameterValue', 'Value o 1 for parameter MessageGroupId is invalid.'),
      sqsError('MissingParameter', 'The request must contain the parameter MessageGroupId.'),
      sqsError('BatchRequestTooLong', 'Batch requests cannot be longer than 1048576 bytes.'),
      new InvalidParameterException({ message: 'Invalid parameter: Message too long', ...metadata(400) }),
      new InvalidParameterValueException({ message: 'Invalid parameter: MessageGroupId', ...metadata(400) }),
      new ValidationException({
        message: 'Invalid parameter',
        Message: 'Invalid parameter',
        ...metadata(400),
      }),
    ];
    for (const error of refusals) {
      const classified = classifyPublishError(error);
      expect(classified).toMatchObject({
        code: 'VALIDATION',
        disposition: 'permanent',
        message: `publish: the destination refused the request (${error.name}: ${error.message})`,
      });
      expect(classified.cause).toBe(error);
    }
  });

  it('retries throttling, 5xx, network failures, the deployment’s errors and anything unknown, naming only the class', () => {
    const cases: [unknown, string][] = [
      [new RequestThrottled({ message: 'Rate exceeded', ...metadata(400) }), 'THROTTLED'],
      [sqsError('KmsThrottled', 'throttled'), 'THROTTLED'],
      [sqsError('InternalError', 'oops', 500), 'SERVICE_UNAVAILABLE'],
      [sqsError('ServiceUnavailable', 'oops', 503), 'SERVICE_UNAVAILABLE'],
      [Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }), 'NETWORK'],
      [new QueueDoesNotExist({ message: 'gone', ...metadata(400) }), 'SERVICE_UNAVAILABLE'],
      [new KMSDisabledException({ message: 'key disabled', ...metadata(400) }), 'SERVICE_UNAVAILABLE'],
      [new TypeError('a bug'), 'SERVICE_UNAVAILABLE'],
    ];
    for (const [error, code] of cases) {
      const classified = classifyPublishError(error);
      expect(classified.code).toBe(code);
      expect(classified.disposition).toBe('retry');
      // A Node.js socket error (class `Error`) is named by its code.
      const { name, code: socketCode } = error as { name: string; code?: string };
      expect(classified.message).toBe(
        `publish: the destination did not take the event, retried (${name === 'Error' ? socketCode : name})`,
      );
    }
  });

  it('returns an EffectivelyOnceError unchanged, so a destination of your own can refuse an event with VALIDATION', () => {
    const error = new EffectivelyOnceError('VALIDATION', 'the receiver cannot take this type');
    expect(classifyPublishError(error)).toBe(error);
  });
});
