import { describe, expect, it } from 'vitest';
import { createDownstreamLedger, type DownstreamCall } from '../../../../scripts/main-job/downstream';

const notify = (key: string | undefined, paymentId = 'pay-1', status = 'AUTHORIZED'): DownstreamCall => ({
  method: 'POST',
  path: '/notifications',
  key,
  body: JSON.stringify({ paymentId, status, amount: 100, currency: 'EUR' }),
});

describe('the downstream ledger', () => {
  it('applies a new key once and answers a repeat of it with the first notification id', () => {
    const ledger = createDownstreamLedger();
    expect(ledger.answer(notify('k1'))).toEqual({ status: 201, body: { notificationId: 'ntf-1' } });
    expect(ledger.answer(notify('k2', 'pay-2'))).toEqual({ status: 201, body: { notificationId: 'ntf-2' } });
    expect(ledger.answer(notify('k1'))).toEqual({ status: 200, body: { notificationId: 'ntf-1' } });
    expect(ledger.snapshot()).toEqual({
      requests: [
        { key: 'k1', payment: 'pay-1:AUTHORIZED', status: 201, answer: 'applied', notificationId: 'ntf-1' },
        { key: 'k2', payment: 'pay-2:AUTHORIZED', status: 201, answer: 'applied', notificationId: 'ntf-2' },
        { key: 'k1', payment: 'pay-1:AUTHORIZED', status: 200, answer: 'replayed', notificationId: 'ntf-1' },
      ],
      applications: [
        { key: 'k1', payment: 'pay-1:AUTHORIZED', notificationId: 'ntf-1' },
        { key: 'k2', payment: 'pay-2:AUTHORIZED', notificationId: 'ntf-2' },
      ],
    });
  });

  it('applies the same payment twice under two keys: deduplication is by key, which is what the checks catch', () => {
    const ledger = createDownstreamLedger();
    ledger.answer(notify('k1'));
    ledger.answer(notify('k2'));
    expect(ledger.snapshot().applications.map((application) => application.payment)).toEqual([
      'pay-1:AUTHORIZED',
      'pay-1:AUTHORIZED',
    ]);
  });

  it('rejects a key reused for another payment, a missing key, a body without the payment, and other routes', () => {
    const ledger = createDownstreamLedger();
    ledger.answer(notify('k1'));
    expect(ledger.answer(notify('k1', 'pay-2')).status).toBe(422);
    expect(ledger.answer(notify(undefined)).status).toBe(400);
    expect(ledger.answer(notify('')).status).toBe(400);
    expect(ledger.answer({ ...notify('k3'), body: '{"paymentId":"pay-3"}' }).status).toBe(400);
    expect(ledger.answer({ ...notify('k3'), body: 'not json' }).status).toBe(400);
    expect(ledger.answer({ ...notify('k3'), path: '/payments' }).status).toBe(404);
    expect(ledger.answer({ ...notify('k3'), method: 'GET' }).status).toBe(404);
    const { requests, applications } = ledger.snapshot();
    expect(requests.slice(1).map((request) => request.answer)).toEqual(Array(7).fill('rejected'));
    expect(applications).toHaveLength(1);
  });

  it('fails the first request of a payment without applying it, then applies the retry', () => {
    const ledger = createDownstreamLedger([{ payment: 'pay-1:AUTHORIZED', status: 503, applied: false }]);
    expect(ledger.answer(notify('k1')).status).toBe(503);
    expect(ledger.snapshot().applications).toEqual([]);
    expect(ledger.answer(notify('k1'))).toEqual({ status: 201, body: { notificationId: 'ntf-1' } });
    expect(ledger.snapshot().requests.map(({ status, answer }) => ({ status, answer }))).toEqual([
      { status: 503, answer: 'failed' },
      { status: 201, answer: 'applied' },
    ]);
  });

  it('applies a notification whose answer is lost, and answers the retry with the same key from that application', () => {
    const ledger = createDownstreamLedger();
    ledger.failOnce({ payment: 'pay-1:AUTHORIZED', status: 504, applied: true });
    expect(ledger.answer(notify('k1')).status).toBe(504);
    expect(ledger.answer(notify('k1'))).toEqual({ status: 200, body: { notificationId: 'ntf-1' } });
    const { requests, applications } = ledger.snapshot();
    expect(requests).toEqual([
      { key: 'k1', payment: 'pay-1:AUTHORIZED', status: 504, answer: 'failed', notificationId: 'ntf-1' },
      { key: 'k1', payment: 'pay-1:AUTHORIZED', status: 200, answer: 'replayed', notificationId: 'ntf-1' },
    ]);
    expect(applications).toEqual([{ key: 'k1', payment: 'pay-1:AUTHORIZED', notificationId: 'ntf-1' }]);
  });

  it('hands out snapshots that later requests leave as they were', () => {
    const ledger = createDownstreamLedger();
    const before = ledger.snapshot();
    ledger.answer(notify('k1'));
    expect(before).toEqual({ requests: [], applications: [] });
  });
});
