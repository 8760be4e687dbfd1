/** What esbuild puts into a handler's bundle, for tests of what an entry point pulls in. */
import { join, relative } from 'node:path';
import { build } from 'esbuild';

const root = join(__dirname, '..', '..');

/**
 * The source files of the bundle of `entry` (a path from the repository root), as paths from
 * the repository root; the AWS SDK stays external, as it is on Lambda.
 */
export async function bundledInputs(entry: string): Promise<string[]> {
  const result = await build({
    entryPoints: [join(root, entry)],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    write: false,
    metafile: true,
    logLevel: 'silent',
    external: ['@aws-sdk/*'],
  });
  return Object.keys(result.metafile.inputs).map((input) => relative(root, join(process.cwd(), input)));
}
