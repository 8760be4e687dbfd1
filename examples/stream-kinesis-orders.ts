/**
 * A Kinesis consumer in atomic mode: each order event's data (JSON) is keyed by the producer's
 * event id, so a producer's second `PutRecords` of the same event, a retry from the checkpoint
 * and a re-read of the shard are all duplicates. Deployed with the construct, the consumer name,
 * inbox table, record TTL and dead-letter queue come from its `EO_*` variables.
 */
import { atomic } from 'effectively-once';
import { createKinesisHandler, fromData } from 'effectively-once/streams';

interface OrderEvent {
  readonly eventId: string;
  readonly orderId: string;
  readonly status: 'CREATED' | 'PAID' | 'SHIPPED';
}

const ordersTable = process.env.ORDERS_TABLE!;

export const handler = createKinesisHandler<OrderEvent>({
  dedupKey: fromData('eventId'),
  mode: atomic((message, unitOfWork) => {
    const { orderId, status } = message.body;
    unitOfWork.put({ TableName: ordersTable, Item: { pk: `ORDER#${orderId}`, sk: 'ORDER', status } });
  }),
});
