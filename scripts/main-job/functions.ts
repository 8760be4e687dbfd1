/**
 * The main job's calls to the deployed functions and their logs, through the AWS SDK clients for
 * Lambda and CloudWatch Logs: invoke a function, read its configuration, turn its event source
 * mappings off and on, read its log group. Plain AWS APIs, nothing emulator-specific.
 */
import {
  CloudWatchLogsClient,
  FilterLogEventsCommand,
  type FilterLogEventsCommandOutput,
} from '@aws-sdk/client-cloudwatch-logs';
import {
  GetFunctionConfigurationCommand,
  InvokeCommand,
  LambdaClient,
  ListEventSourceMappingsCommand,
  UpdateEventSourceMappingCommand,
} from '@aws-sdk/client-lambda';

/** The clients that reach the deployed functions and their log groups. */
export interface FunctionClients {
  readonly lambda: LambdaClient;
  readonly logs: CloudWatchLogsClient;
}

/** Where and as whom to call. */
export interface FunctionClientsTarget {
  readonly endpoint: string;
  readonly region: string;
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
}

const REQUEST_TIMEOUT_MILLIS = 30_000;

/**
 * Creates the Lambda and CloudWatch Logs clients for `target`. The Lambda client makes one attempt
 * per call: an invocation whose answer was lost must not run the function a second time, since the
 * main job counts every delivery a function saw. Destroy both when done.
 *
 * @example
 * const clients = createFunctionClients(aws);
 * try { await invokeFunction(clients.lambda, 'fn', { Records: [] }); } finally { destroyFunctionClients(clients); }
 */
export function createFunctionClients(target: FunctionClientsTarget): FunctionClients {
  const config = {
    endpoint: target.endpoint,
    region: target.region,
    credentials: { ...target.credentials },
    requestHandler: { requestTimeout: REQUEST_TIMEOUT_MILLIS },
  };
  return {
    lambda: new LambdaClient({ ...config, maxAttempts: 1 }),
    logs: new CloudWatchLogsClient(config),
  };
}

/** Closes the clients' connections. */
export function destroyFunctionClients(clients: FunctionClients): void {
  clients.lambda.destroy();
  clients.logs.destroy();
}

/** The function ran and failed (Lambda's `FunctionError`: it threw, or timed out). */
export class FunctionFailedError extends Error {
  override readonly name = 'FunctionFailedError';
  readonly code = 'FUNCTION_FAILED';

  constructor(
    readonly functionName: string,
    /** Lambda's `FunctionError`, for example `Unhandled`. */
    readonly functionError: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Invokes a function synchronously (`RequestResponse`) and returns its parsed result (`undefined`
 * for an empty answer).
 *
 * @throws FunctionFailedError `FUNCTION_FAILED` when the function itself failed; the SDK's error
 * when Lambda refuses the call.
 */
export async function invokeFunction(
  lambda: LambdaClient,
  functionName: string,
  payload: unknown,
): Promise<unknown> {
  const response = await lambda.send(
    new InvokeCommand({
      FunctionName: functionName,
      InvocationType: 'RequestResponse',
      Payload: JSON.stringify(payload),
    }),
  );
  const text = response.Payload?.transformToString('utf-8') ?? '';
  if (response.FunctionError) {
    throw new FunctionFailedError(
      functionName,
      response.FunctionError,
      `Function ${functionName} failed (${response.FunctionError}): ${text.slice(0, 300)}`,
    );
  }
  return text === '' ? undefined : JSON.parse(text);
}

/**
 * Invokes `functionName` with an empty batch (`{ Records: [] }`, which every function of the
 * example app answers without processing anything), so lines its worker wrote last reach the
 * function's log group. MiniStack hands an invocation only the output its worker wrote within a
 * few milliseconds of answering (it stops draining 5 ms after the last line read, 250 ms at
 * most); on a loaded machine the last lines of an invocation (its metrics line, a relay's last
 * `published`) stay behind and surface with the worker's next invocation, or never when none
 * comes. A wait for log lines calls this when they are late. Against AWS it only adds an
 * invocation that logs a zero count.
 */
export async function flushLogLines(lambda: LambdaClient, functionName: string): Promise<void> {
  await invokeFunction(lambda, functionName, { Records: [] });
}

/**
 * The log group a function writes to: its `LoggingConfig.LogGroup`, or `/aws/lambda/<name>` when
 * it has none.
 */
export async function functionLogGroup(lambda: LambdaClient, functionName: string): Promise<string> {
  const configuration = await lambda.send(
    new GetFunctionConfigurationCommand({ FunctionName: functionName }),
  );
  return configuration.LoggingConfig?.LogGroup || `/aws/lambda/${functionName}`;
}

/** A function's environment variables (`Environment.Variables` of its configuration). */
export async function functionEnvironment(
  lambda: LambdaClient,
  functionName: string,
): Promise<Record<string, string>> {
  const configuration = await lambda.send(
    new GetFunctionConfigurationCommand({ FunctionName: functionName }),
  );
  return { ...configuration.Environment?.Variables };
}

/**
 * Turns every event source mapping of a function on or off (`UpdateEventSourceMapping` with
 * `Enabled`) and returns how many it changed: off, the function no longer polls its queue.
 * Setting `Enabled` is idempotent, so a retried update changes nothing more.
 */
export async function setEventSourceMappingsEnabled(
  lambda: LambdaClient,
  functionName: string,
  enabled: boolean,
): Promise<number> {
  const uuids: string[] = [];
  let marker: string | undefined;
  do {
    const page = await lambda.send(
      new ListEventSourceMappingsCommand({
        FunctionName: functionName,
        ...(marker ? { Marker: marker } : {}),
      }),
    );
    for (const mapping of page.EventSourceMappings ?? []) if (mapping.UUID) uuids.push(mapping.UUID);
    marker = nextPageToken(page.NextMarker, marker);
  } while (marker);

  for (const uuid of uuids) {
    await lambda.send(new UpdateEventSourceMappingCommand({ UUID: uuid, Enabled: enabled }));
  }
  return uuids.length;
}

/**
 * Every log message of a log group (all streams, following `nextToken`), oldest first. A log
 * group that does not exist yet has no messages.
 */
export async function readLogMessages(logs: CloudWatchLogsClient, logGroupName: string): Promise<string[]> {
  const messages: string[] = [];
  let nextToken: string | undefined;
  do {
    let page: FilterLogEventsCommandOutput;
    try {
      page = await logs.send(
        new FilterLogEventsCommand({ logGroupName, ...(nextToken ? { nextToken } : {}) }),
      );
    } catch (error) {
      if ((error as { name?: unknown }).name === 'ResourceNotFoundException') return messages;
      throw error;
    }
    for (const event of page.events ?? []) if (event.message !== undefined) messages.push(event.message);
    nextToken = nextPageToken(page.nextToken, nextToken);
  } while (nextToken);
  return messages;
}

/** The token of the next page, or `undefined` at the end: an endpoint that repeats its token would loop forever. */
function nextPageToken(token: string | undefined, previous: string | undefined): string | undefined {
  return token && token !== previous ? token : undefined;
}
