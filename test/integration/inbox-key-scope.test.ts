/**
 * The construct grants a consumer its inbox actions only on its own records: a
 * `dynamodb:LeadingKeys` condition with `inboxKeyPatterns(consumerName)`. The emulator does not
 * evaluate that condition key (MiniStack 1.5.33 allows a request whatever the patterns say), so
 * this file checks the other half against the real endpoint: every inbox request the runtime
 * sends, in every mode that uses the inbox and on every path (first delivery, duplicate, release
 * after a failure, named effects, a key long enough to be hashed), names only partition keys the
 * patterns match. A request outside them would be denied on AWS.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSqsHandler, fromBody, type SqsHandler, type SqsRecord } from '../../lambda';
import { atomic } from '../../lambda/modes/atomic';
import { marker } from '../../lambda/modes/marker';
import { twoPhase } from '../../lambda/modes/two-phase';
import { INBOX_TABLE_ACTIONS, inboxKeyPatterns } from '../../lib/consumer-permissions';
import { uniqueName } from '../support/aws';
import { createLocalResources, lambdaContext, sqsRecord } from '../support/fixtures';

const local = createLocalResources();
const inboxTable = uniqueName('eo-scope-inbox');
const businessTable = uniqueName('eo-scope-business');
const now = Date.now();
const runId = randomBytes(3).toString('hex');
let sequence = 0;
const id = (label: string) => `${label}-${runId}-${++sequence}`;

beforeAll(async () => {
  await local.createTable(inboxTable);
  await local.createTable(businessTable);
});

afterAll(() => local.dispose());

/** One inbox item a request touched: the operation (a transaction's item by its own action) and its partition key. */
interface InboxKey {
  readonly operation: string;
  readonly pk: string;
}

type LowLevelItem = { readonly pk?: { readonly S?: string } };
type LowLevelRequest = {
  readonly TableName?: string;
  readonly Item?: LowLevelItem;
  readonly Key?: LowLevelItem;
  readonly TransactItems?: readonly Record<
    string,
    { TableName?: string; Item?: LowLevelItem; Key?: LowLevelItem }
  >[];
};

/** Records the partition key of every inbox item in each request body the client sends. */
function captureInboxKeys(client: DynamoDBDocumentClient): InboxKey[] {
  const keys: InboxKey[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const body = (args.request as { body?: unknown }).body;
      // The serialised JSON body (a string, or bytes with some request handlers).
      const text = body instanceof Uint8Array ? new TextDecoder().decode(body) : String(body ?? '{}');
      const request = JSON.parse(text) as LowLevelRequest;
      const operation = (context.commandName ?? '').replace(/Command$/, '');
      const items = request.TransactItems
        ? request.TransactItems.flatMap((item) =>
            Object.entries(item).map(([action, detail]) => ({ operation: action, ...detail })),
          )
        : [{ operation, ...request }];
      for (const item of items) {
        if (item.TableName !== inboxTable) continue;
        keys.push({ operation: item.operation, pk: (item.Item ?? item.Key)?.pk?.S ?? '(no pk)' });
      }
      return next(args);
    },
    { step: 'build', priority: 'low', name: 'captureInboxKeys' },
  );
  return keys;
}

/** `StringLike` matching: `*` is any run of characters, `?` one character, everything else literal. */
function matchesStringLike(value: string, patterns: readonly string[]): boolean {
  return patterns.some((pattern) => {
    const source = pattern
      .split('')
      .map((char) => (char === '*' ? '.*' : char === '?' ? '.' : char.replace(/[\\^$.|+()[\]{}]/g, '\\$&')))
      .join('');
    return new RegExp(`^${source}$`).test(value);
  });
}

/** Delivers `record`, then the same message again (a redelivery), then `failing`, whose handler throws. */
async function deliverEveryPath(handler: SqsHandler, record: SqsRecord, failing: SqsRecord): Promise<void> {
  expect(await handler({ Records: [record] }, lambdaContext())).toEqual({ batchItemFailures: [] });
  expect(await handler({ Records: [record] }, lambdaContext())).toEqual({ batchItemFailures: [] });
  expect(await handler({ Records: [failing] }, lambdaContext())).toEqual({
    batchItemFailures: [{ itemIdentifier: failing.messageId }],
  });
}

type Event = { eventId: string; fail?: boolean };

describe('inbox requests stay inside the IAM scope the construct grants', () => {
  it.each(['marker', 'atomic', 'two-phase'] as const)(
    'names only keys matching the consumer’s own prefixes in %s mode',
    async (mode) => {
      const consumer = `scoped-${mode}`;
      const client = local.documentClient();
      const keys = captureInboxKeys(client);
      const common = {
        consumer,
        client,
        tableName: inboxTable,
        dedupKey: fromBody('eventId'),
        clock: () => now,
        logLevel: 'silent',
        metrics: false,
      } as const;
      const failIf = (body: Event) => {
        if (body.fail) throw new Error('the downstream is down');
      };
      const handler =
        mode === 'marker'
          ? createSqsHandler<Event>({ ...common, mode: marker((message) => failIf(message.body)) })
          : mode === 'atomic'
            ? createSqsHandler<Event>({
                ...common,
                mode: atomic((message, unitOfWork) => {
                  failIf(message.body);
                  unitOfWork.put({ TableName: businessTable, Item: { pk: message.body.eventId } });
                }),
              })
            : createSqsHandler<Event>({
                ...common,
                mode: twoPhase({
                  handle: async (message, effects) => {
                    await effects.run('invoice', () => failIf(message.body));
                    await effects.run(() => 'unnamed');
                  },
                }),
              });
      // A dedup key long enough that the scoped key is hashed, so both key shapes are sent.
      const long = 'k'.repeat(2000);
      await deliverEveryPath(
        handler,
        sqsRecord(randomUUID(), { eventId: `${long}${id('event')}` }),
        sqsRecord(randomUUID(), { eventId: id('event'), fail: true }),
      );

      expect(keys.length).toBeGreaterThan(0);
      const patterns = inboxKeyPatterns(consumer);
      expect(keys.filter((key) => !matchesStringLike(key.pk, patterns))).toEqual([]);
      // And each item's action is one the construct grants in this mode.
      const actions = new Set(keys.map((key) => `dynamodb:${key.operation.replace(/(Item)?$/, 'Item')}`));
      expect([...actions].filter((action) => !INBOX_TABLE_ACTIONS[mode].includes(action))).toEqual([]);
    },
  );

  it('would flag another consumer’s key, so the check above can fail', () => {
    expect(matchesStringLike('scoped-marker#order-1', inboxKeyPatterns('scoped-marker'))).toBe(true);
    expect(matchesStringLike('scoped-marker/invoice#order-1', inboxKeyPatterns('scoped-marker'))).toBe(true);
    expect(matchesStringLike('scoped-marker-eu#order-1', inboxKeyPatterns('scoped-marker'))).toBe(false);
    expect(matchesStringLike('other#scoped-marker#order-1', inboxKeyPatterns('scoped-marker'))).toBe(false);
  });
});
