/**
 * `createOutboxRelay`: the Lambda handler of the outbox table's DynamoDB Streams event source
 * mapping. It publishes each new outbox item to its destination with the event id where the
 * receiving consumer keys on it, in stream order, and checkpoints at the first record it could
 * not publish. It keeps no inbox: the stream is at-least-once, and the receiving consumer dedups
 * on the event id. What the caller leaves out comes from the `Outbox` construct's environment.
 */
import {
  DEFAULT_METRIC_NAMESPACE,
  LOG_LEVELS,
  OUTBOX_ATTRIBUTES,
  OUTBOX_RELAY_METRICS,
} from '../core/contract';
import type { Environment } from '../core/environment';
import { EffectivelyOnceError, expectMethods, expectOption } from '../core/errors';
import {
  createJsonLogger,
  createLevelLog,
  type LineWriter,
  type Logger,
  type LogLevel,
  writeStdoutLine,
} from '../core/logger';
import { embeddedMetricLine } from '../core/metrics';
import type { Clock } from '../core/time';
import type { DeadLetterSender } from '../dead-letter/dead-letter-message';
import type {
  AttributeValue,
  DynamoDbStreamEvent,
  DynamoDbStreamRecord,
  StreamBatchResponse,
} from '../streams/stream-event';
import type { OutboxDestination } from './destinations';
import type { OutboxMessage } from './outbox-item';
import {
  DEFAULT_RELAY_NAME,
  outboxDestinationFromEnvironment,
  processEnvironment,
  relayEnvironmentDefaults,
} from './relay-environment';

/** Records of one relay invocation per outcome (metrics `Published`, `Retry`, `Permanent`). */
export interface RelayCounts {
  /** Events published (`Published`). */
  readonly published: number;
  /** Records the relay checkpointed at, or failed the invocation at, to come again (`Retry`). */
  readonly retry: number;
  /** New items that are not outbox events, dead-lettered with the reason (`Permanent`). */
  readonly permanent: number;
}

/** Where the counts of one relay invocation go. */
export interface RelayMetricsSink {
  /**
   * Publishes the counts of one invocation of the relay `context.consumer`; an error it throws
   * is logged, never rethrown.
   */
  publish(
    counts: RelayCounts,
    context: { readonly consumer: string; readonly timestampMillis: number },
  ): void;
}

/**
 * The relay's default sink: one Embedded Metric Format line per invocation on standard output
 * with `Published`, `Retry` and `Permanent` (zeros included) in `namespace`, dimension
 * `Consumer` the relay's name: what the `Outbox` construct's failed-publish alarm reads.
 */
export function createRelayEmfMetricsSink(
  namespace: string = DEFAULT_METRIC_NAMESPACE,
  write: LineWriter = writeStdoutLine,
): RelayMetricsSink {
  return {
    publish(counts, context) {
      write(
        embeddedMetricLine(namespace, context, {
          [OUTBOX_RELAY_METRICS.published]: counts.published,
          [OUTBOX_RELAY_METRICS.retry]: counts.retry,
          [OUTBOX_RELAY_METRICS.permanent]: counts.permanent,
        }),
      );
    },
  };
}

/**
 * Options of {@link createOutboxRelay}, checked once (cold start). Each one left out comes from
 * the `Outbox` construct's variables in `environment`.
 */
export interface OutboxRelayOptions {
  /**
   * Where events go: {@link sqsDestination}, {@link eventBridgeDestination},
   * {@link snsDestination}, or an {@link OutboxDestination} of your own.
   * @default the destination `environment` describes ({@link outboxDestinationFromEnvironment})
   */
  readonly destination?: OutboxDestination;
  /**
   * Where a new item that is not an outbox event goes (no event id, type or body: written by
   * something else), with the reason, so the stream moves on.
   * @default a sender to `EO_DEAD_LETTER_QUEUE_URL`; without it none: such a record is
   * retried, and the stream stops there until the mapping's retries or record age run out
   */
  readonly deadLetter?: DeadLetterSender;
  /**
   * Names the relay: the `Consumer` dimension of its metrics, `eo-consumer` on its dead
   * letters, `relay` in its log lines (and an EventBridge destination's default `Source`). A
   * name other than `EO_CONSUMER` throws `INVALID_OPTIONS`: the construct's alarms watch its own.
   * @default `EO_CONSUMER`, else 'outbox-relay'
   */
  readonly name?: string;
  /**
   * Where the relay logs a record it could not publish or that is not an outbox event: one
   * `warn` line with the sequence number, the event id and the error's name and code, never the
   * body. @default JSON lines on stdout
   */
  readonly logger?: Logger;
  /** The lowest level logged. @default `EO_LOG_LEVEL`, else 'info' */
  readonly logLevel?: LogLevel;
  /**
   * Where each invocation's counts go, or `false` for none.
   * @default one Embedded Metric Format line ({@link createRelayEmfMetricsSink})
   */
  readonly metrics?: RelayMetricsSink | false;
  /** Namespace of the default metrics sink. @default `EO_METRIC_NAMESPACE`, else 'EffectivelyOnce' */
  readonly metricNamespace?: string;
  /** The metrics' timestamp. @default Date.now */
  readonly clock?: Clock;
  /**
   * The environment the `EO_*` variables are read from; pass `{}` to read none.
   * @default process.env
   */
  readonly environment?: Environment;
}

/** The relay's Lambda handler: a table stream event in, the checkpoint out. */
export type OutboxRelay = (event: DynamoDbStreamEvent) => Promise<StreamBatchResponse>;

/**
 * Creates the relay: the handler of the outbox table's stream mapping (enable
 * `ReportBatchItemFailures`; `StartingPosition: 'TRIM_HORIZON'`). Call it once, at module scope.
 * Under the `Outbox` construct it needs no options: `createOutboxRelay()` is the package's
 * relay handler.
 *
 * Records run in order. An `INSERT` is published; a `MODIFY` or `REMOVE` (a rewrite of the same
 * event, its TTL expiry) is not. On the first record that cannot be published, the later ones
 * do not run and the response names its sequence number, where the mapping resumes: records
 * published before it may be published again, with the same id. The relay never loses an
 * event, and the receiving consumer, keyed on the event id, applies each once.
 *
 * Bad input: an event without a `Records` array cannot be checkpointed, so the relay throws
 * `INVALID_EVENT` (the invocation fails and the mapping retries the batch). A record without
 * `dynamodb.SequenceNumber` cannot be named as a checkpoint either: the records before it are
 * published, then the relay throws `INVALID_EVENT` (the mapping retries, bisecting the batch,
 * and gives the record's batch to the on-failure queue once its retries or record age run
 * out). A stream event source never delivers either; both count as `Retry`.
 *
 * @example
 * // The package's relay handler, configured by the `Outbox` construct's environment:
 * export const handler = createOutboxRelay();
 * // Or a destination of your own making:
 * export const custom = createOutboxRelay({ destination: sqsDestination({ client: sqs, queueUrl }) });
 */
export function createOutboxRelay(options: OutboxRelayOptions = {}): OutboxRelay {
  expectOption(
    typeof options === 'object' && options !== null,
    'createOutboxRelay(options)',
    'an object',
    options,
  );
  const environment = options.environment ?? processEnvironment();
  expectOption(
    typeof environment === 'object' && environment !== null,
    'environment',
    'an object of variables',
    environment,
  );
  const defaults = relayEnvironmentDefaults(environment);
  if (options.name !== undefined && defaults.name !== undefined && options.name !== defaults.name) {
    throw new EffectivelyOnceError(
      'INVALID_OPTIONS',
      `Expected \`name\` to be \`${defaults.name}\` as the construct set it (\`EO_CONSUMER\`), got \`${options.name}\`: leave \`name\` out to use the construct's, or change the construct`,
    );
  }
  const {
    destination = outboxDestinationFromEnvironment(environment),
    deadLetter = defaults.deadLetter,
    name = defaults.name ?? DEFAULT_RELAY_NAME,
    logger = createJsonLogger(),
    logLevel = defaults.logLevel ?? 'info',
    metricNamespace = defaults.metricNamespace ?? DEFAULT_METRIC_NAMESPACE,
    clock = Date.now,
  } = options;
  expectMethods('destination', destination, ['publish']);
  expectMethods('logger', logger, ['log']);
  if (deadLetter !== undefined) expectMethods('deadLetter', deadLetter, ['send']);
  expectOption(typeof name === 'string' && name !== '', 'name', 'a non-empty string', name);
  expectOption(
    (LOG_LEVELS as readonly unknown[]).includes(logLevel),
    'logLevel',
    `one of ${LOG_LEVELS.map((level) => `'${level}'`).join(', ')}`,
    logLevel,
  );
  expectOption(
    typeof metricNamespace === 'string' && metricNamespace !== '' && metricNamespace.length <= 255,
    'metricNamespace',
    'a string of 1 to 255 characters',
    metricNamespace,
  );
  expectOption(typeof clock === 'function', 'clock', 'a function', clock);
  const metrics =
    options.metrics === false ? undefined : (options.metrics ?? createRelayEmfMetricsSink(metricNamespace));
  if (metrics !== undefined) expectMethods('metrics', metrics, ['publish']);
  const log = createLevelLog(logger, logLevel);

  return async (event) => {
    const counts = { published: 0, retry: 0, permanent: 0 };
    try {
      return await relay(event, counts);
    } finally {
      if (metrics !== undefined) {
        try {
          metrics.publish({ ...counts }, { consumer: name, timestampMillis: clock() });
        } catch (error) {
          log({
            level: 'error',
            message: 'Publishing metrics failed',
            relay: name,
            errorName: (error as Error)?.name,
          });
        }
      }
    }
  };

  async function relay(
    event: DynamoDbStreamEvent,
    counts: { published: number; retry: number; permanent: number },
  ): Promise<StreamBatchResponse> {
    const records = event?.Records;
    if (!Array.isArray(records)) {
      counts.retry += 1;
      log({ level: 'error', message: 'Outbox relay: not a DynamoDB Streams event', relay: name });
      throw new EffectivelyOnceError('INVALID_EVENT', 'The outbox relay expects a DynamoDB Streams event');
    }
    for (const [index, record] of (records as readonly DynamoDbStreamRecord[]).entries()) {
      const sequenceNumber = record?.dynamodb?.SequenceNumber;
      if (typeof sequenceNumber !== 'string' || sequenceNumber === '') {
        counts.retry += 1;
        log({
          level: 'error',
          message: 'Outbox relay: a record without a sequence number',
          relay: name,
          recordIndex: index,
        });
        throw new EffectivelyOnceError(
          'INVALID_EVENT',
          `The outbox relay expects DynamoDB Streams records with \`dynamodb.SequenceNumber\` (record ${index} has none): it cannot be checkpointed`,
        );
      }
      if (record.eventName !== 'INSERT') continue;
      const message = outboxMessageOf(record.dynamodb.NewImage);
      try {
        if (message === undefined) {
          await sendInvalid(record, sequenceNumber);
          counts.permanent += 1;
        } else {
          await destination.publish(message);
          counts.published += 1;
        }
      } catch (error) {
        const { name: errorName, code } = (error ?? {}) as { name?: unknown; code?: unknown };
        log({
          level: 'warn',
          message:
            message === undefined ? 'Outbox relay: not an outbox event' : 'Outbox relay: publish failed',
          relay: name,
          sequenceNumber,
          ...(message === undefined ? {} : { eventId: message.id, eventType: message.type }),
          ...(typeof errorName === 'string' ? { errorName } : {}),
          ...(typeof code === 'string' ? { code } : {}),
        });
        counts.retry += 1;
        // Checkpoint here: this record and every later one come again.
        return { batchItemFailures: [{ itemIdentifier: sequenceNumber }] };
      }
    }
    return { batchItemFailures: [] };
  }

  async function sendInvalid(record: DynamoDbStreamRecord, sequenceNumber: string): Promise<void> {
    if (deadLetter === undefined) {
      throw new EffectivelyOnceError('VALIDATION', 'A new item of the outbox table is not an outbox event');
    }
    await deadLetter.send({
      body: JSON.stringify(record.dynamodb.Keys ?? {}),
      reason: `The new item is not an outbox event: it needs String \`${OUTBOX_ATTRIBUTES.pk}\`, \`${OUTBOX_ATTRIBUTES.type}\` and \`${OUTBOX_ATTRIBUTES.body}\` (the stream must carry new images)`,
      code: 'VALIDATION',
      consumer: name,
      sourceMessageId: record.eventID ?? sequenceNumber,
      attributes: {},
    });
  }
}

/** The message of an outbox item's new image; `undefined` when the image is not an outbox item. */
export function outboxMessageOf(
  image: Readonly<Record<string, AttributeValue>> | undefined,
): OutboxMessage | undefined {
  const text = (attribute: string): string | undefined => {
    const value = image?.[attribute];
    return value !== undefined && 'S' in value && value.S !== '' ? value.S : undefined;
  };
  const id = text(OUTBOX_ATTRIBUTES.pk);
  const type = text(OUTBOX_ATTRIBUTES.type);
  const body = text(OUTBOX_ATTRIBUTES.body);
  if (id === undefined || type === undefined || body === undefined) return undefined;
  const entity = text(OUTBOX_ATTRIBUTES.entity);
  return { id, type, body, ...(entity === undefined ? {} : { entity }) };
}
