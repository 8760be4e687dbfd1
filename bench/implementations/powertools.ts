/**
 * Powertools for AWS Lambda idempotency doing the benchmark's business write: `makeIdempotent`
 * over the record handler with the DynamoDB persistence layer, and `processPartialResponse`
 * with a `BatchProcessor` for the SQS batch (records in parallel: `processInParallel` defaults
 * to true in `BasePartialProcessor.process`). The idempotency key is the same natural key
 * (`orderId` + `status`). Three configurations are compared: payload validation on and no
 * local cache (parity with the toolkit's fingerprint), the local cache on, and payload
 * validation off (Powertools' documented default).
 */
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { SqsBatchResponse } from '../../lambda';
import type { BatchHandler, BenchTables, OrderEvent } from '../workload';
import { orderItemOf } from '../workload';

/** Clients of the Powertools handler: the persistence layer's, and the user's. */
export interface PowertoolsClients {
  readonly persistence: DynamoDBClient;
  readonly business: DynamoDBDocumentClient;
}

/** Records per idempotency record, in seconds: the toolkit's default TTL, for parity. */
const EXPIRES_AFTER_SECONDS = 15 * 24 * 60 * 60;

/** Which Powertools configuration: the defaults here are the parity row's. */
export interface PowertoolsVariant {
  /** `payloadValidationJmesPath` set to the whole body. @default true */
  readonly validatePayload?: boolean;
  /** `useLocalCache`: completed records cached in the execution environment. @default false */
  readonly useLocalCache?: boolean;
}

/** Creates the Powertools handler in configuration `variant`. */
export function createPowertoolsHandler(
  clients: PowertoolsClients,
  tables: BenchTables,
  variant: PowertoolsVariant = {},
): BatchHandler {
  const persistenceStore = new DynamoDBPersistenceLayer({
    tableName: tables.powertools,
    awsSdkV3Client: clients.persistence,
  });
  const config = new IdempotencyConfig({
    eventKeyJmesPath: 'powertools_json(body).[orderId, status]',
    ...(variant.validatePayload === false ? {} : { payloadValidationJmesPath: 'powertools_json(body)' }),
    ...(variant.useLocalCache === true ? { useLocalCache: true } : {}),
    expiresAfterSeconds: EXPIRES_AFTER_SECONDS,
  });
  const processor = new BatchProcessor(EventType.SQS);
  const processRecord = makeIdempotent(
    async (record: { body: string }) => {
      const item = orderItemOf(JSON.parse(record.body) as OrderEvent);
      await clients.business.send(new PutCommand({ TableName: tables.orders, Item: item }));
    },
    { persistenceStore, config },
  );
  return async (event, context) => {
    config.registerLambdaContext(context as never);
    const response = await processPartialResponse(event as never, processRecord as never, processor, {
      context: context as never,
      throwOnFullBatchFailure: false,
    });
    return response as SqsBatchResponse;
  };
}
