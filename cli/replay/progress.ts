/**
 * Progress of a double tap, for people: a redrawn bar on a terminal, plain lines
 * otherwise. Events carry counts only, never message bodies.
 */

import type { QueueCounters } from './drain';
import { remainingMessages } from './drain';

/** Which of the two replays. */
export type Pass = 1 | 2;

/** A step of a double tap, reported through `onProgress`. */
export type ProgressEvent =
  | {
      /** Messages are being sent. */
      readonly phase: 'send';
      /** Which replay. */
      readonly pass: Pass;
      /** Messages sent so far in this pass. */
      readonly sent: number;
      /** Messages to send in this pass. */
      readonly total: number;
    }
  | {
      /** Waiting for the consumer to drain the queue. */
      readonly phase: 'drain';
      /** Which replay. */
      readonly pass: Pass;
      /** Messages sent in this pass, to scale the bar. */
      readonly total: number;
      /** The queue's approximate counters at this poll. */
      readonly counters: QueueCounters;
      /** Time spent waiting so far. */
      readonly elapsedMillis: number;
    }
  | {
      /** The queue is drained. */
      readonly phase: 'drained';
      /** Which replay. */
      readonly pass: Pass;
      /** Time the drain took. */
      readonly elapsedMillis: number;
    }
  | {
      /** A table is being snapshotted. */
      readonly phase: 'snapshot';
      /** Which replay. */
      readonly pass: Pass;
      /** The table's name. */
      readonly table: string;
      /** Items read so far. */
      readonly items: number;
      /** True once the whole table is read. */
      readonly complete: boolean;
    }
  | {
      /** Waiting for the FIFO deduplication window to pass before the second replay. */
      readonly phase: 'dedup-window';
      /** Time left to wait. */
      readonly remainingMillis: number;
    }
  | {
      /** Something the person running the replay should know before it waits. */
      readonly phase: 'notice';
      /** The notice, one sentence. */
      readonly message: string;
    };

/** Writes progress events somewhere. */
export interface ProgressReporter {
  readonly report: (event: ProgressEvent) => void;
  /** Ends an open line, if any. */
  readonly end: () => void;
}

/** Options of `createProgressReporter`. */
export interface ProgressReporterOptions {
  readonly stream: { write(text: string): unknown };
  /** Redraw one line with a bar (a terminal), or print plain lines (a file or a pipe). */
  readonly interactive: boolean;
  /** Milliseconds from any fixed origin. */
  readonly now: () => number;
  /**
   * Least time between two updates of the same step: a redraw on a terminal, a line otherwise.
   * Starts and ends of steps are always shown.
   * @default 100 on a terminal, 5000 otherwise
   */
  readonly throttleMillis?: number;
}

const BAR_WIDTH = 24;

/**
 * Renders one event as a line. With `bar`, counts are also drawn as a 24-character bar.
 *
 * @example
 * renderProgress({ phase: 'send', pass: 1, sent: 5, total: 10 }, { bar: false });
 * // 'pass 1: sending 5/10 messages'
 */
export function renderProgress(event: ProgressEvent, options: { readonly bar: boolean }): string {
  const bar = (done: number, total: number): string => (options.bar ? `${renderBar(done, total)} ` : '');
  switch (event.phase) {
    case 'send':
      return `pass ${event.pass}: sending ${bar(event.sent, event.total)}${event.sent}/${event.total} messages`;
    case 'drain': {
      const { visible, inFlight, delayed } = event.counters;
      const remaining = remainingMessages(event.counters);
      return (
        `pass ${event.pass}: draining ${bar(event.total - remaining, event.total)}${remaining} left ` +
        `(${visible} visible, ${inFlight} in flight, ${delayed} delayed) ${formatDuration(event.elapsedMillis)}`
      );
    }
    case 'drained':
      return `pass ${event.pass}: queue drained in ${formatDuration(event.elapsedMillis)}`;
    case 'snapshot':
      return `pass ${event.pass}: ${event.complete ? 'snapshot of' : 'scanning'} ${event.table}: ${event.items} items`;
    case 'dedup-window':
      return `waiting out the FIFO deduplication window before the second replay: ${formatDuration(event.remainingMillis)} left`;
    case 'notice':
      return `note: ${event.message}`;
  }
}

/** `[#########---------------]`: `done` of `total`, clamped to the bar. */
export function renderBar(done: number, total: number): string {
  const ratio = total <= 0 ? 1 : Math.min(1, Math.max(0, done / total));
  const filled = Math.round(ratio * BAR_WIDTH);
  return `[${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}]`;
}

/** `0.4s`, `12s`, `4m 05s`. */
export function formatDuration(millis: number): string {
  const seconds = Math.max(0, millis) / 1000;
  if (seconds < 10) return `${seconds.toFixed(1)}s`;
  if (seconds < 60) return `${Math.floor(seconds)}s`;
  const whole = Math.floor(seconds);
  return `${Math.floor(whole / 60)}m ${String(whole % 60).padStart(2, '0')}s`;
}

/**
 * A reporter that redraws one line per step on a terminal (`\r`, erase line) and
 * prints plain lines elsewhere: the first and last update of each step, and at most one
 * line per `throttleMillis` in between.
 */
export function createProgressReporter(options: ProgressReporterOptions): ProgressReporter {
  const throttle = options.throttleMillis ?? (options.interactive ? 100 : 5000);
  let step = '';
  let lastShown = 0;
  let lineOpen = false;

  const end = (): void => {
    if (lineOpen) options.stream.write('\n');
    lineOpen = false;
  };

  const report = (event: ProgressEvent): void => {
    const eventStep = stepOf(event);
    const isNewStep = eventStep !== step;
    const complete = isComplete(event);
    const now = options.now();
    if (!isNewStep && !complete && now - lastShown < throttle) return;
    step = complete ? '' : eventStep;
    lastShown = now;
    const line = renderProgress(event, { bar: options.interactive });
    if (options.interactive) {
      if (isNewStep) end();
      options.stream.write(`\r\u001b[K${line}`);
      lineOpen = true;
      if (complete) end();
    } else {
      options.stream.write(`${line}\n`);
    }
  };

  return { report, end };
}

function stepOf(event: ProgressEvent): string {
  switch (event.phase) {
    case 'send':
      return `send ${event.pass}`;
    case 'drain':
    case 'drained':
      return `drain ${event.pass}`;
    case 'snapshot':
      return `snapshot ${event.pass} ${event.table}`;
    case 'dedup-window':
      return 'dedup-window';
    case 'notice':
      return `notice ${event.message}`;
  }
}

function isComplete(event: ProgressEvent): boolean {
  switch (event.phase) {
    case 'send':
      return event.sent === event.total;
    case 'drain':
      return false;
    case 'drained':
      return true;
    case 'snapshot':
      return event.complete;
    case 'dedup-window':
      return event.remainingMillis <= 0;
    case 'notice':
      return true;
  }
}
