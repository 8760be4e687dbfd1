/**
 * A user's own CDK app, as the user-app tests lay one out: the package packed into a tarball the
 * way `npm pack` makes it, a directory outside the repository in the layout
 * `cdk init app --language typescript` makes (NodeNext tsconfig, `npx tsc && npx tsx` in
 * cdk.json) with the app's own files, the tarball installed in its node_modules, and the
 * installed `node_modules/.bin/effectively-once` to run. The app's other dependencies
 * (aws-cdk-lib, aws-cdk, esbuild, tsx, typescript) are links to the repository's installs,
 * standing in for the user's `npm install`.
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join, relative } from 'node:path';
import { CloudWatchLogsClient, FilterLogEventsCommand } from '@aws-sdk/client-cloudwatch-logs';
import { type EmulatorState, readEmulatorState } from '../../cli/local/emulator';
import { ensureMiniStack, projectRoot } from '../../scripts/local-aws/harness';
import { type CommandRun, isAlive, runCommand } from './child-process';

const root = projectRoot();

/** The tsconfig of the current `cdk init app --language typescript` template, less jest's types (no tests here). */
export const CDK_INIT_TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    lib: ['es2022'],
    declaration: true,
    strict: true,
    noImplicitAny: true,
    strictNullChecks: true,
    noImplicitThis: true,
    alwaysStrict: true,
    noUnusedLocals: false,
    noUnusedParameters: false,
    noImplicitReturns: true,
    noFallthroughCasesInSwitch: false,
    inlineSourceMap: true,
    inlineSources: true,
    experimentalDecorators: true,
    strictPropertyInitialization: false,
    skipLibCheck: true,
    typeRoots: ['./node_modules/@types'],
    noEmit: true,
    isolatedModules: true,
    types: ['node'],
  },
  exclude: ['node_modules', 'cdk.out'],
};

/** The credentials and region of every client the tests point at the emulator. */
export const EMULATOR_CLIENT_CONFIG = {
  region: 'us-east-1',
  credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
} as const;

/**
 * The package as `npm pack` makes it, without running `prepack` in the repository (another test
 * may be building `dist/` there at the same time): compiled into a staging directory with the
 * repository's build config, then packed from there into `work`. Returns the tarball's path.
 */
export function packTarball(work: string): string {
  const staging = join(work, 'staging');
  mkdirSync(staging, { recursive: true });
  for (const file of ['package.json', 'README.md', 'LICENSE']) {
    if (existsSync(join(root, file))) copyFileSync(join(root, file), join(staging, file));
  }
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const build = spawnSync(
    process.execPath,
    [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', join(staging, 'dist')],
    { cwd: root, encoding: 'utf8' },
  );
  if (build.status !== 0) throw new Error(`Building the package failed:\n${build.stdout}${build.stderr}`);
  const pack = spawnSync('npm', ['pack', '--ignore-scripts', '--pack-destination', work], {
    cwd: staging,
    encoding: 'utf8',
  });
  if (pack.status !== 0) throw new Error(`npm pack failed:\n${pack.stdout}${pack.stderr}`);
  return join(work, readdirSync(work).find((name) => name.endsWith('.tgz'))!);
}

/** What a user app is made of. */
export interface UserAppFiles {
  /** The directory the app goes in (outside the repository). */
  readonly dir: string;
  /** The app's own files (`bin/`, `lib/`, `lambda/`, ...), copied into `dir`. */
  readonly source: string;
  /** The app's `package.json` name. */
  readonly name: string;
  /** The CDK app's entry, relative to `dir` (`bin/my-app.ts`): cdk.json runs it with tsx after `tsc`. */
  readonly cdkApp: string;
  /** The packed tarball, installed as `node_modules/effectively-once`. */
  readonly tarball: string;
}

/**
 * Lays out the user's app: its own files in the `cdk init` layout, the tarball unpacked into
 * node_modules/effectively-once with its bin linked as npm links it, and every other package
 * linked from the repository's node_modules.
 */
export function makeUserApp({ dir, source, name, cdkApp, tarball }: UserAppFiles): void {
  cpSync(source, dir, { recursive: true });
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(CDK_INIT_TSCONFIG, null, 2));
  writeFileSync(
    join(dir, 'cdk.json'),
    JSON.stringify({ app: `npx tsc && npx tsx ${cdkApp}`, watch: { include: ['**'] } }),
  );
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, version: '0.1.0' }));
  writeFileSync(
    join(dir, 'package-lock.json'),
    JSON.stringify({ name, lockfileVersion: 3, requires: true, packages: { '': { name } } }),
  );

  const modules = join(dir, 'node_modules');
  const bins = join(modules, '.bin');
  mkdirSync(bins, { recursive: true });
  const repoModules = join(root, 'node_modules');
  for (const entry of readdirSync(repoModules)) {
    if (entry === '.bin' || entry.startsWith('.') || entry === 'effectively-once') continue;
    symlinkSync(join(repoModules, entry), join(modules, entry), 'dir');
  }
  for (const entry of readdirSync(join(repoModules, '.bin'))) {
    symlinkSync(realpathSync(join(repoModules, '.bin', entry)), join(bins, entry));
  }
  const installed = join(modules, 'effectively-once');
  mkdirSync(installed);
  const untar = spawnSync('tar', ['-xzf', tarball, '-C', installed, '--strip-components=1'], {
    encoding: 'utf8',
  });
  if (untar.status !== 0) throw new Error(`Unpacking the tarball failed: ${untar.stderr}`);
  const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
    bin: Record<string, string>;
  };
  const binFile = join(installed, manifest.bin['effectively-once']!);
  chmodSync(binFile, 0o755);
  symlinkSync(relative(bins, binFile), join(bins, 'effectively-once'));
}

/**
 * Gives the per-user cache (`XDG_CACHE_HOME`) the MiniStack the repository installed, instead of
 * a second pip install by `effectively-once local up`.
 */
export async function linkInstalledMiniStack(cache: string): Promise<void> {
  const installation = await ensureMiniStack();
  mkdirSync(join(cache, 'effectively-once'), { recursive: true });
  symlinkSync(join(installation.python, '..', '..'), join(cache, 'effectively-once', 'venv'), 'dir');
}

/** The emulator `effectively-once local up` started with this cache, if it recorded one. */
export function emulatorOf(cache: string): EmulatorState | undefined {
  return readEmulatorState(join(cache, 'effectively-once'));
}

/** Runs the installed `node_modules/.bin/effectively-once <args>` in the app, with exactly `env` (plus PATH and HOME). */
export function runCli(app: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<CommandRun> {
  const bin = join(app, 'node_modules', '.bin', 'effectively-once');
  return runCommand(bin, args, app, { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', ...env });
}

/** Fails with the command's whole output unless it exited 0. */
export function expectSuccess(what: string, run: CommandRun): CommandRun {
  if (run.code !== 0) {
    throw new Error(`${what} exited ${run.code}:\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`);
  }
  return run;
}

/**
 * Whatever failed before, leaves neither the stack nor the emulator behind: `local destroy` when
 * a deploy was attempted, then `local down`, if the emulator this cache recorded is still alive.
 */
export async function tearDownUserApp(
  app: string,
  env: NodeJS.ProcessEnv & { readonly XDG_CACHE_HOME: string },
  deployed: boolean,
): Promise<void> {
  const started = emulatorOf(env.XDG_CACHE_HOME);
  if (!started || !isAlive(started.pid)) return;
  if (deployed) await runCli(app, ['local', 'destroy'], env);
  await runCli(app, ['local', 'down'], env);
}

/** `Stack.Output = value` lines of `cdk deploy` for `stack`, as a map. */
export function outputsOf(stdout: string, stack: string): Record<string, string> {
  const outputs: Record<string, string> = {};
  for (const match of stdout.matchAll(new RegExp(`^${stack}\\.(\\w+) = (\\S+)$`, 'gm'))) {
    outputs[match[1]!] = match[2]!;
  }
  return outputs;
}

/** The messages of a log group (the first page of `FilterLogEvents`), through the CloudWatch Logs client. */
export async function logMessages(endpoint: string, logGroupName: string): Promise<string[]> {
  const logs = new CloudWatchLogsClient({ endpoint, ...EMULATOR_CLIENT_CONFIG });
  try {
    const { events = [] } = await logs.send(new FilterLogEventsCommand({ logGroupName }));
    return events.map((event) => event.message ?? '');
  } finally {
    logs.destroy();
  }
}

/** The JSON objects among log lines (the runtime's logs and EMF metrics); platform lines are skipped. */
export function jsonLines(messages: readonly string[]): Record<string, unknown>[] {
  return messages.flatMap((message) =>
    message
      .split('\n')
      .map((line) => line.slice(line.indexOf('{')))
      .filter((line) => line.startsWith('{'))
      .flatMap((line) => {
        try {
          return [JSON.parse(line) as Record<string, unknown>];
        } catch {
          return [];
        }
      }),
  );
}
