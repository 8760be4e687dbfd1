/**
 * The EventBridge conformance layer: one test per documented limit, each with the boundary
 * EventBridge accepts and the value just past it that it refuses (a thrown error by the exact name
 * the SDK would carry, or the failed entry EventBridge would answer), then the client wrapper that
 * applies the checks before sending.
 */
import {
  EventBridgeServiceException,
  ListRulesCommand,
  PutEventsCommand,
  type PutEventsRequestEntry,
} from '@aws-sdk/client-eventbridge';
import { describe, expect, it, vi } from 'vitest';
import {
  checkEventBridgePutEvents,
  createConformingEventBridgeClient,
  EVENTBRIDGE_MAX_REQUEST_ENTRY_BYTES,
  eventBridgeEntryBytes,
} from '../../support/aws-limits/eventbridge';

/** An entry EventBridge accepts, with `fields` changed. */
const entry = (fields: Partial<PutEventsRequestEntry> = {}): PutEventsRequestEntry => ({
  Source: 'orders',
  DetailType: 'OrderPlaced',
  Detail: '{"id":1}',
  ...fields,
});
const entries = (count: number): PutEventsRequestEntry[] => Array.from({ length: count }, () => entry());

/** The error name EventBridge would throw for `Entries`, or `undefined` when it takes the request. */
function requestRefusal(Entries: PutEventsRequestEntry[]): string | undefined {
  const check = checkEventBridgePutEvents({ Entries });
  return check.kind === 'refused' ? check.error.name : undefined;
}

/** The ErrorCode EventBridge would answer one entry with, or `undefined` when it accepts it. */
function entryFailure(fields: Partial<PutEventsRequestEntry>): string | undefined {
  const check = checkEventBridgePutEvents({ Entries: [entry(fields)] });
  if (check.kind === 'refused') throw new Error(`refused whole: ${check.error.message}`);
  return check.results[0]?.ErrorCode;
}

describe('eventBridgeEntryBytes', () => {
  it('counts Time as 14 bytes and Source, DetailType, Detail and each resource as UTF-8 bytes', () => {
    expect(eventBridgeEntryBytes({ Source: 'é', DetailType: 'ab', Detail: '{}' })).toBe(2 + 2 + 2);
    expect(
      eventBridgeEntryBytes({
        Source: 's',
        DetailType: 't',
        Detail: '{}',
        Time: new Date(0),
        Resources: ['arn:a', '€'],
        EventBusName: 'not-counted',
      }),
    ).toBe(1 + 1 + 2 + 14 + 5 + 3);
  });
});

describe('checkEventBridgePutEvents', () => {
  it('refuses a request without entries with ValidationException', () => {
    expect(requestRefusal(entries(1))).toBeUndefined();
    expect(requestRefusal([])).toBe('ValidationException');
  });

  it('refuses more than ten entries with ValidationException', () => {
    expect(requestRefusal(entries(10))).toBeUndefined();
    expect(requestRefusal(entries(11))).toBe('ValidationException');
  });

  it('refuses a request whose entries add up to 1 MiB or more with ValidationException', () => {
    const small = entry({ Time: new Date(0) }); // 6 + 11 + 8 + 14 = 39 bytes
    const fill = (total: number) => {
      const padding =
        total - eventBridgeEntryBytes(small) - eventBridgeEntryBytes(entry({ Detail: '{"p":""}' }));
      return entry({ Detail: `{"p":"${'x'.repeat(padding)}"}` });
    };
    expect(requestRefusal([small, fill(EVENTBRIDGE_MAX_REQUEST_ENTRY_BYTES - 1)])).toBeUndefined();
    const over = checkEventBridgePutEvents({ Entries: [small, fill(EVENTBRIDGE_MAX_REQUEST_ENTRY_BYTES)] });
    expect(over.kind === 'refused' && over.error).toBeInstanceOf(EventBridgeServiceException);
    expect(over.kind === 'refused' && over.error).toMatchObject({
      name: 'ValidationException',
      $fault: 'client',
      $metadata: { httpStatusCode: 400 },
      message: expect.stringContaining('Total size of the entries in the request is over the limit.'),
    });
  });

  it('fails an entry without Source, DetailType or Detail with InvalidArgument', () => {
    expect(entryFailure({})).toBeUndefined();
    for (const field of ['Source', 'DetailType', 'Detail'] as const) {
      expect({ field, error: entryFailure({ [field]: undefined }) }).toEqual({
        field,
        error: 'InvalidArgument',
      });
      expect({ field, error: entryFailure({ [field]: '' }) }).toEqual({ field, error: 'InvalidArgument' });
    }
  });

  it('fails an entry whose DetailType is over 128 characters with InvalidArgument', () => {
    expect(entryFailure({ DetailType: 'é'.repeat(128) })).toBeUndefined();
    expect(entryFailure({ DetailType: 'x'.repeat(129) })).toBe('InvalidArgument');
  });

  it('fails an entry whose Detail is not a JSON object with MalformedDetail', () => {
    expect(entryFailure({ Detail: '{}' })).toBeUndefined();
    expect(entryFailure({ Detail: '{"a":{"b":[1,null]}}' })).toBeUndefined();
    for (const detail of ['{', 'not json', '[]', '"text"', '42', 'null']) {
      expect({ detail, error: entryFailure({ Detail: detail }) }).toEqual({
        detail,
        error: 'MalformedDetail',
      });
    }
  });
});

describe('createConformingEventBridgeClient', () => {
  /** A stand-in for an EventBridgeClient: records what it is sent, answers `answer`. */
  function innerClient(answer: unknown = { FailedEntryCount: 0, Entries: [{ EventId: 'e-1' }] }) {
    return { region: 'eu-west-1', send: vi.fn(async (_command: unknown) => answer) };
  }

  it('passes other commands, accepted requests and client properties through unchanged', async () => {
    const inner = innerClient();
    const events = createConformingEventBridgeClient(inner);
    const list = new ListRulesCommand({});
    const put = new PutEventsCommand({ Entries: entries(10) });

    await expect(events.send(list)).resolves.toEqual({ FailedEntryCount: 0, Entries: [{ EventId: 'e-1' }] });
    await events.send(put);

    expect(inner.send).toHaveBeenCalledTimes(2);
    expect(inner.send.mock.calls[0]![0]).toBe(list);
    expect(inner.send.mock.calls[1]![0]).toBe(put);
    expect(events.region).toBe('eu-west-1');
  });

  it('throws a request refused whole without calling the inner client', async () => {
    const inner = innerClient();
    const events = createConformingEventBridgeClient(inner);
    await expect(events.send(new PutEventsCommand({ Entries: entries(11) }))).rejects.toMatchObject({
      name: 'ValidationException',
      $fault: 'client',
      $metadata: { httpStatusCode: 400 },
    });
    expect(inner.send).not.toHaveBeenCalled();
  });

  it('sends only the accepted entries and answers every entry at its own index, counting the failed ones', async () => {
    const inner = innerClient({
      FailedEntryCount: 0,
      Entries: [{ EventId: 'e-1' }, { EventId: 'e-2' }],
      $metadata: { httpStatusCode: 200 },
    });
    const events = createConformingEventBridgeClient(inner);
    const output = await events.send(
      new PutEventsCommand({
        Entries: [
          entry({ Detail: '[]' }),
          entry({ Detail: '{"n":1}' }),
          entry({ DetailType: 'x'.repeat(129) }),
          entry({ Detail: '{"n":2}' }),
        ],
      }),
    );
    expect(inner.send).toHaveBeenCalledTimes(1);
    const sent = inner.send.mock.calls[0]![0] as PutEventsCommand;
    expect(sent).toBeInstanceOf(PutEventsCommand);
    expect(sent.input).toEqual({ Entries: [entry({ Detail: '{"n":1}' }), entry({ Detail: '{"n":2}' })] });
    expect(output).toEqual({
      FailedEntryCount: 2,
      Entries: [
        { ErrorCode: 'MalformedDetail', ErrorMessage: 'Detail is malformed.' },
        { EventId: 'e-1' },
        { ErrorCode: 'InvalidArgument', ErrorMessage: expect.stringContaining('DetailType') },
        { EventId: 'e-2' },
      ],
      $metadata: { httpStatusCode: 200 },
    });
  });

  it('answers a request whose entries all fail without calling the inner client', async () => {
    const inner = innerClient();
    const events = createConformingEventBridgeClient(inner);
    const output = await events.send(new PutEventsCommand({ Entries: [entry({ Detail: 'nope' })] }));
    expect(inner.send).not.toHaveBeenCalled();
    expect(output).toEqual({
      FailedEntryCount: 1,
      Entries: [{ ErrorCode: 'MalformedDetail', ErrorMessage: 'Detail is malformed.' }],
      $metadata: { httpStatusCode: 200 },
    });
  });
});
