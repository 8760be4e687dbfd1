/**
 * Example handler: the relay of the example's outbox, the handler of the outbox table's stream
 * mapping (the `Outbox` construct's `relayEntry`). It publishes each new `OrderConfirmed` item
 * to the shipment scheduler's queue with `createOutboxRelay`, and logs one `info` line per event
 * the queue accepted (`Outbox relay: published`, with the event id and type, never the body),
 * so a run can count the publishes.
 *
 * **The demo's fault: a crash after a publish, before the checkpoint, once.** With
 * `RELAY_CRASH_TABLE` set (the example stack sets it in its local stage only), the first event
 * the destination accepts is followed by a crash: the relay stops at that record and the handler
 * throws instead of returning its checkpoint, so the stream delivers the batch again and the
 * event is published a second time with the same id, which the shipment scheduler acknowledges
 * as a duplicate. "Once" survives cold starts and concurrent instances: the crash is claimed by
 * a conditional put of one marker item in that table (see {@link createCrashOnce}).
 *
 * Environment: the `Outbox` construct's relay environment (`EO_OUTBOX_DESTINATION_QUEUE_URL`,
 * `EO_DEAD_LETTER_QUEUE_URL`, `EO_CONSUMER`), and `RELAY_CRASH_TABLE` for the fault.
 */
import { randomUUID } from 'node:crypto';
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { createJsonLogger, createSqsDeadLetterSender, type Logger } from 'effectively-once';
import {
  createOutboxRelay,
  type DynamoDbStreamEvent,
  OUTBOX_ENV,
  type OutboxDestination,
  type OutboxRelay,
  type StreamBatchResponse,
  sqsDestination,
} from 'effectively-once/outbox';
import { type HandlerEnvironment, requiredVariable } from './handler-environment';

/** The key of the one marker item that records the crash. */
export const CRASH_MARKER_KEY = 'order-events-relay#crash-after-publish';

/** What the fault is recognised by: a literal `name` and `code`, as every error of the toolkit. */
export class InjectedCrash extends Error {
  override readonly name = 'InjectedCrash';
  readonly code = 'INJECTED_CRASH';
  /** The event that was published just before the crash. */
  readonly eventId: string;

  constructor(eventId: string) {
    super(`Injected crash after publishing event ${eventId}, before the checkpoint`);
    this.eventId = eventId;
  }
}

/** Claims the one crash of the demo: resolves `true` for exactly one call, ever. */
export interface CrashOnce {
  /** Whether this call is the crash (after publishing `eventId`). A rejection means unknown: no crash. */
  claim(eventId: string): Promise<boolean>;
}

/** Options of {@link createCrashOnce}. */
export interface CrashOnceOptions {
  readonly client: Pick<DynamoDBClient, 'send'>;
  /** The table holding the marker item (partition key `pk`, String). */
  readonly tableName: string;
  /** The crash's time, recorded on the marker. @default Date.now */
  readonly now?: () => number;
  /** A token unique to each claim. @default crypto.randomUUID */
  readonly token?: () => string;
}

/**
 * The crash claimed by a conditional put of the marker item `pk = CRASH_MARKER_KEY`: the first
 * put creates it (the crash), every later one fails its condition (no crash), whichever
 * instance or cold start makes it. Each claim writes a token of its own and asks for the item on
 * a failed condition: when the put was applied but its response lost, the SDK's retry finds the
 * item with its own token, and that claim is still the crash (not a second one, and not none).
 * After a failed condition the instance stops asking.
 */
export function createCrashOnce(options: CrashOnceOptions): CrashOnce {
  const { client, tableName, now = Date.now, token = randomUUID } = options;
  let spent = false;
  return {
    async claim(eventId) {
      if (spent) return false;
      const claim = token();
      try {
        await client.send(
          new PutItemCommand({
            TableName: tableName,
            Item: {
              pk: { S: CRASH_MARKER_KEY },
              eventId: { S: eventId },
              claim: { S: claim },
              crashedAt: { N: String(now()) },
            },
            ConditionExpression: 'attribute_not_exists(#pk)',
            ExpressionAttributeNames: { '#pk': 'pk' },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        spent = true;
        return true;
      } catch (error) {
        // Recognised by name, as the toolkit recognises AWS errors (never by `instanceof`).
        const failure = error as { name?: unknown; Item?: Record<string, { S?: string }> };
        if (failure?.name !== 'ConditionalCheckFailedException') throw error;
        spent = true;
        return failure.Item?.claim?.S === claim;
      }
    },
  };
}

/** What a relay with the fault reports to its handler. */
export interface CrashSignal {
  /** The crash, once the destination accepted an event and the crash was claimed. */
  crash: InjectedCrash | undefined;
}

/**
 * Wraps the relay's destination: logs each accepted publish, and after the one publish whose
 * crash `crashOnce` claims, throws {@link InjectedCrash}, which stops the relay at that record
 * (it checkpoints there) and tells {@link crashingRelay} to throw. Without `crashOnce`, only logs.
 */
export function crashOnceAfterPublish(
  destination: OutboxDestination,
  options: {
    readonly relayName: string;
    readonly logger: Logger;
    readonly crashOnce?: CrashOnce;
    readonly signal: CrashSignal;
  },
): OutboxDestination {
  const { relayName, logger, crashOnce, signal } = options;
  // A claim that fails (the marker table unreachable) is no crash: the fault must never be what
  // stops an event from being published.
  const claimCrash = (once: CrashOnce, eventId: string) =>
    once.claim(eventId).catch((error: unknown) => {
      const { name } = (error ?? {}) as { name?: unknown };
      logger.log({
        level: 'warn',
        message: 'Outbox relay: the crash could not be claimed; no crash',
        relay: relayName,
        eventId,
        ...(typeof name === 'string' ? { errorName: name } : {}),
      });
      return false;
    });
  return {
    async publish(message) {
      await destination.publish(message);
      logger.log({
        level: 'info',
        message: 'Outbox relay: published',
        relay: relayName,
        eventId: message.id,
        eventType: message.type,
      });
      if (crashOnce !== undefined && (await claimCrash(crashOnce, message.id))) {
        signal.crash = new InjectedCrash(message.id);
        throw signal.crash;
      }
    },
  };
}

/**
 * The handler around `relay`: when the invocation claimed the crash, it throws instead of
 * returning the checkpoint, as a process dying after the publish would; the event source then
 * delivers the batch again.
 */
export function crashingRelay(relay: OutboxRelay, signal: CrashSignal): OutboxRelay {
  return async (event: DynamoDbStreamEvent): Promise<StreamBatchResponse> => {
    signal.crash = undefined;
    const response = await relay(event);
    if (signal.crash !== undefined) throw signal.crash;
    return response;
  };
}

/** The relay of `env`, with the crash when `RELAY_CRASH_TABLE` is set. */
export function createOrderEventsRelay(
  env: HandlerEnvironment,
  clients: { readonly sqs: SQSClient; readonly dynamodb: Pick<DynamoDBClient, 'send'> },
  logger: Logger = createJsonLogger(),
): OutboxRelay {
  const queueUrl = requiredVariable(env, OUTBOX_ENV.destinationQueueUrl);
  const relayName = requiredVariable(env, 'EO_CONSUMER');
  const deadLetterQueueUrl = requiredVariable(env, 'EO_DEAD_LETTER_QUEUE_URL');
  const crashTable = env.RELAY_CRASH_TABLE;
  const signal: CrashSignal = { crash: undefined };
  const relay = createOutboxRelay({
    destination: crashOnceAfterPublish(sqsDestination({ client: clients.sqs, queueUrl }), {
      relayName,
      logger,
      signal,
      ...(crashTable
        ? { crashOnce: createCrashOnce({ client: clients.dynamodb, tableName: crashTable }) }
        : {}),
    }),
    deadLetter: createSqsDeadLetterSender({ client: clients.sqs, queueUrl: deadLetterQueueUrl }),
    name: relayName,
    logger,
    // The construct's variables of this relay, not whatever else the process holds.
    environment: env,
  });
  return crashingRelay(relay, signal);
}

/** The Lambda handler (bundled by entry path; the SDK clients are created once per cold start). */
export const handler = createOrderEventsRelay(process.env, {
  sqs: new SQSClient({}),
  dynamodb: new DynamoDBClient({}),
});
