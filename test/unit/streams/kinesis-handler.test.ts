/**
 * The Kinesis entry point over the memory store: checkpoint semantics per shard (the first record
 * to retry is reported by its sequence number and the shard's later records do not run), replays
 * and producer duplicates acknowledged by the inbox, permanent failures dead-lettered with the
 * reason so the shard moves on, and the start-up checks of a stream handler.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { STREAM_RECORD_ATTRIBUTES } from '../../../lambda/core/contract';
import { PermanentError } from '../../../lambda/core/errors';
import { sha256Hex } from '../../../lambda/core/fingerprint';
import type { Message } from '../../../lambda/core/message';
import { atomic } from '../../../lambda/modes/atomic';
import { entity } from '../../../lambda/modes/entity';
import { type MarkerHandler, marker } from '../../../lambda/modes/marker';
import { twoPhase } from '../../../lambda/modes/two-phase';
import { fromData } from '../../../lambda/streams/key-sources';
import { createKinesisHandler, type KinesisHandlerOptions } from '../../../lambda/streams/kinesis-handler';
import { STREAM_DEAD_LETTER_FORMAT } from '../../../lambda/streams/stream-dead-letter';
import type { KinesisStreamRecord } from '../../../lambda/streams/stream-event';
import { captureLogger, check, lambdaContext, manualClock, T0 } from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';
import {
  captureDeadLetters,
  KINESIS_STREAM_ARN,
  kinesisRecord,
  recoveredData,
  streamDeadLetterOf,
} from '../../support/stream-fixtures';

interface OrderEvent {
  readonly eventId: string;
  readonly orderId?: string;
  readonly status?: string;
  /** `retry` throws a transient error, `permanent` a `PermanentError`. */
  readonly fail?: 'retry' | 'permanent';
}

/** A marker-mode Kinesis handler keyed by `eventId`; `handled` lists the event ids whose effect ran. */
function setup({
  handle,
  ...options
}: Partial<KinesisHandlerOptions<OrderEvent>> & {
  handle?: MarkerHandler<OrderEvent, KinesisStreamRecord>;
} = {}) {
  const logger = captureLogger();
  const deadLetters = captureDeadLetters();
  const store = createMemoryStore();
  const handled: string[] = [];
  const handler = createKinesisHandler<OrderEvent>({
    consumer: 'orders',
    dedupKey: fromData('eventId'),
    mode: marker(
      handle ??
        ((message: Message<OrderEvent>) => {
          if (message.body.fail === 'retry') throw new Error('downstream unavailable');
          if (message.body.fail === 'permanent') throw new PermanentError('order is cancelled');
          handled.push(message.body.eventId);
        }),
    ),
    store,
    clock: () => T0,
    environment: {},
    deadLetterSender: deadLetters,
    logger,
    metrics: false,
    ...options,
  } as KinesisHandlerOptions<OrderEvent>);
  const run = (...records: KinesisStreamRecord[]) => handler({ Records: records }, lambdaContext());
  return { handler, run, handled, deadLetters, logger, store };
}

const checkpoint = (...sequenceNumbers: string[]) => ({
  batchItemFailures: sequenceNumbers.map((itemIdentifier) => ({ itemIdentifier })),
});

describe('createKinesisHandler: checkpoints', () => {
  it('processes every record of a shard in order and reports no failure', async () => {
    const { run, handled } = setup();

    const response = await run(
      kinesisRecord('101', { eventId: 'e-1' }),
      kinesisRecord('102', { eventId: 'e-2' }),
      kinesisRecord('103', { eventId: 'e-3' }),
    );

    expect(response).toEqual(checkpoint());
    expect(handled).toEqual(['e-1', 'e-2', 'e-3']);
  });

  it('reports the sequence number of the first record to retry and does not run the later records of its shard', async () => {
    const { run, handled, logger } = setup();

    const response = await run(
      kinesisRecord('101', { eventId: 'e-1' }),
      kinesisRecord('102', { eventId: 'e-2', fail: 'retry' }),
      kinesisRecord('103', { eventId: 'e-3' }),
      kinesisRecord('104', { eventId: 'e-4' }),
    );

    expect(response).toEqual(checkpoint('102'));
    expect(handled).toEqual(['e-1']);
    expect(logger.entries.map(({ messageId, outcome, code }) => ({ messageId, outcome, code }))).toEqual([
      { messageId: 'shardId-000000000000:102', outcome: 'retry', code: 'HANDLER_FAILED' },
      { messageId: 'shardId-000000000000:103', outcome: 'retry', code: 'GROUP_BLOCKED' },
      { messageId: 'shardId-000000000000:104', outcome: 'retry', code: 'GROUP_BLOCKED' },
    ]);
  });

  it('keeps running the other shards of a batch and reports the first failure of each shard', async () => {
    const { run, handled } = setup();
    const a = { shardId: 'shardId-000000000000' };
    const b = { shardId: 'shardId-000000000001' };

    const response = await run(
      kinesisRecord('201', { eventId: 'a-1' }, a),
      kinesisRecord('301', { eventId: 'b-1', fail: 'retry' }, b),
      kinesisRecord('202', { eventId: 'a-2', fail: 'retry' }, a),
      kinesisRecord('302', { eventId: 'b-2' }, b),
      kinesisRecord('203', { eventId: 'a-3' }, a),
      kinesisRecord('401', { eventId: 'c-1' }, { shardId: 'shardId-000000000002' }),
    );

    expect(response).toEqual(checkpoint('301', '202'));
    expect(handled.sort()).toEqual(['a-1', 'c-1']);
  });

  it('acknowledges the records processed before the checkpoint as duplicates when the shard is replayed from it', async () => {
    let downstreamUp = false;
    const { run, handled, logger } = setup({
      logLevel: 'debug',
      handle: (message) => {
        if (message.body.eventId === 'e-2' && !downstreamUp) throw new Error('downstream unavailable');
        handled.push(message.body.eventId);
      },
    });
    const records = [
      kinesisRecord('101', { eventId: 'e-1' }),
      kinesisRecord('102', { eventId: 'e-2' }),
      kinesisRecord('103', { eventId: 'e-3' }),
    ];
    expect(await run(...records)).toEqual(checkpoint('102'));

    downstreamUp = true;
    logger.entries.length = 0;
    // BisectBatchOnFunctionError or a restarted iterator can re-read from before the checkpoint.
    const replay = await run(...records);

    expect(replay).toEqual(checkpoint());
    expect(handled).toEqual(['e-1', 'e-2', 'e-3']);
    expect(logger.entries.map(({ messageId, outcome }) => ({ messageId, outcome }))).toEqual([
      { messageId: 'shardId-000000000000:101', outcome: 'duplicate' },
      { messageId: 'shardId-000000000000:102', outcome: 'processed' },
      { messageId: 'shardId-000000000000:103', outcome: 'processed' },
    ]);
  });

  it("acknowledges a producer's second write of an event (a new sequence number) as a duplicate", async () => {
    const { run, handled } = setup();

    const response = await run(
      kinesisRecord('101', { eventId: 'e-1', orderId: 'o-1' }),
      kinesisRecord('107', { eventId: 'e-1', orderId: 'o-1' }),
    );

    expect(response).toEqual(checkpoint());
    expect(handled).toEqual(['e-1']);
  });
});

describe('createKinesisHandler: permanent failures', () => {
  it('sends a different payload under a known key to the dead-letter queue with the reason and moves the shard on', async () => {
    const { run, handled, deadLetters } = setup();

    const response = await run(
      kinesisRecord('101', { eventId: 'e-1', status: 'PAID' }),
      kinesisRecord('102', { eventId: 'e-1', status: 'REFUNDED' }, { partitionKey: 'o-1' }),
      kinesisRecord('103', { eventId: 'e-2' }),
    );

    expect(response).toEqual(checkpoint());
    expect(handled).toEqual(['e-1', 'e-2']);
    const data = '{"eventId":"e-1","status":"REFUNDED"}';
    expect(deadLetters.sent).toEqual([
      {
        body: expect.any(String),
        reason: expect.stringContaining('different payload'),
        code: 'PAYLOAD_MISMATCH',
        consumer: 'orders',
        sourceMessageId: 'shardId-000000000000:102',
        dedupKey: 'e-1',
        attributes: {
          [STREAM_RECORD_ATTRIBUTES.eventSourceArn]: { stringValue: KINESIS_STREAM_ARN, dataType: 'String' },
          [STREAM_RECORD_ATTRIBUTES.shardId]: { stringValue: 'shardId-000000000000', dataType: 'String' },
          [STREAM_RECORD_ATTRIBUTES.sequenceNumber]: { stringValue: '102', dataType: 'String' },
          [STREAM_RECORD_ATTRIBUTES.partitionKey]: { stringValue: 'o-1', dataType: 'String' },
        },
      },
    ]);
    expect(streamDeadLetterOf(deadLetters.sent[0]!)).toEqual({
      format: STREAM_DEAD_LETTER_FORMAT,
      source: {
        eventSource: 'aws:kinesis',
        eventSourceArn: KINESIS_STREAM_ARN,
        shardId: 'shardId-000000000000',
        sequenceNumber: '102',
        eventId: 'shardId-000000000000:102',
        partitionKey: 'o-1',
        arrivalTime: 1767225600.5,
      },
      reason: deadLetters.sent[0]!.reason,
      code: 'PAYLOAD_MISMATCH',
      data: { encoding: 'utf-8', value: data, bytes: data.length, sha256: sha256Hex(data) },
    });
  });

  it('dead-letters data that is not JSON, and a record without the key, as permanent failures', async () => {
    const { run, deadLetters } = setup();

    const response = await run(
      kinesisRecord('101', undefined, { rawData: 'not json' }),
      kinesisRecord('102', { orderId: 'o-1' }),
    );

    expect(response).toEqual(checkpoint());
    expect(
      deadLetters.sent.map((message) => ({
        data: recoveredData(streamDeadLetterOf(message))?.toString('utf8'),
        code: message.code,
        sourceMessageId: message.sourceMessageId,
      })),
    ).toEqual([
      { data: 'not json', code: 'MALFORMED_BODY', sourceMessageId: 'shardId-000000000000:101' },
      { data: '{"orderId":"o-1"}', code: 'MISSING_KEY', sourceMessageId: 'shardId-000000000000:102' },
    ]);
  });

  it('checkpoints at a permanent failure whose dead-letter send fails, so it is retried and nothing is lost', async () => {
    const { run, handled, deadLetters, logger } = setup();
    deadLetters.fail = true;

    const response = await run(
      kinesisRecord('101', { eventId: 'e-1' }),
      kinesisRecord('102', { eventId: 'e-2', fail: 'permanent' }),
      kinesisRecord('103', { eventId: 'e-3' }),
    );

    expect(response).toEqual(checkpoint('102'));
    expect(handled).toEqual(['e-1']);
    expect(logger.entries[0]).toMatchObject({
      messageId: 'shardId-000000000000:102',
      outcome: 'permanent',
      deadLetter: 'send-failed',
      deadLetterCode: 'DEAD_LETTER_FAILED',
    });
  });

  it('sends a dead letter again when the first send was applied but its answer lost, so at worst it is sent twice, never lost', async () => {
    const { run, deadLetters } = setup();
    let answerLost = true;
    const send = deadLetters.send;
    deadLetters.send = async (message) => {
      await send(message);
      if (answerLost) {
        answerLost = false;
        throw new Error('socket hang up');
      }
    };
    const records = [
      kinesisRecord('101', { eventId: 'e-1', fail: 'permanent' }),
      kinesisRecord('102', { eventId: 'e-2' }),
    ];

    expect(await run(...records)).toEqual(checkpoint('101'));
    expect(await run(...records)).toEqual(checkpoint());
    expect(deadLetters.sent.map(({ sourceMessageId }) => sourceMessageId)).toEqual([
      'shardId-000000000000:101',
      'shardId-000000000000:101',
    ]);
  });

  it('logs keys and reasons, never the data', async () => {
    const { run, logger } = setup();

    await run(
      kinesisRecord('101', { eventId: 'e-1', status: 'card 4111-1111' }),
      kinesisRecord('102', { eventId: 'e-1', status: 'card 4222-2222' }),
    );

    expect(logger.entries).toHaveLength(1);
    expect(logger.entries[0]).toMatchObject({ outcome: 'mismatch', scopedKey: 'orders#e-1' });
    expect(JSON.stringify(logger.entries)).not.toMatch(/4111|4222/);
  });

  it('checkpoints at the first record not started before the Lambda deadline', async () => {
    const clock = manualClock();
    const { handler, handled } = setup({
      clock,
      handle: (message) => {
        handled.push(message.body.eventId);
        clock.advance(30_000);
      },
    });

    const response = await handler(
      { Records: [kinesisRecord('101', { eventId: 'e-1' }), kinesisRecord('102', { eventId: 'e-2' })] },
      { getRemainingTimeInMillis: () => 31_000 },
    );

    expect(response).toEqual(checkpoint('102'));
    expect(handled).toEqual(['e-1']);
  });

  it('reports a record that keeps failing on every delivery, and runs the records after it once the event source gives up on it', async () => {
    // What the event source does after `MaximumRetryAttempts`: it discards the batch from the
    // checkpoint on (its on-failure destination gets the shard and sequence numbers) and
    // delivers the next records of the shard.
    const { run, handled } = setup();
    const poison = kinesisRecord('102', { eventId: 'e-2', fail: 'retry' });
    const first = await run(kinesisRecord('101', { eventId: 'e-1' }), poison);
    const retries = [await run(poison), await run(poison)];

    const next = await run(kinesisRecord('103', { eventId: 'e-3' }));

    expect([first, ...retries]).toEqual([checkpoint('102'), checkpoint('102'), checkpoint('102')]);
    expect(next).toEqual(checkpoint());
    expect(handled).toEqual(['e-1', 'e-3']);
  });
});

describe('createKinesisHandler: records', () => {
  it('keys by a function of the Kinesis record, and hands the record to the handler as message.record', async () => {
    const seen: (string | undefined)[] = [];
    const { run, handled } = setup({
      dedupKey: (record, body) => [record.kinesis.partitionKey, body.eventId],
      handle: (message) => {
        seen.push(message.record.kinesis.sequenceNumber);
        handled.push(message.dedupKey);
      },
    });

    await run(kinesisRecord('101', { eventId: 'e-1' }, { partitionKey: 'o-1' }));

    expect(handled).toEqual(['o-1:e-1']);
    expect(seen).toEqual(['101']);
  });

  it('keeps every digit of a number key in the data', async () => {
    const { run, handled } = setup({
      dedupKey: fromData('eventId'),
      handle: (message) => void handled.push(message.dedupKey),
    });

    await run(kinesisRecord('101', undefined, { rawData: '{"eventId":12345678901234567890}' }));

    expect(handled).toEqual(['12345678901234567890']);
  });

  it('throws INVALID_EVENT for an event without records and for a record without a sequence number', async () => {
    const { handler } = setup();

    await expect(handler({} as never)).rejects.toMatchObject({
      code: 'INVALID_EVENT',
      message: 'Expected a Kinesis event with a `Records` list',
    });
    await expect(handler({ Records: [{ kinesis: { data: 'e30=' } } as never] })).rejects.toMatchObject({
      code: 'INVALID_EVENT',
      message: 'Expected a Kinesis record with `kinesis.sequenceNumber`',
    });
  });
});

describe('createKinesisHandler: start-up checks', () => {
  it("rejects `deadLetter: 'redrive'`: a stream has no redrive", () => {
    expect(() => setup({ deadLetter: 'redrive' as never })).toThrow(
      expect.objectContaining({
        code: 'INVALID_OPTIONS',
        message: expect.stringMatching(
          /^Expected `deadLetter` to be 'direct' \(a stream has no redrive.*got `"redrive"`$/,
        ),
      }),
    );
  });

  it("rejects a stream handler without a dead-letter sender, and takes the construct's queue URL as one", () => {
    expect(() => setup({ deadLetterSender: undefined })).toThrow(
      expect.objectContaining({
        code: 'INVALID_OPTIONS',
        message: expect.stringMatching(
          /^Expected `deadLetterSender` to be an object with `send`.*got `undefined`$/,
        ),
      }),
    );
    expect(() =>
      setup({
        deadLetterSender: undefined,
        environment: { EO_DEAD_LETTER_QUEUE_URL: 'http://127.0.0.1:1/000000000000/orders-dlq' },
      }),
    ).not.toThrow();
  });

  it('rejects a dedup key that is not a key source', () => {
    expect(() => setup({ dedupKey: 'eventId' as never })).toThrow(
      expect.objectContaining({
        code: 'INVALID_OPTIONS',
        message: 'Expected `dedupKey` to be a key source such as `fromData(...)`, got `"eventId"`',
      }),
    );
  });
});

describe('createKinesisHandler: modes', () => {
  const modes = {
    atomic: atomic<OrderEvent>((message, unitOfWork) => {
      unitOfWork.put({ TableName: 'Orders', Item: { pk: message.body.eventId } });
    }),
    entity: entity<OrderEvent>((message) => ({
      tableName: 'Orders',
      keyAttribute: 'pk',
      item: { pk: message.body.eventId },
    })),
    twoPhase: twoPhase<OrderEvent>({
      handle: (message, effects) => effects.run(() => ({ sent: message.body.eventId })),
      leaseMillis: 60_000,
    }),
  };

  it.each(Object.keys(modes) as (keyof typeof modes)[])(
    'runs %s mode on a stream: a producer duplicate and the replay are duplicates',
    async (name) => {
      const { run, logger } = setup({ mode: modes[name] as never, logLevel: 'debug' });
      const records = [kinesisRecord('101', { eventId: 'e-1' }), kinesisRecord('102', { eventId: 'e-1' })];

      expect(await run(...records)).toEqual(checkpoint());
      expect(await run(...records)).toEqual(checkpoint());
      expect(logger.entries.filter((entry) => 'outcome' in entry).map(({ outcome }) => outcome)).toEqual([
        'processed',
        'duplicate',
        'duplicate',
        'duplicate',
      ]);
    },
  );
});

describe('createKinesisHandler: checkpoint property', () => {
  it('reports, for every shard, the first record that failed, and runs no record after it in its shard', async () => {
    const shards = ['shardId-000000000000', 'shardId-000000000001', 'shardId-000000000002'];
    await check(
      fc.asyncProperty(
        fc.array(fc.record({ shard: fc.integer({ min: 0, max: 2 }), fails: fc.boolean() }), {
          maxLength: 20,
        }),
        async (plan) => {
          const { run, handled } = setup();
          const records = plan.map(({ shard, fails }, index) =>
            kinesisRecord(
              String(1000 + index),
              { eventId: `e-${index}`, ...(fails ? { fail: 'retry' } : {}) },
              {
                shardId: shards[shard],
              },
            ),
          );

          const response = await run(...records);

          const expected: string[] = [];
          const ran: string[] = [];
          const held = new Set<number>();
          plan.forEach(({ shard, fails }, index) => {
            if (held.has(shard)) return;
            if (fails) {
              held.add(shard);
              expected.push(String(1000 + index));
            } else ran.push(`e-${index}`);
          });
          expect(response).toEqual(checkpoint(...expected));
          expect([...handled].sort()).toEqual([...ran].sort());
        },
      ),
      { numRuns: 200 },
    );
  });
});
