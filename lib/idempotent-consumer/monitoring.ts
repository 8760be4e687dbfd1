/**
 * What an `IdempotentConsumer` shows operators beyond what every consumer shows
 * (`../consumer-monitoring.ts`): the alarms on dead letters, payload mismatches, backlog and
 * duplicate rate, and the dashboard with the queue's backlog and dead-letter depth.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import type { ConsumerMode, DeadLetterMode } from '../../lambda/core/contract';
import {
  createConsumerDashboard,
  createDeadLetterQueueAlarm,
  createMismatchAlarm,
  duplicateRate,
  notifyAlarmTopic,
} from '../consumer-monitoring';

/** The consumer that alarms and the dashboard watch. */
export interface MonitoredConsumer {
  readonly consumerName: string;
  readonly metricNamespace: string;
  readonly mode: ConsumerMode;
  readonly deadLetterMode: DeadLetterMode;
  readonly recordTtl: Duration;
  readonly queue: sqs.IQueue;
  readonly deadLetterQueue?: sqs.IQueue;
  readonly handler: lambda.IFunction;
}

/** What to alarm on, and whom to tell. */
export interface ConsumerAlarmOptions {
  /** Age of the oldest message that raises the backlog alarm. */
  readonly ageOfOldestMessageThreshold: Duration;
  /** The duplicate share that raises the duplicate-rate alarm; `undefined` for no such alarm. */
  readonly duplicateRateThreshold?: number;
  /** Notified by every alarm. */
  readonly alarmTopic?: sns.ITopic;
}

/** The alarms of a consumer (see {@link createQueueConsumerAlarms}). */
export interface ConsumerAlarms {
  readonly deadLetterQueueAlarm?: cloudwatch.Alarm;
  readonly mismatchAlarm: cloudwatch.Alarm;
  readonly ageOfOldestMessageAlarm: cloudwatch.Alarm;
  readonly duplicateRateAlarm?: cloudwatch.Alarm;
  /** Every alarm above that was created, in that order. */
  readonly all: readonly cloudwatch.Alarm[];
}

/**
 * Creates, in `scope`, the dead-letter alarm (when the consumer has a dead-letter queue), the
 * mismatch alarm, the backlog alarm and (with a threshold) the duplicate-rate alarm, each
 * notifying `alarmTopic` when given.
 */
export function createQueueConsumerAlarms(
  scope: Construct,
  consumer: MonitoredConsumer,
  options: ConsumerAlarmOptions,
): ConsumerAlarms {
  const name = consumer.consumerName;
  const deadLetterQueueAlarm = consumer.deadLetterQueue
    ? createDeadLetterQueueAlarm(
        scope,
        consumer.deadLetterQueue,
        `Messages are waiting in the dead-letter queue of consumer ${name}: read their reason attributes, fix the cause, then redrive them.`,
      )
    : undefined;
  const mismatchAlarm = createMismatchAlarm(
    scope,
    consumer,
    `Consumer ${name} received a dedup key it had already recorded with a different payload: a producer reuses keys for different messages. The messages are in the dead-letter queue.`,
  );
  const ageOfOldestMessageAlarm = ageAlarmOf(scope, consumer, options.ageOfOldestMessageThreshold);
  const duplicateRateAlarm =
    options.duplicateRateThreshold === undefined
      ? undefined
      : duplicateRateAlarmOf(scope, consumer, options.duplicateRateThreshold);
  const all = [deadLetterQueueAlarm, mismatchAlarm, ageOfOldestMessageAlarm, duplicateRateAlarm].filter(
    (alarm): alarm is cloudwatch.Alarm => alarm !== undefined,
  );
  notifyAlarmTopic(all, options.alarmTopic);
  return {
    deadLetterQueueAlarm,
    mismatchAlarm,
    ageOfOldestMessageAlarm,
    duplicateRateAlarm,
    all: Object.freeze(all),
  };
}

function ageAlarmOf(scope: Construct, consumer: MonitoredConsumer, threshold: Duration): cloudwatch.Alarm {
  return new cloudwatch.Alarm(scope, 'AgeOfOldestMessageAlarm', {
    alarmDescription: `The oldest message waiting for consumer ${consumer.consumerName} is older than ${threshold.toHumanString()}: the consumer is failing, throttled or too slow.`,
    metric: consumer.queue.metricApproximateAgeOfOldestMessage({
      statistic: cloudwatch.Stats.MAXIMUM,
      period: Duration.minutes(1),
    }),
    threshold: threshold.toSeconds(),
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    evaluationPeriods: 1,
    // No data means no activity on the queue, so no backlog.
    treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
  });
}

function duplicateRateAlarmOf(
  scope: Construct,
  consumer: MonitoredConsumer,
  threshold: number,
): cloudwatch.Alarm {
  return new cloudwatch.Alarm(scope, 'DuplicateRateAlarm', {
    alarmDescription: `More than ${threshold * 100}% of the messages of consumer ${consumer.consumerName} were duplicates for 15 minutes: a producer retry storm, a replay, or a consumer that commits but does not acknowledge.`,
    metric: duplicateRate(consumer),
    threshold,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    evaluationPeriods: 3,
    datapointsToAlarm: 3,
    // No messages, no duplicates.
    treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
  });
}

/**
 * Creates, in `scope`, the consumer's dashboard: a header naming mode, dead-letter mode and
 * record TTL; every outcome and the duplicate rate; the queue backlog, the dead-letter queue
 * depth and the function's health; and the status of `alarms`, when there are any.
 */
export function createQueueConsumerDashboard(
  scope: Construct,
  consumer: MonitoredConsumer,
  alarms: readonly cloudwatch.Alarm[],
): cloudwatch.Dashboard {
  const period = Duration.minutes(1);
  const maximum = { period, statistic: cloudwatch.Stats.MAXIMUM };
  const transportWidgets: cloudwatch.IWidget[] = [
    new cloudwatch.GraphWidget({
      title: 'Queue backlog',
      left: [consumer.queue.metricApproximateNumberOfMessagesVisible(maximum)],
      right: [consumer.queue.metricApproximateAgeOfOldestMessage(maximum)],
      width: 8,
    }),
  ];
  if (consumer.deadLetterQueue) {
    transportWidgets.push(
      new cloudwatch.GraphWidget({
        title: 'Dead-letter queue depth',
        left: [consumer.deadLetterQueue.metricApproximateNumberOfMessagesVisible(maximum)],
        width: 8,
      }),
    );
  }
  return createConsumerDashboard(scope, consumer, {
    header: `# Consumer ${consumer.consumerName}\nMode \`${consumer.mode}\`, dead letters \`${consumer.deadLetterMode}\`, record TTL ${consumer.recordTtl.toHumanString()}.`,
    transportWidgets,
    alarms,
  });
}
