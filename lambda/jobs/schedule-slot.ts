/**
 * Schedule slots: the stable identity of one scheduled run. Two invocations for the same
 * scheduled time (an overlapping run, a retried delivery, a restarted task) get the same slot;
 * transport ids and receive times never enter it. Transport-free.
 */
import { EffectivelyOnceError, expectOption } from '../core/errors';

/** The part of an EventBridge scheduled event (`detail-type: Scheduled Event`) a slot reads. */
export interface ScheduledEvent {
  /** When the schedule fired, ISO 8601 (for example `2026-01-01T02:00:00Z`). */
  readonly time: string;
}

function toMillis(time: Date | string | number): number {
  if (time instanceof Date) return time.getTime();
  if (typeof time === 'string') return Date.parse(time);
  return typeof time === 'number' ? time : Number.NaN;
}

/**
 * The slot of `time` for a schedule with a period of `periodSeconds`: the time rounded down to
 * a multiple of the period (from the Unix epoch, UTC), as an ISO 8601 string. A run that fires a
 * little late, or is retried an hour later for a daily job, still lands in its slot.
 *
 * Throws `INVALID_EVENT` for a time that is not a date, `INVALID_OPTIONS` for a period that is
 * not a positive integer.
 *
 * @example
 * toScheduleSlot('2026-01-01T02:00:07Z', 3600);  // '2026-01-01T02:00:00.000Z'
 * toScheduleSlot('2026-01-01T02:00:07Z', 86400); // '2026-01-01T00:00:00.000Z'
 */
export function toScheduleSlot(time: Date | string | number, periodSeconds: number): string {
  expectOption(
    Number.isSafeInteger(periodSeconds) && periodSeconds >= 1,
    'periodSeconds',
    'a positive integer',
    periodSeconds,
  );
  const millis = toMillis(time);
  if (!Number.isFinite(millis)) {
    throw new EffectivelyOnceError('INVALID_EVENT', 'Expected the scheduled time to be a date');
  }
  const period = periodSeconds * 1000;
  return new Date(Math.floor(millis / period) * period).toISOString();
}

/**
 * The slot of an EventBridge scheduled event: its `time`, rounded down to the period. For
 * EventBridge Scheduler, put `<aws.scheduler.scheduled-time>` in the target input as `time`.
 *
 * @example
 * export const handler = async (event: ScheduledEvent) =>
 *   guard.run({ job: 'nightly-report', slot: scheduledEventSlot(event, 86400) }, buildReport);
 */
export function scheduledEventSlot(event: ScheduledEvent, periodSeconds: number): string {
  if (typeof event?.time !== 'string') {
    throw new EffectivelyOnceError('INVALID_EVENT', 'Expected a scheduled event with a `time`');
  }
  return toScheduleSlot(event.time, periodSeconds);
}
