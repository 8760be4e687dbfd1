/**
 * An outbox feeding an SQS fair queue: the report requests service emits `ReportRequested` with
 * the tenant as its entity, and the `Outbox`, marked `fairQueue`, has its relay send the tenant as
 * the `MessageGroupId` of each message on the report builder's standard queue, which its consumer
 * marks fair too (per-tenant metrics). Synthesize it with
 * `npx cdk synth --app "npx tsx examples/outbox-fair-queue-stack.ts"`.
 */
import * as path from 'node:path';
import { App, Stack, type StackProps } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import { IdempotentConsumer, Outbox } from 'effectively-once/construct';

export class TenantReportsStack extends Stack {
  constructor(scope: Construct, id: string, props?: StackProps) {
    super(scope, id, props);
    const [requests, reports] = ['RequestsTable', 'ReportsTable'].map(
      (name) =>
        new dynamodb.Table(this, name, {
          partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
          billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
          pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
        }),
    ) as [dynamodb.Table, dynamodb.Table];

    // The receiving service's queue is fair: a standard queue whose messages name their tenant.
    const builder = new IdempotentConsumer(this, 'ReportBuilder', {
      mode: 'atomic',
      entry: path.join(__dirname, 'outbox-report-builder.ts'),
      consumerName: 'report-builder',
      fairQueue: true,
      businessTables: [{ table: reports }],
      environment: { REPORTS_TABLE: reports.tableName },
    });
    // So is the outbox feeding it: its relay sends each event's entity as the MessageGroupId.
    const outbox = new Outbox(this, 'ReportEvents', {
      queue: builder.queue,
      fairQueue: true,
      relayName: 'report-events-relay',
    });
    new IdempotentConsumer(this, 'ReportRequests', {
      mode: 'atomic',
      entry: path.join(__dirname, 'outbox-report-requests.ts'),
      consumerName: 'report-requests',
      deadLetterMode: 'direct',
      businessTables: [{ table: requests }],
      environment: { REQUESTS_TABLE: requests.tableName },
      outbox,
    });
  }
}

export const app = new App();
new TenantReportsStack(app, 'TenantReportsStack');
