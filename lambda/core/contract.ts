/**
 * The one contract shared by the runtime (`lambda/`) and the CDK constructs (`lib/`):
 * inbox table attribute names and environment variable names. Changing a value here
 * changes both sides at once, so the table's TTL attribute and the code that writes it
 * cannot drift.
 *
 * This file must stay dependency-free: `lib/` imports it, and nothing else from `lambda/`.
 */

/** Attribute names of an inbox record (one DynamoDB item per scoped dedup key). */
export const INBOX_ATTRIBUTES = /* @__PURE__ */ Object.freeze({
  /** Partition key (String): the scoped dedup key, `<consumer>#<dedup key>` (see `scopeKey`). */
  pk: 'pk',
  /** `COMPLETED` or `IN_PROGRESS`. */
  status: 'status',
  /** SHA-256 (hex) of the canonical payload. */
  fingerprint: 'fingerprint',
  /** DynamoDB TTL attribute, epoch seconds (Number). */
  expiresAt: 'expiresAt',
  /**
   * Two-phase only: the lease end, epoch milliseconds (Number); 0 on a claim released after a
   * failed effect, which keeps its fingerprint.
   */
  leaseExpiresAt: 'leaseExpiresAt',
  /**
   * The random token of the claim that wrote the record. Two-phase: fences complete and release.
   * Marker only: tells the claim's own marker, met by an SDK retry, from another delivery's.
   */
  owner: 'owner',
  /** Two-phase only: the stored result of a completed effect, JSON text (optional, size-capped). */
  result: 'result',
  /** Two-phase only: how often the claim was taken over after its lease ended (Number). */
  takeovers: 'takeovers',
  /** The consumer name (unscoped), kept for operators and queries. */
  consumer: 'consumer',
  /**
   * Epoch milliseconds of the commit (set once, never rewritten by a duplicate). Two-phase: of
   * the first claim, kept across takeovers, so it tells how long the key has been in progress.
   */
  committedAt: 'committedAt',
});

/** Attribute that entity-as-marker mode adds to the user's business item. */
export const ENTITY_FINGERPRINT_ATTRIBUTE = 'eoFingerprint';

/** Values of the `status` attribute. */
export const INBOX_STATUS = /* @__PURE__ */ Object.freeze({
  /** The message or effect is done: a later delivery is a duplicate. */
  completed: 'COMPLETED',
  /** Two-phase: a claim whose effect has not completed (held while its lease lasts). */
  inProgress: 'IN_PROGRESS',
});

/**
 * Environment variable names that the construct sets and `createSqsHandler` (with the
 * middleware and the worker built on it) reads by default (see `readConstructSettings`).
 */
export const ENV = /* @__PURE__ */ Object.freeze({
  /** Name of the inbox table. */
  inboxTable: 'EO_INBOX_TABLE',
  /** Consumer name that scopes every dedup key. */
  consumer: 'EO_CONSUMER',
  /**
   * The consumer mode the construct deployed the function for (`CONSUMER_MODES`): its grants
   * are that mode's, so a handler of another mode fails its cold start.
   */
  mode: 'EO_MODE',
  /** Record TTL in seconds (derived by the construct from the queue settings). */
  ttlSeconds: 'EO_TTL_SECONDS',
  /** `redrive` or `direct`. */
  deadLetterMode: 'EO_DEAD_LETTER_MODE',
  /** URL of the dead-letter queue (used only in `direct` mode). */
  deadLetterQueueUrl: 'EO_DEAD_LETTER_QUEUE_URL',
  /**
   * The dead-letter queue's `MaximumMessageSize` in bytes, when the construct created it: a
   * stream dead letter larger than this is sent marked truncated.
   */
  deadLetterMaxMessageBytes: 'EO_DEAD_LETTER_MAX_MESSAGE_BYTES',
  /** Lease for two-phase claims, milliseconds (the construct sets the function timeout). */
  leaseMillis: 'EO_LEASE_MILLIS',
  /** CloudWatch metric namespace for the Embedded Metric Format lines. */
  metricNamespace: 'EO_METRIC_NAMESPACE',
  /** `info` (default), `debug`, `warn`, `error` or `silent`. */
  logLevel: 'EO_LOG_LEVEL',
  /**
   * Entries of the completed-record cache (`completedCache.maxEntries`), 1 to 10000; unset, the
   * cache is off.
   */
  completedCacheMaxEntries: 'EO_COMPLETED_CACHE_MAX_ENTRIES',
  /**
   * A fair queue's per-group metrics (`groupMetrics.maxGroups`): how many message groups get a
   * `MessageGroup` dimension value of their own, 1 to 1000; unset, there are none.
   */
  groupMetricsMaxGroups: 'EO_GROUP_METRICS_MAX_GROUPS',
});

/**
 * The most message groups that get per-group metrics of their own (`groupMetrics.maxGroups`,
 * `EO_GROUP_METRICS_MAX_GROUPS`): each is two custom metrics (`Duplicate`, `InFlight`) once it
 * has been counted.
 */
export const MAX_GROUP_METRICS_GROUPS = 1000;

/** The dimension of a fair queue's per-group metrics, next to `Consumer`. */
export const METRIC_DIMENSION_MESSAGE_GROUP = 'MessageGroup';

/** The `MessageGroup` value of every group beyond `groupMetrics.maxGroups`. */
export const OTHER_MESSAGE_GROUPS = '(other)';

/**
 * The most entries a completed-record cache may hold (`completedCache.maxEntries`,
 * `EO_COMPLETED_CACHE_MAX_ENTRIES`, the construct's `completedCacheMaxEntries`). Measured on
 * Node.js 22, an entry takes about 390 bytes with a 40-character scoped key and about 1 KB at the
 * 1,024-byte scoped key limit (up to 2 KB when every character takes two bytes): at most about
 * 22 MB, under a fifth of the smallest Lambda memory (128 MB), about 4 MB at typical key lengths.
 */
export const MAX_COMPLETED_CACHE_ENTRIES = 10_000;

/** Metric names, one per outcome, emitted in Embedded Metric Format and used by alarms. */
export const METRICS = /* @__PURE__ */ Object.freeze({
  /** Messages processed: the marker (and the writes) stored, the effect run. */
  processed: 'Processed',
  /** Messages acknowledged as duplicates of a completed record. */
  duplicate: 'Duplicate',
  /** Messages whose key another delivery holds in progress (retried). */
  inFlight: 'InFlight',
  /** Messages whose key is held with another payload fingerprint (dead-lettered). */
  mismatch: 'Mismatch',
  /** Messages older than the stored version of their item (`putIfNewer`), acknowledged. */
  stale: 'Stale',
  /** Messages reported as batch item failures after a transient failure. */
  retry: 'Retry',
  /** Messages dead-lettered after a permanent failure. */
  permanent: 'Permanent',
  /** Two-phase claims taken over after their lease ended (events, not messages). */
  takeover: 'Takeover',
  /** Duplicates acknowledged from the completed-record cache, without a request (also counted as `Duplicate`). */
  cacheHit: 'CacheHit',
});

/** Default metric namespace. */
export const DEFAULT_METRIC_NAMESPACE = 'EffectivelyOnce';

/** Dimension name carrying the consumer on every metric. */
export const METRIC_DIMENSION_CONSUMER = 'Consumer';

/**
 * The largest share of an invocation's remaining time (at its start) that the deadline margin
 * takes: the margin is `min(deadlineMarginMillis, floor(remaining * share))`, so a function
 * whose timeout is at or below the margin still processes records (`deadlineMarginFor`).
 */
export const DEADLINE_MARGIN_MAX_SHARE = 0.5;

/**
 * The message attribute carrying the FIFO `MessageDeduplicationId` a message had when it was
 * first delivered (kept across repeated dead letters): `DEAD_LETTER_ATTRIBUTES.deduplicationId`.
 * SQS gives the dead letter and the redriven message new ones; `fromDeduplicationId` prefers this
 * attribute, so a redriven message keeps its dedup key. A name of its own so the key source
 * bundles the one string, not the whole table.
 */
export const DEDUPLICATION_ID_ATTRIBUTE = 'eo-deduplication-id';

/** Message attributes set on a message that is dead-lettered directly (`deadLetter: 'direct'`). */
export const DEAD_LETTER_ATTRIBUTES = /* @__PURE__ */ Object.freeze({
  /** Why the message was dead-lettered (truncated; the full reason is in the log line). */
  reason: 'eo-reason',
  /** The error code (`ERROR_CODES`). */
  code: 'eo-code',
  /** The consumer that dead-lettered it. */
  consumer: 'eo-consumer',
  /** The scoped dedup key (or its hash), when one was derived. */
  dedupKey: 'eo-dedup-key',
  /** The message id of the delivery that was dead-lettered. */
  sourceMessageId: 'eo-source-message-id',
  /**
   * The original FIFO deduplication id, kept across repeated dead letters, which
   * `fromDeduplicationId` prefers (the attribute name is `eo-deduplication-id`).
   */
  deduplicationId: DEDUPLICATION_ID_ATTRIBUTE,
});

/**
 * Message attributes a stream entry point gives each record it processes (`message.attributes`),
 * so a record that goes to the dead-letter queue names where it came from: the stream (or table
 * stream) ARN, the shard (Kinesis only: a DynamoDB Streams record does not name its shard), the
 * sequence number to read it again from, and a Kinesis record's partition key.
 */
export const STREAM_RECORD_ATTRIBUTES = /* @__PURE__ */ Object.freeze({
  /** The stream (or table stream) ARN. */
  eventSourceArn: 'eo-event-source-arn',
  /** The shard (Kinesis), or the topic-partition (Kafka). */
  shardId: 'eo-shard-id',
  /** The record's sequence number (a Kafka record's offset), to read it again from. */
  sequenceNumber: 'eo-sequence-number',
  /** The Kinesis record's partition key. */
  partitionKey: 'eo-partition-key',
});

/**
 * Attribute names of an outbox item (one DynamoDB item per event, written in the commit that
 * emits it; its table's stream feeds the relay). The table is keyed by `pk` (String) and expires
 * items by TTL on `expiresAt`.
 */
export const OUTBOX_ATTRIBUTES = /* @__PURE__ */ Object.freeze({
  /** Partition key (String): the event id, deterministic (see `outboxEventId`). */
  pk: 'pk',
  /** The event's type (`OrderConfirmed`): a FIFO message group when the event names no entity. */
  type: 'eventType',
  /** The event's detail as JSON text, published unchanged as the message body. */
  body: 'body',
  /** The entity the event is about (optional): the FIFO `MessageGroupId`. */
  entity: 'entity',
  /** Who wrote it: the consumer name (unscoped), or the writer's `producer`. */
  source: 'source',
  /**
   * SHA-256 (hex) of the event's type, body and entity: the outbox put's condition compares it, so
   * the same event met again passes and another event under the id is a collision.
   */
  contentHash: 'contentHash',
  /** Epoch milliseconds of the commit that wrote it. */
  createdAt: 'createdAt',
  /** DynamoDB TTL attribute, epoch seconds (Number): the end of the outbox retention. */
  expiresAt: 'expiresAt',
});

/**
 * The message attribute carrying the event id of an outbox event the relay published; the
 * receiving consumer keys on it with `fromAttribute(IDEMPOTENCY_KEY_ATTRIBUTE)`.
 */
export const IDEMPOTENCY_KEY_ATTRIBUTE = 'idempotency-key';

/** The message attribute carrying a published outbox event's type. */
export const EVENT_TYPE_ATTRIBUTE = 'eo-event-type';

/**
 * The largest message a relay destination takes, bytes: an SQS message, an EventBridge entry
 * and an SNS message are each limited to 256 KB (body and attributes together).
 */
export const MAX_DESTINATION_MESSAGE_BYTES = 256 * 1024;

// Runtime rules the construct checks at synth time: `lib/` may import nothing else from
// `lambda/`, so the values it mirrors live here.

/**
 * The batch processor's default `deadlineMarginMillis`: it starts no message once less than
 * this is left of the invocation. The construct rejects a function timeout at or below it.
 */
export const DEFAULT_DEADLINE_MARGIN_MILLIS = 2000;

// Values the construct's props take and the runtime reads back from the environment: one list
// each, so a mode, a dead-letter mode or a log level cannot be known to one side only.

/**
 * Every consumer mode, in documentation order: how a consumer records that it has processed a
 * message (the construct's `mode` prop, which decides the grants).
 *
 * - `marker`: one conditional put of an inbox record; the effect is naturally idempotent or
 *   recorded elsewhere.
 * - `atomic`: the inbox record and the business writes commit in one `TransactWriteItems`.
 * - `entity`: one business item is the whole effect and is its own marker (one conditional
 *   put on a business table; the inbox table is not used).
 * - `two-phase`: claim with a lease, perform an effect outside DynamoDB, then complete.
 */
export const CONSUMER_MODES = /* @__PURE__ */ Object.freeze([
  'marker',
  'atomic',
  'entity',
  'two-phase',
] as const);

/** A consumer mode (see {@link CONSUMER_MODES}). */
export type ConsumerMode = (typeof CONSUMER_MODES)[number];

/**
 * Where a message that can never succeed goes (`EO_DEAD_LETTER_MODE`): `redrive` reports it as
 * a batch item failure until the queue's redrive policy moves it; `direct` sends it to the
 * dead-letter queue at once, with the reason as message attributes.
 */
export const DEAD_LETTER_MODES = /* @__PURE__ */ Object.freeze(['redrive', 'direct'] as const);

/** A dead-letter mode (see {@link DEAD_LETTER_MODES}). */
export type DeadLetterMode = (typeof DEAD_LETTER_MODES)[number];

/** The runtime's log levels (`EO_LOG_LEVEL`), most verbose first; `silent` logs nothing. */
export const LOG_LEVELS = /* @__PURE__ */ Object.freeze([
  'debug',
  'info',
  'warn',
  'error',
  'silent',
] as const);

/** A log level (see {@link LOG_LEVELS}). */
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * What a consumer name (`EO_CONSUMER`, the construct's `consumerName`) may be: 1-100 characters
 * of `A-Z a-z 0-9 . _ : -`. It holds none of `#`, `/`, `*`, `?`, so the scoped keys of two
 * consumers never share a prefix and IAM key patterns cannot match another consumer's records.
 */
export const CONSUMER_NAME_PATTERN = /^[A-Za-z0-9._:-]{1,100}$/;

// The transactional outbox (issue 17): what the `Outbox` construct creates and sets, and what
// the outbox writer (`unitOfWork.emit`, the standalone writer) and the relay read back.

/**
 * Where a relay publishes outbox events (`EO_OUTBOX_DESTINATION_KIND`): an SQS queue (standard
 * or FIFO), an EventBridge bus, or an SNS topic (standard or FIFO).
 */
export const OUTBOX_DESTINATION_KINDS = /* @__PURE__ */ Object.freeze(['sqs', 'eventbridge', 'sns'] as const);

/** An outbox destination kind (see {@link OUTBOX_DESTINATION_KINDS}). */
export type OutboxDestinationKind = (typeof OUTBOX_DESTINATION_KINDS)[number];

/**
 * Why a fair queue cannot be a FIFO one, in every refusal of the pair (the writers' and the
 * relay's options, the `Outbox` construct): "In standard queues, using MessageGroupId enables
 * fair queues. If strict ordering is required, use a FIFO queue." (Amazon SQS Developer Guide,
 * Using the message group ID.)
 */
export const FAIR_QUEUE_IS_STANDARD =
  'a FIFO queue already groups by `MessageGroupId` and keeps order; a fair queue is a standard one';

/**
 * Why a topic feeding fair queues must be a standard topic: SNS forwards a standard topic's
 * `MessageGroupId` to its SQS standard subscriptions only (the API reference of `Publish`).
 */
export const FAIR_TOPIC_IS_STANDARD =
  'a FIFO topic already groups by `MessageGroupId` for its FIFO queues; a standard topic forwards the group id to its SQS standard subscriptions, the fair queues';

/**
 * Environment variable names the `Outbox` construct sets: on the relay function all of them, on
 * a writer (a consumer with `outbox`, or a function given `Outbox.grantWrite`) all but
 * `EO_OUTBOX_DESTINATION_ARN` and `EO_OUTBOX_DESTINATION_QUEUE_URL`.
 */
export const OUTBOX_ENV = /* @__PURE__ */ Object.freeze({
  /** Name of the outbox table. */
  tableName: 'EO_OUTBOX_TABLE_NAME',
  /** How long an outbox item lives, seconds: the writer sets its TTL to the write time plus this. */
  retentionSeconds: 'EO_OUTBOX_RETENTION_SECONDS',
  /** `sqs`, `eventbridge` or `sns` (see {@link OUTBOX_DESTINATION_KINDS}): the writer checks size limits against it. */
  destinationKind: 'EO_OUTBOX_DESTINATION_KIND',
  /** `true` when the destination is a FIFO queue or topic (group id and deduplication id required), else `false`. */
  destinationFifo: 'EO_OUTBOX_DESTINATION_FIFO',
  /**
   * `true` when the destination is an SQS fair queue (a standard queue whose messages carry a
   * `MessageGroupId` per tenant: the relay sends each event's entity, else its type), else
   * `false`. `sqs` only.
   */
  destinationFair: 'EO_OUTBOX_DESTINATION_FAIR',
  /** ARN of the destination: the queue's, the bus's (`PutEvents` takes it as `EventBusName`) or the topic's. Relay only. */
  destinationArn: 'EO_OUTBOX_DESTINATION_ARN',
  /** URL of the destination queue (`sqs` only). Relay only. */
  destinationQueueUrl: 'EO_OUTBOX_DESTINATION_QUEUE_URL',
  /**
   * The `Source` of the events the relay puts on an EventBridge bus (`eventbridge` only; the
   * construct's `eventSource`, by default the relay's name). The writer counts it in an
   * entry's size.
   */
  eventSource: 'EO_OUTBOX_EVENT_SOURCE',
});

/**
 * Metric names of the outbox relay: a count per outcome of the records it publishes or gives up
 * on, and the age of each event it published, emitted in Embedded Metric Format with the relay's
 * name as the `Consumer` dimension and read by the `Outbox` construct's failed-publish and
 * event-age alarms.
 */
export const OUTBOX_RELAY_METRICS = /* @__PURE__ */ Object.freeze({
  /** Events published to the destination. */
  published: 'Published',
  /** Records the relay checkpointed at, to be delivered again (a failed publish or dead letter). */
  retry: 'Retry',
  /** New items that are not outbox events, dead-lettered with the reason. */
  permanent: 'Permanent',
  /**
   * Milliseconds from an event's commit (the item's `createdAt`, the writer's clock) to its
   * publish (the relay's clock), one value per published event, unit `Milliseconds`.
   */
  eventAge: 'EventAge',
});
