import { Duration, Stack } from 'aws-cdk-lib';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import { describe, expect, it } from 'vitest';
import {
  DYNAMODB_STREAMS_RETENTION,
  deriveStreamReplayWindow,
  KINESIS_DEFAULT_RETENTION,
  KINESIS_MAX_RETENTION,
  RECORD_TTL_MARGIN,
} from '../../lib';
import { defaultMaxRecordAge } from '../../lib/idempotent-stream-consumer/timing';
import { knownKinesisRetention } from '../../lib/record-ttl';

const hours = (value: number) => Duration.hours(value);
const days = (value: number) => Duration.days(value);

describe('deriveStreamReplayWindow', () => {
  // window = min(retention, maxRecordAge) + max(replayAllowance, 3 × producerRetryHorizon);
  // replayAllowance defaults to retention - min(retention, maxRecordAge). TTL = window + 1 day.
  it.each([
    {
      case: 'DynamoDB Streams, defaults',
      retention: hours(24),
      age: hours(12),
      replay: undefined,
      producer: hours(1),
      window: hours(24),
      expected: '1 day',
    },
    {
      case: 'Kinesis 7 days, 3.5-day age',
      retention: days(7),
      age: hours(84),
      replay: undefined,
      producer: hours(1),
      window: days(7),
      expected: '7 days',
    },
    {
      case: 'Kinesis 365 days, 7-day age',
      retention: days(365),
      age: days(7),
      replay: undefined,
      producer: hours(1),
      window: days(365),
      expected: '365 days',
    },
    {
      case: 'no replay declared: maxRecordAge bounds it',
      retention: hours(24),
      age: hours(1),
      replay: hours(0),
      producer: hours(1),
      window: hours(4),
      expected: '4 hours',
    },
    {
      case: 'producers retry longest',
      retention: hours(24),
      age: hours(12),
      replay: undefined,
      producer: hours(8),
      window: hours(36),
      expected: '1 day 12 hours',
    },
    {
      case: 'an archive replayed for 30 days',
      retention: hours(24),
      age: hours(12),
      replay: days(30),
      producer: hours(1),
      window: hours(12 + 30 * 24),
      expected: '30 days 12 hours',
    },
    {
      case: 'maxRecordAge above the retention counts the retention',
      retention: hours(24),
      age: days(7),
      replay: undefined,
      producer: hours(1),
      window: hours(27),
      expected: '1 day 3 hours',
    },
  ])('$case: a window of $expected', ({ retention, age, replay, producer, window, expected }) => {
    expect(window.toHumanString()).toBe(expected);
    const derived = deriveStreamReplayWindow({
      streamRetention: retention,
      maxRecordAge: age,
      replayAllowance: replay,
      producerRetryHorizon: producer,
    });
    expect(derived.window.toSeconds()).toBe(window.toSeconds());
    expect(derived.defaultRecordTtl.toSeconds()).toBe(window.toSeconds() + RECORD_TTL_MARGIN.toSeconds());
  });

  it('names each term in its explanation', () => {
    expect(
      deriveStreamReplayWindow({
        streamRetention: DYNAMODB_STREAMS_RETENTION,
        maxRecordAge: hours(12),
        producerRetryHorizon: hours(1),
      }).explanation,
    ).toBe(
      'min(stream retention 1 day, maxRecordAge 12 hours) = 12 hours, plus the longer of replayAllowance (until the record leaves the stream) 12 hours and 3 × producerRetryHorizon 3 hours',
    );
    expect(
      deriveStreamReplayWindow({
        streamRetention: DYNAMODB_STREAMS_RETENTION,
        maxRecordAge: hours(1),
        replayAllowance: days(2),
        producerRetryHorizon: hours(1),
      }).explanation,
    ).toBe(
      'min(stream retention 1 day, maxRecordAge 1 hour) = 1 hour, plus the longer of replayAllowance 2 days and 3 × producerRetryHorizon 3 hours',
    );
  });
});

describe('the default maxRecordAge', () => {
  it.each([
    { retention: hours(24), of: '24 hours', age: hours(12), expected: '12 hours' },
    { retention: days(4), of: '4 days', age: days(2), expected: '2 days' },
    { retention: days(14), of: '14 days', age: days(7), expected: '7 days' },
    { retention: KINESIS_MAX_RETENTION, of: '365 days', age: days(7), expected: '7 days' },
    { retention: undefined, of: 'unknown', age: hours(12), expected: '12 hours' },
  ])('is $expected for a retention of $of', ({ retention, age, expected }) => {
    expect(age.toHumanString()).toBe(expected);
    expect(defaultMaxRecordAge(retention).toSeconds()).toBe(age.toSeconds());
  });
});

describe('Kinesis retention known at synth time', () => {
  it('reads a stream of this app, 24 hours when unset, and nothing of an imported stream', () => {
    const stack = new Stack();
    const raised = new kinesis.Stream(stack, 'Raised', { retentionPeriod: days(3) });
    const unset = new kinesis.Stream(stack, 'Unset');
    const imported = kinesis.Stream.fromStreamArn(
      stack,
      'Imported',
      'arn:aws:kinesis:eu-west-1:123456789012:stream/x',
    );
    expect(knownKinesisRetention(raised)?.toDays()).toBe(3);
    expect(knownKinesisRetention(unset)?.toSeconds()).toBe(KINESIS_DEFAULT_RETENTION.toSeconds());
    expect(knownKinesisRetention(imported)).toBeUndefined();
  });
});
