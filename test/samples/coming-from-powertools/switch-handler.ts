/**
 * During the switch: the effectively-once consumer also reads the Powertools records, through
 * Powertools' own persistence layer configured as the old consumer was, for as long as they live
 * (`expiresAfterSeconds`). An order Powertools completed commits only its marker; one Powertools
 * still holds in progress is retried; one it never saw (or whose record expired) is processed.
 * Deploy it in place of the Powertools consumer; once the last Powertools record has expired,
 * deploy `effectively-once-handler.ts` and delete the Powertools table.
 */
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { atomic, createSqsHandler, fromBody, PermanentError } from 'effectively-once';
import {
  type Order,
  type OrderHandlerSettings,
  POWERTOOLS_KEY_PREFIX,
  powertoolsConfig,
} from './powertools-handler';

export function createSwitchHandler({
  client,
  documentClient,
  idempotencyTable,
  inboxTable,
  ordersTable,
}: OrderHandlerSettings & { readonly inboxTable: string }) {
  const powertoolsRecords = new DynamoDBPersistenceLayer({
    tableName: idempotencyTable,
    awsSdkV3Client: client,
  });
  powertoolsRecords.configure({ config: powertoolsConfig(), keyPrefix: POWERTOOLS_KEY_PREFIX });

  /** True when the Powertools consumer completed the order in `body`; throws (a retry) while it is in progress. */
  async function completedByPowertools(body: string): Promise<boolean> {
    try {
      // The payload as Powertools hashed it: the parsed body.
      const status = (await powertoolsRecords.getRecord(JSON.parse(body))).getStatus();
      if (status === 'INPROGRESS') throw new Error('The Powertools consumer is still processing this order');
      return status === 'COMPLETED';
    } catch (error) {
      const name = (error as Error | undefined)?.name;
      if (name === 'IdempotencyItemNotFoundError') return false;
      if (name === 'IdempotencyValidationError')
        throw new PermanentError('Order id reused with another amount');
      throw error;
    }
  }

  return createSqsHandler<Order>({
    consumer: 'orders',
    client: documentClient,
    tableName: inboxTable,
    dedupKey: fromBody('orderId'),
    fingerprint: (message) => message.body.amount,
    mode: atomic(async (message, unitOfWork) => {
      if (await completedByPowertools(message.rawBody)) return; // only the marker is committed
      const { orderId, amount } = message.body;
      unitOfWork.put({ TableName: ordersTable, Item: { pk: orderId, amount } });
    }),
  });
}
