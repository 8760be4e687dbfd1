/**
 * `npm run proof`: runs the reliability suite's three topologies (SQS, streams, the chain) at a
 * stated size, collects each one's proof record (`scripts/support/proof-record.ts`,
 * written by `test/support/proof-reporter.ts`), and writes `docs/reliability.json`, and from it
 * `docs/reliability.md` and `docs/reliability.svg` (`scripts/proof/report.ts`), with the machine,
 * its load, the commit and the run time. A run with a failed test, a duplicate effect or a lost
 * message writes nothing and exits 1. `--render` only renders the page and the chart again from
 * the JSON (after a change to their layout).
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CHART_FILE, type ReliabilityReport, renderMarkdown, renderSvg, violationsOf } from './proof/report';
import { exitWhenDone, parseOrExit } from './support/command-line';
import { PROOF_DIR_VARIABLE, type ProofRecord } from './support/proof-record';

const root = resolve(__dirname, '..');

/** The topologies' test files and the record each leaves, in run order. */
const TOPOLOGIES = [
  ['sqs', 'test/reliability/fault-injection.test.ts'],
  ['streams', 'test/reliability/stream-simulation.test.ts'],
  ['chain', 'test/reliability/chain-simulation.test.ts'],
] as const;

const USAGE = `Usage: npm run proof [-- --messages <n> --seeds <n> --out <directory> | --render]

  --messages <n>    messages per seed, in every topology (default 10000)
  --seeds <n>       seeds per topology, seeds 1..n (default 5: every SQS mode, and the streams'
                    four Kinesis and DynamoDB Streams profiles and Kafka in atomic mode)
  --out <directory> where reliability.json, .md and .svg are written (default docs)
  --render          run nothing: render reliability.md and .svg again from the reliability.json
                    in --out (after a change to the page's layout)
  -h, --help        this text`;

interface ProofOptions {
  readonly messages: number;
  readonly seeds: number;
  readonly out: string;
  readonly render: boolean;
}

function positiveInteger(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(parsed) || parsed < 1)
    throw new Error(`Expected \`${name}\` to be a positive integer, got \`${value}\``);
  return parsed;
}

function parseProofArgs(argv: readonly string[]): ProofOptions | undefined {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      messages: { type: 'string' },
      seeds: { type: 'string' },
      out: { type: 'string' },
      render: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return undefined;
  return {
    messages: positiveInteger('--messages', values.messages, 10_000),
    seeds: positiveInteger('--seeds', values.seeds, 5),
    out: values.out ?? 'docs',
    render: values.render ?? false,
  };
}

/** The environment of the test run: this one without other `RELIABILITY_*` settings, plus the size. */
function runEnvironment(options: ProofOptions, proofDirectory: string): NodeJS.ProcessEnv {
  const inherited = Object.entries(process.env).filter(([name]) => !name.startsWith('RELIABILITY_'));
  return {
    ...Object.fromEntries(inherited),
    RELIABILITY_MESSAGES: String(options.messages),
    RELIABILITY_SEEDS: String(options.seeds),
    [PROOF_DIR_VARIABLE]: proofDirectory,
  };
}

function runTests(env: NodeJS.ProcessEnv): Promise<number | null> {
  const files = TOPOLOGIES.map(([, file]) => file);
  return new Promise((done, fail) => {
    const child = spawn('npx', ['vitest', 'run', '--project', 'reliability', ...files], {
      cwd: root,
      env,
      stdio: 'inherit',
    });
    child.once('error', fail);
    child.once('close', done);
  });
}

const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();

/** The command that reproduces a run of `options`, as a reader types it. */
function commandOf(options: ProofOptions): string {
  return `npm run proof -- --messages ${options.messages} --seeds ${options.seeds}`;
}

async function runProof(options: ProofOptions): Promise<boolean> {
  const commit = git('rev-parse', 'HEAD');
  const uncommittedChanges = git('status', '--porcelain') !== '';
  const loadAverageStart = loadavg();
  const startedAt = new Date();
  const proofDirectory = mkdtempSync(join(tmpdir(), 'eo-proof-'));
  try {
    const code = await runTests(runEnvironment(options, proofDirectory));
    const runSeconds = (Date.now() - startedAt.getTime()) / 1000;
    if (code !== 0) {
      console.error(`proof: the reliability tests failed (exit code ${code}); no report written`);
      return false;
    }
    // A file that ran no seed leaves no record, and vitest passes a file whose tests were all skipped.
    const missing = TOPOLOGIES.filter(([topology]) => !existsSync(join(proofDirectory, `${topology}.json`)));
    if (missing.length > 0) {
      console.error(
        `proof: no proof record from ${missing.map(([, file]) => file).join(', ')}; no report written`,
      );
      return false;
    }
    const topologies = TOPOLOGIES.map(([topology]): ProofRecord => {
      const text = readFileSync(join(proofDirectory, `${topology}.json`), 'utf8');
      return JSON.parse(text) as ProofRecord;
    });
    const report: ReliabilityReport = {
      schemaVersion: 1,
      command: commandOf(options),
      messagesPerSeed: options.messages,
      seedsPerTopology: options.seeds,
      startedAt: startedAt.toISOString(),
      runSeconds: Math.round(runSeconds),
      commit,
      uncommittedChanges,
      machine: {
        cpuModel: cpus()[0]?.model ?? 'unknown',
        cpus: cpus().length,
        platform: `${process.platform} ${process.arch}`,
        node: process.version,
        loadAverageStart,
        loadAverageEnd: loadavg(),
      },
      topologies,
    };
    const violations = violationsOf(report);
    if (violations.length > 0) {
      console.error(`proof: the oracle counted violations; no report written\n${violations.join('\n')}`);
      return false;
    }
    const out = resolve(root, options.out);
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, 'reliability.json'), `${JSON.stringify(report, null, 2)}\n`);
    writePages(out, report);
    console.log(
      `proof: wrote ${relative(root, join(out, 'reliability'))}.{json,md,svg} (${report.runSeconds} s, ${commandOf(options)})`,
    );
    return true;
  } finally {
    rmSync(proofDirectory, { recursive: true, force: true });
  }
}

/** Writes the page and the chart of `report` into `out`. */
function writePages(out: string, report: ReliabilityReport): void {
  writeFileSync(join(out, 'reliability.md'), renderMarkdown(report));
  writeFileSync(join(out, CHART_FILE), renderSvg(report));
}

/** Renders the page and the chart again from the JSON a run wrote, without running anything. */
async function renderAgain(options: ProofOptions): Promise<boolean> {
  const out = resolve(root, options.out);
  const report = JSON.parse(readFileSync(join(out, 'reliability.json'), 'utf8')) as ReliabilityReport;
  writePages(out, report);
  console.log(`proof: rendered ${relative(root, join(out, 'reliability'))}.{md,svg} from reliability.json`);
  return true;
}

const options = parseOrExit(parseProofArgs, USAGE);
exitWhenDone(options.render ? renderAgain(options) : runProof(options));
