/**
 * `createOutboxRelay`: the Lambda handler of the outbox table's DynamoDB Streams event source
 * mapping. It publishes each new outbox item to its destination with the event id where the
 * receiving consumer keys on it, in stream order, and checkpoints at the first record it could
 * not publish. It keeps no inbox: the stream is at-least-once, and the receiving consumer dedups
 * on the event id. What the caller leaves out comes from the `Outbox` construct's environment.
 */

import { invocationDeadline } from '../core/batch-processor';
import {
  DEFAULT_DEADLINE_MARGIN_MILLIS,
  DEFAULT_METRIC_NAMESPACE,
  LOG_LEVELS,
  OUTBOX_ATTRIBUTES,
  OUTBOX_RELAY_METRICS,
} from '../core/contract';
import type { Environment } from '../core/environment';
import { dispositionOf, EffectivelyOnceError, expectMethods, expectOption } from '../core/errors';
import type { LambdaContext } from '../core/inbound-message';
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
import { DEFAULT_DEAD_LETTER_MAX_MESSAGE_BYTES, SQS_MAX_MESSAGE_BYTES } from '../dead-letter/sqs-limits';
import { classifyPublishError } from '../store/classify-aws-error';
import { streamDeadLetterMessage } from '../streams/stream-dead-letter';
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
  /**
   * Records the relay checkpointed at (a retried publish failure, or the deadline reached), or
   * failed the invocation at, to come again (`Retry`).
   */
  readonly retry: number;
  /**
   * Events the destination refused and new items that are not outbox events, dead-lettered with
   * the reason (`Permanent`).
   */
  readonly permanent: number;
}

/** Where the counts of one relay invocation go. */
export interface RelayMetricsSink {
  /**
   * Publishes the counts of one invocation of the relay `context.consumer` and the age of each
   * event it published (`EventAge`: the relay's clock at publish less the item's `createdAt`,
   * milliseconds, at least 0; none for an item without a numeric `createdAt`); an error it
   * throws is logged, never rethrown.
   */
  publish(
    counts: RelayCounts,
    context: { readonly consumer: string; readonly timestampMillis: number },
    eventAgesMillis: readonly number[],
  ): void;
}

/** The most values of one metric an Embedded Metric Format line may carry (the EMF specification's limit). */
const EMF_MAX_VALUES = 100;

/**
 * The relay's default sink: one Embedded Metric Format line per invocation on standard output
 * with `Published`, `Retry` and `Permanent` (zeros included) and `EventAge` (unit
 * `Milliseconds`, one value per published event; left out when none was) in `namespace`,
 * dimension `Consumer` the relay's name: what the `Outbox` construct's alarms read. EMF takes
 * at most 100 values of a metric per line, so the ages past the first 100 follow in lines of
 * their own (ages only: each count is written once).
 */
export function createRelayEmfMetricsSink(
  namespace: string = DEFAULT_METRIC_NAMESPACE,
  write: LineWriter = writeStdoutLine,
): RelayMetricsSink {
  return {
    publish(counts, context, eventAgesMillis = []) {
      let values: Record<string, number | readonly number[]> = {
        [OUTBOX_RELAY_METRICS.published]: counts.published,
        [OUTBOX_RELAY_METRICS.retry]: counts.retry,
        [OUTBOX_RELAY_METRICS.permanent]: counts.permanent,
      };
      let start = 0;
      do {
        const ages = eventAgesMillis.slice(start, start + EMF_MAX_VALUES);
        start += EMF_MAX_VALUES;
        if (ages.length > 0) values[OUTBOX_RELAY_METRICS.eventAge] = ages;
        write(
          embeddedMetricLine(namespace, context, values, { [OUTBOX_RELAY_METRICS.eventAge]: 'Milliseconds' }),
        );
        values = {};
      } while (start < eventAgesMillis.length);
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
   * Where an event the destination refuses goes (a validation, size or character refusal, a
   * rejected EventBridge entry), and a new item that is not an outbox event (no event id, type
   * or body: written by something else), each with the reason, so the stream moves on.
   * @default a sender to `EO_DEAD_LETTER_QUEUE_URL`; without it none: such a record is
   * retried, and the stream stops there until the mapping's retries or record age run out
   */
  readonly deadLetter?: DeadLetterSender;
  /**
   * The dead-letter queue's `MaximumMessageSize`, bytes (1,024 to 1,048,576): a refused event's
   * dead letter that would not fit is sent marked truncated, with the item's key, to be read
   * again from the outbox table.
   * @default `EO_DEAD_LETTER_MAX_MESSAGE_BYTES`, else 262,144
   */
  readonly deadLetterMaxMessageBytes?: number;
  /**
   * A record not started this long before the Lambda timeout is left for the next invocation:
   * the relay returns the checkpoint there instead of being killed mid-batch (which would publish
   * everything of the invocation again). Capped at half the time an invocation has left when it
   * starts (`deadlineMarginFor`).
   * @default 2000
   */
  readonly deadlineMarginMillis?: number;
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
  /**
   * The metrics' timestamp, the deadline's clock, and the publish time of each event's
   * `EventAge`. @default Date.now
   */
  readonly clock?: Clock;
  /**
   * The environment the `EO_*` variables are read from; pass `{}` to read none.
   * @default process.env
   */
  readonly environment?: Environment;
}

/**
 * The relay's Lambda handler: a table stream event and the Lambda context (for the deadline) in,
 * the checkpoint out.
 */
export type OutboxRelay = (
  event: DynamoDbStreamEvent,
  context?: { getRemainingTimeInMillis?(): number },
) => Promise<StreamBatchResponse>;

/**
 * Creates the relay: the handler of the outbox table's stream mapping (enable
 * `ReportBatchItemFailures`; `StartingPosition: 'TRIM_HORIZON'`). Call it once, at module scope.
 * Under the `Outbox` construct it needs no options: `createOutboxRelay()` is the package's
 * relay handler.
 *
 * Records run in order. An `INSERT` is published; a `MODIFY` or `REMOVE` (a rewrite of the same
 * event, its TTL expiry) is not. Each publish error is classified (`classifyPublishError`): a
 * refusal of the request itself (validation, size, characters, a rejected EventBridge entry) is
 * sent to `deadLetter` with its reason and the whole record, counted `Permanent`, and the relay
 * moves on; throttling, 5xx, network and every other error retry. On the first record that
 * cannot be published (or dead-lettered), the later ones do not run and the response names its
 * sequence number, where the mapping resumes: records published before it may be published
 * again, with the same id. A record not started `deadlineMarginMillis` before the timeout
 * (`context.getRemainingTimeInMillis()`) is the checkpoint too, so a slow batch ends with what
 * it published kept. The relay never loses an event, and the receiving consumer, keyed on the
 * event id, applies each once.
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
    deadLetterMaxMessageBytes = defaults.deadLetterMaxMessageBytes ?? DEFAULT_DEAD_LETTER_MAX_MESSAGE_BYTES,
    deadlineMarginMillis = DEFAULT_DEADLINE_MARGIN_MILLIS,
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
  expectOption(
    Number.isInteger(deadLetterMaxMessageBytes) &&
      deadLetterMaxMessageBytes >= 1024 &&
      deadLetterMaxMessageBytes <= SQS_MAX_MESSAGE_BYTES,
    'deadLetterMaxMessageBytes',
    'an integer from 1024 to 1048576',
    deadLetterMaxMessageBytes,
  );
  expectOption(
    Number.isInteger(deadlineMarginMillis) && deadlineMarginMillis >= 0,
    'deadlineMarginMillis',
    'a non-negative integer',
    deadlineMarginMillis,
  );
  expectOption(typeof clock === 'function', 'clock', 'a function', clock);
  const metrics =
    options.metrics === false ? undefined : (options.metrics ?? createRelayEmfMetricsSink(metricNamespace));
  if (metrics !== undefined) expectMethods('metrics', metrics, ['publish']);
  const log = createLevelLog(logger, logLevel);

  return async (event, context) => {
    const counts = { published: 0, retry: 0, permanent: 0 };
    const eventAges: number[] = [];
    try {
      return await relay(event, counts, eventAges, deadlineOf(context));
    } finally {
      if (metrics !== undefined) {
        try {
          metrics.publish({ ...counts }, { consumer: name, timestampMillis: clock() }, eventAges);
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

  /** When records stop starting: the timeout less the margin; never without a context. */
  function deadlineOf(context: LambdaContext | undefined): number {
    const remaining = context?.getRemainingTimeInMillis?.();
    return invocationDeadline(
      clock(),
      typeof remaining === 'number' ? remaining : undefined,
      deadlineMarginMillis,
    );
  }

  async function relay(
    event: DynamoDbStreamEvent,
    counts: { published: number; retry: number; permanent: number },
    eventAges: number[],
    deadline: number,
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
      if (clock() >= deadline) {
        log({
          level: 'warn',
          message: 'Outbox relay: too close to the Lambda timeout, checkpointing',
          relay: name,
          sequenceNumber,
        });
        counts.retry += 1;
        // Not started: this record and every later one come in the next invocation.
        return { batchItemFailures: [{ itemIdentifier: sequenceNumber }] };
      }
      const message = outboxMessageOf(record.dynamodb.NewImage);
      let refusal: EffectivelyOnceError | undefined;
      try {
        if (message === undefined) {
          await sendInvalid(record, sequenceNumber);
          counts.permanent += 1;
          continue;
        }
        try {
          await destination.publish(message);
          counts.published += 1;
          const createdAt = Number(
            (record.dynamodb.NewImage?.[OUTBOX_ATTRIBUTES.createdAt] as { N?: string })?.N,
          );
          // The writer's clock and the relay's differ a little: a negative age is clamped to 0.
          if (Number.isFinite(createdAt)) eventAges.push(Math.max(0, clock() - createdAt));
          continue;
        } catch (error) {
          const failure = classifyPublishError(error);
          // A retried failure is logged as thrown: its own name and code.
          if (dispositionOf(failure) !== 'permanent') throw error;
          refusal = failure;
        }
        if (deadLetter === undefined) throw refusal;
        await sendRefused(record, sequenceNumber, message, refusal);
        counts.permanent += 1;
        log({
          level: 'error',
          message: 'Outbox relay: the destination refused the event; dead-lettered',
          relay: name,
          sequenceNumber,
          eventId: message.id,
          eventType: message.type,
          ...errorFields(refusal.cause ?? refusal, refusal.code),
        });
      } catch (error) {
        log({
          level: 'warn',
          message:
            message === undefined
              ? 'Outbox relay: not an outbox event'
              : refusal === undefined
                ? 'Outbox relay: publish failed'
                : deadLetter === undefined
                  ? 'Outbox relay: the destination refused the event; no dead-letter queue'
                  : 'Outbox relay: the destination refused the event; dead-lettering failed',
          relay: name,
          sequenceNumber,
          ...(message === undefined ? {} : { eventId: message.id, eventType: message.type }),
          ...(refusal === undefined
            ? errorFields(error)
            : errorFields(refusal.cause ?? refusal, refusal.code)),
        });
        counts.retry += 1;
        // Checkpoint here: this record and every later one come again.
        return { batchItemFailures: [{ itemIdentifier: sequenceNumber }] };
      }
    }
    return { batchItemFailures: [] };
  }

  /**
   * Dead-letters an event the destination refused: the stream dead-letter envelope (its
   * coordinates, item key, the reason and code, and the record's `dynamodb` field, which holds
   * the whole event), the event id as `eo-dedup-key`; within `deadLetterMaxMessageBytes`, else
   * marked truncated with the item key, to be read again from the outbox table.
   */
  async function sendRefused(
    record: DynamoDbStreamRecord,
    sequenceNumber: string,
    message: OutboxMessage,
    refusal: EffectivelyOnceError,
  ): Promise<void> {
    const creation = record.dynamodb.ApproximateCreationDateTime;
    await deadLetter!.send(
      streamDeadLetterMessage(
        {
          coordinates: {
            eventSource: record.eventSource ?? 'aws:dynamodb',
            ...(record.eventSourceARN === undefined ? {} : { eventSourceArn: record.eventSourceARN }),
            sequenceNumber,
            ...(record.eventID === undefined ? {} : { eventId: record.eventID }),
            ...(typeof creation === 'number' ? { arrivalTime: creation } : {}),
            eventName: 'INSERT',
            keys: record.dynamodb.Keys ?? { [OUTBOX_ATTRIBUTES.pk]: { S: message.id } },
          },
          data: new TextEncoder().encode(JSON.stringify(record.dynamodb)),
        },
        {
          reason: `The destination refused event ${message.id} (\`${message.type}\`): ${refusal.message}`,
          code: refusal.code,
          consumer: name,
          dedupKey: message.id,
        },
        record.eventID ?? sequenceNumber,
        deadLetterMaxMessageBytes,
      ),
    );
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

/**
 * The `errorName` and `code` fields of a log line: the error's class and string `code` (or
 * `code` when given: a refusal's classification), never its message.
 */
function errorFields(error: unknown, code?: string): { errorName?: string; code?: string } {
  const { name: errorName, code: ownCode } = (error ?? {}) as { name?: unknown; code?: unknown };
  const shown = code ?? ownCode;
  return {
    ...(typeof errorName === 'string' ? { errorName } : {}),
    ...(typeof shown === 'string' ? { code: shown } : {}),
  };
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
