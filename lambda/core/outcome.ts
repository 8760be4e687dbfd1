/**
 * Outcomes are values: what happened to one message, decided by the core from what the store
 * said. Every message ends in exactly one outcome, and each outcome has one metric.
 */
import { INBOX_STATUS } from './contract';
import { dispositionOf, type ErrorCode, isEffectivelyOnceError } from './errors';
import type { InboxRecord } from './store-port';

/** A failure outcome's details, for the log line and the dead-letter reason. */
export interface FailureDetails {
  readonly code: ErrorCode;
  /** Human-readable reason (the error message; never a quote of the body from the toolkit). */
  readonly reason: string;
  /** The class name of the underlying error, when there is one. */
  readonly errorName?: string;
  /** The underlying error, kept for custom loggers. Never serialised by the toolkit. */
  readonly error?: unknown;
}

/** What happened to one message. */
export type Outcome =
  /** The effect ran and its marker is stored. Acknowledged. */
  | { readonly kind: 'processed' }
  /** A live record with the same fingerprint exists: the effect already happened. Acknowledged. */
  | { readonly kind: 'duplicate' }
  /** A newer version is already stored (`putIfNewer`): nothing was written. Acknowledged. */
  | { readonly kind: 'stale' }
  /** Another delivery holds the key (`IN_PROGRESS`). Retried later. */
  | { readonly kind: 'in-flight' }
  /** A live record with a different fingerprint holds the key. Permanent: dead-lettered. */
  | ({ readonly kind: 'mismatch' } & FailureDetails)
  /** A transient failure. Reported as a batch item failure. */
  | ({ readonly kind: 'retry' } & FailureDetails)
  /** A failure that no retry can fix. Dead-lettered with the reason. */
  | ({ readonly kind: 'permanent' } & FailureDetails);

/** The kind of an outcome. */
export type OutcomeKind = Outcome['kind'];

/**
 * What an existing record means for a message with `fingerprint`, read at `nowMillis`:
 * expired → retry (`EXPIRED_RECORD`: it counts as absent, but only the database may decide
 * that the key is free), other fingerprint → mismatch, `IN_PROGRESS` → in-flight, else
 * duplicate. An entity item written by something else has the fingerprint `''`: a mismatch.
 */
export function outcomeOfExisting(record: InboxRecord, fingerprint: string, nowMillis: number): Outcome {
  if (record.expiresAt <= Math.floor(nowMillis / 1000)) {
    return {
      kind: 'retry',
      code: 'EXPIRED_RECORD',
      reason: 'The store returned an expired inbox record; retrying treats it as absent',
    };
  }
  if (record.fingerprint !== fingerprint) {
    return {
      kind: 'mismatch',
      code: 'PAYLOAD_MISMATCH',
      reason: `The dedup key was already used with a different payload (stored fingerprint ${record.fingerprint}, this message ${fingerprint})`,
    };
  }
  if (record.status === INBOX_STATUS.inProgress) return { kind: 'in-flight' };
  return { kind: 'duplicate' };
}

/**
 * The failure outcome of a thrown value. Toolkit errors keep their code and disposition
 * (a configuration error met at run time is retried: the message must not be lost); anything
 * else is retried under `fallback`.
 */
export function outcomeOfError(error: unknown, fallback: ErrorCode): Outcome {
  const described = typeof error === 'object' && error !== null ? (error as Partial<Error>) : {};
  const errorName = typeof described.name === 'string' ? described.name : typeof error;
  const reason = typeof described.message === 'string' ? described.message : String(error);
  if (!isEffectivelyOnceError(error)) {
    // A SyntaxError (`JSON.parse` of a payload nested in the body) quotes the text it failed on,
    // and bodies never reach the logs: only its class is kept, as the body parser does.
    const shown = errorName === 'SyntaxError' ? SYNTAX_ERROR_REASON : reason;
    return { kind: 'retry', code: fallback, reason: shown, errorName, error };
  }
  const kind = dispositionOf(error) === 'permanent' ? 'permanent' : 'retry';
  return { kind, code: error.code, reason, errorName, error };
}

/** The reason logged for a `SyntaxError`, whose own message may quote the body. */
export const SYNTAX_ERROR_REASON =
  'A SyntaxError was thrown; its message may quote the input, so it is not logged';
