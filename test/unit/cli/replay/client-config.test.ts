/**
 * The SDK client settings of the replay and redrive commands: an endpoint override sends SQS
 * requests to that endpoint rather than to each queue URL's host (an emulator answers its own
 * host), so the SDK does not warn on every call; against AWS the SDK's defaults stay.
 */
import { describe, expect, it } from 'vitest';
import { commandClientConfig } from '../../../../cli/replay/aws';

describe('commandClientConfig', () => {
  it('keeps the SDK defaults without an endpoint override', () => {
    expect(commandClientConfig({}, {})).toEqual({ common: {}, sqs: {} });
    expect(commandClientConfig({ region: 'eu-west-1' }, {})).toEqual({
      common: { region: 'eu-west-1' },
      sqs: { region: 'eu-west-1' },
    });
  });

  it('sends SQS requests to the overriding endpoint, from the option or the environment', () => {
    expect(commandClientConfig({ endpointUrl: 'http://127.0.0.1:4566' }, {})).toEqual({
      common: { endpoint: 'http://127.0.0.1:4566' },
      sqs: { endpoint: 'http://127.0.0.1:4566', useQueueUrlAsEndpoint: false },
    });
    for (const env of [
      { AWS_ENDPOINT_URL: 'http://127.0.0.1:4566' },
      { AWS_ENDPOINT_URL_SQS: 'http://127.0.0.1:4566' },
    ]) {
      expect(commandClientConfig({}, env)).toEqual({ common: {}, sqs: { useQueueUrlAsEndpoint: false } });
    }
    expect(commandClientConfig({}, { AWS_ENDPOINT_URL: '' })).toEqual({ common: {}, sqs: {} });
  });
});
