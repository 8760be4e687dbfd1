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

type Rule = readonly [code: ErrorCode, what: string];

/** The item collection limit of a local secondary index, as an item and a request exceed it. */
const COLLECTION_LIMIT = 'exceeds the 10 GB item collection limit of a local secondary index';
/** A DynamoDB request limit, as a request exceeds it. */
const LIMIT = 'exceeds the DynamoDB limit of';

/** Adds `names` (space-separated) to `table`, each meaning `code`: "`what` (name: message)". */
function rule(table: Record<string, Rule>, names: string, code: ErrorCode, what: string): Rule {
  const value: Rule = [code, what];
  for (const name of names.split(' ')) table[name] = value;
  return value;
}

/** AWS error names, by what they mean. */
const RULES: Record<string, Rule> = {};
const THROTTLED = rule(
  RULES,
  // Control-plane and account-level limits too: transient by nature.
  'ThrottlingException ProvisionedThroughputExceededException RequestLimitExceeded LimitExceededException TooManyRequestsException',
  'THROTTLED',
  'DynamoDB throttled the request',
);
rule(
  RULES,
  // ReplicatedWriteConflict: global tables with strong consistency, a concurrent write in another region.
  'TransactionConflictException TransactionInProgressException ReplicatedWriteConflictException',
  'TRANSACTION_CONFLICT',
  'a concurrent transaction touched the item',
);
rule(
  RULES,
  'TransactionCanceledException',
  'TRANSACTION_CONFLICT',
  // Met only when no cancellation reason names a failed item (or none was sent).
  'the transaction was cancelled, but no cancellation reason names a failed item',
);
rule(
  RULES,
  'ItemCollectionSizeLimitExceededException',
  'VALIDATION',
  `the item collection ${COLLECTION_LIMIT}`,
);
rule(RULES, 'ResourceNotFoundException', 'MISSING_RESOURCE', 'the table does not exist');
rule(
  RULES,
  'AccessDeniedException UnrecognizedClientException',
  'ACCESS_DENIED',
  'the credentials may not perform this request',
);
const SERVICE_UNAVAILABLE = rule(
  RULES,
  'InternalServerError InternalFailure ServiceUnavailable',
  'SERVICE_UNAVAILABLE',
  'DynamoDB failed to serve the request',
);

/**
 * Network failures by error name or Node.js socket code (the codes the SDK's own retry strategy
 * treats as transient); checked after an HTTP 5xx.
 */
const NETWORK: Record<string, Rule> = {};
const NETWORK_FAILURE = rule(
  NETWORK,
  'TimeoutError RequestTimeout RequestTimeoutException AbortError ECONNRESET ECONNREFUSED ECONNABORTED EPIPE ETIMEDOUT EHOSTUNREACH ENETUNREACH ENOTFOUND EAI_AGAIN',
  'NETWORK',
  'the request did not complete',
);

const ITEM_TOO_LARGE_MESSAGE = /item size (to update )?has exceeded the maximum allowed size/i;

/** `ValidationException` messages, first match wins. */
const VALIDATION_RULES: readonly (readonly [RegExp, ErrorCode, string])[] = [
  [ITEM_TOO_LARGE_MESSAGE, 'ITEM_TOO_LARGE', `an item ${LIMIT} 400 KB`],
  [/transaction request cannot be larger than/i, 'TRANSACTION_TOO_LARGE', `the transaction ${LIMIT} 4 MB`],
  [/transactItems.*length less than or equal to/is, 'TOO_MANY_WRITES', `the transaction ${LIMIT} 100 items`],
  [/(?:)/, 'VALIDATION', 'DynamoDB rejected the request as invalid'],
];

/** Errors that `@aws-sdk/util-dynamodb` throws while marshalling, before anything is sent. */
const MARSHALL_MESSAGE =
  /removeUndefinedValues|convertClassInstanceToMap|Unsupported type passed|(greater|lesser) than Number\.M(AX|IN)_SAFE_INTEGER/;

/** Transaction cancellation reason codes, for one item of the transaction. */
const REASONS: Record<string, Rule> = {};
rule(REASONS, 'TransactionConflict', 'TRANSACTION_CONFLICT', 'conflicted with a concurrent write');
rule(
  REASONS,
  'ThrottlingError ProvisionedThroughputExceeded RequestLimitExceeded',
  'THROTTLED',
  'was throttled',
);
rule(REASONS, 'ItemCollectionSizeLimitExceeded', 'VALIDATION', COLLECTION_LIMIT);

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
  const { $metadata, code } = (error ?? {}) as { $metadata?: { httpStatusCode?: unknown }; code?: unknown };
  const status = $metadata?.httpStatusCode;
  const network =
    NETWORK[name] ??
    NETWORK[code as string] ??
    (/socket hang up/i.test(message) ? NETWORK_FAILURE : undefined);
  const [errorCode, what] =
    status === 429
      ? THROTTLED
      : name === 'ValidationException'
        ? VALIDATION_RULES.find(([pattern]) => pattern.test(message))!.slice(1)
        : (RULES[name] ??
          ((status as number) >= 500
            ? SERVICE_UNAVAILABLE
            : (network ??
              (status === undefined && MARSHALL_MESSAGE.test(message)
                ? [
                    'VALIDATION',
                    'the item cannot be marshalled (create the document client with marshallOptions ' +
                      '{ removeUndefinedValues: true }, or write only plain JSON-like values)',
                  ]
                : ['SERVICE_UNAVAILABLE', 'unrecognised failure, retried']))));
  // DynamoDB's own messages name attributes, never values; an error raised in the client (the
  // marshaller: "Number 98765432109876543210 is greater than ...") may quote a value from the
  // body, so only its class is kept. Node's socket errors quote nothing but addresses.
  const shown = status !== undefined || network ? `${name}: ${message}` : name;
  return new EffectivelyOnceError(errorCode as ErrorCode, `${operation}: ${what} (${shown})`, {
    cause: error,
  });
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
  const [errorCode, what] =
    REASONS[code as string] ??
    (code !== 'ValidationError'
      ? ['SERVICE_UNAVAILABLE', 'failed for an unrecognised reason']
      : ITEM_TOO_LARGE_MESSAGE.test(message ?? '')
        ? ['ITEM_TOO_LARGE', `${LIMIT} 400 KB`]
        : ['VALIDATION', 'is invalid']);
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
