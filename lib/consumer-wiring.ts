/**
 * What both consumer constructs (`IdempotentConsumer`, `IdempotentStreamConsumer`) give the
 * function they wire, in one place: the `EO_` environment of the contract, built from the
 * construct's resolved settings, and the grants on the inbox, business and outbox tables. The
 * transport's own grants (the queue, the stream, the on-failure destination) stay with each
 * construct.
 */
import { type Duration, Tokenization } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as iam from 'aws-cdk-lib/aws-iam';
import { type ConsumerMode, type DeadLetterMode, ENV, type LogLevel } from '../lambda/core/contract';
import {
  actionsForAccess,
  type BusinessTableAccess,
  defaultBusinessTableAccess,
  grantItemActions,
  INBOX_TABLE_ACTIONS,
  ownInboxRecordsCondition,
} from './consumer-permissions';
import type { Outbox } from './outbox/construct';

/** A construct's resolved settings that the runtime reads from the `EO_` environment. */
export interface ConsumerEnvironmentSettings {
  readonly consumerName: string;
  readonly recordTtl: Duration;
  readonly deadLetterMode: DeadLetterMode;
  /** Set only when the runtime sends dead letters itself (`direct`). */
  readonly deadLetterQueueUrl?: string;
  readonly lease: Duration;
  readonly metricNamespace: string;
  readonly inboxTable?: dynamodb.ITable;
  readonly logLevel?: LogLevel;
  readonly completedCacheMaxEntries?: number;
  /** The outbox the handler emits to: its writer environment is added. */
  readonly outbox?: Outbox;
}

/** The `EO_` environment of the contract for `settings`: what the handler's options default to. */
export function consumerEnvironment(settings: ConsumerEnvironmentSettings): Record<string, string> {
  const environment: Record<string, string> = {
    [ENV.consumer]: settings.consumerName,
    [ENV.ttlSeconds]: String(settings.recordTtl.toSeconds()),
    [ENV.deadLetterMode]: settings.deadLetterMode,
    [ENV.leaseMillis]: String(settings.lease.toMilliseconds()),
    [ENV.metricNamespace]: settings.metricNamespace,
  };
  if (settings.deadLetterQueueUrl !== undefined) {
    environment[ENV.deadLetterQueueUrl] = settings.deadLetterQueueUrl;
  }
  if (settings.inboxTable) environment[ENV.inboxTable] = settings.inboxTable.tableName;
  if (settings.logLevel) environment[ENV.logLevel] = settings.logLevel;
  if (settings.completedCacheMaxEntries !== undefined) {
    environment[ENV.completedCacheMaxEntries] = Tokenization.stringifyNumber(
      settings.completedCacheMaxEntries,
    );
  }
  // The outbox the handler emits to: its table name, retention and destination.
  if (settings.outbox) Object.assign(environment, settings.outbox.writerEnvironment);
  return environment;
}

/** The tables a consumer's function works on, and how. */
export interface ConsumerTableGrants {
  readonly mode: ConsumerMode;
  readonly consumerName: string;
  /** The inbox table the function gets its mode's actions on (none in `entity` mode). */
  readonly inboxTable?: dynamodb.ITable;
  readonly businessTables?: readonly {
    readonly table: dynamodb.ITable;
    readonly access?: readonly BusinessTableAccess[];
  }[];
  readonly outbox?: Outbox;
}

/**
 * Grants `grantee` exactly what its mode needs on the tables: the mode's inbox actions on the
 * consumer's own records only, each business table's access (by default the mode's), and a
 * put of new items on the outbox table (emitting writes outbox items in the transaction).
 */
export function grantConsumerTables(grantee: iam.IGrantable, tables: ConsumerTableGrants): void {
  tables.outbox?.grantWrite(grantee);
  if (tables.inboxTable) {
    // Scoped to this consumer's own records: a shared inbox table holds other consumers' too.
    grantItemActions(
      grantee,
      tables.inboxTable,
      INBOX_TABLE_ACTIONS[tables.mode],
      ownInboxRecordsCondition(tables.consumerName),
    );
  }
  for (const business of tables.businessTables ?? []) {
    const access = business.access ?? defaultBusinessTableAccess(tables.mode);
    grantItemActions(grantee, business.table, actionsForAccess(access));
  }
}
