/**
 * Entity mode: one business item is the whole effect, so it is its own marker (one
 * conditional put). Here, one audit item per CloudEvent.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createSqsHandler, entity, fromCloudEvent } from 'effectively-once';

interface AuditEvent {
  readonly specversion: string;
  readonly id: string;
  readonly source: string;
  readonly type: string;
  readonly data?: unknown;
}

const auditTable = process.env.AUDIT_TABLE!;
const client = DynamoDBDocumentClient.from(new DynamoDBClient({}), {
  marshallOptions: { removeUndefinedValues: true },
});

export const handler = createSqsHandler<AuditEvent>({
  consumer: 'audit-recorder',
  // No inbox table: the audit item is the marker.
  client,
  dedupKey: fromCloudEvent(),
  mode: entity((message) => ({
    tableName: auditTable,
    keyAttribute: 'pk',
    // The scoped key (`audit-recorder#<source>:<id>`) always fits a partition key.
    item: { pk: message.scopedKey, type: message.body.type, data: message.body.data },
  })),
});
