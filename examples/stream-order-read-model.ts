/**
 * A DynamoDB Streams projection of the orders table into a read model. A change is keyed by the
 * order's key, the event name and its `version` attribute (the writer raises it on every write),
 * never by the event id alone: the same change emitted twice is a duplicate, and a second write
 * under one version with a different payload is a mismatch sent to the dead-letter queue.
 */
import { atomic } from 'effectively-once';
import {
  createDynamoDbStreamHandler,
  type DynamoDbChange,
  fromKeysAndVersion,
} from 'effectively-once/streams';

interface Order {
  readonly pk: string;
  readonly version: number;
  readonly status: string;
  readonly total: number;
}

const readModelTable = process.env.READ_MODEL_TABLE!;

export const handler = createDynamoDbStreamHandler<DynamoDbChange<Order>>({
  dedupKey: fromKeysAndVersion('version'),
  mode: atomic((message, unitOfWork) => {
    const { eventName, keys, newImage } = message.body;
    if (eventName === 'REMOVE') {
      unitOfWork.delete({ TableName: readModelTable, Key: { pk: keys.pk } });
      return;
    }
    const { pk, status, total, version } = newImage!;
    unitOfWork.put({ TableName: readModelTable, Item: { pk, status, total, version } });
  }),
});
