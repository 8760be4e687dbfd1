/**
 * The construct's contract, read from an environment: the `EO_*` variables that
 * `IdempotentConsumer` sets on the function it configures (names in `ENV`). Pure: the entry
 * points pass the environment (`process.env` unless told otherwise), so the core never reads
 * it itself. A malformed value is a configuration error at cold start (`INVALID_OPTIONS`,
 * naming the variable: ``Expected `EO_TTL_SECONDS` to be a positive integer, got `"abc"` ``).
 */

import type { ConsumerMode, DeadLetterMode } from './contract';
import {
  CONSUMER_MODES,
  DEAD_LETTER_MODES,
  ENV,
  LOG_LEVELS,
  MAX_COMPLETED_CACHE_ENTRIES,
  MAX_GROUP_METRICS_GROUPS,
  OUTBOX_DESTINATION_KINDS,
  OUTBOX_ENV,
  type OutboxDestinationKind,
} from './contract';
import { assertName } from './dedup-key';
import { EffectivelyOnceError, expectOption } from './errors';
import type { LogLevel } from './logger';

/** Environment variables, as `process.env` holds them. */
export type Environment = Readonly<Record<string, string | undefined>>;

/** What the construct configured; a field is absent when its variable is unset (or empty). */
export interface ConstructSettings {
  /** `EO_CONSUMER`. */
  readonly consumer?: string;
  /** `EO_INBOX_TABLE`. */
  readonly tableName?: string;
  /** `EO_TTL_SECONDS`. */
  readonly ttlSeconds?: number;
  /** `EO_MODE`: the mode the construct granted the function for. */
  readonly mode?: ConsumerMode;
  /** `EO_DEAD_LETTER_MODE`. */
  readonly deadLetter?: DeadLetterMode;
  /** `EO_DEAD_LETTER_QUEUE_URL`. */
  readonly deadLetterQueueUrl?: string;
  /** `EO_DEAD_LETTER_MAX_MESSAGE_BYTES`: the dead-letter queue's `MaximumMessageSize`. */
  readonly deadLetterMaxMessageBytes?: number;
  /** `EO_LEASE_MILLIS`. */
  readonly leaseMillis?: number;
  /** `EO_METRIC_NAMESPACE`. */
  readonly metricNamespace?: string;
  /** `EO_LOG_LEVEL`. */
  readonly logLevel?: LogLevel;
  /** `EO_COMPLETED_CACHE_MAX_ENTRIES`: the completed-record cache's `maxEntries`. */
  readonly completedCacheMaxEntries?: number;
  /** `EO_GROUP_METRICS_MAX_GROUPS`: a fair queue's per-group metrics' `maxGroups`. */
  readonly groupMetricsMaxGroups?: number;
  /** `EO_OUTBOX_TABLE_NAME`: the outbox atomic mode's `emit` writes to. */
  readonly outboxTableName?: string;
  /** `EO_OUTBOX_RETENTION_SECONDS`: how long an outbox item is kept. */
  readonly outboxRetentionSeconds?: number;
  /** `EO_OUTBOX_DESTINATION_KIND`: where the relay publishes, whose size limit an event must fit. */
  readonly outboxDestinationKind?: OutboxDestinationKind;
  /** `EO_OUTBOX_EVENT_SOURCE`: the `Source` of the relay's EventBridge entries, counted in their size. */
  readonly outboxEventSource?: string;
  /** `EO_OUTBOX_DESTINATION_FIFO`: whether the relay's queue or topic is FIFO (events need a valid group id). */
  readonly outboxDestinationFifo?: boolean;
  /**
   * `EO_OUTBOX_DESTINATION_FAIR`: whether the relay's queue is a fair queue, or its topic feeds
   * fair queues (events need a valid group id).
   */
  readonly outboxDestinationFair?: boolean;
}

/** SQS's largest `MaximumMessageSize`, 1 MiB: the most `EO_DEAD_LETTER_MAX_MESSAGE_BYTES` may say. */
const MAX_DEAD_LETTER_MESSAGE_BYTES = 1_048_576;

function positiveInteger(name: string, value: string | undefined, max?: number): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Number(value);
  expectOption(
    /^\d+$/.test(value) && Number.isSafeInteger(parsed) && parsed > 0 && (max === undefined || parsed <= max),
    name,
    max === undefined ? 'a positive integer' : `an integer from 1 to ${max}`,
    value,
  );
  return parsed;
}

function booleanText(name: string, value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  expectOption(value === 'true' || value === 'false', name, "'true' or 'false'", value);
  return value === 'true';
}

function oneOf<T extends string>(
  name: string,
  value: string | undefined,
  allowed: readonly T[],
): T | undefined {
  if (value === undefined) return undefined;
  expectOption(
    allowed.includes(value as T),
    name,
    `one of ${allowed.map((a) => `'${a}'`).join(', ')}`,
    value,
  );
  return value as T;
}

/**
 * Reads and checks the `EO_*` variables of `environment`. Unset or empty variables are left
 * out; a set one must be well-formed (`EO_TTL_SECONDS` and `EO_LEASE_MILLIS` positive integers,
 * `EO_COMPLETED_CACHE_MAX_ENTRIES` an integer from 1 to 10000,
 * `EO_DEAD_LETTER_MODE` `redrive` or `direct`, `direct` with `EO_DEAD_LETTER_QUEUE_URL`,
 * `EO_DEAD_LETTER_MAX_MESSAGE_BYTES` an integer from 1 to 1048576,
 * `EO_OUTBOX_RETENTION_SECONDS` a positive integer, `EO_OUTBOX_DESTINATION_KIND` one of
 * `OUTBOX_DESTINATION_KINDS`, ...).
 */
export function readConstructSettings(environment: Environment): ConstructSettings {
  const read = (name: string): string | undefined => {
    const value = environment[name];
    return value === undefined || value.trim() === '' ? undefined : value;
  };
  const consumer = read(ENV.consumer);
  if (consumer !== undefined) assertName(ENV.consumer, consumer);
  const deadLetter = oneOf(ENV.deadLetterMode, read(ENV.deadLetterMode), DEAD_LETTER_MODES);
  const deadLetterQueueUrl = read(ENV.deadLetterQueueUrl);
  expectOption(
    deadLetterQueueUrl === undefined || /^https?:\/\//.test(deadLetterQueueUrl),
    ENV.deadLetterQueueUrl,
    'a queue URL',
    deadLetterQueueUrl,
  );
  expectOption(
    deadLetter !== 'direct' || deadLetterQueueUrl !== undefined,
    ENV.deadLetterQueueUrl,
    `a queue URL when \`${ENV.deadLetterMode}\` is 'direct'`,
    deadLetterQueueUrl,
  );
  const settings: Record<string, unknown> = {
    consumer,
    tableName: read(ENV.inboxTable),
    ttlSeconds: positiveInteger(ENV.ttlSeconds, read(ENV.ttlSeconds)),
    mode: oneOf(ENV.mode, read(ENV.mode), CONSUMER_MODES),
    deadLetter,
    deadLetterQueueUrl,
    deadLetterMaxMessageBytes: positiveInteger(
      ENV.deadLetterMaxMessageBytes,
      read(ENV.deadLetterMaxMessageBytes),
      MAX_DEAD_LETTER_MESSAGE_BYTES,
    ),
    leaseMillis: positiveInteger(ENV.leaseMillis, read(ENV.leaseMillis)),
    metricNamespace: read(ENV.metricNamespace),
    logLevel: oneOf(ENV.logLevel, read(ENV.logLevel), LOG_LEVELS),
    completedCacheMaxEntries: positiveInteger(
      ENV.completedCacheMaxEntries,
      read(ENV.completedCacheMaxEntries),
      MAX_COMPLETED_CACHE_ENTRIES,
    ),
    groupMetricsMaxGroups: positiveInteger(
      ENV.groupMetricsMaxGroups,
      read(ENV.groupMetricsMaxGroups),
      MAX_GROUP_METRICS_GROUPS,
    ),
    outboxTableName: read(OUTBOX_ENV.tableName),
    outboxRetentionSeconds: positiveInteger(OUTBOX_ENV.retentionSeconds, read(OUTBOX_ENV.retentionSeconds)),
    outboxDestinationKind: oneOf(
      OUTBOX_ENV.destinationKind,
      read(OUTBOX_ENV.destinationKind),
      OUTBOX_DESTINATION_KINDS,
    ),
    outboxEventSource: read(OUTBOX_ENV.eventSource),
    outboxDestinationFifo: booleanText(OUTBOX_ENV.destinationFifo, read(OUTBOX_ENV.destinationFifo)),
    outboxDestinationFair: booleanText(OUTBOX_ENV.destinationFair, read(OUTBOX_ENV.destinationFair)),
  };
  for (const field of Object.keys(settings)) {
    if (settings[field] === undefined) delete settings[field];
  }
  return Object.freeze(settings) as ConstructSettings;
}

/**
 * Checks that an explicit `consumer` or `tableName` agrees with the construct's: the
 * construct's alarms, dashboard and IAM scope watch its own consumer and table, so a handler
 * that uses others would run unwatched (or be denied). Throws `INVALID_OPTIONS` naming both.
 */
/**
 * Throws `INVALID_OPTIONS` naming both modes when the handler's mode is not the one the construct
 * deployed the function for (`EO_MODE`): the construct granted that mode's actions and sized its
 * alarms and record TTL for it, so the handler would fail at its first write on AWS, or run
 * unwatched.
 */
export function assertModeAgreesWithConstruct(modeName: string, settings: ConstructSettings): void {
  if (settings.mode === undefined || settings.mode === modeName) return;
  throw new EffectivelyOnceError(
    'INVALID_OPTIONS',
    `The handler's mode is \`${modeName}\`, but the construct deployed it as \`${settings.mode}\` (\`${ENV.mode}\`): its grants, alarms and record TTL are those of \`${settings.mode}\` mode. Use the same mode in the handler and the construct's \`mode\``,
  );
}

export function assertAgreesWithConstruct(
  explicit: { readonly consumer?: string; readonly tableName?: string },
  settings: ConstructSettings,
): void {
  const pairs = [
    ['consumer', ENV.consumer, explicit.consumer, settings.consumer],
    ['tableName', ENV.inboxTable, explicit.tableName, settings.tableName],
  ] as const;
  for (const [field, name, given, configured] of pairs) {
    if (given !== undefined && configured !== undefined && given !== configured) {
      throw new EffectivelyOnceError(
        'INVALID_OPTIONS',
        `Expected \`${field}\` to be \`${configured}\` as the construct set it (\`${name}\`), got \`${given}\`: leave \`${field}\` out to use the construct's, or change the construct`,
      );
    }
  }
}
