/**
 * The relay's destination in the chain simulation: what SQS refuses for good, and the transient
 * failures of its `SendMessage` and of the dead-letter queue's, each shaped as the AWS SDK v3
 * throws it, so the relay's classification (`classifyPublishError`) meets what it meets on AWS.
 *
 * Permanent refusals, the same on every attempt:
 * - `too-large-for-queue`: shipping's queue was created with `MaximumMessageSize` 2,048 bytes.
 *   The writer sizes an event against the 256 KB every destination takes, and cannot know one
 *   queue's own smaller limit, so an order with a long memo commits events SQS refuses. The SQS
 *   conformance layer (`test/support/aws-limits/sqs.ts`) refuses them as SQS does:
 *   `InvalidParameterValue`, "Message must be shorter than 2048 bytes".
 * - `injected`: a seeded few events are refused with the SDK's `InvalidMessageContents` (a 400,
 *   `$fault: 'client'`), a refusal of the content the writer cannot foresee.
 * - `invalid-attribute`: outbox items another writer put in the table (an older version of the
 *   service, a migration script: not `unitOfWork.emit`, which refuses such a type) whose type
 *   holds a character SQS refuses in a message attribute value, so the `eo-event-type`
 *   attribute is refused by the conformance layer (`InvalidMessageContents`) whatever the body.
 *
 * Transient faults, drawn per publish while a batch is below `FAULT_FREE_FROM_RETRY` retries:
 * `RequestThrottled` (the SDK's class), an `InternalError` 500 or `ServiceUnavailable` 503
 * (`$fault: 'server'`), a connection timeout before the request was sent (the HTTP handler's
 * `TimeoutError`), and a message that landed but whose answer was lost (`ECONNRESET`, or the
 * handler's request timeout, `TimeoutError` with `ETIMEDOUT`). A dead-letter send fails with a
 * `ServiceUnavailable` 503 on a seeded fraction of the sends.
 */
import { InvalidMessageContents, RequestThrottled, SQSServiceException } from '@aws-sdk/client-sqs';
import { EVENT_TYPE_ATTRIBUTE } from '../../../lambda/core/contract';
import { type OutboxMessage, publishedMessageBytes } from '../../../lambda/outbox';
import { chanceOf } from './prng';

/** The `MaximumMessageSize` of shipping's queue, bytes: below what the writer sizes events for. */
export const SHIPPING_QUEUE_MAX_MESSAGE_BYTES = 2048;
/** The share of events the destination refuses with `InvalidMessageContents`. */
const INJECTED_REFUSAL_CHANCE = 0.03;
/** The share of orders that carry a memo, and how long it is (characters): around the queue's limit. */
const MEMO_CHANCE = 0.05;
const MEMO_MIN_LENGTH = 1700;
const MEMO_SPREAD = 800;
/** The share of dead-letter sends (in an invocation with faults) that fail with a 503. */
const DEAD_LETTER_FAILURE_CHANCE = 0.1;

/** Why SQS refuses an event for good. */
export type EventRefusal = 'too-large-for-queue' | 'injected' | 'invalid-attribute';

/** What the reason of a refused event's dead letter must say, by refusal. */
export const REFUSAL_REASONS: Readonly<Record<EventRefusal, RegExp>> = {
  'too-large-for-queue': new RegExp(
    `InvalidParameterValue: .*Message must be shorter than ${SHIPPING_QUEUE_MAX_MESSAGE_BYTES} bytes`,
  ),
  injected: /InvalidMessageContents: /,
  'invalid-attribute': new RegExp(
    `InvalidMessageContents: Invalid binary character '#x[0-9A-F]+' was found in the value of message attribute '${EVENT_TYPE_ATTRIBUTE}'`,
  ),
};

/** The writer of the outbox items no order emits (`foreignEventsOf`). */
export const FOREIGN_WRITER = 'legacy-order-writer';

/** Characters SQS refuses in an attribute value (a control character, a noncharacter), one per foreign item in turn. */
const REFUSED_TYPE_CHARACTERS = ['\u0001', '\ufffe', '\u001f'];

/**
 * The outbox items another writer puts in the table during a seed of `count` orders (one per 50
 * orders, at least one): each an event whose type SQS refuses as an attribute value, so shipping's
 * queue refuses it for good and the relay must dead-letter it with the reason and move on.
 */
export function foreignEventsOf(
  seed: number,
  count: number,
): { readonly id: string; readonly type: string; readonly name: string; readonly body: string }[] {
  return Array.from({ length: Math.max(1, Math.floor(count / 50)) }, (_, index) => ({
    id: `s${seed}-foreign-${index}`,
    type: `OrderConfirmed${REFUSED_TYPE_CHARACTERS[index % REFUSED_TYPE_CHARACTERS.length]}v1`,
    name: `foreign-${index}`,
    body: JSON.stringify({ orderId: `legacy-${seed}-${index}`, writtenBy: FOREIGN_WRITER }),
  }));
}

/** The memo of order `index`, if it has one: long enough that some of its events exceed the queue's limit. */
export function memoOf(seed: number, index: number): string | undefined {
  if (chanceOf(seed, 'memo', index) >= MEMO_CHANCE) return undefined;
  const length = MEMO_MIN_LENGTH + Math.floor(chanceOf(seed, 'memo length', index) * MEMO_SPREAD);
  return `memo of order ${index} `.padEnd(length, '.');
}

/** Whether (and why) shipping's queue refuses this event: the same on every attempt. */
export function refusalOf(
  seed: number,
  message: Pick<OutboxMessage, 'id' | 'type' | 'body'>,
): EventRefusal | undefined {
  if (publishedMessageBytes(message, { kind: 'sqs' }) > SHIPPING_QUEUE_MAX_MESSAGE_BYTES) {
    return 'too-large-for-queue';
  }
  return chanceOf(seed, 'refused', message.id) < INJECTED_REFUSAL_CHANCE ? 'injected' : undefined;
}

/** True for a refusal of the request itself, as these layers throw it (the conformance layer's or injected). */
export function isRefusal(error: unknown): boolean {
  const name = (error as { name?: unknown } | null)?.name;
  return name === 'InvalidParameterValue' || name === 'InvalidMessageContents';
}

/** The error of an injected refusal, as the SDK throws `InvalidMessageContents`. */
export function injectedRefusal(): InvalidMessageContents {
  return new InvalidMessageContents({
    message: 'The message contains characters outside the allowed set (injected refusal).',
    $metadata: { httpStatusCode: 400, attempts: 1, totalRetryDelay: 0 },
  });
}

/** A transient failure of one publish. */
export type PublishFault = 'throttled' | 'server-error' | 'connection-timeout' | 'answer-lost';

/** Each publish fault's chance per attempt (in a batch below `FAULT_FREE_FROM_RETRY` retries). */
export const PUBLISH_FAULTS: readonly (readonly [PublishFault, number])[] = [
  ['throttled', 0.015],
  ['server-error', 0.015],
  ['connection-timeout', 0.015],
  ['answer-lost', 0.04],
];

/** The error a publish fault throws; `roll` (in [0, 1)) picks between two shapes of one fault. */
export function publishFaultError(fault: PublishFault, roll: number): Error {
  const second = roll >= 0.5;
  switch (fault) {
    case 'throttled':
      return new RequestThrottled({
        message: 'Request is throttled (injected).',
        $metadata: { httpStatusCode: 400, attempts: 1, totalRetryDelay: 0 },
      });
    case 'server-error':
      return serverError(second ? 'ServiceUnavailable' : 'InternalError');
    case 'connection-timeout':
      return Object.assign(
        new Error(
          '@smithy/node-http-handler - the request socket did not establish a connection with the server within the configured timeout of 1000 ms. (injected)',
        ),
        { name: 'TimeoutError' },
      );
    case 'answer-lost':
      return second
        ? Object.assign(
            new Error(
              '@smithy/node-http-handler - [ERROR] a request has exceeded the configured 1000 ms requestTimeout. (injected: the message landed)',
            ),
            { name: 'TimeoutError', code: 'ETIMEDOUT' },
          )
        : Object.assign(new Error('socket hang up (injected: the message landed)'), { code: 'ECONNRESET' });
  }
}

/** A 5xx of SQS as the SDK throws it (no modelled class: a service exception with `$fault: 'server'`). */
function serverError(name: 'InternalError' | 'ServiceUnavailable'): SQSServiceException {
  return new SQSServiceException({
    name,
    $fault: 'server',
    message: `${name} (injected)`,
    $metadata: { httpStatusCode: name === 'InternalError' ? 500 : 503, attempts: 1, totalRetryDelay: 0 },
  });
}

/** Whether a dead-letter send (of `eventId`, on its relay delivery `delivery`) fails with a 503. */
export function deadLetterSendFails(seed: number, eventId: string, delivery: number): boolean {
  return chanceOf(seed, 'relay dead-letter', eventId, delivery) < DEAD_LETTER_FAILURE_CHANCE;
}

/** The error of a failed dead-letter send. */
export function deadLetterSendError(): SQSServiceException {
  return serverError('ServiceUnavailable');
}
