/**
 * Powertools for AWS Lambda idempotency doing the benchmark's business write: `makeIdempotent`
 * over the record handler with the DynamoDB persistence layer, and `processPartialResponse`
 * with a `BatchProcessor` for the SQS batch (records in parallel, as by default). The
 * idempotency key is the same natural key (`orderId` + `status`), and payload validation is on,
 * matching the toolkit's payload fingerprint. No local cache (the default), like the toolkit.
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

/** Creates the Powertools handler. */
export function createPowertoolsHandler(clients: PowertoolsClients, tables: BenchTables): BatchHandler {
  const persistenceStore = new DynamoDBPersistenceLayer({
    tableName: tables.powertools,
    awsSdkV3Client: clients.persistence,
  });
  const config = new IdempotencyConfig({
    eventKeyJmesPath: 'powertools_json(body).[orderId, status]',
    payloadValidationJmesPath: 'powertools_json(body)',
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
