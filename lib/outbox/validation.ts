/**
 * The checks over an `Outbox`'s props, made before anything is created: every check runs and
 * the construct throws one error listing every failure. Unresolved tokens are skipped. The
 * same pass yields the synth-time warnings (`effectively-once:*` ids).
 */
import * as fs from 'node:fs';
import { Duration, Token } from 'aws-cdk-lib';
import {
  CONSUMER_NAME_PATTERN,
  DEFAULT_DEADLINE_MARGIN_MILLIS,
  FAIR_QUEUE_IS_STANDARD,
  FAIR_TOPIC_IS_STANDARD,
} from '../../lambda/core/contract';
import { describeValue } from '../../lambda/core/errors';
import { LAMBDA_MAX_TIMEOUT } from '../consumer-defaults';
import {
  checkConsumerNameAndNamespace,
  checkDuration,
  checkInteger,
  checkLogLevel,
  collectValidation,
  type PropsValidation,
} from '../consumer-validation';
import { MIN_RECORD_AGE } from '../idempotent-stream-consumer/defaults';
import {
  DEFAULT_RELAY_EVENT_AGE_THRESHOLD,
  DEFAULT_RELAY_ITERATOR_AGE_THRESHOLD,
  MAX_ON_FAILURE_RETENTION,
  MAX_RELAY_BATCH_SIZE,
  OPERATOR_ALLOWANCE,
  OUTBOX_STREAM_RETENTION,
} from './defaults';
import type { OutboxProps } from './props';
import type { OutboxTiming } from './timing';

/** Runs every check over `props`, the relay entry the outbox will bundle, and the durations derived. */
export function validateOutboxProps(
  props: OutboxProps,
  relayEntry: string,
  timing: OutboxTiming,
): PropsValidation {
  const { failures, notes, fail, warn } = collectValidation();

  const destinations = [props.queue, props.eventBus, props.topic].filter((given) => given !== undefined);
  if (destinations.length !== 1) {
    fail(
      `Expected exactly one destination of \`queue\` (SQS), \`eventBus\` (EventBridge) and \`topic\` (SNS), got ${destinations.length === 0 ? 'none' : destinations.length}`,
    );
  }
  if (props.fairQueue) {
    // "In standard queues, using MessageGroupId enables fair queues. If strict ordering is
    // required, use a FIFO queue." (Amazon SQS Developer Guide, Using the message group ID.)
    // "For standard topics: The MessageGroupId is optional and is forwarded only to Amazon SQS
    // standard subscriptions to activate fair queues." (Amazon SNS API Reference, Publish.)
    if (props.queue?.fifo) {
      fail(`Expected a standard queue with \`fairQueue: true\`, got a FIFO queue: ${FAIR_QUEUE_IS_STANDARD}`);
    } else if (props.topic?.fifo) {
      fail(`Expected a standard topic with \`fairQueue: true\`, got a FIFO topic: ${FAIR_TOPIC_IS_STANDARD}`);
    } else if (!props.queue && !props.topic) {
      fail(
        '`fairQueue` marks an SQS queue as fair, or an SNS topic as feeding fair queues: give it only with `queue` or `topic`',
      );
    }
  }
  if (!Token.isUnresolved(relayEntry) && !fs.existsSync(relayEntry)) {
    fail(
      `Expected \`relayEntry\` to be an existing handler file, got \`${describeValue(relayEntry)}\`${props.relayEntry === undefined ? " (the package's relay handler)" : ''}`,
    );
  }
  const name = props.relayName;
  if (name !== undefined && !Token.isUnresolved(name) && !CONSUMER_NAME_PATTERN.test(name)) {
    fail(
      `Expected \`relayName\` to be 1-100 characters of A-Z, a-z, 0-9, '.', '_', ':', '-', got \`${describeValue(name)}\``,
    );
  }
  const source = props.eventSource;
  if (source !== undefined && !Token.isUnresolved(source)) {
    if (!props.eventBus) {
      fail('`eventSource` is the `Source` of EventBridge entries: give it only with `eventBus`');
    } else if (source.length === 0 || source.length > 256 || source.startsWith('aws.')) {
      fail(
        `Expected \`eventSource\` to be 1-256 characters not starting with 'aws.', got \`${describeValue(source)}\``,
      );
    }
  }
  // The shared check reads only `metricNamespace` here (no consumer name is passed).
  checkConsumerNameAndNamespace({ mode: 'marker', metricNamespace: props.metricNamespace }, fail);
  checkLogLevel(props.logLevel, fail);

  checkInteger('relayMemorySize', props.relayMemorySize, 128, 10240, fail);
  checkInteger('batchSize', props.batchSize, 1, MAX_RELAY_BATCH_SIZE, fail);
  checkInteger('retryAttempts', props.retryAttempts, 0, 10_000, fail);
  checkDuration('relayTimeout', props.relayTimeout, Duration.seconds(1), LAMBDA_MAX_TIMEOUT, fail);
  checkDuration('maxRecordAge', props.maxRecordAge, MIN_RECORD_AGE, OUTBOX_STREAM_RETENTION, fail);
  checkDuration('retention', props.retention, Duration.seconds(1), undefined, fail);
  checkDuration(
    'onFailureRetention',
    props.onFailureRetention,
    Duration.seconds(60),
    MAX_ON_FAILURE_RETENTION,
    fail,
  );
  checkDuration('iteratorAgeThreshold', props.iteratorAgeThreshold, Duration.seconds(60), undefined, fail);
  checkDuration('eventAgeThreshold', props.eventAgeThreshold, Duration.seconds(1), undefined, fail);

  const timeout = timing.relayTimeout;
  const margin = Duration.millis(DEFAULT_DEADLINE_MARGIN_MILLIS);
  if (!timeout.isUnresolved() && timeout.toMilliseconds() <= margin.toMilliseconds()) {
    fail(
      `\`relayTimeout\` (${timeout.toHumanString()}) must be longer than the runtime's deadline margin (${margin.toHumanString()}): the relay would publish nothing`,
    );
  }

  const { retention, derived } = timing;
  const giveUp = derived.giveUpHorizon.toHumanString();
  if (props.retention && !retention.isUnresolved()) {
    if (retention.toSeconds() < derived.onFailureHorizon.toSeconds()) {
      const queue = timing.onFailureRetention.isUnresolved()
        ? `${MAX_ON_FAILURE_RETENTION.toHumanString()} (a token counts as SQS's longest)`
        : timing.onFailureRetention.toHumanString();
      warn(
        'outboxRetentionShorterThanOnFailureRecords',
        `\`retention\` (${retention.toHumanString()}) is shorter than the relay's give-up horizon ${giveUp} + on-failure queue retention ${queue} = ${derived.onFailureHorizon.toHumanString()}: an on-failure record would name events the table no longer holds. Lengthen \`retention\` or shorten \`onFailureRetention\`.`,
      );
    }
    if (retention.toSeconds() < derived.floor.toSeconds()) {
      warn(
        'outboxRetentionShorterThanDerived',
        `\`retention\` (${retention.toHumanString()}) is shorter than stream retention ${OUTBOX_STREAM_RETENTION.toHumanString()} + the relay's give-up horizon ${giveUp} + operator allowance ${OPERATOR_ALLOWANCE.toHumanString()} = ${derived.floor.toHumanString()}: an event the relay gave up on can expire before an operator republishes it from the table.`,
      );
    }
  }
  const age = timing.maxRecordAge;
  // Neither age passes `maxRecordAge`: the event source gives such records up unpublished.
  const ageAlarms = [
    {
      prop: 'iteratorAgeThreshold',
      threshold: props.iteratorAgeThreshold ?? DEFAULT_RELAY_ITERATOR_AGE_THRESHOLD,
      id: 'iteratorAgeAlarmAfterMaxRecordAge',
      consequence: 'events are given up on before the iterator-age alarm fires',
    },
    {
      prop: 'eventAgeThreshold',
      threshold: props.eventAgeThreshold ?? DEFAULT_RELAY_EVENT_AGE_THRESHOLD,
      id: 'eventAgeAlarmAfterMaxRecordAge',
      consequence: 'no event that old is published, so the event-age alarm never fires',
    },
  ];
  for (const { prop, threshold, id, consequence } of ageAlarms) {
    if (
      (props.createAlarms ?? true) &&
      !threshold.isUnresolved() &&
      !age.isUnresolved() &&
      threshold.toMilliseconds() >= age.toMilliseconds()
    ) {
      warn(
        id,
        `\`${prop}\` (${threshold.toHumanString()}) is not below \`maxRecordAge\` (${age.toHumanString()}): ${consequence}.`,
      );
    }
  }
  return { failures, notes };
}
