/**
 * The message log: JSON Lines, one message per line, as the producer sent it.
 *
 * ```jsonl
 * {"body": {"orderId": "o-1", "status": "PAID"}, "attributes": {"dedupKey": "o-1#PAID"}}
 * {"body": "plain text", "groupId": "customer-7", "deduplicationId": "o-2#PAID"}
 * ```
 *
 * Pure: no I/O. Every problem names its line, and all problems (up to a cap) are
 * reported at once so a user can fix a log in one go.
 */

import { ReplayError } from './errors';

/** One message as written in a log line, or passed to `doubleTap` directly. */
export interface LogMessage {
  /** The message body. An object is sent as its JSON text. */
  readonly body: string | Readonly<Record<string, unknown>>;
  /** Message attributes: a string becomes a `String` attribute, a number a `Number` attribute. */
  readonly attributes?: Readonly<Record<string, string | number>>;
  /** FIFO queues: the `MessageGroupId` (required there). */
  readonly groupId?: string;
  /** FIFO queues: the `MessageDeduplicationId` (optional when the queue uses content-based deduplication). */
  readonly deduplicationId?: string;
}

/** A validated message, ready to send. */
export interface LogEntry {
  /** 1-based line number in the log (or position in the array given to `toLogEntries`). */
  readonly line: number;
  /** The body text exactly as it will be sent. */
  readonly body: string;
  /** Message attributes to send (strings as `String`, numbers as `Number`). */
  readonly attributes: Readonly<Record<string, string | number>>;
  /** The message group id (FIFO queues). */
  readonly groupId?: string;
  /** The deduplication id (FIFO queues). */
  readonly deduplicationId?: string;
}

/** SQS allows at most 10 message attributes per message. */
const MAX_ATTRIBUTES = 10;
/** SQS caps group and deduplication ids at 128 characters. */
const MAX_ID_LENGTH = 128;
/** How many problems one error message lists before summarising the rest. */
const MAX_REPORTED_PROBLEMS = 10;
const KNOWN_FIELDS: ReadonlySet<string> = new Set(['body', 'attributes', 'groupId', 'deduplicationId']);
// SQS attribute names: letters, digits, `_`, `-`, `.`; no leading, trailing or doubled period.
const ATTRIBUTE_NAME = /^(?!\.)(?!.*\.\.)[A-Za-z0-9_.-]{1,256}(?<!\.)$/;
const RESERVED_ATTRIBUTE_PREFIX = /^(aws|amazon)\./i;

/**
 * Parses a JSON Lines message log. Blank lines are skipped; line numbers count them.
 *
 * @throws {ReplayError} `INVALID_LOG` naming every bad line (up to 10), or when the log has no message.
 */
export function parseLog(text: string): LogEntry[] {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  const entries: LogEntry[] = [];
  const problems: string[] = [];
  lines.forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      // The parser's own message quotes the line, i.e. the user's message data: leave it out.
      problems.push(`line ${line}: not valid JSON`);
      return;
    }
    const result = validateMessage(value, line);
    if (typeof result === 'string') problems.push(`line ${line}: ${result}`);
    else entries.push(result);
  });
  return finish(entries, problems);
}

/**
 * Validates messages given as objects (the `doubleTap` form of a log). A message's
 * 1-based position in the array serves as its line number in entries and problems.
 *
 * @throws {ReplayError} `INVALID_LOG` naming every bad message (up to 10), or when there is none.
 */
export function toLogEntries(messages: readonly LogMessage[]): LogEntry[] {
  const entries: LogEntry[] = [];
  const problems: string[] = [];
  messages.forEach((message, index) => {
    const result = validateMessage(message, index + 1);
    if (typeof result === 'string') problems.push(`line ${index + 1}: ${result}`);
    else entries.push(result);
  });
  return finish(entries, problems);
}

function finish(entries: LogEntry[], problems: string[]): LogEntry[] {
  if (problems.length > 0) {
    const shown = problems.slice(0, MAX_REPORTED_PROBLEMS);
    const more = problems.length - shown.length;
    const lines = more > 0 ? [...shown, `... and ${more} more`] : shown;
    throw new ReplayError('INVALID_LOG', `The message log is invalid:\n  ${lines.join('\n  ')}`);
  }
  if (entries.length === 0) throw new ReplayError('INVALID_LOG', 'The message log has no messages.');
  return entries;
}

/** Returns the entry, or a description of the first problem found. */
function validateMessage(value: unknown, line: number): LogEntry | string {
  if (!isPlainObject(value)) return `Expected a JSON object, got ${describe(value)}`;
  const unknown = Object.keys(value).filter((field) => !KNOWN_FIELDS.has(field));
  if (unknown.length > 0) {
    return `Unknown field ${unknown.map((field) => `\`${field}\``).join(', ')} (expected body, attributes, groupId, deduplicationId)`;
  }

  const { body, attributes, groupId, deduplicationId } = value;
  let text: string;
  if (body === undefined) return 'Missing `body`';
  if (typeof body === 'string') {
    if (body === '') return 'Expected `body` to be a non-empty string or an object, got an empty string';
    text = body;
  } else if (isPlainObject(body)) {
    text = JSON.stringify(body);
  } else {
    return `Expected \`body\` to be a non-empty string or an object, got ${describe(body)}`;
  }

  const checkedAttributes: Record<string, string | number> = {};
  if (attributes !== undefined) {
    if (!isPlainObject(attributes)) {
      return `Expected \`attributes\` to be an object, got ${describe(attributes)}`;
    }
    const names = Object.keys(attributes);
    if (names.length > MAX_ATTRIBUTES) {
      return `Expected at most ${MAX_ATTRIBUTES} attributes, got ${names.length}`;
    }
    for (const name of names) {
      if (!ATTRIBUTE_NAME.test(name) || RESERVED_ATTRIBUTE_PREFIX.test(name)) {
        return `Invalid attribute name \`${name}\` (letters, digits, _ - . only; no AWS. or Amazon. prefix)`;
      }
      const attribute = attributes[name];
      const isValid =
        (typeof attribute === 'string' && attribute !== '') ||
        (typeof attribute === 'number' && Number.isFinite(attribute));
      if (!isValid) {
        return `Expected attribute \`${name}\` to be a non-empty string or a finite number, got ${describe(attribute)}`;
      }
      checkedAttributes[name] = attribute as string | number;
    }
  }

  for (const [field, id] of [
    ['groupId', groupId],
    ['deduplicationId', deduplicationId],
  ] as const) {
    if (id === undefined) continue;
    if (typeof id !== 'string' || id === '' || id.length > MAX_ID_LENGTH) {
      return `Expected \`${field}\` to be a string of 1 to ${MAX_ID_LENGTH} characters, got ${describe(id)}`;
    }
  }

  return {
    line,
    body: text,
    attributes: checkedAttributes,
    ...(groupId === undefined ? {} : { groupId: groupId as string }),
    ...(deduplicationId === undefined ? {} : { deduplicationId: deduplicationId as string }),
  };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Names the kind of an offending value without showing it: log lines hold users'
 * message data, which error output must not echo.
 */
function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') {
    return value === '' ? 'an empty string' : `a string of ${value.length} characters`;
  }
  if (typeof value === 'number' && !Number.isFinite(value)) return `\`${value}\``;
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
