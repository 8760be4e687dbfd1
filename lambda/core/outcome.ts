/**
 * Outcomes are values: what happened to one message, decided by the core from what the store
 * said. Every message ends in exactly one outcome, and each outcome has one metric.
 */
import { dispositionOf, type ErrorCode, isEffectivelyOnceError } from './errors';
import { readExistingRecord } from './existing-record';
import type { InboxRecord } from './store-port';

/** A failure outcome's details, for the log line and the dead-letter reason. */
export interface FailureDetails {
  /** The error code of the failure (its disposition matches the outcome). */
  readonly code: ErrorCode;
  /**
   * Human-readable reason, safe to log: the toolkit's own text, or the class (and `code`) of an
   * error thrown by user code or a library, never its message.
   */
  readonly reason: string;
  /** The class name of the underlying error, when there is one. */
  readonly errorName?: string;
  /**
   * The `code` of a non-toolkit error, when it has one that reads as an identifier (for example
   * Node's `ERR_ASSERTION`).
   */
  readonly errorCode?: string;
  /** The underlying error, kept for custom loggers. Never serialised by the toolkit. */
  readonly error?: unknown;
}

/** What happened to one message. */
export type Outcome =
  | {
      /** The effect ran and its marker is stored. Acknowledged. */
      readonly kind: 'processed';
    }
  | {
      /** A live record with the same fingerprint exists: the effect already happened. Acknowledged. */
      readonly kind: 'duplicate';
    }
  | {
      /** A newer version is already stored (`putIfNewer`): nothing was written. Acknowledged. */
      readonly kind: 'stale';
    }
  | {
      /** Another delivery holds the key (`IN_PROGRESS`). Retried later. */
      readonly kind: 'in-flight';
    }
  | ({
      /** A live record with a different fingerprint holds the key. Permanent: dead-lettered. */
      readonly kind: 'mismatch';
    } & FailureDetails)
  | ({
      /** A transient failure. Reported as a batch item failure. */
      readonly kind: 'retry';
    } & FailureDetails)
  | ({
      /** A failure that no retry can fix. Dead-lettered with the reason. */
      readonly kind: 'permanent';
    } & FailureDetails);

/** The kind of an outcome. */
export type OutcomeKind = Outcome['kind'];

/**
 * What an existing record means for a message with `fingerprint`, read at `nowMillis`
 * (`readExistingRecord`): expired → retry (`EXPIRED_RECORD`: it counts as absent, but only the
 * database may decide that the key is free), other fingerprint → mismatch, completed →
 * duplicate, any claim in progress (running, lease ended, released) → in-flight. An entity item
 * written by something else has the fingerprint `''`: a mismatch.
 */
export function outcomeOfExisting(record: InboxRecord, fingerprint: string, nowMillis: number): Outcome {
  const reading = readExistingRecord(record, fingerprint, nowMillis);
  switch (reading.kind) {
    case 'expired':
      return {
        kind: 'retry',
        code: 'EXPIRED_RECORD',
        reason: 'The store returned an expired inbox record; retrying treats it as absent',
      };
    case 'mismatch':
      return {
        kind: 'mismatch',
        code: 'PAYLOAD_MISMATCH',
        reason: `The dedup key was already used with a different payload (stored fingerprint ${reading.storedFingerprint}, this message ${fingerprint})`,
      };
    case 'completed':
      return { kind: 'duplicate' };
    case 'in-flight':
    case 'lease-ended':
    case 'released':
      // Another delivery holds the key; taking a crashed claim over is the lease claim's call.
      return { kind: 'in-flight' };
  }
}

/**
 * The failure outcome of a thrown value. Toolkit errors keep their code and disposition
 * (a configuration error met at run time is retried: the message must not be lost); anything
 * else is retried under `fallback`.
 *
 * The reason of a toolkit error (an `EffectivelyOnceError`, including a `PermanentError` a
 * handler throws on purpose) is its message: the toolkit's messages never quote a body, and a
 * handler that throws one writes its reason for the dead letter. Any other error (from user
 * code or a library it calls) is described by its class and `code` only: its message may quote
 * data (`assert.match(card, ...)` quotes the card). The batch processor shows that message only
 * with `logErrorMessages` (see {@link reasonOf}).
 */
export function outcomeOfError(error: unknown, fallback: ErrorCode): Outcome {
  const described = typeof error === 'object' && error !== null ? (error as Partial<Error>) : {};
  const errorName = typeof described.name === 'string' ? described.name : typeof error;
  if (!isEffectivelyOnceError(error)) {
    const { code } = described as { code?: unknown };
    // Only a code that reads as an identifier: a code is never meant to be free text.
    const errorCode = typeof code === 'string' && /^[\w.:-]{1,64}$/.test(code) ? code : undefined;
    const reason =
      errorName === 'SyntaxError'
        ? SYNTAX_ERROR_REASON
        : `${errorName}${errorCode ? ` (code ${errorCode})` : ''} thrown; its message is not logged`;
    return { kind: 'retry', code: fallback, reason, errorName, errorCode, error };
  }
  const kind = dispositionOf(error) === 'permanent' ? 'permanent' : 'retry';
  return { kind, code: error.code, reason: String(error.message), errorName, error };
}

/**
 * The reason a failure is logged and dead-lettered with: `details.reason`, or, with
 * `logErrorMessages`, the message of the non-toolkit error behind it. A `SyntaxError`'s message
 * is never shown: `JSON.parse` quotes the text it failed on, and bodies never reach the logs.
 */
export function reasonOf(details: FailureDetails, logErrorMessages: boolean): string {
  const { error } = details;
  if (!logErrorMessages || error === undefined || isEffectivelyOnceError(error)) return details.reason;
  if (details.errorName === 'SyntaxError') return SYNTAX_ERROR_REASON;
  const { message } = (typeof error === 'object' && error !== null ? error : {}) as Partial<Error>;
  return typeof message === 'string' ? message : String(error);
}

/**
 * The `errorMessage` log field of a failure for the entry points that log an error's class and
 * code only (HTTP wrapper, job guard, worker): the error's message with `logErrorMessages`,
 * except a `SyntaxError`'s (it may quote the input); else nothing.
 */
export function errorMessageField(
  error: unknown,
  logErrorMessages: boolean | undefined,
): { readonly errorMessage?: string } {
  if (logErrorMessages !== true) return {};
  const { name, message } = (typeof error === 'object' && error !== null ? error : {}) as Partial<Error>;
  if (name === 'SyntaxError') return {};
  return { errorMessage: typeof message === 'string' ? message : String(error) };
}

/** The reason logged for a `SyntaxError`, whose own message may quote the input. */
export const SYNTAX_ERROR_REASON =
  'A SyntaxError was thrown; its message may quote the input, so it is not logged';
