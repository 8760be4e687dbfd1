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
  /**
   * DynamoDB's message for the failed condition, as a cancelled transaction's reason gives it
   * (`The conditional request failed`), when the exception carried one.
   */
  readonly message?: string;
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

/** What a failure means: the toolkit error code, and the reason the error message gives. */
interface Classification {
  readonly code: ErrorCode;
  readonly reason: string;
}

/** The item collection limit of a local secondary index, as an item and a request exceed it. */
const COLLECTION_LIMIT = 'exceeds the 10 GB item collection limit of a local secondary index';
/** A DynamoDB request limit, as a request exceeds it. */
const LIMIT = 'exceeds the DynamoDB limit of';

const THROTTLED: Classification = { code: 'THROTTLED', reason: 'DynamoDB throttled the request' };
const TRANSACTION_CONFLICT: Classification = {
  code: 'TRANSACTION_CONFLICT',
  reason: 'a concurrent transaction touched the item',
};
const ACCESS_DENIED: Classification = {
  code: 'ACCESS_DENIED',
  reason: 'the credentials may not perform this request',
};
const SERVICE_UNAVAILABLE: Classification = {
  code: 'SERVICE_UNAVAILABLE',
  reason: 'DynamoDB failed to serve the request',
};
const NETWORK_FAILURE: Classification = { code: 'NETWORK', reason: 'the request did not complete' };
const MARSHALL_FAILURE: Classification = {
  code: 'VALIDATION',
  reason:
    'the item cannot be marshalled (create the document client with marshallOptions ' +
    '{ removeUndefinedValues: true }, or write only plain JSON-like values)',
};
const UNRECOGNISED: Classification = { code: 'SERVICE_UNAVAILABLE', reason: 'unrecognised failure, retried' };

/** AWS error names (the exception's `name`), by what they mean. */
const AWS_ERRORS: Readonly<Record<string, Classification>> = {
  // Control-plane and account-level limits too: transient by nature.
  ThrottlingException: THROTTLED,
  ProvisionedThroughputExceededException: THROTTLED,
  RequestLimitExceeded: THROTTLED,
  LimitExceededException: THROTTLED,
  TooManyRequestsException: THROTTLED,
  TransactionConflictException: TRANSACTION_CONFLICT,
  TransactionInProgressException: TRANSACTION_CONFLICT,
  // Global tables with strong consistency: a concurrent write in another region.
  ReplicatedWriteConflictException: TRANSACTION_CONFLICT,
  // Met only when no cancellation reason names a failed item (or none was sent).
  TransactionCanceledException: {
    code: 'TRANSACTION_CONFLICT',
    reason: 'the transaction was cancelled, but no cancellation reason names a failed item',
  },
  ItemCollectionSizeLimitExceededException: {
    code: 'VALIDATION',
    reason: `the item collection ${COLLECTION_LIMIT}`,
  },
  ResourceNotFoundException: { code: 'MISSING_RESOURCE', reason: 'the table does not exist' },
  AccessDeniedException: ACCESS_DENIED,
  UnrecognizedClientException: ACCESS_DENIED,
  InternalServerError: SERVICE_UNAVAILABLE,
  InternalFailure: SERVICE_UNAVAILABLE,
  ServiceUnavailable: SERVICE_UNAVAILABLE,
};

/**
 * Network failures by error name or Node.js socket code (the codes the SDK's own retry strategy
 * treats as transient); checked after an HTTP 5xx.
 */
const NETWORK_ERRORS: Readonly<Record<string, Classification>> = {
  TimeoutError: NETWORK_FAILURE,
  RequestTimeout: NETWORK_FAILURE,
  RequestTimeoutException: NETWORK_FAILURE,
  AbortError: NETWORK_FAILURE,
  ECONNRESET: NETWORK_FAILURE,
  ECONNREFUSED: NETWORK_FAILURE,
  ECONNABORTED: NETWORK_FAILURE,
  EPIPE: NETWORK_FAILURE,
  ETIMEDOUT: NETWORK_FAILURE,
  EHOSTUNREACH: NETWORK_FAILURE,
  ENETUNREACH: NETWORK_FAILURE,
  ENOTFOUND: NETWORK_FAILURE,
  EAI_AGAIN: NETWORK_FAILURE,
};

const ITEM_TOO_LARGE_MESSAGE = /item size (to update )?has exceeded the maximum allowed size/i;

/** `ValidationException` messages; the first match wins, any other message is `VALIDATION`. */
const VALIDATION_MESSAGES: readonly { readonly message: RegExp; readonly means: Classification }[] = [
  {
    message: ITEM_TOO_LARGE_MESSAGE,
    means: { code: 'ITEM_TOO_LARGE', reason: `an item ${LIMIT} 400 KB` },
  },
  {
    message: /transaction request cannot be larger than/i,
    means: { code: 'TRANSACTION_TOO_LARGE', reason: `the transaction ${LIMIT} 4 MB` },
  },
  {
    message: /transactItems.*length less than or equal to/is,
    means: { code: 'TOO_MANY_WRITES', reason: `the transaction ${LIMIT} 100 items` },
  },
];
const INVALID_REQUEST: Classification = {
  code: 'VALIDATION',
  reason: 'DynamoDB rejected the request as invalid',
};

/** Errors that `@aws-sdk/util-dynamodb` throws while marshalling, before anything is sent. */
const MARSHALL_MESSAGE =
  /removeUndefinedValues|convertClassInstanceToMap|Unsupported type passed|(greater|lesser) than Number\.M(AX|IN)_SAFE_INTEGER/;

/**
 * Transaction cancellation reason codes, for one item of the transaction. The reason reads after
 * "transaction item N".
 */
const CANCELLATION_REASONS: Readonly<Record<string, Classification>> = {
  TransactionConflict: { code: 'TRANSACTION_CONFLICT', reason: 'conflicted with a concurrent write' },
  ThrottlingError: { code: 'THROTTLED', reason: 'was throttled' },
  ProvisionedThroughputExceeded: { code: 'THROTTLED', reason: 'was throttled' },
  RequestLimitExceeded: { code: 'THROTTLED', reason: 'was throttled' },
  ItemCollectionSizeLimitExceeded: { code: 'VALIDATION', reason: COLLECTION_LIMIT },
};
const ITEM_TOO_LARGE_REASON: Classification = { code: 'ITEM_TOO_LARGE', reason: `${LIMIT} 400 KB` };
const INVALID_REASON: Classification = { code: 'VALIDATION', reason: 'is invalid' };
const UNRECOGNISED_REASON: Classification = {
  code: 'SERVICE_UNAVAILABLE',
  reason: 'failed for an unrecognised reason',
};

/**
 * The entry of `table` named `key`: own entries only, so an error named like an `Object`
 * member (`constructor`) is not mistaken for one.
 */
function lookup(table: Readonly<Record<string, Classification>>, key: unknown): Classification | undefined {
  return typeof key === 'string' && Object.hasOwn(table, key) ? table[key] : undefined;
}

/**
 * Maps any error thrown by the AWS SDK (or by the network underneath it) to an
 * `EffectivelyOnceError`, keeping the original as `cause`. An `EffectivelyOnceError` is
 * returned unchanged.
 *
 * | AWS error | code | disposition |
 * |---|---|---|
 * | `ThrottlingException`, `ProvisionedThroughputExceededException`, `RequestLimitExceeded`, HTTP 429 | `THROTTLED` | retry |
 * | `InternalServerError`, `ServiceUnavailable`, any HTTP 5xx | `SERVICE_UNAVAILABLE` | retry |
 * | `TransactionConflictException`, `TransactionInProgressException`, a `TransactionCanceledException` whose reasons name no failed item | `TRANSACTION_CONFLICT` | retry |
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
  const { $metadata, code } = (error ?? {}) as { $metadata?: { httpStatusCode?: number }; code?: unknown };
  const status = $metadata?.httpStatusCode;
  const network = networkFailure(name, code, message);
  const { code: errorCode, reason } = classify(name, message, status, network);
  // DynamoDB's own messages name attributes, never values; an error raised in the client (the
  // marshaller: "Number 98765432109876543210 is greater than ...") may quote a value from the
  // body, so only its class is kept. Node's socket errors quote nothing but addresses.
  const shown = status !== undefined || network ? `${name}: ${message}` : name;
  return new EffectivelyOnceError(errorCode, `${operation}: ${reason} (${shown})`, { cause: error });
}

/**
 * What a failure means, first match wins: an HTTP 429, a `ValidationException` by its message,
 * a known AWS error name, an HTTP 5xx, a network failure, a marshalling error (raised before
 * anything was sent), else unrecognised (retried).
 */
function classify(
  name: string,
  message: string,
  status: number | undefined,
  network: Classification | undefined,
): Classification {
  if (status === 429) return THROTTLED;
  if (name === 'ValidationException') {
    return VALIDATION_MESSAGES.find((rule) => rule.message.test(message))?.means ?? INVALID_REQUEST;
  }
  const named = lookup(AWS_ERRORS, name);
  if (named) return named;
  if (status !== undefined && status >= 500) return SERVICE_UNAVAILABLE;
  if (network) return network;
  if (status === undefined && MARSHALL_MESSAGE.test(message)) return MARSHALL_FAILURE;
  return UNRECOGNISED;
}

/** A network failure, by error name, Node.js socket `code` or the "socket hang up" message. */
function networkFailure(name: string, code: unknown, message: string): Classification | undefined {
  return (
    lookup(NETWORK_ERRORS, name) ??
    lookup(NETWORK_ERRORS, code) ??
    (/socket hang up/i.test(message) ? NETWORK_FAILURE : undefined)
  );
}

/**
 * Classifies a failure to unmarshall an item DynamoDB returned (`ALL_OLD` of a failed condition,
 * a cancellation reason's `Item`): `VALIDATION`, permanent, since a retry meets the same stored
 * item. The message names the error's class only: the unmarshaller quotes the value it rejects.
 * (A response the document client unmarshals itself fails inside `send`: `classifyAwsError`
 * names it by class only too, as an unrecognised failure.)
 *
 * @example
 * try {
 *   return unmarshall(item);
 * } catch (error) {
 *   throw classifyUnmarshallError(error, 'insert');
 * }
 */
export function classifyUnmarshallError(error: unknown, operation: string): EffectivelyOnceError {
  return new EffectivelyOnceError(
    'VALIDATION',
    `${operation}: a returned item cannot be unmarshalled (${errorName(error)})`,
    { cause: error },
  );
}

/**
 * Recognises a `ConditionalCheckFailedException` from a single-item write (PutItem,
 * UpdateItem). Returns `undefined` for every other error.
 */
export function readConditionalCheckFailure(error: unknown): ConditionalCheckFailure | undefined {
  if (errorName(error) !== 'ConditionalCheckFailedException') return undefined;
  const item = asItem((error as { Item?: unknown }).Item);
  const message = (error as { message?: unknown }).message;
  return {
    ...(item ? { item } : {}),
    ...(typeof message === 'string' && message !== '' ? { message } : {}),
  };
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
  const { code: errorCode, reason: what } = reasonFailure(code, message);
  const detail = message ? `: ${message}` : '';
  return {
    kind: 'failed',
    error: new EffectivelyOnceError(
      errorCode,
      `commit: transaction item ${index} ${what} (${String(code)}${detail})`,
      { cause },
    ),
  };
}

/** What a cancellation reason code other than `None` and `ConditionalCheckFailed` means. */
function reasonFailure(code: unknown, message: string | undefined): Classification {
  const known = lookup(CANCELLATION_REASONS, code);
  if (known) return known;
  if (code !== 'ValidationError') return UNRECOGNISED_REASON;
  return ITEM_TOO_LARGE_MESSAGE.test(message ?? '') ? ITEM_TOO_LARGE_REASON : INVALID_REASON;
}

/** The AWS error name: `name`, else a Node.js `code`, else the `__type` shape id suffix. */
function errorName(error: unknown): string {
  if (typeof error !== 'object' || error === null) return typeof error;
  const { name, code, __type: type } = error as { name?: unknown; code?: unknown; __type?: unknown };
  return (
    (name !== 'Error' && nonEmpty(name)) ||
    nonEmpty(code) ||
    nonEmpty(type)?.slice((type as string).lastIndexOf('#') + 1) ||
    'Error'
  );
}

/** `value` when it is a non-empty string. */
function nonEmpty(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function errorMessage(error: unknown): string {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : String(error);
}

function asItem(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/**
 * Errors with which SQS, SNS or EventBridge refuse a publish request itself: its content, size,
 * characters or parameters. Sending the same request again is refused again, so the relay
 * dead-letters the event. The names are the `name` the AWS SDK v3 gives each exception, and the
 * service's error code where the SDK models no class for it (or another SDK major names it so):
 * - SQS `SendMessage`: `InvalidMessageContents` ("The message contains characters outside the
 *   allowed set"); `InvalidParameterValue` and `MissingParameter` (a body over the queue's
 *   `MaximumMessageSize`, a FIFO `MessageGroupId` or `MessageDeduplicationId` outside "128
 *   characters … alphanumeric characters and punctuation", a FIFO send without a group id);
 *   `BatchRequestTooLong` ("The length of all the messages put together is more than the limit").
 * - SNS `Publish`: `InvalidParameter`, `InvalidParameterValue` ("Indicates that a request
 *   parameter does not comply with the associated constraints"; the SDK's
 *   `InvalidParameterException`, `InvalidParameterValueException`), `ValidationException`
 *   ("a parameter in the request is invalid"), `BatchRequestTooLongException`.
 * - EventBridge `PutEvents`: `ValidationException`.
 *
 * Not here, so retried: throttling (`RequestThrottled`, `ThrottledException`, `KmsThrottled`,
 * `KMSThrottlingException`), 5xx, network failures, and what a fix of the deployment cures for
 * every event alike (a missing queue or topic, `AccessDenied`, `AuthorizationErrorException`,
 * a disabled or inaccessible KMS key, `InvalidSecurity`): dead-lettering them would empty the
 * stream into the dead-letter queue instead of alarming.
 */
const PUBLISH_REFUSALS: ReadonlySet<string> = new Set([
  'InvalidMessageContents',
  'InvalidParameterValue',
  'InvalidParameterValueException',
  'MissingParameter',
  'BatchRequestTooLong',
  'BatchRequestTooLongException',
  'InvalidParameter',
  'InvalidParameterException',
  'ValidationException',
]);

/**
 * Throttling by SQS, SNS or the KMS key of an encrypted queue or topic, by the SDK's `name`
 * (and the service's error code): SQS `RequestThrottled`, `KmsThrottled`; SNS `Throttled`
 * (`ThrottledException`), `KMSThrottling` (`KMSThrottlingException`). Retried as `THROTTLED`.
 */
const PUBLISH_THROTTLES: ReadonlySet<string> = new Set([
  'RequestThrottled',
  'KmsThrottled',
  'Throttled',
  'ThrottledException',
  'KMSThrottling',
  'KMSThrottlingException',
]);

/**
 * `ErrorCode` of a failed entry of a successful `PutEvents` response, by what it means (Amazon
 * EventBridge API Reference, PutEventsResultEntry): "Retryable errors include: InternalFailure …
 * ThrottlingException"; "Non-retryable errors include: AccessDeniedException,
 * InvalidAccountIdException, InvalidArgument ('A specified parameter is not valid'),
 * MalformedDetail ('The JSON provided is not valid'), RedactionFailure,
 * NotAuthorizedForSourceException, NotAuthorizedForDetailTypeException". Only the two that
 * refuse the entry itself are permanent; the permission and account errors are the deployment's
 * (retried, so the relay alarms instead of dead-lettering every event); any other code is retried.
 */
const PUT_EVENTS_ENTRY_ERRORS: Readonly<Record<string, ErrorCode>> = {
  InvalidArgument: 'VALIDATION',
  MalformedDetail: 'VALIDATION',
  ThrottlingException: 'THROTTLED',
  InternalFailure: 'SERVICE_UNAVAILABLE',
  AccessDeniedException: 'ACCESS_DENIED',
  NotAuthorizedForSourceException: 'ACCESS_DENIED',
  NotAuthorizedForDetailTypeException: 'ACCESS_DENIED',
  InvalidAccountIdException: 'ACCESS_DENIED',
};

/**
 * Maps an error thrown while publishing an outbox event (an SQS, SNS or EventBridge SDK error, a
 * network failure) to an `EffectivelyOnceError`, keeping the original as `cause`. A refusal of
 * the request itself ({@link PUBLISH_REFUSALS}) is `VALIDATION`, permanent: the relay
 * dead-letters the event and moves on. Everything else is retried (the relay checkpoints and
 * the event comes again): throttling ({@link PUBLISH_THROTTLES}, `ThrottlingException`, HTTP
 * 429) as `THROTTLED`, a network failure as `NETWORK` (the names and socket codes
 * {@link classifyAwsError} knows), `AccessDenied` as `ACCESS_DENIED`, and any other error (5xx,
 * a missing queue, a disabled KMS key, an unknown name) as `SERVICE_UNAVAILABLE`. An
 * `EffectivelyOnceError` is returned unchanged.
 *
 * The message names the error's class and, for a refusal, the service's message (SQS, SNS and
 * EventBridge name the parameter and the limit, never the body's content).
 *
 * @example
 * try {
 *   await destination.publish(message);
 * } catch (error) {
 *   const failure = classifyPublishError(error);
 *   if (failure.disposition === 'permanent') await deadLetter(message, failure);
 * }
 */
export function classifyPublishError(error: unknown, operation = 'publish'): EffectivelyOnceError {
  if (isEffectivelyOnceError(error)) return error;
  const name = errorName(error);
  if (PUBLISH_REFUSALS.has(name)) {
    return new EffectivelyOnceError(
      'VALIDATION',
      `${operation}: the destination refused the request (${name}: ${errorMessage(error)})`,
      { cause: error },
    );
  }
  const status = (error as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
  const code: ErrorCode =
    status === 429 || name === 'ThrottlingException' || PUBLISH_THROTTLES.has(name)
      ? 'THROTTLED'
      : (networkFailure(name, (error as { code?: unknown } | null)?.code, errorMessage(error))?.code ??
        (name === 'AccessDeniedException' || name === 'AccessDenied'
          ? 'ACCESS_DENIED'
          : 'SERVICE_UNAVAILABLE'));
  return new EffectivelyOnceError(
    code,
    `${operation}: the destination did not take the event, retried (${name})`,
    {
      cause: error,
    },
  );
}

/**
 * Classifies the failed entry of a `PutEvents` response that answered success with
 * `FailedEntryCount` above 0 ({@link PUT_EVENTS_ENTRY_ERRORS}): `InvalidArgument` and
 * `MalformedDetail` are `VALIDATION` (dead-lettered), `ThrottlingException` `THROTTLED`,
 * `InternalFailure` and unknown codes `SERVICE_UNAVAILABLE`, the permission and account codes
 * `ACCESS_DENIED` (all retried by the relay).
 *
 * @example
 * if ((result.FailedEntryCount ?? 0) > 0) throw classifyPutEventsEntryError(result.Entries?.[0]);
 */
export function classifyPutEventsEntryError(
  entry: { readonly ErrorCode?: string; readonly ErrorMessage?: string } | undefined,
  operation = 'publish',
): EffectivelyOnceError {
  const code = entry?.ErrorCode;
  const known = typeof code === 'string' && Object.hasOwn(PUT_EVENTS_ENTRY_ERRORS, code);
  return new EffectivelyOnceError(
    known ? PUT_EVENTS_ENTRY_ERRORS[code]! : 'SERVICE_UNAVAILABLE',
    `${operation}: EventBridge did not accept the event (${code ?? 'no error code'}: ${entry?.ErrorMessage ?? 'no error message'})`,
  );
}
