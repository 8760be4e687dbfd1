/**
 * `createSqsHandler` with real SQS queues on the local endpoint: messages are sent to a queue,
 * received, converted to the records Lambda would deliver, handled, then deleted or left in
 * the queue per the partial batch response, the way Lambda's event source mapping does it.
 * Dead letters are sent directly (`deadLetter: 'direct'`) to a real dead-letter queue and read
 * back with their reason.
 */
import { createHash, randomUUID } from 'node:crypto';
import {
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type Message as SqsMessage,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createSqsDeadLetterSender,
  createSqsHandler,
  type DeadLetterSender,
  fromBody,
  type Message,
  PermanentError,
  type SqsBatchResponse,
  type SqsHandler,
  type SqsHandlerOptions,
  type SqsMessageAttribute,
  type SqsRecord,
  type UnitOfWork,
} from '../../lambda';
import { atomic } from '../../lambda/modes/atomic';
import { uniqueName } from '../support/aws';
import {
  captureLogs,
  createLocalResources,
  injectFaults,
  lambdaContext,
  type OrderEvent,
  type TestQueue as Queue,
  settleBatch,
  THROTTLED,
} from '../support/fixtures';

const local = createLocalResources();
const { aws, sqs } = local;
const inboxTable = uniqueName('eo-queues-inbox');
const ordersTable = uniqueName('eo-queues-orders');
const now = Date.now();
const runId = randomUUID().slice(0, 8);
let sequence = 0;
const id = (label: string) => `${label}-${runId}-${++sequence}`;

const newClient = local.documentClient;

beforeAll(async () => {
  await local.createTable(inboxTable);
  await local.createTable(ordersTable);
});

afterAll(() => local.dispose());

const readItem = (tableName: string, pk: string) => local.readItem(tableName, { pk });

/** A standard queue, or a FIFO one, with a 30-second visibility timeout. */
const createQueue = (prefix: string, fifo = false): Promise<Queue> =>
  local.createQueue(prefix, fifo ? { FifoQueue: 'true' } : {});

/** A received message as Lambda's event source mapping hands it to the function. */
function toSqsRecord(message: SqsMessage, queue: Queue): SqsRecord {
  const messageAttributes: Record<string, SqsMessageAttribute> = {};
  for (const [name, value] of Object.entries(message.MessageAttributes ?? {})) {
    messageAttributes[name] = {
      ...(value.StringValue === undefined ? {} : { stringValue: value.StringValue }),
      ...(value.BinaryValue === undefined
        ? {}
        : { binaryValue: Buffer.from(value.BinaryValue).toString('base64') }),
      stringListValues: [],
      binaryListValues: [],
      dataType: value.DataType!,
    };
  }
  return {
    messageId: message.MessageId!,
    receiptHandle: message.ReceiptHandle!,
    body: message.Body!,
    attributes: { ...message.Attributes },
    messageAttributes,
    md5OfBody: message.MD5OfBody!,
    eventSource: 'aws:sqs',
    eventSourceARN: queue.arn,
    awsRegion: aws.region,
  };
}

/** One poll of up to ten messages, with every system and message attribute. */
async function receive(queue: Queue): Promise<SqsMessage[]> {
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queue.url,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: 1,
      MessageSystemAttributeNames: ['All'],
      MessageAttributeNames: ['All'],
    }),
  );
  return Messages;
}

/**
 * What the event source mapping does with one received batch: invoke the function, delete the
 * messages it did not name, and leave the named ones for redelivery. (Lambda waits for their
 * visibility timeout to end; here it is ended at once, to keep the test short.)
 */
async function invoke(handler: SqsHandler, queue: Queue, messages: SqsMessage[]): Promise<SqsBatchResponse> {
  const records = messages.map((message) => toSqsRecord(message, queue));
  const response = await handler({ Records: records }, lambdaContext());
  await settleBatch(sqs, queue.url, records, response);
  return response;
}

async function queueDepth(queue: Queue): Promise<Record<string, string>> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queue.url,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return Attributes ?? {};
}

function projectOrder(message: Message<OrderEvent>, unitOfWork: UnitOfWork): void {
  const { orderId, status, amount } = message.body;
  if (amount < 0) throw new PermanentError('An order amount cannot be negative');
  unitOfWork.put({ TableName: ordersTable, Item: { pk: `ORDER#${orderId}`, status, amount } });
}

/** The order projector, dead-lettering directly unless `overrides` says otherwise. */
function orderProjector(
  overrides: Partial<Omit<SqsHandlerOptions<OrderEvent>, 'mode' | 'handle'>> & {
    readonly deadLetterSender?: DeadLetterSender;
  },
): SqsHandler {
  return createSqsHandler<OrderEvent>({
    consumer: 'order-projector',
    client: newClient(),
    tableName: inboxTable,
    dedupKey: fromBody((order: OrderEvent) => [order.orderId, order.status]),
    mode: atomic(projectOrder),
    deadLetter: 'direct',
    clock: () => now,
    logLevel: 'silent',
    metrics: false,
    ...overrides,
  });
}

const stringAttribute = (value: string) => ({ DataType: 'String', StringValue: value });

describe('createSqsHandler with real queues', () => {
  it('round-trips a FIFO queue: commits, acknowledges the resend, dead-letters the mismatch with its reason, and redelivers the throttled group until it commits', async () => {
    const source = await createQueue('eo-orders', true);
    const deadLetters = await createQueue('eo-orders-dlq', true);
    const [o1, o2, o3] = [id('o'), id('o'), id('o')];
    const sent = [
      { orderId: o1, status: 'CREATED', amount: 100 },
      { orderId: o1, status: 'PAID', amount: 100 },
      { orderId: o2, status: 'CREATED', amount: 200 },
      // The producer resends after the broker's five-minute window: a new deduplication id.
      { orderId: o2, status: 'CREATED', amount: 200 },
      { orderId: o3, status: 'CREATED', amount: 300 },
      // The same natural key with another amount: a producer bug, never silently dropped.
      { orderId: o3, status: 'CREATED', amount: 301, note: 'second draft' },
    ];
    const messageIds: string[] = [];
    for (const [index, order] of sent.entries()) {
      const { MessageId } = await sqs.send(
        new SendMessageCommand({
          QueueUrl: source.url,
          MessageBody: JSON.stringify(order),
          MessageGroupId: order.orderId,
          MessageDeduplicationId: `send-${index}`,
          MessageAttributes: { 'correlation-id': stringAttribute(`checkout-${index}`) },
        }),
      );
      messageIds.push(MessageId!);
    }
    let throttling = true;
    // One attempt: the SDK's own retries would only back off on the injected throttle first.
    const client = newClient({ maxAttempts: 1 });
    injectFaults(client, (_, body) => (throttling && body.includes(`${o1}:CREATED`) ? THROTTLED : undefined));
    const logs = captureLogs();
    const handler = createSqsHandler<OrderEvent>({
      consumer: 'order-projector',
      client,
      tableName: inboxTable,
      dedupKey: fromBody((order: OrderEvent) => [order.orderId, order.status]),
      // One transaction per message: the throttle injected by body meets o1's group alone (a
      // shared transaction would carry the other groups' first messages too).
      mode: atomic(projectOrder, { commit: 'message' }),
      deadLetter: 'direct',
      deadLetterSender: createSqsDeadLetterSender({ client: sqs, queueUrl: deadLetters.url }),
      clock: () => now,
      logger: logs.logger,
      metrics: false,
    });
    const [m1, m2, , , , m6] = messageIds as [string, string, string, string, string, string];

    const firstBatch = await receive(source);
    const first = await invoke(handler, source, firstBatch);

    expect(firstBatch.map((message) => message.MessageId)).toEqual(messageIds);
    expect(first).toEqual({ batchItemFailures: [{ itemIdentifier: m1 }, { itemIdentifier: m2 }] });
    const logged = logs
      .entries()
      .sort((x, y) => messageIds.indexOf(x.messageId as string) - messageIds.indexOf(y.messageId as string));
    expect(
      logged.map(({ messageId, outcome, code, deadLetter }) => ({ messageId, outcome, code, deadLetter })),
    ).toEqual([
      { messageId: m1, outcome: 'retry', code: 'THROTTLED', deadLetter: undefined },
      { messageId: m2, outcome: 'retry', code: 'GROUP_BLOCKED', deadLetter: undefined },
      { messageId: messageIds[3], outcome: 'duplicate', code: undefined, deadLetter: undefined },
      { messageId: m6, outcome: 'mismatch', code: 'PAYLOAD_MISMATCH', deadLetter: 'sent' },
    ]);

    throttling = false;
    const secondBatch = await receive(source);
    const second = await invoke(handler, source, secondBatch);

    expect(
      secondBatch.map(({ MessageId, Attributes }) => [MessageId, Attributes?.ApproximateReceiveCount]),
    ).toEqual([
      [m1, '2'],
      [m2, '2'],
    ]);
    expect(second).toEqual({ batchItemFailures: [] });
    expect(await receive(source)).toEqual([]);
    expect(await queueDepth(source)).toEqual({
      ApproximateNumberOfMessages: '0',
      ApproximateNumberOfMessagesNotVisible: '0',
    });
    expect(await readItem(ordersTable, `ORDER#${o1}`)).toEqual({
      pk: `ORDER#${o1}`,
      status: 'PAID',
      amount: 100,
    });
    expect(await readItem(ordersTable, `ORDER#${o2}`)).toEqual({
      pk: `ORDER#${o2}`,
      status: 'CREATED',
      amount: 200,
    });
    expect(await readItem(ordersTable, `ORDER#${o3}`)).toEqual({
      pk: `ORDER#${o3}`,
      status: 'CREATED',
      amount: 300,
    });

    const deadLettered = await receive(deadLetters);
    expect(deadLettered).toHaveLength(1);
    expect(deadLettered[0]).toMatchObject({
      Body: JSON.stringify(sent[5]),
      Attributes: expect.objectContaining({ MessageGroupId: o3, MessageDeduplicationId: m6 }),
      MessageAttributes: {
        'correlation-id': stringAttribute('checkout-5'),
        'eo-reason': stringAttribute(
          `The dedup key was already used with a different payload (stored fingerprint ${fingerprintOfFlat(sent[4]!)}, this message ${fingerprintOfFlat(sent[5]!)})`,
        ),
        'eo-code': stringAttribute('PAYLOAD_MISMATCH'),
        'eo-consumer': stringAttribute('order-projector'),
        'eo-source-message-id': stringAttribute(m6),
        'eo-dedup-key': stringAttribute(`${o3}:CREATED`),
      },
    });
  });
});

/** Sends `bodies` to `queue` one by one and receives them back as one batch, in send order. */
async function sendAndReceive(
  queue: Queue,
  ...messages: { readonly body: string; readonly attributes?: Record<string, string> }[]
): Promise<SqsMessage[]> {
  const ids: string[] = [];
  for (const { body, attributes = {} } of messages) {
    const { MessageId } = await sqs.send(
      new SendMessageCommand({
        QueueUrl: queue.url,
        MessageBody: body,
        MessageAttributes: Object.fromEntries(
          Object.entries(attributes).map(([name, value]) => [name, stringAttribute(value)]),
        ),
      }),
    );
    ids.push(MessageId!);
  }
  const received = await receive(queue);
  expect(received.map((message) => message.MessageId).sort()).toEqual([...ids].sort());
  return ids.map((messageId) => received.find((message) => message.MessageId === messageId)!);
}

/** SHA-256 of a flat object's canonical JSON (keys sorted): the default fingerprint. */
function fingerprintOfFlat(value: Record<string, unknown>): string {
  return createHash('sha256')
    .update(JSON.stringify(value, Object.keys(value).sort()))
    .digest('hex');
}

describe("createSqsHandler with deadLetter: 'direct'", () => {
  it('sends a reused key with a different payload to the dead-letter queue with its reason and code, and logs the key and reason but not the body', async () => {
    const source = await createQueue('eo-orders');
    const deadLetters = await createQueue('eo-orders-dlq');
    const logs = captureLogs();
    const handler = orderProjector({
      deadLetterSender: createSqsDeadLetterSender({ client: sqs, queueUrl: deadLetters.url }),
      logger: logs.logger,
      logLevel: 'info',
    });
    const order = { orderId: id('o'), status: 'PAID', amount: 1250 };
    const changed = { ...order, amount: 1999, note: 'card 4111-1111-1111-1111' };
    await invoke(handler, source, await sendAndReceive(source, { body: JSON.stringify(order) }));
    const [reused] = await sendAndReceive(source, {
      body: JSON.stringify(changed),
      attributes: { 'correlation-id': 'checkout-42' },
    });

    const response = await invoke(handler, source, [reused!]);

    const reason = `The dedup key was already used with a different payload (stored fingerprint ${fingerprintOfFlat(order)}, this message ${fingerprintOfFlat(changed)})`;
    expect(response).toEqual({ batchItemFailures: [] });
    expect(logs.entries()).toEqual([
      {
        level: 'error',
        message: 'Dedup key reused with a different payload',
        consumer: 'order-projector',
        requestId: expect.any(String),
        scopedKey: `order-projector#${order.orderId}:PAID`,
        messageId: reused!.MessageId,
        correlationId: 'checkout-42',
        outcome: 'mismatch',
        code: 'PAYLOAD_MISMATCH',
        reason,
        deadLetter: 'sent',
      },
    ]);
    expect(
      logs.textWithout([
        reused!.MessageId,
        order.orderId,
        fingerprintOfFlat(order),
        fingerprintOfFlat(changed),
      ]),
    ).not.toMatch(/4111|1999/);
    const deadLettered = await receive(deadLetters);
    expect(deadLettered.map(({ Body, MessageAttributes }) => ({ Body, MessageAttributes }))).toEqual([
      {
        Body: JSON.stringify(changed),
        MessageAttributes: {
          'correlation-id': stringAttribute('checkout-42'),
          'eo-reason': stringAttribute(reason),
          'eo-code': stringAttribute('PAYLOAD_MISMATCH'),
          'eo-consumer': stringAttribute('order-projector'),
          'eo-source-message-id': stringAttribute(reused!.MessageId!),
          'eo-dedup-key': stringAttribute(`${order.orderId}:PAID`),
        },
      },
    ]);
    expect(await queueDepth(source)).toEqual({
      ApproximateNumberOfMessages: '0',
      ApproximateNumberOfMessagesNotVisible: '0',
    });
    expect(await readItem(ordersTable, `ORDER#${order.orderId}`)).toEqual({
      pk: `ORDER#${order.orderId}`,
      status: 'PAID',
      amount: 1250,
    });
  });

  it('sends a PermanentError, a malformed body and a missing key to the dead-letter queue, each with its code and reason', async () => {
    const source = await createQueue('eo-orders');
    const deadLetters = await createQueue('eo-orders-dlq');
    const handler = orderProjector({
      deadLetterSender: createSqsDeadLetterSender({ client: sqs, queueUrl: deadLetters.url }),
    });
    const negative = { orderId: id('o'), status: 'REFUNDED', amount: -5 };
    const messages = await sendAndReceive(
      source,
      { body: JSON.stringify(negative) },
      { body: '{"orderId": "o-1", "status": ' },
      { body: JSON.stringify({ status: 'PAID', amount: 1 }) },
    );

    const response = await invoke(handler, source, messages);

    expect(response).toEqual({ batchItemFailures: [] });
    const deadLettered = await receive(deadLetters);
    const bySource = (message: SqsMessage) =>
      message.MessageAttributes?.['eo-source-message-id']?.StringValue;
    expect(
      messages.map((sent) => {
        const letter = deadLettered.find((candidate) => bySource(candidate) === sent.MessageId);
        const attributes = letter?.MessageAttributes ?? {};
        return {
          body: letter?.Body,
          code: attributes['eo-code']?.StringValue,
          reason: attributes['eo-reason']?.StringValue,
          dedupKey: attributes['eo-dedup-key']?.StringValue,
        };
      }),
    ).toEqual([
      {
        body: JSON.stringify(negative),
        code: 'PERMANENT',
        reason: 'An order amount cannot be negative',
        dedupKey: `${negative.orderId}:REFUNDED`,
      },
      {
        body: '{"orderId": "o-1", "status": ',
        code: 'MALFORMED_BODY',
        reason: 'The body is not valid JSON',
        dedupKey: undefined,
      },
      {
        body: JSON.stringify({ status: 'PAID', amount: 1 }),
        code: 'MISSING_KEY',
        reason: 'Part 0 of the dedup key is missing or empty',
        dedupKey: undefined,
      },
    ]);
    expect(deadLettered).toHaveLength(3);
    expect(await readItem(inboxTable, `order-projector#${negative.orderId}:REFUNDED`)).toBeUndefined();
  });

  it('leaves the message in its queue as a batch item failure when the dead-letter queue cannot be reached', async () => {
    const source = await createQueue('eo-orders');
    const gone = await createQueue('eo-orders-dlq');
    await sqs.send(new DeleteQueueCommand({ QueueUrl: gone.url }));
    const logs = captureLogs();
    const handler = orderProjector({
      deadLetterSender: createSqsDeadLetterSender({ client: sqs, queueUrl: gone.url }),
      logger: logs.logger,
      logLevel: 'info',
    });
    const [message] = await sendAndReceive(source, { body: JSON.stringify({ status: 'PAID', amount: 1 }) });

    const response = await invoke(handler, source, [message!]);

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: message!.MessageId }] });
    expect(logs.entries()).toEqual([
      expect.objectContaining({
        messageId: message!.MessageId,
        outcome: 'permanent',
        code: 'MISSING_KEY',
        deadLetter: 'send-failed',
        deadLetterCode: 'DEAD_LETTER_FAILED',
        deadLetterErrorName: 'EffectivelyOnceError',
      }),
    ]);
    const [redelivery] = await receive(source);
    expect(redelivery).toMatchObject({
      MessageId: message!.MessageId,
      Attributes: expect.objectContaining({ ApproximateReceiveCount: '2' }),
    });
  });
});

describe("createSqsHandler with deadLetter: 'redrive'", () => {
  it("reports the mismatch until the queue's redrive policy moves it to the dead-letter queue; the reason is in the log line", async () => {
    const deadLetters = await createQueue('eo-orders-dlq');
    const source = await local.createQueue('eo-orders', {
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: deadLetters.arn, maxReceiveCount: 1 }),
    });
    const logs = captureLogs();
    const handler = orderProjector({ deadLetter: 'redrive', logger: logs.logger, logLevel: 'info' });
    const order = { orderId: id('o'), status: 'PAID', amount: 70 };
    const changed = { ...order, amount: 71 };
    await invoke(handler, source, await sendAndReceive(source, { body: JSON.stringify(order) }));
    const [reused] = await sendAndReceive(source, { body: JSON.stringify(changed) });

    const response = await invoke(handler, source, [reused!]);

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: reused!.MessageId }] });
    expect(logs.entries()).toEqual([
      expect.objectContaining({
        messageId: reused!.MessageId,
        scopedKey: `order-projector#${order.orderId}:PAID`,
        outcome: 'mismatch',
        code: 'PAYLOAD_MISMATCH',
        reason: `The dedup key was already used with a different payload (stored fingerprint ${fingerprintOfFlat(order)}, this message ${fingerprintOfFlat(changed)})`,
        deadLetter: 'redrive',
      }),
    ]);
    // The next receive finds the receive count exhausted and moves the message.
    expect(await receive(source)).toEqual([]);
    const deadLettered = await receive(deadLetters);
    expect(deadLettered.map(({ MessageId, Body }) => ({ MessageId, Body }))).toEqual([
      { MessageId: reused!.MessageId, Body: JSON.stringify(changed) },
    ]);
  });
});
