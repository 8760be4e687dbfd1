import { describe, expect, it } from 'vitest';
import {
  createProgressReporter,
  formatDuration,
  renderBar,
  renderProgress,
} from '../../../../cli/replay/progress';

describe('renderProgress', () => {
  it('renders each step as one line, with a bar on request', () => {
    const counters = { visible: 3, inFlight: 4, delayed: 1 };

    expect(renderProgress({ phase: 'send', pass: 1, sent: 5, total: 20 }, { bar: false })).toBe(
      'pass 1: sending 5/20 messages',
    );
    expect(renderProgress({ phase: 'send', pass: 1, sent: 5, total: 20 }, { bar: true })).toBe(
      'pass 1: sending [######------------------] 5/20 messages',
    );
    expect(
      renderProgress({ phase: 'drain', pass: 2, total: 20, counters, elapsedMillis: 12_400 }, { bar: true }),
    ).toBe('pass 2: draining [##############----------] 8 left (3 visible, 4 in flight, 1 delayed) 12s');
    expect(renderProgress({ phase: 'drained', pass: 2, elapsedMillis: 400 }, { bar: true })).toBe(
      'pass 2: queue drained in 0.4s',
    );
    expect(
      renderProgress(
        { phase: 'snapshot', pass: 1, table: 'orders', items: 200, complete: false },
        { bar: true },
      ),
    ).toBe('pass 1: scanning orders: 200 items');
    expect(
      renderProgress(
        { phase: 'snapshot', pass: 1, table: 'orders', items: 250, complete: true },
        { bar: false },
      ),
    ).toBe('pass 1: snapshot of orders: 250 items');
    expect(renderProgress({ phase: 'dedup-window', remainingMillis: 245_000 }, { bar: false })).toBe(
      'waiting out the FIFO deduplication window before the second replay: 4m 05s left',
    );
  });
});

describe('renderBar and formatDuration', () => {
  it('clamps the bar to its width and formats durations by magnitude', () => {
    expect(renderBar(0, 0)).toBe(`[${'#'.repeat(24)}]`);
    expect(renderBar(-5, 10)).toBe(`[${'-'.repeat(24)}]`);
    expect(renderBar(15, 10)).toBe(`[${'#'.repeat(24)}]`);
    expect([0, 9_949, 10_000, 59_999, 60_000, 3_725_000].map(formatDuration)).toEqual([
      '0.0s',
      '9.9s',
      '10s',
      '59s',
      '1m 00s',
      '62m 05s',
    ]);
  });
});

function recorder(interactive: boolean) {
  let clock = 0;
  const output: string[] = [];
  const reporter = createProgressReporter({
    stream: { write: (text: string) => output.push(text) },
    interactive,
    now: () => clock,
    throttleMillis: 1000,
  });
  return {
    output,
    reporter,
    advance: (millis: number) => {
      clock += millis;
    },
  };
}

describe('createProgressReporter', () => {
  it('prints plain lines for the start and end of each step and throttles the updates between', () => {
    const { output, reporter, advance } = recorder(false);

    reporter.report({ phase: 'send', pass: 1, sent: 0, total: 30 });
    advance(10);
    reporter.report({ phase: 'send', pass: 1, sent: 10, total: 30 });
    advance(1000);
    reporter.report({ phase: 'send', pass: 1, sent: 20, total: 30 });
    advance(10);
    reporter.report({ phase: 'send', pass: 1, sent: 30, total: 30 });
    reporter.report({ phase: 'drained', pass: 1, elapsedMillis: 2000 });
    reporter.end();

    expect(output).toEqual([
      'pass 1: sending 0/30 messages\n',
      'pass 1: sending 20/30 messages\n',
      'pass 1: sending 30/30 messages\n',
      'pass 1: queue drained in 2.0s\n',
    ]);
  });

  it('redraws one line per step on a terminal and ends it when the step completes', () => {
    const { output, reporter, advance } = recorder(true);

    reporter.report({ phase: 'snapshot', pass: 1, table: 't', items: 0, complete: false });
    advance(2000);
    reporter.report({ phase: 'snapshot', pass: 1, table: 't', items: 5, complete: false });
    reporter.report({ phase: 'snapshot', pass: 1, table: 't', items: 7, complete: true });
    reporter.report({ phase: 'snapshot', pass: 1, table: 'u', items: 0, complete: false });
    reporter.end();

    expect(output.join('')).toBe(
      '\r\u001b[Kpass 1: scanning t: 0 items' +
        '\r\u001b[Kpass 1: scanning t: 5 items' +
        '\r\u001b[Kpass 1: snapshot of t: 7 items\n' +
        '\r\u001b[Kpass 1: scanning u: 0 items\n',
    );
  });

  it('closes an open line before a new step starts on a terminal', () => {
    const { output, reporter } = recorder(true);

    reporter.report({ phase: 'send', pass: 1, sent: 0, total: 2 });
    reporter.report({ phase: 'dedup-window', remainingMillis: 5000 });

    expect(output).toEqual([
      '\r\u001b[Kpass 1: sending [------------------------] 0/2 messages',
      '\n',
      '\r\u001b[Kwaiting out the FIFO deduplication window before the second replay: 5.0s left',
    ]);
  });
});

describe('notices', () => {
  it('are rendered as a note and always shown, even inside the throttle interval', () => {
    const lines: string[] = [];
    const reporter = createProgressReporter({
      stream: { write: (text: string) => lines.push(text) },
      interactive: false,
      now: () => 0,
    });
    reporter.report({ phase: 'notice', message: 'first' });
    reporter.report({ phase: 'notice', message: 'second' });

    expect(lines).toEqual(['note: first\n', 'note: second\n']);
  });
});
