/**
 * The HTTP event shapes the idempotency wrapper reads, and their normalisation into one
 * request: API Gateway REST APIs (payload 1.0), HTTP APIs (payload 1.0 or 2.0) and Lambda
 * function URLs (2.0). Declared here, structurally compatible with `@types/aws-lambda`, so the
 * runtime needs no type package. This is the only module that knows the event shapes.
 */
import { EffectivelyOnceError } from '../core/errors';

/** An API Gateway proxy event, payload format 1.0 (REST APIs; HTTP APIs configured for 1.0). */
export interface ApiGatewayProxyEventV1 {
  /** `'1.0'` from HTTP APIs; absent from REST APIs. */
  readonly version?: string;
  /** The request method. */
  readonly httpMethod: string;
  /** The concrete path, for example `/orders/42`. */
  readonly path: string;
  /** The resource template, for example `/orders/{id}`. */
  readonly resource: string;
  /** The last value of each header, by name as sent. */
  readonly headers?: Readonly<Record<string, string | undefined>> | null;
  /** Every value of each header, in order. */
  readonly multiValueHeaders?: Readonly<Record<string, readonly string[] | undefined>> | null;
  /** The last value of each query parameter (decoded by API Gateway; as sent by an ALB). */
  readonly queryStringParameters?: Readonly<Record<string, string | undefined>> | null;
  /** Every value of each query parameter, in order (API Gateway; an ALB with multi-value headers on). */
  readonly multiValueQueryStringParameters?: Readonly<Record<string, readonly string[] | undefined>> | null;
  /** The request body (base64 when `isBase64Encoded`). */
  readonly body?: string | null;
  /** True when `body` is base64-encoded binary. */
  readonly isBase64Encoded?: boolean;
  /** API Gateway's request context (authorizer, identity), for pickers. */
  readonly requestContext?: object;
}

/** An API Gateway HTTP API or Lambda function URL event, payload format 2.0. */
export interface ApiGatewayProxyEventV2 {
  /** `'2.0'` (typed as a string, as `@types/aws-lambda` declares it). */
  readonly version: string;
  /** `METHOD /template`, or `$default` (function URLs, default routes). */
  readonly routeKey: string;
  /** The concrete path, for example `/orders/42`. */
  readonly rawPath: string;
  /** The query string as sent, without `?` (percent-encoded). */
  readonly rawQueryString?: string;
  /** Decoded query parameters, repeated values joined with commas. */
  readonly queryStringParameters?: Readonly<Record<string, string | undefined>>;
  /** Lower-case names; repeated headers joined with commas. */
  readonly headers?: Readonly<Record<string, string | undefined>>;
  /** The request's cookies. */
  readonly cookies?: readonly string[];
  /** The request body (base64 when `isBase64Encoded`). */
  readonly body?: string;
  /** True when `body` is base64-encoded binary. */
  readonly isBase64Encoded?: boolean;
  /** The request context; the wrapper reads the method from it. */
  readonly requestContext: {
    /** The HTTP details of the request. */
    readonly http: {
      /** The request method. */
      readonly method: string;
    };
  };
}

/** Any event the wrapper accepts. */
export type HttpEvent = ApiGatewayProxyEventV1 | ApiGatewayProxyEventV2;

/**
 * A response as the wrapper writes it (a replay or a problem): assignable to both the 1.0
 * result (`APIGatewayProxyResult`) and the 2.0 structured result.
 */
export interface HttpResponse {
  /** The HTTP status. */
  readonly statusCode: number;
  /** Response headers by name. */
  readonly headers: Record<string, string>;
  /** Payload 1.0 only: repeated headers, replayed as the handler returned them. */
  readonly multiValueHeaders?: Record<string, string[]>;
  /** Payload 2.0 only: `Set-Cookie` values. */
  readonly cookies?: string[];
  /** The response body (base64 when `isBase64Encoded`). */
  readonly body: string;
  /** True when `body` is base64-encoded binary. */
  readonly isBase64Encoded: boolean;
}

/** One request, whatever its event shape: what key scoping, fingerprints and pickers read. */
export interface HttpRequest<TEvent extends HttpEvent = HttpEvent> {
  /** The event as delivered, for pickers (for example an authorizer's principal). */
  readonly event: TEvent;
  /** Payload format. */
  readonly version: '1.0' | '2.0';
  /** Upper-case method. */
  readonly method: string;
  /**
   * Method and route template, for example `POST /orders/{id}`: what a key is scoped by. For a
   * `$default` route (function URLs) the template is the concrete path.
   */
  readonly route: string;
  /** The concrete path, for example `/orders/42`. */
  readonly path: string;
  /**
   * The query parameters as `[name, value]` pairs, in the order delivered: from `rawQueryString`
   * (names and values as sent, percent-encoded) in payload 2.0; from
   * `multiValueQueryStringParameters`, else `queryStringParameters`, in payload 1.0 (decoded by
   * API Gateway, as sent by an ALB). `[]` without a query string.
   */
  readonly query: readonly (readonly [name: string, value: string])[];
  /** Header values by lower-case name; repeated headers joined with `, `. */
  readonly headers: Readonly<Record<string, string>>;
  /** The body as delivered (base64 when `isBase64Encoded`); `''` when there is none. */
  readonly body: string;
  /** True when `body` is base64-encoded binary. */
  readonly isBase64Encoded: boolean;
}

/** The header carrying the key (matched case-insensitively). */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';

/** Longest key accepted, in characters. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/** True for a payload 2.0 event. */
export function isV2Event(event: HttpEvent): event is ApiGatewayProxyEventV2 {
  return (event as ApiGatewayProxyEventV2).version === '2.0';
}

function lowerCaseHeaders(event: HttpEvent): Record<string, string> {
  const headers: Record<string, string> = {};
  const multi = isV2Event(event) ? undefined : event.multiValueHeaders;
  for (const [name, values] of Object.entries(multi ?? {})) {
    if (values && values.length > 0) headers[name.toLowerCase()] = values.join(', ');
  }
  for (const [name, value] of Object.entries(event.headers ?? {})) {
    const lower = name.toLowerCase();
    if (value !== undefined && headers[lower] === undefined) headers[lower] = value;
  }
  return headers;
}

type QueryParameter = readonly [name: string, value: string];

/** `a=1&b=2&a=3` as pairs, as sent: a raw query string needs no decoding to be compared. */
function splitQueryString(raw: string): QueryParameter[] {
  const parameters: QueryParameter[] = [];
  for (const pair of raw.split('&')) {
    if (pair === '') continue;
    const equals = pair.indexOf('=');
    parameters.push(equals < 0 ? [pair, ''] : [pair.slice(0, equals), pair.slice(equals + 1)]);
  }
  return parameters;
}

function queryOfV2(event: ApiGatewayProxyEventV2): QueryParameter[] {
  if (typeof event.rawQueryString === 'string') return splitQueryString(event.rawQueryString);
  return singleValueParameters(event.queryStringParameters);
}

function queryOfV1(event: ApiGatewayProxyEventV1): QueryParameter[] {
  const multi = event.multiValueQueryStringParameters;
  if (multi === undefined || multi === null) return singleValueParameters(event.queryStringParameters);
  return Object.entries(multi).flatMap(([name, values]) =>
    (values ?? []).map((value): QueryParameter => [name, value]),
  );
}

function singleValueParameters(
  parameters: Readonly<Record<string, string | undefined>> | null | undefined,
): QueryParameter[] {
  return Object.entries(parameters ?? {}).flatMap(([name, value]): QueryParameter[] =>
    value === undefined ? [] : [[name, value]],
  );
}

/**
 * Normalises an API Gateway (1.0 or 2.0) or function URL event. Throws `INVALID_EVENT` for
 * anything else.
 *
 * @example
 * toHttpRequest(event).route; // 'POST /orders/{id}'
 */
export function toHttpRequest<TEvent extends HttpEvent>(event: TEvent): HttpRequest<TEvent> {
  if (typeof event !== 'object' || event === null) {
    throw new EffectivelyOnceError('INVALID_EVENT', 'Expected an API Gateway or function URL event');
  }
  const headers = lowerCaseHeaders(event);
  if (isV2Event(event)) {
    const method = event.requestContext?.http?.method;
    if (typeof method !== 'string' || typeof event.rawPath !== 'string') {
      throw new EffectivelyOnceError(
        'INVALID_EVENT',
        'Expected a payload 2.0 event with `requestContext.http.method` and `rawPath`',
      );
    }
    const upper = method.toUpperCase();
    const routeKey = typeof event.routeKey === 'string' ? event.routeKey : '$default';
    const space = routeKey.indexOf(' ');
    const template = routeKey === '$default' || space < 0 ? event.rawPath : routeKey.slice(space + 1);
    return {
      event,
      version: '2.0',
      method: upper,
      route: `${upper} ${template}`,
      path: event.rawPath,
      query: queryOfV2(event),
      headers,
      body: event.body ?? '',
      isBase64Encoded: event.isBase64Encoded === true,
    };
  }
  if (typeof event.httpMethod !== 'string' || typeof event.path !== 'string') {
    throw new EffectivelyOnceError(
      'INVALID_EVENT',
      'Expected an API Gateway event with `httpMethod` and `path`, or a payload 2.0 event',
    );
  }
  const method = event.httpMethod.toUpperCase();
  return {
    event,
    version: '1.0',
    method,
    route: `${method} ${typeof event.resource === 'string' ? event.resource : event.path}`,
    path: event.path,
    query: queryOfV1(event),
    headers,
    body: event.body ?? '',
    isBase64Encoded: event.isBase64Encoded === true,
  };
}

/** What the `Idempotency-Key` header holds. */
export type IdempotencyKeyHeader =
  | {
      /** The request has no `Idempotency-Key` header. */
      readonly kind: 'absent';
    }
  | {
      /** The header is repeated, too long or not a valid value. */
      readonly kind: 'invalid';
      /** Why the key was refused, for the 400 answer. */
      readonly reason: string;
    }
  | {
      /** The header holds a usable key. */
      readonly kind: 'present';
      /** The key, as sent (a structured-field string unquoted). */
      readonly key: string;
    };

const VISIBLE_ASCII = /^[\x20-\x7e]+$/;
const SF_STRING = /^"((?:[^"\\]|\\["\\])*)"$/;

function headerValues(event: HttpEvent): string[] {
  const wanted = IDEMPOTENCY_KEY_HEADER.toLowerCase();
  const values: string[] = [];
  const multi = isV2Event(event) ? undefined : event.multiValueHeaders;
  for (const [name, list] of Object.entries(multi ?? {})) {
    if (name.toLowerCase() === wanted) values.push(...(list ?? []));
  }
  if (values.length > 0) return values;
  for (const [name, value] of Object.entries(event.headers ?? {})) {
    if (name.toLowerCase() === wanted && value !== undefined) values.push(value);
  }
  return values;
}

/**
 * Reads the `Idempotency-Key` header, case-insensitively. The value is a Structured Field
 * string (`"8e03978e-…"`, as the IETF draft defines it) or, leniently, the bare token. A
 * repeated header, a comma-separated list, an empty value, more than 255 characters or
 * characters outside visible ASCII are `invalid`.
 *
 * @example
 * readIdempotencyKey(event); // { kind: 'present', key: '8e03978e-40d5-43e8-bc93-6894a57f9324' }
 */
export function readIdempotencyKey(event: HttpEvent): IdempotencyKeyHeader {
  const values = headerValues(event);
  if (values.length === 0) return { kind: 'absent' };
  if (values.length > 1) return { kind: 'invalid', reason: 'The Idempotency-Key header is repeated' };
  const raw = values[0]!.trim();
  let key: string;
  const quoted = SF_STRING.exec(raw);
  if (quoted) {
    key = quoted[1]!.replace(/\\(["\\])/g, '$1');
  } else if (raw.includes('"') || raw.includes(',')) {
    return { kind: 'invalid', reason: 'The Idempotency-Key header must hold exactly one key' };
  } else {
    key = raw;
  }
  if (key === '') return { kind: 'invalid', reason: 'The Idempotency-Key header is empty' };
  if (key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    return {
      kind: 'invalid',
      reason: `The Idempotency-Key is longer than ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`,
    };
  }
  if (!VISIBLE_ASCII.test(key)) {
    return { kind: 'invalid', reason: 'The Idempotency-Key must be visible ASCII characters' };
  }
  return { kind: 'present', key };
}
