import { describe, expect, it } from 'vitest';
import { scheduledEventSlot, toScheduleSlot } from '../../../lambda/jobs/schedule-slot';

describe('toScheduleSlot', () => {
  it('rounds a time down to its period', () => {
    expect(toScheduleSlot('2026-01-01T02:00:07Z', 3600)).toBe('2026-01-01T02:00:00.000Z');
    expect(toScheduleSlot('2026-01-01T02:59:59.999Z', 3600)).toBe('2026-01-01T02:00:00.000Z');
    expect(toScheduleSlot('2026-01-01T02:00:07Z', 86_400)).toBe('2026-01-01T00:00:00.000Z');
    expect(toScheduleSlot(Date.UTC(2026, 0, 1, 2, 7, 30), 300)).toBe('2026-01-01T02:05:00.000Z');
    expect(toScheduleSlot(new Date(Date.UTC(2026, 0, 1, 2, 7, 30)), 60)).toBe('2026-01-01T02:07:00.000Z');
  });

  it('gives a late delivery and an overlapping run of the same schedule tick the same slot', () => {
    expect(toScheduleSlot('2026-01-01T02:00:00Z', 3600)).toBe(toScheduleSlot('2026-01-01T02:41:12Z', 3600));
  });

  it('rejects a time that is not a date and a period that is not a positive integer', () => {
    expect(() => toScheduleSlot('yesterday', 60)).toThrow(
      expect.objectContaining({ code: 'INVALID_EVENT' }) as unknown as Error,
    );
    expect(() => toScheduleSlot('2026-01-01T00:00:00Z', 0)).toThrow(
      'Expected `periodSeconds` to be a positive integer, got `0`',
    );
    expect(() => toScheduleSlot('2026-01-01T00:00:00Z', 1.5)).toThrow(
      'Expected `periodSeconds` to be a positive integer, got `1.5`',
    );
    expect(() => toScheduleSlot('2026-01-01T00:00:00Z', '60' as never)).toThrow(
      expect.objectContaining({
        code: 'INVALID_OPTIONS',
        message: 'Expected `periodSeconds` to be a positive integer, got `"60"`',
      }) as Error,
    );
  });
});

describe('scheduledEventSlot', () => {
  it('reads the time of an EventBridge scheduled event', () => {
    const event = {
      version: '0',
      id: 'd0c4b1c3-5a3e-4e8c-b2b4-000000000000',
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      time: '2026-01-01T02:00:03Z',
      resources: ['arn:aws:events:us-east-1:000000000000:rule/nightly'],
      detail: {},
    };
    expect(scheduledEventSlot(event, 86_400)).toBe('2026-01-01T00:00:00.000Z');
  });

  it('rejects an event without a time', () => {
    expect(() => scheduledEventSlot({} as never, 60)).toThrow(
      expect.objectContaining({ code: 'INVALID_EVENT' }) as unknown as Error,
    );
  });
});
