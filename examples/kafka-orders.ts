/**
 * A Kafka consumer (Amazon MSK or self-managed Apache Kafka) in atomic mode: each order event is
 * keyed by the `idempotency-key` header its producer sets once per event, so a producer's retry
 * (the same event at a later offset), a partition resumed at a reported offset and a re-read of
 * the topic are all duplicates. The consumer name, inbox table, record TTL and dead-letter queue
 * come from the `EO_*` variables.
 */
import { atomic } from 'effectively-once';
import { createKafkaHandler, fromHeader } from 'effectively-once/kafka';

interface OrderEvent {
  readonly orderId: string;
  readonly status: 'CREATED' | 'PAID' | 'SHIPPED';
}

const ordersTable = process.env.ORDERS_TABLE!;

export const handler = createKafkaHandler<OrderEvent>({
  dedupKey: fromHeader('idempotency-key'),
  mode: atomic((message, unitOfWork) => {
    const { orderId, status } = message.body;
    unitOfWork.put({ TableName: ordersTable, Item: { pk: `ORDER#${orderId}`, sk: 'ORDER', status } });
  }),
});
