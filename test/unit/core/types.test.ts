import { describe, expect, expectTypeOf, it } from 'vitest';
import { fromBody, fromCloudEvent } from '../../../lambda/core/dedup-key';
import type { Message } from '../../../lambda/core/message';
import { createSqsMiddleware } from '../../../lambda/middleware/sqs-middleware';
import { atomic } from '../../../lambda/modes/atomic';
import { entity } from '../../../lambda/modes/entity';
import { type EffectContext, type Effects, twoPhase } from '../../../lambda/modes/two-phase';
import type { UnitOfWork } from '../../../lambda/modes/unit-of-work';
import type { SqsHandler } from '../../../lambda/sqs/sqs-event';
import { createSqsHandler } from '../../../lambda/sqs/sqs-handler';
import { createMemoryStore } from '../../support/memory-store';

interface OrderEvent {
  readonly orderId: string;
  readonly status: string;
}

const store = createMemoryStore();

describe('types', () => {
  it('types the handler end to end from the body type given to the mode factory', () => {
    const handler = createSqsHandler({
      consumer: 'orders',
      store,
      parse: (raw) => JSON.parse(raw) as OrderEvent,
      dedupKey: fromBody((order: OrderEvent) => [order.orderId, order.status]),
      mode: atomic<OrderEvent>((message, unitOfWork) => {
        expectTypeOf(message).toEqualTypeOf<Message<OrderEvent>>();
        expectTypeOf(message.body.orderId).toEqualTypeOf<string>();
        expectTypeOf(unitOfWork).toEqualTypeOf<UnitOfWork>();
      }),
    });
    expectTypeOf(handler).toEqualTypeOf<SqsHandler>();
  });

  it('takes the body type as a type argument and requires an entity from an entity-mode handler', () => {
    createSqsHandler<OrderEvent>({
      consumer: 'orders',
      store,
      dedupKey: fromCloudEvent(),
      mode: entity((message) => ({
        tableName: 'Orders',
        keyAttribute: 'pk',
        item: { pk: message.body.orderId },
      })),
    });
    createSqsMiddleware<OrderEvent>({
      consumer: 'orders',
      store,
      dedupKey: fromBody('orderId'),
      // @ts-expect-error an entity-mode handler must return the entity write
      mode: entity(() => 'not an entity'),
    });
  });

  it('types a two-phase handler: effects, their context and their results', () => {
    createSqsHandler<OrderEvent>({
      consumer: 'orders',
      store,
      dedupKey: fromBody('orderId'),
      mode: twoPhase({
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
        leaseMillis: 30_000,
        storeResults: true,
      }),
    });
    expect(() =>
      createSqsHandler<OrderEvent>({
        consumer: 'orders',
        store,
        dedupKey: fromBody('orderId'),
        mode: twoPhase({
          handle: () => undefined,
          // @ts-expect-error leaseMillis is a number of milliseconds
          leaseMillis: '30s',
        }),
      }),
    ).toThrow('Expected `twoPhase.leaseMillis` to be a positive integer');
  });
});
