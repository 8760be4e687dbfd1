/**
 * Where the `local` commands keep things. One MiniStack install (its virtual environment) serves
 * every project of the user; each CDK app gets its own directory for its emulator's state file,
 * logs and stack outputs, so two apps never share, reuse or stop each other's emulator.
 */
import { createHash } from 'node:crypto';
import { readdirSync, realpathSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { type EmulatorState, isEmulatorRunning, logsDir, readEmulatorState, userCacheDir } from './emulator';

/** The directories one `local` command uses. */
export interface LocalPaths {
  /** Holds the MiniStack install (`venv/`), shared by every app that uses this cache. */
  readonly installHome: string;
  /** Holds this app's emulator state file, `logs/` and `cdk-outputs.json`. */
  readonly appHome: string;
  /** The stack outputs of this app's last local deploy. */
  readonly outputsFile: string;
  /** The CDK CLI's output for this app (appended). */
  readonly cdkLogFile: string;
}

/**
 * The paths for the CDK app in `appDir`. Without a cache directory, the install lives in the
 * per-user cache ({@link userCacheDir}) and the app's files in `apps/<name>-<hash>/` under it,
 * keyed by the app directory's real path (a symlinked checkout is the same app). A cache
 * directory given with `--cache-dir` is the app's own: install and state both live in it.
 *
 * @example
 * localPaths({ appDir: '/home/me/shop', env: {} }).appHome;
 * // '/home/me/.cache/effectively-once/apps/shop-3f2a9c1d0b4e'
 */
export function localPaths(options: {
  readonly appDir: string;
  readonly cacheDir?: string | undefined;
  readonly env?: NodeJS.ProcessEnv;
}): LocalPaths {
  const installHome = options.cacheDir ?? userCacheDir(options.env);
  const appHome = options.cacheDir ?? join(installHome, 'apps', appKey(options.appDir));
  return {
    installHome,
    appHome,
    outputsFile: join(appHome, 'cdk-outputs.json'),
    cdkLogFile: join(logsDir(appHome), 'cdk-local.log'),
  };
}

/**
 * A directory name for an app: its directory's name (for people reading the cache) and a hash
 * of its real path (so two apps with the same name stay apart).
 */
export function appKey(appDir: string): string {
  const real = realPath(appDir);
  const name =
    basename(real)
      .replace(/[^A-Za-z0-9._-]/g, '_')
      .slice(0, 40) || 'app';
  const hash = createHash('sha256').update(real).digest('hex').slice(0, 12);
  return `${name}-${hash}`;
}

/**
 * The running emulators `local up` started for the other apps of the same cache (`apps/*`), so a
 * shell still pointed at one of them is not taken for this app's.
 */
export async function recordedEmulatorsOfOtherApps(paths: LocalPaths): Promise<EmulatorState[]> {
  const appsDir = join(paths.installHome, 'apps');
  let names: string[];
  try {
    names = readdirSync(appsDir);
  } catch {
    return [];
  }
  const states: EmulatorState[] = [];
  for (const name of names) {
    const home = join(appsDir, name);
    if (home === paths.appHome) continue;
    const state = readEmulatorState(home);
    if (state && (await isEmulatorRunning(state, home))) states.push(state);
  }
  return states;
}

function realPath(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return resolve(dir);
  }
}
