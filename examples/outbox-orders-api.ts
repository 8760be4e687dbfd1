/**
 * A producer that is not a consumer: an HTTP API (a Lambda function URL) places an order and
 * writes `OrderPlaced` with it, in one transaction, keyed by the request's `Idempotency-Key`. A
 * retried request writes nothing twice; the key reused for another order is refused. Deployed
 * with `outbox.writerEnvironment` and `outbox.grantWrite(fn)`.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createOutboxWriter, OUTBOX_ENV } from 'effectively-once/outbox';

/** What the handler reads of a function URL's request (payload 2.0). */
interface HttpRequest {
  readonly headers?: Readonly<Record<string, string | undefined>>;
  readonly body?: string;
}

const ordersTable = process.env.ORDERS_TABLE!;
const outbox = createOutboxWriter({
  client: DynamoDBDocumentClient.from(new DynamoDBClient({})),
  tableName: process.env[OUTBOX_ENV.tableName]!,
  retentionSeconds: Number(process.env[OUTBOX_ENV.retentionSeconds]),
  producer: 'orders-api',
});

/** The answer to each outcome of a write. */
const STATUS = { written: 201, duplicate: 200, mismatch: 422, 'condition-failed': 409 } as const;

/** The order a request body describes, or `undefined` when it is not JSON of that shape. */
function orderOf(body: string | undefined): { orderId: string; amount: number } | undefined {
  try {
    const { orderId, amount } = JSON.parse(body ?? '') as { orderId?: unknown; amount?: unknown };
    return typeof orderId === 'string' && typeof amount === 'number' ? { orderId, amount } : undefined;
  } catch {
    return undefined;
  }
}

export async function handler(request: HttpRequest) {
  const idempotencyKey = request.headers?.['idempotency-key'];
  const order = orderOf(request.body);
  if (idempotencyKey === undefined || order === undefined) {
    return { statusCode: 400, body: 'Expected an Idempotency-Key and a body { orderId, amount }' };
  }
  const { orderId, amount } = order;
  const result = await outbox.write(
    [{ type: 'OrderPlaced', detail: { orderId, amount }, entity: orderId }],
    [
      {
        // A new order only: another key for an order that exists is `condition-failed`.
        Put: {
          TableName: ordersTable,
          Item: { pk: orderId, status: 'PLACED', amount },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
    ],
    idempotencyKey,
  );
  return { statusCode: STATUS[result.kind], body: JSON.stringify({ orderId, eventIds: result.ids }) };
}
