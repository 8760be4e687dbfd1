/**
 * What a destination would refuse of an event, settled at `emit`: characters SQS and SNS refuse in
 * a body are JSON escapes (the receiver parses the same detail), an EventBridge `DetailType`
 * over 128 characters is refused before anything is committed, and so is an event whose group id
 * (its entity, else its type) a FIFO queue or topic refuses, whether the FIFO flag comes from the
 * writer's options or the construct's `EO_OUTBOX_DESTINATION_FIFO`.
 */

import { describe, expect, it } from 'vitest';
import { ENV, OUTBOX_ATTRIBUTES, OUTBOX_ENV } from '../../../lambda/core/contract';
import { fromBody, scopeKey } from '../../../lambda/core/dedup-key';
import type { TransactWriteAction } from '../../../lambda/core/store-port';
import { atomic } from '../../../lambda/modes/atomic';
import { createUnitOfWork } from '../../../lambda/modes/unit-of-work';
import {
  createOutboxWriter,
  IDEMPOTENCY_KEY_ATTRIBUTE,
  type OutboxDestinationSizing,
  sqsDestination,
} from '../../../lambda/outbox';
import { createSqsHandler } from '../../../lambda/sqs/sqs-handler';
import { checkSnsPublish, snsTopicLimits } from '../../support/aws-limits/sns';
import { checkSqsSendMessage, sqsQueueLimits } from '../../support/aws-limits/sqs';
import { captureLogger, manualClock, sqsEvent, sqsRecord } from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';

function unitOfWorkFor(destination: OutboxDestinationSizing) {
  return createUnitOfWork(createMemoryStore(), 'inbox', {
    tableName: 'Outbox',
    retentionSeconds: 3600,
    scope: scopeKey('orders', 'o-1'),
    source: 'orders',
    nowMillis: 0,
    destination,
  });
}

/** The body of the one outbox item a unit of work put. */
const bodyOf = (writes: readonly TransactWriteAction[]): string =>
  writes.find((write) => write.Put !== undefined)?.Put?.Item?.[OUTBOX_ATTRIBUTES.body] as string;

describe('events at the edge of what a destination takes', () => {
  it('writes a detail holding U+FFFE, U+FFFF, NUL and a lone surrogate as a body SQS accepts, which parses to the same detail', () => {
    const unitOfWork = unitOfWorkFor({ kind: 'sqs' });
    const detail = { note: 'a\ufffeb\uffffc\u0000d\ud800e' };

    const id = unitOfWork.emit({ type: 'OrderConfirmed', detail });

    const body = bodyOf(unitOfWork.writes);
    expect(JSON.parse(body)).toEqual(detail);
    expect(body).toContain('\\ufffe');
    expect(
      checkSqsSendMessage(
        {
          QueueUrl: 'https://sqs.us-east-1.amazonaws.com/000000000000/shipping',
          MessageBody: body,
          MessageAttributes: { [IDEMPOTENCY_KEY_ATTRIBUTE]: { DataType: 'String', StringValue: id } },
        },
        { fifo: false },
      ),
    ).toBeUndefined();
  });

  it('refuses an EventBridge event whose type is longer than a DetailType may be (128), before the commit', () => {
    const destination = { kind: 'eventbridge', eventSource: 'orders.relay' } as const;
    expect(unitOfWorkFor(destination).emit({ type: 'T'.repeat(128), detail: {} })).toEqual(
      expect.any(String),
    );
    expect(() => unitOfWorkFor(destination).emit({ type: 'T'.repeat(129), detail: {} })).toThrow(
      expect.objectContaining({
        code: 'VALIDATION',
        message: "emit: the event's `type` is the EventBridge `DetailType`, at most 128 characters; got 129",
      }),
    );
    // An SQS or SNS destination takes a type of up to 256 characters (an attribute value).
    expect(unitOfWorkFor({ kind: 'sqs' }).emit({ type: 'T'.repeat(256), detail: {} })).toEqual(
      expect.any(String),
    );
  });
});

describe('events a FIFO queue or topic would refuse for their group id', () => {
  const fifo = { kind: 'sqs', fifo: true } as const;
  const FIFO_QUEUE = 'https://sqs.us-east-1.amazonaws.com/000000000000/shipping.fifo';
  const FIFO_TOPIC = 'arn:aws:sns:us-east-1:000000000000:shipping.fifo';

  /** Whether SQS and SNS, by their documented rules, take a send with `groupId` (the conformance layer). */
  const destinationsTake = (groupId: string) => ({
    sqs:
      checkSqsSendMessage(
        { QueueUrl: FIFO_QUEUE, MessageBody: '{}', MessageGroupId: groupId, MessageDeduplicationId: 'd' },
        sqsQueueLimits(FIFO_QUEUE),
      ) === undefined,
    sns:
      checkSnsPublish(
        { TopicArn: FIFO_TOPIC, Message: '{}', MessageGroupId: groupId, MessageDeduplicationId: 'd' },
        snsTopicLimits(FIFO_TOPIC),
      ) === undefined,
  });

  const cases: { readonly entity?: string; readonly type: string; readonly refusal?: string }[] = [
    { entity: 'order-1/line:2', type: 'OrderConfirmed' },
    { entity: '!~'.repeat(64), type: 'OrderConfirmed' },
    { entity: 'order 1', type: 'OrderConfirmed', refusal: 'character U+0020 at position 6' },
    { entity: 'commande-é', type: 'OrderConfirmed', refusal: 'character U+00E9 at position 10' },
    { entity: 'order-\u{1F600}', type: 'OrderConfirmed', refusal: 'character U+1F600 at position 7' },
    { type: 'Order Confirmed', refusal: 'character U+0020 at position 6' },
    { type: 'T'.repeat(128) },
    { type: 'T'.repeat(129), refusal: '129 characters' },
  ];

  for (const { entity, type, refusal } of cases) {
    const field = entity === undefined ? "the event's `type` (it has no `entity`)" : '`entity`';
    it(`${refusal === undefined ? 'takes' : 'refuses'} ${field} ${JSON.stringify((entity ?? type).slice(0, 20))}${(entity ?? type).length > 20 ? '…' : ''}, as SQS and SNS would`, () => {
      const groupId = entity ?? type;
      expect(destinationsTake(groupId)).toEqual({ sqs: refusal === undefined, sns: refusal === undefined });
      const emit = () =>
        unitOfWorkFor(fifo).emit({ type, detail: {} }, entity === undefined ? {} : { entity });
      if (refusal === undefined) {
        expect(emit()).toEqual(expect.any(String));
        return;
      }
      expect(emit).toThrow(
        expect.objectContaining({
          code: 'VALIDATION',
          message: `emit: on a FIFO destination ${field} is the \`MessageGroupId\`, which SQS and SNS take only as 1 to 128 ASCII letters, digits and punctuation; it has ${refusal}`,
        }),
      );
      // A standard queue or topic has no group id: the same event is taken there.
      expect(
        unitOfWorkFor({ kind: 'sns' }).emit({ type, detail: {} }, entity === undefined ? {} : { entity }),
      ).toEqual(expect.any(String));
    });
  }

  it('the relay sends exactly the group id emit checked (the entity, else the type)', async () => {
    const sent: unknown[] = [];
    const destination = sqsDestination({
      client: { send: async (command: { input: unknown }) => sent.push(command.input) } as never,
      queueUrl: FIFO_QUEUE,
    });
    await destination.publish({ id: 'e-1', type: 'OrderConfirmed', body: '{}', entity: 'order-1' });
    await destination.publish({ id: 'e-2', type: 'OrderConfirmed', body: '{}' });
    expect(sent).toMatchObject([{ MessageGroupId: 'order-1' }, { MessageGroupId: 'OrderConfirmed' }]);
  });

  it('refuses such an event from the standalone writer given destinationFifo, writing nothing', async () => {
    const store = createMemoryStore();
    const writer = createOutboxWriter({
      client: {} as never,
      tableName: 'Outbox',
      producer: 'orders-api',
      destinationKind: 'sns',
      destinationFifo: true,
      store,
    });
    await expect(
      writer.write([{ type: 'OrderConfirmed', detail: {}, entity: 'order 1' }], [], 'k-1'),
    ).rejects.toMatchObject({ code: 'VALIDATION' });
    expect(store.items('Outbox')).toEqual([]);
    expect(
      await writer.write([{ type: 'OrderConfirmed', detail: {}, entity: 'order-1' }], [], 'k-1'),
    ).toMatchObject({
      kind: 'written',
    });
  });

  it('dead-letters such an event from atomic mode when the construct says the destination is FIFO (EO_OUTBOX_DESTINATION_FIFO), committing nothing', async () => {
    const environment = (fifoFlag: string | undefined) => ({
      [ENV.consumer]: 'orders',
      [ENV.inboxTable]: 'Inbox',
      [OUTBOX_ENV.tableName]: 'OrderEvents',
      [OUTBOX_ENV.destinationKind]: 'sqs',
      ...(fifoFlag === undefined ? {} : { [OUTBOX_ENV.destinationFifo]: fifoFlag }),
    });
    const run = async (fifoFlag: string | undefined) => {
      const store = createMemoryStore();
      const logger = captureLogger();
      const handler = createSqsHandler<{ orderId: string; customer: string }>({
        dedupKey: fromBody('orderId'),
        mode: atomic((message, unitOfWork) => {
          unitOfWork.emit({ type: 'OrderConfirmed', detail: {} }, { entity: message.body.customer });
        }),
        store,
        clock: manualClock(),
        logger,
        metrics: false,
        environment: environment(fifoFlag),
      });
      const response = await handler(
        sqsEvent(sqsRecord('m-1', { orderId: 'o-1', customer: 'Ada Lovelace' })),
        {} as never,
      );
      return { response, store, codes: logger.entries.map((entry) => entry.code) };
    };

    const onFifo = await run('true');
    expect(onFifo.response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-1' }] });
    expect(onFifo.codes).toContain('VALIDATION');
    expect(onFifo.store.items('OrderEvents')).toEqual([]);
    expect(onFifo.store.items('Inbox')).toEqual([]);
    // The construct's standard destination (or none said) takes the same event.
    for (const flag of ['false', undefined]) {
      const onStandard = await run(flag);
      expect(onStandard.response).toEqual({ batchItemFailures: [] });
      expect(onStandard.store.items('OrderEvents')).toHaveLength(1);
    }
  });

  it('fails fast on a FIFO flag that is not a boolean, or given for an EventBridge bus', () => {
    const base = { client: {} as never, tableName: 'Outbox', producer: 'orders-api' };
    const cases: [Record<string, unknown>, string][] = [
      [
        { destinationKind: 'sqs', destinationFifo: 'yes' },
        'Expected `destinationFifo` to be a boolean, got `"yes"`',
      ],
      [
        { destinationKind: 'eventbridge', eventSource: 'orders', destinationFifo: true },
        "Expected `destinationFifo` to be left out unless `destinationKind` is 'sqs' or 'sns' (an EventBridge bus is not FIFO), got `true`",
      ],
    ];
    for (const [options, message] of cases) {
      expect(() => createOutboxWriter({ ...base, ...options } as never)).toThrow(
        expect.objectContaining({ code: 'INVALID_OPTIONS', message }),
      );
    }
    expect(() =>
      createSqsHandler({
        dedupKey: fromBody('orderId'),
        mode: atomic(() => {}),
        store: createMemoryStore(),
        metrics: false,
        environment: {
          [ENV.consumer]: 'orders',
          [ENV.inboxTable]: 'Inbox',
          [OUTBOX_ENV.tableName]: 'OrderEvents',
          [OUTBOX_ENV.destinationFifo]: 'yes',
        },
      }),
    ).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }));
  });
});

describe('event types SQS and SNS would refuse as an attribute value', () => {
  it('refuses a type holding a control character for a queue or topic before the commit, and takes it for a bus', () => {
    for (const kind of ['sqs', 'sns'] as const) {
      expect(() => unitOfWorkFor({ kind }).emit({ type: 'Order\u0001Confirmed', detail: {} })).toThrow(
        expect.objectContaining({
          code: 'VALIDATION',
          message:
            "emit: the event's `type` is the `eo-event-type` message attribute, whose characters SQS and SNS restrict; it has character U+0001 at position 6",
        }),
      );
    }
    // What SQS would answer for that attribute (the conformance layer): refused.
    expect(
      checkSqsSendMessage(
        {
          QueueUrl: 'https://sqs.us-east-1.amazonaws.com/000000000000/shipping',
          MessageBody: '{}',
          MessageAttributes: { 'eo-event-type': { DataType: 'String', StringValue: 'Order\u0001Confirmed' } },
        },
        { fifo: false },
      ),
    ).toMatchObject({ name: 'InvalidMessageContents' });
    // Tabs and characters beyond the Basic Multilingual Plane are SQS text.
    expect(unitOfWorkFor({ kind: 'sqs' }).emit({ type: 'Order\tConfirmé 📦', detail: {} })).toEqual(
      expect.any(String),
    );
    expect(
      unitOfWorkFor({ kind: 'eventbridge', eventSource: 'orders' }).emit({
        type: 'Order\u0001Confirmed',
        detail: {},
      }),
    ).toEqual(expect.any(String));
  });
});
