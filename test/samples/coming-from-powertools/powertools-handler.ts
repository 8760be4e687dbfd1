/**
 * Before: an SQS consumer on Powertools for AWS Lambda. Each record's body is an order; the
 * order id is the idempotency key, the amount is validated against the stored record, and a
 * record without an order id fails.
 */
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';

/** An order as the producer sends it. */
export interface Order {
  readonly orderId: string;
  readonly amount: number;
}

/** The SQS event and the Lambda context (in an app, the types of `@types/aws-lambda`). */
interface SqsEvent {
  readonly Records: { readonly messageId: string; readonly body: string }[];
}
interface LambdaContext {
  getRemainingTimeInMillis(): number;
}

/** The settings both handlers of this page share. */
export interface OrderHandlerSettings {
  readonly client: DynamoDBClient;
  readonly documentClient: DynamoDBDocumentClient;
  /** The table the Powertools idempotency records are in (partition key `id`). */
  readonly idempotencyTable: string;
  readonly ordersTable: string;
}

/** The idempotency settings of the Powertools consumer, also read by the switch. */
export const powertoolsConfig = () =>
  new IdempotencyConfig({
    eventKeyJmesPath: 'orderId',
    payloadValidationJmesPath: 'amount',
    throwOnNoIdempotencyKey: true,
    useLocalCache: true,
    expiresAfterSeconds: 3600,
  });

/** The key prefix of the Powertools records (default: the function name). */
export const POWERTOOLS_KEY_PREFIX = 'orders';

export function createPowertoolsHandler({
  client,
  documentClient,
  idempotencyTable,
  ordersTable,
}: OrderHandlerSettings) {
  const processor = new BatchProcessor(EventType.SQS);
  const config = powertoolsConfig();
  const persistenceStore = new DynamoDBPersistenceLayer({
    tableName: idempotencyTable,
    awsSdkV3Client: client,
  });

  const recordOrder = makeIdempotent(
    async (order: Order) => {
      await documentClient.send(
        new PutCommand({ TableName: ordersTable, Item: { pk: order.orderId, amount: order.amount } }),
      );
    },
    { persistenceStore, config, keyPrefix: POWERTOOLS_KEY_PREFIX },
  );
  const recordHandler = async (record: { body: string }) => recordOrder(JSON.parse(record.body) as Order);

  return async (event: SqsEvent, context: LambdaContext) => {
    config.registerLambdaContext(context as never);
    return processPartialResponse(event, recordHandler, processor, { context: context as never });
  };
}
