/**
 * Deploys CDK apps to a local AWS emulator (MiniStack, LocalStack), leaving out what the
 * emulator's CloudFormation rejects and repairing what it silently drops.
 *
 * - {@link deployLocal}: bootstraps the emulator once, runs `cdk synth`, shows the app's synth
 *   warnings, leaves out of the templates what the emulator rejects (`leave-out.ts`), runs
 *   `cdk deploy` on that assembly with the CLI's output in a log file, returns the stack outputs,
 *   then runs {@link applyLocalFixups}.
 * - {@link applyLocalFixups}: compares deployed resources with the synthesized templates and
 *   re-applies dropped properties (DynamoDB TTL and point-in-time recovery, SQS redrive policies)
 *   through the service APIs, reporting what it checked and fixed.
 * - {@link destroyLocal}: deletes a stack by name and waits (the CDK's `cdk destroy` passes the
 *   stack ARN, which some emulator versions ignore).
 *
 * Used by `effectively-once local deploy|destroy`, `npm run deploy:local` and the main job.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { formatAnnotation, readSynthAnnotations, type SynthAnnotation } from './annotations';
import { applyStackFixups, type LocalFixupResult } from './apply-fixups';
import { type CdkLocalTarget, lastLineOfLastRun, linesOfLastRun, runCdk, unchangedStacks } from './cdk-cli';
import {
  type AssemblyStack,
  deletionOrder,
  readAssemblyStacks,
  readTemplate,
  selectStacks,
} from './cloud-assembly';
import {
  type CloudFormationTarget,
  deleteStack,
  describeStack,
  isServiceAnswer,
  type StackSummary,
} from './cloudformation';
import { LocalDeployError } from './errors';
import { describeLeftOut, type LocalTemplate, leaveOutForEmulator } from './leave-out';
import { reportWhileWaiting } from './progress';

export type { SynthAnnotation } from './annotations';
export type { LocalFixupResult, LocalFixupStatus } from './apply-fixups';
export type { AssemblyStack } from './cloud-assembly';
export { deletionOrder, readAssemblyStacks, selectStacks } from './cloud-assembly';
export { LocalDeployError, type LocalDeployErrorCode } from './errors';
export type { LocalFixupCheck, LocalFixupKind, LocalFixupPlan } from './fixup-plan';
export { planLocalFixups } from './fixup-plan';

/** Account id local emulators use for the dummy `test` credentials. */
export const LOCAL_ACCOUNT = '000000000000';

/** Cloud assembly directory of the local stage, kept apart from `cdk.out` (git-ignored like every `cdk.out.*` directory). */
export const LOCAL_ASSEMBLY_DIR = 'cdk.out.local';

/** Where a local endpoint is and whom to present as. */
export interface LocalDeployTarget {
  /** Base URL of the emulator, for example `http://127.0.0.1:41234`. */
  readonly endpoint: string;
  /** @default 'us-east-1' */
  readonly region?: string;
  /** @default '000000000000' ({@link LOCAL_ACCOUNT}) */
  readonly account?: string;
  /** @default `{ accessKeyId: 'test', secretAccessKey: 'test' }` */
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string };
  /**
   * Progress and fix-up messages, one line each. Failures are thrown, not logged.
   * @default no output
   */
  readonly log?: (message: string) => void;
}

/** Options for {@link deployLocal}. */
export interface DeployLocalOptions extends LocalDeployTarget {
  /**
   * Directory holding `cdk.json`; relative paths below are resolved against it.
   * @default process.cwd()
   */
  readonly cwd?: string;
  /**
   * The CDK app command, for example `npx tsx bin/app.ts`.
   * @default the `app` of `cdk.json`
   */
  readonly app?: string;
  /**
   * Stacks to deploy, as `cdk deploy` selects them (display names, `*` wildcards).
   * @default all stacks (`--all`)
   */
  readonly stacks?: readonly string[];
  /**
   * Context values passed as `--context key=value`.
   * @default none
   */
  readonly context?: Readonly<Record<string, string>>;
  /**
   * Cloud assembly directory.
   * @default 'cdk.out.local' ({@link LOCAL_ASSEMBLY_DIR})
   */
  readonly outputDir?: string;
  /**
   * Where `cdk deploy --outputs-file` writes the stack outputs.
   * @default '.local/cdk-outputs.json'
   */
  readonly outputsFile?: string;
  /**
   * Log file receiving the CDK CLI's output (appended).
   * @default '.local/logs/cdk-local.log'
   */
  readonly logFile?: string;
  /**
   * Whether to run {@link applyLocalFixups} after the deploy.
   * @default true
   */
  readonly fixups?: boolean;
  /**
   * Log a progress line every few seconds while the CDK CLI bootstraps or deploys (with the last
   * line it wrote, for example a stack event).
   * @default false
   */
  readonly progress?: boolean;
}

/** What {@link deployLocal} did. */
export interface DeployLocalResult {
  /** Outputs of every deployed stack by stack name, then output key (`{}` for a stack without outputs). */
  readonly outputs: Readonly<Record<string, Readonly<Record<string, string>>>>;
  /** The selected stacks of the cloud assembly (templates in `outputDir`). */
  readonly stacks: readonly AssemblyStack[];
  /** One result per checked property (empty when `fixups` is `false`). */
  readonly fixups: readonly LocalFixupResult[];
  /** `true` when this call bootstrapped the emulator (the first deploy after a start or reset). */
  readonly bootstrapped: boolean;
  readonly timings: {
    readonly bootstrapMillis: number;
    readonly deployMillis: number;
    readonly fixupMillis: number;
  };
  /** The CDK CLI log. */
  readonly logFile: string;
  /** The app's synth warnings and errors (each logged once, as `[Warning at /Stack/Path] message`). */
  readonly annotations: readonly SynthAnnotation[];
  /** What the emulator rejects and was left out of each stack's template (logged once). */
  readonly leftOut: readonly LocalTemplate[];
}

/**
 * Deploys a CDK app to a local emulator: bootstraps it if `CDKToolkit` is missing, runs
 * `cdk synth` into `outputDir` and logs the app's synth warnings and errors once each, leaves out
 * of the templates what the emulator rejects (metric-math alarms and what refers to them, logged
 * in one line), runs `cdk deploy --app <outputDir> --require-approval never` with the CLI's output
 * in `logFile`, reads the outputs, then checks and fixes dropped properties
 * ({@link applyLocalFixups}). Logs one line per step and one per fix.
 *
 * @throws LocalDeployError `ENDPOINT_UNREACHABLE`, `CDK_COMMAND_FAILED` (with the log's tail),
 * `OUTPUTS_UNREADABLE`, or `FIXUP_FAILED` when a check or fix raised an error.
 *
 * @example
 * const { outputs } = await deployLocal({ endpoint: aws.endpoint, log: console.log });
 * const queueUrl = outputs.EffectivelyOnceExample.QueueUrl;
 */
export async function deployLocal(options: DeployLocalOptions): Promise<DeployLocalResult> {
  const target = resolveTarget(options);
  const log = options.log ?? (() => {});
  const cwd = resolve(options.cwd ?? process.cwd());
  const outputDir = resolve(cwd, options.outputDir ?? LOCAL_ASSEMBLY_DIR);
  const outputsFile = resolve(cwd, options.outputsFile ?? join('.local', 'cdk-outputs.json'));
  const logFile = resolve(cwd, options.logFile ?? join('.local', 'logs', 'cdk-local.log'));
  const stackPatterns = options.stacks ?? [];
  const onProgress = options.progress
    ? (step: string) => (elapsed: number, lastLine: string) =>
        log(`  still ${step} (${seconds(elapsed)})${lastLine ? `: ${lastLine}` : ''}`)
    : undefined;

  const needsBootstrap = !(await isBootstrapped(target));
  let bootstrapMillis = 0;
  if (needsBootstrap) {
    log(`Bootstrapping aws://${target.account}/${target.region} at ${target.endpoint} (log: ${logFile})`);
    try {
      bootstrapMillis = await bootstrap(target, cwd, logFile, onProgress?.('bootstrapping'));
    } catch (error) {
      // Another process may have bootstrapped the same emulator at the same moment.
      if (!(await isBootstrapped(target))) throw error;
    }
    log(`Bootstrapped in ${seconds(bootstrapMillis)}`);
  }

  const what = stackPatterns.length > 0 ? stackPatterns.join(' ') : 'all stacks';
  log(`Deploying ${what} to ${target.endpoint} (log: ${logFile})`);
  mkdirSync(dirname(outputsFile), { recursive: true });
  rmSync(outputsFile, { force: true });
  const synthStarted = Date.now();
  const showAnnotations = () => {
    // A filesystem's coarse timestamps may put this run's manifest a little before its start.
    const annotations = readSynthAnnotations(outputDir, synthStarted - 2_000);
    for (const annotation of annotations) log(formatAnnotation(annotation));
    return annotations;
  };
  let annotations: SynthAnnotation[] = [];
  let leftOut: LocalTemplate[] = [];
  // Synthesize first, so the templates can lose what the emulator rejects before they deploy.
  const synthAndDeploy = async () => {
    await withDockerFallbackHint(cwd, () =>
      runCdk({
        cwd,
        logFile,
        target,
        args: [
          'synth',
          ...(options.app ? ['--app', options.app] : []),
          ...Object.entries(options.context ?? {}).flatMap(([key, value]) => [
            '--context',
            `${key}=${value}`,
          ]),
          '--output',
          outputDir,
          '--quiet',
          '--no-notices',
        ],
      }).then(
        (millis) => {
          annotations = showAnnotations();
          return millis;
        },
        (error: unknown) => {
          showAnnotations();
          throw error;
        },
      ),
    );
    leftOut = leaveOutOfAssembly(readAssemblyStacks(outputDir));
    const leftOutLine = describeLeftOut(leftOut);
    if (leftOutLine) log(leftOutLine);
    await runCdk({
      cwd,
      logFile,
      target,
      args: [
        'deploy',
        ...(stackPatterns.length > 0 ? stackPatterns : ['--all']),
        // The assembly just synthesized (and edited): the CLI deploys it without synthesizing again.
        '--app',
        outputDir,
        '--outputs-file',
        outputsFile,
        '--require-approval',
        'never',
        '--progress',
        'events',
        '--no-notices',
      ],
    });
  };
  const deployStarted = Date.now();
  // One progress line every few seconds across both CDK runs, with the last line either wrote.
  const reportDeploying = onProgress?.('deploying');
  await (reportDeploying
    ? reportWhileWaiting(synthAndDeploy(), {
        report: (elapsed) => reportDeploying(elapsed, lastLineOfLastRun(logFile)),
      })
    : synthAndDeploy());
  const deployMillis = Date.now() - deployStarted;
  const stacks = selectStacks(readAssemblyStacks(outputDir), stackPatterns);
  // The outputs file omits stacks without outputs; list every deployed stack, with `{}` for those.
  const outputs: Record<string, Record<string, string>> = {};
  const written = readOutputs(outputsFile);
  for (const stack of stacks) {
    const summary = await describeStack(target, stack.stackName);
    if (summary && summary.status !== 'DELETE_COMPLETE') {
      outputs[stack.stackName] = written[stack.stackName] ?? {};
    }
  }
  const unchanged = unchangedStacks(linesOfLastRun(logFile));
  const noChanges =
    unchanged.length === 0
      ? ''
      : unchanged.length === stacks.length
        ? ' (no changes)'
        : ` (no changes: ${unchanged.join(', ')})`;
  log(`Deployed ${Object.keys(outputs).join(', ') || what} in ${seconds(deployMillis)}${noChanges}`);

  let fixups: LocalFixupResult[] = [];
  let fixupMillis = 0;
  if (options.fixups ?? true) {
    const started = Date.now();
    fixups = await fixupStacks(target, stacks, log);
    fixupMillis = Date.now() - started;
  }
  return {
    outputs,
    stacks,
    fixups,
    bootstrapped: needsBootstrap,
    timings: { bootstrapMillis, deployMillis, fixupMillis },
    logFile,
    annotations,
    leftOut,
  };
}

/**
 * Rewrites each stack template of the assembly without what the emulator rejects
 * ({@link leaveOutForEmulator}), and returns what was left out of each.
 */
function leaveOutOfAssembly(stacks: readonly AssemblyStack[]): LocalTemplate[] {
  return stacks.map((stack) => {
    const local = leaveOutForEmulator(readTemplate(stack));
    if (local.resources.length > 0)
      writeFileSync(stack.templateFile, JSON.stringify(local.template, null, 1));
    return local;
  });
}

/**
 * The hint for a failed `cdk deploy` whose log shows the CDK bundling a Lambda in Docker because
 * esbuild is not installed in the app; `undefined` when that is not what happened.
 */
export function dockerFallbackHint(failure: string, esbuildInstalled: boolean): string | undefined {
  if (esbuildInstalled || !/docker/i.test(failure)) return undefined;
  return (
    'esbuild is not installed in this app, so the CDK tried to bundle the Lambda code in Docker. ' +
    'Install it next to aws-cdk-lib: `npm install --save-dev esbuild`.'
  );
}

async function withDockerFallbackHint(cwd: string, deploy: () => Promise<number>): Promise<number> {
  try {
    return await deploy();
  } catch (error) {
    const { code, message, logFile } = error as Partial<LocalDeployError>;
    const hint = dockerFallbackHint(message ?? '', isResolvable('esbuild', cwd));
    if (code !== 'CDK_COMMAND_FAILED' || hint === undefined) throw error;
    throw new LocalDeployError('CDK_COMMAND_FAILED', `${message}\n${hint}`, {
      cause: error,
      ...(logFile ? { logFile } : {}),
    });
  }
}

function isResolvable(name: string, from: string): boolean {
  try {
    require.resolve(`${name}/package.json`, { paths: [from] });
    return true;
  } catch {
    return false;
  }
}

/**
 * The stack names to delete, dependents first: those of the cloud assembly in `assemblyDir` (from
 * the last local deploy) that match `patterns` (all when empty), then the patterns it does not
 * know, taken literally as stack names.
 *
 * @throws LocalDeployError `STACKS_UNKNOWN` when there is no assembly and no pattern.
 */
export function stackNamesToDestroy(assemblyDir: string, patterns: readonly string[]): string[] {
  let known: AssemblyStack[] = [];
  try {
    known = readAssemblyStacks(assemblyDir);
  } catch {
    if (patterns.length === 0) {
      throw new LocalDeployError(
        'STACKS_UNKNOWN',
        `No cloud assembly in ${assemblyDir} from an earlier local deploy, so the stack names are ` +
          'unknown: name the stacks to destroy.',
      );
    }
  }
  const selected = deletionOrder(selectStacks(known, patterns)).map((stack) => stack.stackName);
  const literal = patterns.filter(
    (pattern) => !pattern.includes('*') && selectStacks(known, [pattern]).length === 0,
  );
  return [...selected, ...literal];
}

/** Options for {@link applyLocalFixups}. */
export interface ApplyLocalFixupsOptions extends LocalDeployTarget {
  /**
   * The cloud assembly the stacks were deployed from (relative to the current directory).
   * @default 'cdk.out.local' ({@link LOCAL_ASSEMBLY_DIR})
   */
  readonly assemblyDir?: string;
  /**
   * Stacks to check, by display name, artifact id or stack name (`*` wildcards).
   * @default every stack of the assembly that is deployed
   */
  readonly stacks?: readonly string[];
}

/**
 * Checks each deployed stack of a cloud assembly against its synthesized template, and re-applies
 * through the service APIs what the emulator's CloudFormation dropped: SQS `RedrivePolicy` and
 * `ContentBasedDeduplication`, DynamoDB `TimeToLiveSpecification` and
 * `PointInTimeRecoverySpecification` (tables and global tables). Reports FIFO queues deployed as
 * standard queues as `unfixable`. Only what is missing is changed; every fix is logged.
 *
 * @throws LocalDeployError `FIXUP_FAILED` when a check or fix raised an error (other results are
 * in its message).
 *
 * @example
 * const results = await applyLocalFixups({ endpoint, log: console.log });
 * // [{ status: 'fixed', message: 'App/InboxTable: TTL on `expiresAt` was off (...); enabled it (UpdateTimeToLive)', ... }]
 */
export async function applyLocalFixups(options: ApplyLocalFixupsOptions): Promise<LocalFixupResult[]> {
  const target = resolveTarget(options);
  const stacks = selectStacks(
    readAssemblyStacks(resolve(options.assemblyDir ?? LOCAL_ASSEMBLY_DIR)),
    options.stacks ?? [],
  );
  return fixupStacks(target, stacks, options.log ?? (() => {}));
}

/** Options for {@link destroyLocal}. */
export interface DestroyLocalOptions extends LocalDeployTarget {
  /** The deployed stack's name (not its ARN, not the CDK display path). */
  readonly stackName: string;
  /**
   * When deletion fails or times out, reset the whole emulator (`POST /_ministack/reset`) instead
   * of throwing. Only for an emulator this process started: a reset wipes everything on it.
   * @default false
   */
  readonly resetIfStuck?: boolean;
  /** @default 60000 */
  readonly timeoutMillis?: number;
}

/** How {@link destroyLocal} got rid of a stack. */
export type DestroyLocalOutcome = 'deleted' | 'absent' | 'reset';

/**
 * Deletes a stack by name with `DeleteStack` and waits until it is gone.
 *
 * @throws LocalDeployError `DESTROY_FAILED` when deletion fails or times out and `resetIfStuck`
 * is not set (or the reset fails too).
 *
 * @example
 * await destroyLocal({ endpoint, stackName: 'EffectivelyOnceExample', resetIfStuck: aws.started });
 */
export async function destroyLocal(options: DestroyLocalOptions): Promise<DestroyLocalOutcome> {
  const target = resolveTarget(options);
  const log = options.log ?? (() => {});
  const { stackName } = options;
  const timeoutMillis = options.timeoutMillis ?? 60_000;
  if (!(await describeReachably(target, stackName))) {
    log(`Stack ${stackName} does not exist at ${target.endpoint}; nothing to delete`);
    return 'absent';
  }

  let problem: string;
  try {
    const started = Date.now();
    await deleteStack(target, stackName);
    problem = await waitForDeletion(target, stackName, started + timeoutMillis);
    if (problem === '') {
      log(`Deleted stack ${stackName} in ${seconds(Date.now() - started)}`);
      return 'deleted';
    }
  } catch (error) {
    problem = (error as Error).message;
  }

  if (!options.resetIfStuck) {
    throw new LocalDeployError('DESTROY_FAILED', `Could not delete stack ${stackName}: ${problem}`);
  }
  log(`Could not delete stack ${stackName} (${problem}); resetting the emulator at ${target.endpoint}`);
  await resetLocalEmulator(target.endpoint);
  return 'reset';
}

/**
 * Wipes every resource of a MiniStack emulator (`POST /_ministack/reset`), the CDK bootstrap
 * stack included. Only for an emulator this process started.
 *
 * @throws LocalDeployError `DESTROY_FAILED` when the endpoint refuses (LocalStack has no such route).
 */
export async function resetLocalEmulator(endpoint: string): Promise<void> {
  let status: number;
  try {
    const response = await fetch(`${endpoint.replace(/\/+$/, '')}/_ministack/reset`, {
      method: 'POST',
      signal: AbortSignal.timeout(30_000),
    });
    await response.arrayBuffer();
    status = response.status;
  } catch (error) {
    throw new LocalDeployError('DESTROY_FAILED', `Could not reset ${endpoint}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (status !== 200) {
    throw new LocalDeployError(
      'DESTROY_FAILED',
      `Could not reset ${endpoint}: HTTP ${status} (not MiniStack?)`,
    );
  }
}

type ResolvedTarget = CdkLocalTarget & CloudFormationTarget;

function resolveTarget(options: LocalDeployTarget): ResolvedTarget {
  let url: URL;
  try {
    url = new URL(options.endpoint);
  } catch {
    throw new LocalDeployError(
      'ENDPOINT_UNREACHABLE',
      `Expected \`endpoint\` to be an http(s) URL, got \`${options.endpoint}\``,
    );
  }
  return {
    endpoint: url.toString().replace(/\/+$/, ''),
    region: options.region ?? 'us-east-1',
    account: options.account ?? LOCAL_ACCOUNT,
    credentials: options.credentials ?? { accessKeyId: 'test', secretAccessKey: 'test' },
  };
}

/**
 * Checks that an endpoint answers the plain CloudFormation API (nothing emulator-specific), and
 * says whether the CDK bootstrap stack is there.
 *
 * @throws LocalDeployError `ENDPOINT_UNREACHABLE` when it does not answer.
 *
 * @example
 * await probeEndpoint({ endpoint: 'http://127.0.0.1:4566' }); // 'answers CloudFormation (CDK bootstrap: absent)'
 */
export async function probeEndpoint(options: LocalDeployTarget): Promise<string> {
  const bootstrapped = await isBootstrapped(resolveTarget(options));
  return `answers CloudFormation (CDK bootstrap: ${bootstrapped ? 'present' : 'absent'})`;
}

/** `true` when the `CDKToolkit` stack is usable; also proves the endpoint answers CloudFormation. */
async function isBootstrapped(target: ResolvedTarget): Promise<boolean> {
  const toolkit = await describeReachably(target, 'CDKToolkit');
  return toolkit !== undefined && /^(CREATE|UPDATE)_COMPLETE$/.test(toolkit.status);
}

/** {@link describeStack}, turning a connection failure into a clear `ENDPOINT_UNREACHABLE`. */
async function describeReachably(
  target: ResolvedTarget,
  stackName: string,
): Promise<StackSummary | undefined> {
  try {
    return await describeStack(target, stackName);
  } catch (error) {
    if (isServiceAnswer(error)) throw error;
    const { code, cause } = error as { code?: string; cause?: { code?: string } };
    throw new LocalDeployError(
      'ENDPOINT_UNREACHABLE',
      `The local AWS endpoint ${target.endpoint} does not answer ` +
        `(${code ?? cause?.code ?? (error as Error).message}). Is the emulator running?`,
      { cause: error },
    );
  }
}

/**
 * Bootstraps from an empty directory: with an explicit environment and no `cdk.json`, the CLI
 * skips synthesizing (and bundling) the app, which saves seconds.
 */
async function bootstrap(
  target: ResolvedTarget,
  cwd: string,
  logFile: string,
  onProgress: ((elapsedMillis: number, lastLine: string) => void) | undefined,
): Promise<number> {
  const emptyDir = await mkdtemp(join(tmpdir(), 'cdk-bootstrap-'));
  try {
    const qualifier = bootstrapQualifier(cwd);
    return await runCdk({
      cwd: emptyDir,
      cliFrom: cwd,
      logFile,
      target,
      ...(onProgress ? { onProgress } : {}),
      args: [
        'bootstrap',
        `aws://${target.account}/${target.region}`,
        ...(qualifier ? ['--qualifier', qualifier] : []),
        '--progress',
        'events',
        '--no-notices',
      ],
    });
  } finally {
    rmSync(emptyDir, { recursive: true, force: true });
  }
}

/** A custom bootstrap qualifier set in `cdk.json`'s context, which the stacks' synthesizer expects. */
function bootstrapQualifier(cwd: string): string | undefined {
  try {
    const config = JSON.parse(readFileSync(join(cwd, 'cdk.json'), 'utf8')) as {
      context?: Record<string, unknown>;
    };
    const qualifier = config.context?.['@aws-cdk/core:bootstrapQualifier'];
    return typeof qualifier === 'string' ? qualifier : undefined;
  } catch {
    return undefined;
  }
}

function readOutputs(outputsFile: string): Record<string, Record<string, string>> {
  try {
    return JSON.parse(readFileSync(outputsFile, 'utf8')) as Record<string, Record<string, string>>;
  } catch (error) {
    throw new LocalDeployError(
      'OUTPUTS_UNREADABLE',
      `cdk deploy succeeded but its outputs file ${outputsFile} is unreadable: ${(error as Error).message}`,
      { cause: error },
    );
  }
}

async function fixupStacks(
  target: ResolvedTarget,
  stacks: readonly AssemblyStack[],
  log: (message: string) => void,
): Promise<LocalFixupResult[]> {
  const results: LocalFixupResult[] = [];
  for (const stack of stacks) {
    results.push(
      ...(await applyStackFixups({ ...target, stackName: stack.stackName, template: readTemplate(stack) })),
    );
  }
  for (const result of results) {
    if (result.status === 'fixed') log(`Local fix-up: ${result.message}`);
    else if (result.status !== 'ok') log(`Local fix-up ${result.status}: ${result.message}`);
  }
  log(summarise(results));

  const failed = results.filter((result) => result.status === 'failed');
  if (failed.length > 0) {
    throw new LocalDeployError(
      'FIXUP_FAILED',
      `Local fix-ups failed:\n${failed.map((result) => `  ${result.stackName} ${result.message}`).join('\n')}`,
    );
  }
  return results;
}

function summarise(results: readonly LocalFixupResult[]): string {
  const counts = new Map<string, number>();
  for (const result of results) counts.set(result.status, (counts.get(result.status) ?? 0) + 1);
  const parts = [
    `${counts.get('fixed') ?? 0} fixed`,
    `${counts.get('ok') ?? 0} already in place`,
    ...(['unfixable', 'skipped', 'failed'] as const)
      .filter((status) => counts.has(status))
      .map((status) => `${counts.get(status)} ${status}`),
  ];
  return `Checked ${results.length} properties the emulator's CloudFormation may drop: ${parts.join(', ')}`;
}

async function waitForDeletion(target: ResolvedTarget, stackName: string, deadline: number): Promise<string> {
  for (;;) {
    const stack = await describeStack(target, stackName);
    if (!stack || stack.status === 'DELETE_COMPLETE') return '';
    if (stack.status === 'DELETE_FAILED') return 'DELETE_FAILED';
    if (Date.now() > deadline) return `still ${stack.status} after the timeout`;
    await new Promise((done) => setTimeout(done, 250));
  }
}

function seconds(millis: number): string {
  return `${(millis / 1000).toFixed(1)} s`;
}
