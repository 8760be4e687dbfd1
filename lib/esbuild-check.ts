/**
 * The construct bundles its handler with `NodejsFunction` and a local esbuild. Without one, the
 * CDK silently falls back to bundling in Docker, and a machine without a Docker daemon then fails
 * with a message about Docker, not about the missing package. This check fails the synth first,
 * naming the fix.
 */
import { spawnSync } from 'node:child_process';
import { dirname } from 'node:path';

/** What the synth error says when no esbuild can be found. */
export const ESBUILD_MISSING_MESSAGE =
  'The construct bundles its handler with esbuild, which is not installed in this app: run `npm install --save-dev esbuild` (the CDK would otherwise try to bundle in Docker)';

/**
 * True when esbuild can be found the way the CDK looks for it: as a package resolvable from the
 * app (its working directory or the `aws-cdk-lib` it uses), or as an `esbuild` command on the
 * `PATH`.
 */
export function isEsbuildInstalled(): boolean {
  const paths = [process.cwd()];
  try {
    paths.push(dirname(require.resolve('aws-cdk-lib/package.json')));
  } catch {
    // aws-cdk-lib is resolvable wherever this construct runs; the working directory suffices.
  }
  try {
    require.resolve('esbuild/package.json', { paths });
    return true;
  } catch {
    const command = spawnSync('esbuild', ['--version'], { stdio: 'ignore' });
    return command.status === 0 && !command.error;
  }
}

/**
 * Throws {@link ESBUILD_MISSING_MESSAGE} (prefixed with the construct path) when bundling is
 * required and `isInstalled` finds no esbuild. Synths that skip bundling (for example
 * `cdk ls`, or stacks not selected) are not stopped.
 */
export function assertEsbuildInstalled(
  path: string,
  bundlingRequired: boolean,
  isInstalled: () => boolean = isEsbuildInstalled,
): void {
  if (bundlingRequired && !isInstalled()) throw new Error(`[${path}] ${ESBUILD_MISSING_MESSAGE}`);
}
