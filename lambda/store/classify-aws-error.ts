/**
 * The one place that inspects AWS SDK error names, HTTP status codes and transaction
 * cancellation reason codes, and turns them into `EffectivelyOnceError` codes (see
 * `lambda/core/errors.ts`). Everything else recognises failures by `code`.
 *
 * Expected outcomes of a conditional write (a failed `attribute_not_exists`, a cancelled
 * transaction) are not errors: `readConditionalCheckFailure` and
 * `readTransactionCancellation` expose them so the store can turn them into values.
 */
import { EffectivelyOnceError, type ErrorCode, isEffectivelyOnceError } from '../core/errors';

/** A failed condition on a single-item write, with the stored item if DynamoDB returned it. */
export interface ConditionalCheckFailure {
  /**
   * The item that failed the condition (`ReturnValuesOnConditionCheckFailure: 'ALL_OLD'`).
   * The document client does not unmarshall error payloads, so this is normally raw
   * `AttributeValue`s; callers must accept both shapes.
   */
  readonly item?: Record<string, unknown>;
}

/** What one entry of a cancelled transaction's `CancellationReasons` means, in transaction order. */
export type CancellationOutcome =
  /** This item did not cause the cancellation. */
  | { readonly kind: 'none' }
  /** This item's condition failed; `item` is the stored item (raw or unmarshalled) if returned. */
  | {
      readonly kind: 'condition-failed';
      readonly item?: Record<string, unknown>;
      readonly message?: string;
    }
  /** This item failed for another reason, already classified. */
  | { readonly kind: 'failed'; readonly error: EffectivelyOnceError };

const THROTTLING_NAMES = new Set([
  'ThrottlingException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  // Control-plane and account-level limits; transient by nature.
  'LimitExceededException',
  'TooManyRequestsException',
]);

const CONFLICT_NAMES = new Set([
  'TransactionConflictException',
  'TransactionInProgressException',
  // Global tables with strong consistency: a concurrent write in another region.
  'ReplicatedWriteConflictException',
]);

const SERVICE_NAMES = new Set(['InternalServerError', 'InternalFailure', 'ServiceUnavailable']);

const ACCESS_NAMES = new Set(['AccessDeniedException', 'UnrecognizedClientException']);

/** Node.js socket error codes (the same set the SDK's own retry strategy treats as transient). */
const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

const NETWORK_NAMES = new Set(['TimeoutError', 'RequestTimeout', 'RequestTimeoutException', 'AbortError']);

const ITEM_TOO_LARGE_MESSAGE = /item size (to update )?has exceeded the maximum allowed size/i;
const TRANSACTION_TOO_LARGE_MESSAGE = /transaction request cannot be larger than/i;
const TOO_MANY_WRITES_MESSAGE = /transactItems.*length less than or equal to/is;
/** Errors that `@aws-sdk/util-dynamodb` throws while marshalling, before anything is sent. */
const MARSHALL_MESSAGE =
  /removeUndefinedValues|convertClassInstanceToMap|Unsupported type passed|(greater|lesser) than Number\.M(AX|IN)_SAFE_INTEGER/;

/**
 * Maps any error thrown by the AWS SDK (or by the network underneath it) to an
 * `EffectivelyOnceError`, keeping the original as `cause`. An `EffectivelyOnceError` is
 * returned unchanged.
 *
 * | AWS error | code | disposition |
 * |---|---|---|
 * | `ThrottlingException`, `ProvisionedThroughputExceededException`, `RequestLimitExceeded`, HTTP 429 | `THROTTLED` | retry |
 * | `InternalServerError`, `ServiceUnavailable`, any HTTP 5xx | `SERVICE_UNAVAILABLE` | retry |
 * | `TransactionConflictException`, `TransactionInProgressException`, a `TransactionCanceledException` without reasons | `TRANSACTION_CONFLICT` | retry |
 * | `ECONNRESET`, `ECONNREFUSED`, `ETIMEDOUT`, `TimeoutError`, `AbortError`, socket hang up | `NETWORK` | retry |
 * | `ValidationException` "Item size has exceeded the maximum allowed size" | `ITEM_TOO_LARGE` | permanent |
 * | `ValidationException` on more than 100 transaction items / more than 4 MB | `TOO_MANY_WRITES` / `TRANSACTION_TOO_LARGE` | permanent |
 * | any other `ValidationException`, `ItemCollectionSizeLimitExceededException`, a marshalling error | `VALIDATION` | permanent |
 * | `ResourceNotFoundException` | `MISSING_RESOURCE` | configuration |
 * | `AccessDeniedException`, `UnrecognizedClientException` | `ACCESS_DENIED` | configuration |
 * | anything else | `SERVICE_UNAVAILABLE` | retry |
 *
 * Unknown errors are retried on purpose: a retry is bounded by the queue's
 * `maxReceiveCount` and then dead-lettered anyway, whereas classifying an unknown
 * transient failure as permanent would dead-letter a message that would have succeeded.
 *
 * @param error - whatever the SDK threw.
 * @param operation - what the caller was doing, prefixed to the message (for example `insert`).
 * @example
 * try {
 *   await client.send(command);
 * } catch (error) {
 *   throw classifyAwsError(error, 'insert');
 * }
 */
export function classifyAwsError(error: unknown, operation = 'DynamoDB request'): EffectivelyOnceError {
  if (isEffectivelyOnceError(error)) return error;
  const name = errorName(error);
  const message = errorMessage(error);
  const status = httpStatusOf(error);
  // DynamoDB's own messages name attributes, never values; an error raised in the client (the
  // marshaller: "Number 98765432109876543210 is greater than ...") may quote a value from the
  // body, so only its class is kept. Node's socket errors quote nothing but addresses.
  const shown = status !== undefined || isNetworkError(error, name, message) ? `${name}: ${message}` : name;
  const make = (code: ErrorCode, what: string) =>
    new EffectivelyOnceError(code, `${operation}: ${what} (${shown})`, { cause: error });

  if (THROTTLING_NAMES.has(name) || status === 429)
    return make('THROTTLED', 'DynamoDB throttled the request');
  if (CONFLICT_NAMES.has(name))
    return make('TRANSACTION_CONFLICT', 'a concurrent transaction touched the item');
  if (name === 'TransactionCanceledException') {
    return make('TRANSACTION_CONFLICT', 'the transaction was cancelled without cancellation reasons');
  }
  if (name === 'ValidationException') return classifyValidation(message, make);
  if (name === 'ItemCollectionSizeLimitExceededException') {
    return make('VALIDATION', 'the item collection exceeds the 10 GB limit of a local secondary index');
  }
  if (name === 'ResourceNotFoundException') return make('MISSING_RESOURCE', 'the table does not exist');
  if (ACCESS_NAMES.has(name)) return make('ACCESS_DENIED', 'the credentials may not perform this request');
  if (SERVICE_NAMES.has(name) || (status !== undefined && status >= 500)) {
    return make('SERVICE_UNAVAILABLE', 'DynamoDB failed to serve the request');
  }
  if (isNetworkError(error, name, message)) return make('NETWORK', 'the request did not complete');
  if (status === undefined && MARSHALL_MESSAGE.test(message)) {
    return make(
      'VALIDATION',
      'the item cannot be marshalled (create the document client with marshallOptions ' +
        '{ removeUndefinedValues: true }, or write only plain JSON-like values)',
    );
  }
  return make('SERVICE_UNAVAILABLE', 'unrecognised failure, retried');
}

/**
 * Recognises a `ConditionalCheckFailedException` from a single-item write (PutItem,
 * UpdateItem, DeleteItem). Returns `undefined` for every other error.
 */
export function readConditionalCheckFailure(error: unknown): ConditionalCheckFailure | undefined {
  if (errorName(error) !== 'ConditionalCheckFailedException') return undefined;
  const item = asItem((error as { Item?: unknown }).Item);
  return item ? { item } : {};
}

/**
 * Recognises a `TransactionCanceledException` and explains each of its
 * `CancellationReasons`, in the order of the request's `TransactItems`. Returns `undefined`
 * for every other error, and an empty array when the service sent no reasons (some
 * emulators and stub clients omit them).
 *
 * Reason codes: `None`, `ConditionalCheckFailed`, `TransactionConflict` (retry),
 * `ThrottlingError` / `ProvisionedThroughputExceeded` / `RequestLimitExceeded` (retry),
 * `ValidationError` (permanent, `ITEM_TOO_LARGE` when the message says so),
 * `ItemCollectionSizeLimitExceeded` (permanent); an unknown code is retried.
 */
export function readTransactionCancellation(error: unknown): readonly CancellationOutcome[] | undefined {
  if (errorName(error) !== 'TransactionCanceledException') return undefined;
  const reasons = (error as { CancellationReasons?: unknown }).CancellationReasons;
  if (!Array.isArray(reasons)) return [];
  return reasons.map((reason: unknown, index) => explainReason(reason, index, error));
}

function explainReason(reason: unknown, index: number, cause: unknown): CancellationOutcome {
  const { Code: code, Message: rawMessage, Item: rawItem } = (reason ?? {}) as Record<string, unknown>;
  const message = typeof rawMessage === 'string' ? rawMessage : undefined;
  if (code === undefined || code === null || code === 'None') return { kind: 'none' };
  if (code === 'ConditionalCheckFailed') {
    const item = asItem(rawItem);
    return {
      kind: 'condition-failed',
      ...(item ? { item } : {}),
      ...(message !== undefined ? { message } : {}),
    };
  }
  const make = (errorCode: ErrorCode, what: string) =>
    new EffectivelyOnceError(
      errorCode,
      `commit: transaction item ${index} ${what} (${String(code)}${message ? `: ${message}` : ''})`,
      { cause },
    );
  switch (code) {
    case 'TransactionConflict':
      return { kind: 'failed', error: make('TRANSACTION_CONFLICT', 'conflicted with a concurrent write') };
    case 'ThrottlingError':
    case 'ProvisionedThroughputExceeded':
    case 'RequestLimitExceeded':
      return { kind: 'failed', error: make('THROTTLED', 'was throttled') };
    case 'ValidationError':
      return {
        kind: 'failed',
        error: ITEM_TOO_LARGE_MESSAGE.test(message ?? '')
          ? make('ITEM_TOO_LARGE', 'exceeds the 400 KB item size limit')
          : make('VALIDATION', 'is invalid'),
      };
    case 'ItemCollectionSizeLimitExceeded':
      return {
        kind: 'failed',
        error: make('VALIDATION', 'exceeds the 10 GB item collection limit of a local secondary index'),
      };
    default:
      return { kind: 'failed', error: make('SERVICE_UNAVAILABLE', 'failed for an unrecognised reason') };
  }
}

function classifyValidation(
  message: string,
  make: (code: ErrorCode, what: string) => EffectivelyOnceError,
): EffectivelyOnceError {
  if (ITEM_TOO_LARGE_MESSAGE.test(message)) {
    return make('ITEM_TOO_LARGE', 'an item exceeds the DynamoDB limit of 400 KB');
  }
  if (TRANSACTION_TOO_LARGE_MESSAGE.test(message)) {
    return make('TRANSACTION_TOO_LARGE', 'the transaction exceeds the DynamoDB limit of 4 MB');
  }
  if (TOO_MANY_WRITES_MESSAGE.test(message)) {
    return make('TOO_MANY_WRITES', 'the transaction exceeds the DynamoDB limit of 100 items');
  }
  return make('VALIDATION', 'DynamoDB rejected the request as invalid');
}

function isNetworkError(error: unknown, name: string, message: string): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (
    NETWORK_NAMES.has(name) ||
    (typeof code === 'string' && NETWORK_CODES.has(code)) ||
    /socket hang up/i.test(message)
  );
}

/** The AWS error name: `name`, else a Node.js `code`, else the `__type` shape id suffix. */
function errorName(error: unknown): string {
  if (typeof error !== 'object' || error === null) return typeof error;
  const { name, code, __type: type } = error as { name?: unknown; code?: unknown; __type?: unknown };
  if (typeof name === 'string' && name !== '' && name !== 'Error') return name;
  if (typeof code === 'string' && code !== '') return code;
  if (typeof type === 'string' && type !== '') return type.slice(type.lastIndexOf('#') + 1);
  return typeof name === 'string' && name !== '' ? name : 'Error';
}

function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'object' && error !== null) {
    const { message } = error as { message?: unknown };
    if (typeof message === 'string') return message;
  }
  return String(error);
}

function httpStatusOf(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const status = (error as { $metadata?: { httpStatusCode?: unknown } }).$metadata?.httpStatusCode;
  return typeof status === 'number' ? status : undefined;
}

function asItem(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}
