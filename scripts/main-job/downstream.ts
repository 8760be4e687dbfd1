/**
 * The downstream service of the payment notifier, for the main job and the end-to-end test: a
 * small HTTP server on `127.0.0.1` that takes `POST /notifications` with an `Idempotency-Key`
 * header and applies each key once, the way a payment or messaging API deduplicates. The
 * emulator runs the functions on this host, so they reach it.
 *
 * The decisions live in a pure ledger ({@link createDownstreamLedger}); the server only moves
 * bytes. The ledger keeps the `paymentId:status` of each request (the business key, never the
 * body) so the checks can tell one payment status from another.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A notification whose first request fails, as the ledger answers it. */
export interface DownstreamFailure {
  /** `paymentId:status` of the notification. */
  readonly payment: string;
  /** Status of the failed answer; the notifier retries 408, 409, 425, 429 and 5xx. */
  readonly status: number;
  /**
   * Whether the service applied the notification before the answer failed (a gateway timeout
   * after the work was done: the answer is lost, the effect is not). A retry with the same
   * `Idempotency-Key` then gets the first application's notification id.
   */
  readonly applied: boolean;
}

/** How the ledger answered one request. */
export type DownstreamAnswerKind =
  /** A new key: the notification was applied (201). */
  | 'applied'
  /** A key applied before, with the same payment: the first answer again (200), nothing applied. */
  | 'replayed'
  /** A configured failure (see {@link DownstreamFailure}). */
  | 'failed'
  /** No key, a body without `paymentId` and `status`, a key reused for another payment, or an unknown path (4xx). */
  | 'rejected';

/** One request the service received. */
export interface DownstreamRequest {
  /** The `Idempotency-Key` header, if any. */
  readonly key: string | undefined;
  /** `paymentId:status` of the body, when it has both. */
  readonly payment: string | undefined;
  /** The HTTP status answered. */
  readonly status: number;
  readonly answer: DownstreamAnswerKind;
  /** The notification id answered (applied or replayed), or applied before a failed answer. */
  readonly notificationId?: string;
}

/** One notification the service applied: the external effect. */
export interface DownstreamApplication {
  readonly key: string;
  readonly payment: string;
  readonly notificationId: string;
}

/** What the service saw and did, copied at one moment. */
export interface DownstreamSnapshot {
  /** Every request, in arrival order. */
  readonly requests: readonly DownstreamRequest[];
  /** Every application, in order: one per distinct key the service applied. */
  readonly applications: readonly DownstreamApplication[];
}

/** A request as the ledger sees it. */
export interface DownstreamCall {
  readonly method: string;
  /** The request path, without the query. */
  readonly path: string;
  /** The `Idempotency-Key` header, if any. */
  readonly key: string | undefined;
  /** The body as received (parsed here, never kept). */
  readonly body: string;
}

/** The ledger's answer: an HTTP status and a JSON body. */
export interface DownstreamAnswer {
  readonly status: number;
  readonly body: Readonly<Record<string, unknown>>;
}

/** The decisions of the downstream service, without I/O. */
export interface DownstreamLedger {
  /** Decides the answer to a request and records it (and the application, if any). */
  answer(call: DownstreamCall): DownstreamAnswer;
  /** Makes the first request for `failure.payment` fail as described; replaces an unused one. */
  failOnce(failure: DownstreamFailure): void;
  /** Copies of the requests and applications so far. */
  snapshot(): DownstreamSnapshot;
}

/** The path the payment notifier posts to. */
export const NOTIFICATIONS_PATH = '/notifications';

/**
 * Creates an empty ledger. A request is answered, in this order: 404 for another path or
 * method; 400 without an `Idempotency-Key` or without `paymentId` and `status` in a JSON body;
 * the configured failure of its payment, once; 200 with the first notification id for a key
 * applied before with the same payment, 422 for a key applied to another payment; otherwise
 * the notification is applied under a new id (201).
 *
 * @example
 * const ledger = createDownstreamLedger([{ payment: 'pay-1:AUTHORIZED', status: 503, applied: false }]);
 * ledger.answer({ method: 'POST', path: '/notifications', key: 'k1', body }); // 503
 * ledger.answer({ method: 'POST', path: '/notifications', key: 'k1', body }); // 201, ntf-1
 */
export function createDownstreamLedger(failures: readonly DownstreamFailure[] = []): DownstreamLedger {
  const requests: DownstreamRequest[] = [];
  const applications: DownstreamApplication[] = [];
  const byKey = new Map<string, DownstreamApplication>();
  const pending = new Map<string, DownstreamFailure>();
  for (const failure of failures) pending.set(failure.payment, failure);

  const apply = (key: string, payment: string): DownstreamApplication => {
    const application = { key, payment, notificationId: `ntf-${applications.length + 1}` };
    applications.push(application);
    byKey.set(key, application);
    return application;
  };

  return {
    answer(call) {
      const payment = paymentOf(call.body);
      const { key } = call;
      const record = (
        status: number,
        answer: DownstreamAnswerKind,
        body: Record<string, unknown>,
        notificationId?: string,
      ): DownstreamAnswer => {
        requests.push({
          key,
          payment,
          status,
          answer,
          ...(notificationId === undefined ? {} : { notificationId }),
        });
        return { status, body };
      };

      if (call.method !== 'POST' || call.path !== NOTIFICATIONS_PATH) {
        return record(404, 'rejected', { message: `No route for ${call.method} ${call.path}` });
      }
      if (key === undefined || key === '') {
        return record(400, 'rejected', { message: 'An Idempotency-Key header is required' });
      }
      if (payment === undefined) {
        return record(400, 'rejected', { message: 'Expected a JSON body with `paymentId` and `status`' });
      }
      const failure = pending.get(payment);
      if (failure !== undefined) {
        pending.delete(payment);
        const applied = failure.applied ? (byKey.get(key) ?? apply(key, payment)) : undefined;
        return record(failure.status, 'failed', { message: 'Failed' }, applied?.notificationId);
      }
      const earlier = byKey.get(key);
      if (earlier !== undefined) {
        if (earlier.payment !== payment) {
          return record(422, 'rejected', {
            message: 'The Idempotency-Key was used for another notification',
          });
        }
        return record(200, 'replayed', { notificationId: earlier.notificationId }, earlier.notificationId);
      }
      const application = apply(key, payment);
      return record(
        201,
        'applied',
        { notificationId: application.notificationId },
        application.notificationId,
      );
    },
    failOnce(failure) {
      pending.set(failure.payment, failure);
    },
    snapshot() {
      return {
        requests: requests.map((request) => ({ ...request })),
        applications: applications.map((application) => ({ ...application })),
      };
    },
  };
}

/** `paymentId:status` of a JSON body that has both as non-empty strings. */
function paymentOf(body: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    if (typeof parsed !== 'object' || parsed === null) return undefined;
    const { paymentId, status } = parsed as Record<string, unknown>;
    return typeof paymentId === 'string' && paymentId !== '' && typeof status === 'string' && status !== ''
      ? `${paymentId}:${status}`
      : undefined;
  } catch {
    return undefined;
  }
}

/** A running downstream service. */
export interface Downstream {
  /** Base URL, `http://127.0.0.1:<port>` (the notifier appends `/notifications`). */
  readonly url: string;
  /** The ledger behind it. */
  readonly ledger: DownstreamLedger;
  /** Stops the server (open connections included); idempotent. */
  close(): Promise<void>;
}

/** Options of {@link startDownstream}. */
export interface StartDownstreamOptions {
  /** Requests that fail once, see {@link DownstreamFailure}. @default none */
  readonly failures?: readonly DownstreamFailure[];
}

/** Largest request body read; the notifier sends a few hundred bytes. */
const MAX_BODY_BYTES = 64 * 1024;

/**
 * Starts the downstream service on `127.0.0.1`, on a free port.
 *
 * @example
 * const downstream = await startDownstream({ failures });
 * try {
 *   // deploy with downstreamUrl: downstream.url, send payment events
 *   const { applications } = downstream.ledger.snapshot();
 * } finally {
 *   await downstream.close();
 * }
 */
export async function startDownstream(options: StartDownstreamOptions = {}): Promise<Downstream> {
  const ledger = createDownstreamLedger(options.failures);
  const server: Server = createServer((request, response) => {
    readBody(request).then(
      (body) => {
        const header = request.headers['idempotency-key'];
        const answer = ledger.answer({
          method: request.method ?? 'GET',
          path: (request.url ?? '/').split('?')[0]!,
          key: Array.isArray(header) ? header[0] : header,
          body,
        });
        response
          .writeHead(answer.status, { 'content-type': 'application/json' })
          .end(JSON.stringify(answer.body));
      },
      () => {
        response.writeHead(413, { 'content-type': 'application/json' }).end('{"message":"Too large"}');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    ledger,
    close() {
      closed ??= new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      });
      return closed;
    },
  };
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new Error('Request body too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
