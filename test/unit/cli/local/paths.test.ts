import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { chooseEndpoint, runLocal } from '../../../../cli/local/command';
import {
  type EmulatorState,
  isEmulatorRunning,
  readEmulatorState,
  stopDetachedMiniStack,
  watchdogFile,
  writeEmulatorState,
} from '../../../../cli/local/emulator';
import { appKey, localPaths, recordedEmulatorsOfOtherApps } from '../../../../cli/local/paths';

const dirs: string[] = [];
const children: ChildProcess[] = [];
function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'eo-paths-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A process whose command line names the watchdog of `home`, as a started emulator's does. */
function fakeWatchdog(home: string): number {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)', watchdogFile(home)], {
    stdio: 'ignore',
  });
  children.push(child);
  return child.pid ?? 0;
}

function stateOf(pid: number, port: number, appDir: string): EmulatorState {
  return {
    pid,
    port,
    endpoint: `http://127.0.0.1:${port}`,
    region: 'us-east-1',
    version: '1.5.33',
    logFile: '/tmp/ministack.log',
    startedAt: '2026-12-02T01:00:00.000Z',
    appDir,
  };
}

/** Two CDK apps named alike in two directories, and one per-user cache. */
function twoApps() {
  const work = scratch();
  const first = join(work, 'one', 'shop');
  const second = join(work, 'two', 'shop');
  mkdirSync(first, { recursive: true });
  mkdirSync(second, { recursive: true });
  const env = { XDG_CACHE_HOME: join(work, 'cache') };
  return {
    work,
    env,
    first: { dir: first, paths: localPaths({ appDir: first, env }) },
    second: { dir: second, paths: localPaths({ appDir: second, env }) },
  };
}

const onLinux = process.platform === 'linux';

describe('localPaths', () => {
  it('gives each app its own home, outputs and log under one shared install', () => {
    const { env, first, second } = twoApps();
    const cache = join(env.XDG_CACHE_HOME, 'effectively-once');

    expect(first.paths.installHome).toBe(cache);
    expect(second.paths.installHome).toBe(cache);
    expect(first.paths.appHome).toMatch(new RegExp(`^${cache}/apps/shop-[0-9a-f]{12}$`));
    expect(second.paths.appHome).toMatch(new RegExp(`^${cache}/apps/shop-[0-9a-f]{12}$`));
    expect(first.paths.appHome).not.toBe(second.paths.appHome);
    expect(first.paths).toEqual({
      installHome: cache,
      appHome: first.paths.appHome,
      outputsFile: join(first.paths.appHome, 'cdk-outputs.json'),
      cdkLogFile: join(first.paths.appHome, 'logs', 'cdk-local.log'),
    });
  });

  it('keys an app by its real path, so a symlinked checkout is the same app', () => {
    const { work, first } = twoApps();
    const link = join(work, 'link-to-shop');
    symlinkSync(first.dir, link, 'dir');
    expect(appKey(link)).toBe(appKey(first.dir));
    expect(appKey(first.dir)).toMatch(/^shop-[0-9a-f]{12}$/);
  });

  it('uses a --cache-dir as the app’s own home, install included', () => {
    expect(localPaths({ appDir: '/srv/app', cacheDir: '/srv/app/.local', env: {} })).toEqual({
      installHome: '/srv/app/.local',
      appHome: '/srv/app/.local',
      outputsFile: '/srv/app/.local/cdk-outputs.json',
      cdkLogFile: '/srv/app/.local/logs/cdk-local.log',
    });
  });
});

describe.runIf(onLinux)('the emulator of one app, seen from another', () => {
  it('is not taken for this app’s own when its pid is checked against this app’s home', async () => {
    const { first, second } = twoApps();
    const pid = fakeWatchdog(first.paths.appHome);
    // Port 9 (discard) never answers HTTP: only the command line can tell.
    const state = stateOf(pid, 9, first.dir);

    expect(await isEmulatorRunning(state, first.paths.appHome)).toBe(true);
    expect(await isEmulatorRunning(state, second.paths.appHome)).toBe(false);
  });

  it('is not stopped by the other app’s `down`, even when that app’s state names its pid', async () => {
    const { first, second } = twoApps();
    const pid = fakeWatchdog(first.paths.appHome);
    // A stale record whose pid was reused by the first app's emulator.
    writeEmulatorState(second.paths.appHome, stateOf(pid, 9, second.dir));
    const kill = vi.spyOn(process, 'kill');
    try {
      expect(await stopDetachedMiniStack({ home: second.paths.appHome })).toBe('not-running');
      expect(kill.mock.calls.filter(([, signal]) => signal !== 0)).toEqual([]);
    } finally {
      kill.mockRestore();
    }
    expect(readEmulatorState(second.paths.appHome)).toBeUndefined();
  });

  it('is listed among the other apps’ emulators, and this app’s own is not', async () => {
    const { first, second } = twoApps();
    const firstState = stateOf(fakeWatchdog(first.paths.appHome), 9, first.dir);
    writeEmulatorState(first.paths.appHome, firstState);
    writeEmulatorState(second.paths.appHome, stateOf(fakeWatchdog(second.paths.appHome), 7, second.dir));

    expect(await recordedEmulatorsOfOtherApps(second.paths)).toEqual([firstState]);
    expect(chooseEndpoint({ AWS_ENDPOINT_URL: 'http://127.0.0.1:9' }, undefined, [firstState])).toEqual({
      kind: 'another-app',
      state: firstState,
    });
  });

  it('refuses a deploy from an app whose shell still points at another app’s emulator', async () => {
    const { env, first, second } = twoApps();
    writeEmulatorState(first.paths.appHome, stateOf(fakeWatchdog(first.paths.appHome), 9, first.dir));
    const stderr: string[] = [];
    const io = {
      stdout: { write: () => true },
      stderr: { write: (text: string) => stderr.push(text) },
      env: { ...env, AWS_ENDPOINT_URL: 'http://127.0.0.1:9' },
      cwd: second.dir,
    };
    const deploy = {
      kind: 'deploy',
      cacheDir: undefined,
      stacks: [],
      app: undefined,
      context: {},
      fixups: true,
    } as const;

    await expect(runLocal(deploy, io)).rejects.toMatchObject({
      code: 'NO_EMULATOR',
      message:
        `AWS_ENDPOINT_URL=http://127.0.0.1:9 is the emulator \`local up\` started for ${first.dir}, ` +
        'not this app\'s: start this app\'s own with `eval "$(effectively-once local up)"` here, or unset AWS_ENDPOINT_URL.',
    });
    expect(stderr).toEqual([]);
  });

  it('is not stopped by `down` when an earlier version started it for all apps, which says how to stop it', async () => {
    const { env, first } = twoApps();
    const shared = first.paths.installHome;
    const pid = fakeWatchdog(shared);
    writeEmulatorState(shared, stateOf(pid, 9, ''));
    const stderr: string[] = [];
    const io = {
      stdout: { write: () => true },
      stderr: { write: (text: string) => stderr.push(text) },
      env,
      cwd: first.dir,
    };
    const kill = vi.spyOn(process, 'kill');
    try {
      expect(await runLocal({ kind: 'down', cacheDir: undefined }, io)).toBe(0);
      expect(kill.mock.calls.filter(([, signal]) => signal !== 0)).toEqual([]);
    } finally {
      kill.mockRestore();
    }
    expect(stderr).toEqual([
      `MiniStack 1.5.33 at http://127.0.0.1:9 (pid ${pid}) was started by an earlier version of \`local up\`, ` +
        `for all your apps; each app now gets its own. Stop that one with \`effectively-once local down --cache-dir ${shared}\`.\n`,
      'No emulator started by `local up` is running; nothing to stop.\n',
    ]);
  });
});
