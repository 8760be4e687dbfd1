/**
 * The history checker every simulation's run goes through (`support/history.ts`), on
 * hand-written histories (no I/O): each check names what breaks it with only the entries that
 * show it, and passes what the simulations do by design.
 */
import { describe, expect, it } from 'vitest';
import {
  assertHistory,
  chainOnce,
  checkHistory,
  createHistory,
  describeViolation,
  exactlyOnce,
  type HistoryEvent,
  inputEqualsOutput,
  orderPerGroup,
} from './support/history';

const historyOf = (...events: HistoryEvent[]) => {
  const history = createHistory();
  for (const event of events) history.append(event);
  return history.entries;
};

const input = (message: string, key: string, amount = 5): HistoryEvent => ({
  kind: 'input',
  message,
  keys: [key],
  amount,
});
const applied = (
  key: string,
  extra: Partial<Extract<HistoryEvent, { kind: 'applied' }>> = {},
): HistoryEvent => ({
  kind: 'applied',
  key,
  amount: 5,
  ...extra,
});

describe('exactlyOnce', () => {
  it('names the key applied twice in one live window, with its two effects only', () => {
    const entries = historyOf(
      input('m1', 'c#k1'),
      input('m2', 'c#k2'),
      { kind: 'delivered', message: 'm1', attempt: 'receive 1' },
      applied('c#k1', { message: 'm1' }),
      applied('c#k2', { message: 'm2' }),
      { kind: 'delivered', message: 'm1', attempt: 'receive 2' },
      applied('c#k1', { message: 'm1' }),
    );

    expect(describeViolation(7, exactlyOnce(entries)!)).toBe(
      [
        'history check exactlyOnce failed at seed 7 (c#k1): c#k1 applied again in live window 0 after an effect in window 0',
        '  t3 applied c#k1 amount 5 window 0 (m1)',
        '  t6 applied c#k1 amount 5 window 0 (m1)',
      ].join('\n'),
    );
  });

  it('passes an effect run again once its record expired (a later window), not one in an earlier window', () => {
    expect(exactlyOnce(historyOf(applied('c#k1'), applied('c#k1', { window: 1 })))).toBeUndefined();
    expect(
      exactlyOnce(historyOf(applied('c#k1', { window: 1 }), applied('c#k1', { window: 0 })))?.summary,
    ).toBe('c#k1 applied again in live window 0 after an effect in window 1');
  });
});

describe('inputEqualsOutput', () => {
  it('names an input neither applied nor dead-lettered with a reason, with its last delivery and its reasonless dead letter', () => {
    const entries = historyOf(
      input('m1', 'c#k1'),
      input('m2', 'c#k2', 9),
      { kind: 'delivered', message: 'm2', attempt: 'receive 1' },
      applied('c#k1'),
      { kind: 'delivered', message: 'm2', attempt: 'receive 2' },
      { kind: 'dead-lettered', message: 'm2', code: 'PERMANENT', reason: '' },
    );

    expect(describeViolation(3, inputEqualsOutput(entries)!)).toBe(
      [
        'history check inputEqualsOutput failed at seed 3 (m2): m2 neither applied with amount 9 under c#k2 nor dead-lettered with a reason',
        '  t1 input m2 keys c#k2 amount 9',
        '  t4 delivered m2 receive 2',
        '  t5 dead-lettered m2 PERMANENT no reason',
      ].join('\n'),
    );
  });

  it('takes an input dead-lettered with a reason, excused by design, or keyed at run time and applied there', () => {
    const entries = historyOf(
      { kind: 'input', message: 'm1', keys: [] },
      { kind: 'dead-lettered', message: 'm1', code: 'MALFORMED_BODY', reason: 'not JSON' },
      input('m2', 'c#k2'),
      { kind: 'excused', key: 'c#k2', why: 'marker without its effect (crash)' },
      { kind: 'input', message: 'm3', keys: [], amount: 5 },
      { kind: 'keyed', message: 'm3', keys: ['c#1152921504606846976'] },
      applied('c#1152921504606846976'),
    );

    expect(inputEqualsOutput(entries)).toBeUndefined();
  });

  it('names the loser of a key whose payload was applied in place of the winner’s', () => {
    const entries = historyOf(input('m1', 'c#k1', 5), input('m2', 'c#k1', 6), applied('c#k1', { amount: 6 }));

    expect(inputEqualsOutput(entries)?.summary).toBe(
      'm1 neither applied with amount 5 under c#k1 nor dead-lettered with a reason',
    );
  });

  it('names an effect no input asked for', () => {
    const entries = historyOf(input('m1', 'c#k1'), applied('c#k1'), applied('c#k9'));

    expect(describeViolation(1, inputEqualsOutput(entries)!)).toBe(
      [
        'history check inputEqualsOutput failed at seed 1 (c#k9): c#k9 applied with amount 5, which no input asked for',
        '  t2 applied c#k9 amount 5 window 0',
      ].join('\n'),
    );
  });
});

describe('orderPerGroup', () => {
  const inGroup = (key: string, sequence: string, message: string) =>
    applied(key, { group: 'customer-3', sequence, message });

  it('names the group whose records were applied out of their sequence, with the two effects', () => {
    const entries = historyOf(
      inGroup('c#k1', '495900000000000000000000000001', 'm1'),
      applied('c#k7', { group: 'customer-4', sequence: '495900000000000000000000000002' }),
      inGroup('c#k5', '495900000000000000000000000009', 'm5'),
      inGroup('c#k3', '495900000000000000000000000004', 'm3'),
    );

    expect(describeViolation(2, orderPerGroup(entries)!)).toBe(
      [
        'history check orderPerGroup failed at seed 2 (customer-3): group customer-3: c#k3 (sequence 495900000000000000000000000004) applied after c#k5 (sequence 495900000000000000000000000009)',
        '  t2 applied c#k5 amount 5 window 0 group customer-3 sequence 495900000000000000000000000009 (m5)',
        '  t3 applied c#k3 amount 5 window 0 group customer-3 sequence 495900000000000000000000000004 (m3)',
      ].join('\n'),
    );
  });

  it('leaves out a record the event source discarded, and a key applied again (exactlyOnce’s to name)', () => {
    const entries = historyOf(
      { kind: 'discarded', message: 'm3', why: 'retries used up' },
      inGroup('c#k5', '9', 'm5'),
      inGroup('c#k3', '4', 'm3'),
      inGroup('c#k5', '9', 'm5'),
      inGroup('c#k6', '10', 'm6'),
    );

    expect(orderPerGroup(entries)).toBeUndefined();
  });

  // A FIFO queue: m3 was dead-lettered (by the redrive policy or with a reason), so m5 and m6
  // passed; m3 redriven later is a new message with a later sequence number, and m5's producer
  // copy sent after the deduplication interval applies nothing new.
  it('passes a FIFO group whose dead-lettered message came back redriven with a later sequence number', () => {
    const entries = historyOf(
      { kind: 'dead-lettered', message: 'm3', code: 'PERMANENT', reason: 'downstream outage' },
      inGroup('c#k5', '9', 'm5'),
      inGroup('c#k6', '10', 'm6'),
      inGroup('c#k3', '12', 'm3'),
      inGroup('c#k5', '14', 'm5'),
    );

    expect(orderPerGroup(entries)).toBeUndefined();
    expect(checkHistory(entries)).toMatchObject({ groups: 1, ordered: 3 });
  });

  it('orders sequence numbers as integers, whatever their length', () => {
    expect(orderPerGroup(historyOf(inGroup('c#k1', '9', 'm1'), inGroup('c#k2', '10', 'm2')))).toBeUndefined();
  });
});

describe('chainOnce', () => {
  const emitted = (event: string): HistoryEvent => ({ kind: 'emitted', event, message: 'm1' });
  const downstream = (event: string, key = `shipping#${event}`): HistoryEvent => ({
    kind: 'applied',
    key,
    upstream: event,
  });

  it('names an event applied twice downstream, with its emission, its publishes and both effects', () => {
    const entries = historyOf(
      emitted('e1'),
      { kind: 'delivered', message: 'e1', attempt: 'published' },
      downstream('e1'),
      { kind: 'delivered', message: 'e1', attempt: 'published' },
      downstream('e1', 'shipping#msg-2'),
    );

    expect(describeViolation(4, chainOnce(entries)!)).toBe(
      [
        'history check chainOnce failed at seed 4 (e1): e1 emitted once upstream, applied 2 times downstream',
        '  t0 emitted e1 (m1)',
        '  t1 delivered e1 published',
        '  t2 applied shipping#e1 window 0 for e1',
        '  t3 delivered e1 published',
        '  t4 applied shipping#msg-2 window 0 for e1',
      ].join('\n'),
    );
  });

  it('names an event never applied downstream nor dead-lettered, and one applied that was never emitted', () => {
    expect(chainOnce(historyOf(emitted('e1')))?.summary).toBe(
      'e1 emitted upstream, never applied downstream nor dead-lettered with a reason',
    );
    expect(chainOnce(historyOf(downstream('e9')))?.summary).toBe(
      'shipping#e9 applied downstream for e9, which upstream never emitted',
    );
  });

  it('takes an event the relay dead-lettered with a reason', () => {
    const entries = historyOf(emitted('e1'), {
      kind: 'dead-lettered',
      message: 'e1',
      code: 'VALIDATION',
      reason: 'too large',
    });

    expect(chainOnce(entries)).toBeUndefined();
  });
});

describe('checkHistory', () => {
  it('reports the earliest violation of all checks and what they covered', () => {
    const entries = historyOf(
      input('m1', 'c#k1'),
      applied('c#k1', { group: 'g', sequence: '2' }),
      input('m2', 'c#k2'),
      applied('c#k2', { group: 'g', sequence: '1' }),
      applied('c#k1', { group: 'g', sequence: '2' }),
    );

    const summary = checkHistory(entries);

    expect(summary).toMatchObject({ entries: 5, keys: 2, groups: 1, ordered: 2, events: 0 });
    expect(summary.violation).toMatchObject({ check: 'orderPerGroup', at: 3 });
    expect(() => assertHistory(11, entries)).toThrow(/^history check orderPerGroup failed at seed 11 \(g\)/);
  });
});
