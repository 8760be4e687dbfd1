/**
 * The handler deployed by `streams-function.test.ts`: an atomic-mode Kinesis consumer configured
 * the way the construct configures one (`EO_CONSUMER`, `EO_INBOX_TABLE`, `EO_DEAD_LETTER_MODE`,
 * `EO_DEAD_LETTER_QUEUE_URL`), writing each order to `ORDERS_TABLE`.
 */
import { atomic } from '../../lambda/modes/atomic';
import { createKinesisHandler, fromData } from '../../lambda/streams';

interface OrderEvent {
  readonly eventId: string;
  readonly orderId: string;
  readonly status: string;
}

const ordersTable = process.env.ORDERS_TABLE!;

export const handler = createKinesisHandler<OrderEvent>({
  dedupKey: fromData('eventId'),
  mode: atomic((message, unitOfWork) => {
    unitOfWork.put({
      TableName: ordersTable,
      Item: { pk: message.body.orderId, status: message.body.status },
    });
  }),
});
