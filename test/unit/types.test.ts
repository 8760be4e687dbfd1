import { describe, expect, expectTypeOf, it } from 'vitest';
import { fromBody, fromCloudEvent } from '../../lambda/core/dedup-key';
import type { Message } from '../../lambda/core/message';
import type { SqsHandler } from '../../lambda/core/sqs-event';
import type { EffectContext, Effects } from '../../lambda/core/two-phase';
import type { UnitOfWork } from '../../lambda/core/unit-of-work';
import { createSqsMiddleware } from '../../lambda/middleware/sqs-middleware';
import { createSqsHandler } from '../../lambda/sqs-handler';
import { createMemoryStore } from '../support/memory-store';

interface OrderEvent {
  readonly orderId: string;
  readonly status: string;
}

const store = createMemoryStore();

describe('types', () => {
  it('infers the body type from the parse option and types the handler end to end', () => {
    const handler = createSqsHandler({
      consumer: 'orders',
      store,
      parse: (raw) => JSON.parse(raw) as OrderEvent,
      dedupKey: fromBody((order: OrderEvent) => [order.orderId, order.status]),
      mode: 'atomic',
      handle: (message, unitOfWork) => {
        expectTypeOf(message).toEqualTypeOf<Message<OrderEvent>>();
        expectTypeOf(message.body.orderId).toEqualTypeOf<string>();
        expectTypeOf(unitOfWork).toEqualTypeOf<UnitOfWork>();
      },
    });
    expectTypeOf(handler).toEqualTypeOf<SqsHandler>();
  });

  it('takes the body type as a type argument and requires an entity from an entity-mode handler', () => {
    createSqsHandler<OrderEvent>({
      consumer: 'orders',
      store,
      dedupKey: fromCloudEvent(),
      mode: 'entity',
      handle: (message) => ({ tableName: 'Orders', keyAttribute: 'pk', item: { pk: message.body.orderId } }),
    });
    // @ts-expect-error an entity-mode handler must return the entity write
    createSqsMiddleware<OrderEvent>({
      consumer: 'orders',
      store,
      dedupKey: fromBody('orderId'),
      mode: 'entity',
      handle: () => 'not an entity',
    });
  });

  it('types a two-phase handler: effects, their context and their results', () => {
    createSqsHandler<OrderEvent>({
      consumer: 'orders',
      store,
      dedupKey: fromBody('orderId'),
      mode: 'two-phase',
      leaseMillis: 30_000,
      storeResults: true,
      handle: async (message, effects) => {
        expectTypeOf(effects).toEqualTypeOf<Effects>();
        const invoice = await effects.run('invoice', (context) => {
          expectTypeOf(context).toEqualTypeOf<EffectContext>();
          expectTypeOf(context.idempotencyKey).toEqualTypeOf<string>();
          expectTypeOf(context.signal).toEqualTypeOf<AbortSignal>();
          return { invoiceId: message.body.orderId };
        });
        expectTypeOf(invoice).toEqualTypeOf<{ invoiceId: string } | undefined>();
        expectTypeOf(await effects.run(async () => 42)).toEqualTypeOf<number | undefined>();
      },
    });
    expect(() =>
      createSqsHandler<OrderEvent>({
        consumer: 'orders',
        store,
        dedupKey: fromBody('orderId'),
        mode: 'two-phase',
        // @ts-expect-error leaseMillis is a number of milliseconds
        leaseMillis: '30s',
        handle: () => undefined,
      }),
    ).toThrow('Expected `leaseMillis` to be a positive integer');
  });
});
