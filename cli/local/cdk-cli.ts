/**
 * Runs the project's own CDK CLI (the `aws-cdk` package installed in the app's directory, as
 * `npx cdk` would) as a child process pointed at a local endpoint, with its output appended to a log file instead of the console.
 */
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { devNull } from 'node:os';
import { dirname, join } from 'node:path';
import { LocalDeployError } from './errors';
import { reportWhileWaiting } from './progress';

/** Where the CDK CLI should deploy: a local endpoint, region, account and dummy credentials. */
export interface CdkLocalTarget {
  readonly endpoint: string;
  readonly region: string;
  readonly account: string;
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
}

/** One CDK CLI invocation. */
export interface CdkRun {
  readonly args: readonly string[];
  readonly cwd: string;
  /**
   * Directory whose `aws-cdk` package runs (the app's, when `cwd` is a scratch directory).
   * @default cwd
   */
  readonly cliFrom?: string;
  readonly logFile: string;
  readonly target: CdkLocalTarget;
  /**
   * Called every few seconds while the CLI runs, with the time since it started and the last line
   * it wrote to the log (for example a stack event).
   * @default no progress
   */
  readonly onProgress?: (elapsedMillis: number, lastLine: string) => void;
}

const TAIL_LINES = 25;

/**
 * Runs `cdk <args>` and resolves with its duration. Output goes to `logFile` (appended, after a
 * header line naming the command).
 *
 * @throws LocalDeployError `CDK_COMMAND_FAILED` when the CLI cannot start or exits non-zero; the
 * message ends with the last lines of the log.
 */
export async function runCdk(run: CdkRun): Promise<number> {
  const cli = cdkCliPath(run.cliFrom ?? run.cwd);
  mkdirSync(dirname(run.logFile), { recursive: true });
  const commandLine = `cdk ${run.args.join(' ')}`;
  const logFd = openSync(run.logFile, 'a');
  const started = Date.now();
  let result: { code: number | null; error?: string };
  try {
    writeSync(
      logFd,
      `\n===== ${new Date().toISOString()} ${commandLine} (endpoint ${run.target.endpoint})\n`,
    );
    const exit = new Promise<{ code: number | null; error?: string }>((done) => {
      const child = spawn(process.execPath, [cli, ...run.args], {
        cwd: run.cwd,
        env: cdkEnv(run.target),
        stdio: ['ignore', logFd, logFd],
      });
      child.once('error', (error) => done({ code: null, error: error.message }));
      child.once('close', (code) => done({ code }));
    });
    const { onProgress } = run;
    result = onProgress
      ? await reportWhileWaiting(exit, {
          report: (elapsed) => onProgress(elapsed, lastLineOfLastRun(run.logFile)),
        })
      : await exit;
  } finally {
    closeSync(logFd);
  }
  if (result.code !== 0) {
    throw new LocalDeployError(
      'CDK_COMMAND_FAILED',
      `\`${commandLine}\` failed (${result.error ?? `exit code ${result.code}`}). Log: ${run.logFile}\n` +
        tailOfLastRun(run.logFile),
      { logFile: run.logFile },
    );
  }
  return Date.now() - started;
}

/**
 * The environment for a CDK CLI aimed at a local endpoint: the caller's environment without any
 * `AWS_*` variable (no profile, session or real credentials: nothing may reach real AWS), plus the endpoint for
 * every service (`AWS_ENDPOINT_URL`) and S3 (`AWS_ENDPOINT_URL_S3`, which the asset publisher
 * reads separately).
 */
export function cdkEnv(target: CdkLocalTarget, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(base)) {
    if (!name.startsWith('AWS_')) env[name] = value;
  }
  return {
    ...env,
    AWS_ENDPOINT_URL: target.endpoint,
    AWS_ENDPOINT_URL_S3: target.endpoint,
    AWS_REGION: target.region,
    AWS_DEFAULT_REGION: target.region,
    AWS_ACCESS_KEY_ID: target.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: target.credentials.secretAccessKey,
    // Keep the SDK away from the instance metadata service and shared config profiles.
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_CONFIG_FILE: devNull,
    AWS_SHARED_CREDENTIALS_FILE: devNull,
    CDK_DEFAULT_ACCOUNT: target.account,
    CDK_DEFAULT_REGION: target.region,
    CDK_DISABLE_CLI_TELEMETRY: 'true',
    // Plain, line-per-event output in the log.
    CI: 'true',
    FORCE_COLOR: '0',
    NO_COLOR: '1',
  };
}

/** The `aws-cdk` CLI entry point installed for the project in `cwd`. */
function cdkCliPath(cwd: string): string {
  let manifestFile: string;
  try {
    manifestFile = require.resolve('aws-cdk/package.json', { paths: [cwd, __dirname] });
  } catch {
    throw new LocalDeployError(
      'CDK_COMMAND_FAILED',
      `The CDK CLI (the \`aws-cdk\` package) is not installed in ${cwd}: run \`npm install --save-dev aws-cdk\` there.`,
    );
  }
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as {
    bin?: string | Record<string, string>;
  };
  const bin = typeof manifest.bin === 'string' ? manifest.bin : (manifest.bin?.cdk ?? 'bin/cdk');
  return join(dirname(manifestFile), bin);
}

/**
 * The display names of the stacks a `cdk deploy` left unchanged, from the lines it wrote
 * (`✅  Shop (no changes)`).
 */
export function unchangedStacks(lines: readonly string[]): string[] {
  return lines.flatMap((line) => {
    const name = /^\s*\u2705\s+(.+?) \(no changes\)\s*$/u.exec(line)?.[1];
    return name ? [name] : [];
  });
}

/** The lines the most recent run wrote to the log (after its header line). */
export function linesOfLastRun(logFile: string): string[] {
  let text = '';
  try {
    text = readFileSync(logFile, 'utf8');
  } catch {
    return [];
  }
  const lastRun = text.slice(text.lastIndexOf('\n===== ') + 1);
  return lastRun.trimEnd().split('\n').slice(1);
}

/** The last lines the most recent run wrote to the log, indented for an error message. */
function tailOfLastRun(logFile: string): string {
  return linesOfLastRun(logFile)
    .slice(-TAIL_LINES)
    .map((line) => `  | ${line}`)
    .join('\n');
}

/** The last non-blank line the most recent run wrote, trimmed to one short line. */
export function lastLineOfLastRun(logFile: string): string {
  const line =
    linesOfLastRun(logFile)
      .filter((candidate) => candidate.trim() !== '')
      .at(-1) ?? '';
  const trimmed = line.trim();
  return trimmed.length > 120 ? `${trimmed.slice(0, 117)}...` : trimmed;
}
