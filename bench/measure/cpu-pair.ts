/**
 * CPU of a toolkit row against its same-calls baseline, in a process of their own. A Lambda
 * function's process runs one handler configuration: its code's call sites see only that mode's
 * shapes, and its heap holds only that handler's objects. In the bench's shared run every
 * implementation's rig lives in one process, so the toolkit's shared functions (the batch
 * engine, the store) see every mode's shapes and the GC works on every rig's heap; at a full run
 * that moved the same-calls ratio of one mode by 0.2 and more. Here the pair alone is measured
 * with the same method (`measureCpu`: warm containers, turns in alternating order, the stub's
 * cost calibrated and subtracted), and the parent reads the samples from standard output.
 *
 * The process runs the code as Lambda runs a handler the construct deploys: one esbuild bundle,
 * minified, the AWS SDK inside, with its source map and `--enable-source-maps`
 * (`lib/consumer-function.ts`), the toolkit and its mirror alike. Until 2026-12-02 it ran the
 * TypeScript sources under tsx, whose loader wraps every function the toolkit creates, closures
 * included, in a `__name` call and reads every import through a getter: a cost per function and
 * per call that no deployed handler pays, and that fell on the toolkit's many small functions
 * far more than on the mirror's few (atomic's ratio read about 0.07 higher under tsx).
 *
 * Usage (from the bench, through {@link measurePairInOwnProcess}), on the bundle:
 * `node --enable-source-maps --expose-gc <bundle> <toolkit id> <baseline id> <plan JSON> <run>`
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { buildSync } from 'esbuild';
import { IMPLEMENTATIONS } from '../implementations';
import type { MirrorFingerprint } from '../implementations/hand-written';
import { DEFAULT_TABLES } from '../workload';
import { type CpuPlan, type CpuSample, createCpuRig, measureCpu } from './cpu';

/** A pair's plan: `measureCpu`'s sizes and how many repetitions. */
export interface PairPlan extends CpuPlan {
  readonly repetitions: number;
  /** What the hand-written baseline fingerprints (`body` unless set). */
  readonly mirrorFingerprint?: MirrorFingerprint;
}

/** Each implementation's samples, one per repetition, in repetition order. */
export type PairSamples = Readonly<Record<string, readonly CpuSample[]>>;

/** Measures `ids` (a toolkit row and its baseline) in this process. */
async function measurePair(ids: readonly string[], plan: PairPlan, run: string): Promise<PairSamples> {
  const rigs = ids.map((id) => {
    const implementation = IMPLEMENTATIONS.find((candidate) => candidate.id === id);
    if (!implementation) throw new Error(`No implementation ${id}`);
    return createCpuRig(implementation, DEFAULT_TABLES, { mirrorFingerprint: plan.mirrorFingerprint });
  });
  const samples: Record<string, CpuSample[]> = Object.fromEntries(ids.map((id) => [id, []]));
  for (let repetition = 0; repetition < plan.repetitions; repetition++) {
    const round = await measureCpu(rigs, plan, `${run}-p${repetition}`, repetition);
    for (const [id, sample] of round) samples[id]!.push(sample);
  }
  return samples;
}

/**
 * Where the bundle of this file goes (under `node_modules`, out of the tree), and its source: read
 * from the repository root (`npm run` runs there), since this module may itself run from a bundle
 * (`npm run bench:profile -- --bundled`).
 */
const BUNDLE = join(process.cwd(), 'node_modules/.cache/bench-cpu-pair/cpu-pair.js');
const SOURCE = join(process.cwd(), 'bench/measure/cpu-pair.ts');
let bundled = false;

/**
 * Bundles this file once per process, with the options the construct bundles a handler with
 * (`lib/consumer-function.ts`: CommonJS, minified, source map, no external modules).
 */
function bundlePair(): string {
  if (!bundled) {
    buildSync({
      entryPoints: [SOURCE],
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'cjs',
      minify: true,
      sourcemap: true,
      outfile: BUNDLE,
      logLevel: 'warning',
    });
    bundled = true;
  }
  return BUNDLE;
}

/**
 * Runs this file's bundle in a child process (as Lambda runs the construct's bundle, with
 * `--expose-gc` for the bench's collections) for the pair `toolkitId`, `baselineId`, and
 * returns its samples.
 */
export function measurePairInOwnProcess(
  toolkitId: string,
  baselineId: string,
  plan: PairPlan,
  run: string,
): Promise<PairSamples> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--enable-source-maps', '--expose-gc', bundlePair(), toolkitId, baselineId, JSON.stringify(plan), run],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) {
        reject(new Error(`CPU pair ${toolkitId} / ${baselineId} exited with code ${code}`));
        return;
      }
      resolve(JSON.parse(output) as PairSamples);
    });
  });
}

if (require.main === module) {
  const [toolkitId, baselineId, planJson, run] = process.argv.slice(2);
  if (!toolkitId || !baselineId || !planJson || !run) {
    throw new Error('Usage: cpu-pair.ts <toolkit id> <baseline id> <plan JSON> <run>');
  }
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  void measurePair([toolkitId, baselineId], JSON.parse(planJson) as PairPlan, run).then((samples) => {
    process.stdout.write(JSON.stringify(samples));
  });
}
