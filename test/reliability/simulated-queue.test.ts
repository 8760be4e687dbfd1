/**
 * The simulated queue and the live-window count are the ground truth of the fault-injection
 * suite, so they are tested on their own (no I/O).
 */
import { describe, expect, it } from 'vitest';
import { duplicateEffectsOf } from './support/oracle';
import { chanceOf, createRandom } from './support/prng';
import { createSimulatedQueue, FIFO_DEDUPLICATION_WINDOW_MILLIS } from './support/simulated-queue';
import { stateBeforeRedrive, unfollowedMarkers } from './support/simulation';

const T0 = Date.UTC(2026, 0, 1);

function queueOf(options: { maxReceiveCount?: number; alone?: (meta: string) => boolean } = {}) {
  return createSimulatedQueue<string>({
    startMillis: T0,
    visibilityTimeoutMillis: 30_000,
    maxReceiveCount: options.maxReceiveCount ?? 3,
    random: createRandom(1),
    ...(options.alone ? { alone: options.alone } : {}),
  });
}

const send = (queue: ReturnType<typeof queueOf>, ...ids: string[]) => {
  for (const id of ids) queue.send({ messageId: id, body: `{"id":"${id}"}`, meta: id });
};

describe('simulated SQS queue', () => {
  it('hides a received message until its visibility timeout ends, then delivers it again with a higher receive count', () => {
    const queue = queueOf();
    send(queue, 'a');

    const [first] = queue.receive(10);
    expect(queue.receive(10)).toEqual([]);
    expect(queue.advance()).toBe(true);
    const [second] = queue.receive(10);

    expect(queue.now()).toBe(T0 + 30_000);
    expect([first?.receiveCount, second?.receiveCount]).toEqual([1, 2]);
    expect(second?.receiptHandle).not.toBe(first?.receiptHandle);
  });

  it('deletes a message only with its latest receipt handle', () => {
    const queue = queueOf();
    send(queue, 'a');
    const [first] = queue.receive(10);
    queue.advance();
    const [second] = queue.receive(10);

    expect(queue.delete(first!.receiptHandle)).toBe(false);
    expect(queue.delete(second!.receiptHandle)).toBe(true);
    expect(queue.stateOf('a')).toBe('deleted');
    expect(queue.advance()).toBe(false);
  });

  it('moves a message received maxReceiveCount times to the dead-letter queue on its next receive', () => {
    const queue = queueOf({ maxReceiveCount: 2 });
    send(queue, 'poison');

    const counts: number[] = [];
    for (;;) {
      counts.push(...queue.receive(10).map((received) => received.receiveCount));
      if (!queue.advance()) break;
    }

    expect(counts).toEqual([1, 2]);
    expect(queue.stateOf('poison')).toBe('dead-lettered');
    expect(queue.redriven).toEqual([
      { messageId: 'poison', body: '{"id":"poison"}', meta: 'poison', receiveCount: 2 },
    ]);
    expect(queue.pendingCount()).toBe(0);
  });

  it('delivers a delayed message only after its delay', () => {
    const queue = queueOf();
    queue.send({ messageId: 'later', body: '{}', meta: 'later' }, 45_000);

    expect(queue.receive(10)).toEqual([]);
    expect(queue.advance()).toBe(true);
    expect(queue.now()).toBe(T0 + 45_000);
    expect(queue.receive(10).map((received) => received.messageId)).toEqual(['later']);
  });

  it('receives batches of at most the requested size, oldest first, and a message marked alone in a batch of its own', () => {
    const queue = queueOf({ alone: (meta) => meta.startsWith('alone') });
    send(queue, 'a', 'alone-1', 'b', 'c');

    const batches = [queue.receive(2), queue.receive(2), queue.receive(2)].map((batch) =>
      batch.map((received) => received.messageId),
    );

    expect(batches).toEqual([['a', 'b'], ['alone-1'], ['c']]);
  });

  it('never returns an empty batch while a message is visible, whatever it skips', () => {
    const queue = createSimulatedQueue<string>({
      startMillis: T0,
      visibilityTimeoutMillis: 30_000,
      maxReceiveCount: 3,
      random: createRandom(7),
      skipChance: 0.99,
    });
    send(queue, 'a', 'b', 'c');

    const received: string[] = [];
    for (let batch = queue.receive(10); batch.length > 0; batch = queue.receive(10)) {
      received.push(...batch.map((message) => message.messageId));
    }

    expect(received.sort()).toEqual(['a', 'b', 'c']);
  });
});

describe('live windows', () => {
  it.each([
    { epochs: [0], duplicates: 0 },
    { epochs: [1], duplicates: 0 },
    { epochs: [0, 1], duplicates: 0 },
    { epochs: [0, 0], duplicates: 1 },
    { epochs: [1, 1], duplicates: 1 },
    { epochs: [1, 0], duplicates: 1 },
    { epochs: [0, 0, 1, 1], duplicates: 2 },
  ])('counts $duplicates duplicate effect(s) in windows $epochs', ({ epochs, duplicates }) => {
    expect(duplicateEffectsOf(epochs)).toBe(duplicates);
  });
});

describe('where a redriven copy must be before its redrive', () => {
  it.each([
    { outage: false, deadLetter: 'redrive', lastCode: undefined, expected: 'deleted' },
    { outage: false, deadLetter: 'direct', lastCode: undefined, expected: 'deleted' },
    { outage: true, deadLetter: 'redrive', lastCode: undefined, expected: 'dead-lettered' },
    { outage: true, deadLetter: 'direct', lastCode: 'PERMANENT', expected: 'dead-lettered directly' },
    // Seed 2 of the soak: a completed message redriven again had lost its key to a raced payload.
    { outage: false, deadLetter: 'redrive', lastCode: 'PAYLOAD_MISMATCH', expected: 'dead-lettered' },
    { outage: false, deadLetter: 'direct', lastCode: 'PAYLOAD_MISMATCH', expected: 'dead-lettered directly' },
  ] as const)(
    'outage $outage, $deadLetter dead-lettering, last outcome $lastCode: $expected',
    ({ outage, deadLetter, lastCode, expected }) => {
      expect(stateBeforeRedrive({ outage }, deadLetter, lastCode)).toBe(expected);
    },
  );
});

describe('marker-mode gaps of one invocation', () => {
  const key = 'rel-s1-marker#k9691';

  it('counts a marker followed by neither its effect nor its release as a gap', () => {
    expect(
      unfollowedMarkers({
        markerWritten: new Map([[key, new Set(['a'])]]),
        effectWritten: new Set(),
        markerReleased: new Map(),
      }),
    ).toEqual([key]);
  });

  it('counts no gap for a marker released after its effect failed, nor for one followed by its effect', () => {
    expect(
      unfollowedMarkers({
        markerWritten: new Map([
          [key, new Set(['a'])],
          ['rel-s1-marker#k1', new Set(['b'])],
        ]),
        effectWritten: new Set(['rel-s1-marker#k1']),
        markerReleased: new Map([[key, new Set(['a'])]]),
      }),
    ).toEqual([]);
  });

  // Soak seed 1: two deliveries of one key in a batch; the first one's effect failed and its
  // marker was released, the second one claimed the released marker and lost the answer.
  it('counts the second delivery’s marker as a gap when only the first delivery’s marker of the key was released', () => {
    expect(
      unfollowedMarkers({
        markerWritten: new Map([[key, new Set(['a', 'b'])]]),
        effectWritten: new Set(),
        markerReleased: new Map([[key, new Set(['a'])]]),
      }),
    ).toEqual([key]);
  });
});

/** A FIFO queue of messages `<group>:<name>`, deduplicated by name. */
function fifoQueueOf(options: { maxReceiveCount?: number; skipChance?: number } = {}) {
  return createSimulatedQueue<string>({
    startMillis: T0,
    visibilityTimeoutMillis: 30_000,
    maxReceiveCount: options.maxReceiveCount ?? 3,
    random: createRandom(3),
    ...(options.skipChance === undefined ? {} : { skipChance: options.skipChance }),
    fifo: {
      groupOf: (message) => message.meta.split(':')[0]!,
      deduplicationIdOf: (message) => message.meta.split(':')[1]!,
    },
  });
}

const ids = (batch: readonly { readonly messageId: string }[]) => batch.map((received) => received.messageId);

describe('simulated SQS FIFO queue', () => {
  it('returns several groups in one receive, each in send order, with growing sequence numbers', () => {
    const queue = fifoQueueOf();
    send(queue, 'g1:a', 'g2:b', 'g1:c', 'g2:d');

    const batch = queue.receive(10);

    expect(ids(batch)).toEqual(['g1:a', 'g2:b', 'g1:c', 'g2:d']);
    expect(batch.map((received) => received.groupId)).toEqual(['g1', 'g2', 'g1', 'g2']);
    const sequences = batch.map((received) => BigInt(received.sequenceNumber!));
    expect([...sequences].sort((x, y) => (x < y ? -1 : 1))).toEqual(sequences);
  });

  it('holds a group back while one of its messages is in flight, until it is deleted or visible again', () => {
    const queue = fifoQueueOf();
    send(queue, 'g1:a', 'g1:b', 'g2:c');
    const [first] = queue.receive(1);

    // g1 is blocked by a; g2 is free.
    expect(ids(queue.receive(10))).toEqual(['g2:c']);
    expect(queue.receive(10)).toEqual([]);
    // a's visibility ends (so does c's): a comes back before b.
    expect(queue.advance()).toBe(true);
    const again = queue.receive(1);
    expect(ids(again)).toEqual(['g1:a']);
    expect(queue.delete(first!.receiptHandle)).toBe(false);
    expect(queue.delete(again[0]!.receiptHandle)).toBe(true);
    expect(ids(queue.receive(10))).toEqual(['g1:b', 'g2:c']);
  });

  it('lets a group go on once the redrive policy moved its first message to the dead-letter queue', () => {
    const queue = fifoQueueOf({ maxReceiveCount: 2 });
    send(queue, 'g1:poison');
    queue.receive(10);
    send(queue, 'g1:next');
    queue.advance();
    expect(ids(queue.receive(1))).toEqual(['g1:poison']);
    queue.advance();

    expect(ids(queue.receive(10))).toEqual(['g1:next']);
    expect(queue.stateOf('g1:poison')).toBe('dead-lettered');
  });

  it('never passes over the first message of a group to hand out a later one', () => {
    const queue = fifoQueueOf({ skipChance: 0.9 });
    send(queue, 'g1:a', 'g1:b', 'g1:c', 'g1:d');

    const seen: string[] = [];
    for (let batch = queue.receive(10); batch.length > 0; batch = queue.receive(10)) {
      seen.push(...ids(batch));
      for (const received of batch) queue.delete(received.receiptHandle);
    }

    expect(seen).toEqual(['g1:a', 'g1:b', 'g1:c', 'g1:d']);
  });

  it('accepts and never delivers a deduplication id sent again within 5 minutes, and delivers it after', () => {
    const queue = fifoQueueOf();
    send(queue, 'g1:k1');
    queue.send({ messageId: 'again', body: '{}', meta: 'g1:k1' }, 60_000);
    queue.send({ messageId: 'after', body: '{}', meta: 'g1:k1' }, FIFO_DEDUPLICATION_WINDOW_MILLIS);
    for (const received of queue.receive(10)) queue.delete(received.receiptHandle);

    const later: string[] = [];
    while (queue.advance()) {
      for (const received of queue.receive(10)) {
        later.push(received.messageId);
        queue.delete(received.receiptHandle);
      }
    }

    expect(queue.stateOf('again')).toBe('deduplicated');
    expect(later).toEqual(['after']);
    expect(queue.now()).toBe(T0 + FIFO_DEDUPLICATION_WINDOW_MILLIS);
  });

  it('sequences a late send when it is sent, after messages sent before it', () => {
    const queue = fifoQueueOf();
    queue.send({ messageId: 'late', body: '{}', meta: 'g1:late' }, 10_000);
    queue.advance();
    send(queue, 'g1:now');

    expect(ids(queue.receive(10))).toEqual(['late', 'g1:now']);
  });
});

describe('seeded choices', () => {
  it('replays the same stream for the same seed and another for another seed', () => {
    const draw = (seed: number) => Array.from({ length: 5 }, createRandom(seed).next);

    expect(draw(42)).toEqual(draw(42));
    expect(draw(42)).not.toEqual(draw(43));
  });

  it('decides a fault from the seed and what is decided, whatever the order of the calls', () => {
    const forward = ['m1', 'm2', 'm3'].map((id) => chanceOf(5, 'record', id, 1));
    const backward = ['m3', 'm2', 'm1'].map((id) => chanceOf(5, 'record', id, 1)).reverse();

    expect(forward).toEqual(backward);
    expect(new Set(forward).size).toBe(3);
  });
});
