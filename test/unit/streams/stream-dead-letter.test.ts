/**
 * Stream dead letters against what SQS refuses: every record a stream may carry (empty, binary,
 * text with characters SQS refuses, the largest Kinesis record, a DynamoDB change with two large
 * images) is dead-lettered through `createSqsDeadLetterSender` over the test conformance layer,
 * which refuses what AWS documents it refuses, and the shard moves on in the same invocation.
 */
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { SendMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { PermanentError } from '../../../lambda/core/errors';
import { sha256Hex } from '../../../lambda/core/fingerprint';
import type { Message } from '../../../lambda/core/message';
import { createSqsDeadLetterSender } from '../../../lambda/dead-letter/sqs-dead-letter-sender';
import { marker } from '../../../lambda/modes/marker';
import {
  createDynamoDbStreamHandler,
  type DynamoDbChange,
} from '../../../lambda/streams/dynamodb-stream-handler';
import { fromData, fromKeysAndVersion } from '../../../lambda/streams/key-sources';
import { createKinesisHandler } from '../../../lambda/streams/kinesis-handler';
import {
  STREAM_DEAD_LETTER_FORMAT,
  streamDeadLetterMessage,
} from '../../../lambda/streams/stream-dead-letter';
import type { KinesisStreamRecord } from '../../../lambda/streams/stream-event';
import { createConformingSqsClient, sqsMessageBytes } from '../../support/aws-limits/sqs';
import { lambdaContext, T0 } from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';
import {
  dynamoDbStreamRecord,
  KINESIS_STREAM_ARN,
  kinesisRecord,
  recoveredData,
  streamDeadLetterOf,
} from '../../support/stream-fixtures';

const QUEUE_URL = 'https://sqs.us-east-1.amazonaws.com/000000000000/orders-dlq';
const FIFO_QUEUE_URL = 'https://sqs.us-east-1.amazonaws.com/000000000000/orders-dlq.fifo';

/** A dead-letter queue behind the conformance layer: what reaches it was accepted as AWS would. */
function deadLetterQueue(queueUrl = QUEUE_URL, maximumMessageSize?: number) {
  const accepted: SendMessageCommand['input'][] = [];
  const inner = {
    send: async (command: SendMessageCommand) => {
      accepted.push(command.input);
      return { MessageId: `dl-${accepted.length}` };
    },
  };
  const client = createConformingSqsClient(inner, {
    queues: maximumMessageSize === undefined ? {} : { [queueUrl]: { maximumMessageSize } },
  });
  const sender = createSqsDeadLetterSender({ client: client as never, queueUrl });
  return { accepted, sender };
}

interface OrderEvent {
  readonly eventId: string;
  readonly fail?: string;
}

/** The options every handler here shares: an in-memory store, a fixed clock, no logs or metrics. */
function sharedOptions(queue: ReturnType<typeof deadLetterQueue>, deadLetterMaxMessageBytes?: number) {
  return {
    consumer: 'orders',
    store: createMemoryStore(),
    clock: () => T0,
    environment: {},
    deadLetterSender: queue.sender,
    ...(deadLetterMaxMessageBytes === undefined ? {} : { deadLetterMaxMessageBytes }),
    logLevel: 'silent' as const,
    metrics: false as const,
  };
}

/** A Kinesis handler keyed by `eventId` that dead-letters to `queue`; `handled` lists what ran. */
function kinesisSetup(queue: ReturnType<typeof deadLetterQueue>, deadLetterMaxMessageBytes?: number) {
  const handled: string[] = [];
  const handler = createKinesisHandler<OrderEvent>({
    ...sharedOptions(queue, deadLetterMaxMessageBytes),
    dedupKey: fromData('eventId'),
    mode: marker((message: Message<OrderEvent, KinesisStreamRecord>) => {
      if (message.body.fail !== undefined) throw new PermanentError(message.body.fail);
      handled.push(message.body.eventId);
    }),
  });
  const run = (...records: KinesisStreamRecord[]) => handler({ Records: records }, lambdaContext());
  return { run, handled };
}

/** The records around a bad one: `e-1` before it, `e-3` after it, on one shard. */
const around = (bad: KinesisStreamRecord): KinesisStreamRecord[] => [
  kinesisRecord('101', { eventId: 'e-1' }),
  bad,
  kinesisRecord('103', { eventId: 'e-3' }),
];

const bytesOf = (record: KinesisStreamRecord) => Buffer.from(record.kinesis.data, 'base64');

const sha256OfBytes = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');

describe('stream dead letters: every record a Kinesis stream may carry', () => {
  const cases: [string, Uint8Array, 'utf-8' | 'base64'][] = [
    ['an empty record', new Uint8Array(0), 'utf-8'],
    [
      'gzip from a CloudWatch Logs subscription',
      gzipSync(JSON.stringify({ logEvents: [{ id: '1' }] })),
      'base64',
    ],
    ['bytes that are not UTF-8', Uint8Array.from([0xff, 0xfe, 0x00, 0x80, 0xc3]), 'base64'],
    [
      'text holding characters SQS refuses (NUL, U+FFFF, U+FFFE)',
      Buffer.from('a\u0000b\uffffc\ufffe', 'utf8'),
      'utf-8',
    ],
  ];

  for (const [name, data, encoding] of cases) {
    it(`dead-letters ${name} byte for byte as SQS accepts it, and processes the next record of the shard`, async () => {
      const queue = deadLetterQueue();
      const { run, handled } = kinesisSetup(queue);
      const bad = kinesisRecord('102', undefined, { rawBytes: data });

      const response = await run(...around(bad));

      expect(response).toEqual({ batchItemFailures: [] });
      expect(handled).toEqual(['e-1', 'e-3']);
      expect(queue.accepted).toHaveLength(1);
      const envelope = JSON.parse(queue.accepted[0]!.MessageBody!);
      expect(envelope).toMatchObject({
        format: STREAM_DEAD_LETTER_FORMAT,
        source: {
          eventSourceArn: KINESIS_STREAM_ARN,
          shardId: 'shardId-000000000000',
          sequenceNumber: '102',
          eventId: 'shardId-000000000000:102',
        },
        code: 'MALFORMED_BODY',
        data: { encoding, bytes: data.byteLength },
      });
      expect(recoveredData(envelope)).toEqual(Buffer.from(data));
      expect(envelope.data.sha256).toBe(sha256OfBytes(data));
      expect(queue.accepted[0]!.MessageAttributes?.['eo-code']?.StringValue).toBe('MALFORMED_BODY');
    });
  }

  it('marks the largest Kinesis record (1 MiB) truncated, with its size, SHA-256 and coordinates, within the queue limit', async () => {
    const data = Buffer.alloc(1_048_576, 0xab);
    for (const limit of [undefined, 1_048_576]) {
      const queue = deadLetterQueue(QUEUE_URL, limit);
      const { run, handled } = kinesisSetup(queue, limit);

      const response = await run(...around(kinesisRecord('102', undefined, { rawBytes: data })));

      expect(response).toEqual({ batchItemFailures: [] });
      expect(handled).toEqual(['e-1', 'e-3']);
      const envelope = JSON.parse(queue.accepted[0]!.MessageBody!);
      expect(envelope.data).toEqual({
        truncated: true,
        bytes: 1_048_576,
        sha256: sha256OfBytes(data),
      });
      expect(envelope.source).toMatchObject({ sequenceNumber: '102', shardId: 'shardId-000000000000' });
      expect(sqsMessageBytes(queue.accepted[0]!)).toBeLessThanOrEqual(limit ?? 262_144);
    }
  });

  it('sends a dead letter whole at exactly the queue limit and truncated one byte over it', async () => {
    const record = kinesisRecord('102', undefined, { rawData: 'x'.repeat(2000) });
    const letter = { reason: 'The body is not valid JSON', code: 'MALFORMED_BODY', consumer: 'orders' };
    const describe = {
      coordinates: { sequenceNumber: '102', shardId: 'shardId-000000000000' },
      data: bytesOf(record),
    };
    const whole = streamDeadLetterMessage(describe, letter, 'shardId-000000000000:102', 1_048_576);
    const queue = deadLetterQueue();
    await queue.sender.send(whole);
    const size = sqsMessageBytes(queue.accepted[0]!);

    const atLimit = streamDeadLetterMessage(describe, letter, 'shardId-000000000000:102', size);
    const overLimit = streamDeadLetterMessage(describe, letter, 'shardId-000000000000:102', size - 1);

    expect(streamDeadLetterOf(atLimit).data).toMatchObject({ encoding: 'utf-8', bytes: 2000 });
    expect(streamDeadLetterOf(overLimit).data).toEqual({
      truncated: true,
      bytes: 2000,
      sha256: sha256Hex('x'.repeat(2000)),
    });
  });

  it('cuts a reason of 300 KB so the truncated dead letter still fits the queue, and the shard moves on', async () => {
    const queue = deadLetterQueue(QUEUE_URL, 262_144);
    const { run, handled } = kinesisSetup(queue);

    const response = await run(
      ...around(kinesisRecord('102', { eventId: 'e-2', fail: 'r'.repeat(300_000) })),
    );

    expect(response).toEqual({ batchItemFailures: [] });
    expect(handled).toEqual(['e-1', 'e-3']);
    const envelope = JSON.parse(queue.accepted[0]!.MessageBody!);
    expect(envelope.data).toMatchObject({ truncated: true });
    expect(Array.from(envelope.reason as string)).toHaveLength(1024);
    expect(sqsMessageBytes(queue.accepted[0]!)).toBeLessThanOrEqual(262_144);
  });

  it('fits the smallest queue SQS allows (1,024 bytes) with the coordinates that find the record again', async () => {
    const queue = deadLetterQueue(QUEUE_URL, 1024);
    const { run, handled } = kinesisSetup(queue, 1024);
    const data = Buffer.from(JSON.stringify({ eventId: 'e-2', fail: 'cannot apply' }));

    const response = await run(
      ...around(
        kinesisRecord('49659000000000000000000000000000000000000000000000000102', undefined, {
          rawBytes: data,
          partitionKey: 'p'.repeat(256),
        }),
      ),
    );

    expect(response).toEqual({ batchItemFailures: [] });
    expect(handled).toEqual(['e-1', 'e-3']);
    const envelope = JSON.parse(queue.accepted[0]!.MessageBody!);
    expect(envelope).toMatchObject({
      source: {
        eventSourceArn: KINESIS_STREAM_ARN,
        shardId: 'shardId-000000000000',
        sequenceNumber: '49659000000000000000000000000000000000000000000000000102',
      },
      code: 'PERMANENT',
      data: { truncated: true, bytes: data.byteLength, sha256: sha256OfBytes(data) },
    });
    expect(sqsMessageBytes(queue.accepted[0]!)).toBeLessThanOrEqual(1024);
  });

  it('escapes a reason and a partition key holding characters SQS refuses', async () => {
    const queue = deadLetterQueue();
    const { run } = kinesisSetup(queue);

    const response = await run(
      kinesisRecord('102', { eventId: 'e-2', fail: 'bad \uffff value' }, { partitionKey: 'p\uffffk' }),
    );

    expect(response).toEqual({ batchItemFailures: [] });
    const envelope = JSON.parse(queue.accepted[0]!.MessageBody!);
    expect(envelope.reason).toContain('bad \uffff value');
    expect(envelope.source.partitionKey).toBe('p\uffffk');
    expect(queue.accepted[0]!.MessageAttributes?.['eo-partition-key']?.StringValue).toBe('p?k');
  });
});

describe('stream dead letters: DynamoDB Streams', () => {
  /** An item image with one string attribute of `size` characters. */
  const image = (version: number, size: number) => ({
    pk: { S: 'order-1' },
    version: { N: String(version) },
    notes: { S: 'n'.repeat(size) },
  });

  function dynamoDbSetup(queue: ReturnType<typeof deadLetterQueue>, deadLetterMaxMessageBytes?: number) {
    const handled: string[] = [];
    const handler = createDynamoDbStreamHandler<DynamoDbChange>({
      ...sharedOptions(queue, deadLetterMaxMessageBytes),
      dedupKey: fromKeysAndVersion('version'),
      mode: marker((message) => {
        if (message.body.newImage?.notes === 'fail') throw new PermanentError('cannot apply');
        handled.push(message.dedupKey);
      }),
    });
    return { handler, handled };
  }

  it('dead-letters a change with two large images truncated with its keys, or whole where the queue allows, and moves on', async () => {
    // Two images of about 390 KB each: the change is larger than 256 KiB, smaller than 1 MiB.
    const large = dynamoDbStreamRecord('2', {
      keys: { pk: { S: 'order-1' } },
      oldImage: image(1, 390_000),
      newImage: { ...image(2, 0), notes: { S: 'fail' }, padding: { S: 'p'.repeat(390_000) } },
    });
    const next = dynamoDbStreamRecord('3', { keys: { pk: { S: 'order-2' } }, newImage: image(1, 10) });

    const small = deadLetterQueue(QUEUE_URL, 262_144);
    const first = dynamoDbSetup(small);
    expect(await first.handler({ Records: [large, next] }, lambdaContext())).toEqual({
      batchItemFailures: [],
    });
    expect(first.handled).toEqual(['order-2:MODIFY:1']);
    const truncated = JSON.parse(small.accepted[0]!.MessageBody!);
    expect(truncated.data).toMatchObject({ truncated: true });
    expect(truncated.data.sha256).toBe(sha256Hex(JSON.stringify(large.dynamodb)));
    expect(truncated.source).toMatchObject({
      sequenceNumber: '2',
      eventName: 'MODIFY',
      keys: { pk: { S: 'order-1' } },
    });

    const big = deadLetterQueue(QUEUE_URL, 1_048_576);
    const second = dynamoDbSetup(big, 1_048_576);
    expect(await second.handler({ Records: [large, next] }, lambdaContext())).toEqual({
      batchItemFailures: [],
    });
    const whole = JSON.parse(big.accepted[0]!.MessageBody!);
    expect(JSON.parse(recoveredData(whole)!.toString('utf8'))).toEqual(large.dynamodb);
  });

  it('sends to a FIFO dead-letter queue with valid group and deduplication ids when the stream ARN is longer than an id may be', async () => {
    const queue = deadLetterQueue(FIFO_QUEUE_URL);
    const { handler } = dynamoDbSetup(queue);
    const longArn = `arn:aws:dynamodb:us-east-1:000000000000:table/${'t'.repeat(200)}/stream/2026-01-01T00:00:00.000`;
    const { eventID: _id, ...withoutId } = dynamoDbStreamRecord('7', {
      keys: { pk: { S: 'order-1' } },
      newImage: { ...image(1, 0), notes: { S: 'fail' } },
    });

    const response = await handler({ Records: [{ ...withoutId, eventSourceARN: longArn }] }, lambdaContext());

    expect(response).toEqual({ batchItemFailures: [] });
    expect(queue.accepted).toHaveLength(1);
    expect(queue.accepted[0]!.MessageGroupId).toBe('orders');
    expect(queue.accepted[0]!.MessageDeduplicationId!.length).toBeLessThanOrEqual(128);
  });
});
