/**
 * The vocabulary both consumer constructs (`IdempotentConsumer`, `IdempotentStreamConsumer`)
 * validate their props with: the error that lists every failure, the synth-time notes, and the
 * checks of the props they share (consumer name, metric namespace, log level, counts and
 * durations, the `EO_` environment, the inbox and business tables). Every check reports through
 * `fail`/`warn` instead of throwing, so a construct reports all that is wrong at once; values
 * that are unresolved tokens are skipped.
 */
import { type Duration, Token } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as kms from 'aws-cdk-lib/aws-kms';
import {
  CONSUMER_NAME_PATTERN,
  type ConsumerMode,
  ENV,
  INBOX_ATTRIBUTES,
  LOG_LEVELS,
  OUTBOX_ENV,
} from '../lambda/core/contract';
import { describeValue, EffectivelyOnceError } from '../lambda/core/errors';
import { WARNING_PREFIX } from './consumer-defaults';
import {
  BUSINESS_TABLE_ACCESSES,
  type BusinessTableAccess,
  defaultBusinessTableAccess,
} from './consumer-permissions';
import { inspectInboxTable } from './inbox-table';

/** A synth-time note the construct adds to itself through `Annotations`. */
export type ConsumerNote =
  | {
      /** A warning, acknowledgeable by its id. */
      readonly kind: 'warning';
      /** The warning's id, `effectively-once:<rule>`. */
      readonly id: string;
      /** What is risky, and what to do instead. */
      readonly message: string;
    }
  | {
      /** An informational note. */
      readonly kind: 'info';
      /** What the construct could not check, or chose. */
      readonly message: string;
    };

/** What validating the props found: every failure, and the notes to add when there is none. */
export interface PropsValidation {
  /** One sentence per failure, ``Expected `prop` to be ..., got `value` `` where a value is shown. */
  readonly failures: readonly string[];
  /** Warnings and infos for choices that are allowed but risky. */
  readonly notes: readonly ConsumerNote[];
}

/**
 * The error a construct throws for invalid props: `INVALID_OPTIONS` (a configuration error),
 * with every failure in `failures` and in the message, after the construct path: the failure
 * itself when it is the only one, else a count and one line per failure.
 */
export class InvalidPropsError extends EffectivelyOnceError {
  override readonly name = 'InvalidPropsError';
  /** Each failure, without the construct path. */
  readonly failures: readonly string[];

  constructor(path: string, construct: string, failures: readonly string[]) {
    // One failure reads as the sentence itself; several as a list under a count.
    const text =
      failures.length === 1
        ? failures[0]
        : `${failures.length} problems with the props of ${construct}:\n${failures.map((failure) => `- ${failure}`).join('\n')}`;
    super('INVALID_OPTIONS', `[${path}] ${text}`);
    this.failures = Object.freeze([...failures]);
  }
}

/** Throws one {@link InvalidPropsError} listing every failure, unless there is none. */
export function assertNoFailures(path: string, construct: string, failures: readonly string[]): void {
  if (failures.length > 0) throw new InvalidPropsError(path, construct, failures);
}

/** Records one failure. */
export type Fail = (message: string) => void;

/** Records one warning under its id (without the `effectively-once:` prefix). */
export type Warn = (id: string, message: string) => void;

/** Where one validation pass collects: its failures and notes, and the `fail`/`warn`/`info` that add to them. */
export interface ValidationCollector extends PropsValidation {
  readonly fail: Fail;
  readonly warn: Warn;
  /** Adds an informational note (no id). */
  readonly info: (message: string) => void;
}

/** A fresh collector; `warn` ids get the `effectively-once:` prefix. */
export function collectValidation(): ValidationCollector {
  const failures: string[] = [];
  const notes: ConsumerNote[] = [];
  return {
    failures,
    notes,
    fail: (message) => {
      failures.push(message);
    },
    warn: (id, message) => {
      notes.push({ kind: 'warning', id: `${WARNING_PREFIX}:${id}`, message });
    },
    info: (message) => {
      notes.push({ kind: 'info', message });
    },
  };
}

/** `'a', 'b', 'c'`, the way every message lists allowed values. */
export function listOf(values: readonly string[]): string {
  return values.map((value) => `'${value}'`).join(', ');
}

/** True when `count` is a number known at synth time. */
export function isKnownNumber(count: number | undefined): count is number {
  return count !== undefined && !Token.isUnresolved(count);
}

/** Fails unless `value` is one of `allowed`. */
export function checkOneOf(name: string, value: unknown, allowed: readonly string[], fail: Fail): void {
  if (!allowed.includes(value as string)) {
    fail(`Expected \`${name}\` to be one of ${listOf(allowed)}, got \`${describeValue(value)}\``);
  }
}

/** Fails unless a known `value` is an integer from `min` to `max`. */
export function checkInteger(
  name: string,
  value: number | undefined,
  min: number,
  max: number,
  fail: Fail,
): void {
  if (!isKnownNumber(value)) return;
  if (!Number.isInteger(value) || value < min || value > max) {
    fail(`Expected \`${name}\` to be an integer from ${min} to ${max}, got \`${describeValue(value)}\``);
  }
}

/** Fails unless a known `value` lies from `min` to `max` (at least `min` without a `max`). */
export function checkDuration(
  name: string,
  value: Duration | undefined,
  min: Duration,
  max: Duration | undefined,
  fail: Fail,
): void {
  if (value === undefined || value.isUnresolved()) return;
  const seconds = value.toSeconds({ integral: false });
  if (seconds < min.toSeconds() || (max !== undefined && seconds > max.toSeconds())) {
    const range = max
      ? `from ${min.toHumanString()} to ${max.toHumanString()}`
      : `at least ${min.toHumanString()}`;
    fail(`Expected \`${name}\` to be ${range}, got \`${value.toHumanString()}\``);
  }
}

/** CloudWatch's rule for a custom namespace. */
const METRIC_NAMESPACE_PATTERN = /^[A-Za-z0-9._/#: -]{1,255}$/;

/** The props every consumer construct has, checked the same way by each. */
export interface CommonConsumerProps {
  readonly mode: ConsumerMode;
  readonly consumerName?: string;
  readonly metricNamespace?: string;
  readonly logLevel?: string;
  readonly environment?: Record<string, string>;
  readonly table?: dynamodb.ITable;
  readonly tableEncryptionKey?: kms.IKey;
  readonly businessTables?: readonly {
    readonly table: dynamodb.ITable;
    readonly access?: readonly BusinessTableAccess[];
  }[];
  /** The outbox the handler emits to (only its presence is checked here). */
  readonly outbox?: object;
}

/** `consumerName` and `metricNamespace` follow AWS's rules. */
export function checkConsumerNameAndNamespace(props: CommonConsumerProps, fail: Fail): void {
  const known = (name: string | undefined): name is string => name !== undefined && !Token.isUnresolved(name);
  if (known(props.consumerName) && !CONSUMER_NAME_PATTERN.test(props.consumerName)) {
    fail(
      `Expected \`consumerName\` to be 1-100 characters of A-Z, a-z, 0-9, '.', '_', ':', '-', got \`${describeValue(props.consumerName)}\``,
    );
  }
  const namespace = props.metricNamespace;
  if (known(namespace) && (!METRIC_NAMESPACE_PATTERN.test(namespace) || namespace.startsWith('AWS/'))) {
    fail(
      `Expected \`metricNamespace\` to be 1-255 characters of A-Z, a-z, 0-9, '.', '-', '_', '/', '#', ':', ' ' not starting with 'AWS/', got \`${describeValue(namespace)}\``,
    );
  }
}

/** `logLevel`, when known, is one of the contract's `LOG_LEVELS` (it is only passed on to the function). */
export function checkLogLevel(logLevel: string | undefined, fail: Fail): void {
  if (logLevel !== undefined && !Token.isUnresolved(logLevel))
    checkOneOf('logLevel', logLevel, LOG_LEVELS, fail);
}

/** The outbox's variables are set from the `outbox` prop (the relay's only by the `Outbox`). */
const OUTBOX_ENV_SOURCES: Readonly<Record<string, string>> = {
  [OUTBOX_ENV.tableName]: '`outbox`',
  [OUTBOX_ENV.retentionSeconds]: '`outbox`',
  [OUTBOX_ENV.destinationKind]: '`outbox`',
  [OUTBOX_ENV.destinationFifo]: '`outbox`',
  [OUTBOX_ENV.destinationFair]: '`outbox`',
  [OUTBOX_ENV.eventSource]: '`outbox`',
};

/**
 * The `EO_` variables (the outbox's too) are the construct's to set: `sources` names the prop
 * that sets each, for the message.
 */
export function checkContractEnvironment(
  environment: Record<string, string> | undefined,
  sources: Readonly<Record<string, string>>,
  fail: Fail,
): void {
  const managed = new Set<string>([...Object.values(ENV), ...Object.values(OUTBOX_ENV)]);
  for (const name of Object.keys(environment ?? {})) {
    if (managed.has(name)) {
      fail(
        `Expected \`environment\` not to set \`${name}\`: the construct sets it from ${sources[name] ?? OUTBOX_ENV_SOURCES[name] ?? 'its props'}`,
      );
    }
  }
}

/** An outbox only in `atomic` mode: events are emitted in the transaction of the business writes. */
export function checkOutbox(props: CommonConsumerProps, fail: Fail): void {
  if (props.outbox && props.mode !== 'atomic') {
    fail(
      `Expected \`outbox\` only in \`atomic\` mode (events are emitted in the transaction of the business writes), got mode \`${describeValue(props.mode)}\``,
    );
  }
}

/** The inbox table, its key, and the business tables' access. */
export function checkTables(props: CommonConsumerProps, fail: Fail, warn: Warn): void {
  if (props.mode === 'entity') {
    if (props.tableEncryptionKey) {
      fail(
        'Expected no `tableEncryptionKey` in `entity` mode: the business item is the marker and no inbox table is created',
      );
    }
    const writes = (props.businessTables ?? []).some((business) =>
      (business.access ?? defaultBusinessTableAccess('entity')).includes('write'),
    );
    if (!writes) {
      fail('Expected `businessTables` to hold at least one table with `write` access in `entity` mode');
    }
  } else if (props.table && props.tableEncryptionKey) {
    fail('Expected no `tableEncryptionKey` with an existing `table`: configure the table you pass');
  }
  for (const [index, business] of (props.businessTables ?? []).entries()) {
    if (business.access === undefined) continue;
    if (business.access.length === 0) {
      fail(
        `Expected \`businessTables[${index}].access\` to be a non-empty list of ${listOf(BUSINESS_TABLE_ACCESSES)}, got an empty list`,
      );
    }
    for (const [position, access] of business.access.entries()) {
      if (!BUSINESS_TABLE_ACCESSES.includes(access)) {
        fail(
          `Expected \`businessTables[${index}].access[${position}]\` to be one of ${listOf(BUSINESS_TABLE_ACCESSES)}, got \`${describeValue(access)}\``,
        );
      }
    }
  }
  if (props.table) {
    const inspection = inspectInboxTable(props.table);
    for (const failure of inspection.failures) fail(failure);
    if (inspection.ttl === 'missing') {
      warn(
        'inboxTableWithoutTtl',
        `The inbox \`table\` you passed has no TTL: inbox records are never deleted. Enable TTL on the \`${INBOX_ATTRIBUTES.expiresAt}\` attribute, or create the table with \`new InboxTable(...)\`.`,
      );
    }
  }
}
