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
  THROTTLED: 'retry',
  SERVICE_UNAVAILABLE: 'retry',
  TRANSACTION_CONFLICT: 'retry',
  NETWORK: 'retry',
  IN_FLIGHT: 'retry',
  DEADLINE: 'retry',
  GROUP_BLOCKED: 'retry',
  HANDLER_FAILED: 'retry',
  /** The store returned a record whose `expiresAt` has passed: treated as absent, retried. */
  EXPIRED_RECORD: 'retry',
  /** Sending to the dead-letter queue failed (`deadLetter: 'direct'`): nothing is lost, retried. */
  DEAD_LETTER_FAILED: 'retry',
  /** Two-phase: the lease ended and another delivery took the claim over; it completes the effect. */
  LEASE_LOST: 'retry',
  /** A non-toolkit error outside the user's handler (for example from an injected store). */
  UNEXPECTED: 'retry',
  MALFORMED_BODY: 'permanent',
  MISSING_KEY: 'permanent',
  INVALID_KEY: 'permanent',
  PAYLOAD_MISMATCH: 'permanent',
  ITEM_TOO_LARGE: 'permanent',
  TOO_MANY_WRITES: 'permanent',
  TRANSACTION_TOO_LARGE: 'permanent',
  VALIDATION: 'permanent',
  BUSINESS_CONDITION_FAILED: 'permanent',
  PERMANENT: 'permanent',
  /** Two-phase: a claim past `stuckAfterMillis` or `maxTakeovers`; a human decides (see `TwoPhaseOptions`). */
  STUCK_IN_PROGRESS: 'permanent',
  INVALID_OPTIONS: 'configuration',
  MISSING_RESOURCE: 'configuration',
  ACCESS_DENIED: 'configuration',
  /** The Lambda event is not an SQS event (no `Records` list). */
  INVALID_EVENT: 'configuration',
} as const satisfies Record<string, Disposition>);

/** A toolkit error code. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** Base class of every error the toolkit throws. Recognise it with `isEffectivelyOnceError`. */
export class EffectivelyOnceError extends Error {
  override readonly name: string = 'EffectivelyOnceError';
  readonly code: ErrorCode;
  readonly disposition: Disposition;

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
  override readonly name = 'PermanentError';

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
