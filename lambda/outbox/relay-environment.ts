/**
 * The `Outbox` construct's contract as the relay's defaults: the `EO_OUTBOX_*` and `EO_*`
 * variables it sets on the relay function name the destination, the relay, its dead-letter
 * queue, log level and metric namespace. The SDK clients the defaults need are created once per
 * cold start (module scope). Like `createSqsHandler`, the relay reads `process.env` unless given
 * another environment; a malformed or missing variable fails at cold start (`INVALID_OPTIONS`,
 * naming it).
 */
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { SNSClient } from '@aws-sdk/client-sns';
import { SQSClient } from '@aws-sdk/client-sqs';
import {
  ENV,
  FAIR_QUEUE_IS_STANDARD,
  FAIR_TOPIC_IS_STANDARD,
  OUTBOX_DESTINATION_KINDS,
  OUTBOX_ENV,
  type OutboxDestinationKind,
} from '../core/contract';
import { type ConstructSettings, type Environment, readConstructSettings } from '../core/environment';
import { expectOption, invalidOption } from '../core/errors';
import type { DeadLetterSender } from '../dead-letter/dead-letter-message';
import { createSqsDeadLetterSender } from '../dead-letter/sqs-dead-letter-sender';
import {
  assertEventSource,
  eventBridgeDestination,
  type OutboxDestination,
  snsDestination,
  sqsDestination,
} from './destinations';

let sqsClient: SQSClient | undefined;
let eventBridgeClient: EventBridgeClient | undefined;
let snsClient: SNSClient | undefined;

const defaultSqsClient = (): SQSClient => {
  sqsClient ??= new SQSClient({});
  return sqsClient;
};
const defaultEventBridgeClient = (): EventBridgeClient => {
  eventBridgeClient ??= new EventBridgeClient({});
  return eventBridgeClient;
};
const defaultSnsClient = (): SNSClient => {
  snsClient ??= new SNSClient({});
  return snsClient;
};

/** What the `Outbox` construct configured for its relay; a field is absent when its variable is unset. */
export interface OutboxRelaySettings extends ConstructSettings {
  /** `EO_OUTBOX_DESTINATION_KIND`. */
  readonly destinationKind?: OutboxDestinationKind;
  /** `EO_OUTBOX_DESTINATION_ARN`: the queue's, bus's or topic's ARN. */
  readonly destinationArn?: string;
  /** `EO_OUTBOX_DESTINATION_QUEUE_URL` (`sqs` only). */
  readonly destinationQueueUrl?: string;
  /** `EO_OUTBOX_DESTINATION_FIFO`. */
  readonly destinationFifo?: boolean;
  /** `EO_OUTBOX_DESTINATION_FAIR` (`sqs` only). */
  readonly destinationFair?: boolean;
  /** `EO_OUTBOX_EVENT_SOURCE` (`eventbridge` only). */
  readonly eventSource?: string;
}

/**
 * Reads and checks the relay's variables of `environment`: those `createSqsHandler` reads too
 * (`EO_CONSUMER`, `EO_DEAD_LETTER_MODE`, `EO_DEAD_LETTER_QUEUE_URL`, `EO_LOG_LEVEL`,
 * `EO_METRIC_NAMESPACE`, checked the same way) and the outbox's. Unset or empty variables are
 * left out; a set one must be well-formed (`EO_OUTBOX_DESTINATION_KIND` one of the kinds,
 * `EO_OUTBOX_DESTINATION_FIFO` and `EO_OUTBOX_DESTINATION_FAIR` `true` or `false`,
 * `EO_DEAD_LETTER_MODE` `direct`: a stream has no redrive).
 */
export function readOutboxRelaySettings(environment: Environment): OutboxRelaySettings {
  const settings = readConstructSettings(environment);
  expectOption(
    settings.deadLetter === undefined || settings.deadLetter === 'direct',
    ENV.deadLetterMode,
    "'direct' for the outbox relay (a stream has no redrive: a record that can never be published goes to the dead-letter queue directly)",
    settings.deadLetter,
  );
  const read = (name: string): string | undefined => {
    const value = environment[name];
    return value === undefined || value.trim() === '' ? undefined : value;
  };
  // The kind and the FIFO and fair flags are checked by `readConstructSettings` (every writer
  // reads them).
  const kind = settings.outboxDestinationKind;
  const fifo = settings.outboxDestinationFifo;
  const fair = settings.outboxDestinationFair;
  const eventSource = read(OUTBOX_ENV.eventSource);
  if (eventSource !== undefined) assertEventSource(OUTBOX_ENV.eventSource, eventSource);
  const outbox: Record<string, unknown> = {
    destinationKind: kind,
    destinationArn: read(OUTBOX_ENV.destinationArn),
    destinationQueueUrl: read(OUTBOX_ENV.destinationQueueUrl),
    destinationFifo: fifo,
    destinationFair: fair,
    eventSource,
  };
  for (const field of Object.keys(outbox)) {
    if (outbox[field] === undefined) delete outbox[field];
  }
  return Object.freeze({ ...settings, ...outbox }) as OutboxRelaySettings;
}

/** SDK clients for {@link outboxDestinationFromEnvironment}; the relay's own when left out. */
export interface OutboxDestinationClients {
  /** Publishes to an SQS destination. */
  readonly sqs?: Pick<SQSClient, 'send'>;
  /** Publishes to an EventBridge destination. */
  readonly eventBridge?: Pick<EventBridgeClient, 'send'>;
  /** Publishes to an SNS destination. */
  readonly sns?: Pick<SNSClient, 'send'>;
}

/**
 * The destination the `Outbox` construct configured in `environment`, with its SDK client
 * created once per cold start: `EO_OUTBOX_DESTINATION_KIND` `sqs` publishes to
 * `EO_OUTBOX_DESTINATION_QUEUE_URL` ({@link sqsDestination}), `eventbridge` to the bus
 * `EO_OUTBOX_DESTINATION_ARN` with `Source` `EO_OUTBOX_EVENT_SOURCE`, else the relay's name
 * `EO_CONSUMER` ({@link eventBridgeDestination}), `sns` to the topic `EO_OUTBOX_DESTINATION_ARN`
 * ({@link snsDestination}). `EO_OUTBOX_DESTINATION_FIFO`, when set, must agree with the queue's
 * or topic's `.fifo` suffix; `EO_OUTBOX_DESTINATION_FAIR` `true` (a fair queue, or a topic feeding
 * fair queues: each send carries the event's entity, else its type, as `MessageGroupId`) needs
 * kind `sqs` or `sns` and a standard queue or topic.
 * Throws `INVALID_OPTIONS` naming a missing or malformed variable. Wrap it to add behaviour to
 * the default destination. `clients` gives the SDK clients to publish with (a region or endpoint
 * of your own, as `effectively-once outbox redrive` does); each one left out is the relay's,
 * created once per cold start.
 *
 * @example
 * export const handler = createOutboxRelay({ destination: crashOnce(outboxDestinationFromEnvironment()) });
 */
export function outboxDestinationFromEnvironment(
  environment: Environment = process.env,
  clients: OutboxDestinationClients = {},
): OutboxDestination {
  const settings = readOutboxRelaySettings(environment);
  const kind = settings.destinationKind;
  if (kind === undefined) {
    return invalidOption(
      OUTBOX_ENV.destinationKind,
      `one of ${OUTBOX_DESTINATION_KINDS.map((known) => `'${known}'`).join(', ')} (the \`Outbox\` construct sets it; or pass \`destination\`)`,
      kind,
    );
  }
  const fairQueue = settings.destinationFair === true;
  expectOption(
    !fairQueue || kind !== 'eventbridge',
    OUTBOX_ENV.destinationFair,
    `'false' or unset unless \`${OUTBOX_ENV.destinationKind}\` is 'sqs' or 'sns' (a fair queue is an SQS standard queue, fed directly or by a standard SNS topic)`,
    'true',
  );
  if (kind === 'sqs') {
    const queueUrl = settings.destinationQueueUrl;
    if (queueUrl === undefined || !/^https?:\/\//.test(queueUrl)) {
      return invalidOption(
        OUTBOX_ENV.destinationQueueUrl,
        `a queue URL when \`${OUTBOX_ENV.destinationKind}\` is 'sqs'`,
        queueUrl,
      );
    }
    assertFifoAgrees(settings.destinationFifo, queueUrl, OUTBOX_ENV.destinationQueueUrl);
    expectOption(
      !fairQueue || !queueUrl.endsWith('.fifo'),
      OUTBOX_ENV.destinationQueueUrl,
      `a standard queue's URL (not ending in '.fifo') as \`${OUTBOX_ENV.destinationFair}\` is 'true': ${FAIR_QUEUE_IS_STANDARD}`,
      queueUrl,
    );
    return sqsDestination({ client: clients.sqs ?? defaultSqsClient(), queueUrl, fairQueue });
  }
  const arn = settings.destinationArn;
  if (arn === undefined || !arn.startsWith('arn:')) {
    return invalidOption(
      OUTBOX_ENV.destinationArn,
      `an ARN when \`${OUTBOX_ENV.destinationKind}\` is '${kind}'`,
      arn,
    );
  }
  if (kind === 'eventbridge') {
    return eventBridgeDestination({
      client: clients.eventBridge ?? defaultEventBridgeClient(),
      eventBusName: arn,
      source: settings.eventSource ?? settings.consumer ?? DEFAULT_RELAY_NAME,
    });
  }
  assertFifoAgrees(settings.destinationFifo, arn, OUTBOX_ENV.destinationArn);
  expectOption(
    !fairQueue || !arn.endsWith('.fifo'),
    OUTBOX_ENV.destinationArn,
    `a standard topic's ARN (not ending in '.fifo') as \`${OUTBOX_ENV.destinationFair}\` is 'true': ${FAIR_TOPIC_IS_STANDARD}`,
    arn,
  );
  return snsDestination({ client: clients.sns ?? defaultSnsClient(), topicArn: arn, fairQueue });
}

/** The relay's name when neither `name` nor `EO_CONSUMER` gives one. */
export const DEFAULT_RELAY_NAME = 'outbox-relay';

function assertFifoAgrees(fifo: boolean | undefined, address: string, name: string): void {
  if (fifo === undefined) return;
  expectOption(
    fifo === address.endsWith('.fifo'),
    name,
    fifo
      ? `a FIFO address (ending in '.fifo') as \`${OUTBOX_ENV.destinationFifo}\` is 'true'`
      : `a standard address (not ending in '.fifo') as \`${OUTBOX_ENV.destinationFifo}\` is 'false'`,
    address,
  );
}

/** The relay's options the environment fills. */
export interface RelayEnvironmentDefaults {
  readonly name?: string;
  readonly deadLetter?: DeadLetterSender;
  readonly logLevel?: ConstructSettings['logLevel'];
  readonly metricNamespace?: string;
  readonly deadLetterMaxMessageBytes?: number;
}

/**
 * What `environment` supplies to a relay: its name (`EO_CONSUMER`), a dead-letter sender to
 * `EO_DEAD_LETTER_QUEUE_URL` (one per cold start, on the SQS client the SQS destination shares),
 * the log level (`EO_LOG_LEVEL`), the metric namespace (`EO_METRIC_NAMESPACE`) and the
 * dead-letter queue's message size (`EO_DEAD_LETTER_MAX_MESSAGE_BYTES`).
 */
export function relayEnvironmentDefaults(environment: Environment): RelayEnvironmentDefaults {
  const settings = readOutboxRelaySettings(environment);
  const defaults: Record<string, unknown> = {
    name: settings.consumer,
    deadLetter:
      settings.deadLetterQueueUrl === undefined
        ? undefined
        : defaultDeadLetterSender(settings.deadLetterQueueUrl),
    logLevel: settings.logLevel,
    metricNamespace: settings.metricNamespace,
    deadLetterMaxMessageBytes: settings.deadLetterMaxMessageBytes,
  };
  for (const field of Object.keys(defaults)) {
    if (defaults[field] === undefined) delete defaults[field];
  }
  return defaults as RelayEnvironmentDefaults;
}

const deadLetterSenders = new Map<string, DeadLetterSender>();

function defaultDeadLetterSender(queueUrl: string): DeadLetterSender {
  let sender = deadLetterSenders.get(queueUrl);
  if (sender === undefined) {
    sender = createSqsDeadLetterSender({ client: defaultSqsClient(), queueUrl });
    deadLetterSenders.set(queueUrl, sender);
  }
  return sender;
}

/** The process environment, read at cold start by the relay's entry point. */
export const processEnvironment = (): Environment => process.env;
