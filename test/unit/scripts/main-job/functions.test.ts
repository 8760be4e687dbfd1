import { FilterLogEventsCommand } from '@aws-sdk/client-cloudwatch-logs';
import {
  GetFunctionConfigurationCommand,
  InvokeCommand,
  ListEventSourceMappingsCommand,
  UpdateEventSourceMappingCommand,
} from '@aws-sdk/client-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createFunctionClients,
  destroyFunctionClients,
  type FunctionClients,
  functionEnvironment,
  functionLogGroup,
  invokeFunction,
  readLogMessages,
  setEventSourceMappingsEnabled,
} from '../../../../scripts/main-job/functions';

const target = {
  endpoint: 'http://127.0.0.1:4566',
  region: 'eu-west-1',
  credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
};

/** A command as the test sees it: its class name and its input. */
interface SentCommand {
  readonly command: string;
  readonly input: unknown;
}

/**
 * Clients whose `send` records every command and answers with `answer(command)` instead of
 * calling the endpoint (a thrown answer is the service's error).
 */
function fakeClients(answer: (sent: SentCommand) => unknown): {
  clients: FunctionClients;
  sent: SentCommand[];
} {
  const clients = createFunctionClients(target);
  const sent: SentCommand[] = [];
  const fake = async (command: { constructor: { name: string }; input: unknown }) => {
    const call = { command: command.constructor.name, input: command.input };
    sent.push(call);
    return answer(call);
  };
  vi.spyOn(clients.lambda, 'send').mockImplementation(fake as never);
  vi.spyOn(clients.logs, 'send').mockImplementation(fake as never);
  created.push(clients);
  return { clients, sent };
}

const created: FunctionClients[] = [];
afterEach(() => {
  for (const clients of created.splice(0)) destroyFunctionClients(clients);
  vi.restoreAllMocks();
});

/** An Invoke answer's payload, as the SDK hands it over: bytes that turn into text. */
function payloadOf(text: string): Uint8Array & { transformToString(encoding?: string): string } {
  return Object.assign(new TextEncoder().encode(text), { transformToString: () => text });
}

function awsError(name: string): Error {
  return Object.assign(new Error(`${name}: from the service`), { name, $metadata: { httpStatusCode: 400 } });
}

describe('createFunctionClients', () => {
  it('points both clients at the endpoint and region, and makes one attempt per Lambda call', async () => {
    const clients = createFunctionClients(target);
    created.push(clients);

    expect(await clients.lambda.config.region()).toBe('eu-west-1');
    expect(await clients.logs.config.region()).toBe('eu-west-1');
    expect(await clients.lambda.config.endpoint?.()).toMatchObject({ hostname: '127.0.0.1', port: 4566 });
    expect(await clients.logs.config.endpoint?.()).toMatchObject({ hostname: '127.0.0.1', port: 4566 });
    expect(await clients.lambda.config.maxAttempts()).toBe(1);
  });
});

describe('invokeFunction', () => {
  it('invokes synchronously with the JSON payload and returns the parsed answer', async () => {
    const { clients, sent } = fakeClients(() => ({
      StatusCode: 200,
      Payload: payloadOf('{"batchItemFailures":[{"itemIdentifier":"m-1"}]}'),
    }));

    const answer = await invokeFunction(clients.lambda, 'order-projector', {
      Records: [{ messageId: 'm-1' }],
    });

    expect(answer).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-1' }] });
    expect(sent).toEqual([
      {
        command: InvokeCommand.name,
        input: {
          FunctionName: 'order-projector',
          InvocationType: 'RequestResponse',
          Payload: '{"Records":[{"messageId":"m-1"}]}',
        },
      },
    ]);
  });

  it('returns undefined for an empty answer', async () => {
    const { clients } = fakeClients(() => ({ StatusCode: 200, Payload: payloadOf('') }));

    expect(await invokeFunction(clients.lambda, 'fn', {})).toBeUndefined();
  });

  it('throws FUNCTION_FAILED naming the function and its error when the function failed', async () => {
    const { clients } = fakeClients(() => ({
      StatusCode: 200,
      FunctionError: 'Unhandled',
      Payload: payloadOf('{"errorMessage":"boom"}'),
    }));

    await expect(invokeFunction(clients.lambda, 'fn', {})).rejects.toMatchObject({
      name: 'FunctionFailedError',
      code: 'FUNCTION_FAILED',
      functionName: 'fn',
      functionError: 'Unhandled',
      message: 'Function fn failed (Unhandled): {"errorMessage":"boom"}',
    });
  });
});

describe('functionLogGroup and functionEnvironment', () => {
  it("read the function's configuration", async () => {
    const { clients, sent } = fakeClients(() => ({
      LoggingConfig: { LogGroup: '/custom/orders' },
      Environment: { Variables: { EO_CONSUMER: 'orders' } },
    }));

    expect(await functionLogGroup(clients.lambda, 'fn')).toBe('/custom/orders');
    expect(await functionEnvironment(clients.lambda, 'fn')).toEqual({ EO_CONSUMER: 'orders' });
    expect(sent).toEqual([
      { command: GetFunctionConfigurationCommand.name, input: { FunctionName: 'fn' } },
      { command: GetFunctionConfigurationCommand.name, input: { FunctionName: 'fn' } },
    ]);
  });

  it('default to /aws/lambda/<name> and no variables when the configuration has none', async () => {
    const { clients } = fakeClients(() => ({}));

    expect(await functionLogGroup(clients.lambda, 'fn')).toBe('/aws/lambda/fn');
    expect(await functionEnvironment(clients.lambda, 'fn')).toEqual({});
  });
});

describe('setEventSourceMappingsEnabled', () => {
  it('updates every mapping of the function, across pages, and returns how many', async () => {
    const { clients, sent } = fakeClients(({ command, input }) => {
      if (command !== ListEventSourceMappingsCommand.name) return {};
      return (input as { Marker?: string }).Marker === undefined
        ? { EventSourceMappings: [{ UUID: 'u-1' }, {}], NextMarker: 'page-2' }
        : { EventSourceMappings: [{ UUID: 'u-2' }] };
    });

    expect(await setEventSourceMappingsEnabled(clients.lambda, 'fn', false)).toBe(2);
    expect(sent).toEqual([
      { command: ListEventSourceMappingsCommand.name, input: { FunctionName: 'fn' } },
      { command: ListEventSourceMappingsCommand.name, input: { FunctionName: 'fn', Marker: 'page-2' } },
      { command: UpdateEventSourceMappingCommand.name, input: { UUID: 'u-1', Enabled: false } },
      { command: UpdateEventSourceMappingCommand.name, input: { UUID: 'u-2', Enabled: false } },
    ]);
  });

  it('stops listing when the endpoint repeats its marker', async () => {
    const { clients, sent } = fakeClients(({ command }) =>
      command === ListEventSourceMappingsCommand.name
        ? { EventSourceMappings: [{ UUID: 'u-1' }], NextMarker: 'same' }
        : {},
    );

    expect(await setEventSourceMappingsEnabled(clients.lambda, 'fn', true)).toBe(2);
    expect(sent.map(({ command }) => command)).toEqual([
      ListEventSourceMappingsCommand.name,
      ListEventSourceMappingsCommand.name,
      UpdateEventSourceMappingCommand.name,
      UpdateEventSourceMappingCommand.name,
    ]);
  });
});

describe('readLogMessages', () => {
  it('reads every page of the log group, oldest first', async () => {
    const { clients, sent } = fakeClients(({ input }) =>
      (input as { nextToken?: string }).nextToken === undefined
        ? { events: [{ message: 'one' }, {}, { message: 'two' }], nextToken: 't-1' }
        : { events: [{ message: 'three' }] },
    );

    expect(await readLogMessages(clients.logs, '/aws/lambda/fn')).toEqual(['one', 'two', 'three']);
    expect(sent).toEqual([
      { command: FilterLogEventsCommand.name, input: { logGroupName: '/aws/lambda/fn' } },
      { command: FilterLogEventsCommand.name, input: { logGroupName: '/aws/lambda/fn', nextToken: 't-1' } },
    ]);
  });

  it('stops when the endpoint repeats its token', async () => {
    const { clients, sent } = fakeClients(() => ({ events: [{ message: 'again' }], nextToken: 'same' }));

    expect(await readLogMessages(clients.logs, 'group')).toEqual(['again', 'again']);
    expect(sent).toHaveLength(2);
  });

  it('has no messages for a log group that does not exist yet', async () => {
    const { clients } = fakeClients(() => {
      throw awsError('ResourceNotFoundException');
    });

    expect(await readLogMessages(clients.logs, 'group')).toEqual([]);
  });

  it('passes on any other error of the service', async () => {
    const { clients } = fakeClients(() => {
      throw awsError('AccessDeniedException');
    });

    await expect(readLogMessages(clients.logs, 'group')).rejects.toMatchObject({
      name: 'AccessDeniedException',
    });
  });
});
