/**
 * The embedded local AWS emulator: installs the pinned MiniStack into a virtual environment
 * under a home directory (the repository's `.local/`, or the per-user cache of
 * `effectively-once local up`), starts it on a free loopback port, and either ties it to the
 * process that started it ({@link startLocalAws}) or leaves it running detached
 * ({@link startDetachedMiniStack}). When `AWS_ENDPOINT_URL` is set, it uses that endpoint
 * instead and starts nothing.
 *
 * The repository's harness (`scripts/local-aws/harness.ts`) wraps this with `.local/` as home.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { formatSeconds, reportWhileWaiting } from './progress';

/** The MiniStack version the project is tested against. Changing it reinstalls the venv on next use. */
export const MINISTACK_VERSION = '1.5.33';

/** Region used when neither `AWS_REGION` nor `AWS_DEFAULT_REGION` is set. */
export const DEFAULT_REGION = 'us-east-1';

/** Dummy credentials for a local emulator (it accepts any). */
export const LOCAL_CREDENTIALS = Object.freeze({ accessKeyId: 'test', secretAccessKey: 'test' });

const MIN_PYTHON: readonly [number, number] = [3, 10];
const HEALTH_PATHS = ['/_ministack/health', '/_localstack/health'] as const;
const INSTALL_HINT =
  'Install Python 3.10+ with venv and pip (Debian/Ubuntu: `apt-get install python3 python3-venv python3-pip`), ' +
  'or set AWS_ENDPOINT_URL to a running LocalStack or MiniStack container ' +
  '(for example `export AWS_ENDPOINT_URL=http://127.0.0.1:4566`).';

/** Credentials for SDK v3 clients. */
export interface LocalAwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/** A local AWS endpoint, started by the harness or given through `AWS_ENDPOINT_URL`. */
export interface LocalAws {
  /** Base URL, for example `http://127.0.0.1:41234` (no trailing slash). */
  readonly endpoint: string;
  readonly region: string;
  readonly credentials: LocalAwsCredentials;
  /** `true` when this call started MiniStack; `false` when it reused `AWS_ENDPOINT_URL`. */
  readonly started: boolean;
  /** Log file of the MiniStack this call started; `undefined` when nothing was started. */
  readonly logFile: string | undefined;
  /** Stops what this call started (by its own pid) and waits for it to exit. No-op otherwise; idempotent. */
  stop(): Promise<void>;
}

/** Options for {@link startLocalAws}. */
export interface StartLocalAwsOptions {
  /** Directory holding the emulator's `venv/` and `logs/`. */
  readonly home: string;
  /**
   * Environment to read `AWS_ENDPOINT_URL`, `AWS_REGION` and credentials from.
   * @default process.env
   */
  readonly env?: NodeJS.ProcessEnv;
  /**
   * How long to wait for a started MiniStack to become healthy. A given `AWS_ENDPOINT_URL` gets
   * at most 10 s to answer.
   * @default 30000
   */
  readonly readyTimeoutMillis?: number;
  /**
   * Progress messages (installing, started, reusing). Errors are thrown, not logged.
   * @default no output
   */
  readonly log?: (message: string) => void;
  /**
   * Start MiniStack with IAM enforced (`AUTH=true`): the Lambda functions it runs get sessions of
   * their execution roles, and a request their policies do not allow is denied, as on AWS. The
   * credentials this module hands out stay the account's root. Ignored when `AWS_ENDPOINT_URL`
   * is reused.
   * @default false
   */
  readonly enforceIam?: boolean;
}

/** Options for {@link ensureMiniStack}. */
export interface EnsureMiniStackOptions {
  /** Directory holding the emulator's `venv/` and `logs/`. */
  readonly home: string;
  /**
   * Python interpreter that creates the venv (3.10+, with venv and pip).
   * @default the first of `python3`, `python` on PATH
   */
  readonly python?: string;
  /** @default no output */
  readonly log?: (message: string) => void;
}

/** Where MiniStack was installed. */
export interface MiniStackInstallation {
  /** Python interpreter of the venv. */
  readonly python: string;
  /** The `ministack` console script. */
  readonly ministack: string;
  /** `true` when this call installed it; `false` when the stamp showed it was already there. */
  readonly installed: boolean;
}

/** Directory for MiniStack logs: `logs/` under the emulator's home. */
export function logsDir(home: string): string {
  return join(home, 'logs');
}

/**
 * Environment variables that point AWS SDKs and CLIs (and child processes) at `aws`.
 *
 * @example
 * spawn('npx', ['cdk', 'deploy'], { env: { ...process.env, ...localAwsEnv(aws) } });
 */
export function localAwsEnv(
  aws: Pick<LocalAws, 'endpoint' | 'region' | 'credentials'>,
): Record<string, string> {
  return {
    AWS_ENDPOINT_URL: aws.endpoint,
    AWS_REGION: aws.region,
    AWS_ACCESS_KEY_ID: aws.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: aws.credentials.secretAccessKey,
  };
}

/**
 * The endpoint, region and credentials of `aws`, for any SDK v3 client.
 *
 * @example
 * const sqs = new SQSClient(sdkClientConfig(aws));
 */
export function sdkClientConfig(aws: Pick<LocalAws, 'endpoint' | 'region' | 'credentials'>): {
  endpoint: string;
  region: string;
  credentials: LocalAwsCredentials;
} {
  return { endpoint: aws.endpoint, region: aws.region, credentials: { ...aws.credentials } };
}

/**
 * Installs MiniStack {@link MINISTACK_VERSION} into `<home>/venv` on first use (about 10 s), and
 * does nothing on later runs (a stamp file records the installed version). Safe to call from
 * several processes at once: installs are serialised by a lock directory.
 *
 * @throws Error naming what to install when Python 3.10+, venv or pip is missing, and the
 * `AWS_ENDPOINT_URL` alternative.
 */
export async function ensureMiniStack(options: EnsureMiniStackOptions): Promise<MiniStackInstallation> {
  const { home } = options;
  const venv = join(home, 'venv');
  const stamp = join(venv, 'ministack.stamp');
  const installation = { python: join(venv, 'bin', 'python'), ministack: join(venv, 'bin', 'ministack') };
  const wanted = `ministack==${MINISTACK_VERSION}`;
  const isInstalled = () =>
    existsSync(installation.ministack) && existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === wanted;

  if (isInstalled()) return { ...installation, installed: false };

  const releaseLock = await acquireLock(join(home, 'venv.lock'));
  try {
    if (isInstalled()) return { ...installation, installed: false };
    const python = await findPython(options.python ? [options.python] : ['python3', 'python']);
    const logFile = join(logsDir(home), `install-ministack-${timestamp()}.log`);
    mkdirSync(logsDir(home), { recursive: true });
    options.log?.(`Installing ${wanted} into ${venv} (first run only; log: ${logFile})`);
    rmSync(venv, { recursive: true, force: true });
    await run(python, ['-m', 'venv', venv], {
      logFile,
      what: `create the virtual environment ${venv}`,
      hint: INSTALL_HINT,
    });
    const pipInstall = run(
      installation.python,
      ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', wanted],
      {
        logFile,
        what: `pip install ${wanted}`,
        hint:
          'Check access to PyPI (or set PIP_INDEX_URL), or set AWS_ENDPOINT_URL to a running LocalStack ' +
          'or MiniStack container.',
      },
    );
    await reportWhileWaiting(pipInstall, {
      report: (elapsed) => options.log?.(`  still installing ${wanted} (${formatSeconds(elapsed)})`),
    });
    writeFileSync(stamp, `${wanted}\n`);
    return { ...installation, installed: true };
  } finally {
    releaseLock();
  }
}

/**
 * Gives a local AWS endpoint. With `AWS_ENDPOINT_URL` set, checks that it answers and starts
 * nothing. Otherwise installs MiniStack if needed ({@link ensureMiniStack}), starts it on a free
 * 127.0.0.1 port with its log in `<home>/logs/`, and waits for its health endpoint.
 *
 * The started emulator listens on loopback only and is stopped when `stop()` is called, when
 * this process exits (normally, on an uncaught error, on SIGINT/SIGTERM/SIGHUP), and, through
 * a watchdog on its stdin pipe, even when this process is killed with SIGKILL.
 *
 * @example
 * const aws = await startLocalAws({ log: console.log });
 * try {
 *   const ddb = new DynamoDBClient(sdkClientConfig(aws));
 *   // ...
 * } finally {
 *   await aws.stop();
 * }
 */
export async function startLocalAws(options: StartLocalAwsOptions): Promise<LocalAws> {
  const env = options.env ?? process.env;
  const readyTimeoutMillis = options.readyTimeoutMillis ?? 30_000;
  const region = env.AWS_REGION || env.AWS_DEFAULT_REGION || DEFAULT_REGION;
  const given = env.AWS_ENDPOINT_URL;

  if (given) {
    const endpoint = normaliseEndpoint(given);
    const health = await waitForEndpoint(endpoint, Math.min(readyTimeoutMillis, 10_000));
    options.log?.(`Using AWS_ENDPOINT_URL=${endpoint} (${health}); starting nothing.`);
    return {
      endpoint,
      region,
      credentials: {
        accessKeyId: env.AWS_ACCESS_KEY_ID || LOCAL_CREDENTIALS.accessKeyId,
        secretAccessKey: env.AWS_SECRET_ACCESS_KEY || LOCAL_CREDENTIALS.secretAccessKey,
      },
      started: false,
      logFile: undefined,
      stop: async () => {},
    };
  }

  const { home } = options;
  const installation = await ensureMiniStack({ home, ...(options.log ? { log: options.log } : {}) });
  mkdirSync(logsDir(home), { recursive: true });

  // A port picked by probing can be taken before MiniStack binds it; retry with another one.
  let lastError: unknown;
  for (let attempt = 1; attempt <= 3; attempt++) {
    const port = await freeLoopbackPort();
    const logFile = join(logsDir(home), `ministack-${timestamp()}-${port}.log`);
    try {
      const aws = await launch({
        installation,
        home,
        port,
        region,
        logFile,
        readyTimeoutMillis,
        enforceIam: options.enforceIam ?? false,
      });
      options.log?.(
        `Started MiniStack ${MINISTACK_VERSION} at ${aws.endpoint}${options.enforceIam ? ' with IAM enforced' : ''} (log: ${logFile})`,
      );
      return aws;
    } catch (error) {
      lastError = error;
      if (!(error instanceof PortTakenError)) throw error;
    }
  }
  throw lastError;
}

class PortTakenError extends Error {
  override readonly name = 'PortTakenError';
}

/**
 * Runs in the venv's Python between node and MiniStack. It leads its own process group
 * (spawned detached), so MiniStack and the Lambda workers it forks can be stopped as one
 * group. It stops them on SIGTERM/SIGINT/SIGHUP and, unless started with `--detached`, when
 * node closes its stdin (node exited, even by SIGKILL).
 */
const WATCHDOG = `# Written by effectively-once (cli/local/emulator.ts); see WATCHDOG there.
import os, signal, subprocess, sys, threading, time
command = sys.argv[1:]
detached = command[:1] == ['--detached']
if detached:
    command = command[1:]
ministack = subprocess.Popen(command, stdin=subprocess.DEVNULL)
stopping = threading.Event()
def watch_parent():
    try:
        while os.read(0, 4096):
            pass
    except OSError:
        pass
    stopping.set()
if not detached:
    threading.Thread(target=watch_parent, daemon=True).start()
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(s, lambda *_: stopping.set())
while not stopping.is_set() and ministack.poll() is None:
    stopping.wait(0.2)
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
os.killpg(0, signal.SIGTERM)
deadline = time.monotonic() + 5
while ministack.poll() is None and time.monotonic() < deadline:
    time.sleep(0.05)
if ministack.poll() is None:
    os.killpg(0, signal.SIGKILL)
sys.exit(ministack.returncode if ministack.returncode >= 0 else 128 - ministack.returncode)
`;

/** The watchdog script of the emulators started with `home`; its path is in their command line. */
export function watchdogFile(home: string): string {
  return join(home, 'ministack-watchdog.py');
}

/** Writes the watchdog script to the home directory (atomically, so concurrent starts never read half a file). */
function writeWatchdog(home: string): string {
  const file = watchdogFile(home);
  if (readIfExists(file) !== WATCHDOG) {
    const temporary = `${file}.${process.pid}.tmp`;
    writeFileSync(temporary, WATCHDOG);
    renameSync(temporary, file);
  }
  return file;
}

interface LaunchSettings {
  readonly installation: MiniStackInstallation;
  readonly home: string;
  readonly port: number;
  readonly region: string;
  readonly logFile: string;
  readonly readyTimeoutMillis: number;
  readonly enforceIam: boolean;
}

/**
 * Spawns the watchdog and MiniStack under it, leading their own process group, with output in
 * `logFile`. Attached, the watchdog watches a stdin pipe from this process; detached, it has no
 * stdin and runs until signalled.
 */
function spawnWatchdog(
  settings: Omit<LaunchSettings, 'readyTimeoutMillis'> & {
    readonly endpoint: string;
    readonly detached: boolean;
  },
): { readonly child: ChildProcess; readonly pid: number } {
  const { installation, home, port, region, endpoint, logFile, enforceIam, detached } = settings;
  const watchdog = writeWatchdog(home);
  const logFd = openSync(logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(
      installation.python,
      [watchdog, ...(detached ? ['--detached'] : []), installation.ministack],
      {
        // Anything MiniStack writes relative to its working directory lands next to its logs.
        cwd: logsDir(home),
        detached: true,
        stdio: [detached ? 'ignore' : 'pipe', logFd, logFd],
        env: ministackEnv(port, region, endpoint, enforceIam),
      },
    );
  } finally {
    closeSync(logFd);
  }
  if (child.pid === undefined) {
    throw new Error(`Could not start MiniStack with ${installation.python}; see ${logFile}`);
  }
  return { child, pid: child.pid };
}

async function launch(settings: LaunchSettings): Promise<LocalAws> {
  const { port, region, logFile, readyTimeoutMillis } = settings;
  const endpoint = `http://127.0.0.1:${port}`;
  const { child, pid } = spawnWatchdog({ ...settings, endpoint, detached: false });

  let exited = false;
  const exit = new Promise<void>((done) => {
    child.once('exit', () => {
      exited = true;
      untrack(emulator);
      done();
    });
  });
  // The pipe only signals liveness; writes never happen, so an EPIPE here is harmless.
  child.stdin?.on('error', () => {});

  const emulator: RunningEmulator = {
    killNow: () => {
      // The group id is the watchdog's pid, which stays ours until node reaps it ('exit').
      if (!exited) signalGroup(pid, 'SIGKILL');
    },
  };
  track(emulator);

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      child.stdin?.destroy();
      if (!exited) child.kill('SIGTERM');
      const timer = setTimeout(emulator.killNow, 10_000);
      await exit;
      clearTimeout(timer);
    })();
    return stopping;
  };

  try {
    await waitForHealth(endpoint, readyTimeoutMillis, () => exited);
  } catch (error) {
    await stop();
    const log = tail(logFile);
    if (/already in use/i.test(log))
      throw new PortTakenError(`Port ${port} was taken before MiniStack bound it`);
    throw new Error(
      `MiniStack did not become healthy at ${endpoint}/_ministack/health: ${(error as Error).message}.\n` +
        `Log: ${logFile}\n${log}`,
    );
  }

  return {
    endpoint,
    region,
    credentials: { ...LOCAL_CREDENTIALS },
    started: true,
    logFile,
    stop,
  };
}

function ministackEnv(
  port: number,
  region: string,
  endpoint: string,
  enforceIam: boolean,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  // Pass through only what a process needs to run; drop AWS_* and proxy settings of the caller.
  for (const key of ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TMPDIR', 'TZ', 'USER']) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  return {
    ...env,
    GATEWAY_PORT: String(port),
    // Loopback only: the gateway, and every optional side listener MiniStack can open.
    BIND_HOST: '127.0.0.1',
    IOT_MTLS_ENABLED: '0',
    SFTP_ENABLED: '0',
    SFTP_HOST: '127.0.0.1',
    USE_SSL: '0',
    PERSIST_STATE: '0',
    S3_PERSIST: '0',
    MINISTACK_REGION: region,
    AWS_REGION: region,
    AWS_DEFAULT_REGION: region,
    AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
    // MiniStack injects this into the Lambdas it runs, so their SDK clients reach it over loopback.
    AWS_ENDPOINT_URL: endpoint,
    PYTHONUNBUFFERED: '1',
    // IAM evaluation of every request signed by a non-root key (the Lambdas' role sessions).
    AUTH: enforceIam ? 'true' : 'false',
  };
}

interface RunningEmulator {
  killNow(): void;
}

const running = new Set<RunningEmulator>();
const EXIT_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

function killAll(): void {
  for (const emulator of running) emulator.killNow();
}

function onSignal(signal: NodeJS.Signals): void {
  // Another handler owns this signal and is expected to call stop() for a clean shutdown; the
  // 'exit' hook and the watchdog's stdin pipe remain the backstop.
  if (process.listenerCount(signal) > 1) return;
  // Nobody else handles it: clean up, then keep the signal's default meaning (terminate).
  killAll();
  removeHooks();
  process.kill(process.pid, signal);
}

function installHooks(): void {
  process.on('exit', killAll);
  for (const signal of EXIT_SIGNALS) process.on(signal, onSignal);
}

function removeHooks(): void {
  process.off('exit', killAll);
  for (const signal of EXIT_SIGNALS) process.off(signal, onSignal);
}

function track(emulator: RunningEmulator): void {
  if (running.size === 0) installHooks();
  running.add(emulator);
}

function untrack(emulator: RunningEmulator): void {
  running.delete(emulator);
  if (running.size === 0) removeHooks();
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

async function waitForHealth(
  endpoint: string,
  timeoutMillis: number,
  hasExited: () => boolean,
): Promise<void> {
  const deadline = Date.now() + timeoutMillis;
  let last = 'no answer yet';
  while (Date.now() < deadline) {
    if (hasExited()) throw new Error('the process exited');
    let response: Response | undefined;
    try {
      response = await fetch(`${endpoint}/_ministack/health`, { signal: AbortSignal.timeout(2_000) });
    } catch (error) {
      last = describeFetchError(error);
    }
    if (response?.ok) {
      const body = (await response.json().catch(() => ({}))) as { version?: unknown };
      if (body.version === MINISTACK_VERSION) return;
      throw new Error(
        `expected MiniStack ${MINISTACK_VERSION} to answer, got version ${String(body.version)}`,
      );
    }
    if (response) {
      await response.body?.cancel();
      last = `HTTP ${response.status}`;
    }
    await delay(100);
  }
  throw new Error(`timed out after ${timeoutMillis} ms (${last})`);
}

/** Resolves with a description of the endpoint's health once it answers any HTTP request. */
async function waitForEndpoint(endpoint: string, timeoutMillis: number): Promise<string> {
  const deadline = Date.now() + timeoutMillis;
  let last = 'no answer';
  do {
    let answered = false;
    for (const path of HEALTH_PATHS) {
      try {
        const response = await fetch(`${endpoint}${path}`, { signal: AbortSignal.timeout(2_000) });
        await response.arrayBuffer();
        answered = true;
        if (response.ok) return `healthy at ${path}`;
        last = `HTTP ${response.status} at ${path}`;
      } catch (error) {
        last = describeFetchError(error);
      }
    }
    // Some AWS-compatible endpoints have no health path; answering HTTP is enough.
    if (answered) return `answers HTTP, no health endpoint (${last})`;
    await delay(200);
  } while (Date.now() < deadline);
  throw new Error(
    `AWS_ENDPOINT_URL=${endpoint} does not answer (${last}). Start that emulator, or unset ` +
      'AWS_ENDPOINT_URL to let the harness start MiniStack on a loopback port.',
  );
}

/** `value` as an http(s) URL without trailing slashes, or `undefined` when it is not one. */
export function httpUrl(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  return url.toString().replace(/\/+$/, '');
}

function normaliseEndpoint(value: string): string {
  const url = httpUrl(value);
  if (url === undefined) throw new Error(`Expected AWS_ENDPOINT_URL to be an http(s) URL, got \`${value}\``);
  return url;
}

function describeFetchError(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
}

/** Finds a port free on 127.0.0.1 by letting the kernel pick one. */
function freeLoopbackPort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.unref();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') done(address.port);
        else fail(new Error('Could not pick a free loopback port'));
      });
    });
  });
}

async function findPython(candidates: readonly string[]): Promise<string> {
  const problems: string[] = [];
  for (const candidate of candidates) {
    const probe = await capture(candidate, [
      '-c',
      'import sys, venv, ensurepip; print("%d.%d" % sys.version_info[:2])',
    ]);
    if (probe.error) {
      problems.push(`${candidate}: ${probe.error}`);
      continue;
    }
    if (probe.code !== 0) {
      const missing = /No module named '?(\w+)/.exec(probe.output)?.[1];
      problems.push(`${candidate}: ${missing ? `module ${missing} is missing` : probe.output.trim()}`);
      continue;
    }
    const [major = 0, minor = 0] = probe.output.trim().split('.').map(Number);
    if (major > MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor >= MIN_PYTHON[1])) return candidate;
    problems.push(`${candidate}: version ${major}.${minor} is older than ${MIN_PYTHON.join('.')}`);
  }
  throw new Error(`Found no usable Python for MiniStack (${problems.join('; ')}). ${INSTALL_HINT}`);
}

function capture(
  command: string,
  args: readonly string[],
): Promise<{ code: number | null; output: string; error?: string }> {
  return new Promise((done) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once('error', (error: NodeJS.ErrnoException) =>
      done({ code: null, output, error: error.code === 'ENOENT' ? 'not found' : error.message }),
    );
    child.once('close', (code) => done({ code, output }));
  });
}

async function run(
  command: string,
  args: readonly string[],
  { logFile, what, hint }: { logFile: string; what: string; hint: string },
): Promise<void> {
  const logFd = openSync(logFile, 'a');
  let result: { code: number | null; error?: string };
  try {
    result = await new Promise((done) => {
      const child = spawn(command, args, { stdio: ['ignore', logFd, logFd] });
      child.once('error', (error) => done({ code: null, error: error.message }));
      child.once('close', (code) => done({ code }));
    });
  } finally {
    closeSync(logFd);
  }
  if (result.code !== 0) {
    throw new Error(
      `Could not ${what} (${result.error ?? `exit code ${result.code}`}). ${hint}\n` +
        `Log: ${logFile}\n${tail(logFile)}`,
    );
  }
}

/** Takes a lock directory; waits while another live process holds it, breaks it if the holder died. */
async function acquireLock(dir: string): Promise<() => void> {
  mkdirSync(resolve(dir, '..'), { recursive: true });
  const deadline = Date.now() + 10 * 60_000;
  for (;;) {
    try {
      mkdirSync(dir);
      writeFileSync(join(dir, 'pid'), String(process.pid));
      return () => rmSync(dir, { recursive: true, force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = Number(readIfExists(join(dir, 'pid')));
    if (holder > 0 && !isAlive(holder)) {
      rmSync(dir, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${dir} (held by pid ${holder || '?'})`);
    await delay(250);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readIfExists(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

function tail(file: string, lines = 20): string {
  return readIfExists(file).trimEnd().split('\n').slice(-lines).join('\n');
}

function timestamp(): string {
  return new Date().toISOString().replace(/[:.]/g, '-');
}

function delay(millis: number): Promise<void> {
  return new Promise((done) => setTimeout(done, millis));
}

/** What `effectively-once local up` records about the emulator it started, in {@link emulatorStateFile}. */
export interface EmulatorState {
  /** Pid of the watchdog, which leads the emulator's process group. */
  readonly pid: number;
  readonly port: number;
  /** For example `http://127.0.0.1:41234`. */
  readonly endpoint: string;
  readonly region: string;
  /** The MiniStack version it runs ({@link MINISTACK_VERSION} when it was started). */
  readonly version: string;
  readonly logFile: string;
  /** ISO 8601. */
  readonly startedAt: string;
  /** The CDK app directory whose `local up` started it (absent in records of older versions). */
  readonly appDir?: string;
}

/**
 * The per-user home of the emulator `effectively-once local up` starts:
 * `$XDG_CACHE_HOME/effectively-once`, or `~/.cache/effectively-once`.
 */
export function userCacheDir(env: NodeJS.ProcessEnv = process.env, home: string = homedir()): string {
  const cache =
    env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : join(home, '.cache');
  return join(cache, 'effectively-once');
}

/** The state file of a detached emulator: `emulator.json` in its home. */
export function emulatorStateFile(home: string): string {
  return join(home, 'emulator.json');
}

/**
 * The recorded state of the detached emulator, or `undefined` when there is none. A file that is
 * not a state record (hand-edited, half-written by a crash) reads as none.
 */
export function readEmulatorState(home: string): EmulatorState | undefined {
  const text = readIfExists(emulatorStateFile(home));
  if (text === '') return undefined;
  let value: Partial<EmulatorState>;
  try {
    value = JSON.parse(text) as Partial<EmulatorState>;
  } catch {
    return undefined;
  }
  const isState =
    Number.isInteger(value.pid) &&
    (value.pid ?? 0) > 0 &&
    Number.isInteger(value.port) &&
    typeof value.endpoint === 'string' &&
    typeof value.region === 'string' &&
    typeof value.version === 'string' &&
    typeof value.logFile === 'string' &&
    typeof value.startedAt === 'string';
  return isState ? (value as EmulatorState) : undefined;
}

/** Records `state` (atomically: a concurrent reader sees the old file or the new one). */
export function writeEmulatorState(home: string, state: EmulatorState): void {
  mkdirSync(home, { recursive: true });
  const file = emulatorStateFile(home);
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(state, null, 2)}\n`);
  renameSync(temporary, file);
}

/** Forgets the detached emulator. */
export function removeEmulatorState(home: string): void {
  rmSync(emulatorStateFile(home), { force: true });
}

/**
 * `true` when the recorded emulator still runs: its pid is alive and is the watchdog (its command
 * line, where the system shows it), or its health endpoint answers with the recorded version. A
 * pid reused by another process is neither; a busy emulator slow to answer is still the watchdog.
 * Given the `home` it was started with, the watchdog must be that home's: a pid reused by the
 * emulator of another app (another home) is not this one.
 */
export async function isEmulatorRunning(state: EmulatorState, home?: string): Promise<boolean> {
  if (!isAlive(state.pid)) return false;
  const commandLine = commandLineOf(state.pid);
  if (commandLine.includes(home === undefined ? 'ministack-watchdog.py' : watchdogFile(home))) return true;
  // A watchdog of another home: the pid was reused by someone else's emulator.
  if (commandLine.includes('ministack-watchdog.py')) return false;
  try {
    const response = await fetch(`${state.endpoint}/_ministack/health`, {
      signal: AbortSignal.timeout(2_000),
    });
    const body = (await response.json().catch(() => ({}))) as { version?: unknown };
    return response.ok && body.version === state.version;
  } catch {
    return false;
  }
}

/** The command line of a process, `''` where the system does not show it (no `/proc`). */
function commandLineOf(pid: number): string {
  return readIfExists(`/proc/${pid}/cmdline`).replace(/\0/g, ' ');
}

/**
 * The recorded emulator when it runs, else a newly started one ({@link startDetachedMiniStack}).
 * Serialised by a lock in `home`, so two `local up` at once start one emulator.
 */
export async function ensureDetachedMiniStack(
  options: StartDetachedOptions,
): Promise<{ readonly state: EmulatorState; readonly started: boolean }> {
  mkdirSync(options.home, { recursive: true });
  const release = await acquireLock(join(options.home, 'emulator.lock'));
  try {
    const recorded = readEmulatorState(options.home);
    if (recorded && (await isEmulatorRunning(recorded, options.home)))
      return { state: recorded, started: false };
    return { state: await startDetachedMiniStack(options), started: true };
  } finally {
    release();
  }
}

/** Options for {@link startDetachedMiniStack}. */
export interface StartDetachedOptions {
  /** Directory holding the emulator's `logs/` and state file (and `venv/`, unless `installHome` is given). */
  readonly home: string;
  /**
   * Directory holding the MiniStack install (`venv/`), which several homes may share.
   * @default home
   */
  readonly installHome?: string;
  /**
   * The CDK app directory to record as the emulator's owner.
   * @default none recorded
   */
  readonly appDir?: string;
  /** @default 'us-east-1' ({@link DEFAULT_REGION}) */
  readonly region?: string;
  /** @default 30000 */
  readonly readyTimeoutMillis?: number;
  /** @default no output */
  readonly log?: (message: string) => void;
}

/**
 * Installs MiniStack if needed, starts it on a free 127.0.0.1 port in its own session (it outlives
 * this process, and a closed terminal does not stop it), waits until it is healthy and records it
 * in the state file. Stop it with {@link stopDetachedMiniStack}.
 *
 * @throws Error when it cannot be installed or does not become healthy (it is stopped again).
 */
export async function startDetachedMiniStack(options: StartDetachedOptions): Promise<EmulatorState> {
  const { home } = options;
  const region = options.region ?? DEFAULT_REGION;
  const readyTimeoutMillis = options.readyTimeoutMillis ?? 30_000;
  const installation = await ensureMiniStack({
    home: options.installHome ?? home,
    ...(options.log ? { log: options.log } : {}),
  });
  mkdirSync(logsDir(home), { recursive: true });
  let lastError: unknown;
  for (let attempt = 1; attempt <= 3; attempt++) {
    const port = await freeLoopbackPort();
    const endpoint = `http://127.0.0.1:${port}`;
    const logFile = join(logsDir(home), `ministack-${timestamp()}-${port}.log`);
    const { child, pid } = spawnWatchdog({
      installation,
      home,
      port,
      region,
      endpoint,
      logFile,
      enforceIam: false,
      detached: true,
    });
    let exited = false;
    child.once('exit', () => {
      exited = true;
    });
    // Do not keep this process alive for the emulator: it runs on after `local up` exits.
    child.unref();
    try {
      await waitForHealth(endpoint, readyTimeoutMillis, () => exited);
    } catch (error) {
      signalGroup(pid, 'SIGKILL');
      const log = tail(logFile);
      if (/already in use/i.test(log)) {
        lastError = new Error(`Port ${port} was taken before MiniStack bound it`);
        continue;
      }
      throw new Error(
        `MiniStack did not become healthy at ${endpoint}/_ministack/health: ${(error as Error).message}.\n` +
          `Log: ${logFile}\n${log}`,
      );
    }
    const state: EmulatorState = {
      pid,
      port,
      endpoint,
      region,
      version: MINISTACK_VERSION,
      logFile,
      startedAt: new Date().toISOString(),
      ...(options.appDir ? { appDir: options.appDir } : {}),
    };
    writeEmulatorState(home, state);
    return state;
  }
  throw lastError;
}

/** How {@link stopDetachedMiniStack} ended. */
export type StopDetachedOutcome = 'stopped' | 'not-running';

/**
 * Stops the emulator recorded in `home` (its whole process group, by the recorded pid, and only
 * when that pid is still the emulator) and removes the state file.
 *
 * @example
 * const outcome = await stopDetachedMiniStack({ home: userCacheDir() }); // 'stopped'
 */
export async function stopDetachedMiniStack(options: {
  readonly home: string;
  /** @default 15000 */
  readonly timeoutMillis?: number;
}): Promise<StopDetachedOutcome> {
  const state = readEmulatorState(options.home);
  if (state === undefined || !(await isEmulatorRunning(state, options.home))) {
    removeEmulatorState(options.home);
    return 'not-running';
  }
  signalGroup(state.pid, 'SIGTERM');
  const deadline = Date.now() + (options.timeoutMillis ?? 15_000);
  while (isAlive(state.pid) && Date.now() < deadline) await delay(100);
  if (isAlive(state.pid)) signalGroup(state.pid, 'SIGKILL');
  removeEmulatorState(options.home);
  return 'stopped';
}
