/**
 * A conformance layer for tests that put events on Amazon EventBridge: it refuses what
 * EventBridge documents it refuses, so a test against the local emulator fails where AWS would.
 *
 * Each limit is quoted beside its check from the AWS documentation, as the EventBridge API
 * Reference and the SDK model of `@aws-sdk/client-eventbridge` 3.11xx state it. EventBridge
 * refuses some requests whole (HTTP 400, which the SDK throws) and fails others entry by entry
 * (HTTP 200 with `FailedEntryCount` and an `ErrorCode` on the entry); each check says which, and
 * why. `ValidationException` is not a modelled error of the SDK, so it is thrown as an
 * `EventBridgeServiceException` with that `name`.
 *
 * @example
 * const events = createConformingEventBridgeClient(new EventBridgeClient(awsConfig()));
 * const output = await events.send(new PutEventsCommand({
 *   Entries: [{ Source: 'orders', DetailType: 'x'.repeat(129), Detail: '{}' }],
 * }));
 * // output.FailedEntryCount === 1, Entries[0].ErrorCode === 'InvalidArgument', nothing sent
 */
import {
  EventBridgeServiceException,
  PutEventsCommand,
  type PutEventsCommandInput,
  type PutEventsCommandOutput,
  type PutEventsRequestEntry,
  type PutEventsResultEntry,
} from '@aws-sdk/client-eventbridge';
import { interceptSend, type Send } from './intercept';

/**
 * "Entries ... Array Members: Minimum number of 1 item. Maximum number of 10 items."
 * https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEvents.html
 */
export const EVENTBRIDGE_MAX_ENTRIES = 10;

/**
 * "You can batch multiple event entries into one request for efficiency. However, the total
 * entry size must be less than 1MB." (SDK model of PutEvents, client-eventbridge 3.1169; earlier
 * revisions of the page said 256KB.)
 * https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEvents.html
 * Read as 1 MiB, and "less than" as written: a request whose entries add up to 1,048,575 bytes is
 * accepted, 1,048,576 refused.
 */
export const EVENTBRIDGE_MAX_REQUEST_ENTRY_BYTES = 1_048_576;

/**
 * "DetailType: Free-form string, with a maximum of 128 characters"
 * https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEventsRequestEntry.html
 */
export const EVENTBRIDGE_MAX_DETAIL_TYPE_CHARACTERS = 128;

/** The per-entry error codes these checks answer with, as EventBridge sets them on `ErrorCode`. */
export type EventBridgeEntryErrorCode = 'InvalidArgument' | 'MalformedDetail';

/** What a PutEvents check found: a refusal of the whole request, or the entries EventBridge would fail. */
export type EventBridgePutEventsCheck =
  /** EventBridge refuses the whole request (HTTP 400), as `PutEvents` throws. */
  | { readonly kind: 'refused'; readonly error: EventBridgeServiceException }
  /**
   * EventBridge answers 200: `results` has, for every entry in request order, `undefined` when it
   * would accept the entry, else the failed result entry it would answer.
   */
  | { readonly kind: 'checked'; readonly results: readonly (PutEventsResultEntry | undefined)[] };

const validation = (message: string): EventBridgeServiceException =>
  new EventBridgeServiceException({
    name: 'ValidationException',
    $fault: 'client',
    message,
    $metadata: { httpStatusCode: 400 },
  });

const failure = (ErrorCode: EventBridgeEntryErrorCode, ErrorMessage: string): PutEventsResultEntry => ({
  ErrorCode,
  ErrorMessage,
});

const utf8Bytes = (text: string | undefined): number => Buffer.byteLength(text ?? '', 'utf8');

/**
 * The size EventBridge measures an entry at:
 *
 * "If specified, the Time parameter is 14 bytes. The Source and DetailType parameters are the
 * number of bytes for their UTF-8 encoded forms. If specified, the Detail parameter is the number
 * of bytes for its UTF-8 encoded form. If specified, each entry of the Resources parameter is the
 * number of bytes for its UTF-8 encoded forms."
 * https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-putevents.html#eb-putevent-size
 */
export function eventBridgeEntryBytes(entry: PutEventsRequestEntry): number {
  const time = entry.Time === undefined ? 0 : 14;
  const resources = (entry.Resources ?? []).reduce((total, resource) => total + utf8Bytes(resource), 0);
  return time + utf8Bytes(entry.Source) + utf8Bytes(entry.DetailType) + utf8Bytes(entry.Detail) + resources;
}

// "Detail, DetailType, and Source are required for EventBridge to successfully send an event to
// an event bus. If you include event entries in a request that do not include each of those
// properties, EventBridge fails that entry."
// https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEventsRequestEntry.html
// The page names no code for this; InvalidArgument is the documented code for "A specified
// parameter is not valid" (API_PutEventsResultEntry.html). The next sentence, "If you submit a
// request in which none of the entries have each of these properties, EventBridge fails the
// entire request", names no error either, so that case is left out: such a request comes back
// with every entry failed.
function entryFailure(entry: PutEventsRequestEntry): PutEventsResultEntry | undefined {
  const missing = (['Source', 'DetailType', 'Detail'] as const).filter((field) => !entry[field]);
  if (missing.length > 0) {
    return failure('InvalidArgument', `Parameter(s) ${missing.join(', ')} must be specified.`);
  }
  // DetailType: "Free-form string, with a maximum of 128 characters" (API_PutEventsRequestEntry.html);
  // answered per entry with InvalidArgument, as for any parameter that is not valid.
  const detailTypeLength = [...entry.DetailType!].length;
  if (detailTypeLength > EVENTBRIDGE_MAX_DETAIL_TYPE_CHARACTERS) {
    return failure(
      'InvalidArgument',
      `Parameter DetailType is not valid: it is ${detailTypeLength} characters long; at most ` +
        `${EVENTBRIDGE_MAX_DETAIL_TYPE_CHARACTERS} are allowed.`,
    );
  }
  // Detail: "A valid JSON object. There is no other schema imposed." (API_PutEventsRequestEntry.html)
  // MalformedDetail: "The JSON provided is not valid." (API_PutEventsResultEntry.html)
  if (!isJsonObject(entry.Detail!)) return failure('MalformedDetail', 'Detail is malformed.');
  return undefined;
}

function isJsonObject(text: string): boolean {
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed);
  } catch {
    return false;
  }
}

/**
 * Checks a `PutEvents` request against EventBridge's documented limits: the number of entries
 * and their total size, which refuse the request whole with `ValidationException`, then each
 * entry's own limits, which EventBridge reports on that entry of the response.
 */
export function checkEventBridgePutEvents(input: PutEventsCommandInput): EventBridgePutEventsCheck {
  const entries = input.Entries ?? [];
  // A list outside its documented length is a model constraint, which AWS answers with
  // ValidationException and its standard "1 validation error detected" message.
  if (entries.length < 1 || entries.length > EVENTBRIDGE_MAX_ENTRIES) {
    const bound =
      entries.length < 1 ? 'greater than or equal to 1' : `less than or equal to ${EVENTBRIDGE_MAX_ENTRIES}`;
    return {
      kind: 'refused',
      error: validation(
        `1 validation error detected: Value at 'entries' failed to satisfy constraint: Member must have length ${bound}`,
      ),
    };
  }
  // The message AWS answers an oversize request with, as recorded in
  // https://github.com/awslabs/aws-service-catalog-puppet/issues/563.
  const bytes = entries.reduce((total, entry) => total + eventBridgeEntryBytes(entry), 0);
  if (bytes >= EVENTBRIDGE_MAX_REQUEST_ENTRY_BYTES) {
    return {
      kind: 'refused',
      error: validation(
        `Total size of the entries in the request is over the limit. (${bytes} bytes; it must be less than ` +
          `${EVENTBRIDGE_MAX_REQUEST_ENTRY_BYTES}.)`,
      ),
    };
  }
  return { kind: 'checked', results: entries.map(entryFailure) };
}

/**
 * Wraps an EventBridge client (an `EventBridgeClient`, or anything with `send`) so that a
 * `PutEventsCommand` is checked against EventBridge's documented limits before it is sent: a
 * request refused whole throws the SDK's exception without reaching the inner client, and the
 * failed entries come back in `Entries` at their own positions, counted in `FailedEntryCount`,
 * while the others are sent. Every other command, and every property of the client, passes
 * through unchanged.
 *
 * Commands are recognised with `instanceof`, so they must come from the same
 * `@aws-sdk/client-eventbridge` as this module (as they do in this repository's tests).
 */
export function createConformingEventBridgeClient<Client extends { send(...args: never[]): unknown }>(
  client: Client,
): Client {
  return interceptSend(client, (forward) => async (command, ...rest) => {
    if (command instanceof PutEventsCommand) {
      const check = checkEventBridgePutEvents(command.input);
      if (check.kind === 'refused') throw check.error;
      if (check.results.some((result) => result !== undefined)) {
        return sendAcceptedEntries(forward, command, check.results, rest);
      }
    }
    return forward(command, ...rest);
  });
}

/**
 * Sends the accepted entries (if any) and answers as EventBridge would: one result per entry of
 * the request, in its order ("the index of the response element is the same as the index in the
 * request array", API_PutEvents.html), with the failed ones counted.
 */
async function sendAcceptedEntries(
  forward: Send,
  command: PutEventsCommand,
  failures: readonly (PutEventsResultEntry | undefined)[],
  rest: unknown[],
): Promise<PutEventsCommandOutput> {
  const entries = command.input.Entries ?? [];
  const accepted = entries.filter((_, index) => failures[index] === undefined);
  const output =
    accepted.length === 0
      ? { FailedEntryCount: 0, Entries: [], $metadata: { httpStatusCode: 200 } }
      : ((await forward(
          new PutEventsCommand({ ...command.input, Entries: accepted }),
          ...rest,
        )) as PutEventsCommandOutput);
  const sent = [...(output.Entries ?? [])];
  const results = failures.map((result) => result ?? sent.shift() ?? {});
  const failed = failures.filter((result) => result !== undefined).length;
  return { ...output, FailedEntryCount: (output.FailedEntryCount ?? 0) + failed, Entries: results };
}
