/**
 * What every consumer construct shows operators, whatever its transport: the metrics of the
 * runtime's Embedded Metric Format output (names from the contract's `METRICS`, dimension
 * `Consumer`), the dead-letter and mismatch alarms, and the dashboard's layout. Each transport's
 * monitoring adds its own alarms (backlog, iterator age, ...) and its own dashboard widgets.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { METRIC_DIMENSION_CONSUMER, METRICS } from '../lambda/core/contract';

/** What a consumer's outcome metrics are keyed by. */
export interface MeteredConsumer {
  readonly consumerName: string;
  readonly metricNamespace: string;
}

/** A metric of the runtime's Embedded Metric Format output for one consumer (Sum over 5 minutes). */
export function consumerMetric(
  consumer: MeteredConsumer,
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
  consumer: MeteredConsumer,
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

/**
 * Creates, in `scope`, the alarm `DeadLetterQueueAlarm` on messages visible in `deadLetterQueue`
 * (> 0 in a minute); `alarmDescription` tells the operator what waits there and what to do.
 */
export function createDeadLetterQueueAlarm(
  scope: Construct,
  deadLetterQueue: sqs.IQueue,
  alarmDescription: string,
): cloudwatch.Alarm {
  return new cloudwatch.Alarm(scope, 'DeadLetterQueueAlarm', {
    alarmDescription,
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

/**
 * Creates, in `scope`, the alarm `MismatchAlarm` on payload mismatches (same dedup key, different
 * payload; > 0 in a minute); `alarmDescription` names the consumer and where the messages went.
 */
export function createMismatchAlarm(
  scope: Construct,
  consumer: MeteredConsumer,
  alarmDescription: string,
): cloudwatch.Alarm {
  return new cloudwatch.Alarm(scope, 'MismatchAlarm', {
    alarmDescription,
    metric: consumerMetric(consumer, METRICS.mismatch, { period: Duration.minutes(1) }),
    threshold: 0,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    evaluationPeriods: 1,
    // The runtime emits the metric only when a mismatch happens.
    treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
  });
}

/** Makes every alarm of `alarms` notify `alarmTopic`, when there is one. */
export function notifyAlarmTopic(
  alarms: readonly cloudwatch.Alarm[],
  alarmTopic: sns.ITopic | undefined,
): void {
  if (!alarmTopic) return;
  for (const alarm of alarms) alarm.addAlarmAction(new cloudwatchActions.SnsAction(alarmTopic));
}

/** What a transport puts on the consumer's dashboard. */
export interface DashboardContent {
  /** The header, Markdown: the consumer's name and the settings an operator reads first. */
  readonly header: string;
  /**
   * The outcome row, in place of every consumer outcome and the duplicate rate (the outbox
   * relay's own outcomes and event age).
   * @default every outcome of `OUTCOMES` and the duplicate rate
   */
  readonly outcomeWidgets?: readonly cloudwatch.IWidget[];
  /** The transport's graphs (backlog, iterator age, dead letters, ...), before the function's. */
  readonly transportWidgets: readonly cloudwatch.IWidget[];
  /** The alarms whose status the dashboard shows, when there are any. */
  readonly alarms: readonly cloudwatch.Alarm[];
}

/**
 * Creates, in `scope`, the consumer's dashboard (`Dashboard`): the header; every outcome and the
 * duplicate rate; the transport's widgets and the function's health; and the status of the
 * alarms, when there are any.
 */
export function createConsumerDashboard(
  scope: Construct,
  consumer: MeteredConsumer & { readonly handler: lambda.IFunction },
  content: DashboardContent,
): cloudwatch.Dashboard {
  const dashboard = new cloudwatch.Dashboard(scope, 'Dashboard');
  const period = Duration.minutes(1);
  dashboard.addWidgets(new cloudwatch.TextWidget({ markdown: content.header, width: 24, height: 2 }));
  dashboard.addWidgets(
    ...(content.outcomeWidgets ?? [
      new cloudwatch.GraphWidget({
        title: 'Outcomes',
        left: OUTCOMES.map(([metricName, label]) => consumerMetric(consumer, metricName, { period, label })),
        width: 16,
        stacked: false,
      }),
      new cloudwatch.GraphWidget({ title: 'Duplicate rate', left: [duplicateRate(consumer)], width: 8 }),
    ]),
  );
  dashboard.addWidgets(
    ...content.transportWidgets,
    new cloudwatch.GraphWidget({
      title: 'Function',
      left: [consumer.handler.metricErrors({ period }), consumer.handler.metricThrottles({ period })],
      right: [consumer.handler.metricDuration({ period, statistic: cloudwatch.Stats.p(99) })],
      width: 8,
    }),
  );
  if (content.alarms.length > 0) {
    dashboard.addWidgets(
      new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: [...content.alarms], width: 24 }),
    );
  }
  return dashboard;
}
