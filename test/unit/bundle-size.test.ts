import { join } from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

const root = join(__dirname, '..', '..');

async function minifiedBytes(entry: string, external: string[]): Promise<number> {
  const result = await build({
    entryPoints: [join(root, entry)],
    bundle: true,
    minify: true,
    platform: 'node',
    format: 'cjs',
    write: false,
    logLevel: 'silent',
    external: ['@aws-sdk/*', ...external],
  });
  return result.outputFiles[0]!.contents.byteLength;
}

describe('bundle size', () => {
  // The design target is 15 KB for all runtime code a handler bundles; the core and the entry
  // point are held to this budget, the DynamoDB store (measured separately) adds to it.
  it('keeps the core and createSqsHandler within 16 KB minified, AWS SDK and store excluded', async () => {
    expect(await minifiedBytes('lambda/sqs-handler.ts', ['./store/dynamodb-store'])).toBeLessThanOrEqual(
      16 * 1024,
    );
  });
});
