import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { scopeKey } from '../../../lambda/core/dedup-key';
import { deriveEffectKeys } from '../../../lambda/core/effect-keys';
import type { PaymentEvent } from '../../../lambda/example/payment-notifier';
import { createSqsBatchHandler } from '../../../lambda/sqs/sqs-handler';
import {
  captureLogger,
  captureMetrics,
  counts,
  invokeWithMalformedBody,
  manualClock,
  sqsEvent,
  sqsRecord,
} from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';

const URL_ = 'https://notify.example/v1/';
const payment: PaymentEvent = { paymentId: 'pay-1', status: 'CAPTURED', amount: 1250, currency: 'EUR' };

/** A fetch that answers `status` with `body`, recording each request. */
function fakeFetch(...answers: { status: number; body?: unknown }[]) {
  const requests: { url: string; init: RequestInit }[] = [];
  const fetchImpl = (async (url: string, init: RequestInit) => {
    requests.push({ url, init });
    const { status, body } = answers.shift() ?? { status: 200, body: {} };
    return new Response(body === undefined ? null : JSON.stringify(body), { status });
  }) as unknown as typeof fetch;
  return { fetchImpl, requests };
}

const effect = { idempotencyKey: 'k'.repeat(64), signal: new AbortController().signal };

// The handler module builds its Lambda handler from the environment when it loads.
const environment = {
  EO_INBOX_TABLE: 'inbox',
  EO_CONSUMER: 'payment-notifier',
  DOWNSTREAM_URL: URL_,
  AWS_REGION: 'us-east-1',
};
const load = () => import('../../../lambda/example/payment-notifier');

beforeEach(() => {
  for (const [name, value] of Object.entries(environment)) vi.stubEnv(name, value);
});

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('payment notifier', () => {
  it('posts the notification with the propagated Idempotency-Key and returns the downstream id', async () => {
    const { notifyDownstream } = await load();
    const { fetchImpl, requests } = fakeFetch({ status: 201, body: { notificationId: 'n-1' } });

    expect(await notifyDownstream(URL_, payment, effect, fetchImpl)).toEqual({
      status: 201,
      notificationId: 'n-1',
    });
    expect(requests[0]?.url).toBe('https://notify.example/v1/notifications');
    expect(requests[0]?.init).toMatchObject({
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': effect.idempotencyKey },
      body: JSON.stringify({ paymentId: 'pay-1', status: 'CAPTURED', amount: 1250, currency: 'EUR' }),
      signal: expect.any(AbortSignal),
    });
  });

  it('retries 5xx, 429 and 409 answers, dead-letters other 4xx, and accepts an answer without an id', async () => {
    const { notifyDownstream } = await load();
    for (const status of [500, 503, 429, 409, 408]) {
      await expect(notifyDownstream(URL_, payment, effect, fakeFetch({ status }).fetchImpl)).rejects.toThrow(
        `The downstream service answered ${status}`,
      );
    }
    await expect(
      notifyDownstream(URL_, payment, effect, fakeFetch({ status: 422 }).fetchImpl),
    ).rejects.toMatchObject({ code: 'PERMANENT' });
    expect(await notifyDownstream(URL_, payment, effect, fakeFetch({ status: 204 }).fetchImpl)).toEqual({
      status: 204,
    });
  });

  it('validates payment events and the downstream URL', async () => {
    const { parsePaymentEvent, paymentNotifierOptions } = await load();
    expect(parsePaymentEvent(JSON.stringify(payment))).toEqual(payment);
    for (const [raw, message] of [
      ['nope', 'A payment event must be JSON'],
      ['null', 'A payment event must be a JSON object'],
      [JSON.stringify({ ...payment, status: '' }), '`status` must be a non-empty string'],
      [JSON.stringify({ ...payment, amount: 12.5 }), '`amount` must be an integer'],
    ]) {
      expect(() => parsePaymentEvent(raw!)).toThrow(message!);
    }
    expect(() => paymentNotifierOptions('notify.example')).toThrow(
      expect.objectContaining({ code: 'INVALID_OPTIONS' }) as Error,
    );
  });

  it('notifies once per payment status and stores the notification for a duplicate', async () => {
    const { paymentNotifierOptions } = await load();
    const { fetchImpl, requests } = fakeFetch({ status: 201, body: { notificationId: 'n-1' } });
    const store = createMemoryStore();
    const metrics = captureMetrics();
    const processBatch = createSqsBatchHandler<PaymentEvent>(
      {
        consumer: 'payment-notifier',
        store,
        clock: manualClock(),
        logger: captureLogger(),
        metrics,
        ...paymentNotifierOptions(URL_, fetchImpl),
      },
      { leaseMillis: 60_000 },
    );
    const event = sqsEvent(sqsRecord('m-1', payment));

    await processBatch(event);
    await processBatch(event);

    expect(requests).toHaveLength(1);
    const headers = requests[0]?.init.headers as Record<string, string>;
    expect(headers['idempotency-key']).toBe(
      deriveEffectKeys(scopeKey('payment-notifier', 'pay-1:CAPTURED', 'notify')).idempotencyKey,
    );
    // The notification is stored with the completed effect: a duplicate's `effects.run` returns it.
    expect(store.items('inbox')).toEqual([
      expect.objectContaining({
        pk: scopeKey('payment-notifier', 'pay-1:CAPTURED', 'notify'),
        status: 'COMPLETED',
        result: JSON.stringify({ status: 201, notificationId: 'n-1' }),
      }),
    ]);
    expect(metrics.published.map((published) => published.counts)).toEqual([
      counts({ processed: 1 }),
      counts({ duplicate: 1 }),
    ]);
  });

  it('builds its Lambda handler from the environment, passing EO_LEASE_MILLIS as the lease', async () => {
    vi.stubEnv('EO_LEASE_MILLIS', '30000');
    vi.resetModules();

    const { handler } = await load();
    const { result, lines } = await invokeWithMalformedBody(handler, 'nope');
    // A malformed body needs no store call; the lease itself is pinned in construct-environment.test.ts.
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-1' }] });
    expect(lines.filter((line) => 'level' in line)).toEqual([
      expect.objectContaining({
        level: 'error',
        consumer: 'payment-notifier',
        messageId: 'm-1',
        code: 'MALFORMED_BODY',
        reason: 'The body was rejected by the `parse` option: A payment event must be JSON',
      }),
    ]);

    vi.stubEnv('EO_LEASE_MILLIS', '30');
    vi.resetModules();
    await expect(load()).rejects.toThrow(
      'Expected `twoPhase.leaseMillis` to be milliseconds (at least 1000; for 30 seconds use 30000), got `30`',
    );
  });
});
