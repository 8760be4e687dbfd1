/**
 * Example handler: an audit recorder in entity-as-marker mode, consuming a standard queue of
 * CloudEvents (structured mode: the JSON body is the event) and writing one audit item per
 * event. The audit item is its own marker: one conditional put, one write unit, no inbox
 * record.
 *
 * - **Dedup key: CloudEvents `source` + `id`**, which CloudEvents defines as unique per event
 *   (binary-mode events carrying `ce-source`/`ce-id` attributes are keyed the same way).
 * - **Audit item:** partition key `pk` = the scoped key (`audit-recorder#<source>:<id>`, hashed
 *   when long, so it always fits a partition key). Audit table: partition key `pk` (String).
 * - **Idempotent on replay:** the item is written once; a replay finds it and is acknowledged
 *   as a duplicate, and every attribute comes from the event itself.
 *
 * Environment: `AUDIT_TABLE`, plus the toolkit's `EO_*` variables (see `ENV`).
 */
import {
  createSqsHandler,
  EffectivelyOnceError,
  type EntityWrite,
  entity,
  fromCloudEvent,
  type Message,
  type SqsHandlerOptions,
} from 'effectively-once';

/** The CloudEvents attributes the recorder keeps, plus the event data. */
export interface AuditEvent {
  readonly specversion: string;
  readonly id: string;
  readonly source: string;
  readonly type: string;
  readonly subject?: string;
  readonly time?: string;
  readonly data?: unknown;
}

/** Parses and validates a structured-mode CloudEvent; an invalid one is a permanent `MALFORMED_BODY` error. */
export function parseAuditEvent(rawBody: string): AuditEvent {
  let event: Partial<AuditEvent> | null;
  try {
    event = JSON.parse(rawBody);
  } catch {
    // JSON.parse quotes the body in its message, and bodies never reach the logs.
    throw new Error('An audit event must be a JSON CloudEvent');
  }
  if (typeof event !== 'object' || event === null) throw new Error('An audit event must be a JSON object');
  for (const attribute of ['specversion', 'id', 'source', 'type'] as const) {
    if (typeof event[attribute] !== 'string' || event[attribute] === '') {
      throw new Error(`The CloudEvents attribute \`${attribute}\` must be a non-empty string`);
    }
  }
  return event as AuditEvent;
}

/** The audit item for one event in `auditTable`. */
export function recordAudit(auditTable: string, message: Message<AuditEvent>): EntityWrite {
  const { id, source, type, subject, time, data } = message.body;
  return {
    tableName: auditTable,
    keyAttribute: 'pk',
    item: { pk: message.scopedKey, eventId: id, source, type, subject, time, data },
  };
}

/** The audit recorder's options for `auditTable` (everything but the toolkit settings). */
export function auditRecorderOptions(
  auditTable: string,
): Pick<SqsHandlerOptions<AuditEvent>, 'parse' | 'dedupKey' | 'mode'> {
  return {
    parse: parseAuditEvent,
    dedupKey: fromCloudEvent(),
    mode: entity((message: Message<AuditEvent>) => recordAudit(auditTable, message)),
  };
}

/** The audit table, from `AUDIT_TABLE`; a missing one fails the cold start. */
export function auditTableOf(env: Readonly<Record<string, string | undefined>>): string {
  const table = env.AUDIT_TABLE;
  if (table === undefined || table.trim() === '') {
    throw new EffectivelyOnceError(
      'INVALID_OPTIONS',
      `Expected environment variable \`AUDIT_TABLE\` to be set, got \`${String(table)}\``,
    );
  }
  return table;
}

/**
 * The Lambda handler (bundled by entry path). The consumer, TTL, dead letters and the rest come
 * from the construct's `EO_*` variables; the SDK clients are created once per cold start.
 */
export const handler = createSqsHandler<AuditEvent>(auditRecorderOptions(auditTableOf(process.env)));
