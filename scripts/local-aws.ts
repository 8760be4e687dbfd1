/**
 * `npm run local:aws`: starts the local AWS emulator in the foreground and prints the
 * environment lines that point a shell at it. Ctrl-C stops it.
 *
 * `--install-only` installs the pinned MiniStack into `.local/venv` and exits (used by CI).
 */
import { ensureMiniStack, localAwsEnv, MINISTACK_VERSION, startLocalAws } from './local-aws/harness';

async function main(args: readonly string[]): Promise<void> {
  if (args.includes('--install-only')) {
    const installation = await ensureMiniStack({ log: (message) => console.log(message) });
    console.log(
      installation.installed
        ? `Installed MiniStack ${MINISTACK_VERSION}: ${installation.ministack}`
        : `MiniStack ${MINISTACK_VERSION} is already installed: ${installation.ministack}`,
    );
    return;
  }
  if (args.length > 0) {
    throw new Error(`Unknown arguments: ${args.join(' ')}. Usage: npm run local:aws [-- --install-only]`);
  }

  const aws = await startLocalAws({ log: (message) => console.log(message) });
  if (!aws.started) {
    console.log('Nothing to run in the foreground: AWS_ENDPOINT_URL already points at an endpoint.');
    return;
  }
  const exports = Object.entries(localAwsEnv(aws))
    .map(([name, value]) => `${name}=${value}`)
    .join(' ');
  console.log(`\nPoint a shell at it (copy this line):\n\nexport ${exports}\n\nPress Ctrl-C to stop.`);

  await new Promise<void>((done) => {
    const shutdown = (signal: NodeJS.Signals) => {
      console.log(`\n${signal}: stopping MiniStack...`);
      void aws.stop().then(done);
    };
    process.once('SIGINT', shutdown);
    process.once('SIGTERM', shutdown);
  });
  console.log('Stopped.');
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
