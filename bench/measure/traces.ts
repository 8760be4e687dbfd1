/**
 * Request traces: the sequence of DynamoDB requests one record makes, or a whole batch (where
 * one request may serve several records), as the stub sees them, for the latency model
 * (`bench/latency-model.ts`). Each request is traced with its operation,
 * its items (table, bytes, conditional or not), DynamoDB's answer, and its step: requests
 * of one step were in flight at the same time, steps ran one after another.
 *
 * To see which requests overlap, the tracer answers each request one event-loop turn late
 * (before and after the stub answers): a request sent while another is still waiting joins
 * its step. Only the traced deliveries pay those turns; nothing else is timed around them.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { itemSize } from '../stub/capacity';
import type { StubHttpRequest, StubRequestHandler } from '../stub/dynamodb-stub';
import type { Item } from '../stub/expressions';
import type { ClientRole } from '../workload';

/** One item a request touches. */
export interface TracedItem {
  readonly table: string;
  /** Bytes of the item a put sends, or of the key the other operations name. */
  readonly bytes: number;
  /** True when the item's write carries a `ConditionExpression`. */
  readonly conditional: boolean;
}

/** One request of a record, as the stub received and answered it. */
export interface TracedRequest {
  /** Who sent it: the deduplication layer or the user's own code. */
  readonly role: ClientRole;
  /** `PutItem`, `UpdateItem`, `GetItem`, `DeleteItem`, `TransactWriteItems`. */
  readonly operation: string;
  readonly items: readonly TracedItem[];
  /** `ok`, or the error DynamoDB answered with (`ConditionalCheckFailedException`, ...). */
  readonly outcome: string;
  /** Requests with the same step were in flight together; steps ran in order, from 1. */
  readonly step: number;
}

/** Collects the requests of the clients it wraps. */
export interface RequestTracer {
  /** The `wrap` argument of `createStubClient` for a client of `role`. */
  wrap(role: ClientRole): (stub: StubRequestHandler) => StubRequestHandler;
  /** The requests traced since the last call, in the order they started; starts afresh. */
  take(): TracedRequest[];
}

type Input = Readonly<Record<string, unknown>>;

const ACTIONS = ['Put', 'Update', 'Delete', 'ConditionCheck'] as const;

function bodyText(body: unknown): string {
  if (typeof body === 'string') return body;
  if (body instanceof Uint8Array)
    return Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString();
  throw new Error('The tracer expects a string or byte request body');
}

function itemOf(action: string, input: Input): TracedItem {
  const item = (action === 'Put' ? input.Item : input.Key) as Item | undefined;
  return {
    table: String(input.TableName),
    bytes: itemSize(item),
    conditional: typeof input.ConditionExpression === 'string',
  };
}

/** The items of one request body of `operation`. */
export function itemsOf(operation: string, input: Input): TracedItem[] {
  if (operation === 'TransactWriteItems') {
    return ((input.TransactItems ?? []) as readonly Readonly<Record<string, Input>>[]).map((entry) => {
      const action = ACTIONS.find((name) => entry[name]) ?? 'Put';
      return itemOf(action, entry[action]!);
    });
  }
  return [itemOf(operation === 'PutItem' ? 'Put' : 'Key', input)];
}

function outcomeOf(statusCode: number, body: Uint8Array): string {
  if (statusCode === 200) return 'ok';
  const type = (JSON.parse(Buffer.from(body).toString()) as { __type?: string }).__type ?? 'Unknown';
  return type.slice(type.indexOf('#') + 1);
}

/** Creates a tracer; wrap every client of the traced container with it. */
export function createRequestTracer(): RequestTracer {
  let traced: TracedRequest[] = [];
  let inFlight = 0;
  let step = 0;
  return {
    wrap: (role) => (stub) => ({
      ...stub,
      async handle(request: StubHttpRequest) {
        await nextTurn();
        const joins = inFlight > 0;
        if (!joins) step += 1;
        const mine = step;
        inFlight += 1;
        try {
          const result = await stub.handle(request);
          const target = request.headers['x-amz-target'] ?? request.headers['X-Amz-Target'] ?? '';
          const operation = target.slice(target.indexOf('.') + 1);
          traced.push({
            role,
            operation,
            items: itemsOf(operation, JSON.parse(bodyText(request.body)) as Input),
            outcome: outcomeOf(result.response.statusCode, result.response.body),
            step: mine,
          });
          await nextTurn();
          return result;
        } finally {
          inFlight -= 1;
        }
      },
    }),
    take() {
      // Pushed as they finish; a stable sort by step restores the order they started in.
      const taken = [...traced].sort((a, b) => a.step - b.step);
      traced = [];
      step = 0;
      return taken;
    },
  };
}
