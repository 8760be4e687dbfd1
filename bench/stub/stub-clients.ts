/**
 * SDK clients over the stub: real `DynamoDBClient`s (serialization, SigV4 signing, retries,
 * deserialization) whose request handler answers from an in-memory table.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createStubRequestHandler, type StubRequestHandler, type StubTable } from './dynamodb-stub';

/** A client and the stub handler behind it. */
export interface StubClient {
  readonly client: DynamoDBClient;
  readonly stub: StubRequestHandler;
}

/**
 * Creates a `DynamoDBClient` answering from `table`, with its own request counts. `wrap`, if
 * given, sits between the client and the stub (the request tracer uses it).
 */
export function createStubClient(
  table: StubTable,
  wrap?: (stub: StubRequestHandler) => StubRequestHandler,
): StubClient {
  const stub = createStubRequestHandler(table);
  const client = new DynamoDBClient({
    region: 'us-east-1',
    credentials: { accessKeyId: 'AKIDBENCHMARK', secretAccessKey: 'bench-secret' },
    requestHandler: (wrap ? wrap(stub) : stub) as unknown as DynamoDBClient['config']['requestHandler'],
  });
  return { client, stub };
}
