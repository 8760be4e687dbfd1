/** The shape of `bench/results/latest.json`, and the targets it is judged against. */
import type { CeilingInput, CeilingRow } from '../ceilings';
import type { BatchShapeName, LatencyFigures, LatencySource, OperationLatency } from '../latency-model';
import type { TracedRequest } from '../measure/traces';
import type { DollarsPerMillion, Price } from '../prices';
import type { MedianInterval, Summary } from '../stats';

/** Request and capacity figures of one case, each summarised over repetitions. */
export interface CaseFigures {
  readonly requests: Summary;
  readonly dedupRequests: Summary;
  readonly businessRequests: Summary;
  readonly writeUnits: Summary;
  readonly readUnits: Summary;
  readonly acknowledged: Summary;
  readonly effects: Summary;
  /** Requests per message by operation (from the last repetition; they do not vary). */
  readonly operations: Readonly<Record<string, number>>;
}

/** A ratio against a reference, per repetition (paired), summarised. */
export interface RatioFigures extends Summary {}

/**
 * The scriptable figures of one implementation: one number per field. Latency is the
 * modelled wall time of a batch of 10 on a standard queue, first delivery; dollars per million
 * messages at `costAssumptions`; `cpuRatioVsSameCalls` is null where no hand-written baseline
 * makes the same calls.
 */
export interface ImplementationFigures {
  readonly latencyMillisPerBatch: { readonly p50: number; readonly p99: number };
  readonly dollarsPerMillion: {
    readonly first: number;
    readonly duplicate: number;
    readonly blended: number;
  };
  readonly writeUnitsPerMessage: { readonly first: number; readonly duplicate: number };
  readonly requestsPerMessage: { readonly first: number; readonly duplicate: number };
  /** Median module init time of the handler bundle, milliseconds. */
  readonly initMillis: number;
  readonly cpuRatioVsSameCalls: { readonly median: number; readonly ciHigh: number } | null;
}

/** One target of issue 15 and how this run did against it. */
export interface TargetResult {
  readonly id:
    | 'floor'
    | 'latency-vs-same-calls'
    | 'latency-vs-peer'
    | 'dollars-vs-peer'
    | 'dollars-vs-before'
    | 'atomic-default-latency'
    | 'cache-duplicate'
    | 'cpu-vs-same-calls'
    | 'init-vs-noise';
  readonly subject: string;
  readonly description: string;
  /** What was measured, in the unit of `limit`. */
  readonly value: number | null;
  readonly limit: number;
  readonly comparison: 'at-most' | 'at-least' | 'below' | 'equal';
  readonly met: boolean | null;
  /** Human-readable verdict with the margin ("missed by 12%"). */
  readonly verdict: string;
}

/** Everything one run measured. */
export interface BenchResults {
  readonly schemaVersion: 2;
  readonly generatedAt: string;
  readonly quick: boolean;
  readonly environment: {
    readonly node: string;
    readonly platform: string;
    readonly cpus: number;
    readonly cpuModel: string;
    readonly loadAverageStart: readonly number[];
    readonly loadAverageEnd: readonly number[];
    readonly gcExposed: boolean;
    readonly powertoolsVersion: string;
    readonly awsSdkVersion: string;
    readonly emulator: string | null;
  };
  readonly plan: Readonly<Record<string, number>>;
  /** Seconds per phase, and in total. */
  readonly timings: Readonly<Record<string, number>>;
  readonly implementations: readonly { readonly id: string; readonly label: string }[];
  /** The headline figures, one number per field, by implementation id. */
  readonly byImplementation: Readonly<Record<string, ImplementationFigures>>;
  /** The latency model's inputs: the per-request distributions, their sources, the simulation. */
  readonly latencyModel: {
    readonly sources: Readonly<Record<string, LatencySource>>;
    readonly operations: readonly OperationLatency[];
    readonly simulation: { readonly batches: number; readonly seed: number };
    readonly distribution: string;
    readonly assumptions: readonly string[];
    /** How each implementation runs a batch's records. */
    readonly schedules: Readonly<
      Record<string, { readonly concurrency: number | 'all'; readonly fifo: string; readonly basis: string }>
    >;
  };
  /** One record's requests per case, from the traced stub run (batch of 1). */
  readonly traces: Readonly<Record<string, Readonly<Record<string, readonly TracedRequest[]>>>>;
  /**
   * The requests of a whole batch of each reported shape (first deliveries, duplicates), traced
   * on the stub, for the rows with a figure modelled from them (`latencyBasis`): where a request
   * is shared by a batch's records.
   */
  readonly batchTraces?: Readonly<
    Record<
      string,
      Readonly<Record<BatchShapeName, Readonly<Record<'first' | 'duplicate', readonly TracedRequest[]>>>>
    >
  >;
  /** What a batch of 10 sends on first delivery, by implementation ("TransactWriteItems(20)"). */
  readonly batchRequests?: Readonly<Record<string, string>>;
  /** DynamoDB requests per batch, by implementation, batch shape and case, from the batch traces. */
  readonly requestsPerBatch?: Readonly<
    Record<string, Readonly<Record<BatchShapeName, Readonly<Record<'first' | 'duplicate', number>>>>>
  >;
  /**
   * What each modelled figure of `latency` comes from: one record's trace and the schedule, or
   * (where the batch shares a request between records) the batch's own trace.
   */
  readonly latencyBasis?: Readonly<
    Record<
      string,
      Readonly<
        Record<BatchShapeName, Readonly<Record<'first' | 'duplicate', 'record trace' | 'batch trace'>>>
      >
    >
  >;
  /** The hand-written baseline each toolkit row's "same calls" figures are against. */
  readonly sameCallsBaselines?: Readonly<Record<string, string | null>>;
  /** Modelled wall time per batch, by implementation, batch shape and case (first, duplicate). */
  readonly latency: Readonly<
    Record<string, Readonly<Record<BatchShapeName, Readonly<Record<'first' | 'duplicate', LatencyFigures>>>>>
  >;
  /** The price table and what the dollars assume. */
  readonly prices: Readonly<Record<string, Price>>;
  readonly costAssumptions: {
    readonly lambdaMemoryMegabytes: number;
    readonly batchSize: number;
    readonly duplicateRate: number;
    readonly sqsRequestsPerMessage: number;
    readonly lambdaDuration: string;
  };
  /** Dollars per million messages, by part, first delivery and duplicate. */
  readonly dollars: Readonly<
    Record<
      string,
      { readonly first: DollarsPerMillion; readonly duplicate: DollarsPerMillion; readonly blended: number }
    >
  >;
  /** Where write and read units come from: the formula on the stub, and whether the emulator reports ConsumedCapacity. */
  readonly capacitySource: {
    readonly units: 'formula';
    readonly emulatorReportsConsumedCapacity: boolean | null;
    readonly detail: string;
  };
  /** Init time of two identical bare bundles in the same run: their paired differences and the band. */
  readonly initNoise: {
    readonly differencesMillis: readonly number[];
    readonly bandMillis: number;
    readonly method: string;
  };
  /** Init time added to the bare handler: median of paired per-repetition differences, milliseconds. */
  readonly initAddedMillis: Readonly<Record<string, number>>;
  /** Client CPU ratio vs the same calls with its bootstrap interval. */
  readonly cpuRatioVsSameCallsInterval: Readonly<Record<string, MedianInterval>>;
  /** CPU added per batch of 10 against the same calls, at 1,769 MB (one vCPU), milliseconds. */
  readonly cpuMillisAddedPerBatch: Readonly<
    Record<string, { readonly median: number; readonly ciHigh: number }>
  >;
  /** Throughput ceilings (computed from quotas, not measured) and their inputs. */
  readonly ceilings: {
    readonly inputs: Readonly<Record<string, CeilingInput>>;
    readonly rows: readonly CeilingRow[];
    readonly hotItem: { readonly quotaBound: number; readonly serialBound: number; readonly basis: string };
  };
  /** Implementations that could not run, with the reason ("not yet available"). */
  readonly unavailable: readonly { readonly id: string; readonly label: string; readonly reason: string }[];
  readonly capacityFormula: string;
  /** Median DynamoDB requests per message (all clients), per implementation and case. */
  readonly requestsPerMessage: Readonly<Record<string, Readonly<Record<string, number>>>>;
  /** Median write units per message, per implementation and case. */
  readonly writeUnitsPerMessage: Readonly<Record<string, Readonly<Record<string, number>>>>;
  readonly cases: Readonly<Record<string, Readonly<Record<string, CaseFigures>>>>;
  readonly cpuMicrosPerRecord: Readonly<Record<string, Summary>>;
  readonly duplicateCpuMicrosPerRecord: Readonly<Record<string, Summary>>;
  readonly stubMicrosPerRecord: Readonly<Record<string, Summary>>;
  /** Median of per-repetition CPU ratios against the bare handler. */
  readonly cpuRatioVsBare: Readonly<Record<string, number>>;
  readonly cpuRatioVsBareDetail: Readonly<Record<string, RatioFigures>>;
  readonly cpuRatioVsPowertools: Readonly<Record<string, number>>;
  /** Per toolkit mode: against the hand-written handler making the same DynamoDB calls. */
  readonly cpuRatioVsSameCalls: Readonly<Record<string, RatioFigures>>;
  readonly recordsPerSecondStub: Readonly<Record<string, Summary>>;
  /** Median of per-repetition records-per-second ratios against Powertools, stub transport. */
  readonly throughputRatioVsPowertools: Readonly<Record<string, number>>;
  readonly throughputRatioVsPowertoolsDetail: Readonly<Record<string, RatioFigures>>;
  readonly throughputRatioVsBare: Readonly<Record<string, number>>;
  /** End to end on the emulator; null when the emulator could not run. */
  readonly recordsPerSecondEmulator: Readonly<Record<string, Summary>> | null;
  readonly emulatorThroughputRatioVsPowertools: Readonly<Record<string, number>> | null;
  readonly emulatorThroughputRatioVsBare: Readonly<Record<string, number>> | null;
  /** DynamoDB requests per message counted on the emulator (cross-check of the stub). */
  readonly emulatorRequestsPerMessage: Readonly<Record<string, number>> | null;
  /** Capacity units per message (first delivery) as the emulator reported them; null where it reports none. */
  readonly emulatorConsumedUnitsPerMessage: Readonly<Record<string, number | null>> | null;
  readonly emulatorError: string | null;
  /** Null when `global.gc` was not exposed. */
  readonly retainedHeapBytesPerMessage: Readonly<Record<string, Summary>> | null;
  readonly bundles: Readonly<
    Record<
      string,
      {
        readonly withSdk: { readonly minified: number; readonly gzip: number };
        readonly withoutSdk: { readonly minified: number; readonly gzip: number };
        /** Minified bytes added to the bare handler's bundle (SDK external). */
        readonly addedVsBareMinified: number;
      }
    >
  >;
  readonly initMillis: Readonly<Record<string, Summary>>;
  /** The toolkit's own runtime code: `lambda/index.ts` bundled, minified, AWS SDK external. */
  readonly runtimeBytesMinified: number;
  readonly runtimeBytesGzip: number;
  readonly runtimeFiles: readonly { readonly file: string; readonly bytes: number }[];
  readonly targets: readonly TargetResult[];
}
