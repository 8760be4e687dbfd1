/**
 * A Lambda function URL (payload 2.0; HTTP APIs look the same) with an optional
 * `Idempotency-Key`: a request without the header runs as usual, one with it runs once per key.
 * The fingerprint ignores a volatile `sentAt` field of the body, and keys are remembered for an
 * hour.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type ApiGatewayProxyEventV2, createIdempotentHttpHandler } from 'effectively-once/http';

const client = DynamoDBDocumentClient.from(new DynamoDBClient({}), {
  marshallOptions: { removeUndefinedValues: true },
});

interface SignupBody {
  readonly email: string;
  readonly sentAt?: string;
}

export const handler = createIdempotentHttpHandler({
  consumer: 'signup-url',
  client,
  tableName: 'inbox',
  ttlSeconds: 3600,
  // Two sends of the same signup differ only in `sentAt`: same request.
  fingerprint: (request) => {
    const { sentAt: _ignored, ...body } = JSON.parse(request.body || '{}') as SignupBody;
    return { method: request.method, path: request.path, body };
  },
  handle: async (event: ApiGatewayProxyEventV2) => {
    const { email } = JSON.parse(event.body ?? '{}') as SignupBody;
    // The payload 2.0 shorthand: API Gateway answers 200 with this object as JSON.
    return { welcome: email };
  },
});
