/**
 * AWS Signature Version 4 for the few plain HTTP calls the local deploy makes (CloudFormation's
 * query API has no SDK client among the project's dependencies). Local emulators accept any
 * signature, but a correctly signed request also works against endpoints that check.
 */
import { createHash, createHmac } from 'node:crypto';

/** Credentials that sign a request. */
export interface SigningCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** @default none */
  readonly sessionToken?: string;
}

/** A request to sign: everything that goes into the canonical request. */
export interface SignableRequest {
  readonly method: string;
  readonly url: string;
  /** Header names in any case. `host` is added from the URL when absent. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  readonly service: string;
  readonly region: string;
  readonly credentials: SigningCredentials;
  readonly now: Date;
}

/**
 * Signs a request and returns all headers to send: the given ones plus `host`, `x-amz-date`,
 * `x-amz-security-token` (with a session token) and `authorization`.
 */
export function signRequest(request: SignableRequest): Record<string, string> {
  const url = new URL(request.url);
  const amzDate = request.now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  const date = amzDate.slice(0, 8);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) headers[name.toLowerCase()] = value;
  headers.host ??= url.host;
  headers['x-amz-date'] = amzDate;
  if (request.credentials.sessionToken) headers['x-amz-security-token'] = request.credentials.sessionToken;

  const names = Object.keys(headers).sort();
  const canonicalHeaders = names
    .map((name) => `${name}:${headers[name]!.trim().replace(/\s+/g, ' ')}\n`)
    .join('');
  const signedHeaders = names.join(';');
  const canonicalRequest = [
    request.method.toUpperCase(),
    canonicalPath(url.pathname),
    canonicalQuery(url.searchParams),
    canonicalHeaders,
    signedHeaders,
    sha256Hex(request.body),
  ].join('\n');
  const scope = `${date}/${request.region}/${request.service}/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256Hex(canonicalRequest)].join('\n');

  let key: Buffer = hmac(`AWS4${request.credentials.secretAccessKey}`, date);
  for (const part of [request.region, request.service, 'aws4_request']) key = hmac(key, part);
  const signature = createHmac('sha256', key).update(stringToSign).digest('hex');

  headers.authorization =
    `AWS4-HMAC-SHA256 Credential=${request.credentials.accessKeyId}/${scope}, ` +
    `SignedHeaders=${signedHeaders}, Signature=${signature}`;
  return headers;
}

function canonicalPath(pathname: string): string {
  if (pathname === '') return '/';
  return pathname
    .split('/')
    .map((segment) => uriEncode(decodeURIComponentSafe(segment)))
    .join('/');
}

function canonicalQuery(params: URLSearchParams): string {
  return [...params]
    .map(([name, value]) => [uriEncode(name), uriEncode(value)] as const)
    .sort(([a, x], [b, y]) => (a === b ? compare(x, y) : compare(a, b)))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
}

/** RFC 3986 encoding, as SigV4 wants it (unlike `encodeURIComponent`, also encodes `!'()*`). */
function uriEncode(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (character) => `%${character.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

function decodeURIComponentSafe(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function sha256Hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

function hmac(key: string | Buffer, value: string): Buffer {
  return createHmac('sha256', key).update(value, 'utf8').digest();
}
