/**
 * Bad input through `createSqsHandler` and the real store on the local emulator. Each case
 * sends one bad record in a batch of good ones and checks its documented outcome (the codes
 * of `lambda/core/errors.ts`), that nothing is lost (every record is acknowledged, reported
 * for retry, or sent to the dead-letter queue with its reason and original body), and that no
 * other record of the batch is delayed: the good records are committed in the same invocation.
 *
 * | input | outcome |
 * |---|---|
 * | malformed JSON | `MALFORMED_BODY`, permanent |
 * | JSON that is not an object (array, number, string, `null`, boolean) | `MISSING_KEY`, permanent: a body path finds no key in it |
 * | missing key, empty key | `MISSING_KEY`, permanent |
 * | a key that is an object or a boolean | `INVALID_KEY`, permanent |
 * | a key longer than 1,024 bytes once scoped | processed: stored under `<consumer>#sha256:<hex>` (DynamoDB allows 2,048 bytes), duplicates recognised |
 * | a business item over 400 KB (atomic or entity) | `ITEM_TOO_LARGE`, permanent, before any request: no marker |
 * | a commit over 100 actions (marker + 100 writes) | `TOO_MANY_WRITES`, permanent, before any request: no marker; 99 writes commit |
 * | a key reused with another payload | `PAYLOAD_MISMATCH` (outcome `mismatch`), dead-lettered; the first payload's effect stays |
 * | the same key twice in one batch | the first processed, the second a duplicate (acknowledged); with another payload, a mismatch |
 * | binary and unknown message attributes | ignored; a key taken from a binary attribute is its base64 text |
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromAttribute, fromBody, type KeySource, scopeKey } from '../../lambda/core/dedup-key';
import { sha256Hex } from '../../lambda/core/fingerprint';
import type { LogEntry } from '../../lambda/core/logger';
import type { DeadLetterMessage } from '../../lambda/dead-letter/dead-letter-message';
import { atomic } from '../../lambda/modes/atomic';
import { entity } from '../../lambda/modes/entity';
import type { UnitOfWork } from '../../lambda/modes/unit-of-work';
import type { SqsBatchResponse, SqsMessageAttribute, SqsRecord } from '../../lambda/sqs/sqs-event';
import { createSqsHandler } from '../../lambda/sqs/sqs-handler';
import { uniqueName } from '../support/aws';
import { sqsRecord } from '../support/fixtures';
import { createLocalClient, createTables, deleteTables, type LocalClient, readItems } from './support/tables';

const inboxTable = uniqueName('eo-bad-inbox');
const businessTable = uniqueName('eo-bad-business');
let admin: LocalClient;
let client: LocalClient;

beforeAll(async () => {
  admin = createLocalClient({ maxAttempts: 3 });
  client = createLocalClient({ maxAttempts: 3 });
  await createTables(admin.raw, inboxTable, businessTable);
});

afterAll(async () => {
  await deleteTables(admin.raw, inboxTable, businessTable);
  admin.raw.destroy();
  client.raw.destroy();
});

type Body = { id?: unknown; amount?: number; blob?: string; writes?: number };

let sequence = 0;

function record(
  body: unknown,
  options: { raw?: string; attributes?: Record<string, SqsMessageAttribute> } = {},
): SqsRecord {
  sequence += 1;
  return sqsRecord(`msg-${sequence}`, body, { rawBody: options.raw, messageAttributes: options.attributes });
}

/** The default effect: one counter per key, so a second effect would show as `effects: 2`. */
function countEffect(unitOfWork: UnitOfWork, scopedKey: string, body: Body): void {
  unitOfWork.update({
    TableName: businessTable,
    Key: { pk: scopedKey },
    UpdateExpression: 'ADD effects :one SET amount = :amount',
    ExpressionAttributeValues: { ':one': 1, ':amount': body.amount ?? 0 },
  });
}

interface Consumer {
  readonly name: string;
  readonly handle: (...records: SqsRecord[]) => Promise<SqsBatchResponse>;
  readonly deadLetters: DeadLetterMessage[];
  readonly logs: LogEntry[];
  /** Effects per dedup key (`undefined` when none). */
  effects(...keys: string[]): Promise<(number | undefined)[]>;
  inboxRecord(dedupKey: string): Promise<Record<string, unknown> | undefined>;
}

function createConsumer(
  options: {
    readonly dedupKey?: KeySource<Body>;
    readonly mode?: 'atomic' | 'entity';
    readonly handle?: (scopedKey: string, body: Body, unitOfWork: UnitOfWork) => void;
    readonly deadLetter?: 'direct' | 'redrive';
  } = {},
): Consumer {
  const name = uniqueName('bad-input');
  const deadLetters: DeadLetterMessage[] = [];
  const logs: LogEntry[] = [];
  const common = {
    consumer: name,
    client: client.document,
    tableName: inboxTable,
    dedupKey: options.dedupKey ?? fromBody('id'),
    logger: { log: (entry: LogEntry) => logs.push(entry) },
    logLevel: 'debug' as const,
    metrics: false as const,
    ...(options.deadLetter === 'redrive'
      ? { deadLetter: 'redrive' as const }
      : {
          deadLetter: 'direct' as const,
          deadLetterSender: { send: async (message: DeadLetterMessage) => void deadLetters.push(message) },
        }),
  };
  const handler =
    options.mode === 'entity'
      ? createSqsHandler<Body>({
          ...common,
          mode: entity((message) => ({
            tableName: businessTable,
            keyAttribute: 'pk',
            item: {
              pk: message.scopedKey,
              amount: message.body.amount ?? 0,
              blob: message.body.blob,
              effects: 1,
            },
          })),
        })
      : createSqsHandler<Body>({
          ...common,
          mode: atomic((message, unitOfWork) =>
            (options.handle ?? ((key, body, work) => countEffect(work, key, body)))(
              message.scopedKey,
              message.body,
              unitOfWork,
            ),
          ),
        });
  return {
    name,
    handle: (...records) => handler({ Records: records }),
    deadLetters,
    logs,
    async effects(...keys) {
      const pks = keys.map((key) => scopeKey(name, key));
      const items = await readItems(admin.document, businessTable, pks);
      return pks.map((pk) => {
        const effects = items.get(pk)?.effects;
        return effects === undefined ? undefined : Number(effects);
      });
    },
    async inboxRecord(dedupKey) {
      const pk = scopeKey(name, dedupKey);
      return (await readItems(admin.document, inboxTable, [pk])).get(pk);
    },
  };
}

/** Good records around a bad one: the bad one sits in the middle of the batch. */
function around(bad: SqsRecord, count = 4): { records: SqsRecord[]; goodKeys: string[] } {
  const goodKeys = Array.from(
    { length: count },
    () => `good-${sequence + 1}-${Math.random().toString(36).slice(2, 8)}`,
  );
  const good = goodKeys.map((id) => record({ id, amount: 1 }));
  const half = Math.floor(count / 2);
  return { records: [...good.slice(0, half), bad, ...good.slice(half)], goodKeys };
}

/** The batch was answered in full: no retries, the bad record dead-lettered with `code`, the good ones committed once. */
async function expectDeadLetteredAlone(consumer: Consumer, bad: SqsRecord, code: string): Promise<void> {
  const { records, goodKeys } = around(bad);

  const response = await consumer.handle(...records);

  expect(response).toEqual({ batchItemFailures: [] });
  expect(consumer.deadLetters).toHaveLength(1);
  expect(consumer.deadLetters[0]).toMatchObject({
    code,
    sourceMessageId: bad.messageId,
    body: bad.body,
    consumer: consumer.name,
  });
  expect(consumer.deadLetters[0]!.reason).not.toBe('');
  expect(await consumer.effects(...goodKeys)).toEqual(goodKeys.map(() => 1));
}

describe('bad input: each record gets its documented outcome, and the rest of its batch is not held back', () => {
  it('dead-letters malformed JSON as MALFORMED_BODY with the original body', async () => {
    const consumer = createConsumer();
    const bad = record(undefined, { raw: '{"id":"x","amount":' });

    await expectDeadLetteredAlone(consumer, bad, 'MALFORMED_BODY');
    expect(consumer.deadLetters[0]!.reason).toBe('The body is not valid JSON');
  });

  it.each([
    { label: 'an array', raw: '[{"id":"inside-an-array"}]' },
    { label: 'a number', raw: '42' },
    { label: 'a string', raw: '"just text"' },
    { label: 'null', raw: 'null' },
    { label: 'a boolean', raw: 'true' },
  ])('dead-letters JSON that is $label as MISSING_KEY: a body path finds no key in it', async ({ raw }) => {
    const consumer = createConsumer();

    await expectDeadLetteredAlone(consumer, record(undefined, { raw }), 'MISSING_KEY');
  });

  it('dead-letters a body without the key field as MISSING_KEY', async () => {
    await expectDeadLetteredAlone(createConsumer(), record({ amount: 3 }), 'MISSING_KEY');
  });

  it('dead-letters an empty key as MISSING_KEY', async () => {
    await expectDeadLetteredAlone(createConsumer(), record({ id: '', amount: 3 }), 'MISSING_KEY');
  });

  it.each([
    { label: 'an object', id: { nested: 'x' } },
    { label: 'a boolean', id: true },
  ])('dead-letters a key that is $label as INVALID_KEY', async ({ id }) => {
    await expectDeadLetteredAlone(createConsumer(), record({ id, amount: 3 }), 'INVALID_KEY');
  });

  it.each([
    { label: '3,000 ASCII characters', key: 'k'.repeat(3000) },
    { label: '1,100 two-byte characters (2,200 bytes)', key: 'é'.repeat(1100) },
    { label: '600 four-byte characters (2,400 bytes)', key: '😀'.repeat(600) },
  ])('processes a key of $label under its SHA-256 and recognises its duplicate', async ({ key }) => {
    const consumer = createConsumer();
    const { records, goodKeys } = around(record({ id: key, amount: 5 }));

    const first = await consumer.handle(...records);
    const again = await consumer.handle(record({ id: key, amount: 5 }));

    expect([first, again]).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }]);
    expect(consumer.deadLetters).toEqual([]);
    const hashed = `${consumer.name}#sha256:${sha256Hex(key)}`;
    expect(scopeKey(consumer.name, key)).toBe(hashed);
    const stored = await readItems(admin.document, inboxTable, [hashed]);
    expect(stored.get(hashed)).toMatchObject({ pk: hashed, status: 'COMPLETED' });
    expect(await consumer.effects(key, ...goodKeys)).toEqual([1, ...goodKeys.map(() => 1)]);
    expect(consumer.logs.filter((entry) => entry.outcome === 'duplicate')).toHaveLength(1);
  });

  it('dead-letters a business item over 400 KB as ITEM_TOO_LARGE before any request, leaving no marker', async () => {
    const consumer = createConsumer({
      handle: (scopedKey, body, unitOfWork) => {
        unitOfWork.put({ TableName: businessTable, Item: { pk: `${scopedKey}#big`, blob: body.blob } });
        countEffect(unitOfWork, scopedKey, body);
      },
    });
    const bad = record({ id: 'too-big', amount: 1, blob: 'x'.repeat(401 * 1024) });

    await expectDeadLetteredAlone(consumer, bad, 'ITEM_TOO_LARGE');
    expect(await consumer.inboxRecord('too-big')).toBeUndefined();
    expect(await consumer.effects('too-big')).toEqual([undefined]);
  });

  it('dead-letters an entity over 400 KB as ITEM_TOO_LARGE, leaving no entity', async () => {
    const consumer = createConsumer({ mode: 'entity' });
    const bad = record({ id: 'too-big-entity', amount: 1, blob: 'x'.repeat(401 * 1024) });

    await expectDeadLetteredAlone(consumer, bad, 'ITEM_TOO_LARGE');
    expect(await consumer.effects('too-big-entity')).toEqual([undefined]);
  });

  it('dead-letters a commit of more than 100 actions as TOO_MANY_WRITES, writing nothing, and commits 99 writes next to the marker', async () => {
    const consumer = createConsumer({
      handle: (scopedKey, body, unitOfWork) => {
        countEffect(unitOfWork, scopedKey, body);
        for (let i = 1; i < (body.writes ?? 1); i += 1) {
          unitOfWork.put({ TableName: businessTable, Item: { pk: `${scopedKey}#line-${i}` } });
        }
      },
    });
    const bad = record({ id: 'too-many', amount: 1, writes: 100 });

    await expectDeadLetteredAlone(consumer, bad, 'TOO_MANY_WRITES');
    expect(await consumer.inboxRecord('too-many')).toBeUndefined();
    expect(await consumer.effects('too-many')).toEqual([undefined]);
    const lines = await readItems(admin.document, businessTable, [
      `${scopeKey(consumer.name, 'too-many')}#line-1`,
    ]);
    expect(lines.size).toBe(0);

    expect(await consumer.handle(record({ id: 'ninety-nine', amount: 1, writes: 99 }))).toEqual({
      batchItemFailures: [],
    });
    expect(await consumer.effects('ninety-nine')).toEqual([1]);
    const last = `${scopeKey(consumer.name, 'ninety-nine')}#line-98`;
    expect((await readItems(admin.document, businessTable, [last])).has(last)).toBe(true);
  });

  it('dead-letters a key reused with another payload as PAYLOAD_MISMATCH and keeps the first payload’s effect', async () => {
    const consumer = createConsumer();
    await consumer.handle(record({ id: 'reused', amount: 10 }));
    const bad = record({ id: 'reused', amount: 11 });

    await expectDeadLetteredAlone(consumer, bad, 'PAYLOAD_MISMATCH');
    expect(consumer.logs.filter((entry) => entry.outcome === 'mismatch')).toHaveLength(1);
    const [item] = (
      await readItems(admin.document, businessTable, [scopeKey(consumer.name, 'reused')])
    ).values();
    expect(item).toMatchObject({ effects: 1, amount: 10 });
  });

  it('processes the first of two records with one key in a batch and acknowledges the second as a duplicate', async () => {
    const consumer = createConsumer();
    const first = record({ id: 'twice', amount: 1 });
    const second = record({ amount: 1, id: 'twice' });
    const { records, goodKeys } = around(second);

    const response = await consumer.handle(first, ...records);

    expect(response).toEqual({ batchItemFailures: [] });
    expect(consumer.deadLetters).toEqual([]);
    const outcomes = Object.fromEntries(consumer.logs.map((entry) => [entry.messageId, entry.outcome]));
    expect([outcomes[first.messageId], outcomes[second.messageId]]).toEqual(['processed', 'duplicate']);
    expect(await consumer.effects('twice', ...goodKeys)).toEqual([1, ...goodKeys.map(() => 1)]);
  });

  it('dead-letters the second of two records with one key and different payloads in a batch as PAYLOAD_MISMATCH', async () => {
    const consumer = createConsumer();
    const first = record({ id: 'twice-other', amount: 1 });
    const { records, goodKeys } = around(record({ id: 'twice-other', amount: 2 }));

    const response = await consumer.handle(first, ...records);

    expect(response).toEqual({ batchItemFailures: [] });
    expect(consumer.deadLetters.map((letter) => letter.code)).toEqual(['PAYLOAD_MISMATCH']);
    expect(consumer.deadLetters[0]!.sourceMessageId).toBe(records[2]!.messageId);
    expect(await consumer.effects('twice-other', ...goodKeys)).toEqual([1, ...goodKeys.map(() => 1)]);
  });

  it('ignores binary and unknown message attributes and processes the record', async () => {
    const consumer = createConsumer();
    const attributes: Record<string, SqsMessageAttribute> = {
      blob: { dataType: 'Binary', binaryValue: Buffer.from([0, 255, 1, 254]).toString('base64') },
      'correlation-id': { dataType: 'Binary.gzip', binaryValue: Buffer.from('cid').toString('base64') },
      custom: { dataType: 'Number.float', stringValue: '3.14' },
      unknown: { dataType: 'Custom.Whatever', stringListValues: ['a', 'b'], binaryListValues: [] },
    };
    const { records, goodKeys } = around(record({ id: 'with-attributes', amount: 1 }, { attributes }));

    expect(await consumer.handle(...records)).toEqual({ batchItemFailures: [] });
    expect(consumer.deadLetters).toEqual([]);
    expect(await consumer.effects('with-attributes', ...goodKeys)).toEqual([1, ...goodKeys.map(() => 1)]);
  });

  it('keys a message by a binary attribute’s base64 text and recognises its duplicate', async () => {
    const consumer = createConsumer({ dedupKey: fromAttribute('idempotency-key') as KeySource<Body> });
    const bytes = Buffer.from([0xde, 0xad, 0xbe, 0xef, 0x00, 0x2f]).toString('base64');
    const keyed = () =>
      record(
        { amount: 1 },
        { attributes: { 'idempotency-key': { dataType: 'Binary', binaryValue: bytes } } },
      );

    expect(await consumer.handle(keyed(), keyed())).toEqual({ batchItemFailures: [] });
    expect(consumer.logs.map((entry) => entry.outcome)).toEqual(['processed', 'duplicate']);
    expect(await consumer.inboxRecord(bytes)).toMatchObject({
      pk: `${consumer.name}#${bytes}`,
      status: 'COMPLETED',
    });
  });

  it('reports only the bad record for redrive in redrive mode, and commits the others in the same invocation', async () => {
    const consumer = createConsumer({ deadLetter: 'redrive' });
    const bad = record(undefined, { raw: 'not json at all' });
    const { records, goodKeys } = around(bad);

    const response = await consumer.handle(...records);

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: bad.messageId }] });
    const logged = consumer.logs.find((entry) => entry.messageId === bad.messageId);
    expect(logged).toMatchObject({ outcome: 'permanent', code: 'MALFORMED_BODY', deadLetter: 'redrive' });
    expect(await consumer.effects(...goodKeys)).toEqual(goodKeys.map(() => 1));
  });
});
