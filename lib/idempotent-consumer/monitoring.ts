/**
 * What an `IdempotentConsumer` shows operators: the metrics of the runtime's Embedded Metric
 * Format output (names from the contract's `METRICS`, dimension `Consumer`), the alarms on
 * dead letters, payload mismatches, backlog and duplicate rate, and the dashboard.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import {
  type ConsumerMode,
  type DeadLetterMode,
  METRIC_DIMENSION_CONSUMER,
  METRICS,
} from '../../lambda/core/contract';

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

/** A metric of the runtime's Embedded Metric Format output for one consumer (Sum over 5 minutes). */
export function consumerMetric(
  consumer: Pick<MonitoredConsumer, 'consumerName' | 'metricNamespace'>,
  metricName: string,
  props?: cloudwatch.MetricOptions,
): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: consumer.metricNamespace,
    metricName,
    dimensionsMap: { [METRIC_DIMENSION_CONSUMER]: consumer.consumerName },
    statistic: cloudwatch.Stats.SUM,
    period: Duration.minutes(5),
    ...props,
  });
}

/** Share of duplicates among processed and duplicate messages, 0 when there were none. */
export function duplicateRate(
  consumer: Pick<MonitoredConsumer, 'consumerName' | 'metricNamespace'>,
  props?: cloudwatch.MathExpressionOptions,
): cloudwatch.MathExpression {
  return new cloudwatch.MathExpression({
    expression: 'IF((FILL(p, 0) + FILL(d, 0)) > 0, FILL(d, 0) / (FILL(p, 0) + FILL(d, 0)), 0)',
    usingMetrics: {
      p: consumerMetric(consumer, METRICS.processed),
      d: consumerMetric(consumer, METRICS.duplicate),
    },
    label: 'Duplicate rate',
    period: Duration.minutes(5),
    ...props,
  });
}

/** Every outcome metric with its dashboard label, in the dashboard's order. */
export const OUTCOMES: readonly [metricName: string, label: string][] = [
  [METRICS.processed, 'Processed'],
  [METRICS.duplicate, 'Duplicate'],
  [METRICS.inFlight, 'In flight'],
  [METRICS.mismatch, 'Mismatch'],
  [METRICS.stale, 'Stale'],
  [METRICS.retry, 'Retry'],
  [METRICS.permanent, 'Permanent'],
  [METRICS.takeover, 'Takeover'],
  [METRICS.cacheHit, 'Cache hit'],
];

/** What to alarm on, and whom to tell. */
export interface ConsumerAlarmOptions {
  /** Age of the oldest message that raises the backlog alarm. */
  readonly ageOfOldestMessageThreshold: Duration;
  /** The duplicate share that raises the duplicate-rate alarm; `undefined` for no such alarm. */
  readonly duplicateRateThreshold?: number;
  /** Notified by every alarm. */
  readonly alarmTopic?: sns.ITopic;
}

/** The alarms of a consumer (see {@link createConsumerAlarms}). */
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
export function createConsumerAlarms(
  scope: Construct,
  consumer: MonitoredConsumer,
  options: ConsumerAlarmOptions,
): ConsumerAlarms {
  const deadLetterQueueAlarm = consumer.deadLetterQueue
    ? deadLetterQueueAlarmOf(scope, consumer, consumer.deadLetterQueue)
    : undefined;
  const mismatchAlarm = mismatchAlarmOf(scope, consumer);
  const ageOfOldestMessageAlarm = ageAlarmOf(scope, consumer, options.ageOfOldestMessageThreshold);
  const duplicateRateAlarm =
    options.duplicateRateThreshold === undefined
      ? undefined
      : duplicateRateAlarmOf(scope, consumer, options.duplicateRateThreshold);
  const all = [deadLetterQueueAlarm, mismatchAlarm, ageOfOldestMessageAlarm, duplicateRateAlarm].filter(
    (alarm): alarm is cloudwatch.Alarm => alarm !== undefined,
  );
  if (options.alarmTopic) {
    for (const alarm of all) alarm.addAlarmAction(new cloudwatchActions.SnsAction(options.alarmTopic));
  }
  return {
    deadLetterQueueAlarm,
    mismatchAlarm,
    ageOfOldestMessageAlarm,
    duplicateRateAlarm,
    all: Object.freeze(all),
  };
}

function deadLetterQueueAlarmOf(
  scope: Construct,
  consumer: MonitoredConsumer,
  deadLetterQueue: sqs.IQueue,
): cloudwatch.Alarm {
  return new cloudwatch.Alarm(scope, 'DeadLetterQueueAlarm', {
    alarmDescription: `Messages are waiting in the dead-letter queue of consumer ${consumer.consumerName}: read their reason attributes, fix the cause, then redrive them.`,
    metric: deadLetterQueue.metricApproximateNumberOfMessagesVisible({
      statistic: cloudwatch.Stats.MAXIMUM,
      period: Duration.minutes(1),
    }),
    threshold: 0,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    evaluationPeriods: 1,
    // SQS stops publishing metrics for a queue with no activity; keep the last state
    // rather than clearing the alarm while dead letters still wait.
    treatMissingData: cloudwatch.TreatMissingData.IGNORE,
  });
}

function mismatchAlarmOf(scope: Construct, consumer: MonitoredConsumer): cloudwatch.Alarm {
  return new cloudwatch.Alarm(scope, 'MismatchAlarm', {
    alarmDescription: `Consumer ${consumer.consumerName} received a dedup key it had already recorded with a different payload: a producer reuses keys for different messages. The messages are in the dead-letter queue.`,
    metric: consumerMetric(consumer, METRICS.mismatch, { period: Duration.minutes(1) }),
    threshold: 0,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    evaluationPeriods: 1,
    // The runtime emits the metric only when a mismatch happens.
    treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
  });
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
export function createConsumerDashboard(
  scope: Construct,
  consumer: MonitoredConsumer,
  alarms: readonly cloudwatch.Alarm[],
): cloudwatch.Dashboard {
  const dashboard = new cloudwatch.Dashboard(scope, 'Dashboard');
  const period = Duration.minutes(1);
  const outcomes = OUTCOMES.map(([metricName, label]) =>
    consumerMetric(consumer, metricName, { period, label }),
  );
  const queueWidgets: cloudwatch.IWidget[] = [
    new cloudwatch.GraphWidget({
      title: 'Queue backlog',
      left: [
        consumer.queue.metricApproximateNumberOfMessagesVisible({
          period,
          statistic: cloudwatch.Stats.MAXIMUM,
        }),
      ],
      right: [
        consumer.queue.metricApproximateAgeOfOldestMessage({ period, statistic: cloudwatch.Stats.MAXIMUM }),
      ],
      width: 8,
    }),
  ];
  if (consumer.deadLetterQueue) {
    queueWidgets.push(
      new cloudwatch.GraphWidget({
        title: 'Dead-letter queue depth',
        left: [
          consumer.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
            period,
            statistic: cloudwatch.Stats.MAXIMUM,
          }),
        ],
        width: 8,
      }),
    );
  }
  dashboard.addWidgets(
    new cloudwatch.TextWidget({
      markdown: `# Consumer ${consumer.consumerName}\nMode \`${consumer.mode}\`, dead letters \`${consumer.deadLetterMode}\`, record TTL ${consumer.recordTtl.toHumanString()}.`,
      width: 24,
      height: 2,
    }),
  );
  dashboard.addWidgets(
    new cloudwatch.GraphWidget({ title: 'Outcomes', left: outcomes, width: 16, stacked: false }),
    new cloudwatch.GraphWidget({ title: 'Duplicate rate', left: [duplicateRate(consumer)], width: 8 }),
  );
  dashboard.addWidgets(
    ...queueWidgets,
    new cloudwatch.GraphWidget({
      title: 'Function',
      left: [consumer.handler.metricErrors({ period }), consumer.handler.metricThrottles({ period })],
      right: [consumer.handler.metricDuration({ period, statistic: cloudwatch.Stats.p(99) })],
      width: 8,
    }),
  );
  if (alarms.length > 0) {
    dashboard.addWidgets(
      new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: [...alarms], width: 24 }),
    );
  }
  return dashboard;
}
