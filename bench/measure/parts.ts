/**
 * The toolkit's own work per message, part by part, beside what the hand-written mirror does for
 * the same part (`implementations/hand-written.ts`), for `npm run bench:profile -- --parts`: where
 * the CPU the bench's pairs show above the same calls goes, in parts the profile spreads over many
 * small functions. Each part runs on the bench's own first-delivery messages, in a tight loop, its
 * CPU read with `process.cpuUsage()`; the toolkit's and the mirror's loops take turns within a
 * repetition, and each figure is the median over the repetitions.
 *
 * A part's loop is not the handler: a value computed in it may stay in a register or a cache the
 * handler's other work would evict, so the parts do not add up to a pair's difference. They say
 * which part is large and which is not.
 */
import { createHash } from 'node:crypto';
import { fromBody, type KeySource } from '../../lambda/core/dedup-key';
import { canonicalJsonOfParsedText, sha256Hex } from '../../lambda/core/fingerprint';
import { createInboxRecord } from '../../lambda/core/inbox-record';
import { assertCommitWithinLimits } from '../../lambda/core/item-size';
import { type PrepareConfig, prepareMessage } from '../../lambda/core/message';
import type { AtomicStore, CommitResult, TransactWriteAction } from '../../lambda/core/store-port';
import { createCommitRounds } from '../../lambda/modes/batch-commit';
import { createUnitOfWork } from '../../lambda/modes/unit-of-work';
import { sqsInboundMessage } from '../../lambda/sqs/sqs-handler';
import { median } from '../stats';
import { batchOf, DEFAULT_TABLES, type OrderEvent, orderItemOf } from '../workload';

/** The consumer name the bench's toolkit handlers use (`implementations/toolkit/common.ts`). */
const CONSUMER = 'bench-orders';
/** The inbox record's TTL the toolkit derives by default, seconds (any value serves here). */
const TTL_SECONDS = 15 * 24 * 3600;
const BATCH_SIZE = 10;

/** One part's figures, microseconds per message (or per batch of 10). */
export interface PartFigure {
  readonly part: string;
  /** What the toolkit runs for the part. */
  readonly toolkit: string;
  /** What the mirror runs for it; `undefined` when it has no counterpart. */
  readonly mirror?: string;
  readonly per: 'message' | 'batch of 10';
  readonly toolkitMicros: number;
  readonly mirrorMicros?: number;
}

interface Part {
  readonly part: string;
  readonly toolkit: string;
  readonly mirror?: string;
  readonly per: PartFigure['per'];
  /** Runs the toolkit's side once; returns something, so the work is not dropped. */
  readonly runToolkit: (index: number) => unknown;
  readonly runMirror?: (index: number) => unknown;
  /** Parts that await run through `runAsync` instead. */
  readonly async?: boolean;
}

/** Measures every part, `repetitions` times each, `iterations` calls a repetition. */
export async function measureParts(repetitions: number, iterations: number): Promise<PartFigure[]> {
  const records = batchOf('parts', 0, BATCH_SIZE).Records;
  const inbound = records.map(sqsInboundMessage);
  const bodies = records.map((record) => record.body);
  const parsed = bodies.map((body) => JSON.parse(body) as OrderEvent);
  const config: PrepareConfig<OrderEvent, unknown> = {
    consumer: CONSUMER,
    dedupKey: fromBody((order: OrderEvent) => [order.orderId, order.status]) as KeySource<
      OrderEvent,
      unknown
    >,
    parse: 'json',
    fingerprint: undefined,
    correlationId: undefined,
  };
  const now = Date.now();
  const commits = parsed.map((order, index) => ({
    record: createInboxRecord(
      `${CONSUMER}#${order.orderId}:${order.status}`,
      sha256Hex(bodies[index]!),
      CONSUMER,
      now,
      TTL_SECONDS,
    ),
    writes: [
      { Put: { TableName: DEFAULT_TABLES.orders, Item: orderItemOf(order) } },
    ] as TransactWriteAction[],
  }));
  const at = (index: number) => index % BATCH_SIZE;
  const committed: CommitResult = { kind: 'committed' };
  const instantStore = {
    commitMany: async (many: readonly unknown[]) => many.map(() => committed),
  } as unknown as Required<Pick<AtomicStore, 'commitMany'>>;

  const parts: Part[] = [
    {
      part: 'prepare',
      toolkit: 'prepareMessage: parse, key, canonical fingerprint',
      mirror: 'JSON.parse, SHA-256 of the body, the key',
      per: 'message',
      runToolkit: (index) => prepareMessage(inbound[at(index)]!, config),
      runMirror: (index) => {
        const body = bodies[at(index)]!;
        const order = JSON.parse(body) as OrderEvent;
        return [
          createHash('sha256').update(body).digest('hex'),
          `${CONSUMER}#${order.orderId}:${order.status}`,
        ];
      },
    },
    {
      part: 'fingerprint',
      toolkit: 'SHA-256 of the canonical JSON of the parsed body',
      mirror: 'SHA-256 of the body',
      per: 'message',
      runToolkit: (index) => sha256Hex(canonicalJsonOfParsedText(bodies[at(index)]!, parsed[at(index)])),
      runMirror: (index) => createHash('sha256').update(bodies[at(index)]!).digest('hex'),
    },
    {
      part: 'limits',
      toolkit: "assertCommitWithinLimits: the commit's items and bytes",
      per: 'message',
      runToolkit: (index) => assertCommitWithinLimits(commits[at(index)]!.record, commits[at(index)]!.writes),
    },
    {
      part: 'unit of work',
      toolkit: 'createUnitOfWork and one put',
      per: 'message',
      runToolkit: (index) => createUnitOfWork(undefined, 'inbox').put(commits[at(index)]!.writes[0]!.Put!),
    },
    {
      part: 'commit rounds',
      toolkit: 'createCommitRounds: 10 tickets queued, one round, over a store answering at once',
      mirror: '10 settled promises awaited together, and one turn of the event loop',
      per: 'batch of 10',
      async: true,
      runToolkit: () => {
        const rounds = createCommitRounds(instantStore);
        const tickets = commits.map(() => rounds.enter());
        return Promise.all(
          tickets.map((ticket, index) =>
            ticket.commit({
              commit: commits[index]!,
              actions: 2,
              bytes: 300,
              nowMillis: now,
              alone: async () => committed,
            }),
          ),
        );
      },
      runMirror: async () => {
        await Promise.all(commits.map(async () => committed));
        await new Promise((resolve) => setImmediate(resolve));
      },
    },
  ];

  const figures: PartFigure[] = [];
  for (const part of parts) {
    const toolkitSamples: number[] = [];
    const mirrorSamples: number[] = [];
    const calls = part.async ? Math.max(1, Math.floor(iterations / 20)) : iterations;
    // A warm-up repetition first (JIT), then the measured ones, the two sides taking turns.
    for (let repetition = 0; repetition <= repetitions; repetition++) {
      const toolkitMicros = await timeLoop(part.runToolkit, calls, part.async === true);
      const mirrorMicros = part.runMirror ? await timeLoop(part.runMirror, calls, part.async === true) : 0;
      if (repetition === 0) continue;
      toolkitSamples.push(toolkitMicros);
      mirrorSamples.push(mirrorMicros);
    }
    figures.push({
      part: part.part,
      toolkit: part.toolkit,
      ...(part.mirror === undefined ? {} : { mirror: part.mirror }),
      per: part.per,
      toolkitMicros: median(toolkitSamples),
      ...(part.runMirror === undefined ? {} : { mirrorMicros: median(mirrorSamples) }),
    });
  }
  return figures;
}

/** The last result of a loop, kept where the compiler cannot prove it unused. */
export let lastResult: unknown;

/** CPU per call of `run` over `calls` calls, microseconds (awaiting each when `async`). */
async function timeLoop(run: (index: number) => unknown, calls: number, async: boolean): Promise<number> {
  const before = process.cpuUsage();
  for (let index = 0; index < calls; index++) {
    lastResult = async ? await run(index) : run(index);
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / calls;
}
