/**
 * A DynamoDB stand-in under the real AWS SDK: a `requestHandler` for `DynamoDBClient` that
 * reads the operation from the `X-Amz-Target` header and the JSON request body, applies it to a
 * tiny in-memory table, and answers with the HTTP response DynamoDB would send (`{}` for a
 * write, a 400 `ConditionalCheckFailedException` carrying `Item` for a failed condition, a 400
 * `TransactionCanceledException` with `CancellationReasons`, `GetItem`'s `Item`, ...).
 * Serialization, signing, retries and deserialization all run for real; only the network is
 * gone. Every answer also carries the capacity it would consume (see `capacity.ts`).
 */

import { itemSize, readUnits, transactionalWriteUnits, writeUnits } from './capacity';
import {
  type AttributeValue,
  applyUpdate,
  checkUnusedPlaceholders,
  type ExpressionContext,
  ExpressionValidationError,
  evaluateCondition,
  type Item,
} from './expressions';

/** Key attribute names per table (partition key, then sort key if any). */
export type TableSchemas = Readonly<Record<string, readonly string[]>>;

/** Items by table, shared by every client of one benchmark "region". */
export interface StubTable {
  readonly schemas: TableSchemas;
  get(table: string, key: Item): Item | undefined;
  set(table: string, item: Item): void;
  delete(table: string, key: Item): void;
  /** The key attributes of `item` in `table`; throws for an unknown table or a missing key. */
  keyOf(table: string, item: Item): Item;
  /** Number of items across tables. */
  size(): number;
  clear(): void;
}

/** Creates an empty set of tables with the given key schemas. */
export function createStubTable(schemas: TableSchemas): StubTable {
  const tables = new Map<string, Map<string, Item>>();
  const keyString = (table: string, key: Item): string => {
    const schema = schemas[table];
    if (!schema) throw new StubError('ResourceNotFoundException', 'Requested resource not found');
    return JSON.stringify(schema.map((name) => key[name] ?? null));
  };
  const tableOf = (table: string): Map<string, Item> => {
    let items = tables.get(table);
    if (!items) {
      items = new Map();
      tables.set(table, items);
    }
    return items;
  };
  return {
    schemas,
    get: (table, key) => tables.get(table)?.get(keyString(table, key)),
    set: (table, item) => {
      tableOf(table).set(keyString(table, item), item);
    },
    delete: (table, key) => {
      tables.get(table)?.delete(keyString(table, key));
    },
    keyOf(table, item) {
      const schema = schemas[table];
      if (!schema) throw new StubError('ResourceNotFoundException', 'Requested resource not found');
      const key: Record<string, AttributeValue> = {};
      for (const name of schema) {
        const value = item[name];
        if (value === undefined) {
          throw new StubError(
            'ValidationException',
            `One or more parameter values were invalid: Missing the key ${name} in the item`,
          );
        }
        key[name] = value;
      }
      return key;
    },
    size: () => [...tables.values()].reduce((sum, items) => sum + items.size, 0),
    clear: () => tables.clear(),
  };
}

/** A DynamoDB error answer (HTTP 400 with `__type`). */
export class StubError extends Error {
  constructor(
    readonly type: string,
    message: string,
    readonly extra: Readonly<Record<string, unknown>> = {},
  ) {
    super(message);
  }
}

/** What the stub answers to one request. */
export interface StubAnswer {
  readonly status: number;
  /** Tables of the items this request wrote (one entry per item written). */
  readonly written: readonly string[];
  readonly body: Readonly<Record<string, unknown>>;
  readonly writeUnits: number;
  readonly readUnits: number;
}

type Input = Readonly<Record<string, unknown>>;

const CONDITION_FAILED = 'The conditional request failed';

function contextOf(input: Input): ExpressionContext {
  return {
    names: input.ExpressionAttributeNames as ExpressionContext['names'],
    values: input.ExpressionAttributeValues as ExpressionContext['values'],
  };
}

function returnsOldOnFailure(input: Input): boolean {
  return input.ReturnValuesOnConditionCheckFailure === 'ALL_OLD';
}

/** One write of a single-item or transactional request, evaluated but not yet applied. */
interface PlannedWrite {
  readonly table: string;
  readonly key: Item;
  readonly before: Item | undefined;
  /** `undefined`: the item is deleted (or, for a condition check, left alone). */
  readonly after: Item | undefined;
  readonly touches: boolean;
  readonly passed: boolean;
  readonly returnOld: boolean;
}

function plan(
  table: StubTable,
  kind: 'Put' | 'Update' | 'Delete' | 'ConditionCheck',
  input: Input,
): PlannedWrite {
  const tableName = String(input.TableName);
  const key = table.keyOf(tableName, (kind === 'Put' ? input.Item : input.Key) as Item);
  const before = table.get(tableName, key);
  const context = contextOf(input);
  const condition = input.ConditionExpression as string | undefined;
  let passed: boolean;
  let after: Item | undefined;
  try {
    checkUnusedPlaceholders([condition, input.UpdateExpression as string | undefined], context);
    passed = evaluateCondition(condition, before, context);
    if (kind === 'Put') after = input.Item as Item;
    else if (kind === 'Update') after = applyUpdate(String(input.UpdateExpression), before, key, context);
    else if (kind === 'ConditionCheck') after = before;
  } catch (error) {
    // What DynamoDB rejects (an undefined or unused placeholder, a wrong operand type) it answers
    // as a ValidationException; syntax the interpreter lacks stays a thrown Error.
    if (error instanceof ExpressionValidationError) throw new StubError('ValidationException', error.message);
    throw error;
  }
  return {
    table: tableName,
    key,
    before,
    after,
    touches: kind !== 'ConditionCheck',
    passed,
    returnOld: returnsOldOnFailure(input),
  };
}

function apply(table: StubTable, write: PlannedWrite): void {
  if (!write.touches) return;
  if (write.after) table.set(write.table, write.after);
  else table.delete(write.table, write.key);
}

function singleWrite(table: StubTable, kind: 'Put' | 'Update' | 'Delete', input: Input): StubAnswer {
  const write = plan(table, kind, input);
  if (!write.passed) {
    throw new StubError('ConditionalCheckFailedException', CONDITION_FAILED, {
      ...(write.returnOld && write.before ? { Item: write.before } : {}),
      writeUnits: writeUnits(itemSize(write.before)),
    });
  }
  apply(table, write);
  const body: Record<string, unknown> = {};
  const returnValues = input.ReturnValues;
  if (returnValues === 'ALL_OLD' && write.before) body.Attributes = write.before;
  if (returnValues === 'ALL_NEW' && write.after) body.Attributes = write.after;
  return {
    status: 200,
    written: [write.table],
    body,
    writeUnits: writeUnits(itemSize(write.before), itemSize(write.after)),
    readUnits: 0,
  };
}

function transactWrite(table: StubTable, input: Input): StubAnswer {
  const actions = (input.TransactItems ?? []) as readonly Readonly<Record<string, Input>>[];
  if (actions.length === 0 || actions.length > 100) {
    throw new StubError('ValidationException', 'TransactItems must have length between 1 and 100');
  }
  const writes = actions.map((action) => {
    const kind = (['Put', 'Update', 'Delete', 'ConditionCheck'] as const).find((k) => action[k]);
    if (!kind) throw new StubError('ValidationException', 'A transact item needs exactly one action');
    return plan(table, kind, action[kind]!);
  });
  const targets = new Set(writes.map((write) => `${write.table}|${JSON.stringify(write.key)}`));
  if (targets.size !== writes.length) {
    throw new StubError(
      'ValidationException',
      'Transaction request cannot include multiple operations on one item',
    );
  }
  if (writes.some((write) => !write.passed)) {
    const reasons = writes.map((write) =>
      write.passed
        ? { Code: 'None' }
        : {
            Code: 'ConditionalCheckFailed',
            Message: CONDITION_FAILED,
            ...(write.returnOld && write.before ? { Item: write.before } : {}),
          },
    );
    throw new StubError(
      'TransactionCanceledException',
      `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons
        .map((reason) => reason.Code)
        .join(', ')}]`,
      {
        CancellationReasons: reasons,
        writeUnits: writes.reduce((sum, w) => sum + writeUnits(itemSize(w.before), itemSize(w.after)), 0),
      },
    );
  }
  for (const write of writes) apply(table, write);
  return {
    status: 200,
    written: writes.filter((write) => write.touches).map((write) => write.table),
    body: {},
    writeUnits: writes.reduce(
      (sum, write) => sum + transactionalWriteUnits(itemSize(write.before), itemSize(write.after)),
      0,
    ),
    readUnits: 0,
  };
}

function getItem(table: StubTable, input: Input): StubAnswer {
  const tableName = String(input.TableName);
  const item = table.get(tableName, table.keyOf(tableName, input.Key as Item));
  return {
    status: 200,
    written: [],
    body: item ? { Item: item } : {},
    writeUnits: 0,
    readUnits: readUnits(itemSize(item), input.ConsistentRead === true),
  };
}

/**
 * Applies one DynamoDB operation to `table` and returns DynamoDB's answer. Pure apart from the
 * table; used by the request handler and by the unit tests.
 */
export function answerOperation(table: StubTable, operation: string, input: Input): StubAnswer {
  try {
    switch (operation) {
      case 'PutItem':
        return singleWrite(table, 'Put', input);
      case 'UpdateItem':
        return singleWrite(table, 'Update', input);
      case 'DeleteItem':
        return singleWrite(table, 'Delete', input);
      case 'GetItem':
        return getItem(table, input);
      case 'TransactWriteItems':
        return transactWrite(table, input);
      default:
        throw new StubError('UnknownOperationException', `The stub does not implement ${operation}`);
    }
  } catch (error) {
    if (!(error instanceof StubError)) throw error;
    const { writeUnits: units, ...extra } = error.extra as { writeUnits?: number };
    const messageField = error.type === 'TransactionCanceledException' ? 'Message' : 'message';
    return {
      status: 400,
      written: [],
      body: {
        __type: `com.amazonaws.dynamodb.v20120810#${error.type}`,
        [messageField]: error.message,
        ...extra,
      },
      writeUnits: units ?? 0,
      readUnits: 0,
    };
  }
}

/** The part of the SDK's `HttpRequest` the stub reads. */
export interface StubHttpRequest {
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: unknown;
}

/** Requests and capacity, as seen by one request handler. */
export interface StubUsage {
  /** Requests by operation (`PutItem`, `TransactWriteItems`, ...). */
  readonly requests: Readonly<Record<string, number>>;
  readonly totalRequests: number;
  readonly writeUnits: number;
  readonly readUnits: number;
  /** Items written per table. */
  readonly itemsWritten: Readonly<Record<string, number>>;
}

/** One request as the stub received it, for replaying (see `stubCpuMicrosPerPass`). */
export interface RecordedRequest {
  readonly operation: string;
  readonly body: string;
}

/** The HTTP response the stub hands back to the SDK. */
export interface StubHttpResponse {
  readonly statusCode: number;
  readonly headers: Record<string, string>;
  readonly body: Uint8Array;
}

/** The request handler to pass as `requestHandler` to a `DynamoDBClient`. */
export interface StubRequestHandler {
  handle(request: StubHttpRequest): Promise<{ response: StubHttpResponse }>;
  updateHttpClientConfig(): void;
  httpHandlerConfigs(): Record<string, never>;
  destroy(): void;
  usage(): StubUsage;
  resetUsage(): void;
  /** Appends every request from now on to `log` (shared by several handlers to keep their order); `undefined` stops. */
  record(log: RecordedRequest[] | undefined): void;
  /**
   * Holds every response (after the operation is applied) until the returned function is
   * called: a delivery "in flight".
   */
  hold(): () => void;
  /** Resolves once this handler has applied `count` requests since the last reset. */
  whenRequests(count: number): Promise<void>;
}

function bodyText(body: unknown): string {
  if (typeof body === 'string') return body;
  // The SDK hands over a Uint8Array subclass that warns when string methods are called on it.
  if (body instanceof Uint8Array)
    return Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  throw new Error('The stub expects a string or byte request body');
}

/** Everything the stub does for one request: parse, apply, encode the HTTP response. */
export function respond(
  table: StubTable,
  operation: string,
  body: string,
): { readonly answer: StubAnswer; readonly response: StubHttpResponse } {
  const answer = answerOperation(table, operation, JSON.parse(body));
  const bytes = Buffer.from(JSON.stringify(answer.body));
  return {
    answer,
    response: {
      statusCode: answer.status,
      headers: {
        'content-type': 'application/x-amz-json-1.0',
        'content-length': String(bytes.length),
        'x-amzn-requestid': 'STUB',
      },
      body: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength),
    },
  };
}

/**
 * The stub's own CPU cost of answering `passes`, in microseconds per pass: each pass replays
 * its recorded requests in order against a fresh table built by `createTable` (earlier passes
 * set up the state later ones need, for example first deliveries before their duplicates).
 * Replayed `rounds` times in a tight loop; the total over rounds is divided by `rounds`.
 * Measuring this apart, rather than around every request, keeps two `getrusage` calls per
 * request (and the preemption bias of wall-clock timing) out of the measured client CPU.
 */
export function stubCpuMicrosPerPass(
  createTable: () => StubTable,
  passes: readonly (readonly RecordedRequest[])[],
  rounds: number,
): number[] {
  const totals = passes.map(() => 0);
  for (let round = 0; round < rounds; round++) {
    const table = createTable();
    passes.forEach((requests, index) => {
      const started = process.cpuUsage();
      for (const { operation, body } of requests) respond(table, operation, body);
      const used = process.cpuUsage(started);
      totals[index]! += used.user + used.system;
    });
  }
  return totals.map((total) => total / rounds);
}

/**
 * Creates a request handler answering from `table`. Give each client its own handler (they may
 * share the table) to count requests per client.
 *
 * @example
 * const table = createStubTable({ inbox: ['pk'] });
 * const stub = createStubRequestHandler(table);
 * const client = new DynamoDBClient({ region: 'us-east-1', requestHandler: stub as never });
 */
export function createStubRequestHandler(table: StubTable): StubRequestHandler {
  let requests: Record<string, number> = {};
  let itemsWritten: Record<string, number> = {};
  let totalRequests = 0;
  let write = 0;
  let read = 0;
  let log: RecordedRequest[] | undefined;
  let held: Promise<void> | undefined;
  let waiters: { count: number; done: () => void }[] = [];

  return {
    async handle(request) {
      const target = request.headers['x-amz-target'] ?? request.headers['X-Amz-Target'] ?? '';
      const operation = target.slice(target.indexOf('.') + 1);
      const body = bodyText(request.body);
      log?.push({ operation, body });
      const { answer, response } = respond(table, operation, body);
      requests[operation] = (requests[operation] ?? 0) + 1;
      totalRequests += 1;
      write += answer.writeUnits;
      read += answer.readUnits;
      for (const name of answer.written) itemsWritten[name] = (itemsWritten[name] ?? 0) + 1;
      if (waiters.length > 0) {
        const ready = waiters.filter((waiter) => totalRequests >= waiter.count);
        waiters = waiters.filter((waiter) => totalRequests < waiter.count);
        for (const waiter of ready) waiter.done();
      }
      if (held) await held;
      return { response };
    },
    updateHttpClientConfig() {},
    httpHandlerConfigs: () => ({}),
    destroy() {},
    usage: () => ({
      requests: { ...requests },
      totalRequests,
      writeUnits: write,
      readUnits: read,
      itemsWritten: { ...itemsWritten },
    }),
    resetUsage() {
      requests = {};
      itemsWritten = {};
      totalRequests = 0;
      write = 0;
      read = 0;
    },
    record(next) {
      log = next;
    },
    hold() {
      let release: () => void = () => {};
      held = new Promise((done) => {
        release = done;
      });
      return () => {
        held = undefined;
        release();
      };
    },
    whenRequests(count) {
      if (totalRequests >= count) return Promise.resolve();
      return new Promise((done) => waiters.push({ count, done }));
    },
  };
}
