/**
 * This toolkit in each of its modes, doing the benchmark's business write. Logging and metrics
 * are off during measurement (`logLevel: 'silent'`, `metrics: false`); real deployments pay for
 * one JSON log line per non-trivial outcome and one EMF line per invocation.
 */
import { type DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { createSqsHandler, fromBody, type SqsHandlerOptions } from '../../lambda';
import { atomic } from '../../lambda/modes/atomic';
import { entity } from '../../lambda/modes/entity';
import { marker } from '../../lambda/modes/marker';
import { twoPhase } from '../../lambda/modes/two-phase';
import type { BatchHandler, BenchTables, OrderEvent } from '../workload';
import { orderItemOf } from '../workload';

/** The toolkit modes the benchmark knows; `two-phase` runs only when the toolkit accepts it. */
export type ToolkitMode = 'marker' | 'atomic' | 'entity' | 'two-phase';

/** Clients of a toolkit handler: the toolkit's own, and the one the user's code writes with. */
export interface ToolkitClients {
  readonly toolkit: DynamoDBDocumentClient;
  /** Used by the user's code in marker-only and two-phase modes (effects outside the commit). */
  readonly business: DynamoDBDocumentClient;
}

/** The part of two-phase mode's `effects` the benchmark uses (declared here while the mode is new). */
interface TwoPhaseEffects {
  run(effect: () => Promise<void>): Promise<unknown>;
}

/** What the toolkit's options look like apart from the mode. */
type Common = Omit<SqsHandlerOptions<OrderEvent>, 'mode' | 'handle'>;

/** Creates the toolkit's handler in `mode`. Throws `INVALID_OPTIONS` for a mode it does not know. */
export function createToolkitHandler(
  mode: ToolkitMode,
  clients: ToolkitClients,
  tables: BenchTables,
  quiet = true,
): BatchHandler {
  const common: Common = {
    consumer: 'bench-orders',
    client: clients.toolkit,
    tableName: tables.inbox,
    dedupKey: fromBody((order: OrderEvent) => [order.orderId, order.status]),
    ...(quiet ? { logLevel: 'silent' as const, metrics: false as const } : {}),
  };
  const putBusinessItem = async (order: OrderEvent): Promise<void> => {
    await clients.business.send(new PutCommand({ TableName: tables.orders, Item: orderItemOf(order) }));
  };
  switch (mode) {
    case 'marker':
      return createSqsHandler<OrderEvent>({
        ...common,
        mode: marker((message) => putBusinessItem(message.body)),
      });
    case 'atomic':
      return createSqsHandler<OrderEvent>({
        ...common,
        mode: atomic((message, unitOfWork) => {
          unitOfWork.put({ TableName: tables.orders, Item: orderItemOf(message.body) });
        }),
      });
    case 'entity':
      return createSqsHandler<OrderEvent>({
        ...common,
        mode: entity((message) => ({
          tableName: tables.orders,
          keyAttribute: 'pk',
          item: orderItemOf(message.body),
        })),
      });
    case 'two-phase':
      // Not in the toolkit's types yet: passed through, and validated by the toolkit at run time.
      return createSqsHandler<OrderEvent>({
        ...common,
        mode: twoPhase({
          // The effect outside the commit runs through `effects.run`: claim, effect, complete.
          handle: (message: { body: OrderEvent }, effects: TwoPhaseEffects) =>
            effects.run(() => putBusinessItem(message.body)),
        }),
      } as unknown as SqsHandlerOptions<OrderEvent>);
  }
}

/** True when the toolkit accepts `mode` (two-phase is being written alongside this benchmark). */
export function isToolkitModeAvailable(
  mode: ToolkitMode,
  clients: ToolkitClients,
  tables: BenchTables,
): boolean {
  try {
    createToolkitHandler(mode, clients, tables);
    return true;
  } catch {
    return false;
  }
}
