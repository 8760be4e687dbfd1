/**
 * Errors are for failures; expected outcomes (duplicate, mismatch, in progress) are values.
 *
 * Every error carries a literal `code` and is recognised by it, never by `instanceof`
 * (a package bundled twice breaks `instanceof`, minifiers rename classes). The code
 * determines the disposition: retry later, permanent (dead letter with the reason), or
 * configuration (fail fast at cold start).
 */

/** How the batch treats a failure. */
export type Disposition = 'retry' | 'permanent' | 'configuration';

/**
 * Every error code the toolkit raises, with its disposition: `retry` (reported as a batch item
 * failure, the queue redelivers), `permanent` (dead-lettered with the reason, never silently
 * dropped) or `configuration` (thrown at cold start, the function fails to initialise).
 */
export const ERROR_CODES = Object.freeze({
  /** DynamoDB or SQS throttled the request (or answered HTTP 429). */
  THROTTLED: 'retry',
  /** An AWS 5xx or an unrecognised AWS error. */
  SERVICE_UNAVAILABLE: 'retry',
  /** A concurrent transaction touched the same items. */
  TRANSACTION_CONFLICT: 'retry',
  /** A socket error or timeout before an answer arrived. */
  NETWORK: 'retry',
  /** Another delivery holds the key in progress (its lease has not ended). */
  IN_FLIGHT: 'retry',
  /** The record had not started `deadlineMarginMillis` before the Lambda timeout. */
  DEADLINE: 'retry',
  /** FIFO: an earlier record of the same message group failed in this batch, so this one did not run. */
  GROUP_BLOCKED: 'retry',
  /** The user's `handle` threw an error that is not a toolkit error. */
  HANDLER_FAILED: 'retry',
  /** The store returned a record whose `expiresAt` has passed: treated as absent, retried. */
  EXPIRED_RECORD: 'retry',
  /** Sending to the dead-letter queue failed (`deadLetter: 'direct'`): nothing is lost, retried. */
  DEAD_LETTER_FAILED: 'retry',
  /** Two-phase: the lease ended and another delivery took the claim over; it completes the effect. */
  LEASE_LOST: 'retry',
  /** A non-toolkit error outside the user's handler (for example from an injected store). */
  UNEXPECTED: 'retry',
  /** The body could not be parsed (not JSON, or the `parseBody` option threw). */
  MALFORMED_BODY: 'permanent',
  /** The dedup key source found no value in the message. */
  MISSING_KEY: 'permanent',
  /** The dedup key value is not a usable key (empty, or not a string or number). */
  INVALID_KEY: 'permanent',
  /** A live record holds the key with another payload fingerprint. */
  PAYLOAD_MISMATCH: 'permanent',
  /**
   * An outbox item with the event's id exists holding another event (`attribute_not_exists`
   * failed on the outbox put): nothing was committed, so no event is replaced without a trace.
   */
  OUTBOX_COLLISION: 'permanent',
  /** An item would exceed DynamoDB's 400 KB item limit. */
  ITEM_TOO_LARGE: 'permanent',
  /** The commit would exceed DynamoDB's 100 items per transaction. */
  TOO_MANY_WRITES: 'permanent',
  /** The commit would exceed DynamoDB's 4 MB per transaction. */
  TRANSACTION_TOO_LARGE: 'permanent',
  /** DynamoDB rejected the request as invalid (`ValidationException`). */
  VALIDATION: 'permanent',
  /** A condition of the user's own business writes failed inside the commit. */
  BUSINESS_CONDITION_FAILED: 'permanent',
  /** The user's `handle` threw a `PermanentError`; its message is the reason. */
  PERMANENT: 'permanent',
  /** Two-phase: a claim past `stuckAfterMillis` or `maxTakeovers`; a human decides (see `TwoPhaseOptions`). */
  STUCK_IN_PROGRESS: 'permanent',
  /** An option failed validation at creation (cold start). */
  INVALID_OPTIONS: 'configuration',
  /** A table or queue does not exist (`ResourceNotFoundException`). */
  MISSING_RESOURCE: 'configuration',
  /** The function's role may not call the table or queue. */
  ACCESS_DENIED: 'configuration',
  /** The Lambda event is not an SQS event (no `Records` list). */
  INVALID_EVENT: 'configuration',
} as const satisfies Record<string, Disposition>);

/** A toolkit error code. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** Base class of every error the toolkit throws. Recognise it with `isEffectivelyOnceError`. */
export class EffectivelyOnceError extends Error {
  /** The class name, `EffectivelyOnceError` (subclasses set their own). */
  override readonly name: string = 'EffectivelyOnceError';
  /** What failed; recognise errors by this, never by `instanceof`. */
  readonly code: ErrorCode;
  /** How the batch treats the failure, `ERROR_CODES[code]`. */
  readonly disposition: Disposition;

  /**
   * @param code - what failed (one of `ERROR_CODES`)
   * @param message - a description for logs; never quote a message body in it
   * @param options - `cause`: the underlying error
   */
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.disposition = ERROR_CODES[code];
  }
}

/**
 * Thrown by a user's handler to say "this message can never succeed": the message is
 * dead-lettered with `reason` instead of being retried.
 *
 * @example
 * if (!order.items.length) throw new PermanentError('order has no items');
 */
export class PermanentError extends EffectivelyOnceError {
  /** The class name, `PermanentError`. */
  override readonly name = 'PermanentError';

  /**
   * @param reason - why the message can never succeed; carried to the dead letter and the log
   * @param options - `cause`: the underlying error
   */
  constructor(reason: string, options?: { cause?: unknown }) {
    super('PERMANENT', reason, options);
  }
}

/** True for any error raised by the toolkit (or a `PermanentError`), by its `code`. */
export function isEffectivelyOnceError(error: unknown): error is EffectivelyOnceError {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && Object.hasOwn(ERROR_CODES, code);
}

/** The disposition of any thrown value: toolkit errors by code; anything else is retried. */
export function dispositionOf(error: unknown): Disposition {
  return isEffectivelyOnceError(error) ? ERROR_CODES[error.code] : 'retry';
}

/**
 * The log fields of a failure: its toolkit code (else `fallback`) and its class name, never its
 * message (which may quote a body).
 */
export function errorFields(error: unknown, fallback: ErrorCode) {
  return {
    code: isEffectivelyOnceError(error) ? error.code : fallback,
    errorName: (error as Error | undefined)?.name,
  };
}

/**
 * How a bad value is shown in an error message, the same way everywhere: strings quoted,
 * functions, arrays and objects by their kind (never their content, which may be user data),
 * anything else as `String(value)`.
 */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' && value !== null ? 'an object' : String(value);
}

/**
 * Throws `INVALID_OPTIONS` with the one message shape every option check uses:
 * ``Expected `field` to be expected, got `value` `` (the value shown by `describeValue`).
 */
export function invalidOption(field: string, expected: string, value: unknown): never {
  throw new EffectivelyOnceError(
    'INVALID_OPTIONS',
    `Expected \`${field}\` to be ${expected}, got \`${describeValue(value)}\``,
  );
}

/** Throws `INVALID_OPTIONS` (see `invalidOption`) unless `ok`. */
export function expectOption(ok: unknown, field: string, expected: string, value: unknown): void {
  if (!ok) invalidOption(field, expected, value);
}

/**
 * Throws `INVALID_OPTIONS` (see `invalidOption`) unless `value` is `undefined` or an object whose
 * `count` member is an integer from 1 to `max`: the shape of the options that size a bounded
 * table (`completedCache: { maxEntries }`, `groupMetrics: { maxGroups }`).
 */
export function expectBoundedCountOption(field: string, count: string, max: number, value: unknown): void {
  if (value === undefined) return;
  expectOption(typeof value === 'object' && value !== null, field, 'an object', value);
  const member = (value as Record<string, unknown>)[count];
  expectOption(
    Number.isSafeInteger(member) && (member as number) >= 1 && (member as number) <= max,
    `${field}.${count}`,
    `an integer from 1 to ${max}`,
    member,
  );
}

/**
 * Throws `INVALID_OPTIONS` (see `invalidOption`) unless `value` is an object with a function at
 * each of `methods`: ``Expected `store` to be an object with `insert`, `release`, got ...``.
 */
export function expectMethods(field: string, value: unknown, methods: readonly string[]): void {
  const ok =
    typeof value === 'object' &&
    value !== null &&
    methods.every((method) => typeof (value as Record<string, unknown>)[method] === 'function');
  expectOption(ok, field, `an object with ${methods.map((method) => `\`${method}\``).join(', ')}`, value);
}
