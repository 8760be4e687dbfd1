import { Duration, Stack } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { DEFAULT_REDRIVE_ALLOWANCE, deriveRedeliveryWindow, RECORD_TTL_MARGIN } from '../../lib';
import { knownMaxReceiveCount, knownQueueRetention, knownVisibilityTimeout } from '../../lib/record-ttl';

describe('deriveRedeliveryWindow', () => {
  it('adds queue retention, dead-letter retention and redrive allowance, then one day', () => {
    const derived = deriveRedeliveryWindow({
      queueRetention: Duration.days(4),
      deadLetterQueueRetention: Duration.days(14),
      redriveAllowance: Duration.days(5),
      producerRetryHorizon: Duration.hours(1),
    });
    expect(derived.window.toDays()).toBe(23);
    expect(derived.defaultRecordTtl.toDays()).toBe(24);
    expect(RECORD_TTL_MARGIN.toDays()).toBe(1);
    expect(derived.explanation).toBe(
      'the longer of queue retention 4 days + dead-letter queue retention 14 days + redriveAllowance 5 days = 23 days and 3 × producerRetryHorizon 3 hours',
    );
  });

  it('allows 14 days for a redrive when no allowance is declared', () => {
    const derived = deriveRedeliveryWindow({
      queueRetention: Duration.days(4),
      deadLetterQueueRetention: Duration.days(14),
      producerRetryHorizon: Duration.hours(1),
    });
    expect(DEFAULT_REDRIVE_ALLOWANCE.toDays()).toBe(14);
    expect(derived.window.toDays()).toBe(32);
    expect(derived.defaultRecordTtl.toDays()).toBe(33);
  });

  it('takes 3 × the producer retry horizon when producers retry longest', () => {
    const derived = deriveRedeliveryWindow({
      queueRetention: Duration.days(1),
      deadLetterQueueRetention: Duration.days(2),
      redriveAllowance: Duration.days(3),
      producerRetryHorizon: Duration.days(3),
    });
    expect(derived.window.toDays()).toBe(9);
    expect(derived.defaultRecordTtl.toDays()).toBe(10);
  });

  it('takes the queue retention alone without a dead-letter queue, since nothing is redriven', () => {
    const derived = deriveRedeliveryWindow({
      queueRetention: Duration.days(4),
      redriveAllowance: Duration.days(14),
      producerRetryHorizon: Duration.hours(1),
    });
    expect(derived.window.toDays()).toBe(4);
    expect(derived.explanation).toBe(
      'the longer of queue retention 4 days and 3 × producerRetryHorizon 3 hours',
    );
  });
});

describe('queue settings known at synth time', () => {
  it('reads retention and visibility from a queue of this app, with the SQS defaults when unset', () => {
    const stack = new Stack();
    const set = new sqs.Queue(stack, 'Set', {
      retentionPeriod: Duration.days(9),
      visibilityTimeout: Duration.minutes(2),
    });
    const unset = new sqs.Queue(stack, 'Unset');
    expect(knownQueueRetention(set)?.toDays()).toBe(9);
    expect(knownVisibilityTimeout(set)?.toSeconds()).toBe(120);
    expect(knownQueueRetention(unset)?.toDays()).toBe(4);
    expect(knownVisibilityTimeout(unset)?.toSeconds()).toBe(30);
  });

  it('knows nothing about an imported queue', () => {
    const stack = new Stack();
    const imported = sqs.Queue.fromQueueArn(stack, 'Imported', 'arn:aws:sqs:eu-west-1:123456789012:orders');
    expect(knownQueueRetention(imported)).toBeUndefined();
    expect(knownVisibilityTimeout(imported)).toBeUndefined();
    expect(knownMaxReceiveCount(imported)).toBeUndefined();
  });

  it('reads maxReceiveCount from the redrive policy of a queue of this app, none without one', () => {
    const stack = new Stack();
    const dlq = new sqs.Queue(stack, 'Dlq');
    const redriven = new sqs.Queue(stack, 'Redriven', {
      deadLetterQueue: { queue: dlq, maxReceiveCount: 7 },
    });
    expect(knownMaxReceiveCount(redriven)).toBe(7);
    expect(knownMaxReceiveCount(dlq)).toBeUndefined();
  });
});
