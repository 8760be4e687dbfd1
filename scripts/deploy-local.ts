/**
 * `npm run deploy:local`: deploys the CDK app (cdk.json's `app`) to the local AWS emulator at
 * `AWS_ENDPOINT_URL`, then re-applies what the emulator's CloudFormation dropped and says so.
 * `--destroy` deletes the stacks again, by name. Run `npm run deploy:local -- --help` for usage.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  type DeployLocalResult,
  deployLocal,
  destroyLocal,
  LOCAL_ASSEMBLY_DIR,
  resetLocalEmulator,
  stackNamesToDestroy,
} from '../cli/local/deploy';
import { type LocalAws, localAwsEnv, projectRoot, startLocalAws } from './local-aws-lib';

const USAGE = `Usage:
  npm run deploy:local -- [stack ...] [--app <command>] [--context key=value ...] [--skip-fixups]
  npm run deploy:local -- --destroy [stack ...] [--reset]

Deploys to the emulator at AWS_ENDPOINT_URL (start one with \`npm run local:aws\` in another
terminal and copy the export line it prints), or, with --serve, to an emulator started for
this command that runs until Ctrl-C.

  stack ...         stacks to deploy or destroy (display names, * wildcards); default: all
  --app <command>   CDK app command; default: the "app" of cdk.json
  -c, --context k=v CDK context value (repeatable); local=true is always set unless overridden
  --skip-fixups     do not re-apply properties the emulator's CloudFormation dropped
  --serve           no AWS_ENDPOINT_URL: start an emulator, deploy, keep it up until Ctrl-C
  --destroy         delete the stacks (by name, in dependency order) instead of deploying
  --reset           with --destroy: wipe the whole emulator (POST /_ministack/reset)
  -h, --help        this text`;

const NO_ENDPOINT = `AWS_ENDPOINT_URL is not set, so there is no emulator to deploy to.

An emulator started by this command would stop, with everything deployed to it, when the
command exits. Either:
  1. run \`npm run local:aws\` in another terminal, paste the \`export AWS_ENDPOINT_URL=...\` line
     it prints into this one, and run \`npm run deploy:local\` again; or
  2. run \`npm run deploy:local -- --serve\` to start an emulator, deploy, and keep both running
     in this terminal until Ctrl-C.`;

async function main(argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      app: { type: 'string' },
      context: { type: 'string', short: 'c', multiple: true },
      'skip-fixups': { type: 'boolean' },
      serve: { type: 'boolean' },
      destroy: { type: 'boolean' },
      reset: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (values.reset && !values.destroy) throw new UsageError('--reset only goes with --destroy.');
  if (values.serve && values.destroy) throw new UsageError('--serve deploys; it does not go with --destroy.');
  if (!process.env.AWS_ENDPOINT_URL && !values.serve) {
    console.error(
      values.destroy
        ? 'AWS_ENDPOINT_URL is not set: there is no running emulator to destroy stacks on.\n' +
            'An emulator started with `--serve` is wiped when you stop it with Ctrl-C.'
        : NO_ENDPOINT,
    );
    return 2;
  }

  const log = (message: string) => console.log(message);
  const aws = await startLocalAws({ log });
  try {
    if (values.destroy) {
      await destroy(aws, positionals, values.reset ?? false);
      return 0;
    }
    const result = await deployLocal({
      endpoint: aws.endpoint,
      region: aws.region,
      credentials: aws.credentials,
      cwd: projectRoot(),
      stacks: positionals,
      // bin/app.ts shapes the example stack for the emulator with `local=true`; `-c local=false` overrides.
      context: { local: 'true', ...parseContext(values.context ?? []) },
      ...(values.app ? { app: values.app } : {}),
      fixups: !values['skip-fixups'],
      log,
    });
    printOutputs(result);
    if (aws.started) await serveUntilInterrupted(aws);
    return 0;
  } finally {
    await aws.stop();
  }
}

async function destroy(aws: LocalAws, patterns: readonly string[], reset: boolean): Promise<void> {
  if (reset) {
    await resetLocalEmulator(aws.endpoint);
    console.log(`Reset the emulator at ${aws.endpoint}: every resource and the CDK bootstrap are gone.`);
    return;
  }
  for (const stackName of stackNamesToDestroy(join(projectRoot(), LOCAL_ASSEMBLY_DIR), patterns)) {
    await destroyLocal({
      endpoint: aws.endpoint,
      region: aws.region,
      credentials: aws.credentials,
      stackName,
      log: (message) => console.log(message),
    });
  }
}

function parseContext(pairs: readonly string[]): Record<string, string> {
  const context: Record<string, string> = {};
  for (const pair of pairs) {
    const separator = pair.indexOf('=');
    if (separator <= 0) throw new UsageError(`Expected --context key=value, got \`${pair}\`.`);
    context[pair.slice(0, separator)] = pair.slice(separator + 1);
  }
  return context;
}

function printOutputs(result: DeployLocalResult): void {
  const lines = Object.entries(result.outputs).flatMap(([stackName, outputs]) =>
    Object.entries(outputs).map(([key, value]) => `  ${stackName}.${key} = ${value}`),
  );
  if (lines.length > 0) console.log(`\nOutputs:\n${lines.join('\n')}`);
}

async function serveUntilInterrupted(aws: LocalAws): Promise<void> {
  const exports = Object.entries(localAwsEnv(aws))
    .map(([name, value]) => `${name}=${value}`)
    .join(' ');
  console.log(
    `\nThe emulator keeps running while this command does. Point another shell at it:\n\n` +
      `export ${exports}\n\nPress Ctrl-C to stop it (everything deployed to it is lost).`,
  );
  await new Promise<void>((done) => {
    const shutdown = (signal: NodeJS.Signals) => {
      console.log(`\n${signal}: stopping the emulator...`);
      done();
    };
    process.once('SIGINT', shutdown);
    process.once('SIGTERM', shutdown);
  });
}

class UsageError extends Error {
  override readonly name = 'UsageError';
  readonly code = 'USAGE';
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    const code = (error as { code?: string }).code ?? '';
    const isUsage = code === 'USAGE' || code === 'STACKS_UNKNOWN' || code.startsWith('ERR_PARSE_ARGS');
    console.error(error instanceof Error ? error.message : error);
    if (isUsage) console.error(`\n${USAGE}`);
    process.exitCode = isUsage ? 2 : 1;
  },
);
