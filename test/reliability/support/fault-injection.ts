/**
 * Fault injection on real DynamoDB clients, through SDK middleware: the request either never
 * leaves the process (a fabricated throttling or conflict response, deserialised by the SDK
 * into a genuine service exception), or it reaches the emulator and something goes wrong
 * afterwards (the response is lost, or the process "crashes").
 *
 * A crash is a `SimulatedCrash` thrown out of the SDK call after the controller has been told
 * (`crash`). From then on `isCrashed()` is true and every later request of that invocation is
 * refused before it is sent, so nothing after the crash point reaches DynamoDB: that is what a
 * dead process looks like from the database. The simulated Lambda runtime then discards
 * whatever the handler returns (see `simulation.ts`).
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/** The error a crash throws. Recognised by name (see `isSimulatedCrash`). */
export class SimulatedCrash extends Error {
  override readonly name = 'SimulatedCrash';
}

/** True for the error a simulated crash throws. */
export function isSimulatedCrash(error: unknown): boolean {
  return (error as { name?: unknown } | null)?.name === 'SimulatedCrash';
}

/** One DynamoDB request, as the caller gave it (document shape with a document client). */
export interface DynamoRequest {
  /** Operation without the `Command` suffix: `PutItem`, `TransactWriteItems`, ... */
  readonly operation: string;
  readonly input: Readonly<Record<string, unknown>>;
}

/**
 * The throttling errors DynamoDB documents for data-plane requests. The SDK's standard retry
 * strategy treats all three as throttling (`THROTTLING_ERROR_CODES` in `@smithy/core`'s retry
 * module): with `maxAttempts` above 1 it sends the request again after a throttling backoff
 * (a random delay up to 1 s, doubling per retry); `TransactionConflictException` and
 * `TransactionCanceledException` are not retried by the SDK at all.
 */
export const THROTTLE_CODES = [
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
] as const;

/** One of {@link THROTTLE_CODES}. */
export type ThrottleCode = (typeof THROTTLE_CODES)[number];

/**
 * What happens to one request:
 * - `throttle`, `conflict`: the first attempt is answered in-process with a throttling error
 *   (`code`, `ThrottlingException` unless given) or a transaction conflict
 *   (`TransactionCanceledException` with a `TransactionConflict` reason for
 *   `TransactWriteItems`, on the item at `item` or else the last one;
 *   `TransactionConflictException` otherwise); it never reaches DynamoDB. A throttle with
 *   `applied` reaches DynamoDB first and is applied there, and the caller still sees the
 *   throttling error (the write happened; an SDK retry then meets it);
 * - `lost-response`: the first attempt reaches DynamoDB, then its response is replaced by a
 *   connection reset;
 * - `lost-response-retried`: the first attempt reaches DynamoDB, its response is lost, and the
 *   identical request is sent again at once, as the SDK's standard retry does (whatever the
 *   client's `maxAttempts`); the caller sees the retry's answer;
 * - `late-duplicate`: the request is answered as usual, and an identical copy of it (a first
 *   attempt the SDK gave up on, still on its way) reaches DynamoDB later, when the controller
 *   sends it (`onLateDuplicate`): after the next step on the same record, say;
 * - `hold`: the request waits for `until` before it is sent (a heartbeat delayed on the network
 *   past the end of its effect);
 * - `crash-before`: the process dies before the request is sent;
 * - `crash-after`: the request completes on DynamoDB (whatever its result), then the process dies.
 */
export type RequestFault =
  | { readonly kind: 'throttle'; readonly code?: ThrottleCode; readonly applied?: boolean }
  | { readonly kind: 'conflict'; readonly item?: number }
  | { readonly kind: 'lost-response' }
  | { readonly kind: 'lost-response-retried' }
  | { readonly kind: 'late-duplicate' }
  | { readonly kind: 'hold'; readonly until: Promise<void> }
  | { readonly kind: 'crash-before'; readonly label: string }
  | { readonly kind: 'crash-after'; readonly label: string };

/** The faults of one commit request, each named as the fault tests name it. */
export const COMMIT_FAULTS = {
  throttled: { kind: 'throttle' },
  conflicted: { kind: 'conflict' },
  'its response lost': { kind: 'lost-response' },
  'its response lost and the SDK retrying it': { kind: 'lost-response-retried' },
  'a late copy landing after its answer': { kind: 'late-duplicate' },
  'the process dying before it is sent': { kind: 'crash-before', label: 'commit' },
  'the process dying after it completed': { kind: 'crash-after', label: 'commit' },
} as const satisfies Record<string, RequestFault>;

/** The name of one of {@link COMMIT_FAULTS}. */
export type CommitFaultName = keyof typeof COMMIT_FAULTS;

/** Decides faults and records crashes; usually one per simulated Lambda instance. */
export interface FaultController {
  /** The fault of one request (called once per `send`, outside the SDK's retry loop). */
  decide(request: DynamoRequest): RequestFault | undefined;
  /** True when the invocation sending requests right now has crashed. */
  isCrashed(): boolean;
  /** A crash fires now, at the point `label`; the invocation must count as dead from here on. */
  crash(label: string, request: DynamoRequest): void;
  /**
   * Every attempt that reached DynamoDB, with the HTTP status it answered. `repeated` is true
   * when an earlier attempt of the same send, with the same input, was already answered 200: an SDK retry of a
   * `TransactWriteItems` after a lost response carries the same `ClientRequestToken`, and
   * DynamoDB answers it 200 again without applying it twice. `sent` is the input DynamoDB
   * received: after any tampering of a deliberately broken client, in `AttributeValue` form.
   */
  onServerResponse?(
    request: DynamoRequest,
    statusCode: number,
    repeated: boolean,
    sent: Readonly<Record<string, unknown>>,
  ): void;
  /**
   * A `late-duplicate` request was answered; `send` sends its identical copy (once) and resolves
   * to the HTTP status DynamoDB answered it. The controller decides when, and must await it
   * before the run ends. Without this method the copy is never sent.
   */
  onLateDuplicate?(request: DynamoRequest, send: () => Promise<number>): void;
}

type Stack = DynamoDBClient['middlewareStack'];

const CRASH_MIDDLEWARE = 'reliabilityCrash';
const FAULT_MIDDLEWARE = 'reliabilityFaults';

interface SendState {
  readonly request: DynamoRequest;
  readonly fault: RequestFault | undefined;
  attempts: number;
  /**
   * The inputs of the attempts answered 200: the SDK's retries and a lost response's resend carry
   * the same input object again, a repeat; a request rewritten and sent again carries another.
   */
  readonly succeeded: Set<unknown>;
}

/** An error response as DynamoDB would send it, for the SDK to deserialise. */
function fabricatedResponse(type: string, extra: Record<string, unknown> = {}) {
  const body = JSON.stringify({
    __type: `com.amazonaws.dynamodb.v20120810#${type}`,
    message: `${type} (injected)`,
    ...extra,
  });
  return {
    statusCode: 400,
    headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'injected' },
    body: new TextEncoder().encode(body),
  };
}

function conflictResponse(request: DynamoRequest, item?: number) {
  if (request.operation !== 'TransactWriteItems') return fabricatedResponse('TransactionConflictException');
  const items = (request.input.TransactItems as unknown[] | undefined)?.length ?? 1;
  // By default the marker at index 0 went through; another writer held the last item of the
  // transaction. A commit racing a concurrent delivery conflicts on the marker they share.
  const conflicted = item ?? items - 1;
  const reasons = Array.from({ length: items }, (_, i) => ({
    Code: i === conflicted ? 'TransactionConflict' : 'None',
  }));
  return fabricatedResponse('TransactionCanceledException', {
    Message: 'Transaction cancelled, please refer cancellation reasons for specific reasons (injected)',
    CancellationReasons: reasons,
  });
}

/**
 * Reads a response nobody will see to its end, so its connection goes back to the client's pool:
 * an unread body holds its socket until the server drops the idle connection, and enough of them
 * leave every later request of the client waiting for a socket (a whole process stalled for a
 * minute when several invocations shared one client).
 */
function discard(result: { readonly response: unknown }): void {
  (result.response as { body?: { resume?: () => void } } | undefined)?.body?.resume?.();
}

function connectionReset(): Error {
  return Object.assign(new Error('socket hang up (injected: the response was lost)'), { code: 'ECONNRESET' });
}

/**
 * Attaches fault injection to a client (a document client shares its stack with the client it
 * wraps: attach once). Two middlewares:
 *
 * - step `initialize` (outside the SDK's retry loop): refuses requests of a crashed invocation,
 *   asks the controller for the request's fault, fires `crash-before` and `crash-after`;
 * - step `deserialize`, priority `low` (inside the retry loop, next to the transport): answers
 *   `throttle` and `conflict` in-process on the first attempt, loses the first response for
 *   `lost-response` (and sends the request again for `lost-response-retried`), hands the copy
 *   of a `late-duplicate` to the controller, reports every real response to
 *   `onServerResponse`, and refuses to send once the invocation has crashed (an SDK retry after
 *   a crash never goes out; a late duplicate already on its way still lands).
 *
 * Attach it after a request counter if fabricated responses should be counted.
 */
export function attachFaultInjection(
  client: DynamoDBClient | DynamoDBDocumentClient,
  controller: FaultController,
): void {
  const stack = client.middlewareStack as Stack;
  const sends = new WeakMap<object, SendState>();

  stack.add(
    (next, context) => async (args) => {
      const request: DynamoRequest = {
        operation: (context.commandName ?? 'Unknown').replace(/Command$/, ''),
        input: args.input as Record<string, unknown>,
      };
      if (controller.isCrashed())
        throw new SimulatedCrash(`${request.operation} refused: the invocation crashed`);
      const fault = controller.decide(request);
      sends.set(context, { request, fault, attempts: 0, succeeded: new Set() });
      if (fault?.kind === 'crash-before') {
        controller.crash(fault.label, request);
        throw new SimulatedCrash(`crashed before ${request.operation} (${fault.label})`);
      }
      // Delayed on the way: sent once `until` resolves, whatever happened meanwhile.
      if (fault?.kind === 'hold') await fault.until;
      if (fault?.kind !== 'crash-after') return next(args);
      // The request reaches DynamoDB and completes there; its answer never reaches the caller.
      await next(args).catch(() => undefined);
      controller.crash(fault.label, request);
      throw new SimulatedCrash(`crashed after ${request.operation} (${fault.label})`);
    },
    { step: 'initialize', priority: 'high', name: CRASH_MIDDLEWARE, override: true },
  );

  stack.add(
    (next, context) => async (args) => {
      const state = sends.get(context);
      if (state === undefined) return next(args);
      if (controller.isCrashed()) {
        throw new SimulatedCrash(`${state.request.operation} attempt refused: the invocation crashed`);
      }
      state.attempts += 1;
      const first = state.attempts === 1;
      const kind = state.fault?.kind;
      const attempt = async () => {
        const result = await next(args);
        const statusCode = (result.response as { statusCode?: number }).statusCode ?? 0;
        // A request sent again rewritten (a deliberately broken store) is not a repeat.
        controller.onServerResponse?.(
          state.request,
          statusCode,
          state.succeeded.has(args.input),
          args.input as Record<string, unknown>,
        );
        if (statusCode === 200) state.succeeded.add(args.input);
        return { result, statusCode };
      };
      const fault = state.fault;
      if (first && fault?.kind === 'throttle') {
        // Applied, then throttled: DynamoDB wrote it; the caller sees only the throttling error.
        if (fault.applied) discard((await attempt()).result);
        return {
          response: fabricatedResponse(fault.code ?? 'ThrottlingException'),
          output: undefined,
        } as unknown as Awaited<ReturnType<typeof next>>;
      }
      if (first && fault?.kind === 'conflict') {
        return {
          response: conflictResponse(state.request, fault.item),
          output: undefined,
        } as unknown as Awaited<ReturnType<typeof next>>;
      }
      const { result } = await attempt();
      if (first && kind === 'lost-response') {
        discard(result);
        throw connectionReset();
      }
      // The SDK's retry of an attempt whose response was lost: the same request, signed the same.
      if (first && kind === 'lost-response-retried') {
        discard(result);
        return (await attempt()).result;
      }
      if (first && kind === 'late-duplicate') {
        let sent = false;
        controller.onLateDuplicate?.(state.request, async () => {
          if (sent) return 0;
          sent = true;
          return (await attempt()).statusCode;
        });
      }
      return result;
    },
    { step: 'deserialize', priority: 'low', name: FAULT_MIDDLEWARE, override: true },
  );
}

/** A value in document shape, whether it came in document or raw `AttributeValue` shape. */
export function plainOf(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const raw = value as { S?: string; N?: string; BOOL?: boolean; L?: unknown[]; M?: Record<string, unknown> };
  if (raw.S !== undefined) return raw.S;
  if (raw.N !== undefined) return Number(raw.N);
  if (raw.BOOL !== undefined) return raw.BOOL;
  if (raw.L !== undefined) return raw.L.map(plainOf);
  if (raw.M !== undefined) return Object.fromEntries(Object.entries(raw.M).map(([k, v]) => [k, plainOf(v)]));
  return value;
}

/** One write a request makes to an item: its key, and the item put or the values an update uses. */
export interface TableWrite {
  readonly pk: string;
  /** A put's item, or an update's expression attribute values, in document shape. */
  readonly values: Readonly<Record<string, unknown>>;
}

/**
 * The puts and updates a request (as sent: `onServerResponse`'s `sent`) makes on `tableName`:
 * each item of a `TransactWriteItems`, or a `PutItem` or `UpdateItem` on it. Read in commit order
 * from the 200 answers, they are the effects DynamoDB applied.
 */
export function writesOn(
  operation: string,
  sent: Readonly<Record<string, unknown>>,
  tableName: string,
): TableWrite[] {
  type Write = {
    TableName?: string;
    Item?: Record<string, unknown>;
    Key?: unknown;
    ExpressionAttributeValues?: Record<string, unknown>;
  };
  const plain = (values: Record<string, unknown> | undefined) =>
    Object.fromEntries(Object.entries(values ?? {}).map(([name, value]) => [name, plainOf(value)]));
  const writeOf = (write: Write | undefined, put: boolean): TableWrite[] => {
    if (write?.TableName !== tableName) return [];
    const pk = pkOf(put ? write.Item : write.Key);
    return pk === undefined
      ? []
      : [{ pk, values: plain(put ? write.Item : write.ExpressionAttributeValues) }];
  };
  switch (operation) {
    case 'TransactWriteItems':
      return ((sent.TransactItems ?? []) as { Put?: Write; Update?: Write }[]).flatMap((item) =>
        item.Put !== undefined ? writeOf(item.Put, true) : writeOf(item.Update, false),
      );
    case 'PutItem':
      return writeOf(sent as Write, true);
    case 'UpdateItem':
      return writeOf(sent as Write, false);
    default:
      return [];
  }
}

/** The partition key `pk` of an item or key, in document or raw `AttributeValue` shape. */
export function pkOf(itemOrKey: unknown): string | undefined {
  const pk = (itemOrKey as { pk?: unknown } | undefined)?.pk;
  if (typeof pk === 'string') return pk;
  const raw = (pk as { S?: unknown } | undefined)?.S;
  return typeof raw === 'string' ? raw : undefined;
}

/** What an `UpdateItem` of an inbox record does, told by the values its expressions use. */
export type InboxUpdate = 'release' | 'complete' | 'extend' | 'replace';

/** The role of a request in the toolkit's protocol, and the key it is about. */
export type RequestRole =
  /** The claim: the marker write (`TransactWriteItems` with the marker at 0, or a conditional put). */
  | { readonly role: 'claim'; readonly pk: string; readonly tableName: string }
  /**
   * An `UpdateItem`: a business write outside the transaction (marker mode's effect) when
   * `update` is absent, else an update of an inbox record (see {@link InboxUpdate}).
   */
  | {
      readonly role: 'effect';
      readonly pk: string;
      readonly tableName: string;
      readonly update?: InboxUpdate;
    }
  | { readonly role: 'other' };

/**
 * The inbox update an `UpdateItem` makes: a complete sets the status to `:completed`, a release
 * sets the lease to `:released`, a heartbeat sets `:leaseExpiresAt`, a checkpoint (`replace`)
 * sets `:fingerprint`. `undefined` for anything else (a business write).
 */
export function inboxUpdateOf(input: Readonly<Record<string, unknown>>): InboxUpdate | undefined {
  const expression = typeof input.UpdateExpression === 'string' ? input.UpdateExpression : '';
  if (expression.includes(':completed')) return 'complete';
  if (expression.includes(':released')) return 'release';
  if (expression.includes(':leaseExpiresAt')) return 'extend';
  if (/#fingerprint\s*=\s*:fingerprint/.test(expression)) return 'replace';
  return undefined;
}

/**
 * Every role of a request: a `TransactWriteItems` shared by several messages (atomic mode's batch
 * commit) is a claim of each marker in it, the puts on the table of its first put (the inbox
 * table: business writes go elsewhere); any other request has the one role `roleOf` gives it.
 */
export function rolesOf(request: DynamoRequest): RequestRole[] {
  const first = roleOf(request);
  if (request.operation !== 'TransactWriteItems' || first.role !== 'claim') return [first];
  const items = (request.input.TransactItems ?? []) as { Put?: { TableName?: string; Item?: unknown } }[];
  return items.flatMap((item) => {
    const pk = item.Put?.TableName === first.tableName ? pkOf(item.Put.Item) : undefined;
    return pk === undefined ? [] : [{ role: 'claim', pk, tableName: first.tableName } as const];
  });
}

/**
 * Classifies a request: `TransactWriteItems` and conditional `PutItem` are claims (keyed by the
 * marker's or the entity's `pk`), `UpdateItem` is an effect (on the inbox table, a release,
 * which keeps the record as a released claim, a two-phase complete or lease extension, or a
 * checkpoint: `update` says which), anything else (fallback reads) `other`. The store deletes
 * nothing.
 */
export function roleOf(request: DynamoRequest): RequestRole {
  const input = request.input as {
    TableName?: string;
    Item?: unknown;
    Key?: unknown;
    TransactItems?: { Put?: { TableName?: string; Item?: unknown } }[];
  };
  switch (request.operation) {
    case 'TransactWriteItems': {
      const marker = input.TransactItems?.[0]?.Put;
      const pk = pkOf(marker?.Item);
      return pk === undefined ? { role: 'other' } : { role: 'claim', pk, tableName: marker?.TableName ?? '' };
    }
    case 'PutItem': {
      const pk = pkOf(input.Item);
      return pk === undefined ? { role: 'other' } : { role: 'claim', pk, tableName: input.TableName ?? '' };
    }
    case 'UpdateItem': {
      const pk = pkOf(input.Key);
      if (pk === undefined) return { role: 'other' };
      const update = inboxUpdateOf(request.input);
      return { role: 'effect', pk, tableName: input.TableName ?? '', ...(update ? { update } : {}) };
    }
    default:
      return { role: 'other' };
  }
}

/** True for one of the throttling errors DynamoDB documents ({@link THROTTLE_CODES}). */
export function isThrottle(error: unknown): boolean {
  const name = (error as { name?: unknown } | null)?.name;
  return THROTTLE_CODES.some((code) => code === name);
}

/** True for a cancelled transaction one of whose reasons is `TransactionConflict`. */
export function isTransactionConflict(error: unknown): boolean {
  const reasons = (error as { CancellationReasons?: { Code?: string }[] } | null)?.CancellationReasons;
  return reasons?.some((reason) => reason.Code === 'TransactionConflict') ?? false;
}

/**
 * A deliberately broken store, to prove an oracle sees what it breaks: a `TransactWriteItems`
 * that fails with `isFailure` is taken for one that did not happen (or for one that did) and
 * `handle` decides what comes instead: for example sending it again rewritten (`resend`).
 * Inside the fault injection's crash and fault decisions, outside the SDK's retries.
 */
export function tamperFailedTransactions(
  client: DynamoDBClient | DynamoDBDocumentClient,
  isFailure: (error: unknown) => boolean,
  handle: (
    resend: (items: Record<string, unknown>[]) => Promise<unknown>,
    items: Record<string, unknown>[],
  ) => Promise<unknown>,
): void {
  (client.middlewareStack as Stack).add(
    (next, context) => async (args) => {
      if (context.commandName !== 'TransactWriteItemsCommand') return next(args);
      try {
        return await next(args);
      } catch (error) {
        if (!isFailure(error)) throw error;
        const input = args.input as { TransactItems?: Record<string, unknown>[] };
        const resend = (TransactItems: Record<string, unknown>[]) =>
          next({ ...args, input: { ...input, TransactItems, ClientRequestToken: undefined } });
        return (await handle(resend, input.TransactItems ?? [])) as Awaited<ReturnType<typeof next>>;
      }
    },
    { step: 'initialize', priority: 'low', name: 'reliabilityTamperFailures' },
  );
}
