/**
 * A user's own CDK app, as the user-app tests lay one out: the package packed into a tarball the
 * way `npm pack` makes it, a directory outside the repository in the layout
 * `cdk init app --language typescript` makes (NodeNext tsconfig, `npx tsc && npx tsx` in
 * cdk.json) with the app's own files, the tarball installed in its node_modules, and the
 * installed `node_modules/.bin/effectively-once` to run. The app's other dependencies
 * (aws-cdk-lib, aws-cdk, esbuild, tsx, typescript) are links to the repository's installs,
 * standing in for the user's `npm install`. `LocalUserApp` holds the steps every such app takes
 * (install, `local up`, `local deploy`, reading outputs, tables and logs, teardown);
 * `InProcessUserApp` is an app whose handlers the tests run in their own process (type-checked by
 * the app's `tsc`, bundled with esbuild from the installed package). The tests keep the
 * assertions.
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
import { createRequire } from 'node:module';
import { basename, extname, join, relative } from 'node:path';
import { CloudWatchLogsClient, FilterLogEventsCommand } from '@aws-sdk/client-cloudwatch-logs';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { type Message, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { build } from 'esbuild';
import { type EmulatorState, readEmulatorState } from '../../cli/local/emulator';
import { localPaths } from '../../cli/local/paths';
import { ensureMiniStack, projectRoot } from '../../scripts/local-aws/harness';
import { type CommandRun, isAlive, runCommand } from './child-process';
import { waitFor } from './fixtures';

const root = projectRoot();

/** The tsconfig of the current `cdk init app --language typescript` template, less jest's types (no tests here). */
const CDK_INIT_TSCONFIG = {
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
const EMULATOR_CLIENT_CONFIG = {
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
interface UserAppFiles {
  /** The directory the app goes in (outside the repository). */
  readonly dir: string;
  /** The app's own files (`bin/`, `lib/`, `lambda/`, ...), copied into `dir`. */
  readonly source: string;
  /** The app's `package.json` name. */
  readonly name: string;
  /**
   * The CDK app's entry, relative to `dir` (`bin/my-app.ts`): cdk.json runs it with tsx after
   * `tsc`. An app without one (handlers only) has no cdk.json.
   */
  readonly cdkApp?: string;
  /** The packed tarball, installed as `node_modules/effectively-once`. */
  readonly tarball: string;
}

/**
 * Lays out the user's app: its own files in the `cdk init` layout, the tarball unpacked into
 * node_modules/effectively-once with its bin linked as npm links it, and every other package
 * linked from the repository's node_modules.
 */
function makeUserApp({ dir, source, name, cdkApp, tarball }: UserAppFiles): void {
  cpSync(source, dir, { recursive: true });
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(CDK_INIT_TSCONFIG, null, 2));
  if (cdkApp !== undefined) {
    writeFileSync(
      join(dir, 'cdk.json'),
      JSON.stringify({ app: `npx tsc && npx tsx ${cdkApp}`, watch: { include: ['**'] } }),
    );
  }
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
async function linkInstalledMiniStack(cache: string): Promise<void> {
  const installation = await ensureMiniStack();
  mkdirSync(join(cache, 'effectively-once'), { recursive: true });
  symlinkSync(join(installation.python, '..', '..'), join(cache, 'effectively-once', 'venv'), 'dir');
}

/** The emulator `effectively-once local up` started for the app in `app` with this cache, if it recorded one. */
function emulatorOf(app: string, cache: string): EmulatorState | undefined {
  return readEmulatorState(localPaths({ appDir: app, env: { XDG_CACHE_HOME: cache } }).appHome);
}

/** Runs the installed `node_modules/.bin/effectively-once <args>` in the app, with exactly `env` (plus PATH and HOME). */
function runCli(app: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<CommandRun> {
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
async function tearDownUserApp(
  app: string,
  env: NodeJS.ProcessEnv & { readonly XDG_CACHE_HOME: string },
  deployed: boolean,
): Promise<void> {
  const started = emulatorOf(app, env.XDG_CACHE_HOME);
  if (!started || !isAlive(started.pid)) return;
  if (deployed) await runCli(app, ['local', 'destroy'], env);
  await runCli(app, ['local', 'down'], env);
}

/** `Stack.Output = value` lines of `cdk deploy` for `stack`, as a map. */
function outputsOf(stdout: string, stack: string): Record<string, string> {
  const outputs: Record<string, string> = {};
  for (const match of stdout.matchAll(new RegExp(`^${stack}\\.(\\w+) = (\\S+)$`, 'gm'))) {
    outputs[match[1]!] = match[2]!;
  }
  return outputs;
}

/** The messages of a log group (the first page of `FilterLogEvents`), through the CloudWatch Logs client. */
async function logMessages(endpoint: string, logGroupName: string): Promise<string[]> {
  const logs = new CloudWatchLogsClient({ endpoint, ...EMULATOR_CLIENT_CONFIG });
  try {
    const { events = [] } = await logs.send(new FilterLogEventsCommand({ logGroupName }));
    return events.map((event) => event.message ?? '');
  } finally {
    logs.destroy();
  }
}

/** The JSON objects among log lines (the runtime's logs and EMF metrics); platform lines are skipped. */
function jsonLines(messages: readonly string[]): Record<string, unknown>[] {
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

/** A user app as a test defines it: its files, and the stack its CDK app deploys. */
export interface UserAppDefinition {
  /** The app's own files (`bin/`, `lib/`, `lambda/`, ...). */
  readonly source: string;
  /** The app's `package.json` name, and its directory's. */
  readonly name: string;
  /** The CDK app's entry, relative to the app (`bin/my-app.ts`). */
  readonly cdkApp: string;
  /** The stack `local deploy` deploys, whose outputs the tests read. */
  readonly stack: string;
}

/** The clients a test talks to the emulator with. */
export interface EmulatorClients {
  readonly sqs: SQSClient;
  readonly dynamodb: DynamoDBDocumentClient;
}

/**
 * One user app through its life in a test: installed in `work` with its own per-user cache (so
 * its own emulator), started and deployed with the installed CLI, read through the stack's
 * outputs, and torn down. The assertions stay in the tests; this holds the steps both apps take.
 */
export class LocalUserApp {
  /** The app's directory, outside the repository. */
  readonly dir: string;
  /** Exactly the environment the CLI runs with (plus PATH and HOME): the per-user cache. */
  readonly env: { readonly XDG_CACHE_HOME: string };
  /** The emulator `local up` started, once it did. */
  emulator: EmulatorState | undefined;
  /** The stack's outputs, once `local deploy` succeeded. */
  outputs: Readonly<Record<string, string>> = {};
  private deployed = false;
  private emulatorClients: EmulatorClients | undefined;

  constructor(
    work: string,
    private readonly definition: UserAppDefinition,
  ) {
    this.dir = join(work, definition.name);
    this.env = { XDG_CACHE_HOME: join(work, `${definition.name}-cache`) };
  }

  /** Lays the app out with the tarball installed, and gives its cache the repository's MiniStack. */
  async install(tarball: string): Promise<void> {
    const { source, name, cdkApp } = this.definition;
    makeUserApp({ dir: this.dir, source, name, cdkApp, tarball });
    await linkInstalledMiniStack(this.env.XDG_CACHE_HOME);
  }

  /** Runs the installed CLI in the app, with the app's environment and `extra`. */
  run(args: readonly string[], extra: NodeJS.ProcessEnv = {}): Promise<CommandRun> {
    return runCli(this.dir, args, { ...this.env, ...extra });
  }

  /** `effectively-once local up`, which must succeed; records the emulator it started. */
  async up(): Promise<CommandRun> {
    const run = expectSuccess('effectively-once local up', await this.run(['local', 'up']));
    this.emulator = emulatorOf(this.dir, this.env.XDG_CACHE_HOME);
    return run;
  }

  /** `effectively-once local deploy`, as the README runs it, which must succeed; reads the stack's outputs. */
  async deploy(): Promise<CommandRun> {
    const run = await this.run(['local', 'deploy']);
    this.deployed = true;
    expectSuccess('effectively-once local deploy', run);
    this.outputs = outputsOf(run.stdout, this.definition.stack);
    return run;
  }

  /** The variables that point the AWS SDK (and the CLI's `replay`) at the emulator. */
  awsEnv(): NodeJS.ProcessEnv {
    return {
      AWS_ENDPOINT_URL: this.started().endpoint,
      AWS_REGION: EMULATOR_CLIENT_CONFIG.region,
      AWS_ACCESS_KEY_ID: EMULATOR_CLIENT_CONFIG.credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: EMULATOR_CLIENT_CONFIG.credentials.secretAccessKey,
    };
  }

  /** SQS and DynamoDB (document) clients on the emulator, created once. */
  get clients(): EmulatorClients {
    if (!this.emulatorClients) {
      const config = { endpoint: this.started().endpoint, ...EMULATOR_CLIENT_CONFIG };
      this.emulatorClients = {
        sqs: new SQSClient(config),
        dynamodb: DynamoDBDocumentClient.from(new DynamoDBClient(config)),
      };
    }
    return this.emulatorClients;
  }

  /** The value of one of the stack's outputs; throws when the stack has no such output. */
  output(name: string): string {
    const value = this.outputs[name];
    if (value === undefined) throw new Error(`The stack ${this.definition.stack} has no output ${name}`);
    return value;
  }

  /** Every item of the table an output names, sorted by `pk`. */
  async scan(tableOutput: string): Promise<Record<string, unknown>[]> {
    const { Items = [] } = await this.clients.dynamodb.send(
      new ScanCommand({ TableName: this.output(tableOutput) }),
    );
    return Items.sort((a, b) => String(a.pk).localeCompare(String(b.pk)));
  }

  /** The JSON lines (logs and EMF metrics) of the log group an output names. */
  async logLines(logGroupOutput: string): Promise<Record<string, unknown>[]> {
    return jsonLines(await logMessages(this.started().endpoint, this.output(logGroupOutput)));
  }

  /**
   * Rethrows a failed wait with what the functions logged (their log groups named by outputs),
   * the first thing to read when a function did not act.
   */
  withLogsOf(logGroupOutputs: readonly string[]): (error: Error) => Promise<never> {
    return async (error) => {
      const logs = await Promise.all(
        logGroupOutputs.map(async (output) => {
          const messages = await logMessages(this.started().endpoint, this.output(output)).catch(String);
          return `--- ${output}\n${[messages].flat().join('\n')}`;
        }),
      );
      throw new Error(`${error.message}; the functions logged:\n${logs.join('\n')}`);
    };
  }

  /** Waits until the queue an output names has messages, and receives them (with their attributes). */
  receiveMessages(queueOutput: string, what: string, logGroupOutputs: readonly string[]): Promise<Message[]> {
    return waitFor(
      what,
      async () => {
        const received = await this.clients.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: this.output(queueOutput),
            MessageAttributeNames: ['All'],
            WaitTimeSeconds: 1,
          }),
        );
        return received.Messages?.length ? received.Messages : undefined;
      },
      { timeoutMillis: 60_000, intervalMillis: 500 },
    ).catch(this.withLogsOf(logGroupOutputs));
  }

  /** `effectively-once local destroy`, then `local down`, both of which must succeed. */
  async destroyAndStop(): Promise<{ readonly destroy: CommandRun; readonly down: CommandRun }> {
    const destroy = expectSuccess('effectively-once local destroy', await this.run(['local', 'destroy']));
    this.deployed = false;
    const down = expectSuccess('effectively-once local down', await this.run(['local', 'down']));
    return { destroy, down };
  }

  /** Whatever failed before, leaves neither clients, the stack nor the emulator behind. */
  async tearDown(): Promise<void> {
    this.emulatorClients?.sqs.destroy();
    this.emulatorClients?.dynamodb.destroy();
    await tearDownUserApp(this.dir, this.env, this.deployed);
  }

  private started(): EmulatorState {
    if (!this.emulator) throw new Error(`The emulator of ${this.definition.name} has not started`);
    return this.emulator;
  }
}

/** A user app whose handlers run in the test's process: its own files and its name. */
export interface InProcessUserAppDefinition {
  /** The app's own files (`lambda/`, ...). */
  readonly source: string;
  /** The app's `package.json` name, and its directory's. */
  readonly name: string;
}

/**
 * A user app whose handler files the tests run in their own process, where the emulator cannot
 * (its stream event source mappings ignore batch item failures): installed in `work` with the
 * tarball, type-checked by the app's own `tsc`, and each handler file bundled as the construct's
 * `NodejsFunction` bundles an entry (esbuild, one CommonJS file, the package bundled in) and
 * loaded with `require`. The AWS SDK alone stays outside the bundle, resolved from the app's
 * node_modules (the repository's install): so the SDK commands the handler sends are the classes
 * the tests know, and a client wrapper the tests pass in (the SQS conformance layer) recognises
 * them.
 */
export class InProcessUserApp {
  /** The app's directory, outside the repository. */
  readonly dir: string;

  constructor(
    work: string,
    private readonly definition: InProcessUserAppDefinition,
  ) {
    this.dir = join(work, definition.name);
  }

  /** Lays the app out with the tarball installed. */
  install(tarball: string): void {
    const { source, name } = this.definition;
    makeUserApp({ dir: this.dir, source, name, tarball });
  }

  /** The app's own `npx tsc` (its tsconfig emits nothing): its files against the installed package's types. */
  typecheck(): Promise<CommandRun> {
    return runCommand(join(this.dir, 'node_modules', '.bin', 'tsc'), ['-p', this.dir], this.dir, {});
  }

  /**
   * Bundles the handler file `entry` (relative to the app) into `dist/` and loads it: its module
   * scope runs now, with the test's `process.env`.
   */
  async load<TModule>(entry: string): Promise<TModule> {
    const outfile = join(this.dir, 'dist', `${basename(entry, extname(entry))}.js`);
    await build({
      absWorkingDir: this.dir,
      entryPoints: [join(this.dir, entry)],
      outfile,
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'cjs',
      external: ['@aws-sdk/*'],
      logLevel: 'silent',
    });
    return this.require<TModule>(outfile);
  }

  /** A module as the app's own code resolves and loads it (`effectively-once` is the installed tarball). */
  require<TModule>(specifier: string): TModule {
    return createRequire(join(this.dir, 'package.json'))(specifier) as TModule;
  }
}
