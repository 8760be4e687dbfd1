/**
 * The checks over an `IdempotentStreamConsumer`'s props, made before anything is created. Every
 * check runs; the construct then throws one error listing every failure, so a synth reports
 * all that is wrong at once. Values that are unresolved tokens are skipped. The same pass
 * yields the synth-time warnings (`effectively-once:*` ids).
 *
 * Pure over the props and the durations derived from them (`resolveStreamTiming`).
 */
import { Duration, Token } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import {
  CONSUMER_MODES,
  DEFAULT_DEADLINE_MARGIN_MILLIS,
  ENV,
  MAX_COMPLETED_CACHE_ENTRIES,
} from '../../lambda/core/contract';
import {
  type CapacityPlanning,
  capacityNotes,
  checkExpectedPeak,
  knownWarmWrites,
} from '../capacity-planner';
import { LAMBDA_MAX_TIMEOUT } from '../consumer-defaults';
import {
  checkConsumerNameAndNamespace,
  checkContractEnvironment,
  checkDuration,
  checkInteger,
  checkLogLevel,
  checkOneOf,
  checkOutbox,
  checkTables,
  collectValidation,
  type Fail,
  type PropsValidation,
  type Warn,
} from '../consumer-validation';
import { checkManagedInstances } from '../managed-instances';
import { STREAM_MAX_RECORD_AGE_LIMIT } from '../record-ttl';
import {
  DEFAULT_ITERATOR_AGE_THRESHOLD,
  MAX_RETRY_ATTEMPTS,
  MAX_STREAM_BATCH_SIZE,
  MIN_RECORD_AGE,
} from './defaults';
import { checkKafkaSource } from './kafka';
import type { IdempotentStreamConsumerProps } from './props';
import type { StreamConsumerTiming } from './timing';

/** Which prop sets each environment variable of the contract, for error messages. */
const ENV_SOURCES: Readonly<Record<string, string>> = {
  [ENV.inboxTable]: '`table`',
  [ENV.consumer]: '`consumerName`',
  [ENV.mode]: '`mode`',
  [ENV.ttlSeconds]: '`recordTtl`',
  [ENV.deadLetterMode]: 'the dead-letter queue (always `direct` for a stream)',
  [ENV.deadLetterQueueUrl]: '`deadLetterQueue`',
  [ENV.deadLetterMaxMessageBytes]: 'the dead-letter queue it creates',
  [ENV.leaseMillis]: '`lease`',
  [ENV.metricNamespace]: '`metricNamespace`',
  [ENV.logLevel]: '`logLevel`',
  [ENV.completedCacheMaxEntries]: '`completedCacheMaxEntries`',
};

/** Runs every check over `props` and the durations derived from them. */
export function validateStreamConsumerProps(
  props: IdempotentStreamConsumerProps,
  timing: StreamConsumerTiming,
  capacity?: CapacityPlanning,
): PropsValidation {
  const { failures, notes, fail, warn, info } = collectValidation();

  checkOneOf('mode', props.mode, CONSUMER_MODES, fail);
  checkLogLevel(props.logLevel, fail);
  checkOutbox(props, fail);
  checkSource(props, fail, warn);
  checkDestinations(props, fail);
  checkStartingPosition(props, fail);
  checkConsumerNameAndNamespace(props, fail);
  checkNumbers(props, fail);
  checkContractEnvironment(props.environment, ENV_SOURCES, fail);
  checkTables(props, fail, warn);
  checkTimeout(timing, fail);
  checkAges(props, timing, warn);
  if (props.mode === 'two-phase') checkLease(props, timing, fail, warn);
  checkExpectedPeak(props.expectedPeakMessagesPerSecond, fail);
  checkManagedInstances(props, fail);
  if (capacity) capacityNotes(capacity.plan, capacity.input, knownWarmWrites, { warn, info });
  return { failures, notes };
}

/** Exactly one source, a DynamoDB table that has a stream, and a Kafka topic's settings. */
function checkSource(props: IdempotentStreamConsumerProps, fail: Fail, warn: Warn): void {
  const sources = [props.stream, props.sourceTable, props.kafka].filter((source) => source !== undefined);
  if (sources.length !== 1) {
    fail(
      `Expected exactly one of \`stream\` (a Kinesis data stream), \`sourceTable\` (a DynamoDB table with a stream) and \`kafka\` (a Kafka topic), got ${sources.length === 0 ? 'none' : sources.length}`,
    );
  }
  if (props.kafka) {
    checkKafkaSource(props.kafka, fail);
    if (props.parallelizationFactor !== undefined) {
      fail(
        'Expected no `parallelizationFactor` with a Kafka source: a partition is processed one batch at a time',
      );
    }
    if (props.iteratorAgeThreshold !== undefined) {
      fail(
        'Expected `offsetLagThreshold`, not `iteratorAgeThreshold`, with a Kafka source: Lambda reports its `OffsetLag`, not an `IteratorAge`',
      );
    }
  } else if (props.offsetLagThreshold !== undefined) {
    fail('Expected `offsetLagThreshold` only with a Kafka source (`kafka`)');
  }
  const table = props.sourceTable;
  if (!table) return;
  if (table.tableStreamArn === undefined) {
    fail(
      `Expected \`sourceTable\` to have a stream, got ${table.node.path} without one: create it with \`stream: dynamodb.StreamViewType.NEW_AND_OLD_IMAGES\` (or import it with \`tableStreamArn\`)`,
    );
  }
  const resource = table.node.defaultChild;
  const viewType =
    resource instanceof dynamodb.CfnTable && !Token.isUnresolved(resource.streamSpecification)
      ? (resource.streamSpecification as dynamodb.CfnTable.StreamSpecificationProperty | undefined)
          ?.streamViewType
      : undefined;
  if (viewType === dynamodb.StreamViewType.KEYS_ONLY) {
    warn(
      'keysOnlyStream',
      'The stream of `sourceTable` carries only the keys (`KEYS_ONLY`): the payload fingerprint then covers the keys alone, so a different change under the same dedup key cannot be told from a duplicate, and a version attribute cannot be read. Use `NEW_IMAGE` or `NEW_AND_OLD_IMAGES`.',
    );
  }
}

/** At most one on-failure destination; a queue key only when the construct creates a queue. */
function checkDestinations(props: IdempotentStreamConsumerProps, fail: Fail): void {
  if (props.onFailureQueue && props.onFailureTopic) {
    fail('Expected at most one of `onFailureQueue` and `onFailureTopic`, got both');
  }
  const createsQueue = !(props.onFailureQueue || props.onFailureTopic) || !props.deadLetterQueue;
  if (props.queueEncryptionKey && !createsQueue) {
    fail(
      'Expected no `queueEncryptionKey` with an existing on-failure destination and `deadLetterQueue`: the construct creates no queue; configure the queues you pass',
    );
  }
}

/** `AT_TIMESTAMP` needs a timestamp and a Kinesis stream; a timestamp needs `AT_TIMESTAMP`. */
function checkStartingPosition(props: IdempotentStreamConsumerProps, fail: Fail): void {
  const atTimestamp = props.startingPosition === lambda.StartingPosition.AT_TIMESTAMP;
  if (atTimestamp && props.startingPositionTimestamp === undefined) {
    fail('Expected a `startingPositionTimestamp` with `startingPosition: AT_TIMESTAMP`');
  }
  if (!atTimestamp && props.startingPositionTimestamp !== undefined) {
    fail('Expected `startingPositionTimestamp` only with `startingPosition: AT_TIMESTAMP`');
  }
  if (atTimestamp && props.sourceTable) {
    fail(
      'Expected `startingPosition` to be `TRIM_HORIZON` or `LATEST` for a DynamoDB stream, got `AT_TIMESTAMP` (Kinesis and Kafka only)',
    );
  }
}

/** Counts and durations within AWS's limits. */
function checkNumbers(props: IdempotentStreamConsumerProps, fail: Fail): void {
  checkInteger('memorySize', props.memorySize, 128, 10240, fail);
  checkInteger('batchSize', props.batchSize, 1, MAX_STREAM_BATCH_SIZE, fail);
  checkInteger('parallelizationFactor', props.parallelizationFactor, 1, 10, fail);
  checkInteger('offsetLagThreshold', props.offsetLagThreshold, 1, Number.MAX_SAFE_INTEGER, fail);
  checkInteger('retryAttempts', props.retryAttempts, 0, MAX_RETRY_ATTEMPTS, fail);
  checkInteger(
    'completedCacheMaxEntries',
    props.completedCacheMaxEntries,
    1,
    MAX_COMPLETED_CACHE_ENTRIES,
    fail,
  );
  checkDuration('timeout', props.timeout, Duration.seconds(1), LAMBDA_MAX_TIMEOUT, fail);
  checkDuration('maxBatchingWindow', props.maxBatchingWindow, Duration.seconds(0), Duration.minutes(5), fail);
  checkDuration('maxRecordAge', props.maxRecordAge, MIN_RECORD_AGE, STREAM_MAX_RECORD_AGE_LIMIT, fail);
  checkDuration('recordTtl', props.recordTtl, Duration.seconds(1), undefined, fail);
  checkDuration('producerRetryHorizon', props.producerRetryHorizon, Duration.seconds(0), undefined, fail);
  checkDuration('replayAllowance', props.replayAllowance, Duration.seconds(0), undefined, fail);
  checkDuration('lease', props.lease, Duration.seconds(1), undefined, fail);
  checkDuration('iteratorAgeThreshold', props.iteratorAgeThreshold, Duration.seconds(60), undefined, fail);
}

/** The batch processor starts no record once less than the deadline margin is left. */
function checkTimeout(timing: StreamConsumerTiming, fail: Fail): void {
  const timeout = timing.functionTimeout;
  const margin = Duration.millis(DEFAULT_DEADLINE_MARGIN_MILLIS);
  if (!timeout.isUnresolved() && timeout.toMilliseconds() <= margin.toMilliseconds()) {
    fail(
      `\`timeout\` (${timeout.toHumanString()}) must be longer than the runtime's deadline margin (\`deadlineMarginMillis\`, default ${margin.toHumanString()}): the batch processor starts no record once less than the margin is left, so the function would process nothing`,
    );
  }
}

/**
 * The record TTL covers the replay window; `maxRecordAge` leaves time to re-read what the
 * event source gave up on; the iterator-age alarm fires before records are given up on.
 */
function checkAges(props: IdempotentStreamConsumerProps, timing: StreamConsumerTiming, warn: Warn): void {
  const { window, explanation, defaultRecordTtl } = timing.replay;
  if (
    props.recordTtl &&
    !props.recordTtl.isUnresolved() &&
    props.recordTtl.toSeconds() < window.toSeconds()
  ) {
    warn(
      'recordTtlShorterThanReplayWindow',
      `\`recordTtl\` (${props.recordTtl.toHumanString()}) is shorter than the replay window (${window.toHumanString()}: ${explanation}). A record replayed after its inbox record expired is processed again. Set \`recordTtl\` to at least ${window.toHumanString()}, or leave it unset (default ${defaultRecordTtl.toHumanString()}).`,
    );
  }
  const age = timing.maxRecordAge;
  if (age.isUnresolved()) return;
  const retention = timing.knownRetention;
  if (retention && age.toSeconds() >= retention.toSeconds()) {
    warn(
      'maxRecordAgeOutlivesRetention',
      `\`maxRecordAge\` (${age.toHumanString()}) is not below the stream's retention (${retention.toHumanString()}): a record the event source gives up on leaves the stream at the same time, so the range its on-failure record names can no longer be read. Leave \`maxRecordAge\` unset (half the retention) or shorten it.`,
    );
  }
  const threshold = props.iteratorAgeThreshold ?? DEFAULT_ITERATOR_AGE_THRESHOLD;
  const alarmed = (props.createAlarms ?? true) && props.kafka === undefined;
  if (alarmed && !threshold.isUnresolved() && threshold.toSeconds() >= age.toSeconds()) {
    warn(
      'iteratorAgeAlarmAfterMaxRecordAge',
      `\`iteratorAgeThreshold\` (${threshold.toHumanString()}) is not below \`maxRecordAge\` (${age.toHumanString()}): records are given up on before the iterator-age alarm fires.`,
    );
  }
}

/** The two-phase lease: shorter than the record TTL (the runtime's rule), no shorter than the timeout. */
function checkLease(
  props: IdempotentStreamConsumerProps,
  timing: StreamConsumerTiming,
  fail: Fail,
  warn: Warn,
): void {
  const { lease, recordTtl, functionTimeout } = timing;
  if (lease.isUnresolved()) return;
  if (!recordTtl.isUnresolved() && lease.toMilliseconds() >= recordTtl.toMilliseconds()) {
    const source = props.lease ? '`lease`' : 'The default lease (the function timeout)';
    fail(
      `${source} (${lease.toHumanString()}) must be shorter than \`recordTtl\` (${recordTtl.toHumanString()}) in two-phase mode: a claim must never outlive its record, and the runtime rejects \`leaseMillis\` >= \`ttlSeconds\` at cold start`,
    );
  }
  if (
    props.lease &&
    !functionTimeout.isUnresolved() &&
    lease.toMilliseconds() < functionTimeout.toMilliseconds()
  ) {
    warn(
      'leaseShorterThanTimeout',
      `\`lease\` (${lease.toHumanString()}) is shorter than the function timeout (${functionTimeout.toHumanString()}): another delivery can take over a claim while the invocation that holds it is still running, and the effect runs twice.`,
    );
  }
}
