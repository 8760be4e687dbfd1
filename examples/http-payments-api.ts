/**
 * An API Gateway REST API (payload 1.0) endpoint made safe to retry with an `Idempotency-Key`:
 * `POST /payments` charges once per key and caller. A retry gets the stored response (with
 * `Idempotent-Replayed: true`), a different body under the same key gets 422, and a retry while
 * the first request still runs gets 409 with `Retry-After`.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type ApiGatewayProxyEventV1, createIdempotentHttpHandler } from 'effectively-once/http';

/** The event, with the Lambda authorizer's context this API uses. */
interface PaymentsEvent extends ApiGatewayProxyEventV1 {
  readonly requestContext: { readonly authorizer?: { readonly principalId?: string } | null };
}

interface PaymentRequest {
  readonly amount: number;
  readonly currency: string;
}

const client = DynamoDBDocumentClient.from(new DynamoDBClient({}), {
  marshallOptions: { removeUndefinedValues: true },
});

/** Stands in for the payment provider. */
async function charge(request: PaymentRequest): Promise<{ id: string; amount: number; currency: string }> {
  return { id: `pay_${Date.now().toString(36)}`, ...request };
}

export const handler = createIdempotentHttpHandler({
  consumer: 'payments-api',
  client,
  tableName: 'inbox',
  // A client that charges must send a key.
  required: true,
  // Keys of different customers never meet.
  caller: (request) => request.event.requestContext.authorizer?.principalId,
  handle: async (event: PaymentsEvent) => {
    const request = JSON.parse(event.body ?? '{}') as PaymentRequest;
    if (!(request.amount > 0)) {
      // A 4xx is stored too: the same request gets the same answer.
      return { statusCode: 400, body: JSON.stringify({ message: 'amount must be positive' }) };
    }
    const payment = await charge(request);
    return {
      statusCode: 201,
      headers: { 'Content-Type': 'application/json', Location: `/payments/${payment.id}` },
      body: JSON.stringify(payment),
    };
  },
});
