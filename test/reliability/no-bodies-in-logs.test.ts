/**
 * No bodies in logs: with default settings (no logger, no log level, default metrics), every
 * line `createSqsHandler` writes (standard output, standard error, the console) is captured
 * while messages whose bodies carry a unique sentinel go down every path: processed,
 * duplicate, mismatch, malformed, missing key, permanent, retry (handler failure, throttling,
 * a claim in flight), too large, too many writes. No line may contain the sentinel.
 *
 * The dedup key is logged by design (`scopedKey`, or its hash with `logKeys: 'hash'`), so the
 * sentinel sits in the other fields of the body, and the key is plain.
 */
import { randomBytes } from 'node:crypto';
import { NumberValue, PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it, vi } from 'vitest';
import { fromBody, scopeKey } from '../../lambda/core/dedup-key';
import { PermanentError } from '../../lambda/core/errors';
import type { LogEntry } from '../../lambda/core/logger';
import { atomic } from '../../lambda/modes/atomic';
import { entity } from '../../lambda/modes/entity';
import { twoPhase } from '../../lambda/modes/two-phase';
import type { UnitOfWork } from '../../lambda/modes/unit-of-work';
import type { SqsHandler, SqsRecord } from '../../lambda/sqs/sqs-event';
import { createSqsHandler } from '../../lambda/sqs/sqs-handler';
import { uniqueName } from '../support/aws';
import { sqsRecord } from '../support/fixtures';
import { attachFaultInjection } from './support/fault-injection';
import { createLocalClient, type LocalClient, useFileTables } from './support/tables';

const files = useFileTables('eo-logs');
const { inboxTable, businessTable, clients } = files;

/** A sentinel unique to one test: if any part of it shows up in a log line, a body leaked. */
function sentinel(): string {
  return `S3NT1NEL${randomBytes(6).toString('hex')}`;
}

let sequence = 0;
function record(raw: string): SqsRecord {
  sequence += 1;
  return sqsRecord(`msg-${sequence}`, undefined, { rawBody: raw });
}

/** Everything written to standard output, standard error and the console while `run` runs. */
async function captureOutput(run: () => Promise<unknown>): Promise<string> {
  const chunks: string[] = [];
  const grab = (chunk: unknown): boolean => {
    chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8'));
    return true;
  };
  const spies = [
    vi.spyOn(process.stdout, 'write').mockImplementation(grab as typeof process.stdout.write),
    vi.spyOn(process.stderr, 'write').mockImplementation(grab as typeof process.stderr.write),
    ...(['log', 'info', 'warn', 'error', 'debug', 'trace'] as const).map((method) =>
      vi.spyOn(console, method).mockImplementation((...args: unknown[]) => {
        chunks.push(`${args.map(String).join(' ')}\n`);
      }),
    ),
  ];
  try {
    await run();
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
  return chunks.join('');
}

/** The JSON lines of the output (log lines and the metrics line). */
function linesOf(output: string): Record<string, unknown>[] {
  return output
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        return { unparsed: line };
      }
    });
}

/** Asserts the output logged `outcome` (and the metrics line) and holds no part of the sentinel. */
function expectNoBody(output: string, mark: string, outcome: string | undefined): void {
  const lines = linesOf(output);
  expect(
    lines.some((line) => '_aws' in line),
    'the default metrics line was written',
  ).toBe(true);
  if (outcome !== undefined) expect(lines.map((line) => line.outcome)).toContain(outcome);
  // Any 8 characters of the sentinel's random part would be a leak.
  const random = mark.slice('S3NT1NEL'.length);
  for (let start = 0; start + 8 <= random.length; start += 1) {
    expect(output).not.toContain(random.slice(start, start + 8));
  }
  expect(output).not.toContain('S3NT1NEL');
}

type Body = { id: string; note: string; amount?: number; size?: number; writes?: number; payload?: string };

/** A handler at default settings: no logger, no log level, no metrics option, redrive. */
function defaultHandler(
  handle: (scopedKey: string, body: Body, unitOfWork: UnitOfWork) => void = (scopedKey, body, unitOfWork) =>
    unitOfWork.update({
      TableName: businessTable,
      Key: { pk: scopedKey },
      UpdateExpression: 'ADD effects :one SET note = :note',
      ExpressionAttributeValues: { ':one': 1, ':note': body.note },
    }),
  client?: LocalClient,
): { handler: SqsHandler; consumer: string } {
  const consumer = uniqueName('no-bodies');
  const used = client ?? createLocalClient({ maxAttempts: 3 });
  clients.push(used);
  const handler = createSqsHandler<Body>({
    consumer,
    client: used.document,
    tableName: inboxTable,
    dedupKey: fromBody<Body>((body) => body.id),
    mode: atomic((message, unitOfWork) => handle(message.scopedKey, message.body, unitOfWork)),
  });
  return { handler, consumer };
}

const bodyWith = (mark: string, fields: Partial<Body> = {}) =>
  JSON.stringify({ id: `key-${++sequence}`, note: `${mark} ships to 1 ${mark} Street`, ...fields });

describe('no bodies in logs at default settings', () => {
  it('writes no part of the body for a processed message and its duplicate', async () => {
    const mark = sentinel();
    const { handler } = defaultHandler();
    const body = bodyWith(mark);

    const output = await captureOutput(async () => {
      await handler({ Records: [record(body)] });
      await handler({ Records: [record(body)] });
    });

    expectNoBody(output, mark, 'duplicate');
  });

  it('writes no part of either body for a key reused with another payload', async () => {
    const mark = sentinel();
    const { handler } = defaultHandler();
    const first = bodyWith(mark);
    const reused = JSON.stringify({ ...JSON.parse(first), note: `${mark} changed` });

    const output = await captureOutput(async () => {
      await handler({ Records: [record(first)] });
      await handler({ Records: [record(reused)] });
    });

    expectNoBody(output, mark, 'mismatch');
  });

  it.each([
    { label: 'malformed JSON', raw: (mark: string) => `{"id":"k","note":"${mark}"` },
    { label: 'JSON that is not an object', raw: (mark: string) => JSON.stringify([mark, { note: mark }]) },
    { label: 'a body without a key', raw: (mark: string) => JSON.stringify({ note: mark }) },
    {
      label: 'a key of the wrong type',
      raw: (mark: string) => JSON.stringify({ id: { inner: mark }, note: mark }),
    },
  ])('writes no part of the body for $label', async ({ raw }) => {
    const mark = sentinel();
    const { handler } = defaultHandler();

    const output = await captureOutput(() => handler({ Records: [record(raw(mark))] }));

    expectNoBody(output, mark, 'permanent');
  });

  it('writes no part of the body when the handler fails permanently or transiently', async () => {
    const mark = sentinel();
    const { handler } = defaultHandler((_key, body) => {
      if (body.amount === 1) throw new PermanentError('the order is cancelled');
      throw new Error('the pricing service is unavailable');
    });

    const output = await captureOutput(async () => {
      await handler({
        Records: [record(bodyWith(mark, { amount: 1 })), record(bodyWith(mark, { amount: 2 }))],
      });
    });

    expectNoBody(output, mark, 'retry');
    expect(linesOf(output).map((line) => line.code)).toEqual(
      expect.arrayContaining(['PERMANENT', 'HANDLER_FAILED']),
    );
  });

  it('writes no part of the body when DynamoDB throttles the commit', async () => {
    const mark = sentinel();
    const client = createLocalClient({ maxAttempts: 1 });
    attachFaultInjection(client.document, {
      decide: () => ({ kind: 'throttle' }),
      isCrashed: () => false,
      crash: () => undefined,
    });
    const { handler } = defaultHandler(undefined, client);

    const output = await captureOutput(() => handler({ Records: [record(bodyWith(mark))] }));

    expectNoBody(output, mark, 'retry');
    expect(linesOf(output).find((line) => line.outcome === 'retry')).toMatchObject({ code: 'THROTTLED' });
  });

  it('writes no part of the body for a business item over 400 KB or a commit over 100 actions', async () => {
    const mark = sentinel();
    const { handler } = defaultHandler((scopedKey, body, unitOfWork) => {
      unitOfWork.put({
        TableName: businessTable,
        Item: { pk: scopedKey, note: body.note.repeat(body.size ?? 1) },
      });
      for (let i = 1; i < (body.writes ?? 1); i += 1) {
        unitOfWork.put({ TableName: businessTable, Item: { pk: `${scopedKey}#${i}`, note: body.note } });
      }
    });

    const output = await captureOutput(async () => {
      await handler({
        Records: [record(bodyWith(mark, { size: 20_000 })), record(bodyWith(mark, { writes: 101 }))],
      });
    });

    expectNoBody(output, mark, 'permanent');
    expect(linesOf(output).map((line) => line.code)).toEqual(
      expect.arrayContaining(['ITEM_TOO_LARGE', 'TOO_MANY_WRITES']),
    );
  });

  it('writes no part of the body for a two-phase claim in flight', async () => {
    const mark = sentinel();
    const consumer = uniqueName('no-bodies');
    const client = createLocalClient({ maxAttempts: 3 });
    clients.push(client);
    const handler = createSqsHandler<Body>({
      consumer,
      client: client.document,
      tableName: inboxTable,
      dedupKey: fromBody<Body>((body) => body.id),
      mode: twoPhase({
        handle: async (_message, effects) => {
          await effects.run(() => 'sent');
        },
      }),
    });
    const body = bodyWith(mark);
    const now = Date.now();
    await files.admin.document.send(
      new PutCommand({
        TableName: inboxTable,
        Item: {
          pk: scopeKey(consumer, (JSON.parse(body) as Body).id),
          status: 'IN_PROGRESS',
          fingerprint: 'f'.repeat(64),
          expiresAt: Math.floor(now / 1000) + 3600,
          consumer,
          owner: 'another-delivery',
          leaseExpiresAt: now + 600_000,
        },
      }),
    );

    const output = await captureOutput(() => handler({ Records: [record(body)] }));

    // Another payload holds the claim: the message is a mismatch, logged without either body.
    expectNoBody(output, mark, 'mismatch');
  });

  it('hashes the dedup key in every line with logKeys: hash', async () => {
    const mark = sentinel();
    const lines: LogEntry[] = [];
    const client = createLocalClient({ maxAttempts: 3 });
    clients.push(client);
    const handler = createSqsHandler<Body>({
      consumer: uniqueName('no-bodies'),
      client: client.document,
      tableName: inboxTable,
      dedupKey: fromBody<Body>((body) => body.note),
      mode: atomic(() => undefined),
      logKeys: 'hash',
      logLevel: 'debug',
      logger: { log: (entry) => lines.push(entry) },
      metrics: false,
    });
    const body = bodyWith(mark);

    await handler({ Records: [record(body), record(body)] });

    expect(lines.map((line) => line.outcome)).toEqual(['processed', 'duplicate']);
    expect(JSON.stringify(lines)).not.toContain(mark);
    expect(lines.every((line) => typeof line.scopedKeyHash === 'string' && !('scopedKey' in line))).toBe(
      true,
    );
  });

  // A SyntaxError from `JSON.parse` quotes the text it failed on: a handler that unwraps an
  // envelope (an SNS notification's `Message`, an EventBridge `detail` string) must not get
  // it into the logged reason.
  it('writes no part of the body when the handler fails to parse a JSON payload nested in the body', async () => {
    const mark = sentinel();
    const { handler } = defaultHandler((_key, body) => {
      JSON.parse(body.payload ?? '');
    });

    const output = await captureOutput(() =>
      handler({ Records: [record(bodyWith(mark, { payload: `${mark} is not JSON` }))] }),
    );

    expectNoBody(output, mark, 'retry');
  });

  // The marshaller's message quotes the value it rejects (a number from the body beyond
  // Number.MAX_SAFE_INTEGER, an order total in cents, an id): it must not reach the reason.
  it('writes no part of the body when a value from the body cannot be marshalled', async () => {
    const mark = sentinel();
    const digits = '98765432109876543210';
    const { handler } = defaultHandler((scopedKey, body, unitOfWork) =>
      unitOfWork.put({ TableName: businessTable, Item: { pk: scopedKey, amount: body.amount } }),
    );
    const raw = bodyWith(mark).replace(/}$/, `,"amount":${digits}}`);

    const output = await captureOutput(() => handler({ Records: [record(raw)] }));

    expectNoBody(output, mark, 'permanent');
    expect(output).not.toContain(digits.slice(0, 12));
  });

  // The unmarshaller's message quotes the number it cannot convert, read back from a stored item
  // (the entity a failed condition returns): the duplicate is recognised all the same.
  it('writes no part of the body when a stored entity holds a number JavaScript cannot hold', async () => {
    const mark = sentinel();
    const digits = '98765432109876543210.5';
    const used = createLocalClient({ maxAttempts: 3 });
    clients.push(used);
    const handler = createSqsHandler<Body & { total: string }>({
      consumer: uniqueName('no-bodies'),
      client: used.document,
      tableName: inboxTable,
      dedupKey: fromBody<Body>((body) => body.id),
      mode: entity((message) => ({
        tableName: businessTable,
        keyAttribute: 'pk',
        item: { pk: message.scopedKey, note: message.body.note, total: NumberValue.from(message.body.total) },
      })),
    });
    const raw = bodyWith(mark, { total: digits } as Partial<Body>);

    const output = await captureOutput(async () => {
      await handler({ Records: [record(raw)] });
      await handler({ Records: [record(raw)] });
    });

    expectNoBody(output, mark, 'duplicate');
    expect(output).not.toContain(digits.slice(0, 12));
  });
});
