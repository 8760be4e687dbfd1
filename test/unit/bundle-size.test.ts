import { join } from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

const root = join(__dirname, '..', '..');

/** The minified bytes of a bundle, and the source files (from the repository root) it carries. */
async function bundle(
  entry: { readonly path: string } | { readonly contents: string; readonly name: string },
  external: string[] = [],
): Promise<{ readonly bytes: number; readonly inputs: string[] }> {
  const result = await build({
    ...('path' in entry
      ? { entryPoints: [join(root, entry.path)] }
      : { stdin: { contents: entry.contents, resolveDir: root, loader: 'ts', sourcefile: entry.name } }),
    bundle: true,
    minify: true,
    platform: 'node',
    format: 'cjs',
    write: false,
    metafile: true,
    logLevel: 'silent',
    // The package entry resolves to the sources through the `paths` of tsconfig.json.
    tsconfig: join(root, 'tsconfig.json'),
    external: ['@aws-sdk/*', ...external],
  });
  const [output] = Object.values(result.metafile.outputs);
  return { bytes: result.outputFiles[0]!.contents.byteLength, inputs: Object.keys(output!.inputs) };
}

/** The module files of each mode. */
const MODE_MODULES = {
  marker: ['lambda/modes/marker.ts'],
  atomic: ['lambda/modes/atomic.ts', 'lambda/modes/batch-commit.ts', 'lambda/modes/unit-of-work.ts'],
  entity: ['lambda/modes/entity.ts'],
  twoPhase: [
    'lambda/modes/two-phase.ts',
    'lambda/modes/two-phase/effects.ts',
    'lambda/modes/two-phase/heartbeat.ts',
  ],
} as const;

type ModeFactory = keyof typeof MODE_MODULES;

/** A handler as a user writes it: `createSqsHandler` and one mode factory from the package root. */
const HANDLERS: Readonly<Record<ModeFactory, string>> = {
  marker: 'marker(() => undefined)',
  atomic: 'atomic(() => undefined)',
  entity: "entity(() => ({ tableName: 'T', keyAttribute: 'pk', item: { pk: 'a' } }))",
  twoPhase: 'twoPhase({ handle: () => undefined })',
};

const handlerOf = (factory: ModeFactory) => ({
  name: `${factory}-handler.ts`,
  contents: [
    `import { createSqsHandler, fromBody, ${factory} } from 'effectively-once';`,
    `export const handler = createSqsHandler({ dedupKey: fromBody('id'), mode: ${HANDLERS[factory]} });`,
  ].join('\n'),
});

describe('bundle size', () => {
  // Bytes are measured, not a target: what users feel is cold-start time, which the benchmark
  // measures. Each ceiling is what was measured rounded up to the next 256 bytes, so growth is
  // seen and decided on. Before modes were modules every handler carried all four: 42,850 bytes
  // (createSqsHandler, every mode and the DynamoDB store with its plain forms, AWS SDK external).
  // With one mode each (and `"sideEffects": false`, so the package root's other entry points shake
  // out) a handler measured: marker 37,297, atomic 39,281, entity 38,087, two-phase 42,457 bytes
  // (the lease claim and its takeover policy, effects, heartbeat). Error codes written as one
  // literal map of code to disposition (no table inverted at start-up) and outcome log lines as
  // objects added about 230 bytes to each: marker 37,531, atomic 39,515, entity 38,321, two-phase
  // 42,691 bytes. The completed-record cache (the LRU, its option and `EO_*` variable, the
  // `CacheHit` metric, what each mode reports final) added about 1.3-1.5 KB to each: marker
  // 38,830, atomic 41,011, entity 39,864, two-phase 44,164 bytes (ceilings from here rounded up
  // to the next 128 bytes). Atomic mode with the marker on a business item (the store's
  // `commitWithItemMarker`, which every handler carries with the store, and the mode's option and
  // `putAsMarker`) added about 1.7 KB to each and 3.7 KB to atomic: marker 40,532, atomic
  // 44,728, entity 41,594, two-phase 45,871 bytes. The Lambda context on each message
  // (`message.context`) added 14 bytes to entity mode: 41,608 bytes. The transactional outbox's
  // `unitOfWork.emit` (event ids, the outbox item, the destination's size check, the mode's
  // `outbox` option) added about 2.6 KB to atomic: 47,315 bytes (none of the outbox's code is in
  // the other modes' bundles). The outbox relay's metrics (one Embedded Metric Format line
  // builder shared by the consumer's sink and the relay's, `embeddedMetricLine`) added 32 to 155
  // bytes to each, and sizing events for each destination kind (`destinationKind`, `eventSource`,
  // the EventBridge entry's envelope) about 880 bytes more to atomic: marker 40,717, atomic
  // 48,348, entity 41,779, two-phase 46,056 bytes. With the construct's outbox settings as atomic
  // mode's defaults (`EO_OUTBOX_*` read by every handler, `EO_OUTBOX_EVENT_SOURCE` among them):
  // marker 41,559, atomic 49,611, entity 42,621, two-phase 46,899 bytes. Transports as adapters
  // (the engine takes `InboundMessage`s and answers results; the SQS transport maps records,
  // responses and dead letters; one neutral entry builds the engine; bodies may be bytes) added
  // about 1.3 KB to each: marker 42,859, atomic 50,911, entity 43,922, two-phase 48,193 bytes;
  // SQS dead letters sized against the queue's limit (the reason cut, or left to the redrive
  // policy) and FIFO ids SQS accepts (`toFifoId`) about 770 bytes more: marker 43,628, atomic
  // 51,680, entity 44,691, two-phase 48,962 bytes. The conditional outbox put (its content hash,
  // `OUTBOX_COLLISION`) and events settled at `emit` (JSON escapes SQS accepts, the EventBridge
  // `DetailType` length) about 830 bytes more to atomic: 52,511 bytes (and the new error code a
  // little to every mode); one deadline and one reason cut for every entry point: entity 44,813,
  // two-phase 49,084 bytes. FIFO group ids checked at `emit` (`EO_OUTBOX_DESTINATION_FIFO` read by
  // every handler, the check and its reason in atomic mode): marker 44,004, atomic 53,655, entity
  // 45,067, two-phase 49,338 bytes. The construct's mode checked at cold start (`EO_MODE`, a
  // mismatch's message naming both) about 440 bytes more to each: marker 44,442, atomic 54,093,
  // entity 45,505, two-phase 49,776 bytes. A unit per metric in the shared metrics line, and an
  // event type checked for the characters an SQS attribute value takes: atomic 54,430, two-phase
  // 49,816 bytes. Key errors naming where the key is read (`body field \`orderId\``) about 170
  // bytes more to each: marker 44,714, atomic 54,662, entity 45,777, two-phase 50,048 bytes.
  // A lone marked put sent as one conditional `PutItem` (the store's `commitWithItemMarker` picking
  // the request, a failed condition's message kept) about 185 bytes more to each: marker 44,900,
  // atomic 54,847, entity 45,963, two-phase 50,227 bytes. Batch commit (the store's `commitMany`
  // and one reader of a commit's share of a cancelled transaction, which every handler carries
  // with the store, about 780 bytes; atomic mode's rounds, packing and `commit` option about 2.8 KB
  // more): marker 45,712, atomic 58,495, entity 46,775, two-phase 51,038 bytes. Three CPU cuts
  // (the scheduler awaiting one turn of the microtask queue per batch and then only a real wait,
  // 49 bytes; a key part's error label written only when the part is refused, 42; each
  // invocation's zero outcome counts one object literal, 47) and atomic's commit described as one
  // object: marker 45,850, atomic 58,784, entity 46,913, two-phase 51,176 bytes. Batch commit's
  // rounds failing their members rather than leaving them waiting (a store answering out of
  // contract, a failure of the rounds themselves): atomic 58,979 bytes. The default fingerprint
  // computed from the parsed body when every number literal reads the same as its double (the
  // scan for them and its fallback, about 290 bytes more to each, for about 6 µs less CPU per
  // message): marker 46,139, atomic 59,289, entity 47,202, two-phase 51,465 bytes. A batch
  // commit waiting at most 100 ms for handlers still describing their writes: atomic 59,373.
  // Each line naming its invocation's `requestId` (Lambda Managed Instances), and a fair queue's
  // per-group metrics (`groupMetrics`: its option check, `EO_GROUP_METRICS_MAX_GROUPS`, the
  // bounded group names and their lines) about 1.0-1.1 KB more to each: marker 47,299, atomic
  // 60,533, entity 48,360, two-phase 52,633 bytes. The CPU cuts of issue 27 (the fingerprint's
  // sorted copy written by `JSON.stringify` and sorted by insertion, the runtime's `isWellFormed`,
  // key parts escaped only when they need it, the marked put built field by field) about 0.9 KB
  // more to each: marker 48,208, atomic 61,457, entity 49,269, two-phase 53,542 bytes. Atomic
  // mode awaiting a handler's result only when it is a thenable, and a unit of work building its
  // guard set and event map only when a write needs them: atomic 61,590 (marker 48,131, entity
  // 49,192, two-phase 53,465). An outbox feeding a fair queue (`EO_OUTBOX_DESTINATION_FAIR` read
  // with the construct's other settings, 171 bytes to each; atomic's `destinationFair` checked and
  // its group ids checked at `emit`, 547 more): marker 48,302, atomic 62,308, entity 49,363,
  // two-phase 53,636 bytes. A standard SNS topic feeding fair queues (atomic's `destinationFair`
  // taken for a topic, its FIFO refusal worded for one): atomic 62,584.
  const ceilings: Readonly<Record<ModeFactory, number>> = {
    marker: 48_384,
    atomic: 62_592,
    entity: 49_408,
    twoPhase: 53_760,
  };

  for (const factory of Object.keys(MODE_MODULES) as ModeFactory[]) {
    it(`bundles only its own mode in a ${factory} handler, within ${ceilings[factory].toLocaleString('en-US')} bytes minified, AWS SDK excluded`, async () => {
      const { bytes, inputs } = await bundle(handlerOf(factory));
      const modeInputs = inputs.filter((input) => input.startsWith('lambda/modes/'));

      expect(modeInputs.sort()).toEqual([...MODE_MODULES[factory]].sort());
      expect(inputs.filter((input) => /^lambda\/(http|jobs|worker|example)\//.test(input))).toEqual([]);
      expect(bytes).toBeLessThanOrEqual(ceilings[factory]);
    });
  }

  // The ratchet stood at 16 KB (15,974 bytes measured) before two-phase mode; claims, takeovers,
  // stuck claims, heartbeat, stored results, derived keys and version guards added about 4 KB;
  // lossless keys and fingerprints and fenced claim writes (issue 12) about 2.9 KB more: 22,971
  // bytes; the transport fixes about 1.1 KB more: 24,079 bytes; the construct's `EO_*` contract by
  // default about 4.5 KB more: 28,642 bytes. Modes as modules took every mode out of it: the
  // engine alone, as every handler carries it: 21,024 bytes; 21,258 with the plain error-code map
  // and log-line objects (above); 22,595 with the completed-record cache (above); 22,660 with the
  // outbox's names in the contract module (4 bytes: no outbox code is in it, the minifier's names
  // moved); 22,816 with the Embedded Metric Format line builder the outbox relay shares; 23,655
  // with the construct's outbox settings read by every handler; 25,348 with transports as
  // adapters (the SQS transport's record, response and dead-letter mapping, the neutral entry,
  // `createSqsBatchHandler`, byte bodies); 26,117 with SQS dead letters sized against the queue;
  // 26,493 with `EO_OUTBOX_DESTINATION_FIFO` read with the construct's other settings; 26,931 with
  // the construct's mode checked at cold start (`EO_MODE`); a unit per metric in the shared
  // Embedded Metric Format line (the outbox relay's `EventAge` is in milliseconds) about 11 bytes;
  // 27,139 with key errors naming where the key is read; 27,188 with the scheduler awaiting one turn
  // per batch, not two per message; 27,230 with key part labels written only for an error;
  // 27,277 with the zero counts as a literal; 27,592 with the fingerprint's fast path (above);
  // 28,751 with each line's `requestId` and a fair queue's per-group metrics (above); 29,516 with
  // the CPU cuts (above); 29,441 with the scheduler starting a ready task without a wrapper;
  // 29,612 with `EO_OUTBOX_DESTINATION_FAIR` (above).
  it('keeps the core and createSqsHandler, without a mode, within 29,696 bytes minified, AWS SDK and store excluded', async () => {
    const { bytes, inputs } = await bundle({ path: 'lambda/sqs/sqs-handler.ts' }, ['./store/dynamodb-store']);
    expect(inputs.filter((input) => input.startsWith('lambda/modes/'))).toEqual([]);
    expect(bytes).toBeLessThanOrEqual(29_696);
  });

  // The shipped outbox relay (`lambda/outbox/relay-handler.ts`: environment defaults, the three
  // destinations, dead letters, metrics) measured 14,044 bytes, 14,243 with the construct's
  // outbox settings in the shared environment reader, 14,414 with the SQS limits the dead-letter
  // sender shares with the stream dead letters, 14,572 with FIFO ids SQS accepts (`toFifoId`),
  // 22,330 with publish errors classified (the AWS error classifier, whose DynamoDB tables esbuild
  // keeps), refused events dead-lettered in the stream envelope, and the deadline; with the AWS
  // SDK, which the construct bundles, about 560 KB. The conditional outbox put (its content hash)
  // is in the writer and atomic mode, not here. 22,408 with the shared JSON escaping. 22,356
  // before, 22,636 with `EventAge` (each published event's age from its `createdAt`, written as
  // Milliseconds arrays of at most 100 values per Embedded Metric Format line; 280 bytes); 22,732
  // with `EO_OUTBOX_DESTINATION_FIFO` and `EO_MODE` read by the shared environment reader; 22,792
  // with the destination built over given clients (`outboxDestinationFromEnvironment`, which the
  // redrive command shares); 23,039 with the request id an Embedded Metric Format line may carry
  // and `EO_GROUP_METRICS_MAX_GROUPS` in the shared environment reader; 23,851 with a fair queue
  // destination (`EO_OUTBOX_DESTINATION_FAIR` read and checked against the kind and the queue URL,
  // `sqsDestination`'s `fairQueue` and its group ids: 812 bytes, about half of them the refusals'
  // messages); 24,399 with a standard SNS topic feeding fair queues (`snsDestination`'s
  // `fairQueue`, its group ids and the FIFO topic's refusals).
  it('keeps the shipped outbox relay free of modes, the store (but its error classifier) and the SQS handler, within 24,448 bytes minified, AWS SDK excluded', async () => {
    const { bytes, inputs } = await bundle({ path: 'lambda/outbox/relay-handler.ts' });
    expect(
      inputs.filter(
        (input) =>
          /^lambda\/(modes|store|example|sqs)\/|^lambda\/consumer-entry\.ts$/.test(input) &&
          // The one module that knows AWS error names classifies publish errors too.
          input !== 'lambda/store/classify-aws-error.ts',
      ),
    ).toEqual([]);
    expect(bytes).toBeLessThanOrEqual(24_448);
  });
});
