import { Duration, Stack } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { deriveRedeliveryWindow, RECORD_TTL_MARGIN } from '../../lib';
import { knownQueueRetention, knownVisibilityTimeout } from '../../lib/record-ttl';

describe('deriveRedeliveryWindow', () => {
  it('takes the dead-letter retention when it is the longest term and adds one day', () => {
    const derived = deriveRedeliveryWindow({
      queueRetention: Duration.days(4),
      deadLetterQueueRetention: Duration.days(14),
      producerRetryHorizon: Duration.hours(1),
    });
    expect(derived.window.toDays()).toBe(14);
    expect(derived.defaultRecordTtl.toDays()).toBe(15);
    expect(RECORD_TTL_MARGIN.toDays()).toBe(1);
    expect(derived.explanation).toBe(
      'the longest of queue retention 4 days, dead-letter queue retention 14 days, 3 × producerRetryHorizon 3 hours',
    );
  });

  it('takes 3 × the producer retry horizon when producers retry longest', () => {
    const derived = deriveRedeliveryWindow({
      queueRetention: Duration.days(1),
      deadLetterQueueRetention: Duration.days(2),
      producerRetryHorizon: Duration.days(3),
    });
    expect(derived.window.toDays()).toBe(9);
    expect(derived.defaultRecordTtl.toDays()).toBe(10);
  });

  it('takes the queue retention without a dead-letter queue', () => {
    const derived = deriveRedeliveryWindow({
      queueRetention: Duration.days(4),
      producerRetryHorizon: Duration.hours(1),
    });
    expect(derived.window.toDays()).toBe(4);
    expect(derived.explanation).not.toContain('dead-letter');
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
  });
});
