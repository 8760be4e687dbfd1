/**
 * The construct's outbox reaches atomic mode: an `IdempotentConsumer` (or stream consumer) with
 * `outbox` sets `EO_OUTBOX_TABLE_NAME` and `EO_OUTBOX_RETENTION_SECONDS`, and `atomic(handle)`
 * with no `outbox` option of its own emits to that table with that retention.
 */
import { describe, expect, it } from 'vitest';
import { ENV, OUTBOX_ATTRIBUTES, OUTBOX_ENV } from '../../../lambda/core/contract';
import { fromBody } from '../../../lambda/core/dedup-key';
import { atomic } from '../../../lambda/modes/atomic';
import type { UnitOfWork } from '../../../lambda/modes/unit-of-work';
import { createSqsHandler } from '../../../lambda/sqs/sqs-handler';
import { captureLogger, captureMetrics, manualClock, sqsEvent, sqsRecord, T0 } from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';

const CONSTRUCT_ENVIRONMENT = {
  [ENV.consumer]: 'orders',
  [ENV.inboxTable]: 'Inbox',
  [OUTBOX_ENV.tableName]: 'OrderEvents',
  [OUTBOX_ENV.retentionSeconds]: '7200',
  [OUTBOX_ENV.destinationKind]: 'sqs',
  [OUTBOX_ENV.destinationFifo]: 'false',
};

const confirm = (message: { readonly body: { readonly orderId: string } }, unitOfWork: UnitOfWork) => {
  unitOfWork.put({ TableName: 'Orders', Item: { pk: message.body.orderId } });
  unitOfWork.emit({ type: 'OrderConfirmed', detail: { orderId: message.body.orderId } });
};

function handlerWith(
  environment: Record<string, string>,
  outbox?: { tableName: string; retentionSeconds?: number },
) {
  const store = createMemoryStore();
  const handler = createSqsHandler<{ orderId: string }>({
    dedupKey: fromBody('orderId'),
    mode: atomic(confirm, outbox === undefined ? undefined : { outbox }),
    store,
    clock: manualClock(),
    logger: captureLogger(),
    metrics: captureMetrics(),
    environment,
  });
  return { store, handler };
}

describe("atomic mode's outbox from the construct's environment", () => {
  it('emits to EO_OUTBOX_TABLE_NAME with EO_OUTBOX_RETENTION_SECONDS when atomic() names no outbox', async () => {
    const { store, handler } = handlerWith(CONSTRUCT_ENVIRONMENT);

    expect(await handler(sqsEvent(sqsRecord('m-1', { orderId: 'o-1' })), {} as never)).toEqual({
      batchItemFailures: [],
    });

    const [item] = store.items('OrderEvents');
    expect(item?.[OUTBOX_ATTRIBUTES.type]).toBe('OrderConfirmed');
    expect(item?.[OUTBOX_ATTRIBUTES.expiresAt]).toBe(T0 / 1000 + 7200);
  });

  it("lets the mode's own retention win over the construct's", async () => {
    const { store, handler } = handlerWith(CONSTRUCT_ENVIRONMENT, {
      tableName: 'OrderEvents',
      retentionSeconds: 60,
    });
    await handler(sqsEvent(sqsRecord('m-1', { orderId: 'o-1' })), {} as never);
    expect(store.items('OrderEvents')[0]?.[OUTBOX_ATTRIBUTES.expiresAt]).toBe(T0 / 1000 + 60);
  });

  it("refuses at creation an own outbox table other than the construct's", () => {
    expect(() => handlerWith(CONSTRUCT_ENVIRONMENT, { tableName: 'Elsewhere' })).toThrow(
      expect.objectContaining({
        code: 'INVALID_OPTIONS',
        message: expect.stringContaining('the construct configured the outbox `OrderEvents`'),
      }),
    );
  });

  it('refuses a malformed EO_OUTBOX_RETENTION_SECONDS or EO_OUTBOX_DESTINATION_KIND at creation, naming it', () => {
    expect(() => handlerWith({ ...CONSTRUCT_ENVIRONMENT, [OUTBOX_ENV.retentionSeconds]: '1.5' })).toThrow(
      /EO_OUTBOX_RETENTION_SECONDS/,
    );
    expect(() => handlerWith({ ...CONSTRUCT_ENVIRONMENT, [OUTBOX_ENV.destinationKind]: 'kafka' })).toThrow(
      /EO_OUTBOX_DESTINATION_KIND/,
    );
  });

  it('without an outbox anywhere, emit is INVALID_OPTIONS and the message is retried', async () => {
    const environment: Record<string, string> = { [ENV.consumer]: 'orders', [ENV.inboxTable]: 'Inbox' };
    const { store, handler } = handlerWith(environment);
    expect(await handler(sqsEvent(sqsRecord('m-1', { orderId: 'o-1' })), {} as never)).toEqual({
      batchItemFailures: [{ itemIdentifier: 'm-1' }],
    });
    expect(store.items('Orders')).toEqual([]);
  });
});
