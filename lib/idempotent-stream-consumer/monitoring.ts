/**
 * What an `IdempotentStreamConsumer` shows operators beyond what every consumer shows
 * (`../consumer-monitoring.ts`): the alarms on how far behind its source it is (the iterator age
 * of a stream, the offset lag of a Kafka topic), function errors, the on-failure destination, dead
 * letters and payload mismatches, and the dashboard with that lag and the on-failure and
 * dead-letter depths.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import type { ConsumerMode } from '../../lambda/core/contract';
import {
  createConsumerDashboard,
  createDeadLetterQueueAlarm,
  createMismatchAlarm,
  notifyAlarmTopic,
} from '../consumer-monitoring';

/** The stream consumer that alarms and the dashboard watch. */
export interface MonitoredStreamConsumer {
  readonly consumerName: string;
  readonly metricNamespace: string;
  readonly mode: ConsumerMode;
  readonly recordTtl: Duration;
  readonly maxRecordAge: Duration;
  readonly handler: lambda.IFunction;
  /** The on-failure destination when it is a queue. */
  readonly onFailureQueue?: sqs.IQueue;
  /** The on-failure destination when it is a topic. */
  readonly onFailureTopic?: sns.ITopic;
  readonly deadLetterQueue: sqs.IQueue;
  /** Set when the source is a Kafka topic: its lag is `OffsetLag` (records), not `IteratorAge`. */
  readonly kafka?: unknown;
}

/** How far behind its source a consumer may fall before its lag alarm fires. */
export type LagThreshold =
  | { readonly metric: 'IteratorAge'; readonly threshold: Duration }
  | { readonly metric: 'OffsetLag'; readonly threshold: number };

/** The alarms of a stream consumer (see {@link createStreamConsumerAlarms}). */
export interface StreamConsumerAlarms {
  /** On `IteratorAge` for a stream, on `OffsetLag` for a Kafka topic. */
  readonly lagAlarm: cloudwatch.Alarm;
  readonly errorsAlarm: cloudwatch.Alarm;
  readonly onFailureAlarm: cloudwatch.Alarm;
  readonly deadLetterQueueAlarm: cloudwatch.Alarm;
  readonly mismatchAlarm: cloudwatch.Alarm;
  /** Every alarm above, in that order. */
  readonly all: readonly cloudwatch.Alarm[];
}

/** A metric of the consumer's function, its maximum over a minute. */
function maximumPerMinute(
  consumer: Pick<MonitoredStreamConsumer, 'handler'>,
  metricName: string,
  props?: cloudwatch.MetricOptions,
): cloudwatch.Metric {
  return consumer.handler.metric(metricName, {
    statistic: cloudwatch.Stats.MAXIMUM,
    period: Duration.minutes(1),
    ...props,
  });
}

/** Lambda's `IteratorAge` of the consumer's function: the age of the last record of each batch it received. */
export function iteratorAgeMetric(
  consumer: Pick<MonitoredStreamConsumer, 'handler'>,
  props?: cloudwatch.MetricOptions,
): cloudwatch.Metric {
  return maximumPerMinute(consumer, 'IteratorAge', props);
}

/**
 * Lambda's `OffsetLag` of the consumer's function (Kafka sources): records written to the topic
 * and not yet processed by the consumer group.
 */
export function offsetLagMetric(
  consumer: Pick<MonitoredStreamConsumer, 'handler'>,
  props?: cloudwatch.MetricOptions,
): cloudwatch.Metric {
  return maximumPerMinute(consumer, 'OffsetLag', props);
}

/** The lag metric of `consumer`'s source. */
function lagMetric(consumer: MonitoredStreamConsumer): cloudwatch.Metric {
  return consumer.kafka === undefined ? iteratorAgeMetric(consumer) : offsetLagMetric(consumer);
}

/** Messages the on-failure destination holds (a queue) or received (a topic), per minute. */
function onFailureMetric(consumer: MonitoredStreamConsumer, period: Duration): cloudwatch.IMetric {
  if (consumer.onFailureTopic) {
    return consumer.onFailureTopic.metricNumberOfMessagesPublished({
      statistic: cloudwatch.Stats.SUM,
      period,
    });
  }
  return (consumer.onFailureQueue as sqs.IQueue).metricApproximateNumberOfMessagesVisible({
    statistic: cloudwatch.Stats.MAXIMUM,
    period,
  });
}

/**
 * Creates, in `scope`, the lag (iterator age, or offset lag), function-errors, on-failure,
 * dead-letter and mismatch alarms, each notifying `alarmTopic` when given.
 */
export function createStreamConsumerAlarms(
  scope: Construct,
  consumer: MonitoredStreamConsumer,
  options: { readonly lag: LagThreshold; readonly alarmTopic?: sns.ITopic },
): StreamConsumerAlarms {
  const name = consumer.consumerName;
  const { lag } = options;
  const behind =
    lag.metric === 'IteratorAge'
      ? `more than ${lag.threshold.toHumanString()} behind its stream`
      : `${lag.threshold.toLocaleString('en-US')} records or more behind its topic`;
  const lagAlarm = new cloudwatch.Alarm(
    scope,
    lag.metric === 'IteratorAge' ? 'IteratorAgeAlarm' : 'OffsetLagAlarm',
    {
      alarmDescription: `Stream consumer ${name} is ${behind}: it is failing, throttled or too slow. Records older than ${consumer.maxRecordAge.toHumanString()} go to the on-failure destination unprocessed.`,
      metric: lagMetric(consumer),
      threshold: lag.metric === 'IteratorAge' ? lag.threshold.toMilliseconds() : lag.threshold,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      // No data means no invocations, so nothing is behind.
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    },
  );
  const errorsAlarm = new cloudwatch.Alarm(scope, 'ErrorsAlarm', {
    alarmDescription: `The function of stream consumer ${name} failed (threw or timed out): the event source retries or bisects the batch and its shard waits. Read the function's logs.`,
    metric: consumer.handler.metricErrors({ statistic: cloudwatch.Stats.SUM, period: Duration.minutes(1) }),
    threshold: 0,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    evaluationPeriods: 1,
    treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
  });
  const onFailureAlarm = new cloudwatch.Alarm(scope, 'OnFailureAlarm', {
    alarmDescription: `The event source of stream consumer ${name} gave up on a batch (out of retries, or older than ${consumer.maxRecordAge.toHumanString()}) and sent where its records sit (shard and sequence numbers, or topic-partition and offsets) to the on-failure destination: re-read them while the stream or topic still holds them.`,
    metric: onFailureMetric(consumer, Duration.minutes(1)),
    threshold: 0,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    evaluationPeriods: 1,
    // A queue with no activity stops publishing metrics: keep the last state while messages
    // still wait. A topic publishes only when a batch is given up on.
    treatMissingData: consumer.onFailureTopic
      ? cloudwatch.TreatMissingData.NOT_BREACHING
      : cloudwatch.TreatMissingData.IGNORE,
  });
  const deadLetterQueueAlarm = createDeadLetterQueueAlarm(
    scope,
    consumer.deadLetterQueue,
    `Records of stream consumer ${name} failed permanently (malformed, missing key, payload mismatch) and wait in its dead-letter queue: read their reason attributes and fix the cause; write a record to the stream or topic again to replay it.`,
  );
  const mismatchAlarm = createMismatchAlarm(
    scope,
    consumer,
    `Stream consumer ${name} received a dedup key it had already recorded with a different payload: a producer reuses keys for different records. The records are in the dead-letter queue.`,
  );
  const all = [lagAlarm, errorsAlarm, onFailureAlarm, deadLetterQueueAlarm, mismatchAlarm];
  notifyAlarmTopic(all, options.alarmTopic);
  return {
    lagAlarm,
    errorsAlarm,
    onFailureAlarm,
    deadLetterQueueAlarm,
    mismatchAlarm,
    all: Object.freeze(all),
  };
}

/**
 * Creates, in `scope`, the stream consumer's dashboard: a header naming mode, record TTL and
 * `maxRecordAge`; every outcome and the duplicate rate; the lag, the on-failure and
 * dead-letter depths and the function's health; and the status of `alarms`, when there are any.
 */
export function createStreamConsumerDashboard(
  scope: Construct,
  consumer: MonitoredStreamConsumer,
  alarms: readonly cloudwatch.Alarm[],
): cloudwatch.Dashboard {
  const period = Duration.minutes(1);
  return createConsumerDashboard(scope, consumer, {
    header: `# Stream consumer ${consumer.consumerName}\nMode \`${consumer.mode}\`, record TTL ${consumer.recordTtl.toHumanString()}, records older than ${consumer.maxRecordAge.toHumanString()} given up on.`,
    transportWidgets: [
      new cloudwatch.GraphWidget({
        title: consumer.kafka === undefined ? 'Iterator age' : 'Offset lag',
        left: [lagMetric(consumer)],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'On-failure and dead letters',
        left: [
          onFailureMetric(consumer, period),
          consumer.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
            period,
            statistic: cloudwatch.Stats.MAXIMUM,
          }),
        ],
        width: 8,
      }),
    ],
    alarms,
  });
}
