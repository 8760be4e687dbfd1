import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { retainedResources } from '../../../../cli/local/cloud-assembly';
import {
  chooseEndpoint,
  describeRetained,
  exportLine,
  parseLocalArgs,
  runLocal,
} from '../../../../cli/local/command';
import { dockerFallbackHint } from '../../../../cli/local/deploy';
import {
  type EmulatorState,
  emulatorStateFile,
  isEmulatorRunning,
  readEmulatorState,
  stopDetachedMiniStack,
  userCacheDir,
  writeEmulatorState,
} from '../../../../cli/local/emulator';
import { reportWhileWaiting } from '../../../../cli/local/progress';
import { capturedLocalIo } from '../../../support/cli';

const dirs: string[] = [];
function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'eo-local-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  vi.useRealTimers();
});

/** A pid no process has: above the kernel's pid_max default range. */
const DEAD_PID = 4_194_304 + 17;

const recorded: EmulatorState = {
  pid: DEAD_PID,
  port: 41234,
  endpoint: 'http://127.0.0.1:41234',
  region: 'eu-west-1',
  version: '1.5.33',
  logFile: '/tmp/ministack.log',
  startedAt: '2026-12-01T09:00:00.000Z',
};

describe('parseLocalArgs', () => {
  it('reads deploy with stack patterns, the app command, context values and --skip-fixups', () => {
    expect(
      parseLocalArgs([
        'deploy',
        'App/*',
        'Other',
        '--app',
        'npx tsx bin/app.ts',
        '-c',
        'stage=dev',
        '--context',
        'flag=a=b',
        '--skip-fixups',
      ]),
    ).toEqual({
      kind: 'deploy',
      cacheDir: undefined,
      stacks: ['App/*', 'Other'],
      app: 'npx tsx bin/app.ts',
      context: { stage: 'dev', flag: 'a=b' },
      fixups: false,
    });
  });

  it('reads up, down and destroy, resolving --cache-dir to an absolute path', () => {
    expect(parseLocalArgs(['up'])).toEqual({ kind: 'up', cacheDir: undefined });
    expect(parseLocalArgs(['down', '--cache-dir', '/tmp/eo'])).toEqual({ kind: 'down', cacheDir: '/tmp/eo' });
    expect(parseLocalArgs(['destroy', 'App'])).toEqual({
      kind: 'destroy',
      cacheDir: undefined,
      stacks: ['App'],
    });
    expect(parseLocalArgs(['--help'])).toEqual({ kind: 'help' });
  });

  it.each([
    [[], 'Expected a subcommand: up, deploy, destroy, logs, down'],
    [['start'], 'Unknown subcommand `start` (expected up, deploy, destroy, logs, down)'],
    [['up', '--app', 'x'], '`--app` only goes with `local deploy`'],
    [['destroy', '--skip-fixups'], '`--skip-fixups` only goes with `local deploy`'],
    [['up', 'App'], '`local up` takes no stack names, got `App`'],
    [['deploy', '-c', 'novalue'], 'Expected `--context` to be key=value, got `novalue`'],
  ])('rejects %j with a usage error: %s', (argv, message) => {
    expect(() => parseLocalArgs(argv)).toThrow(expect.objectContaining({ code: 'USAGE', message }));
  });

  it.each([
    [['up', '--porT', '1'], 'Unknown option `--porT`'],
    [['up', '--cahce-dir', '/tmp'], 'Unknown option `--cahce-dir` (did you mean `--cache-dir`?)'],
    [['deploy', '--app'], 'Expected a value after `--app`'],
    [['deploy', '-c'], 'Expected a value after `-c`'],
    [
      ['dpeloy'],
      'Unknown subcommand `dpeloy` (did you mean `deploy`? expected up, deploy, destroy, logs, down)',
    ],
  ])('rejects %j in its own words: %s', (argv, message) => {
    expect(() => parseLocalArgs(argv)).toThrow(expect.objectContaining({ code: 'USAGE', message }));
  });

  it('reads --help of the whole command, or of the subcommand it follows', () => {
    expect(parseLocalArgs(['--help'])).toEqual({ kind: 'help' });
    expect(parseLocalArgs(['deploy', '--help'])).toEqual({ kind: 'help', subcommand: 'deploy' });
    expect(parseLocalArgs(['down', '-h'])).toEqual({ kind: 'help', subcommand: 'down' });
    expect(parseLocalArgs(['start', '-h'])).toEqual({ kind: 'help' });
  });
});

describe('chooseEndpoint', () => {
  it('uses a foreign AWS_ENDPOINT_URL with its region and credentials, ignoring the embedded emulator', () => {
    const env = {
      AWS_ENDPOINT_URL: 'http://localhost:4566/',
      AWS_DEFAULT_REGION: 'eu-central-1',
      AWS_ACCESS_KEY_ID: 'key',
      AWS_SECRET_ACCESS_KEY: 'secret',
    };
    expect(chooseEndpoint(env, recorded)).toEqual({
      kind: 'given',
      endpoint: 'http://localhost:4566',
      region: 'eu-central-1',
      credentials: { accessKeyId: 'key', secretAccessKey: 'secret' },
    });
  });

  it('takes AWS_ENDPOINT_URL naming the embedded emulator (the exported line) as the embedded one', () => {
    expect(chooseEndpoint({ AWS_ENDPOINT_URL: 'http://127.0.0.1:41234' }, recorded)).toEqual({
      kind: 'embedded',
      state: recorded,
    });
  });

  it('uses the running embedded emulator without AWS_ENDPOINT_URL, and none when there is none', () => {
    expect(chooseEndpoint({}, recorded)).toEqual({ kind: 'embedded', state: recorded });
    expect(chooseEndpoint({}, undefined)).toEqual({ kind: 'none' });
  });

  it('rejects an AWS_ENDPOINT_URL that is not an http(s) URL', () => {
    expect(() => chooseEndpoint({ AWS_ENDPOINT_URL: 'localhost:4566' }, undefined)).toThrow(
      expect.objectContaining({
        code: 'USAGE',
        message: 'Expected AWS_ENDPOINT_URL to be an http(s) URL, got `localhost:4566`',
      }),
    );
  });
});

describe('exportLine', () => {
  it('gives the shell line that points SDKs and the CDK CLI at the endpoint', () => {
    expect(exportLine('http://127.0.0.1:41234', 'us-east-1')).toBe(
      'export AWS_ENDPOINT_URL=http://127.0.0.1:41234 AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test',
    );
  });
});

describe('the emulator state file', () => {
  it('lives in $XDG_CACHE_HOME/effectively-once, or ~/.cache/effectively-once', () => {
    expect(userCacheDir({ XDG_CACHE_HOME: '/var/cache/me' }, '/home/me')).toBe(
      '/var/cache/me/effectively-once',
    );
    expect(userCacheDir({}, '/home/me')).toBe('/home/me/.cache/effectively-once');
    // The XDG spec ignores a relative path.
    expect(userCacheDir({ XDG_CACHE_HOME: 'cache' }, '/home/me')).toBe('/home/me/.cache/effectively-once');
  });

  it('reads back what was written', () => {
    const home = scratch();
    writeEmulatorState(home, recorded);
    expect(readEmulatorState(home)).toEqual(recorded);
  });

  it('reads as no emulator when missing, not JSON, or not a state record', () => {
    const home = scratch();
    expect(readEmulatorState(home)).toBeUndefined();
    writeFileSync(emulatorStateFile(home), '{"pid": 12');
    expect(readEmulatorState(home)).toBeUndefined();
    writeFileSync(emulatorStateFile(home), JSON.stringify({ ...recorded, pid: 'x' }));
    expect(readEmulatorState(home)).toBeUndefined();
  });

  it('counts a live watchdog slow to answer as running, and a pid reused by another process as not', async () => {
    const watchdog = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)', 'ministack-watchdog.py'], {
      stdio: 'ignore',
    });
    try {
      // Port 9 (discard) never answers HTTP: only the command line can tell.
      const closed = { ...recorded, endpoint: 'http://127.0.0.1:9' };
      expect(await isEmulatorRunning({ ...closed, pid: watchdog.pid ?? 0 })).toBe(
        process.platform === 'linux',
      );
      expect(await isEmulatorRunning({ ...closed, pid: process.pid })).toBe(false);
    } finally {
      watchdog.kill('SIGKILL');
    }
  });

  it('is removed by a stop whose emulator is gone, without signalling anything', async () => {
    const home = scratch();
    writeEmulatorState(home, recorded);
    const kill = vi.spyOn(process, 'kill');
    try {
      expect(await stopDetachedMiniStack({ home })).toBe('not-running');
      expect(kill.mock.calls.filter(([, signal]) => signal !== 0)).toEqual([]);
    } finally {
      kill.mockRestore();
    }
    expect(readEmulatorState(home)).toBeUndefined();
  });
});

describe('runLocal', () => {
  const io = capturedLocalIo;

  it('stops nothing and keeps the state file when AWS_ENDPOINT_URL names a foreign endpoint', async () => {
    const home = scratch();
    writeEmulatorState(home, recorded);
    const run = io({ AWS_ENDPOINT_URL: 'http://localhost:4566' }, home);

    expect(await runLocal({ kind: 'down', cacheDir: home }, run.io)).toBe(0);

    expect(run.stderr).toEqual([
      'AWS_ENDPOINT_URL=http://localhost:4566 was not started by `local up`; stopping nothing.\n',
    ]);
    expect(JSON.parse(readFileSync(emulatorStateFile(home), 'utf8'))).toEqual(recorded);
  });

  it('fails with ENDPOINT_UNREACHABLE when a given AWS_ENDPOINT_URL refuses the connection', async () => {
    const home = scratch();
    await expect(
      runLocal({ kind: 'up', cacheDir: home }, io({ AWS_ENDPOINT_URL: 'http://127.0.0.1:9' }, home).io),
    ).rejects.toMatchObject({
      code: 'ENDPOINT_UNREACHABLE',
      message:
        'The local AWS endpoint http://127.0.0.1:9 does not answer (ECONNREFUSED). Is the emulator running?',
    });
  });

  it('fails a destroy with NO_EMULATOR when nothing runs and AWS_ENDPOINT_URL is unset', async () => {
    const home = scratch();
    await expect(
      runLocal({ kind: 'destroy', cacheDir: home, stacks: [] }, io({}, home).io),
    ).rejects.toMatchObject({
      code: 'NO_EMULATOR',
      message:
        'No local emulator: run `effectively-once local up` first, or set AWS_ENDPOINT_URL to a running one ' +
        '(LocalStack, a MiniStack container).',
    });
  });

  it('fails a deploy from a directory without cdk.json before contacting the endpoint', async () => {
    const home = scratch();
    const app = join(home, 'not-an-app');
    mkdirSync(app);
    const command = {
      kind: 'deploy',
      cacheDir: home,
      stacks: [],
      app: undefined,
      context: {},
      fixups: true,
    } as const;

    await expect(
      runLocal(command, io({ AWS_ENDPOINT_URL: 'http://127.0.0.1:9' }, app).io),
    ).rejects.toMatchObject({
      code: 'USAGE',
      message: `No cdk.json in ${app}: run \`effectively-once local deploy\` from your CDK app's directory`,
    });
  });
});

describe('dockerFallbackHint', () => {
  const failure = '`cdk deploy --all` failed (exit code 1).\n  | docker: Cannot connect to the Docker daemon';

  it('names `npm install --save-dev esbuild` when the CDK fell back to Docker without esbuild', () => {
    expect(dockerFallbackHint(failure, false)).toBe(
      'esbuild is not installed in this app, so the CDK tried to bundle the Lambda code in Docker. ' +
        'Install it next to aws-cdk-lib: `npm install --save-dev esbuild`.',
    );
  });

  it('gives no hint when esbuild is installed or the failure is not about Docker', () => {
    expect(dockerFallbackHint(failure, true)).toBeUndefined();
    expect(dockerFallbackHint('`cdk deploy` failed: ValidationError', false)).toBeUndefined();
  });
});

describe('reportWhileWaiting', () => {
  it('reports every interval while the work is pending, and stops when it settles', async () => {
    vi.useFakeTimers();
    let now = 0;
    const reports: number[] = [];
    let finish: (value: string) => void = () => {};
    const work = new Promise<string>((done) => {
      finish = done;
    });
    const waiting = reportWhileWaiting(work, {
      report: (elapsed) => reports.push(elapsed),
      everyMillis: 5_000,
      now: () => now,
    });
    for (let tick = 1; tick <= 3; tick++) {
      now += 5_000;
      await vi.advanceTimersByTimeAsync(5_000);
    }
    finish('done');
    expect(await waiting).toBe('done');
    await vi.advanceTimersByTimeAsync(20_000);

    expect(reports).toEqual([5_000, 10_000, 15_000]);
  });
});

describe('describeRetained', () => {
  it('names what a deleted stack left in the emulator, as its DeletionPolicy asks', () => {
    const kept = retainedResources({
      Resources: {
        Table: {
          Type: 'AWS::DynamoDB::Table',
          DeletionPolicy: 'Retain',
          Metadata: { 'aws:cdk:path': 'Shop/Totals/Resource' },
        },
        Logs: { Type: 'AWS::Logs::LogGroup', DeletionPolicy: 'RetainExceptOnCreate' },
        Queue: { Type: 'AWS::SQS::Queue', DeletionPolicy: 'Delete' },
        Topic: { Type: 'AWS::SNS::Topic' },
      },
    });
    expect(kept).toEqual([
      { path: 'Shop/Totals', type: 'AWS::DynamoDB::Table' },
      { path: 'Logs', type: 'AWS::Logs::LogGroup' },
    ]);
    expect(describeRetained('Shop', kept)).toBe(
      'Kept 2 resources of Shop that its DeletionPolicy retains: Shop/Totals (AWS::DynamoDB::Table), ' +
        'Logs (AWS::Logs::LogGroup). They stay in the emulator until `local down`.',
    );
  });
});
