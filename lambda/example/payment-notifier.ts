/**
 * Example handler: a payment notifier in two-phase mode, whose effect is outside DynamoDB. For
 * each payment event it calls a downstream HTTP service once, `POST <DOWNSTREAM_URL>/notifications`
 * with the propagated `Idempotency-Key` header.
 *
 * - **Dedup key: the natural key `paymentId` + `status`.** A payment enters each status once.
 * - **Effect `notify`**, claimed with a lease before the call and completed after it. A crash
 *   between the call and the completion leaves the claim in progress; once its lease ends, the
 *   next delivery takes it over and calls again *with the same key*, so a downstream service
 *   that deduplicates on `Idempotency-Key` notifies once. The downstream's notification id is
 *   stored with the completed record and returned on a duplicate.
 * - **Transient vs permanent:** a network error, a timeout, 408, 409, 425, 429 and 5xx are
 *   retried (the claim is released, the retry calls again with the same key); any other 4xx is
 *   permanent and dead-letters the message.
 *
 * Environment: `DOWNSTREAM_URL`, plus the toolkit's `EO_*` variables (see `ENV`);
 * `EO_LEASE_MILLIS` is the lease (the construct sets the function timeout). Permissions on the
 * inbox table: `dynamodb:PutItem`, `GetItem`, `UpdateItem`.
 */
import {
  createSqsHandler,
  type EffectContext,
  EffectivelyOnceError,
  type Effects,
  fromBody,
  type Message,
  PermanentError,
  type SqsHandlerOptions,
  twoPhase,
} from 'effectively-once';

/** One payment event, as the producer sends it. */
export interface PaymentEvent {
  readonly paymentId: string;
  readonly status: string;
  /** Amount in minor units (for example cents). */
  readonly amount: number;
  readonly currency: string;
  readonly customerId?: string;
}

/** What the downstream service answered, stored with the completed effect. */
export interface Notification {
  /** HTTP status of the downstream's answer. */
  readonly status: number;
  /** The downstream's id of the notification, when its JSON answer has one. */
  readonly notificationId?: string;
}

/** The longest a downstream call may take before it is aborted and retried. */
export const DOWNSTREAM_TIMEOUT_MILLIS = 10_000;

/** Statuses worth a retry; any other 4xx is permanent. */
const TRANSIENT_STATUSES = new Set([408, 409, 425, 429]);

const isText = (value: unknown): value is string => typeof value === 'string' && value.trim() !== '';

/**
 * Parses and validates a payment event; an invalid one is a permanent `MALFORMED_BODY` error.
 * Its messages name the field, never a value, so they are toolkit errors: their reason is logged
 * and dead-lettered (the message of any other error is not, without `logErrorMessages`).
 */
export function parsePaymentEvent(rawBody: string): PaymentEvent {
  let event: Partial<PaymentEvent> | null;
  try {
    event = JSON.parse(rawBody);
  } catch {
    // JSON.parse quotes the body in its message, and bodies never reach the logs.
    throw new EffectivelyOnceError('MALFORMED_BODY', 'A payment event must be JSON');
  }
  if (typeof event !== 'object' || event === null)
    throw new EffectivelyOnceError('MALFORMED_BODY', 'A payment event must be a JSON object');
  for (const field of ['paymentId', 'status', 'currency'] as const) {
    if (!isText(event[field]))
      throw new EffectivelyOnceError('MALFORMED_BODY', `\`${field}\` must be a non-empty string`);
  }
  if (!Number.isSafeInteger(event.amount))
    throw new EffectivelyOnceError('MALFORMED_BODY', '`amount` must be an integer');
  return event as PaymentEvent;
}

/**
 * Posts the notification of `payment` to `<downstreamUrl>/notifications` with the effect's
 * `Idempotency-Key`, aborting on the effect's signal or after {@link DOWNSTREAM_TIMEOUT_MILLIS}.
 */
export async function notifyDownstream(
  downstreamUrl: string,
  payment: PaymentEvent,
  effect: Pick<EffectContext, 'idempotencyKey' | 'signal'>,
  fetchImpl: typeof fetch = fetch,
): Promise<Notification> {
  const response = await fetchImpl(`${downstreamUrl.replace(/\/+$/, '')}/notifications`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': effect.idempotencyKey },
    body: JSON.stringify({
      paymentId: payment.paymentId,
      status: payment.status,
      amount: payment.amount,
      currency: payment.currency,
      customerId: payment.customerId,
    }),
    signal: AbortSignal.any([effect.signal, AbortSignal.timeout(DOWNSTREAM_TIMEOUT_MILLIS)]),
  });
  const { status } = response;
  if (status >= 500 || TRANSIENT_STATUSES.has(status)) {
    throw new Error(`The downstream service answered ${status}`);
  }
  if (status >= 400) throw new PermanentError(`The downstream service rejected the notification (${status})`);
  const answer = (await response.json().catch(() => undefined)) as { notificationId?: unknown } | undefined;
  return typeof answer?.notificationId === 'string'
    ? { status, notificationId: answer.notificationId }
    : { status };
}

/** Runs the `notify` effect of one payment event; returns the notification (stored on a duplicate). */
export function notifyPayment(
  downstreamUrl: string,
  message: Message<PaymentEvent>,
  effects: Effects,
  fetchImpl?: typeof fetch,
): Promise<Notification | undefined> {
  return effects.run('notify', (effect) => notifyDownstream(downstreamUrl, message.body, effect, fetchImpl));
}

/** The payment notifier's options for `downstreamUrl` (everything but the toolkit settings). */
export function paymentNotifierOptions(
  downstreamUrl: string | undefined,
  fetchImpl?: typeof fetch,
): Pick<SqsHandlerOptions<PaymentEvent>, 'parse' | 'dedupKey' | 'mode'> {
  if (downstreamUrl === undefined || !URL.canParse(downstreamUrl)) {
    throw new EffectivelyOnceError(
      'INVALID_OPTIONS',
      `Expected \`DOWNSTREAM_URL\` to be an absolute URL, got \`${downstreamUrl}\``,
    );
  }
  const url = downstreamUrl;
  return {
    parse: parsePaymentEvent,
    dedupKey: fromBody((payment: PaymentEvent) => [payment.paymentId, payment.status]),
    mode: twoPhase({
      storeResults: true,
      handle: (message: Message<PaymentEvent>, effects) => notifyPayment(url, message, effects, fetchImpl),
    }),
  };
}

/**
 * The Lambda handler (bundled by entry path). The consumer, lease (`EO_LEASE_MILLIS`), TTL, dead
 * letters and the rest come from the construct's `EO_*` variables; the SDK clients are created
 * once per cold start.
 */
export const handler = createSqsHandler<PaymentEvent>(paymentNotifierOptions(process.env.DOWNSTREAM_URL));
