/**
 * `npm run deploy:local`: the CLI's `effectively-once local deploy|destroy` for this repository.
 * The deploy, the fix-ups and the teardown are the CLI's own code (`cli/local/command.ts`); this
 * adds what only the repository needs: `.local/` as home, the context value `local=true` that
 * `bin/app.ts` reads, `--serve` (an emulator of this command's own, up until Ctrl-C) and
 * `--destroy --reset` (wipe a MiniStack emulator).
 */
import { join } from 'node:path';
import { type LocalCommand, LocalUsageError, parseLocalArgs, runLocal } from '../../cli/local/command';
import { resetLocalEmulator } from '../../cli/local/deploy';
import { type LocalAws, localAwsEnv, startLocalAws } from '../local-aws/harness';

/** Help text of `npm run deploy:local`. */
export const DEPLOY_LOCAL_USAGE = `Usage:
  npm run deploy:local -- [stack ...] [--app <command>] [--context key=value ...] [--skip-fixups] [--serve]
  npm run deploy:local -- --destroy [stack ...]
  npm run deploy:local -- --destroy --reset

Deploys to the emulator at AWS_ENDPOINT_URL (start one with \`npm run local:aws\` in another
terminal and copy the export line it prints), or, with --serve, to an emulator started for
this command that runs until Ctrl-C. Runs \`effectively-once local deploy|destroy\` with
.local/ as its home.

  stack ...         stacks to deploy or destroy (display names, * wildcards); default: all
  --app <command>   CDK app command; default: the "app" of cdk.json
  -c, --context k=v CDK context value (repeatable); local=true is always set unless overridden
  --skip-fixups     do not re-apply properties the emulator's CloudFormation dropped
  --serve           no AWS_ENDPOINT_URL: start an emulator, deploy, keep it up until Ctrl-C
  --destroy         delete the stacks (by name, in dependency order) instead of deploying
  --reset           with --destroy: wipe the whole emulator instead (MiniStack only:
                    POST /_ministack/reset, which LocalStack and AWS do not have)
  -h, --help        this text`;

const NO_ENDPOINT = `AWS_ENDPOINT_URL is not set, so there is no emulator to deploy to.

An emulator started by this command would stop, with everything deployed to it, when the
command exits. Either:
  1. run \`npm run local:aws\` in another terminal, paste the \`export AWS_ENDPOINT_URL=...\` line
     it prints into this one, and run \`npm run deploy:local\` again; or
  2. run \`npm run deploy:local -- --serve\` to start an emulator, deploy, and keep both running
     in this terminal until Ctrl-C.`;

const NO_ENDPOINT_TO_DESTROY =
  'AWS_ENDPOINT_URL is not set: there is no running emulator to destroy stacks on.\n' +
  'An emulator started with `--serve` is wiped when you stop it with Ctrl-C.';

/** What `npm run deploy:local` was asked to do. */
export type DeployLocalRequest =
  | { readonly kind: 'help' }
  /** `--destroy --reset`: wipe the emulator at `AWS_ENDPOINT_URL`. */
  | { readonly kind: 'reset' }
  /** The CLI's `local deploy` or `local destroy`; `serve` starts an emulator for it first. */
  | {
      readonly kind: 'local';
      readonly command: Extract<LocalCommand, { kind: 'deploy' | 'destroy' }>;
      readonly serve: boolean;
    };

/** The flags of this script; every other argument is the CLI's. */
const SCRIPT_FLAGS = ['--serve', '--destroy', '--reset', '--help', '-h'] as const;

/**
 * Parses the script's arguments: its own flags, then the rest as arguments of the CLI's
 * `local deploy` (or `local destroy`), with `<root>/.local` as home and `-c local=true` before
 * the caller's context values (so `-c local=false` overrides it).
 *
 * @throws LocalUsageError `USAGE` for a flag that does not go with another, and for anything the
 * CLI's `local` parser refuses.
 *
 * @example
 * parseDeployLocalArgs(['Stack', '--skip-fixups'], '/repo');
 * // { kind: 'local', serve: false, command: { kind: 'deploy', stacks: ['Stack'], fixups: false,
 * //   context: { local: 'true' }, cacheDir: '/repo/.local', app: undefined } }
 */
export function parseDeployLocalArgs(argv: readonly string[], root: string): DeployLocalRequest {
  const end = argv.includes('--') ? argv.indexOf('--') : argv.length;
  const isScriptFlag = (argument: string, index: number) =>
    index < end && (SCRIPT_FLAGS as readonly string[]).includes(argument);
  const flags = new Set(argv.filter(isScriptFlag));
  const rest = argv.filter((argument, index) => !isScriptFlag(argument, index));

  if (flags.has('--help') || flags.has('-h')) return { kind: 'help' };
  const destroy = flags.has('--destroy');
  if (flags.has('--reset') && !destroy) throw new LocalUsageError('--reset only goes with --destroy.');
  if (flags.has('--serve') && destroy)
    throw new LocalUsageError('--serve deploys; it does not go with --destroy.');
  if (flags.has('--reset')) {
    if (rest.length > 0) {
      throw new LocalUsageError(
        `--reset wipes the whole emulator; it takes nothing else, got \`${rest.join(' ')}\`.`,
      );
    }
    return { kind: 'reset' };
  }

  const home = ['--cache-dir', join(root, '.local')];
  const command = destroy
    ? parseLocalArgs(['destroy', ...home, ...rest])
    : // bin/app.ts shapes the example stack for the emulator with `local=true`.
      parseLocalArgs(['deploy', ...home, '--context', 'local=true', ...rest]);
  if (command.kind !== 'deploy' && command.kind !== 'destroy') {
    throw new LocalUsageError(`Expected a deploy or destroy, got \`${command.kind}\`.`);
  }
  return { kind: 'local', command, serve: flags.has('--serve') };
}

/** Where `npm run deploy:local` writes and what it reads. */
export interface DeployLocalIo {
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown };
  readonly env: NodeJS.ProcessEnv;
  /** The project root: the CDK app's directory. */
  readonly root: string;
  /** Resolves when the person running `--serve` wants to stop (Ctrl-C). */
  readonly untilInterrupted: () => Promise<void>;
}

/**
 * Runs a request and returns the exit code: 0, or 2 when there is no emulator to act on.
 * Failures are thrown with the CLI's codes (`USAGE`, `NO_EMULATOR`, the `LocalDeployError` codes).
 */
export async function runDeployLocal(request: DeployLocalRequest, io: DeployLocalIo): Promise<number> {
  const log = (message: string) => io.stderr.write(`${message}\n`);
  if (request.kind === 'help') {
    io.stdout.write(`${DEPLOY_LOCAL_USAGE}\n`);
    return 0;
  }
  const endpoint = io.env.AWS_ENDPOINT_URL;
  if (request.kind === 'reset') {
    if (!endpoint) {
      log(NO_ENDPOINT_TO_DESTROY);
      return 2;
    }
    await resetLocalEmulator(endpoint);
    log(`Reset the emulator at ${endpoint}: every resource and the CDK bootstrap are gone.`);
    return 0;
  }
  if (!request.serve) {
    if (!endpoint) {
      log(request.command.kind === 'destroy' ? NO_ENDPOINT_TO_DESTROY : NO_ENDPOINT);
      return 2;
    }
    return runLocal(request.command, { stdout: io.stdout, stderr: io.stderr, env: io.env, cwd: io.root });
  }

  const aws = await startLocalAws({ root: io.root, env: io.env, log });
  try {
    const env = { ...io.env, ...localAwsEnv(aws) };
    await runLocal(request.command, { stdout: io.stdout, stderr: io.stderr, env, cwd: io.root });
    if (aws.started) {
      log(serveMessage(aws));
      await io.untilInterrupted();
      log('Stopping the emulator...');
    }
    return 0;
  } finally {
    await aws.stop();
  }
}

function serveMessage(aws: LocalAws): string {
  const exports = Object.entries(localAwsEnv(aws))
    .map(([name, value]) => `${name}=${value}`)
    .join(' ');
  return (
    `\nThe emulator keeps running while this command does. Point another shell at it:\n\n` +
    `export ${exports}\n\nPress Ctrl-C to stop it (everything deployed to it is lost).`
  );
}
