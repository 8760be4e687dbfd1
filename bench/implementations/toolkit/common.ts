/**
 * What every toolkit handler of the benchmark shares: its clients, its options apart from the
 * mode, and the business write. Logging and metrics are off during measurement
 * (`logLevel: 'silent'`, `metrics: false`); real deployments pay for one JSON log line per
 * non-trivial outcome and one EMF line per invocation.
 */
import { type DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { fromBody, type SqsHandlerOptions } from '../../../lambda';
import type { BenchTables, OrderEvent } from '../../workload';
import { orderItemOf } from '../../workload';

/** Clients of a toolkit handler: the toolkit's own, and the one the user's code writes with. */
export interface ToolkitClients {
  readonly toolkit: DynamoDBDocumentClient;
  /** Used by the user's code in marker-only and two-phase modes (effects outside the commit). */
  readonly business: DynamoDBDocumentClient;
}

/** What the toolkit's options look like apart from the mode. */
export type CommonOptions = Omit<SqsHandlerOptions<OrderEvent>, 'mode' | 'handle'>;

/** The options every mode's handler shares (`quiet`: logging and metrics off). */
export function commonOptions(clients: ToolkitClients, tables: BenchTables, quiet: boolean): CommonOptions {
  return {
    consumer: 'bench-orders',
    client: clients.toolkit,
    tableName: tables.inbox,
    dedupKey: fromBody((order: OrderEvent) => [order.orderId, order.status]),
    ...(quiet ? { logLevel: 'silent' as const, metrics: false as const } : {}),
  };
}

/** The user's own business write, outside the toolkit's commit (marker-only and two-phase modes). */
export function businessWriter(clients: ToolkitClients, tables: BenchTables) {
  return async (order: OrderEvent): Promise<void> => {
    await clients.business.send(new PutCommand({ TableName: tables.orders, Item: orderItemOf(order) }));
  };
}
