/**
 * The transactional outbox: the order service confirms an order and emits `OrderConfirmed` in
 * the same transaction (the inbox record, the order row, the outbox item), the relay publishes
 * each new outbox item from the table's stream to the shipping queue, and the shipping service
 * dedups on the event id the relay carries. Deployed with the `Outbox` construct, the table,
 * retention and queue come from its `EO_OUTBOX_*` variables.
 */
import { SQSClient } from '@aws-sdk/client-sqs';
import { atomic, createSqsHandler, fromAttribute, fromBody, marker } from 'effectively-once';
import {
  createOutboxRelay,
  IDEMPOTENCY_KEY_ATTRIBUTE,
  OUTBOX_ENV,
  sqsDestination,
} from 'effectively-once/outbox';

interface OrderPlaced {
  readonly orderId: string;
  readonly total: number;
}

const ordersTable = process.env.ORDERS_TABLE!;

/** The order service: the event exists if and only if the order row does. */
export const orderHandler = createSqsHandler<OrderPlaced>({
  dedupKey: fromBody('orderId'),
  mode: atomic(
    (message, unitOfWork) => {
      const { orderId, total } = message.body;
      unitOfWork.put({ TableName: ordersTable, Item: { pk: orderId, status: 'CONFIRMED', total } });
      // The id derives from this message's scoped dedup key and `OrderConfirmed#0`: a redelivery
      // is a duplicate, and could never mint a second id anyway.
      unitOfWork.emit({ type: 'OrderConfirmed', detail: { orderId, total } }, { entity: orderId });
    },
    {
      outbox: {
        tableName: process.env[OUTBOX_ENV.tableName]!,
        retentionSeconds: Number(process.env[OUTBOX_ENV.retentionSeconds] ?? 604_800),
      },
    },
  ),
});

/** The relay: the outbox table's stream in, each new event on the shipping queue. */
export const relayHandler = createOutboxRelay({
  destination: sqsDestination({
    client: new SQSClient({}),
    queueUrl: process.env[OUTBOX_ENV.destinationQueueUrl]!,
  }),
});

/** The shipping service: a re-published event carries the same `idempotency-key`, a duplicate. */
export const shippingHandler = createSqsHandler<{ orderId: string }>({
  dedupKey: fromAttribute(IDEMPOTENCY_KEY_ATTRIBUTE),
  mode: marker(async (message) => {
    console.log(JSON.stringify({ shipping: message.body.orderId }));
  }),
});
