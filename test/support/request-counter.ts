/**
 * Counts the DynamoDB requests a client sends, by operation, so tests can assert the
 * round-trip floor of each mode (DESIGN.md: one request per insert, commit, duplicate).
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/** A client whose requests can be counted. */
export type CountableClient = DynamoDBClient | DynamoDBDocumentClient;

type Stack = DynamoDBClient['middlewareStack'];

/** Request counts by operation (`PutItem`, `TransactWriteItems`, `GetItem`, ...). */
export type RequestCounts = Readonly<Record<string, number>>;

/** A live view of the requests the attached clients sent. */
export interface RequestCounter {
  /** A snapshot of the counts by operation; operations never sent are absent. */
  counts(): RequestCounts;
  /** Requests of one operation (`0` if none). */
  count(operation: string): number;
  /** All requests, every operation. */
  total(): number;
  /** Starts counting from zero again. */
  reset(): void;
  /** Removes the middleware from every attached client. */
  detach(): void;
}

const MIDDLEWARE_NAME = 'effectivelyOnceRequestCounter';

/**
 * Attaches a counting middleware to one or more clients. It sits inside the SDK's retry
 * loop, right next to the transport (step `deserialize`, priority `low`), so every attempt
 * is counted: a throttled request that the SDK retries twice counts three times, as it
 * does on the AWS bill. A fault-injection middleware attached *after* the counter stands
 * in for the server, so its fabricated responses are counted like real ones.
 *
 * With a document client, attach to either the document client or the client it wraps:
 * they share one middleware stack. Operation names drop the `Command` suffix of the
 * low-level command (`PutCommand` is sent as `PutItemCommand`, counted as `PutItem`).
 *
 * @example
 * const counter = attachRequestCounter(documentClient);
 * await store.insert(record, now);
 * expect(counter.counts()).toEqual({ PutItem: 1 });
 */
export function attachRequestCounter(...clients: readonly CountableClient[]): RequestCounter {
  let counts: Record<string, number> = {};
  const stacks = [...new Set(clients.map((client) => client.middlewareStack as Stack))];
  for (const stack of stacks) {
    stack.add(
      (next, context) => async (args) => {
        const operation = (context.commandName ?? 'Unknown').replace(/Command$/, '');
        counts[operation] = (counts[operation] ?? 0) + 1;
        return next(args);
      },
      { step: 'deserialize', priority: 'low', name: MIDDLEWARE_NAME, override: true },
    );
  }
  return {
    counts: () => ({ ...counts }),
    count: (operation) => counts[operation] ?? 0,
    total: () => Object.values(counts).reduce((sum, n) => sum + n, 0),
    reset: () => {
      counts = {};
    },
    detach: () => {
      for (const stack of stacks) stack.remove(MIDDLEWARE_NAME);
    },
  };
}
