/**
 * `npm run deploy:local`: deploys the CDK app (cdk.json's `app`) to the local AWS emulator at
 * `AWS_ENDPOINT_URL` with the CLI's `effectively-once local deploy`, which re-applies what the
 * emulator's CloudFormation dropped and says so. `--destroy` deletes the stacks again, by name.
 * Run `npm run deploy:local -- --help` for usage. See `scripts/deploy-local/run.ts`.
 */
import { DEPLOY_LOCAL_USAGE, parseDeployLocalArgs, runDeployLocal } from './deploy-local/run';
import { projectRoot } from './local-aws/harness';

/** Codes of a bad command line: the message is followed by the usage. */
const USAGE_CODES: ReadonlySet<string> = new Set(['USAGE', 'STACKS_UNKNOWN']);

function untilInterrupted(): Promise<void> {
  return new Promise((done) => {
    const stop = (signal: NodeJS.Signals) => {
      process.stderr.write(`\n${signal}\n`);
      done();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

async function main(argv: readonly string[]): Promise<number> {
  const root = projectRoot();
  const request = parseDeployLocalArgs(argv, root);
  return runDeployLocal(request, {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    root,
    untilInterrupted,
  });
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    const code = (error as { code?: unknown }).code;
    const isUsage = typeof code === 'string' && USAGE_CODES.has(code);
    console.error(error instanceof Error ? error.message : error);
    if (isUsage) console.error(`\n${DEPLOY_LOCAL_USAGE}`);
    process.exitCode = isUsage ? 2 : 1;
  },
);
