/**
 * Failures of the replay tool. Each carries a literal `code` and is recognised by it
 * (`isReplayError`), never by `instanceof`. The CLI turns every one of them into exit
 * code 2 with its message and no stack trace.
 */

/** What went wrong, coarsely: enough for the CLI to pick a message and for tests to assert on. */
export type ReplayErrorCode =
  /** Bad command-line arguments or helper options. */
  | 'USAGE'
  /** A line of the message log is not a valid message. */
  | 'INVALID_LOG'
  /** The endpoint could not be reached (refused, unknown host, TLS, timeout). */
  | 'CONNECTION'
  /** No region or no credentials could be resolved. */
  | 'CONFIGURATION'
  /** The queue or a table does not exist. */
  | 'NOT_FOUND'
  /** SQS refused some messages of a batch. */
  | 'SEND_FAILED'
  /** The queue held messages before the first replay. */
  | 'QUEUE_BUSY'
  /** The queue still held messages when the drain timeout ran out. */
  | 'DRAIN_TIMEOUT'
  /** Any other error returned by AWS. */
  | 'AWS';

/** An error of the replay tool, with a message written for the person running it. */
export class ReplayError extends Error {
  /** The class name, `ReplayError`. */
  override readonly name = 'ReplayError';
  /** What failed; recognise the error by it (`isReplayError`). */
  readonly code: ReplayErrorCode;

  /**
   * @param code - what failed
   * @param message - a description for people
   * @param options - `cause`: the underlying error
   */
  constructor(code: ReplayErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

const CODES: ReadonlySet<string> = new Set<ReplayErrorCode>([
  'USAGE',
  'INVALID_LOG',
  'CONNECTION',
  'CONFIGURATION',
  'NOT_FOUND',
  'SEND_FAILED',
  'QUEUE_BUSY',
  'DRAIN_TIMEOUT',
  'AWS',
]);

/** True for an error raised by the replay tool, recognised by its `name` and `code`. */
export function isReplayError(error: unknown): error is ReplayError {
  if (typeof error !== 'object' || error === null) return false;
  const { name, code } = error as { name?: unknown; code?: unknown };
  return name === 'ReplayError' && typeof code === 'string' && CODES.has(code);
}
