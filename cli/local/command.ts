/**
 * `effectively-once local up|deploy|destroy|down`: the embedded emulator and the local deploy of
 * the CDK app in the current directory. Argument parsing and the choice of endpoint are pure; the
 * commands run on injected effects, so the CLI is unit-tested without an emulator.
 */

import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { type RetainedResource, readAssemblyStacks, readTemplate, retainedResources } from './cloud-assembly';
import {
  type DeployLocalResult,
  deployLocal,
  destroyLocal,
  LOCAL_ACCOUNT,
  LOCAL_ASSEMBLY_DIR,
  LocalDeployError,
  probeEndpoint,
  stackNamesToDestroy,
} from './deploy';
import {
  DEFAULT_REGION,
  type EmulatorState,
  ensureDetachedMiniStack,
  httpUrl,
  isEmulatorRunning,
  LOCAL_CREDENTIALS,
  readEmulatorState,
  stopDetachedMiniStack,
} from './emulator';
import { formatFunctionLogs, parseFunctionLogs } from './function-logs';
import { localPaths, recordedEmulatorsOfOtherApps } from './paths';
import { closestName, LOCAL_SUBCOMMANDS, type LocalSubcommand } from './usage';

export { LOCAL_USAGE, localUsage } from './usage';

/** One `local` subcommand and its options. */
export type LocalCommand =
  /** `--help`, of one subcommand when it names one. */
  | { readonly kind: 'help'; readonly subcommand?: LocalSubcommand }
  | { readonly kind: 'up' | 'down'; readonly cacheDir: string | undefined }
  | {
      readonly kind: 'deploy';
      readonly cacheDir: string | undefined;
      readonly stacks: readonly string[];
      readonly app: string | undefined;
      readonly context: Readonly<Record<string, string>>;
      readonly fixups: boolean;
    }
  | { readonly kind: 'destroy'; readonly cacheDir: string | undefined; readonly stacks: readonly string[] }
  | {
      readonly kind: 'logs';
      readonly cacheDir: string | undefined;
      /** Parts of function names; empty: every function. */
      readonly functions: readonly string[];
      readonly failuresOnly: boolean;
    };

/** A bad `local` command line. */
export class LocalUsageError extends Error {
  override readonly name = 'LocalUsageError';
  readonly code = 'USAGE';
}

const SUBCOMMANDS = LOCAL_SUBCOMMANDS;

/**
 * Parses the arguments that follow `local`.
 *
 * @throws LocalUsageError `USAGE` for a missing or unknown subcommand, an unknown option, an option
 * the subcommand does not take, or a `--context` that is not `key=value`.
 */
export function parseLocalArgs(argv: readonly string[]): LocalCommand {
  let parsed: ReturnType<typeof parseStrict>;
  try {
    parsed = parseStrict(argv);
  } catch (error) {
    throw new LocalUsageError(describeParseError(error));
  }
  const { values, positionals } = parsed;
  const [subcommand, ...stacks] = positionals;
  const known = (SUBCOMMANDS as readonly string[]).includes(subcommand ?? '');
  if (values.help)
    return known ? { kind: 'help', subcommand: subcommand as LocalSubcommand } : { kind: 'help' };
  if (subcommand === undefined) {
    throw new LocalUsageError(`Expected a subcommand: ${SUBCOMMANDS.join(', ')}`);
  }
  if (!known) {
    const suggestion = closestName(subcommand, SUBCOMMANDS);
    throw new LocalUsageError(
      `Unknown subcommand \`${subcommand}\` (${suggestion ? `did you mean \`${suggestion}\`? ` : ''}` +
        `expected ${SUBCOMMANDS.join(', ')})`,
    );
  }
  const kind = subcommand as LocalSubcommand;
  const deployOnly = (['app', 'context', 'skip-fixups'] as const).filter(
    (name) => values[name] !== undefined,
  );
  if (kind !== 'deploy' && deployOnly.length > 0) {
    throw new LocalUsageError(`\`--${deployOnly[0]}\` only goes with \`local deploy\``);
  }
  if (kind !== 'logs' && values.failures) {
    throw new LocalUsageError('`--failures` only goes with `local logs`');
  }
  if ((kind === 'up' || kind === 'down') && stacks.length > 0) {
    throw new LocalUsageError(`\`local ${kind}\` takes no stack names, got \`${stacks.join(' ')}\``);
  }
  const cacheDir = values['cache-dir'] === undefined ? undefined : resolve(values['cache-dir']);
  switch (kind) {
    case 'up':
    case 'down':
      return { kind, cacheDir };
    case 'destroy':
      return { kind, cacheDir, stacks };
    case 'logs':
      return { kind, cacheDir, functions: stacks, failuresOnly: values.failures === true };
    case 'deploy':
      return {
        kind,
        cacheDir,
        stacks,
        app: values.app,
        context: parseContext(values.context ?? []),
        fixups: !values['skip-fixups'],
      };
  }
}

function parseStrict(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: true,
    options: {
      app: { type: 'string' },
      context: { type: 'string', short: 'c', multiple: true },
      'skip-fixups': { type: 'boolean' },
      failures: { type: 'boolean' },
      'cache-dir': { type: 'string' },
      debug: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

/**
 * A `parseArgs` failure in the CLI's own words: the option as typed, no advice about `--`, and
 * the option meant when it is a near miss (`--cahce-dir`).
 */
function describeParseError(error: unknown): string {
  const { code, message } = error as { code?: string; message?: string };
  const option = /'(-[^', ]+)/.exec(message ?? '')?.[1];
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && option) {
    const suggestion = closestName(option, KNOWN_OPTIONS);
    return `Unknown option \`${option}\`${suggestion ? ` (did you mean \`${suggestion}\`?)` : ''}`;
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && option) {
    return `Expected a value after \`${option}\``;
  }
  return (message ?? String(error)).split('\n')[0] ?? String(error);
}

const KNOWN_OPTIONS = ['--app', '--context', '--skip-fixups', '--cache-dir', '--debug', '--help'];

function parseContext(pairs: readonly string[]): Record<string, string> {
  const context: Record<string, string> = {};
  for (const pair of pairs) {
    const separator = pair.indexOf('=');
    if (separator <= 0) throw new LocalUsageError(`Expected \`--context\` to be key=value, got \`${pair}\``);
    context[pair.slice(0, separator)] = pair.slice(separator + 1);
  }
  return context;
}

/** The endpoint the `local` commands act on. */
export type LocalEndpoint =
  /** `AWS_ENDPOINT_URL` names an endpoint `local up` did not start: use it, start and stop nothing. */
  | {
      readonly kind: 'given';
      readonly endpoint: string;
      readonly region: string;
      readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
    }
  /** The emulator `local up` started and recorded for this app, still running. */
  | { readonly kind: 'embedded'; readonly state: EmulatorState }
  /** `AWS_ENDPOINT_URL` names the running emulator `local up` started for another app. */
  | { readonly kind: 'another-app'; readonly state: EmulatorState }
  /** Neither. */
  | { readonly kind: 'none' };

/**
 * Picks the endpoint: `AWS_ENDPOINT_URL` when set (the embedded emulator when it names that one,
 * `another-app` when it names the running emulator of another app), else the running embedded
 * emulator, else none.
 *
 * @throws LocalUsageError when `AWS_ENDPOINT_URL` is not an http(s) URL.
 */
export function chooseEndpoint(
  env: NodeJS.ProcessEnv,
  running: EmulatorState | undefined,
  otherApps: readonly EmulatorState[] = [],
): LocalEndpoint {
  const given = env.AWS_ENDPOINT_URL;
  if (given) {
    const endpoint = normaliseUrl(given);
    if (running && normaliseUrl(running.endpoint) === endpoint) return { kind: 'embedded', state: running };
    const another = otherApps.find((state) => normaliseUrl(state.endpoint) === endpoint);
    if (another) return { kind: 'another-app', state: another };
    return {
      kind: 'given',
      endpoint,
      region: env.AWS_REGION || env.AWS_DEFAULT_REGION || DEFAULT_REGION,
      credentials: {
        accessKeyId: env.AWS_ACCESS_KEY_ID || LOCAL_CREDENTIALS.accessKeyId,
        secretAccessKey: env.AWS_SECRET_ACCESS_KEY || LOCAL_CREDENTIALS.secretAccessKey,
      },
    };
  }
  return running ? { kind: 'embedded', state: running } : { kind: 'none' };
}

function normaliseUrl(value: string): string {
  const url = httpUrl(value);
  if (url === undefined) {
    throw new LocalUsageError(`Expected AWS_ENDPOINT_URL to be an http(s) URL, got \`${value}\``);
  }
  return url;
}

/** The shell line that points SDKs and the CDK CLI at an endpoint. */
export function exportLine(endpoint: string, region: string): string {
  return (
    `export AWS_ENDPOINT_URL=${endpoint} AWS_REGION=${region} AWS_DEFAULT_REGION=${region} ` +
    `AWS_ACCESS_KEY_ID=${LOCAL_CREDENTIALS.accessKeyId} AWS_SECRET_ACCESS_KEY=${LOCAL_CREDENTIALS.secretAccessKey}`
  );
}

/** Where the `local` commands write and what they read. */
export interface LocalIo {
  /** Results (the export line, stack outputs). */
  readonly stdout: { write(text: string): unknown };
  /** Progress, one line per step. */
  readonly stderr: { write(text: string): unknown };
  readonly env: NodeJS.ProcessEnv;
  /** The CDK app's directory. */
  readonly cwd: string;
}

/**
 * Runs one `local` subcommand and returns the exit code (0). Failures are thrown with a `code`
 * (`USAGE`, `NO_EMULATOR`, and the {@link LocalDeployError} codes).
 */
export async function runLocal(
  command: Exclude<LocalCommand, { kind: 'help' }>,
  io: LocalIo,
): Promise<number> {
  const paths = localPaths({ appDir: io.cwd, cacheDir: command.cacheDir, env: io.env });
  const home = paths.appHome;
  const log = (message: string) => io.stderr.write(`${message}\n`);
  const recorded = readEmulatorState(home);
  const running = recorded && (await isEmulatorRunning(recorded, home)) ? recorded : undefined;
  const otherApps = io.env.AWS_ENDPOINT_URL ? await recordedEmulatorsOfOtherApps(paths) : [];
  const endpoint = chooseEndpoint(io.env, running, otherApps);
  const cacheDirOption = command.cacheDir ? ` --cache-dir ${shellWord(command.cacheDir)}` : '';
  if ((command.kind === 'up' || command.kind === 'down') && command.cacheDir === undefined) {
    const legacy = await sharedEmulatorOfEarlierVersion(paths.installHome);
    if (legacy) log(legacy);
  }

  switch (command.kind) {
    case 'up': {
      if (endpoint.kind === 'given') {
        const answer = await probeEndpoint(toTarget(endpoint));
        log(`AWS_ENDPOINT_URL=${endpoint.endpoint} ${answer}; starting nothing.`);
        io.stdout.write(`${exportLine(endpoint.endpoint, endpoint.region)}\n`);
        return 0;
      }
      if (endpoint.kind === 'another-app')
        log(`${describeAnotherApp(endpoint.state)}; starting this app's own.`);
      const region = io.env.AWS_REGION || io.env.AWS_DEFAULT_REGION || DEFAULT_REGION;
      if (endpoint.kind !== 'embedded') log(`Starting MiniStack for this app (home: ${home})...`);
      // Checked again under the lock: another `local up` may have started one meanwhile.
      const { state, started } = await ensureDetachedMiniStack({
        home,
        installHome: paths.installHome,
        appDir: io.cwd,
        region,
        log,
      });
      if (!started) {
        log(`MiniStack ${state.version} already runs at ${state.endpoint} (pid ${state.pid}).`);
        io.stdout.write(`${exportLine(state.endpoint, state.region)}\n`);
        return 0;
      }
      log(
        `Started MiniStack ${state.version} at ${state.endpoint} (pid ${state.pid}, log: ${state.logFile}). ` +
          `Stop it with \`effectively-once local down${cacheDirOption}\`. Point your shell at it:`,
      );
      io.stdout.write(`${exportLine(state.endpoint, state.region)}\n`);
      return 0;
    }
    case 'down': {
      if (endpoint.kind === 'given') {
        log(`AWS_ENDPOINT_URL=${endpoint.endpoint} was not started by \`local up\`; stopping nothing.`);
        return 0;
      }
      if (endpoint.kind === 'another-app')
        log(`${describeAnotherApp(endpoint.state)}; stopping only this app's.`);
      const outcome = await stopDetachedMiniStack({ home });
      log(
        outcome === 'stopped'
          ? `Stopped MiniStack at ${recorded?.endpoint} (pid ${recorded?.pid}); everything deployed to it is gone.`
          : 'No emulator started by `local up` is running; nothing to stop.',
      );
      if (outcome === 'stopped' && endpoint.kind === 'embedded' && io.env.AWS_ENDPOINT_URL)
        log('Unset AWS_ENDPOINT_URL in your shell: unset AWS_ENDPOINT_URL');
      return 0;
    }
    case 'deploy': {
      const target = requireTarget(endpoint);
      requireCdkApp(io.cwd);
      const result = await deployLocal({
        ...target,
        cwd: io.cwd,
        stacks: command.stacks,
        context: command.context,
        ...(command.app ? { app: command.app } : {}),
        fixups: command.fixups,
        outputsFile: paths.outputsFile,
        logFile: paths.cdkLogFile,
        progress: true,
        log,
      });
      io.stdout.write(formatOutputs(result));
      if (endpoint.kind === 'embedded')
        log(
          `What the functions print, and a handler's start-up error: \`effectively-once local logs${cacheDirOption}\` (from ${endpoint.state.logFile}).`,
        );
      return 0;
    }
    case 'destroy': {
      const target = requireTarget(endpoint);
      const assemblyDir = join(io.cwd, LOCAL_ASSEMBLY_DIR);
      const stackNames = stackNamesToDestroy(assemblyDir, command.stacks);
      for (const stackName of stackNames) {
        const outcome = await destroyLocal({ ...target, stackName, log });
        const kept = outcome === 'deleted' ? retainedBy(assemblyDir, stackName) : [];
        if (kept.length > 0) log(describeRetained(stackName, kept));
      }
      return 0;
    }
    case 'logs': {
      // The log of the emulator `local up` started for this app, running or stopped since.
      if (!recorded) {
        throw new LocalDeployError(
          'NO_EMULATOR',
          endpoint.kind === 'given'
            ? `AWS_ENDPOINT_URL=${endpoint.endpoint} was not started by \`local up\`: read its functions' logs where it writes them (CloudWatch Logs, or its own log)`
            : 'No emulator was started for this app: run `effectively-once local up` first.',
        );
      }
      log(`Function output and failed invocations from ${recorded.logFile}:`);
      let text: string;
      try {
        text = readFileSync(recorded.logFile, 'utf8');
      } catch {
        throw new LocalDeployError('NO_EMULATOR', `Cannot read the emulator's log ${recorded.logFile}`);
      }
      const entries = parseFunctionLogs(text);
      const shown = formatFunctionLogs(entries, command);
      io.stdout.write(shown);
      if (shown === '') log(command.failuresOnly ? 'No failed invocation.' : 'Nothing printed yet.');
      return 0;
    }
  }
}

type Target = {
  endpoint: string;
  region: string;
  account: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
};

/**
 * A notice about the emulator an earlier version of `local up` started for all apps of the user
 * (recorded in the cache's top directory), when it still runs: no app owns it now, so say how to
 * stop it.
 */
async function sharedEmulatorOfEarlierVersion(installHome: string): Promise<string | undefined> {
  const state = readEmulatorState(installHome);
  if (!state || !(await isEmulatorRunning(state, installHome))) return undefined;
  return (
    `MiniStack ${state.version} at ${state.endpoint} (pid ${state.pid}) was started by an earlier ` +
    'version of `local up`, for all your apps; each app now gets its own. Stop that one with ' +
    `\`effectively-once local down --cache-dir ${shellWord(installHome)}\`.`
  );
}

/** The resources the assembly's template of `stackName` retains on deletion (none when unknown). */
function retainedBy(assemblyDir: string, stackName: string): RetainedResource[] {
  try {
    const stack = readAssemblyStacks(assemblyDir).find((candidate) => candidate.stackName === stackName);
    return stack ? retainedResources(readTemplate(stack)) : [];
  } catch {
    return [];
  }
}

/** Says what a deleted stack left in the emulator, as its `DeletionPolicy` asks. */
export function describeRetained(stackName: string, kept: readonly RetainedResource[]): string {
  const list = kept.map((resource) => `${resource.path} (${resource.type})`).join(', ');
  const what = kept.length === 1 ? '1 resource' : `${kept.length} resources`;
  return (
    `Kept ${what} of ${stackName} that its DeletionPolicy retains: ${list}. ` +
    'They stay in the emulator until `local down`.'
  );
}

function describeAnotherApp(state: EmulatorState): string {
  return `AWS_ENDPOINT_URL=${state.endpoint} is the emulator \`local up\` started for ${state.appDir ?? 'another app'}`;
}

/** `value` quoted for a POSIX shell when it needs to be. */
function shellWord(value: string): string {
  return /^[\w./:@%+=,-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

function toTarget(endpoint: Exclude<LocalEndpoint, { kind: 'none' | 'another-app' }>): Target {
  if (endpoint.kind === 'given') {
    return {
      endpoint: endpoint.endpoint,
      region: endpoint.region,
      account: LOCAL_ACCOUNT,
      credentials: endpoint.credentials,
    };
  }
  return {
    endpoint: endpoint.state.endpoint,
    region: endpoint.state.region,
    account: LOCAL_ACCOUNT,
    credentials: { ...LOCAL_CREDENTIALS },
  };
}

function requireTarget(endpoint: LocalEndpoint): Target {
  if (endpoint.kind === 'another-app') {
    throw new LocalDeployError(
      'NO_EMULATOR',
      `${describeAnotherApp(endpoint.state)}, not this app's: start this app's own with ` +
        '`eval "$(effectively-once local up)"` here, or unset AWS_ENDPOINT_URL.',
    );
  }
  if (endpoint.kind === 'none') {
    throw new LocalDeployError(
      'NO_EMULATOR',
      'No local emulator: run `effectively-once local up` first, or set AWS_ENDPOINT_URL to a ' +
        'running one (LocalStack, a MiniStack container).',
    );
  }
  return toTarget(endpoint);
}

function requireCdkApp(cwd: string): void {
  if (!existsSync(join(cwd, 'cdk.json'))) {
    throw new LocalUsageError(
      `No cdk.json in ${cwd}: run \`effectively-once local deploy\` from your CDK app's directory`,
    );
  }
}

/** The outputs of every deployed stack, one `Stack.Key = value` line each. */
export function formatOutputs(result: Pick<DeployLocalResult, 'outputs'>): string {
  const lines = Object.entries(result.outputs).flatMap(([stackName, outputs]) =>
    Object.entries(outputs).map(([key, value]) => `${stackName}.${key} = ${value}`),
  );
  return lines.length > 0 ? `${lines.join('\n')}\n` : '';
}
