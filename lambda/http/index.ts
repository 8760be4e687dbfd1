/**
 * effectively-once for HTTP: `Idempotency-Key` handling for API Gateway (REST and HTTP APIs)
 * and Lambda function URL handlers, on the same inbox table as the SQS handlers.
 *
 * @module effectively-once/http
 */
export {
  type ApiGatewayProxyEventV1,
  type ApiGatewayProxyEventV2,
  type HttpEvent,
  type HttpRequest,
  type HttpResponse,
  IDEMPOTENCY_KEY_HEADER,
  type IdempotencyKeyHeader,
  isV2Event,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  readIdempotencyKey,
  toHttpRequest,
} from './http-event';
export {
  type ClaimDecision,
  capStoredResponse,
  DEFAULT_MAX_RESPONSE_BYTES,
  decideClaim,
  isReplayableStatus,
  isStoredHttpResponse,
  OMITTED_HEADER,
  PROBLEMS,
  problemResponse,
  REPLAYED_HEADER,
  readStoredResponse,
  retryAfterSeconds,
  type StoredHttpResponse,
  storedResponseBytes,
  toReplayResponse,
  toStoredResponse,
} from './http-outcome';
export {
  createIdempotentHttpHandler,
  DEFAULT_HTTP_LEASE_MILLIS,
  DEFAULT_HTTP_TTL_SECONDS,
  DEFAULT_IDEMPOTENT_METHODS,
  type IdempotentHttpHandler,
  type IdempotentHttpHandlerOptions,
} from './idempotent-http-handler';
