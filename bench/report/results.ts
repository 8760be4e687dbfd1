/** The shape of `bench/results/latest.json`, and the targets it is judged against. */
import type { Summary } from '../stats';

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

/** One target of DESIGN.md and how this run did against it. */
export interface TargetResult {
  readonly id: 'request-floor' | 'cpu-vs-bare' | 'throughput-vs-powertools' | 'runtime-size';
  readonly subject: string;
  readonly description: string;
  /** What was measured, in the unit of `limit`. */
  readonly value: number | null;
  readonly limit: number;
  readonly comparison: 'at-most' | 'at-least' | 'equal';
  readonly met: boolean | null;
  /** Human-readable verdict with the margin ("missed by 12%"). */
  readonly verdict: string;
}

/** Everything one run measured. */
export interface BenchResults {
  readonly schemaVersion: 1;
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
