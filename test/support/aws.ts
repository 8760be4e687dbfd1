import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';

/** Connection settings for the local AWS endpoint the integration global setup started (or was given). */
export interface LocalAwsConfig {
  readonly endpoint: string;
  readonly region: string;
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
}

declare module 'vitest' {
  export interface ProvidedContext {
    awsEndpoint: string;
  }
}

/**
 * Client configuration for the local AWS endpoint. Pass it to any SDK v3 client:
 * `new DynamoDBClient(awsConfig())`.
 */
export function awsConfig(): LocalAwsConfig {
  const endpoint = inject('awsEndpoint') ?? process.env.AWS_ENDPOINT_URL;
  if (!endpoint) {
    throw new Error('No local AWS endpoint: run integration tests through the vitest global setup.');
  }
  return {
    endpoint,
    region: process.env.AWS_REGION ?? 'us-east-1',
    credentials: {
      accessKeyId: process.env.AWS_ACCESS_KEY_ID ?? 'test',
      secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY ?? 'test',
    },
  };
}

/** A resource name unique to this test run, so test files never share mutable resources. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
}
