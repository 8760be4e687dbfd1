import { describe, expect, it } from 'vitest';
import { fromBody } from '../../../lambda/core/dedup-key';
import type { Message } from '../../../lambda/core/message';
import { atomic } from '../../../lambda/modes/atomic';
import type { UnitOfWork } from '../../../lambda/modes/unit-of-work';
import { createSqsBatchHandler } from '../../../lambda/sqs/sqs-handler';
import {
  captureLogger,
  captureMetrics,
  counts,
  manualClock,
  sqsEvent,
  sqsRecord,
} from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';

interface CustomerChanged {
  readonly eventId: string;
  readonly customerId: string;
  readonly name: string;
  readonly version: number;
}

function setup(
  handle: (message: Message<CustomerChanged>, unitOfWork: UnitOfWork) => unknown = (message, unitOfWork) => {
    const { customerId, name, version } = message.body;
    unitOfWork.putIfNewer({
      TableName: 'Customers',
      Item: { pk: customerId, name, version },
      versionAttribute: 'version',
    });
  },
) {
  const store = createMemoryStore();
  const logger = captureLogger();
  const metrics = captureMetrics();
  const processBatch = createSqsBatchHandler<CustomerChanged>({
    consumer: 'customers',
    dedupKey: fromBody('eventId'),
    mode: atomic(handle),
    store,
    clock: manualClock(),
    logger,
    metrics,
  });
  return { store, logger, metrics, processBatch };
}

const changed = (eventId: string, version: number, name = `name-${version}`) =>
  sqsRecord(`m-${eventId}`, { eventId, customerId: 'c-1', name, version });

describe('stale messages (putIfNewer in atomic mode)', () => {
  it('applies newer versions and acknowledges an older one as stale, writing nothing', async () => {
    const { store, logger, metrics, processBatch } = setup();

    expect(await processBatch(sqsEvent(changed('e-1', 1)))).toEqual({ batchItemFailures: [] });
    expect(await processBatch(sqsEvent(changed('e-3', 3)))).toEqual({ batchItemFailures: [] });
    expect(await processBatch(sqsEvent(changed('e-2', 2)))).toEqual({ batchItemFailures: [] });

    expect(store.read('Customers', 'c-1')).toEqual({ pk: 'c-1', name: 'name-3', version: 3 });
    expect(store.read('inbox', 'customers#e-2')).toBeUndefined();
    expect(metrics.published.map((published) => published.counts)).toEqual([
      counts({ processed: 1 }),
      counts({ processed: 1 }),
      counts({ stale: 1 }),
    ]);
    expect(logger.entries).toEqual([
      {
        level: 'info',
        message: 'Stale message acknowledged: a newer version is stored',
        consumer: 'customers',
        scopedKey: 'customers#e-2',
        messageId: 'm-e-2',
        correlationId: 'm-e-2',
        outcome: 'stale',
      },
    ]);
  });

  it('treats the same version from another message as stale', async () => {
    const { store, metrics, processBatch } = setup();
    await processBatch(sqsEvent(changed('e-1', 1, 'first')));

    await processBatch(sqsEvent(changed('e-1b', 1, 'second')));

    expect(store.read('Customers', 'c-1')).toMatchObject({ name: 'first' });
    expect(metrics.published[1]?.counts).toEqual(counts({ stale: 1 }));
  });

  it('keeps a failed condition of another write a permanent BUSINESS_CONDITION_FAILED', async () => {
    const { logger, processBatch } = setup((message, unitOfWork) => {
      unitOfWork.putIfNewer({
        TableName: 'Customers',
        Item: { pk: message.body.customerId, version: message.body.version },
        versionAttribute: 'version',
      });
      unitOfWork.conditionCheck({
        TableName: 'Accounts',
        Key: { pk: message.body.customerId },
        ConditionExpression: 'attribute_exists(pk)',
      });
    });

    expect(await processBatch(sqsEvent(changed('e-1', 1)))).toEqual({
      batchItemFailures: [{ itemIdentifier: 'm-e-1' }],
    });
    expect(logger.entries[0]).toMatchObject({ outcome: 'permanent', code: 'BUSINESS_CONDITION_FAILED' });
  });

  it('rejects a versioned put whose item has no number or string version as permanent', async () => {
    const { logger, processBatch } = setup((message, unitOfWork) => {
      unitOfWork.putIfNewer({
        TableName: 'Customers',
        Item: { pk: message.body.customerId },
        versionAttribute: 'version',
      });
    });

    await processBatch(sqsEvent(changed('e-1', 1)));
    expect(logger.entries[0]).toMatchObject({
      outcome: 'permanent',
      code: 'VALIDATION',
      reason: 'putIfNewer: `Item.version` must be a number or a string',
    });
  });

  it('returns the index of the versioned write, like every other write', async () => {
    const indices: number[] = [];
    const { processBatch } = setup((message, unitOfWork) => {
      indices.push(unitOfWork.put({ TableName: 'Audit', Item: { pk: message.body.eventId } }));
      indices.push(
        unitOfWork.putIfNewer({
          TableName: 'Customers',
          Item: { pk: message.body.customerId, version: message.body.version },
          versionAttribute: 'version',
        }),
      );
    });

    await processBatch(sqsEvent(changed('e-1', 1)));
    expect(indices).toEqual([0, 1]);
  });
});
