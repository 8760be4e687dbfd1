/**
 * The few Lambda and CloudWatch Logs calls the main job makes, as signed HTTP requests: the
 * project has no SDK clients for those services and adds no dependency for a handful of calls.
 */
import { signRequest } from './sigv4';

/** Where and as whom to call. */
export interface AwsHttpTarget {
  readonly endpoint: string;
  readonly region: string;
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
}

/** An error answer of a service, recognised by `code` (the AWS error type, for example `ResourceNotFoundException`). */
export class AwsHttpError extends Error {
  override readonly name = 'AwsHttpError';

  constructor(
    readonly code: string,
    message: string,
    readonly httpStatus: number,
  ) {
    super(message);
  }
}

const REQUEST_TIMEOUT_MILLIS = 30_000;

/**
 * Invokes a function synchronously (`RequestResponse`) and returns its parsed result.
 *
 * @throws AwsHttpError when Lambda refuses the call, or the function itself failed (code `FunctionError`).
 */
export async function invokeFunction(
  target: AwsHttpTarget,
  functionName: string,
  payload: unknown,
): Promise<unknown> {
  const path = `/2015-03-31/functions/${encodeURIComponent(functionName)}/invocations`;
  const response = await call(target, 'lambda', 'POST', path, JSON.stringify(payload), {
    'content-type': 'application/json',
  });
  if (response.headers.get('x-amz-function-error')) {
    throw new AwsHttpError(
      'FunctionError',
      `Function ${functionName} failed (${response.headers.get('x-amz-function-error')}): ${response.text.slice(0, 300)}`,
      response.status,
    );
  }
  return response.text === '' ? undefined : JSON.parse(response.text);
}

/**
 * The log group a function writes to: its `LoggingConfig.LogGroup`, or `/aws/lambda/<name>` when
 * it has none.
 */
export async function functionLogGroup(target: AwsHttpTarget, functionName: string): Promise<string> {
  const path = `/2015-03-31/functions/${encodeURIComponent(functionName)}/configuration`;
  const response = await call(target, 'lambda', 'GET', path, '', {});
  const configuration = JSON.parse(response.text) as { LoggingConfig?: { LogGroup?: string } };
  return configuration.LoggingConfig?.LogGroup || `/aws/lambda/${functionName}`;
}

/** A function's environment variables (`Environment.Variables` of its configuration). */
export async function functionEnvironment(
  target: AwsHttpTarget,
  functionName: string,
): Promise<Record<string, string>> {
  const path = `/2015-03-31/functions/${encodeURIComponent(functionName)}/configuration`;
  const response = await call(target, 'lambda', 'GET', path, '', {});
  const configuration = JSON.parse(response.text) as { Environment?: { Variables?: Record<string, string> } };
  return { ...configuration.Environment?.Variables };
}

/**
 * Turns every event source mapping of a function on or off (`UpdateEventSourceMapping` with
 * `Enabled`) and returns how many it changed: off, the function no longer polls its queue.
 */
export async function setEventSourceMappingsEnabled(
  target: AwsHttpTarget,
  functionName: string,
  enabled: boolean,
): Promise<number> {
  const list = await call(
    target,
    'lambda',
    'GET',
    `/2015-03-31/event-source-mappings/?FunctionName=${encodeURIComponent(functionName)}`,
    '',
    {},
  );
  const { EventSourceMappings = [] } = JSON.parse(list.text) as {
    EventSourceMappings?: { UUID?: string }[];
  };
  let changed = 0;
  for (const { UUID } of EventSourceMappings) {
    if (!UUID) continue;
    await call(
      target,
      'lambda',
      'PUT',
      `/2015-03-31/event-source-mappings/${encodeURIComponent(UUID)}`,
      JSON.stringify({ Enabled: enabled }),
      { 'content-type': 'application/json' },
    );
    changed += 1;
  }
  return changed;
}

/**
 * Every log message of a log group (all streams, following `nextToken`), oldest first. A log
 * group that does not exist yet has no messages.
 */
export async function readLogMessages(target: AwsHttpTarget, logGroupName: string): Promise<string[]> {
  const messages: string[] = [];
  let nextToken: string | undefined;
  do {
    let page: { events?: { message?: string }[]; nextToken?: string };
    try {
      const response = await call(
        target,
        'logs',
        'POST',
        '/',
        JSON.stringify({ logGroupName, ...(nextToken ? { nextToken } : {}) }),
        {
          'content-type': 'application/x-amz-json-1.1',
          'x-amz-target': 'Logs_20140328.FilterLogEvents',
        },
      );
      page = JSON.parse(response.text);
    } catch (error) {
      if ((error as Partial<AwsHttpError>).code === 'ResourceNotFoundException') return messages;
      throw error;
    }
    for (const event of page.events ?? []) if (event.message !== undefined) messages.push(event.message);
    // An endpoint that repeats its token would loop forever; stop on a repeat.
    nextToken = page.nextToken && page.nextToken !== nextToken ? page.nextToken : undefined;
  } while (nextToken);
  return messages;
}

interface HttpAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
}

async function call(
  target: AwsHttpTarget,
  service: string,
  method: 'GET' | 'POST' | 'PUT',
  path: string,
  body: string,
  extraHeaders: Readonly<Record<string, string>>,
): Promise<HttpAnswer> {
  const url = `${target.endpoint.replace(/\/+$/, '')}${path}`;
  const headers = signRequest({
    method,
    url,
    headers: extraHeaders,
    body,
    service,
    region: target.region,
    credentials: target.credentials,
    now: new Date(),
  });
  // `fetch` sets Host itself and refuses to be told.
  delete headers.host;
  const response = await fetch(url, {
    method,
    headers,
    ...(method === 'GET' ? {} : { body }),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MILLIS),
  });
  const text = await response.text();
  if (!response.ok) {
    let code = response.headers.get('x-amzn-errortype')?.split(':')[0] ?? '';
    let message = text.slice(0, 300);
    try {
      const parsed = JSON.parse(text) as {
        __type?: string;
        Type?: string;
        message?: string;
        Message?: string;
      };
      code ||= (parsed.__type ?? parsed.Type ?? '').split('#').pop() ?? '';
      message = parsed.message ?? parsed.Message ?? message;
    } catch {
      // Not JSON: keep the start of the text.
    }
    throw new AwsHttpError(
      code || `HTTP${response.status}`,
      `${service} ${method} ${path} failed: ${message}`,
      response.status,
    );
  }
  return { status: response.status, headers: response.headers, text };
}
