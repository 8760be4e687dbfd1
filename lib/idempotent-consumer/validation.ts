/**
 * The checks over an `IdempotentConsumer`'s props, made before anything is created. Every check
 * runs; the construct then throws one error listing every failure (each naming the prop, what
 * was expected and what was given), so a synth reports all that is wrong at once instead of one
 * problem per run. Values that are unresolved tokens are skipped: they are known only at deploy
 * time. The same pass yields the synth-time warnings (`effectively-once:*` ids).
 *
 * Pure over the props and the durations derived from them (`resolveTiming`): no construct is
 * created and nothing is annotated here.
 */
import { Duration, Stack, Token } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import {
  CONSUMER_MODES,
  DEAD_LETTER_MODES,
  DEFAULT_DEADLINE_MARGIN_MILLIS,
  ENV,
  MAX_COMPLETED_CACHE_ENTRIES,
} from '../../lambda/core/contract';
import { describeValue } from '../../lambda/core/errors';
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
  isKnownNumber,
  type PropsValidation,
  type Warn,
} from '../consumer-validation';
import { checkManagedInstances } from '../managed-instances';
import { SQS_MAX_RETENTION } from '../record-ttl';
import {
  DEFAULT_MAX_RECEIVE_COUNT,
  MIN_RECOMMENDED_MAX_RECEIVE_COUNT,
  SQS_POLLERS,
  VISIBILITY_FACTOR,
} from './defaults';
import { checkFairQueue } from './fair-queue';
import type { IdempotentConsumerProps } from './props';
import { type ConsumerTiming, knownDeadLetterQueue, ownDeadLetterQueue, requiredVisibility } from './timing';

/** Props that configure the queue the construct creates; they fail with an existing `queue`. */
const QUEUE_CREATION_PROPS = [
  'fifo',
  'contentBasedDeduplication',
  'queueName',
  'visibilityTimeout',
  'retentionPeriod',
  'queueEncryptionKey',
  'maxReceiveCount',
] as const;

/** Props that configure the dead-letter queue the construct creates. */
const DEAD_LETTER_CREATION_PROPS = ['deadLetterQueueName', 'deadLetterRetentionPeriod'] as const;

/** Props that configure the function the construct creates; they fail with a given `handler`. */
const FUNCTION_CREATION_PROPS = [
  'memorySize',
  'timeout',
  'runtime',
  'architecture',
  'environment',
  'logRetention',
  'tracing',
  'managedInstances',
] as const;

/** Which prop sets each environment variable of the contract, for error messages. */
const ENV_SOURCES: Readonly<Record<string, string>> = {
  [ENV.inboxTable]: '`table`',
  [ENV.consumer]: '`consumerName`',
  [ENV.mode]: '`mode`',
  [ENV.ttlSeconds]: '`recordTtl`',
  [ENV.deadLetterMode]: '`deadLetterMode`',
  [ENV.deadLetterQueueUrl]: '`deadLetterQueue` with `deadLetterMode: direct`',
  [ENV.deadLetterMaxMessageBytes]: 'the dead-letter queue it creates, with `deadLetterMode: direct`',
  [ENV.leaseMillis]: '`lease`',
  [ENV.metricNamespace]: '`metricNamespace`',
  [ENV.logLevel]: '`logLevel`',
  [ENV.completedCacheMaxEntries]: '`completedCacheMaxEntries`',
  [ENV.groupMetricsMaxGroups]: '`fairQueue` (`maxMetricGroups`)',
};

/** SQS's rule for a queue name, without the `.fifo` suffix of a FIFO queue. */
const QUEUE_NAME_PATTERN = /^[A-Za-z0-9_-]{1,75}$/;

/** Runs every check over `props` and the durations derived from them. */
export function validateConsumerProps(
  props: IdempotentConsumerProps,
  timing: ConsumerTiming,
  capacity?: CapacityPlanning,
): PropsValidation {
  const { failures, notes, fail, warn, info } = collectValidation();

  checkChoices(props, fail);
  checkExclusiveProps(props, fail);
  checkNames(props, fail);
  checkNumbers(props, fail);
  checkEnvironment(props, fail);
  checkTables(props, fail, warn);
  checkQueues(props, fail, warn);
  checkTimeouts(props, timing, fail, info);
  checkRecordTtl(props, timing, warn);
  checkMultiRegionTables(props, fail, warn);
  if (props.mode === 'two-phase') checkLease(props, timing, fail, warn);
  checkCapacityProps(props, fail);
  checkManagedInstances(props, fail);
  checkFairQueue(props, fail);
  if (capacity) capacityNotes(capacity.plan, capacity.input, knownWarmWrites, { warn, info });
  if (isKnownNumber(props.maxReceiveCount) && props.maxReceiveCount < MIN_RECOMMENDED_MAX_RECEIVE_COUNT) {
    warn(
      'lowMaxReceiveCount',
      `\`maxReceiveCount\` is ${props.maxReceiveCount}: transient failures (throttling, conflicts, in-flight duplicates) recover by being received again, so a message can reach the dead-letter queue while it would still have succeeded. Use at least ${MIN_RECOMMENDED_MAX_RECEIVE_COUNT} (default ${DEFAULT_MAX_RECEIVE_COUNT}).`,
    );
  }
  return { failures, notes };
}

/** How a table given to the construct replicates, when it is a global table of this app. */
interface GlobalTable {
  /** Replicas known when the consumer is created, the table's own Region included. */
  readonly replicas: number;
  /** Multi-Region strong consistency (MRSC), else eventual (MREC). */
  readonly strong: boolean;
}

/**
 * The replication of `table` when it is a `TableV2` of this app with more than one replica or
 * with strong multi-Region consistency; `undefined` for a single-Region table and for tables
 * imported by name or ARN, whose replication the construct cannot see.
 */
function globalTableOf(table: dynamodb.ITable): GlobalTable | undefined {
  const cfn = table.node.defaultChild;
  if (!(cfn instanceof dynamodb.CfnGlobalTable)) return undefined;
  const replicas = Stack.of(table).resolve(cfn.replicas) as unknown;
  const count = Array.isArray(replicas) ? replicas.length : 1;
  const strong = cfn.multiRegionConsistency === dynamodb.MultiRegionConsistency.STRONG;
  return count > 1 || strong ? { replicas: count, strong } : undefined;
}

/**
 * The inbox and business tables are single-Region tables, or global tables the mode stays safe
 * on. On an eventually consistent (MREC) global table a marker written in one Region is unseen in
 * another until it replicates, so every mode deduplicates per Region only: a warning. A strongly
 * consistent (MRSC) global table takes no transactions, so `atomic` mode, whose commit is one
 * `TransactWriteItems`, could commit nothing: an error.
 */
function checkMultiRegionTables(props: IdempotentConsumerProps, fail: Fail, warn: Warn): void {
  const tables = [
    ...(props.table ? [{ prop: '`table`', table: props.table }] : []),
    ...(props.businessTables ?? []).map((business, index) => ({
      prop: `\`businessTables[${index}].table\``,
      table: business.table,
    })),
  ];
  for (const { prop, table } of tables) {
    const global = globalTableOf(table);
    if (global === undefined) continue;
    if (global.strong) {
      if (props.mode === 'atomic') {
        fail(
          `Expected ${prop} not to be a multi-Region strongly consistent (MRSC) global table in \`atomic\` mode: MRSC tables take no transactions, and atomic mode commits the marker with the business writes in one TransactWriteItems. Use a single-Region table, or \`entity\` or \`two-phase\` mode`,
        );
      }
    } else {
      warn(
        'multiRegionTable',
        `${prop} is a global table with ${global.replicas} replicas and eventual consistency (MREC): a dedup marker written in one Region is not seen in another until it replicates, so a message delivered in two Regions is processed in both. Consume each queue in one Region only, or see docs/limits.md (multi-Region).`,
      );
    }
  }
}

/** `mode`, `deadLetterMode` and `logLevel` take the contract's values. */
function checkChoices(props: IdempotentConsumerProps, fail: Fail): void {
  // `mode` and `deadLetterMode` decide the grants and resources at synth time, so a token
  // cannot stand for them; the log level is only passed on to the function.
  checkOneOf('mode', props.mode, CONSUMER_MODES, fail);
  if (props.deadLetterMode !== undefined) {
    checkOneOf('deadLetterMode', props.deadLetterMode, DEAD_LETTER_MODES, fail);
  }
  checkLogLevel(props.logLevel, fail);
  checkOutbox(props, fail);
}

/** Props that only mean something without a given resource, or with another prop. */
function checkExclusiveProps(props: IdempotentConsumerProps, fail: Fail): void {
  if ((props.entry === undefined) === (props.handler === undefined)) {
    fail(
      `Expected exactly one of \`entry\` (a handler file to bundle) and \`handler\` (an existing function), got ${props.entry === undefined ? 'neither' : 'both'}`,
    );
  }
  const rejectSet = (names: readonly (keyof IdempotentConsumerProps)[], context: string) => {
    const set = names.filter((name) => props[name] !== undefined);
    if (set.length > 0) fail(`Expected no ${set.map((name) => `\`${name}\``).join(', ')} ${context}`);
  };
  if (props.handler) rejectSet(FUNCTION_CREATION_PROPS, 'with a given `handler`: configure your function');
  if (props.queue) {
    rejectSet(QUEUE_CREATION_PROPS, 'with an existing `queue`: configure the queue you pass');
    rejectSet(
      DEAD_LETTER_CREATION_PROPS,
      'with an existing `queue`: its dead-letter queue is configured on the queue you pass',
    );
  } else if (props.deadLetterQueue) {
    rejectSet(DEAD_LETTER_CREATION_PROPS, 'with an existing `deadLetterQueue`: configure the queue you pass');
  }
  if (props.contentBasedDeduplication !== undefined && props.fifo !== true) {
    fail('Expected `contentBasedDeduplication` only with `fifo: true`');
  }
  if (props.duplicateRateAlarm === false && props.duplicateRateThreshold !== undefined) {
    fail('Expected no `duplicateRateThreshold` with `duplicateRateAlarm: false`');
  }
  if (props.provisionedPollers !== undefined && props.maxConcurrency !== undefined) {
    fail(
      'Expected `provisionedPollers` or `maxConcurrency`, not both: AWS makes provisioned mode and maximum concurrency mutually exclusive on an SQS event source',
    );
  }
}

/**
 * The capacity planner's props: a positive expected peak, message groups only with it on a FIFO
 * queue, and provisioned pollers within AWS's ranges (`SQS_POLLERS`), the minimum at most the
 * maximum.
 */
function checkCapacityProps(props: IdempotentConsumerProps, fail: Fail): void {
  const rate = props.expectedPeakMessagesPerSecond;
  checkExpectedPeak(rate, fail);
  const groups = props.expectedMessageGroups;
  if (groups !== undefined) {
    if (isKnownNumber(groups) && !(Number.isSafeInteger(groups) && groups > 0)) {
      fail(`Expected \`expectedMessageGroups\` to be a positive integer, got \`${describeValue(groups)}\``);
    }
    const fifo = props.queue ? props.queue.fifo : props.fifo === true;
    if (!fifo) fail('Expected `expectedMessageGroups` only on a FIFO queue');
    if (rate === undefined)
      fail('Expected `expectedMessageGroups` only with `expectedPeakMessagesPerSecond`');
  }
  const pollers = props.provisionedPollers;
  if (!pollers) return;
  const { minimum, maximum } = SQS_POLLERS;
  checkInteger('provisionedPollers.minimum', pollers.minimum, minimum.low, minimum.high, fail);
  checkInteger('provisionedPollers.maximum', pollers.maximum, maximum.low, maximum.high, fail);
  const low = pollers.minimum ?? minimum.default;
  const high = pollers.maximum ?? maximum.default;
  if (isKnownNumber(low) && isKnownNumber(high) && low > high) {
    fail(
      `Expected \`provisionedPollers.minimum\` (${describeValue(low)}) to be at most \`provisionedPollers.maximum\` (${describeValue(high)})`,
    );
  }
}

/** `consumerName`, `metricNamespace`, `queueName` and `deadLetterQueueName` follow AWS's rules. */
function checkNames(props: IdempotentConsumerProps, fail: Fail): void {
  checkConsumerNameAndNamespace(props, fail);
  const known = (name: string | undefined): name is string => name !== undefined && !Token.isUnresolved(name);
  for (const [prop, name] of [
    ['queueName', props.queueName],
    ['deadLetterQueueName', props.deadLetterQueueName],
  ] as const) {
    if (!known(name)) continue;
    const fifo = props.fifo === true;
    const base = fifo ? name.replace(/\.fifo$/, '') : name;
    if (!QUEUE_NAME_PATTERN.test(base) || (fifo && !name.endsWith('.fifo'))) {
      fail(
        `Expected \`${prop}\` to be up to 80 characters of A-Z, a-z, 0-9, '-', '_'${fifo ? " ending in '.fifo' (FIFO queue)" : ''}, got \`${describeValue(name)}\``,
      );
    }
  }
}

/** Counts and durations within AWS's limits. */
function checkNumbers(props: IdempotentConsumerProps, fail: Fail): void {
  const integer = (name: string, value: number | undefined, min: number, max: number) =>
    checkInteger(name, value, min, max, fail);
  const duration = (name: string, value: Duration | undefined, min: Duration, max?: Duration) =>
    checkDuration(name, value, min, max, fail);
  integer('memorySize', props.memorySize, 128, 10240);
  integer('maxReceiveCount', props.maxReceiveCount, 1, 1000);
  integer('maxConcurrency', props.maxConcurrency, 2, 1000);
  integer('batchSize', props.batchSize, 1, props.maxBatchingWindow ? 10000 : 10);
  integer('completedCacheMaxEntries', props.completedCacheMaxEntries, 1, MAX_COMPLETED_CACHE_ENTRIES);
  duration('timeout', props.timeout, Duration.seconds(1), LAMBDA_MAX_TIMEOUT);
  duration('retentionPeriod', props.retentionPeriod, Duration.seconds(60), SQS_MAX_RETENTION);
  duration(
    'deadLetterRetentionPeriod',
    props.deadLetterRetentionPeriod,
    Duration.seconds(60),
    SQS_MAX_RETENTION,
  );
  duration('visibilityTimeout', props.visibilityTimeout, Duration.seconds(0), Duration.hours(12));
  duration('maxBatchingWindow', props.maxBatchingWindow, Duration.seconds(0), Duration.minutes(5));
  duration('recordTtl', props.recordTtl, Duration.seconds(1));
  duration('producerRetryHorizon', props.producerRetryHorizon, Duration.seconds(0));
  duration('redriveAllowance', props.redriveAllowance, Duration.seconds(0));
  duration('lease', props.lease, Duration.seconds(1));
  duration('ageOfOldestMessageThreshold', props.ageOfOldestMessageThreshold, Duration.seconds(60));
  const threshold = props.duplicateRateThreshold;
  if (isKnownNumber(threshold) && !(threshold > 0 && threshold <= 1)) {
    fail(`Expected \`duplicateRateThreshold\` to be in (0, 1], got \`${describeValue(threshold)}\``);
  }
}

/** The `EO_` variables are the construct's to set. */
function checkEnvironment(props: IdempotentConsumerProps, fail: Fail): void {
  checkContractEnvironment(props.environment, ENV_SOURCES, fail);
}

/** A given queue and dead-letter queue belong together; `direct` needs a dead-letter queue. */
function checkQueues(props: IdempotentConsumerProps, fail: Fail, warn: Warn): void {
  if (props.queue) {
    const own = ownDeadLetterQueue(props.queue);
    if (own && props.deadLetterQueue && own !== props.deadLetterQueue) {
      fail(
        `Expected \`deadLetterQueue\` to be the dead-letter queue of \`queue\` (${own.node.path}), got ${props.deadLetterQueue.node.path}`,
      );
    }
    if (!knownDeadLetterQueue(props)) {
      if ((props.deadLetterMode ?? 'redrive') === 'direct') {
        fail(
          'Expected a `deadLetterQueue` with `deadLetterMode: direct`: the queue you passed has no known DLQ',
        );
      } else {
        warn(
          'noDeadLetterQueue',
          'The `queue` you passed has no dead-letter queue this construct knows of: a message that keeps failing is received again until its retention ends, and there is no dead-letter alarm. Give the queue a redrive policy and pass its DLQ as `deadLetterQueue`.',
        );
      }
    }
    return;
  }
  const fifo = props.fifo ?? false;
  if (props.deadLetterQueue && props.deadLetterQueue.fifo !== fifo) {
    fail(
      fifo
        ? 'Expected a FIFO `deadLetterQueue` for a FIFO queue, got a standard queue'
        : 'Expected a standard `deadLetterQueue` for a standard queue, got a FIFO queue',
    );
  }
}

/**
 * The function timeout leaves time before the runtime's deadline margin, and the visibility
 * timeout covers 6 × the function timeout + the batching window.
 */
function checkTimeouts(
  props: IdempotentConsumerProps,
  timing: ConsumerTiming,
  fail: Fail,
  info: (message: string) => void,
): void {
  const functionTimeout = timing.functionTimeout;
  // The batch processor starts no message once less than the margin is left, so a function
  // whose timeout is at or below it would answer every batch with retries and process nothing.
  const margin = Duration.millis(DEFAULT_DEADLINE_MARGIN_MILLIS);
  if (
    functionTimeout &&
    !functionTimeout.isUnresolved() &&
    functionTimeout.toMilliseconds() <= margin.toMilliseconds()
  ) {
    const source = props.handler ? 'The timeout of `handler`' : '`timeout`';
    fail(
      `${source} (${functionTimeout.toHumanString()}) must be longer than the runtime's deadline margin (\`deadlineMarginMillis\`, default ${margin.toHumanString()}): the batch processor starts no message once less than the margin is left, so the function would process nothing`,
    );
  }

  const visibility = props.queue ? timing.visibilityTimeout : props.visibilityTimeout;
  if (!visibility || !functionTimeout) {
    // Only a created queue with its default visibility timeout lands here without a note:
    // that default is derived from the rule itself.
    if (props.queue || props.visibilityTimeout) {
      info(
        'The queue visibility timeout or the function timeout is not known at synth time, so the rule "visibility timeout >= 6 × function timeout + batching window" was not checked.',
      );
    }
    return;
  }
  const required = requiredVisibility(functionTimeout, props.maxBatchingWindow);
  if (visibility.isUnresolved() || required.isUnresolved()) return;
  if (visibility.toSeconds() < required.toSeconds()) {
    const source = props.queue ? 'The visibility timeout of `queue`' : '`visibilityTimeout`';
    const window = props.maxBatchingWindow
      ? ` + maxBatchingWindow (${props.maxBatchingWindow.toHumanString()})`
      : '';
    fail(
      `${source} (${visibility.toHumanString()}) must be at least ${VISIBILITY_FACTOR} × the function timeout (${functionTimeout.toHumanString()})${window} = ${required.toHumanString()}, so a message is not delivered again while an invocation still processes it`,
    );
  }
}

/** A record that expires while a copy of its message can still arrive lets that copy run again. */
function checkRecordTtl(props: IdempotentConsumerProps, timing: ConsumerTiming, warn: Warn): void {
  const { window, explanation, defaultRecordTtl } = timing.redelivery;
  if (
    props.recordTtl &&
    !props.recordTtl.isUnresolved() &&
    props.recordTtl.toSeconds() < window.toSeconds()
  ) {
    warn(
      'recordTtlShorterThanRedeliveryWindow',
      `\`recordTtl\` (${props.recordTtl.toHumanString()}) is shorter than the redelivery window (${window.toHumanString()}: ${explanation}). A message redelivered or redriven after its inbox record expired is processed again. Set \`recordTtl\` to at least ${window.toHumanString()}, or leave it unset (default ${defaultRecordTtl.toHumanString()}).`,
    );
  }
}

/**
 * The two-phase lease rules: shorter than the record TTL (the runtime's cold-start rule, so
 * synth fails the same way), no shorter than the function timeout, and no longer than the
 * queue keeps redelivering a crashed claim's message.
 */
function checkLease(props: IdempotentConsumerProps, timing: ConsumerTiming, fail: Fail, warn: Warn): void {
  const { lease, recordTtl, functionTimeout } = timing;
  if (lease.isUnresolved()) return;
  if (!recordTtl.isUnresolved() && lease.toMilliseconds() >= recordTtl.toMilliseconds()) {
    const source = props.lease
      ? '`lease`'
      : 'The default lease (the function timeout, or 15 minutes when it is unknown)';
    fail(
      `${source} (${lease.toHumanString()}) must be shorter than \`recordTtl\` (${recordTtl.toHumanString()}) in two-phase mode: a claim must never outlive its record, and the runtime rejects \`leaseMillis\` >= \`ttlSeconds\` at cold start`,
    );
  }
  if (props.lease && functionTimeout && !functionTimeout.isUnresolved()) {
    if (props.lease.toMilliseconds() < functionTimeout.toMilliseconds()) {
      warn(
        'leaseShorterThanTimeout',
        `\`lease\` (${props.lease.toHumanString()}) is shorter than the function timeout (${functionTimeout.toHumanString()}): another delivery can take over a claim while the invocation that holds it is still running, and the effect runs twice.`,
      );
    }
  }
  const visibility = timing.visibilityTimeout;
  const receives = timing.maxReceiveCount;
  if (!visibility || visibility.isUnresolved() || !isKnownNumber(receives)) return;
  // The receive whose invocation crashed is the first of `receives`; the message comes back
  // one visibility timeout after each, and the receive after the last moves it to the DLQ.
  const lastRedelivery = Duration.seconds(visibility.toSeconds() * (receives - 1));
  if (lease.toMilliseconds() > lastRedelivery.toMilliseconds()) {
    warn(
      'leaseOutlivesRedelivery',
      `The two-phase lease (${lease.toHumanString()}) is longer than the queue's visibility timeout (${visibility.toHumanString()}) × (maxReceiveCount (${receives}) - 1) = ${lastRedelivery.toHumanString()}, when the last delivery of a message comes after the one whose invocation crashed holding its claim: every later delivery meets a live lease, and SQS moves the message to the dead-letter queue before any delivery may take the claim over. Shorten \`lease\`, or raise the visibility timeout or maxReceiveCount.`,
    );
  }
}
