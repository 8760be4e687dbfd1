/**
 * The construct's grants, both ways, against the requests the runtime really sends: each
 * consumer construct in each mode runs small seeded simulations through the real store on the
 * local emulator (faults, crashes, duplicates, mismatches, releases and expired records, so every
 * outcome of the mode is reached), and each request is traced as the IAM actions it needs (a
 * transaction's items one by one, `recordActions`).
 *
 * - used ⊆ granted: every traced action is granted (`ungrantedActions`);
 * - granted ⊆ used: every action granted on a table the runtime owns (the inbox, the outbox) is
 *   one some traced request needed (`unusedGrants`), so a grant no outcome uses fails here.
 *
 * The last seed of each mode runs against an endpoint that answers a failed condition without
 * the stored item (`withholdReturnedItems`), the outcome in which the store falls back to a
 * consistent `GetItem`: the emulator, like AWS, returns the item (`ALL_OLD`), so without it that
 * grant would never be traced.
 *
 * `IdempotentConsumer` runs the SQS simulation in each mode, and in atomic mode also the chain
 * simulation's orders service (atomic with `outbox`: each commit emits events into the outbox);
 * `IdempotentStreamConsumer` runs the stream simulation in each mode it has a profile for
 * (Kinesis marker, atomic and entity; a DynamoDB table stream in atomic mode). The outbox relay
 * has no item grant on any table (it reads the outbox through its stream), so it has nothing to
 * trace here; `test/infra/outbox.test.ts` pins its grants.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromBody } from '../../lambda/core/dedup-key';
import { atomic } from '../../lambda/modes/atomic';
import { createSqsHandler } from '../../lambda/sqs/sqs-handler';
import { INBOX_TABLE_ACTIONS } from '../../lib/consumer-permissions';
import { uniqueName } from '../support/aws';
import { lambdaContext, sqsRecord } from '../support/fixtures';
import { runChainSimulation } from './support/chain-simulation';
import { positiveInteger } from './support/environment';
import { grantedActions, mergeActions, ungrantedActions, unusedGrants } from './support/grants';
import { type Mode, recordActions, runSimulation, seedProfile } from './support/simulation';
import { runStreamSimulation, type StreamMode, streamSeedProfile } from './support/stream-simulation';
import {
  createLocalClient,
  createOutboxTable,
  createTables,
  deleteTables,
  type LocalClient,
} from './support/tables';

/**
 * Enough messages per seed that every outcome of a mode (including the rare ones) is reached: 100
 * do with these seeds (measured; 200 took the test from about 50 s to 2.3 min for the same verdict).
 */
const MESSAGES = positiveInteger('GRANTS_MESSAGES', 100);
/** Seeds per construct and mode; each seed draws its own faults. The last withholds returned items. */
const SEEDS = [1, 3];
const WITHHOLDING_SEED = 3;

const inboxTable = uniqueName('eo-rel-grants-inbox');
const businessTable = uniqueName('eo-rel-grants-business');
const shipmentsTable = uniqueName('eo-rel-grants-shipments');
const outboxTable = uniqueName('eo-rel-grants-outbox');
let outboxStreamArn = '';
let admin: LocalClient;

beforeAll(async () => {
  admin = createLocalClient({ maxAttempts: 3 });
  await createTables(admin.raw, inboxTable, businessTable, shipmentsTable);
  outboxStreamArn = await createOutboxTable(admin.raw, outboxTable);
});

afterAll(async () => {
  await deleteTables(admin.raw, inboxTable, businessTable, shipmentsTable, outboxTable);
  admin.raw.destroy();
});

/**
 * Makes `client`'s endpoint answer a failed condition as one without `ReturnValuesOnConditionCheckFailure`
 * support would: a `ConditionalCheckFailedException` without `Item`, a cancelled transaction's
 * reasons without `Item`.
 */
function withholdReturnedItems(client: LocalClient): void {
  client.document.middlewareStack.add(
    (next) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        const failed = error as { Item?: unknown; CancellationReasons?: { Item?: unknown }[] };
        delete failed.Item;
        for (const reason of failed.CancellationReasons ?? []) delete reason.Item;
        throw error;
      }
    },
    { step: 'initialize', priority: 'low', name: 'grantsWithholdReturnedItems' },
  );
}

/** The test hook a seed runs with: the withholding seed's endpoint returns no stored item. */
function endpointOf(seed: number): { readonly tamper?: (client: LocalClient) => void } {
  return seed === WITHHOLDING_SEED ? { tamper: withholdReturnedItems } : {};
}

/** What a seed of either simulation runs with besides its profile and mode. */
function seedRun(seed: number) {
  return {
    seed,
    messages: MESSAGES,
    instances: 4,
    inboxTable,
    businessTable,
    startMillis: Date.now(),
    ...endpointOf(seed),
  };
}

/** The IAM actions every seed's requests needed, by table. */
async function traced(run: (seed: number) => Promise<ReadonlyMap<string, ReadonlySet<string>>>) {
  const used = new Map<string, Set<string>>();
  for (const seed of SEEDS) mergeActions(used, await run(seed));
  return used;
}

const TIMEOUT_MILLIS = 600_000;

describe('IdempotentConsumer grants exactly what its runtime sends', () => {
  it.each(['marker', 'atomic', 'entity', 'two-phase'] as const)(
    'in %s mode, every traced request is granted and every inbox and outbox grant is used by some outcome',
    async (mode: Mode) => {
      const queue = await traced(async (seed) => {
        const result = await runSimulation({ ...seedProfile(seed), mode, ...seedRun(seed) });
        return result.actions;
      });
      const tables = { mode, inboxTable, businessTable };
      expect(ungrantedActions(tables, queue)).toEqual([]);
      if (mode !== 'atomic') {
        expect(unusedGrants(tables, queue)).toEqual([]);
        return;
      }
      // Atomic mode's outcomes include a commit that emits into the outbox: the chain's orders
      // service is an atomic IdempotentConsumer given `outbox`.
      const chain = await traced(async (seed) => {
        const result = await runChainSimulation({
          seed,
          messages: Math.ceil(MESSAGES / 3),
          instances: 4,
          inboxTable,
          ordersTable: businessTable,
          shipmentsTable,
          outboxTable,
          outboxStreamArn,
          startMillis: Date.now(),
        });
        return result.orders.actions;
      });
      const withOutbox = { ...tables, outboxTable };
      expect(ungrantedActions(withOutbox, chain)).toEqual([]);
      const every = new Map<string, Set<string>>();
      mergeActions(every, queue);
      mergeActions(every, chain);
      expect(unusedGrants(withOutbox, every)).toEqual([]);
    },
    TIMEOUT_MILLIS,
  );
});

describe('IdempotentStreamConsumer grants exactly what its runtime sends', () => {
  it.each(['marker', 'atomic', 'entity'] as const)(
    'in %s mode, every traced request is granted and every inbox grant is used by some outcome',
    async (mode: StreamMode) => {
      const used = await traced(async (seed) => {
        const sources = mode === 'atomic' ? (['kinesis', 'dynamodb'] as const) : (['kinesis'] as const);
        const actions = new Map<string, Set<string>>();
        for (const source of sources) {
          const result = await runStreamSimulation({
            ...streamSeedProfile(seed),
            source,
            mode,
            ...seedRun(seed),
          });
          mergeActions(actions, result.actions);
        }
        return actions;
      });
      const tables = { mode, inboxTable, businessTable };
      expect(ungrantedActions(tables, used)).toEqual([]);
      expect(unusedGrants(tables, used)).toEqual([]);
    },
    TIMEOUT_MILLIS,
  );
});

describe('IdempotentConsumer in atomic mode with the marker on the business item', () => {
  interface OrderPlaced {
    readonly pk: string;
    readonly total: number;
    /** The row alone (one conditional `PutItem`), or the row and a line in one transaction. */
    readonly alone: boolean;
    /** The put's own condition: the order row must already exist (fails on a fresh key). */
    readonly requireRow?: boolean;
  }

  /** The actions every request of an item-marker consumer on `client` needs, by table. */
  function itemMarkerConsumer(client: LocalClient) {
    const used = new Map<string, Set<string>>();
    const operations = new Set<string>();
    client.document.middlewareStack.add(
      (next, context) => async (args) => {
        operations.add(context.commandName ?? '');
        recordActions(used, {
          operation: (context.commandName ?? '').replace(/Command$/, ''),
          input: args.input as Record<string, unknown>,
        });
        return next(args);
      },
      { step: 'initialize', name: 'grantsTraceItemMarker' },
    );
    const handler = createSqsHandler<OrderPlaced>({
      consumer: 'grants-item-marker',
      client: client.document,
      tableName: inboxTable,
      dedupKey: fromBody('pk'),
      logLevel: 'silent',
      metrics: false,
      deadLetter: 'direct',
      deadLetterSender: { send: async () => undefined },
      mode: atomic<OrderPlaced>(
        (message, unitOfWork) => {
          const { pk, total, alone, requireRow } = message.body;
          unitOfWork.putAsMarker({
            TableName: businessTable,
            Item: { pk, total },
            keyAttribute: 'pk',
            ...(requireRow ? { ConditionExpression: 'attribute_exists(pk)' } : {}),
          });
          if (!alone) unitOfWork.put({ TableName: businessTable, Item: { pk: `${pk}#line`, total } });
        },
        { marker: 'item' },
      ),
    });
    /** Delivers each order in turn, as its own message. */
    const deliver = async (...orders: OrderPlaced[]) => {
      for (const order of orders) {
        await handler({ Records: [sqsRecord(randomUUID(), order)] }, lambdaContext());
      }
    };
    return { used, operations, deliver };
  }

  it('sends only granted requests, the lone marked put as PutItem on the business table, and nothing to the inbox', async () => {
    const returning = createLocalClient();
    const withholding = createLocalClient();
    withholdReturnedItems(withholding);
    const [first, second] = [itemMarkerConsumer(returning), itemMarkerConsumer(withholding)];
    const order = (alone: boolean, extra: Partial<OrderPlaced> = {}): OrderPlaced => ({
      pk: `grants-item#${randomUUID()}`,
      total: 3,
      alone,
      ...extra,
    });
    const [lone, paired] = [order(true), order(false)];

    // First deliveries, duplicates, mismatches and a failing own condition, each shape; the
    // withholding endpoint makes the store read the row it was not given back.
    for (const { deliver } of [first, second]) {
      const [alone, together] = [order(true), order(false)];
      await deliver(alone, alone, { ...alone, total: 9 }, order(true, { requireRow: true }));
      await deliver(together, together, { ...together, total: 9 }, order(false, { requireRow: true }));
    }
    await first.deliver(lone, paired);

    const used = new Map<string, Set<string>>();
    mergeActions(used, first.used);
    mergeActions(used, second.used);
    expect(ungrantedActions({ mode: 'atomic', inboxTable, businessTable }, used)).toEqual([]);
    expect([...(used.get(businessTable) ?? [])].sort()).toEqual(['dynamodb:GetItem', 'dynamodb:PutItem']);
    expect(used.has(inboxTable)).toBe(false);
    // The lone put's own request, not only a transaction's item, needed PutItem; a failed
    // condition on an absent row returns no item, so both endpoints read it once.
    for (const { operations } of [first, second]) {
      expect([...operations].sort()).toEqual([
        'GetItemCommand',
        'PutItemCommand',
        'TransactWriteItemsCommand',
      ]);
    }
  });
});

describe('the two-sided check', () => {
  const tables = { mode: 'atomic', inboxTable, businessTable, outboxTable } as const;
  const used = new Map([
    [inboxTable, new Set(['dynamodb:PutItem', 'dynamodb:GetItem'])],
    [outboxTable, new Set(['dynamodb:PutItem'])],
  ]);

  it('passes atomic mode’s grants when the marker put, the read and the outbox put were traced', () => {
    expect(INBOX_TABLE_ACTIONS.atomic).toEqual(['dynamodb:PutItem', 'dynamodb:GetItem']);
    expect(unusedGrants(tables, used)).toEqual([]);
    expect(ungrantedActions(tables, used)).toEqual([]);
  });

  it('flags an inbox action granted that no traced request used, so the check above can fail', () => {
    const granted = grantedActions(tables);
    granted.set(inboxTable, [...(granted.get(inboxTable) ?? []), 'dynamodb:ConditionCheckItem']);
    expect(unusedGrants(tables, used, granted)).toEqual(['dynamodb:ConditionCheckItem on the inbox']);
  });

  it('flags a traced request the construct does not grant', () => {
    const sent = new Map([[inboxTable, new Set(['dynamodb:PutItem', 'dynamodb:DeleteItem'])]]);
    expect(ungrantedActions(tables, sent)).toEqual(['dynamodb:DeleteItem on the inbox']);
  });
});
